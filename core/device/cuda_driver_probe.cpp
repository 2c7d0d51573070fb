#include "core/device/cuda_driver_probe.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace mirrorlab {

namespace {

// The driver API's own declarations (cuda.h), written out: CUresult is an int-sized enum and
// these calls have had the same C signatures since CUDA 2.
using CuResult = int;
constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorNoDevice = 100;
using CuInitFn = CuResult (*)(unsigned int flags);
using CuDeviceGetCountFn = CuResult (*)(int* count);
using CuDriverGetVersionFn = CuResult (*)(int* version);
using CuGetErrorTextFn = CuResult (*)(CuResult error, const char** text);

std::string version_text(int version) {  // 13000 -> "13.0"
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", or the number where the library
// cannot name it.
std::string error_text(void* handle, CuResult error) {
    auto name_of = reinterpret_cast<CuGetErrorTextFn>(dlsym(handle, "cuGetErrorName"));
    auto text_of = reinterpret_cast<CuGetErrorTextFn>(dlsym(handle, "cuGetErrorString"));
    const char* name = nullptr;
    const char* text = nullptr;
    if (name_of == nullptr || name_of(error, &name) != kCudaSuccess || name == nullptr) {
        return "CUDA error " + std::to_string(error);
    }
    std::string result = name;
    if (text_of != nullptr && text_of(error, &text) == kCudaSuccess && text != nullptr) result += std::string(" (") + text + ")";
    return result;
}

CudaDriverProbe ask_driver(const std::string& library) {
    CudaDriverProbe probe;
    probe.library = library;
    dlerror();
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* reason = dlerror();
        probe.problem = "no CUDA driver found (" + std::string(reason != nullptr ? reason : library.c_str()) + ")";
        return probe;
    }
    auto init = reinterpret_cast<CuInitFn>(dlsym(handle, "cuInit"));
    auto count = reinterpret_cast<CuDeviceGetCountFn>(dlsym(handle, "cuDeviceGetCount"));
    auto version = reinterpret_cast<CuDriverGetVersionFn>(dlsym(handle, "cuDriverGetVersion"));
    if (init == nullptr || count == nullptr) {
        probe.problem = "no CUDA driver found (" + library + " lacks cuInit or cuDeviceGetCount)";
        return probe;
    }
    probe.found = true;
    if (version != nullptr && version(&probe.driver_version) != kCudaSuccess) probe.driver_version = 0;
    const std::string driver = probe.driver_version > 0 ? "CUDA driver " + version_text(probe.driver_version)
                                                        : std::string("CUDA driver");
    if (const CuResult result = init(0); result != kCudaSuccess) {
        // No GPU (or none this process may use) is the common case on a workstation with the
        // driver package but no card; anything else is the driver failing to start.
        probe.problem = (result == kCudaErrorNoDevice ? "no CUDA GPU found: cuInit returned "
                                                      : "CUDA driver failed to start: cuInit returned ") +
                        error_text(handle, result) + "; " + driver;
        return probe;
    }
    if (const CuResult result = count(&probe.gpu_count); result != kCudaSuccess) {
        probe.gpu_count = 0;
        probe.problem = "CUDA driver failed to count its GPUs: cuDeviceGetCount returned " + error_text(handle, result) +
                        "; " + driver;
    } else if (probe.gpu_count <= 0) {
        probe.gpu_count = 0;
        probe.problem = "no CUDA GPU found; " + driver;
    }
    return probe;
}

}  // namespace

std::string cuda_driver_library(const std::string& plugin_dir) {
    if (const char* env = std::getenv("MIRRORLAB_CUDA_DRIVER_LIBRARY"); env != nullptr && *env != '\0') return env;
    std::error_code error;
    const std::filesystem::path stand_in = std::filesystem::path(plugin_dir) / kCudaDriverStandInFileName;
    if (!plugin_dir.empty() && std::filesystem::exists(stand_in, error)) return stand_in.string();
    return "libcuda.so.1";
}

CudaDriverProbe probe_cuda_driver(const std::string& library) { return ask_driver(library); }

}  // namespace mirrorlab
