#pragma once
// The CUDA host emulator, for tests only: the part of the CUDA runtime API that gpu/ uses,
// implemented on the CPU so that the CUDA backend's own code (kernels, streams, memory, cuBLAS and
// cuDNN calls, NCCL) runs and is checked against the CPU reference on machines without a GPU.
// tests/CMakeLists.txt builds gpu/'s sources against these headers into an emulated
// libmirrorlab_cuda.so and libmirrorlab_cuda_compute.so, both linking the emulator's one shared
// library (libmirrorlab_cuda_emulation.so); the real plugin never sees them.
//
// It is strict where a GPU would fail or lie, and tests/test_cuda_emulator.cpp proves each rule
// with a deliberately wrong program (and the same program done right, which must run clean). A
// mistake CUDA answers with an error returns that error and prints "CUDA emulation: [rule] ...";
// one a GPU would not report at all kills the program with that line. The rules:
//   memory-limit                 an allocation beyond the device's memory fails
//   copy-outside-allocation      a copy's or memset's device range must lie inside one allocation
//   copy-kind-mismatch           the copy kind must match where the pointers are
//   overlapping-copy             device-to-device and peer copies must not overlap
//   free-unknown-pointer         cudaFree takes what cudaMalloc returned, once
//   kernel-pointer               kernel pointer arguments must be device memory of the launching
//                                device (not host memory, a freed buffer or another GPU's memory)
//   launch-configuration         1 to 1024 threads a block, at least one block
//   launch-on-other-device       a launch on a stream of a device that is not current
//   handle-of-other-device, library-outside-allocation, workspace-too-small,
//   all-reduce-missing-ranks, all-reduce-other-device
//                                the same for cuBLAS, cuDNN and NCCL calls
//   capture-unsupported          a call illegal while a stream captures (see Graphs below):
//                                cudaErrorStreamCaptureUnsupported, and the capture is invalidated
//   capture-unjoined             cudaStreamEndCapture while a stream that joined the capture did
//                                work after the origin stream's last wait for it
//   captured-event               cudaEventQuery, cudaEventSynchronize or cudaEventElapsedTime of an
//                                event last recorded by cudaEventRecord on a capturing stream
// and, fatal:
//   host-touches-device-address  device addresses lie in a reserved, inaccessible range, so host
//                                code that reads or writes one faults (SIGSEGV), as with a GPU
//   out-of-bounds                device memory is backed by pages of its own that end where the
//                                allocation (rounded up to 16 bytes) ends, between inaccessible
//                                pages: a kernel (or library call) that indexes past the end faults
//                                at the first byte; before the start, once it leaves the first page
//   use-after-free               freed pages stay inaccessible and are never reused (a backstop:
//                                kernel-pointer and free-while-in-use catch the usual ways there)
//   read-before-wait             work on a stream runs only when something waits for it; the host
//                                reading memory that another stream's queued work writes aborts
//   cross-stream-race            work touching bytes that another stream's queued work writes (or
//                                writing bytes it reads): nothing orders two streams here but the
//                                host waiting for one, or cudaStreamWaitEvent on an event recorded
//                                after that work (every stream acts as non-blocking). A
//                                kernel's extent is unknown: it counts as touching the byte each
//                                pointer argument points to (the same tensor on two streams is
//                                seen; a kernel reaching from one slice into another is not).
//                                Inside a capture the same between the branches of the graph
//   free-while-in-use            cudaFree waits for its own device only, not another's peer copy;
//                                cudaFreeHost of pinned memory that a queued copy still uses
//   pinned-overwritten-in-flight host code changed pinned memory that a queued upload had not read
//                                yet (the device would get the new bytes): the copy compares what
//                                it reads with what the memory held when it was queued (for a
//                                graph's copy: when the graph was launched)
//   hang                         a host wait (cudaStreamSynchronize, an event, a copy to the host)
//                                reaches an NCCL collective whose peer stalled or failed (injected,
//                                see nccl.h): on a GPU it would never return. cudaStreamQuery says
//                                cudaErrorNotReady there instead, and ncclCommAbort releases it
// A mistake only the results show must show there: fresh device memory is all ones (NaN as
// float), an event not yet reached has no time (cudaErrorNotReady), and a kernel's blocks run in a
// shuffled order, and a block's threads too (seeded: MIRRORLAB_CUDA_EMULATION_SEED, printed at the
// first launch), so a kernel that depends on an order between them computes garbage. Copies to
// pageable host memory complete before returning (as on a GPU); copies to pinned memory
// (cudaHostAlloc) are queued like any other work, and the destination holds all ones until the
// stream is waited for, so a host that reads it too early sees garbage. cudaStreamWaitEvent runs
// the recording stream's work up to the event at once (the emulator's bookkeeping, not a host
// wait): later work on the waiting stream is then ordered after it, as on a GPU.
//
// Graphs: CUDA Graphs made by stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture),
// instantiated and launched. Work issued to a capturing stream (kernels, cudaMemcpyAsync to and
// from device or pinned memory, cudaMemcpyPeerAsync, cudaMemsetAsync, cuBLAS and cuDNN calls,
// cudaEventRecordWithFlags with cudaEventRecordExternal) neither runs nor queues: it becomes a node
// of the capture, in issue order; work queued on the stream before the capture began stays queued.
// Another stream joins the capture by cudaStreamWaitEvent on an event recorded in it, and must be
// joined back before cudaStreamEndCapture (the origin stream waits for an event recorded on it after
// its last work: else capture-unjoined, cudaErrorStreamCaptureUnjoined and no graph); only the
// origin ends the capture. cudaGraphLaunch queues the whole graph on its stream as one piece of
// work that touches what its nodes touch, run like any other work when the stream is waited for,
// nodes in order; each launch reads the device and pinned memory as they are then (a copy node
// takes its pinned-overwritten-in-flight snapshot at the launch, a copy node into pinned memory
// fills it with all ones until the stream is waited for, an event record node records its event on
// the launch stream). An exec (cudaGraphInstantiate) copies the graph; destroying either leaves
// queued launches to run. Illegal while a stream captures, since they make the host wait or cannot
// be replayed (capture-unsupported; the capture is invalidated: every stream in it stays in capture,
// its work is dropped with cudaErrorStreamCaptureInvalidated, until the origin's
// cudaStreamEndCapture returns that error and no graph): cudaStreamSynchronize or cudaStreamDestroy
// of a capturing stream; cudaDeviceSynchronize, cudaMalloc or cudaFree on a device with one;
// cudaFreeHost while any stream captures; a copy to or from pageable host memory; ncclAllReduce
// (NCCL is not emulated in a capture); cudaGraphLaunch into a capture (no child graphs); and the
// legacy default stream cannot capture or join one. A capture's mode is accepted and ignored.
//
// It does not emulate concurrency inside a block: its threads run one at a time, there is no
// shared memory or __syncthreads (a kernel that needs them does not compile here), and pointers
// inside structs are not translated (the kernel faults, saying so). Blocks run one at a time too,
// or on MIRRORLAB_CUDA_EMULATION_WORKERS host threads, with real atomics.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureUnjoined = 904,
    cudaErrorCapturedEvent = 907,
};

enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2,
};

enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2,
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
inline constexpr unsigned cudaEventDisableTiming = 2;
inline constexpr unsigned cudaHostAllocDefault = 0;
inline constexpr unsigned cudaEventRecordDefault = 0;
inline constexpr unsigned cudaEventRecordExternal = 1;  // captured as an event record node

namespace mirrorlab_emulation {
struct Stream;
struct Event;
struct Graph;
struct GraphExec;
struct GraphNode;
}  // namespace mirrorlab_emulation

using cudaStream_t = mirrorlab_emulation::Stream*;
using cudaEvent_t = mirrorlab_emulation::Event*;
using cudaGraph_t = mirrorlab_emulation::Graph*;
using cudaGraphExec_t = mirrorlab_emulation::GraphExec*;
using cudaGraphNode_t = mirrorlab_emulation::GraphNode*;

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// The API is what the emulator's shared library exports; one library, so that the plugin, the
// compute module it loads and a test program share one set of devices, memory and streams.
#pragma GCC visibility push(default)

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
cudaError_t cudaHostAlloc(void** pointer, std::size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* pointer);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
// Runs the stream's queued work and says cudaSuccess, or cudaErrorNotReady when it reaches a
// collective that cannot complete yet (a stalled NCCL peer): how a host waits without hanging.
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned flags);

// CUDA Graphs through stream capture (see "Graphs" above).
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, std::size_t* count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

#pragma GCC visibility pop

