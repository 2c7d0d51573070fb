#pragma once
// The CUDA host emulator's cuBLAS (tests only; see cuda_runtime.h): the calls gpu/ makes, with
// cuBLAS' documented semantics (column-major storage, op(A) m x k, op(B) k x n, C m x n) and its
// argument checks, so that a wrong transpose, dimension or leading dimension fails here as it
// would on a GPU, or gives the numbers it would give there.
#include <cuda_runtime.h>

enum cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
};

enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };

namespace mirrorlab_emulation {
struct BlasHandle;
}
using cublasHandle_t = mirrorlab_emulation::BlasHandle*;

#pragma GCC visibility push(default)  // the emulator's shared library exports its API (see cuda_runtime.h)

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
// The workspace cuBLAS uses instead of its own: device memory of the handle's device, at least
// `bytes` long, kept until the handle is done with it. Each GEMM counts as writing all of it.
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, std::size_t bytes);
const char* cublasGetStatusString(cublasStatus_t status);
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                           const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc);

#pragma GCC visibility pop
