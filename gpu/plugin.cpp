// The plugin's entry points: the only symbols libmirrorlab_cuda.so exports. The loader
// (core/device/plugin_loader.cpp) checks the ABI version and the layout fingerprint before it
// asks for the provider, and nothing here lets an exception cross into the program.
#include <cstdio>
#include <exception>

#include "core/device/plugin_loader.h"
#include "gpu/cuda_provider.h"

#define MIRRORLAB_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" {

MIRRORLAB_PLUGIN_EXPORT int mirrorlab_plugin_abi_version() { return mirrorlab::kPluginAbiVersion; }

MIRRORLAB_PLUGIN_EXPORT std::uint64_t mirrorlab_plugin_abi_fingerprint() { return mirrorlab::plugin_abi_fingerprint(); }

MIRRORLAB_PLUGIN_EXPORT mirrorlab::DeviceProvider* mirrorlab_plugin_create_provider(char* error,
                                                                                    std::size_t error_size) noexcept {
    try {
        return new mirrorlab::cuda::CudaDeviceProvider();
    } catch (const std::exception& exception) {
        if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "%s", exception.what());
    } catch (...) {
        if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "unknown error");
    }
    return nullptr;
}

}  // extern "C"
