// The emulated cuBLAS (see include/cublas_v2.h).
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "emulator.h"

namespace mirrorlab_emulation {

struct BlasHandle {
    int device = 0;
    cudaStream_t stream = nullptr;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    void* workspace = nullptr;  // cublasSetWorkspace's, or null: cuBLAS' own
    std::size_t workspace_bytes = 0;
};

}  // namespace mirrorlab_emulation

using namespace mirrorlab_emulation;

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
    if (!valid_device(current_device()) || injected_failure("cublasCreate")) return CUBLAS_STATUS_NOT_INITIALIZED;
    *handle = new BlasHandle{current_device(), nullptr, CUBLAS_DEFAULT_MATH};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, std::size_t bytes) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (workspace != nullptr && device_of_range(workspace, bytes) != handle->device) {
        report("library-outside-allocation", "cublasSetWorkspace(%p, %zu bytes) for a handle of GPU:%d: not inside one "
               "allocation of that GPU", workspace, bytes, handle->device);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    handle->workspace = workspace;
    handle->workspace_bytes = workspace != nullptr ? bytes : 0;
    return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                           const float* alpha, const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    const auto valid_op = [](cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; };
    if (!valid_op(transa) || !valid_op(transb)) return CUBLAS_STATUS_INVALID_VALUE;
    // A handle belongs to the device that was current when it was created, and so must its stream.
    if (current_device() != handle->device || stream_device(handle->stream) != handle->device) {
        report("handle-of-other-device", "cublasSgemm with a handle of GPU:%d while GPU:%d is current", handle->device,
               current_device());
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    // cuBLAS' own checks: sizes, and each leading dimension at least the rows of the stored matrix.
    const int a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
    const int b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
    if (m < 0 || n < 0 || k < 0 || lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    // What a GPU would fault on: a matrix reaching past its buffer, or memory of another device.
    auto extent = [](int rows, int cols, int ld) {
        return (static_cast<std::size_t>(cols - 1) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(rows)) *
               sizeof(float);
    };
    const bool reads_inputs = k > 0 && *alpha != 0.0f;
    const bool a_ok = !reads_inputs || device_of_range(a, extent(a_rows, a_cols, lda)) == handle->device;
    const bool b_ok = !reads_inputs || device_of_range(b, extent(b_rows, b_cols, ldb)) == handle->device;
    const bool c_ok = device_of_range(c, extent(m, n, ldc)) == handle->device;
    if (handle->workspace != nullptr && device_of_range(handle->workspace, handle->workspace_bytes) != handle->device) {
        report("library-outside-allocation", "cublasSgemm with the workspace cublasSetWorkspace gave it (%p) no longer "
               "allocated on GPU:%d", handle->workspace, handle->device);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (!a_ok || !b_ok || !c_ok) {
        report("library-outside-allocation", "cublasSgemm(m=%d, n=%d, k=%d, lda=%d, ldb=%d, ldc=%d): %s%s%sreaches "
               "outside an allocation of GPU:%d", m, n, k, lda, ldb, ldc, a_ok ? "" : "A ", b_ok ? "" : "B ",
               c_ok ? "" : "C ", handle->device);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    const float alpha_value = *alpha, beta_value = *beta;  // host pointer mode: read at the call
    const float* a_bytes = reads_inputs ? static_cast<const float*>(device_to_host(a)) : nullptr;
    const float* b_bytes = reads_inputs ? static_cast<const float*>(device_to_host(b)) : nullptr;
    auto* c_bytes = static_cast<float*>(device_to_host(c));
    // C is written; A and B read (when they are read at all).
    std::vector<Access> accesses{Access{c, true, extent(m, n, ldc)}};
    if (handle->workspace != nullptr) accesses.push_back(Access{handle->workspace, true, handle->workspace_bytes});
    if (reads_inputs) {
        accesses.push_back(Access{a, false, extent(a_rows, a_cols, lda)});
        accesses.push_back(Access{b, false, extent(b_rows, b_cols, ldb)});
    }
    const Issued issued = enqueue(handle->stream, [=, a = a_bytes, b = b_bytes, c = c_bytes] {
        for (int j = 0; j < n; ++j) {
            for (int i = 0; i < m; ++i) {
                float sum = 0.0f;
                // alpha == 0: A and B are not read (cuBLAS does not touch them then).
                for (int l = 0; l < (alpha_value != 0.0f ? k : 0); ++l) {
                    const float a_il = transa == CUBLAS_OP_N ? a[i + static_cast<std::size_t>(l) * lda]
                                                             : a[l + static_cast<std::size_t>(i) * lda];
                    const float b_lj = transb == CUBLAS_OP_N ? b[l + static_cast<std::size_t>(j) * ldb]
                                                             : b[j + static_cast<std::size_t>(l) * ldb];
                    sum += a_il * b_lj;
                }
                float& out = c[i + static_cast<std::size_t>(j) * ldc];
                // beta == 0: C is not read, so whatever it held (NaN included) does not leak in.
                out = beta_value == 0.0f ? alpha_value * sum : alpha_value * sum + beta_value * out;
            }
        }
    }, std::move(accesses));
    return count_issued(issued, Counted::LibraryLaunch) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
