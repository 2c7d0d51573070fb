#pragma once
// A GPU's free memory without a CUDA context on it, through NVML (libnvidia-ml.so.1, which every
// NVIDIA driver installs; what nvidia-smi reads). A CUDA context costs a few hundred MB of the GPU's
// memory and shows the program on that GPU in nvidia-smi, so discovery and the Devices panel must
// not make one on every GPU of a shared machine just to read its free memory. Opened with dlopen
// on first use (MIRRORLAB_NVML_LIBRARY names another library, for tests); when it cannot be opened
// the caller falls back to the CUDA runtime.
#include <cstdint>
#include <optional>
#include <string>

namespace mirrorlab::cuda {

struct NvmlMemory {
    std::int64_t free_bytes = 0;
    std::int64_t total_bytes = 0;
};

// The memory of the GPU at PCI bus id `bus_id` ("0000:41:00.0", as cudaDeviceGetPCIBusId gives it);
// none when NVML is not there or does not know the GPU. Thread-safe.
std::optional<NvmlMemory> nvml_memory(const std::string& bus_id);

// Why NVML cannot be used ("libnvidia-ml.so.1: cannot open shared object file ..."); empty when it can.
std::string nvml_problem();

}  // namespace mirrorlab::cuda
