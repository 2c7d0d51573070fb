// gpu/kernels.cu compiled as C++ against the emulator's cuda_runtime.h: the same kernel bodies,
// launched through MIRRORLAB_LAUNCH onto emulated streams.
#include "gpu/kernels.cu"
