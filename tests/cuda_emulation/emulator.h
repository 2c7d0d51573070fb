#pragma once
// What the emulated runtime shares with the emulated cuBLAS, cuDNN and NCCL (tests only; see
// include/cuda_runtime.h for what the emulator is and how strict it is).
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace mirrorlab_emulation {

int current_device();
bool valid_device(int device);
// The stream work goes to: `stream`, or the current device's default stream for null.
Stream* resolve(cudaStream_t stream);
int stream_device(cudaStream_t stream);
// Runs everything queued on the stream so far.
void drain(cudaStream_t stream);
// Runs the stream's queued work in order until `reached` (asked before each item) says stop.
void drain_until(cudaStream_t stream, const std::function<bool()>& reached);
// The device that owns [pointer, pointer + bytes), or -1 when that range is not inside one live
// device allocation.
int device_of_range(const void* pointer, std::size_t bytes);
// device_to_host (declared in cuda_runtime.h) gives the bytes behind a device address.
// Whether MIRRORLAB_CUDA_EMULATION_FAIL (a comma-separated list of API names) asks `call` to fail:
// how the tests show what a person sees when a library cannot start.
bool injected_failure(const char* call);
// Records `error` as the calling thread's last error and returns it.
cudaError_t fail(cudaError_t error);

// Prints "CUDA emulation: [rule] what happened" on stderr. The rule names are the emulator's
// contract with its self-test (tests/test_cuda_emulator.cpp has a wrong program for each).
void report(const char* rule, const char* format, ...) __attribute__((format(printf, 2, 3)));
// report(), then abort: for mistakes a GPU reports nowhere (it computes with stale or foreign
// data), so that the program stops where the mistake was made.
[[noreturn]] void report_fatal(const char* rule, const char* format, ...) __attribute__((format(printf, 2, 3)));
// The host reads device bytes [pointer, pointer + bytes) now (a copy to the host, NCCL adding its
// inputs): reports read-before-wait when work queued on any stream still writes any of them.
void check_host_read(const void* pointer, std::size_t bytes, const char* what);

// The counters of mirrorlab_emulation_counters.h, bumped by the API calls they name.
enum class Counted { Invalid = 0, LibraryLaunch, Copy, HostToDevicePageable, HostSync, EventCall };
void count(Counted what);

}  // namespace mirrorlab_emulation
