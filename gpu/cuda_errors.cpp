#include "gpu/cuda_errors.h"

namespace mirrorlab::cuda {

std::string error_text(cudaError_t status) {
    return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace mirrorlab::cuda
