#pragma once
// The boundary between the two halves of the CUDA backend. The plugin, libmirrorlab_cuda.so,
// discovers the GPUs and manages their memory with the CUDA runtime alone; the compute module,
// libmirrorlab_cuda_compute.so, holds the ops (kernels, cuBLAS, cuDNN) and NCCL. The plugin opens
// the compute module the first time a GPU is used (gpu/compute_loader.h), so a process that only
// lists devices, reads runs or trains on the CPU never maps the ~200 MB of cuBLAS, cuDNN and NCCL.
//
// The module exports one C function, kComputeModuleEntryPoint, returning its ComputeModuleApi.
// Both halves come from one build by one compiler, so C++ types (and exceptions) cross as they do
// between the plugin and core; the fingerprint catches a compute module from another build.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/distribute/cross_device_ops.h"

namespace mirrorlab::cuda {

// Bump when ComputeModuleApi changes (its first two members stay where they are).
// 1: library_versions, create_backend, create_nccl_all_reduce.
inline constexpr int kComputeModuleVersion = 1;
inline constexpr const char* kComputeModuleFileName = "libmirrorlab_cuda_compute.so";
inline constexpr const char* kComputeModuleEntryPoint = "mirrorlab_cuda_compute_api";

struct ComputeModuleApi {
    std::uint64_t abi_fingerprint = 0;  // plugin_abi_fingerprint() it was built with
    int version = 0;                    // kComputeModuleVersion it was built with
    // The libraries the dynamic linker gave it, "cuDNN 9.1.0, NCCL 2.28.9"; or "" and, in `error`,
    // why they cannot serve (a cuDNN of another major version than the one it was built with).
    std::string (*library_versions)(std::string& error) = nullptr;
    // The Backend of one GPU (CudaBackend); throws OpError when its stream, cuBLAS or cuDNN will
    // not start.
    std::unique_ptr<Backend> (*create_backend)(int ordinal) = nullptr;
    // NCCL over distinct GPUs (NcclAllReduce); throws DeviceConfigError when it will not start.
    std::unique_ptr<CrossDeviceOps> (*create_nccl_all_reduce)(std::vector<int> ordinals) = nullptr;
};

using ComputeModuleEntryFn = const ComputeModuleApi* (*)();

}  // namespace mirrorlab::cuda
