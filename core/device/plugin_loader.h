#pragma once
// Loads the CUDA backend (libmirrorlab_cuda.so) at run time, as OBS loads its graphics modules:
// a missing file, a library that will not load (no libcudart, no cuDNN), a plugin built for
// another version of these headers or a machine without a CUDA driver each end as one status
// line in the registry, and the program carries on with its CPU devices. Nothing here throws.
//
// The plugin ABI: the library exports three C functions (below). The C++ objects it returns
// (DeviceProvider, Backend, RawAllocator, CrossDeviceOps) and the arenas it is handed cross the
// boundary as they are, so the plugin must be built from the same headers by the same compiler;
// the version and the layout fingerprint catch a plugin from another build. A loaded plugin is
// never unloaded: the vtables of the objects it made live in it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/arena.h"
#include "core/backend/backend.h"
#include "core/device/cuda_driver_probe.h"
#include "core/device/device.h"
#include "core/optim/optimizer.h"
#include "core/util/step_barrier.h"

namespace mirrorlab {

// Bump when a class that crosses the plugin boundary changes its virtual functions.
// 2: CrossDeviceOps::all_reduce takes a StepBarrier; Backend gained attach_arena and the step marks.
// 3: RawAllocator gained refusal().
// 4: Backend gained embedding_gradient_stats; apply_update takes IndexedSlicesViews. The plugin
//    links the shared libmirrorlab_core instead of a private copy.
// 5: Backend gained supports(), run() and host_memory() for the layer types' own ops (OpCall).
// 6: the plugin loads its cuBLAS/cuDNN/NCCL half (libmirrorlab_cuda_compute.so) on first use and
//    checks it against plugin_abi_fingerprint() too.
// 7: Backend gained mark_ready/wait_for and the step_* calls with finish_step() (one host wait per
//    step, issue #21); copy() and add_inplace() only queue; CrossDeviceOps::all_reduce orders by them.
// 8: Backend gained add_inplace_all_finite and step_set_finite; conv1d_relu_maxpool1d_backward
//    takes the pooled y; CrossDeviceOps gained sum_all_finite (issue #17).
// 9: Backend gained defers_moment_decays; IndexedSlicesViews gained moment_decays (issue #17).
// 10: Backend gained add_into_both_all_finite (issue #17).
inline constexpr int kPluginAbiVersion = 10;

// Sizes of every structure that crosses the boundary by value or by reference (the classes handed
// to the plugin: MemoryArena, StepBarrier, LogicalDevice), folded into one number: a plugin built
// against headers whose structures differ reports another fingerprint. Interfaces crossing by
// pointer (Backend, DeviceProvider, RawAllocator, CrossDeviceOps) change with kPluginAbiVersion.
constexpr std::uint64_t plugin_abi_fingerprint() {
    std::uint64_t hash = 1469598103934665603ull;
    for (std::uint64_t size : {sizeof(TensorView), sizeof(Shape), sizeof(PhysicalDevice), sizeof(LossCounts),
                               sizeof(Conv1DParams), sizeof(Pool1DParams), sizeof(OpCall), sizeof(OptimizerStep),
                               sizeof(MemoryStats), sizeof(DeviceChoice), sizeof(MemoryArena), sizeof(StepBarrier),
                               sizeof(LogicalDevice), sizeof(IndexedSlicesViews), sizeof(IndexedSlicesStats),
                               sizeof(StepReadback), std::uint64_t{kPluginAbiVersion}}) {
        hash = (hash ^ size) * 1099511628211ull;
    }
    return hash;
}

inline constexpr const char* kGpuPluginFileName = "libmirrorlab_cuda.so";

// What the plugin exports (extern "C"):
//   int mirrorlab_plugin_abi_version(void);                 // kPluginAbiVersion it was built with
//   std::uint64_t mirrorlab_plugin_abi_fingerprint(void);   // plugin_abi_fingerprint() it was built with
//   DeviceProvider* mirrorlab_plugin_create_provider(char* error, std::size_t error_size);
//       discovers the devices; never throws; null (and a message in `error`) when it cannot start.
//       The provider's status() is the registry's GPU line ("no CUDA driver found: ...").
using PluginAbiVersionFn = int (*)();
using PluginAbiFingerprintFn = std::uint64_t (*)();
using PluginCreateProviderFn = DeviceProvider* (*)(char* error, std::size_t error_size);

struct PluginLoadResult {
    std::string path;            // the file that was tried; empty when none was found
    bool plugin_loaded = false;  // the library loaded and passed the ABI checks
    int gpu_count = 0;           // GPUs its provider added to the registry
    std::string status;          // the registry's GPU status line after the attempt
    CudaDriverProbe driver;      // what the driver said before the plugin was opened (library empty: not asked)
};

// True when $MIRRORLAB_NO_GPU is set to anything but "" or "0" (the programs' --no-gpu sets it):
// the plugin is not looked for, the driver not asked, and the machine's devices are its CPUs.
bool gpus_skipped();

// Where the plugin is looked for: where $MIRRORLAB_PLUGIN_DIR is set, its entries (':'-separated)
// and nothing else; otherwise, in order, the executable's directory, ../gpu next to it (the build
// tree), and the installed plugin folder relative to the executable's
// (/usr/bin/../lib/x86_64-linux-gnu/mirrorlab for the .deb).
std::vector<std::string> gpu_plugin_search_dirs();

// Loads the first libmirrorlab_cuda.so found in `dirs` and adds its GPUs to `registry`; sets the
// registry's GPU status line whatever happens. Before the plugin is opened the CUDA driver is
// asked for its GPUs (core/device/cuda_driver_probe.h); with none, or with gpus_skipped(), nothing
// of CUDA is loaded and the line says why. A registry that already has a GPU provider is
// left as it is. Safe to call from several threads; each library is opened once per process.
PluginLoadResult load_gpu_plugin(DeviceRegistry& registry, const std::vector<std::string>& dirs);
PluginLoadResult load_gpu_plugin(DeviceRegistry& registry);  // gpu_plugin_search_dirs()

}  // namespace mirrorlab
