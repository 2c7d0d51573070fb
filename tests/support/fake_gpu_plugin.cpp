// Stand-ins for libmirrorlab_cuda.so that exercise every branch of the plugin loader on any
// machine: built once per variant (one MIRRORLAB_FAKE_PLUGIN_* definition each) into its own
// directory under the name libmirrorlab_cuda.so. Only headers of core are used, so the fakes
// need no CUDA and no position-independent core.
#include <cstdio>

#include "core/device/plugin_loader.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace {

class FakeProvider final : public mirrorlab::DeviceProvider {
public:
    explicit FakeProvider(bool with_gpu) : with_gpu_(with_gpu) {}
    mirrorlab::DeviceType type() const override { return mirrorlab::DeviceType::GPU; }
    std::vector<mirrorlab::PhysicalDevice> devices() const override {
        if (!with_gpu_) return {};
        mirrorlab::PhysicalDevice gpu;
        gpu.type = mirrorlab::DeviceType::GPU;
        gpu.index = 0;
        gpu.name = "Fake Plugin GPU";
        gpu.total_memory_bytes = std::int64_t{8} << 30;
        gpu.free_memory_bytes = std::int64_t{7} << 30;
        gpu.cores = 4;
        gpu.compute_capability = "9.0";
        gpu.bus_id = "0000:42:00.0";
        return {gpu};
    }
    std::string status() const override {
        return with_gpu_ ? "fake CUDA plugin: 1 GPU" : "no CUDA driver found: fake plugin without a driver";
    }
    std::unique_ptr<mirrorlab::Backend> create_backend(int) override { return nullptr; }
    std::shared_ptr<mirrorlab::RawAllocator> create_allocator(int) override { return nullptr; }

private:
    bool with_gpu_ = false;
};

}  // namespace

#if !defined(MIRRORLAB_FAKE_PLUGIN_NO_SYMBOLS)

extern "C" {

FAKE_EXPORT int mirrorlab_plugin_abi_version() {
#if defined(MIRRORLAB_FAKE_PLUGIN_BAD_ABI)
    return mirrorlab::kPluginAbiVersion + 1000;
#else
    return mirrorlab::kPluginAbiVersion;
#endif
}

FAKE_EXPORT std::uint64_t mirrorlab_plugin_abi_fingerprint() {
#if defined(MIRRORLAB_FAKE_PLUGIN_BAD_FINGERPRINT)
    return mirrorlab::plugin_abi_fingerprint() + 1;
#else
    return mirrorlab::plugin_abi_fingerprint();
#endif
}

FAKE_EXPORT mirrorlab::DeviceProvider* mirrorlab_plugin_create_provider(char* error, std::size_t error_size) noexcept {
#if defined(MIRRORLAB_FAKE_PLUGIN_FAILING)
    std::snprintf(error, error_size, "%s", "cuInit failed in the fake plugin");
    return nullptr;
#elif defined(MIRRORLAB_FAKE_PLUGIN_NO_DRIVER)
    (void)error;
    (void)error_size;
    return new FakeProvider(false);
#else
    (void)error;
    (void)error_size;
    return new FakeProvider(true);
#endif
}

#if defined(MIRRORLAB_FAKE_PLUGIN_MISSING_DEPENDENCY)
int mirrorlab_fake_dependency();  // in libmirrorlab_fake_dependency.so, which dlopen cannot find
FAKE_EXPORT int mirrorlab_fake_use_dependency() { return mirrorlab_fake_dependency(); }
#endif

}  // extern "C"

#else

extern "C" FAKE_EXPORT int mirrorlab_fake_plugin_without_entry_points() { return 0; }

#endif

#if defined(MIRRORLAB_FAKE_DEPENDENCY)
extern "C" FAKE_EXPORT int mirrorlab_fake_dependency() { return 42; }
#endif
