#pragma once
// A mirrored training step as one CUDA Graph (issue #21). The host issues some fifty small calls
// per replica and step; a GPU finishes each in microseconds, so a step is host-bound unless the
// calls are issued once and replayed. How it goes, for each batch size (the step key):
//
//   Record   the first step with a key runs as it comes, while each replica's backend notes a
//            fingerprint of every op it is asked for (the op, its buffers, shapes and sizes) and
//            the pinned bytes its uploads and read-back take. An op that waits for the device in
//            the middle of the step (a host fallback, a download) makes the key run as it comes
//            for good.
//   Capture  the second step is captured into one graph: replica 0's stream begins the capture
//            and forks it to the other replicas' streams by an event, every op is checked against
//            the recorded fingerprints and captured (uploads and scalars read from pinned slots
//            of the graph's own), the other streams join back, and replica 0 instantiates the
//            graph and launches it.
//   Replay   every later step checks its ops against the fingerprints without issuing them,
//            writes its inputs (ids, labels, the optimizer's scalars, dropout seeds) into the
//            pinned slots, and replica 0 launches the graph and waits once: one launch and one
//            host synchronisation per step for all replicas.
//
// An op that differs from the recorded one is a bug in the promise Backend::begin_step makes
// (same key, same ops): the step stops with an error before its graph is launched, so nothing of
// it ran, and the key runs as it comes from then on. A scratch buffer that moves (grows for a new
// shape) voids the graphs captured before (their nodes point at it): they are captured again.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/backend/backend.h"
#include "gpu/pinned_memory.h"

namespace mirrorlab::cuda {

enum class GraphMode { Off, Record, Capture, Replay };

// Each upload, step value and read-back takes whole 256-byte slots of a graph's pinned memory.
inline std::size_t pinned_slot_bytes(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// What one replica issued in one step with a key.
struct ReplicaStepRecord {
    std::vector<std::uint64_t> ops;  // a fingerprint per op, in the order they came
    std::size_t pinned_bytes = 0;    // uploads, step values and the read-back, each 256-byte aligned
    bool deferrable = true;          // false once an op waited for the device mid-step
    std::unique_ptr<PinnedBuffer> pinned;  // the graph's pinned slots (Capture and Replay)
};

// One step key's recorded steps and graph.
struct StepGraph {
    explicit StepGraph(std::size_t replicas) : replicas(replicas) {}
    StepGraph(const StepGraph&) = delete;
    StepGraph& operator=(const StepGraph&) = delete;
    ~StepGraph();
    void drop_graph();

    std::vector<ReplicaStepRecord> replicas;
    cudaGraphExec_t exec = nullptr;
    std::size_t nodes = 0;
    std::uint64_t launches = 0;
    std::uint64_t scratch_generation = 0;  // of the group's scratch buffers when captured
    std::atomic<bool> eager_only{false};   // runs as it comes (set by any replica's thread)
};

// The graphs of one StepGroup, held by its replica 0's backend; the others reach them through it.
struct StepGraphs {
    std::uint64_t build_generation = 0;
    std::map<std::uint64_t, std::unique_ptr<StepGraph>> by_key;
    // The step under way, set by replica 0 before the group's barrier in begin_step.
    GraphMode mode = GraphMode::Off;
    StepGraph* current = nullptr;
    std::uint64_t key = 0;
};

// FNV-1a over an op's name and arguments: buffers by address, type and shape; scalars by value.
class OpFingerprint {
public:
    explicit OpFingerprint(std::string_view op) { add_bytes(op.data(), op.size()); }
    OpFingerprint& add(const TensorView& view) {
        add_value(view.data);
        add_value(view.dtype);
        for (const std::int64_t dim : view.shape.dims()) add_value(dim);
        return add_value(view.shape.rank());
    }
    template <typename T>
    OpFingerprint& add_value(const T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        unsigned char bytes[sizeof(T)];
        std::memcpy(bytes, &value, sizeof(T));
        add_bytes(bytes, sizeof(T));
        return *this;
    }
    std::uint64_t value() const { return hash_; }

private:
    void add_bytes(const void* data, std::size_t size) {
        const auto* bytes = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < size; ++i) {
            hash_ ^= bytes[i];
            hash_ *= 1099511628211ull;
        }
    }
    std::uint64_t hash_ = 14695981039346656037ull;
};

template <typename... Args>
std::uint64_t op_fingerprint(std::string_view op, const Args&... args) {
    OpFingerprint fingerprint(op);
    [[maybe_unused]] auto add_one = [&](const auto& arg) {
        if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, TensorView>) {
            fingerprint.add(arg);
        } else {
            fingerprint.add_value(arg);
        }
    };
    (add_one(args), ...);
    return fingerprint.value();
}

}  // namespace mirrorlab::cuda
