#pragma once
// What the emulated runtime shares with the emulated cuBLAS, cuDNN and NCCL (tests only; see
// include/cuda_runtime.h for what the emulator is and how strict it is).
#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mirrorlab_emulation {

// Device bytes [begin, end) of the allocation at `allocation` that queued work touches, and whether
// it may write them.
struct Use {
    std::uintptr_t allocation = 0, begin = 0, end = 0;
    bool writes = false;
    bool kernel_argument = false;  // extent unknown: [begin, end) is the byte it points to

    bool overlaps(const Use& other) const { return begin < other.end && other.begin < end; }
    bool conflicts(const Use& other) const {
        return allocation == other.allocation && (writes || other.writes) && overlaps(other);
    }
    bool operator==(const Use&) const = default;
};

struct Work {
    std::function<void()> run;
    std::vector<Use> uses;
    // Set while the work cannot run: an NCCL collective whose peer never came (nccl.cpp's injected
    // stall). A host wait that reaches it dies with [hang]; cudaStreamQuery reports not ready.
    std::shared_ptr<std::atomic<bool>> stalled;
};

struct Capture;  // graphs.cpp

struct Stream {
    int device = 0;
    std::mutex mutex;  // held while the stream's work runs
    std::deque<Work> pending;
    std::shared_ptr<Capture> capture;  // the capture it is in (graphs.cpp's mutex guards it)
};

struct Event {
    std::mutex mutex;
    std::uint64_t generation = 0;  // which record() the pending completion belongs to
    bool recorded = false;
    bool done = false;
    std::chrono::steady_clock::time_point at;
    std::shared_ptr<Stream> stream;  // where the last record() was queued
    // Non-null: the last record was in this capture (cudaEventRecord on a capturing stream), at a
    // point after what `capture_follows` says of each of its streams (see graphs.cpp).
    std::shared_ptr<Capture> capture;
    std::map<Stream*, std::uint64_t> capture_follows;
};

// Work whose host side happens when it is issued on `stream`: at once for a stream, at each
// cudaGraphLaunch for captured work (a copy from pinned memory snapshots the bytes then); it
// returns what runs on the device.
using MakeWork = std::function<std::function<void()>(Stream* stream)>;
// enqueue() (cuda_runtime.h) for work with such a host side.
Issued enqueue_made(cudaStream_t stream, MakeWork make, std::vector<Access> accesses);
// Work that cannot run while *stalled is true (see Work::stalled); not for a capturing stream.
void enqueue_stalled(cudaStream_t stream, std::function<void()> work, std::vector<Access> accesses,
                     std::shared_ptr<std::atomic<bool>> stalled);
// Queues work that touches `uses` on the stream, aborting on a cross-stream race.
void enqueue_uses(Stream* stream, std::function<void()> work, std::vector<Use> uses);
// The device bytes `accesses` touch.
std::vector<Use> uses_of(const std::vector<Access>& accesses);
// The default stream and the created streams of `device`.
std::vector<std::shared_ptr<Stream>> device_streams(int device);
std::string describe_stream(const Stream* stream);
std::string describe_use(const Use& use);
std::shared_ptr<Event> find_event(cudaEvent_t event);
// Marks `event` as recorded on `stream` (no longer captured) and returns the work that completes it.
std::function<void()> mark_recorded(const std::shared_ptr<Event>& event, Stream* stream);

// Stream capture (graphs.cpp). Work issued to a capturing stream becomes a node of its capture
// (taking `make` and `uses`), or is dropped when the capture is invalidated; nullopt when the
// stream does not capture.
std::optional<Issued> capture_work(Stream* stream, MakeWork& make, std::vector<Use>& uses);
// A call that is illegal while `stream` captures (`why` says why): reports capture-unsupported,
// invalidates the capture and returns cudaErrorStreamCaptureUnsupported; cudaSuccess otherwise.
cudaError_t refuse_if_capturing(cudaStream_t stream, const char* call, const char* why);
// The same while any stream of `device` (-1: of any device) captures.
cudaError_t refuse_if_device_captures(int device, const char* call, const char* why);
// cudaEventRecord on a capturing stream (an event record node when `external`); nullopt when the
// stream does not capture.
std::optional<cudaError_t> record_in_capture(const std::shared_ptr<Event>& event, Stream* stream, bool external);
// cudaStreamWaitEvent where the event was last recorded in a capture or `stream` captures: joins
// `stream` to the event's capture, or orders it inside its own; nullopt for an ordinary wait.
std::optional<cudaError_t> wait_in_capture(const std::shared_ptr<Event>& event, Stream* stream, bool legacy);

int current_device();
bool valid_device(int device);
// A GPU's memory as the driver sees it (NVML's stand-in reads it); false for no such device.
bool device_memory(int device, std::size_t* free_bytes, std::size_t* total_bytes);
// Whether the runtime found a driver (MIRRORLAB_CUDA_EMULATION_DRIVER=none: it did not).
bool driver_present();
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
enum class Counted {
    Invalid = 0,
    LibraryLaunch,
    Copy,
    HostToDevicePageable,
    HostSync,
    EventCall,
    CapturedNode,
    GraphLaunch,
    GraphNodeLaunched,
};
void count(Counted what, std::uint64_t by = 1);
// Counts work enqueue() queued as `what` (captured work was counted as a node when captured);
// false when it was dropped (issued to an invalidated capture; the error is recorded).
bool count_issued(Issued issued, Counted what);

}  // namespace mirrorlab_emulation
