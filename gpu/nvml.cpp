#include "gpu/nvml.h"

#include <dlfcn.h>

#include <cstdlib>

#ifndef MIRRORLAB_NVML_LIBRARY_NAME
#define MIRRORLAB_NVML_LIBRARY_NAME "libnvidia-ml.so.1"
#endif

namespace mirrorlab::cuda {

namespace {

// NVML's C ABI, the few entry points used (nvml.h: nvmlReturn_t is an int-sized enum, 0 success;
// nvmlDevice_t an opaque pointer; nvmlMemory_t three unsigned long longs).
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlMemoryInfo {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
constexpr NvmlReturn kNvmlSuccess = 0;

struct Nvml {
    NvmlReturn (*get_handle_by_bus_id)(const char*, NvmlDevice*) = nullptr;
    NvmlReturn (*get_memory_info)(NvmlDevice, NvmlMemoryInfo*) = nullptr;
    std::string problem;  // empty once nvmlInit_v2 succeeded
};

// Loaded and initialised once; never unloaded (the process may ask until it ends).
const Nvml& nvml() {
    static const Nvml loaded = [] {
        Nvml made;
        const char* override_path = std::getenv("MIRRORLAB_NVML_LIBRARY");
        const std::string path = override_path != nullptr && *override_path != '\0' ? override_path : MIRRORLAB_NVML_LIBRARY_NAME;
        void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) {
            const char* error = dlerror();
            made.problem = error != nullptr ? error : path + ": cannot be opened";
            return made;
        }
        auto init = reinterpret_cast<NvmlReturn (*)()>(dlsym(library, "nvmlInit_v2"));
        auto error_string = reinterpret_cast<const char* (*)(NvmlReturn)>(dlsym(library, "nvmlErrorString"));
        made.get_handle_by_bus_id =
            reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
        made.get_memory_info = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlMemoryInfo*)>(dlsym(library, "nvmlDeviceGetMemoryInfo"));
        if (init == nullptr || made.get_handle_by_bus_id == nullptr || made.get_memory_info == nullptr) {
            made.problem = path + " lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetMemoryInfo";
        } else if (const NvmlReturn result = init(); result != kNvmlSuccess) {
            const char* text = error_string != nullptr ? error_string(result) : nullptr;
            made.problem = path + ": nvmlInit_v2 returned " + std::to_string(result) + (text != nullptr ? std::string(" (") + text + ")" : "");
        }
        return made;
    }();
    return loaded;
}

}  // namespace

std::optional<NvmlMemory> nvml_memory(const std::string& bus_id) {
    const Nvml& library = nvml();
    if (!library.problem.empty() || bus_id.empty()) return std::nullopt;
    NvmlDevice device = nullptr;
    NvmlMemoryInfo memory{};
    if (library.get_handle_by_bus_id(bus_id.c_str(), &device) != kNvmlSuccess ||
        library.get_memory_info(device, &memory) != kNvmlSuccess) {
        return std::nullopt;
    }
    return NvmlMemory{static_cast<std::int64_t>(memory.free), static_cast<std::int64_t>(memory.total)};
}

std::string nvml_problem() { return nvml().problem; }

}  // namespace mirrorlab::cuda
