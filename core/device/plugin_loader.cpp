#include "core/device/plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>

namespace mirrorlab {

namespace {

// One attempt per file and process: the outcome is replayed to every registry that asks again.
struct LoadedPlugin {
    bool plugin_loaded = false;
    std::shared_ptr<DeviceProvider> provider;  // null when loading or initialising failed
    std::string status;
};

std::mutex& loader_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::map<std::string, LoadedPlugin>& loaded_plugins() {
    // Never destroyed: a provider must outlive every device and static that may use it at exit.
    static auto* plugins = new std::map<std::string, LoadedPlugin>();
    return *plugins;
}

std::string executable_dir() {
    std::error_code error;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string() : exe.parent_path().string();
}

std::string last_dl_error() {
    const char* text = dlerror();
    return text != nullptr ? std::string(text) : std::string("unknown error");
}

// The library is never closed, even when it is rejected: the CUDA runtime inside it registers
// exit handlers that must find their code still mapped.
LoadedPlugin open_plugin(const std::string& path) {
    LoadedPlugin result;
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        // dlerror names the library that is missing: "libcudnn.so.9: cannot open shared object file".
        result.status = "CUDA backend could not be loaded: " + last_dl_error();
        return result;
    }
    auto version = reinterpret_cast<PluginAbiVersionFn>(dlsym(handle, "mirrorlab_plugin_abi_version"));
    auto fingerprint = reinterpret_cast<PluginAbiFingerprintFn>(dlsym(handle, "mirrorlab_plugin_abi_fingerprint"));
    auto create = reinterpret_cast<PluginCreateProviderFn>(dlsym(handle, "mirrorlab_plugin_create_provider"));
    if (version == nullptr || fingerprint == nullptr || create == nullptr) {
        result.status = "CUDA backend " + path +
                        " is not a MirrorLab plugin (it lacks mirrorlab_plugin_abi_version, "
                        "mirrorlab_plugin_abi_fingerprint or mirrorlab_plugin_create_provider)";
        return result;
    }
    const int plugin_version = version();
    if (plugin_version != kPluginAbiVersion) {
        result.status = "CUDA backend " + path + " was built for plugin ABI " + std::to_string(plugin_version) +
                        ", this program needs ABI " + std::to_string(kPluginAbiVersion) +
                        "; rebuild the CUDA backend with this version of MirrorLab";
        return result;
    }
    if (fingerprint() != plugin_abi_fingerprint()) {
        result.status = "CUDA backend " + path +
                        " was built from other MirrorLab headers (ABI fingerprint mismatch); rebuild it with this "
                        "version of MirrorLab";
        return result;
    }
    result.plugin_loaded = true;
    char error[512] = {};
    DeviceProvider* provider = nullptr;
    try {
        provider = create(error, sizeof error);
    } catch (const std::exception& exception) {  // the plugin promises not to throw; be sure
        result.status = std::string("CUDA backend failed to initialise: ") + exception.what();
        return result;
    } catch (...) {
        result.status = "CUDA backend failed to initialise: unknown error";
        return result;
    }
    if (provider == nullptr) {
        result.status = std::string("CUDA backend failed to initialise: ") + (error[0] != '\0' ? error : "no reason given");
        return result;
    }
    result.provider.reset(provider);
    try {
        result.status = result.provider->status();
    } catch (const std::exception& exception) {
        result.status = std::string("CUDA backend failed to report its status: ") + exception.what();
        result.provider.reset();
    }
    return result;
}

}  // namespace

bool gpus_skipped() {
    const char* env = std::getenv("MIRRORLAB_NO_GPU");
    return env != nullptr && *env != '\0' && std::string_view(env) != "0";
}

std::vector<std::string> gpu_plugin_search_dirs() {
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("MIRRORLAB_PLUGIN_DIR"); env != nullptr) {
        // Set, it is the whole search path: an empty folder (or an empty value) means no plugin.
        std::string_view list(env);
        while (!list.empty()) {
            const auto colon = list.find(':');
            const std::string_view dir = list.substr(0, colon);
            if (!dir.empty()) dirs.emplace_back(dir);
            if (colon == std::string_view::npos) break;
            list.remove_prefix(colon + 1);
        }
        return dirs;
    }
    const std::string exe_dir = executable_dir();
    if (!exe_dir.empty()) {
        dirs.push_back(exe_dir);
        dirs.push_back(exe_dir + "/../gpu");                                // a build tree
        dirs.push_back(exe_dir + "/" + MIRRORLAB_PLUGIN_DIR_FROM_BINDIR);  // installed
    }
    return dirs;
}

PluginLoadResult load_gpu_plugin(DeviceRegistry& registry, const std::vector<std::string>& dirs) {
    PluginLoadResult result;
    if (DeviceProvider* existing = registry.provider(DeviceType::GPU); existing != nullptr) {
        result.plugin_loaded = true;
        for (const auto& device : registry.physical_devices()) result.gpu_count += device.type == DeviceType::GPU ? 1 : 0;
        result.status = registry.gpu_status();
        return result;
    }
    if (gpus_skipped()) {
        result.status = "GPUs skipped (--no-gpu or MIRRORLAB_NO_GPU); the CUDA backend was not loaded";
        registry.set_gpu_status(result.status);
        return result;
    }
    try {
        std::string plugin_dir;
        for (const auto& dir : dirs) {
            std::error_code error;
            const std::filesystem::path candidate = std::filesystem::path(dir) / kGpuPluginFileName;
            if (std::filesystem::exists(candidate, error)) {
                result.path = std::filesystem::weakly_canonical(candidate, error).string();
                if (result.path.empty()) result.path = candidate.string();
                plugin_dir = dir;
                break;
            }
        }
        if (result.path.empty()) {
            result.status = "CUDA backend not installed (" + std::string(kGpuPluginFileName) + " not found)";
            registry.set_gpu_status(result.status);
            return result;
        }
        // The plugin and its CUDA libraries cost ~200 MB of a process: only where the driver
        // says there is a GPU to use are they loaded.
        result.driver = probe_cuda_driver(cuda_driver_library(plugin_dir));
        if (result.driver.gpu_count == 0) {
            result.status = result.driver.problem + "; the CUDA backend was not loaded";
            registry.set_gpu_status(result.status);
            return result;
        }
        LoadedPlugin plugin;
        {
            std::lock_guard lock(loader_mutex());
            auto& cache = loaded_plugins();
            auto it = cache.find(result.path);
            if (it == cache.end()) it = cache.emplace(result.path, open_plugin(result.path)).first;
            plugin = it->second;
        }
        result.plugin_loaded = plugin.plugin_loaded;
        if (plugin.provider && !plugin.provider->devices().empty()) {
            registry.add_provider(plugin.provider);  // sets the status line too
            result.gpu_count = static_cast<int>(plugin.provider->devices().size());
        } else {
            registry.set_gpu_status(plugin.status);
        }
        result.status = registry.gpu_status();
    } catch (const std::exception& exception) {
        result.status = std::string("CUDA backend could not be loaded: ") + exception.what();
        registry.set_gpu_status(result.status);
    }
    return result;
}

PluginLoadResult load_gpu_plugin(DeviceRegistry& registry) { return load_gpu_plugin(registry, gpu_plugin_search_dirs()); }

}  // namespace mirrorlab
