#pragma once
// The CUDA host emulator, for tests only: the part of the CUDA runtime API that gpu/ uses,
// implemented on the CPU so that the CUDA backend's own code (kernels, streams, memory, cuBLAS and
// cuDNN calls, NCCL) runs and is checked against the CPU reference on machines without a GPU.
// tests/CMakeLists.txt builds gpu/'s sources against these headers into an emulated
// libmirrorlab_cuda.so; the real plugin never sees them.
//
// It is strict where a GPU would fail or lie: device memory has limits, every copy's range must
// lie inside one allocation, kernel pointer arguments must be device memory of the launching
// device, work on a stream runs only when something waits for it (so a missing synchronisation
// shows up as stale data), an event not yet reached has no time, and copies to host memory
// complete before returning (pageable memory, as on a GPU), and device addresses cannot be read or
// written by host code (they lie in a reserved, inaccessible range). It does not emulate concurrency
// inside a kernel: threads run one at a time, blocks in reverse order, and atomics are plain
// read-modify-writes; there is no shared memory or __syncthreads, so a kernel that needs them
// does not compile here.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorPeerAccessAlreadyEnabled = 704,
};

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3,
};

struct cudaPointerAttributes {
    cudaMemoryType type;
    int device;
    void* devicePointer;
    void* hostPointer;
};

struct cudaDeviceProp {
    char name[256];
    std::size_t totalGlobalMem;
    int major;
    int minor;
    int multiProcessorCount;
};

inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0;

namespace mirrorlab_emulation {
struct Stream;
struct Event;
}  // namespace mirrorlab_emulation

using cudaStream_t = mirrorlab_emulation::Stream*;
using cudaEvent_t = mirrorlab_emulation::Event*;

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device);
cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int length, int device);
cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes);
cudaError_t cudaGetLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);

cudaError_t cudaMalloc(void** pointer, std::size_t bytes);
cudaError_t cudaFree(void* pointer);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                                cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* pointer, int value, std::size_t bytes, cudaStream_t stream);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end);

// ---------------------------------------------------------------------------------------------
// The kernel language, as far as gpu/kernels.cu uses it.

#define __global__
#define __device__
#define __host__

extern thread_local dim3 threadIdx;
extern thread_local dim3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;

// One thread at a time: a read-modify-write is atomic by construction.
inline float atomicAdd(float* address, float value) {
    const float old = *address;
    *address = old + value;
    return old;
}

inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
    const unsigned long long old = *address;
    if (value < old) *address = value;
    return old;
}

using std::isfinite;
using std::isnan;

namespace mirrorlab_emulation {

// Work for a stream; it runs when something waits for the stream (or a copy to the host does).
void enqueue(cudaStream_t stream, std::function<void()> work);
// A launch a GPU would refuse: records the error for cudaGetLastError and returns false.
bool check_launch_configuration(cudaStream_t stream, dim3 grid, dim3 block);
// A pointer argument that is not device memory of the stream's device (a host pointer, a freed
// buffer): what a GPU reports as an illegal address; recorded like a launch error.
bool check_kernel_pointer(cudaStream_t stream, const void* pointer);
// Where the emulator keeps the bytes of a device address (device addresses themselves are not
// accessible to the host); null for an address outside every allocation.
void* device_to_host(const void* pointer);

template <typename... Params>
struct Launch {
    void (*kernel)(Params...);
    dim3 grid, block;
    cudaStream_t stream;

    template <typename... Args>
    void operator()(Args&&... args) const {
        static_assert(sizeof...(Args) == sizeof...(Params), "a kernel launch with the wrong number of arguments");
        if (!check_launch_configuration(stream, grid, block)) return;
        std::tuple<std::decay_t<Params>...> values(std::forward<Args>(args)...);
        bool pointers_ok = true;
        std::apply(
            [&](const auto&... value) {
                auto check_one = [&](const auto& v) {
                    if constexpr (std::is_pointer_v<std::decay_t<decltype(v)>>) {
                        if (v != nullptr && !check_kernel_pointer(stream, v)) pointers_ok = false;
                    }
                };
                (check_one(value), ...);
            },
            values);
        if (!pointers_ok) return;
        // The emulated device reads and writes the bytes behind each device address.
        std::apply(
            [](auto&... value) {
                auto translate = [](auto& v) {
                    using T = std::decay_t<decltype(v)>;
                    if constexpr (std::is_pointer_v<T>) {
                        if (v != nullptr) v = static_cast<T>(device_to_host(v));
                    }
                };
                (translate(value), ...);
            },
            values);
        enqueue(stream, [run = kernel, g = grid, b = block, values]() {
            gridDim = g;
            blockDim = b;
            // Blocks in reverse order: a kernel that relied on blocks running in order would fail.
            for (unsigned bz = g.z; bz-- > 0;) {
                for (unsigned by = g.y; by-- > 0;) {
                    for (unsigned bx = g.x; bx-- > 0;) {
                        blockIdx = dim3(bx, by, bz);
                        for (unsigned tz = 0; tz < b.z; ++tz) {
                            for (unsigned ty = 0; ty < b.y; ++ty) {
                                for (unsigned tx = 0; tx < b.x; ++tx) {
                                    threadIdx = dim3(tx, ty, tz);
                                    std::apply(run, values);
                                }
                            }
                        }
                    }
                }
            }
        });
    }
};

template <typename... Params>
Launch<Params...> launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream) {
    return Launch<Params...>{kernel, grid, block, stream};
}

}  // namespace mirrorlab_emulation

#define MIRRORLAB_LAUNCH(kernel, grid, block, stream) \
    ::mirrorlab_emulation::launch(kernel, dim3(grid), dim3(block), stream)
