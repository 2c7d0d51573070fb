#pragma once
// What both halves of the CUDA backend need of the CUDA runtime alone: the plugin
// (libmirrorlab_cuda.so, device discovery) and the compute module it loads on first use
// (libmirrorlab_cuda_compute.so, cuBLAS, cuDNN and NCCL). Each module compiles its own copy with
// hidden visibility, so the two never clash; nothing here may include a cuBLAS, cuDNN or NCCL
// header, or the plugin would link those libraries again.
#include <cuda_runtime.h>

#include <string>

namespace mirrorlab::cuda {

std::string error_text(cudaError_t status);  // "cudaErrorMemoryAllocation (out of memory)"

}  // namespace mirrorlab::cuda
