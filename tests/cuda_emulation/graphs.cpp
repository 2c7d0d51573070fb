// The emulated CUDA Graphs, made by stream capture (see "Graphs" in include/cuda_runtime.h).
//
// A capture is begun on one stream (its origin); other streams join it by waiting for an event
// recorded in it. Work issued to a joined stream becomes a node of the capture instead of running:
// its MakeWork (the host side, run again at each launch) and the device bytes it touches. The
// nodes keep their issue order, which respects every order the streams had (a node follows what
// its stream issued before and what the events it waited for followed), so a launch runs them in
// that order, as one piece of work on the launch stream.
//
// Where each node lies is tracked like a vector clock: `follows` maps each stream of the capture
// to the position (in the capture's clock) of its last work that the node comes after. Two nodes
// of different streams that touch the same bytes, one writing, with neither following the other,
// race inside the graph; and cudaStreamEndCapture needs the origin to follow each joined stream's
// last work.
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "emulator.h"

namespace mirrorlab_emulation {

struct GraphNode {
    MakeWork make;
    std::vector<Use> uses;
};

struct Graph {
    std::vector<GraphNode> nodes;
};

struct GraphExec {
    std::shared_ptr<const std::vector<GraphNode>> nodes;  // shared with launches still queued
};

using Follows = std::map<Stream*, std::uint64_t>;

struct Capture {
    Stream* origin = nullptr;
    bool invalidated = false;
    bool ended = false;
    std::uint64_t clock = 0;
    std::vector<GraphNode> nodes;
    struct Placed {
        Stream* stream = nullptr;
        std::uint64_t position = 0;
    };
    std::vector<Placed> placed;  // where each node was issued
    struct Member {
        std::uint64_t last = 0;  // the position of its last work (or of its joining)
        Follows follows;
    };
    std::map<Stream*, Member> members;  // the origin and every stream that joined
};

namespace {

// Guards every capture, Stream::capture, and the graphs and execs. Taken before an event's mutex;
// nothing else is locked while it is held.
std::mutex capture_mutex;
std::map<Graph*, std::unique_ptr<Graph>> graphs;
std::map<GraphExec*, std::unique_ptr<GraphExec>> execs;

// The next position on `stream` in its capture: work (or a join) there.
std::uint64_t advance(Capture& capture, Stream* stream) {
    Capture::Member& member = capture.members[stream];
    member.last = member.follows[stream] = ++capture.clock;
    return member.last;
}

void invalidate(Capture& capture) {
    capture.invalidated = true;
    capture.nodes.clear();
    capture.placed.clear();
}

cudaError_t refuse_locked(Capture& capture, Stream* stream, const char* call, const char* why) {
    report("capture-unsupported", "%s while %s captures a graph (the capture begun on %s): %s. The capture is "
           "invalidated: cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated", call,
           describe_stream(stream).c_str(), describe_stream(capture.origin).c_str(), why);
    invalidate(capture);
    return fail(cudaErrorStreamCaptureUnsupported);
}

// A node about to be captured on `stream` (after what `follows` says) against the nodes before it.
void check_capture_race(const Capture& capture, Stream* stream, const Follows& follows, const std::vector<Use>& uses) {
    for (std::size_t i = 0; i < capture.nodes.size(); ++i) {
        const Capture::Placed& earlier = capture.placed[i];
        if (earlier.stream == stream) continue;
        const auto known = follows.find(earlier.stream);
        if (known != follows.end() && known->second >= earlier.position) continue;
        for (const Use& use : uses) {
            for (const Use& other : capture.nodes[i].uses) {
                if (!use.conflicts(other)) continue;
                report_fatal("cross-stream-race", "work captured on %s %s in the allocation at %p, and work captured "
                             "earlier on %s %s there; nothing orders the two in the graph: record an event on %s after "
                             "that work and make %s wait for it (cudaStreamWaitEvent)",
                             describe_stream(stream).c_str(), describe_use(use).c_str(),
                             reinterpret_cast<const void*>(use.allocation), describe_stream(earlier.stream).c_str(),
                             describe_use(other).c_str(), describe_stream(earlier.stream).c_str(),
                             describe_stream(stream).c_str());
            }
        }
    }
}

void append_node(Capture& capture, Stream* stream, GraphNode node) {
    const std::uint64_t position = advance(capture, stream);
    check_capture_race(capture, stream, capture.members[stream].follows, node.uses);
    capture.nodes.push_back(std::move(node));
    capture.placed.push_back(Capture::Placed{stream, position});
    count(Counted::CapturedNode);
}

// cudaErrorStreamCaptureUnjoined, reported, when a joined stream did work after the origin's last
// wait for it.
cudaError_t check_joined(const Capture& capture) {
    const Follows& origin = capture.members.at(capture.origin).follows;
    for (const auto& [stream, member] : capture.members) {
        if (stream == capture.origin) continue;
        const auto known = origin.find(stream);
        if (known != origin.end() && known->second >= member.last) continue;
        report("capture-unjoined", "cudaStreamEndCapture on %s: %s joined the capture and was not joined back: record "
               "an event on it after its last work and make %s wait for that event (cudaStreamWaitEvent) before "
               "ending the capture", describe_stream(capture.origin).c_str(), describe_stream(stream).c_str(),
               describe_stream(capture.origin).c_str());
        return cudaErrorStreamCaptureUnjoined;
    }
    return cudaSuccess;
}

// Every stream leaves the capture; what is left of it is what the events recorded in it need.
void end_capture(Capture& capture) {
    for (auto& [stream, member] : capture.members) stream->capture = nullptr;
    capture.ended = true;
    capture.members.clear();
    capture.nodes.clear();
    capture.placed.clear();
}

// A wait by `stream` for an event recorded in `from` (after `follows`): `stream` joins `from`, or
// follows more of it.
cudaError_t join(const std::shared_ptr<Capture>& from, Stream* stream, const Follows& follows) {
    Follows& mine = from->members[stream].follows;
    for (const auto& [other, position] : follows) mine[other] = std::max(mine[other], position);
    if (stream->capture == nullptr) {
        stream->capture = from;
        advance(*from, stream);
    }
    return from->invalidated ? fail(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
}

}  // namespace

std::optional<Issued> capture_work(Stream* stream, MakeWork& make, std::vector<Use>& uses) {
    std::lock_guard lock(capture_mutex);
    Capture* capture = stream->capture.get();
    if (capture == nullptr) return std::nullopt;
    if (capture->invalidated) {
        fail(cudaErrorStreamCaptureInvalidated);
        return Issued::Dropped;
    }
    append_node(*capture, stream, GraphNode{std::move(make), std::move(uses)});
    return Issued::Captured;
}

cudaError_t refuse_if_capturing(cudaStream_t stream, const char* call, const char* why) {
    Stream* target = resolve(stream);
    std::lock_guard lock(capture_mutex);
    if (target->capture == nullptr) return cudaSuccess;
    return refuse_locked(*target->capture, target, call, why);
}

cudaError_t refuse_if_device_captures(int device, const char* call, const char* why) {
    std::vector<std::shared_ptr<Stream>> streams;
    for (int d = device < 0 ? 0 : device; valid_device(d) && (device < 0 || d == device); ++d) {
        const std::vector<std::shared_ptr<Stream>> more = device_streams(d);
        streams.insert(streams.end(), more.begin(), more.end());
    }
    std::lock_guard lock(capture_mutex);
    std::set<Capture*> refused;
    for (const auto& stream : streams) {
        Capture* capture = stream->capture.get();
        if (capture != nullptr && refused.insert(capture).second) refuse_locked(*capture, stream.get(), call, why);
    }
    return refused.empty() ? cudaSuccess : cudaErrorStreamCaptureUnsupported;
}

std::optional<cudaError_t> record_in_capture(const std::shared_ptr<Event>& event, Stream* stream, bool external) {
    std::lock_guard lock(capture_mutex);
    const std::shared_ptr<Capture> capture = stream->capture;
    if (capture == nullptr) return std::nullopt;
    if (capture->invalidated) return fail(cudaErrorStreamCaptureInvalidated);
    if (external) {
        // An event record node: the event is recorded on the launch stream when a launch reaches it.
        append_node(*capture, stream, GraphNode{[event](Stream* on) { return mark_recorded(event, on); }, {}});
        return cudaSuccess;
    }
    count(Counted::EventCall);
    std::lock_guard event_lock(event->mutex);
    event->capture = capture;
    event->capture_follows = capture->members[stream].follows;
    return cudaSuccess;
}

std::optional<cudaError_t> wait_in_capture(const std::shared_ptr<Event>& event, Stream* stream, bool legacy) {
    std::lock_guard lock(capture_mutex);
    std::shared_ptr<Capture> from;
    Follows follows;
    {
        std::lock_guard event_lock(event->mutex);
        from = event->capture;
        follows = event->capture_follows;
    }
    // An event recorded outside any capture orders nothing inside one: an ordinary wait (the
    // recording stream's work up to it runs now; a launch of the graph is checked for races).
    if (from == nullptr) return std::nullopt;
    if (from->ended) {
        report("captured-event", "cudaStreamWaitEvent on %s for an event last recorded in a capture that has ended: "
               "it was never reached; record it again", describe_stream(stream).c_str());
        return fail(cudaErrorCapturedEvent);
    }
    if (legacy) {
        return refuse_locked(*from, stream, "cudaStreamWaitEvent on the legacy default stream for a captured event",
                             "the legacy stream cannot join a capture");
    }
    if (stream->capture != nullptr && stream->capture != from) {
        return refuse_locked(*stream->capture, stream, "cudaStreamWaitEvent for an event of another capture",
                             "two captures cannot be merged");
    }
    return join(from, stream, follows);
}

}  // namespace mirrorlab_emulation

using namespace mirrorlab_emulation;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed) {
        return fail(cudaErrorInvalidValue);
    }
    if (stream == nullptr) {
        report("capture-unsupported", "cudaStreamBeginCapture on the legacy default stream, which cannot capture: "
               "capture a stream made with cudaStreamCreateWithFlags");
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    std::lock_guard lock(capture_mutex);
    if (stream->capture != nullptr) {
        report("capture-unsupported", "cudaStreamBeginCapture on %s, which is capturing already",
               describe_stream(stream).c_str());
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    auto capture = std::make_shared<Capture>();
    capture->origin = stream;
    capture->members[stream].follows[stream] = 0;
    stream->capture = std::move(capture);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
    if (graph == nullptr) return fail(cudaErrorInvalidValue);
    *graph = nullptr;
    if (stream == nullptr) return fail(cudaErrorInvalidValue);
    std::lock_guard lock(capture_mutex);
    const std::shared_ptr<Capture> capture = stream->capture;
    if (capture == nullptr) return fail(cudaErrorInvalidValue);
    if (capture->origin != stream) {
        report("capture-unjoined", "cudaStreamEndCapture on %s, which joined the capture begun on %s: only that "
               "stream ends it", describe_stream(stream).c_str(), describe_stream(capture->origin).c_str());
        return fail(cudaErrorStreamCaptureUnjoined);
    }
    const cudaError_t error = capture->invalidated ? cudaErrorStreamCaptureInvalidated : check_joined(*capture);
    auto made = std::make_unique<Graph>();
    made->nodes = std::move(capture->nodes);
    end_capture(*capture);
    if (error != cudaSuccess) return fail(error);
    *graph = made.get();
    graphs[made.get()] = std::move(made);
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
    if (status == nullptr) return fail(cudaErrorInvalidValue);
    std::lock_guard lock(capture_mutex);
    const Capture* capture = stream == nullptr ? nullptr : stream->capture.get();
    *status = capture == nullptr    ? cudaStreamCaptureStatusNone
              : capture->invalidated ? cudaStreamCaptureStatusInvalidated
                                     : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, std::size_t* count) {
    if (count == nullptr) return fail(cudaErrorInvalidValue);
    std::lock_guard lock(capture_mutex);
    if (graphs.count(graph) == 0) return fail(cudaErrorInvalidValue);
    std::vector<GraphNode>& all = graph->nodes;
    if (nodes == nullptr) {
        *count = all.size();
        return cudaSuccess;
    }
    for (std::size_t i = 0; i < *count; ++i) nodes[i] = i < all.size() ? &all[i] : nullptr;
    *count = std::min(*count, all.size());
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
    if (exec == nullptr || flags != 0) return fail(cudaErrorInvalidValue);
    *exec = nullptr;
    std::lock_guard lock(capture_mutex);
    if (graphs.count(graph) == 0) return fail(cudaErrorInvalidValue);
    auto made = std::make_unique<GraphExec>();
    made->nodes = std::make_shared<const std::vector<GraphNode>>(graph->nodes);
    *exec = made.get();
    execs[made.get()] = std::move(made);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    std::shared_ptr<const std::vector<GraphNode>> nodes;
    {
        std::lock_guard lock(capture_mutex);
        if (execs.count(exec) == 0) return fail(cudaErrorInvalidResourceHandle);
        nodes = exec->nodes;
    }
    if (const cudaError_t refused = refuse_if_capturing(stream, "cudaGraphLaunch", "a graph launched into a capture "
                                                        "(a child graph) is not emulated")) {
        return refused;
    }
    // Each node's host side runs now, in order (a copy from pinned memory takes its snapshot), and
    // the whole graph runs as one piece of work on the stream, touching what its nodes touch.
    Stream* target = resolve(stream);
    std::vector<std::function<void()>> runs;
    std::vector<Use> uses;
    runs.reserve(nodes->size());
    for (const GraphNode& node : *nodes) {
        runs.push_back(node.make(target));
        uses.insert(uses.end(), node.uses.begin(), node.uses.end());
    }
    count(Counted::GraphLaunch);
    count(Counted::GraphNodeLaunched, nodes->size());
    enqueue_uses(
        target,
        [runs = std::move(runs)] {
            for (const auto& run : runs) run();
        },
        std::move(uses));
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    std::lock_guard lock(capture_mutex);
    return execs.erase(exec) == 1 ? cudaSuccess : fail(cudaErrorInvalidValue);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    std::lock_guard lock(capture_mutex);
    return graphs.erase(graph) == 1 ? cudaSuccess : fail(cudaErrorInvalidValue);
}
