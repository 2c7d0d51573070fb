// The compute module's one entry point (see gpu/compute_module.h): what the plugin asks of the
// half of the CUDA backend that links cuBLAS, cuDNN and NCCL.
#include "gpu/compute_module.h"

#include <cudnn.h>

#include "core/device/plugin_loader.h"
#include "gpu/cuda_backend.h"
#include "gpu/nccl_all_reduce.h"

namespace mirrorlab::cuda {

namespace {

std::string cudnn_version_text(std::size_t version) {  // cuDNN 9: major * 10000 + minor * 100 + patch
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
}

std::string library_versions(std::string& error) {
    // The dynamic linker takes whatever libcudnn.so.9 it finds first; a cuDNN 8 renamed or
    // symlinked into its place would fail in the middle of a step instead of here.
    const std::size_t cudnn_loaded = cudnnGetVersion();
    if (cudnn_loaded / 10000 != CUDNN_VERSION / 10000) {
        error = "cuDNN version mismatch: the CUDA backend was built with cuDNN " + cudnn_version_text(CUDNN_VERSION) +
                " but loaded " + cudnn_version_text(cudnn_loaded) + "; install cuDNN " +
                std::to_string(CUDNN_VERSION / 10000);
        return {};
    }
    error.clear();
    return "cuDNN " + cudnn_version_text(cudnn_loaded) + ", NCCL " + nccl_version();
}

std::unique_ptr<Backend> create_backend(int ordinal) { return std::make_unique<CudaBackend>(ordinal); }

std::unique_ptr<CrossDeviceOps> create_nccl_all_reduce(std::vector<int> ordinals) {
    return std::make_unique<NcclAllReduce>(std::move(ordinals));
}

const ComputeModuleApi kApi{plugin_abi_fingerprint(), kComputeModuleVersion, &library_versions, &create_backend,
                            &create_nccl_all_reduce};

}  // namespace

}  // namespace mirrorlab::cuda

#define MIRRORLAB_COMPUTE_EXPORT __attribute__((visibility("default")))

// The module's only exported symbol; the plugin finds it with dlsym.
extern "C" MIRRORLAB_COMPUTE_EXPORT const mirrorlab::cuda::ComputeModuleApi* mirrorlab_cuda_compute_api() {
    return &mirrorlab::cuda::kApi;
}
