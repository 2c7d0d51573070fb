#include "gpu/compute_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <system_error>

#include "core/device/plugin_loader.h"
#include "core/util/error.h"

namespace mirrorlab::cuda {

namespace {

struct Loaded {
    ComputeModuleState state;
    const ComputeModuleApi* api = nullptr;  // set once the module passed every check
};

std::mutex& loader_mutex() {
    static std::mutex mutex;
    return mutex;
}

Loaded& loaded() {
    // Never destroyed, as the loader's providers: a GPU's status may still be asked for at exit.
    static auto* value = new Loaded();
    return *value;
}

// The folder this plugin was loaded from: the compute module is installed beside it, and looking
// there (not along the dynamic linker's path) never picks up another build's module.
std::string plugin_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&compute_module_state), &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    return std::filesystem::path(info.dli_fname).parent_path().string();
}

// Fills `result` with the api, or with why there is none.
void open_compute_module(Loaded& result) {
    const std::string dir = plugin_dir();
    if (dir.empty()) {
        result.state.failure = std::string("the CUDA plugin cannot find ") + kComputeModuleFileName +
                               " (dladdr does not name the plugin's own folder); reinstall MirrorLab's CUDA backend";
        return;
    }
    const std::string path = (std::filesystem::path(dir) / kComputeModuleFileName).string();
    std::error_code missing;
    if (!std::filesystem::exists(path, missing)) {
        result.state.failure = path + " is missing (the CUDA backend's cuBLAS, cuDNN and NCCL half, installed beside "
                               "libmirrorlab_cuda.so); reinstall MirrorLab's CUDA backend (the mirrorlab-cuda package)";
        return;
    }
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        // dlerror names the library that is missing: "libcudnn.so.9: cannot open shared object file".
        const char* text = dlerror();
        result.state.failure = std::string(kComputeModuleFileName) + " could not be loaded: " +
                               (text != nullptr ? text : "unknown error") +
                               "; install cuDNN 9, cuBLAS and NCCL 2 for CUDA 13 from NVIDIA's repositories";
        return;
    }
    auto entry = reinterpret_cast<ComputeModuleEntryFn>(dlsym(handle, kComputeModuleEntryPoint));
    const ComputeModuleApi* api = entry != nullptr ? entry() : nullptr;
    if (api == nullptr) {
        result.state.failure = path + " is not MirrorLab's CUDA compute module (it lacks " + kComputeModuleEntryPoint +
                               "); reinstall MirrorLab's CUDA backend";
        return;
    }
    if (api->abi_fingerprint != plugin_abi_fingerprint() || api->version != kComputeModuleVersion) {
        result.state.failure = path +
                               " was built from another version of MirrorLab than libmirrorlab_cuda.so (ABI "
                               "fingerprint mismatch); reinstall MirrorLab's CUDA backend, or rebuild both";
        return;
    }
    std::string error;
    result.state.versions = api->library_versions(error);
    if (!error.empty()) {
        result.state.versions.clear();
        result.state.failure = error;
        return;
    }
    result.api = api;
}

}  // namespace

const ComputeModuleApi& compute_module(const std::string& user) {
    std::lock_guard lock(loader_mutex());
    Loaded& module = loaded();
    if (!module.state.tried) {
        module.state.tried = true;
        try {
            open_compute_module(module);
        } catch (const std::exception& error) {  // std::filesystem and std::string may throw
            module.state.failure = std::string(kComputeModuleFileName) + " could not be loaded: " + error.what();
        }
    }
    if (module.api == nullptr) {
        throw DeviceConfigError("device configuration: " + user + " cannot be used: " + module.state.failure +
                                ", or train on the CPU (--devices cpu)");
    }
    return *module.api;
}

ComputeModuleState compute_module_state() {
    std::lock_guard lock(loader_mutex());
    return loaded().state;
}

}  // namespace mirrorlab::cuda
