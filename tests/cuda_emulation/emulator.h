#pragma once
// What the emulated runtime shares with the emulated cuBLAS, cuDNN and NCCL (tests only; see
// include/cuda_runtime.h for what the emulator is and how strict it is).
#include <cuda_runtime.h>

#include <cstddef>

namespace mirrorlab_emulation {

int current_device();
bool valid_device(int device);
// The stream work goes to: `stream`, or the current device's default stream for null.
Stream* resolve(cudaStream_t stream);
int stream_device(cudaStream_t stream);
// Runs everything queued on the stream so far.
void drain(cudaStream_t stream);
// The device that owns [pointer, pointer + bytes), or -1 when that range is not inside one live
// device allocation.
int device_of_range(const void* pointer, std::size_t bytes);
// device_to_host (declared in cuda_runtime.h) gives the bytes behind a device address.
// Records `error` as the calling thread's last error and returns it.
// Whether MIRRORLAB_CUDA_EMULATION_FAIL (a comma-separated list of API names) asks `call` to fail:
// how the tests show what a person sees when a library cannot start.
bool injected_failure(const char* call);
cudaError_t fail(cudaError_t error);

}  // namespace mirrorlab_emulation
