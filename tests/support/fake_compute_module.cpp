// Stand-ins for libmirrorlab_cuda_compute.so, the compute module the CUDA plugin loads when a GPU
// is first used (gpu/compute_module.h), for what the emulated one cannot show: a module from
// another build (its fingerprint differs) and one whose own library the dynamic linker cannot
// find, as when libcudnn.so.9 is not installed. Built once per MIRRORLAB_FAKE_COMPUTE_* variant
// into its own directory; MIRRORLAB_FAKE_COMPUTE_DEPENDENCY builds that library instead.
#include "core/device/plugin_loader.h"
#include "gpu/compute_module.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

#if defined(MIRRORLAB_FAKE_COMPUTE_DEPENDENCY)

extern "C" FAKE_EXPORT int mirrorlab_fake_compute_dependency() { return 7; }

#else

namespace {

// Never used past the fingerprint: the loader rejects it, or never gets to open it.
const mirrorlab::cuda::ComputeModuleApi kApi{mirrorlab::plugin_abi_fingerprint() + 1,
                                             mirrorlab::cuda::kComputeModuleVersion, nullptr, nullptr, nullptr};

}  // namespace

extern "C" {

FAKE_EXPORT const mirrorlab::cuda::ComputeModuleApi* mirrorlab_cuda_compute_api() { return &kApi; }

#if defined(MIRRORLAB_FAKE_COMPUTE_MISSING_DEPENDENCY)
int mirrorlab_fake_compute_dependency();  // in libmirrorlab_fake_compute_dependency.so, not on any path
FAKE_EXPORT int mirrorlab_fake_compute_use_dependency() { return mirrorlab_fake_compute_dependency(); }
#endif

}  // extern "C"

#endif
