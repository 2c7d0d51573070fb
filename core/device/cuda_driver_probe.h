#pragma once
// Asks the CUDA driver whether this machine has a GPU before anything of CUDA is loaded: the
// CUDA plugin and the libraries it links (runtime, cuBLAS, cuDNN, NCCL) take ~200 MB of a
// process, which a CPU-only machine should never pay. The driver library is opened with dlopen and
// asked through three driver-API calls declared here by hand (cuInit, cuDeviceGetCount,
// cuDriverGetVersion), so core needs no CUDA headers and no CUDA at build time.
#include <string>

namespace mirrorlab {

struct CudaDriverProbe {
    std::string library;     // the driver library that was asked (or tried)
    bool found = false;      // the library loaded and has the driver API
    int gpu_count = 0;       // what cuDeviceGetCount said; 0 when it could not be asked
    int driver_version = 0;  // 13000 = CUDA 13.0; 0 when unknown
    std::string problem;     // one line when gpu_count == 0: "no CUDA driver found (...)"
};

// The stand-in a plugin folder may carry instead of the system's driver (the tests' CUDA host
// emulator does): found next to the plugin, it is asked instead of libcuda.so.1.
inline constexpr const char* kCudaDriverStandInFileName = "libmirrorlab_cuda_driver.so";

// The library to ask: $MIRRORLAB_CUDA_DRIVER_LIBRARY where set, else the stand-in in
// `plugin_dir` where there is one, else "libcuda.so.1" (found the way the CUDA runtime finds it).
std::string cuda_driver_library(const std::string& plugin_dir);

// Opens `library` (never closed: cuInit may leave threads running in it) and counts the GPUs.
// Asks again on every call (cuInit is cheap once done); safe from several threads; never throws.
CudaDriverProbe probe_cuda_driver(const std::string& library);

}  // namespace mirrorlab