// ---------------------------------------------------------------------------------------------
// The kernel language, as far as gpu/kernels.cu uses it.

#define __global__
#define __device__
#define __host__

#pragma GCC visibility push(default)
extern thread_local dim3 threadIdx;
extern thread_local dim3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
#pragma GCC visibility pop

// Real atomics: blocks may run on several host threads at once (MIRRORLAB_CUDA_EMULATION_WORKERS).
inline float atomicAdd(float* address, float value) { return std::atomic_ref<float>(*address).fetch_add(value); }
inline int atomicAdd(int* address, int value) { return std::atomic_ref<int>(*address).fetch_add(value); }

inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
    std::atomic_ref<unsigned long long> target(*address);
    unsigned long long old = target.load();
    while (value < old && !target.compare_exchange_weak(old, value)) {
    }
    return old;
}

using std::isfinite;
using std::isnan;

namespace mirrorlab_emulation {

#pragma GCC visibility push(default)

// What queued work touches: `bytes` device bytes from `pointer` (0: unknown, as for a kernel's
// pointer argument; then the byte it points to stands for them), and whether it may write them.
struct Access {
    const void* pointer = nullptr;
    bool writes = false;
    std::size_t bytes = 0;
};
// What became of work issued to a stream: queued, captured as a node of the stream's capture
// (cudaStreamBeginCapture), or dropped because that capture was invalidated (the error,
// cudaErrorStreamCaptureInvalidated, is recorded for cudaGetLastError).
enum class Issued { Queued, Captured, Dropped };
// Work for a stream; it runs when something waits for the stream (or a copy to the host does).
// `accesses` are what it touches: work that touches bytes another stream's queued work writes (or
// writes bytes it reads) is a cross-stream race and aborts the program.
Issued enqueue(cudaStream_t stream, std::function<void()> work, std::vector<Access> accesses = {});
// One kernel launch queued, for mirrorlab_emulation_counters (a refused or captured launch is not
// counted here).
void count_kernel_launch();
// A launch a GPU would refuse: records the error for cudaGetLastError and returns false.
bool check_launch_configuration(cudaStream_t stream, dim3 grid, dim3 block);
// A pointer argument that is not device memory of the stream's device (a host pointer, a freed
// buffer): what a GPU reports as an illegal address; recorded like a launch error.
bool check_kernel_pointer(cudaStream_t stream, const void* pointer);
// Where the emulator keeps the bytes of a device address (device addresses themselves are not
// accessible to the host); null for an address outside every allocation.
void* device_to_host(const void* pointer);
// Which order this launch runs its blocks and threads in: a key taken at launch time, from the seed
// and the launching thread's count of launches, so a single-threaded program repeats its orders.
std::uint64_t next_launch_key();
// Runs thread_body once per thread of the grid, with blockIdx, threadIdx, blockDim and gridDim set:
// blocks in a shuffled order (several at a time with MIRRORLAB_CUDA_EMULATION_WORKERS > 1), the
// threads of a block one at a time in a shuffled order.
void run_grid(dim3 grid, dim3 block, std::uint64_t launch_key, const std::function<void()>& thread_body);

#pragma GCC visibility pop

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
        // A pointer to const is only read; any other pointer may be written.
        std::vector<Access> accesses;
        std::apply(
            [&](const auto&... value) {
                auto check_one = [&](const auto& v) {
                    using T = std::decay_t<decltype(v)>;
                    if constexpr (std::is_pointer_v<T>) {
                        if (v == nullptr) return;
                        if (!check_kernel_pointer(stream, v)) pointers_ok = false;
                        accesses.push_back(Access{v, !std::is_const_v<std::remove_pointer_t<T>>});
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
        const Issued issued = enqueue(
            stream,
            [run = kernel, g = grid, b = block, values, key = next_launch_key()]() {
                run_grid(g, b, key, [&] { std::apply(run, values); });
            },
            std::move(accesses));
        if (issued == Issued::Queued) count_kernel_launch();
    }
};

template <typename... Params>
Launch<Params...> launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream) {
    return Launch<Params...>{kernel, grid, block, stream};
}

}  // namespace mirrorlab_emulation

#define MIRRORLAB_LAUNCH(kernel, grid, block, stream) \
    ::mirrorlab_emulation::launch(kernel, dim3(grid), dim3(block), stream)
