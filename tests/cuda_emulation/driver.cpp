// The CUDA driver stand-in for the host emulator: the four driver-API calls MirrorLab's driver
// probe (core/device/cuda_driver_probe.cpp) makes before it opens a CUDA plugin. Built as
// libmirrorlab_cuda_driver.so next to the emulated plugin, where the probe finds it instead of the
// system's libcuda.so.1. It sees the GPUs the emulated runtime will discover
// (MIRRORLAB_CUDA_EMULATION_GPUS, default 2), so the probe and the plugin agree.
#include <atomic>
#include <cstdlib>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNotInitialized = 3;
constexpr int kNoDevice = 100;

std::atomic<bool> initialised{false};

int emulated_gpus() {
    const char* text = std::getenv("MIRRORLAB_CUDA_EMULATION_GPUS");
    if (text == nullptr || *text == '\0') return 2;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    return end != nullptr && *end == '\0' && value >= 0 ? static_cast<int>(value) : 2;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cuInit(unsigned int flags) {
    if (flags != 0) return kInvalidValue;
    if (emulated_gpus() == 0) return kNoDevice;  // as the real driver does on a machine without a GPU
    initialised = true;
    return kSuccess;
}

__attribute__((visibility("default"))) int cuDeviceGetCount(int* count) {
    if (count == nullptr) return kInvalidValue;
    if (!initialised) return kNotInitialized;
    *count = emulated_gpus();
    return kSuccess;
}

__attribute__((visibility("default"))) int cuDriverGetVersion(int* version) {
    if (version == nullptr) return kInvalidValue;
    *version = 13000;
    return kSuccess;
}

__attribute__((visibility("default"))) int cuGetErrorName(int error, const char** name) {
    if (name == nullptr) return kInvalidValue;
    switch (error) {
        case kSuccess: *name = "CUDA_SUCCESS"; return kSuccess;
        case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; return kSuccess;
        case kNotInitialized: *name = "CUDA_ERROR_NOT_INITIALIZED"; return kSuccess;
        case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; return kSuccess;
        default: *name = nullptr; return kInvalidValue;
    }
}

__attribute__((visibility("default"))) int cuGetErrorString(int error, const char** text) {
    if (text == nullptr) return kInvalidValue;
    switch (error) {
        case kSuccess: *text = "no error"; return kSuccess;
        case kInvalidValue: *text = "invalid argument"; return kSuccess;
        case kNotInitialized: *text = "initialization error"; return kSuccess;
        case kNoDevice: *text = "no CUDA-capable device is detected"; return kSuccess;
        default: *text = nullptr; return kInvalidValue;
    }
}

}  // extern "C"
