#pragma once
// The plugin's side of gpu/compute_module.h: opens libmirrorlab_cuda_compute.so from the plugin's
// own folder the first time a GPU is used (its first backend or NCCL all-reduce), once per process
// and never closed (the backends it makes keep their vtables there). Until then cuBLAS, cuDNN
// and NCCL are not mapped; a process that only lists devices never loads them.
#include <string>

#include "gpu/compute_module.h"

namespace mirrorlab::cuda {

// The compute module, loaded on the first call; the outcome, good or bad, is kept for every later
// one. Throws DeviceConfigError naming `user` ("GPU:0"), what is wrong (the file is missing, a
// library it needs will not load, it comes from another build, cuDNN has another major version)
// and how to fix it. Safe to call from several threads.
const ComputeModuleApi& compute_module(const std::string& user);

// Where loading stands, without loading anything.
struct ComputeModuleState {
    bool tried = false;    // compute_module() was called
    std::string versions;  // "cuDNN 9.0.0, NCCL 2.28.0" once loaded
    std::string failure;   // why it cannot be used, once that is known
};
ComputeModuleState compute_module_state();

}  // namespace mirrorlab::cuda
