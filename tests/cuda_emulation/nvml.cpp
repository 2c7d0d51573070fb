// NVML's stand-in for the host emulator: the calls gpu/nvml.cpp makes to read a GPU's free memory
// without a CUDA context, answered from the emulated GPUs' memory. Part of the emulation library,
// which the emulated plugin opens as its NVML (MIRRORLAB_NVML_LIBRARY_NAME), so both see one state.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "emulator.h"

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotFound = 6;
constexpr int kDriverNotLoaded = 9;

struct Memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};

// A handle names its device: the device's index + 1, so that no handle is null.
void* handle_of(int device) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(device) + 1); }
int device_of(void* handle) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(handle)) - 1; }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int nvmlInit_v2() {
    return mirrorlab_emulation::driver_present() ? kSuccess : kDriverNotLoaded;
}

// The emulated GPUs sit on buses 0x10, 0x11, ... (cudaDeviceGetPCIBusId: "0000:10:00.0").
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, void** device) {
    if (bus_id == nullptr || device == nullptr) return kInvalidArgument;
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) return kInvalidArgument;
    const int index = static_cast<int>(bus) - 0x10;
    if (domain != 0 || slot != 0 || function != 0 || !mirrorlab_emulation::valid_device(index)) return kNotFound;
    *device = handle_of(index);
    return kSuccess;
}

// MIRRORLAB_CUDA_EMULATION_NVML_PARENT_MIB=N: NVML answers for a whole GPU of N MiB, as it does
// for a MIG slice (which has its parent's bus id), while CUDA sees the slice's memory.
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
    std::size_t free_bytes = 0, total_bytes = 0;
    if (memory == nullptr || !mirrorlab_emulation::device_memory(device_of(device), &free_bytes, &total_bytes)) {
        return kInvalidArgument;
    }
    if (const char* parent = std::getenv("MIRRORLAB_CUDA_EMULATION_NVML_PARENT_MIB"); parent != nullptr && *parent != '\0') {
        const std::size_t used = total_bytes - free_bytes;
        total_bytes = static_cast<std::size_t>(std::strtoull(parent, nullptr, 10)) << 20;
        free_bytes = total_bytes > used ? total_bytes - used : 0;
    }
    *memory = Memory{total_bytes, free_bytes, total_bytes - free_bytes};
    return kSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int result) {
    switch (result) {
        case kSuccess: return "Success";
        case kInvalidArgument: return "Invalid Argument";
        case kNotFound: return "Not Found";
        case kDriverNotLoaded: return "Driver Not Loaded";
        default: return "Unknown Error";
    }
}

}  // extern "C"
