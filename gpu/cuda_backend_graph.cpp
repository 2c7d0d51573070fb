// The training step as one CUDA Graph for the replicas of one GPU (issue #21): begin_step decides
// how the step goes (gpu/step_graph.h says how and why), every op checks itself against the
// recorded step through graph_op(), and a deferred step ends in finish_deferred_step(), where
// replica 0 launches the graph and waits once for all replicas.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/util/error.h"
#include "core/util/step_barrier.h"
#include "gpu/cuda_backend.h"

namespace mirrorlab::cuda {

namespace {

constexpr std::size_t kStepValueSlotBytes = 256;  // one OptimizerStep or one seed per slot
static_assert(sizeof(OptimizerStep) <= kStepValueSlotBytes);

// MIRRORLAB_CUDA_GRAPHS=0 runs every step as it comes: to compare, or to rule the graphs out.
bool graphs_enabled() {
    static const bool enabled = [] {
        const char* text = std::getenv("MIRRORLAB_CUDA_GRAPHS");
        return text == nullptr || std::string_view(text) != "0";
    }();
    return enabled;
}

CudaBackend& gpu_of(Backend* backend) { return static_cast<CudaBackend&>(*backend); }

}  // namespace

StepGraph::~StepGraph() { drop_graph(); }

void StepGraph::drop_graph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    exec = nullptr;
    nodes = 0;
}

bool CudaBackend::graph_eligible(const StepGroup& group) const {
    if (group.host_waits_mid_step || group.barrier == nullptr || group.backends.empty() || !graphs_enabled()) {
        return false;
    }
    // The virtual GPUs of one chip: their streams share one graph, ordered by events. Replicas on
    // several GPUs sum through NCCL, whose calls the graph does not take (not yet checked anywhere).
    return std::all_of(group.backends.begin(), group.backends.end(), [&](Backend* backend) {
        const auto* gpu = dynamic_cast<const CudaBackend*>(backend);
        return gpu != nullptr && gpu->device_ == device_;
    });
}

std::uint64_t CudaBackend::scratch_generation() const {
    std::uint64_t sum = 0;
    for (const DeviceBuffer* buffer : {&workspace_, &filter_, &filter_grad_, &padded_, &padded_grad_, &staging_,
                                       &partials_, &results_, &step_results_, &step_values_}) {
        sum += buffer->generation();
    }
    return sum;
}

void CudaBackend::begin_step(const StepGroup& group, int replica, std::uint64_t step_key) {
    graph_mode_ = GraphMode::Off;
    graph_record_ = nullptr;
    graph_op_depth_ = 0;
    optimizer_step_queued_ = false;
    if (!graph_eligible(group)) return;
    use_device(device_, "step");
    if (replica == 0) lead_step(group, step_key);
    group.barrier->arrive_and_wait();  // replica 0 has set the mode and, to capture, begun
    CudaBackend& leader = gpu_of(group.backends.front());
    StepGraphs& graphs = *leader.graphs_;
    graph_group_ = &group;
    graph_replica_ = replica;
    group_graphs_ = &graphs;
    graph_mode_ = graphs.mode;
    if (graph_mode_ == GraphMode::Off) return;
    graph_record_ = &graphs.current->replicas[static_cast<std::size_t>(replica)];
    graph_op_index_ = 0;
    graph_pinned_cursor_ = 0;
    if (graph_mode_ == GraphMode::Capture && replica != 0) {
        // Waiting on an event recorded in the capture makes this stream part of it.
        check(cudaStreamWaitEvent(stream(), leader.graph_fork_.get(), 0), "step graph", "cudaStreamWaitEvent",
              device_);
    }
}

void CudaBackend::lead_step(const StepGroup& group, std::uint64_t step_key) {
    if (!graphs_ || graphs_->build_generation != group.build_generation) {
        graphs_ = std::make_shared<StepGraphs>();
        graphs_->build_generation = group.build_generation;
    }
    StepGraphs& graphs = *graphs_;
    graphs.mode = GraphMode::Off;
    graphs.key = step_key;
    std::unique_ptr<StepGraph>& slot = graphs.by_key[step_key];
    if (!slot) slot = std::make_unique<StepGraph>(group.backends.size());
    StepGraph& graph = *slot;
    graphs.current = &graph;
    if (graph.eager_only) return;
    std::uint64_t generation = 0;
    for (Backend* backend : group.backends) generation += gpu_of(backend).scratch_generation();
    if (graph.exec != nullptr && graph.scratch_generation == generation) {
        graphs.mode = GraphMode::Replay;
        return;
    }
    graph.drop_graph();  // none yet, or captured before a scratch buffer moved
    const bool recorded = std::all_of(graph.replicas.begin(), graph.replicas.end(),
                                      [](const ReplicaStepRecord& record) { return !record.ops.empty(); });
    if (!recorded) {
        for (ReplicaStepRecord& record : graph.replicas) {
            record.ops.clear();
            record.pinned_bytes = 0;
            record.deferrable = true;
        }
        graphs.mode = GraphMode::Record;
        return;
    }
    const bool deferrable = std::all_of(graph.replicas.begin(), graph.replicas.end(),
                                        [](const ReplicaStepRecord& record) { return record.deferrable; });
    if (!deferrable) {
        graph.eager_only = true;
        return;
    }
    graph.scratch_generation = generation;
    lead_capture(group, graph);
    graphs.mode = GraphMode::Capture;
}

void CudaBackend::lead_capture(const StepGroup& group, StepGraph& graph) {
    // The pinned slots first: nothing a graph points at may move once it is captured.
    for (ReplicaStepRecord& record : graph.replicas) {
        if (!record.pinned) record.pinned = std::make_unique<PinnedBuffer>(device_);
        record.pinned->reserve(std::max<std::size_t>(record.pinned_bytes, 1), "step graph");
    }
    // Relaxed: the other replicas' threads issue into the capture too.
    check(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed), "step graph", "cudaStreamBeginCapture",
          device_);
    if (group.backends.size() > 1) {
        check(cudaEventRecord(graph_fork_.get(), stream()), "step graph", "cudaEventRecord", device_);
    }
}

CudaBackend::DeferredOp CudaBackend::graph_op(std::uint64_t fingerprint, std::string_view op) {
    // Ops that other ops call run as part of their caller: neither noted nor skipped on their own.
    if (graph_op_depth_++ > 0 || graph_mode_ == GraphMode::Off) return DeferredOp(&graph_op_depth_, false);
    if (graph_mode_ == GraphMode::Record) {
        graph_record_->ops.push_back(fingerprint);
        return DeferredOp(&graph_op_depth_, false);
    }
    if (graph_op_index_ >= graph_record_->ops.size() || graph_record_->ops[graph_op_index_] != fingerprint) {
        --graph_op_depth_;
        graph_mismatch(op);
    }
    ++graph_op_index_;
    return DeferredOp(&graph_op_depth_, graph_mode_ == GraphMode::Replay);
}

void CudaBackend::graph_mismatch(std::string_view op) {
    group_graphs_->current->eager_only = true;
    throw OpError("[step graph] " + name_ + " was asked for " + std::string(op) + " as op " +
                  std::to_string(graph_op_index_ + 1) + " of a step of " + std::to_string(group_graphs_->key) +
                  " samples, which is not the op recorded there, although steps of one size must ask for the same "
                  "ops: the step's graph was not launched, so nothing of this step ran, and steps of this size now "
                  "run without a graph. This is a MirrorLab bug; please report it (MIRRORLAB_CUDA_GRAPHS=0 turns "
                  "step graphs off)");
}

void CudaBackend::graph_cannot_defer(std::string_view op) {
    if (graph_mode_ == GraphMode::Record) graph_record_->deferrable = false;
    if (graph_mode_ == GraphMode::Capture || graph_mode_ == GraphMode::Replay) graph_mismatch(op);
}

void* CudaBackend::graph_pinned(std::size_t bytes) {
    const std::size_t offset = graph_pinned_cursor_;
    graph_pinned_cursor_ += pinned_slot_bytes(bytes);
    if (graph_record_->pinned == nullptr || graph_pinned_cursor_ > graph_record_->pinned_bytes) {
        graph_mismatch("more pinned bytes than recorded");
    }
    return static_cast<unsigned char*>(graph_record_->pinned->get()) + offset;
}

const void* CudaBackend::step_value(int slot, const void* value, std::size_t bytes, std::string_view op) {
    // A replay skips the op that asks for the value, and so an op inside it: its slot would go unfilled.
    if (graph_op_depth_ > 1) graph_cannot_defer(op);
    auto* device = static_cast<unsigned char*>(step_values_.reserve(2 * kStepValueSlotBytes, op)) +
                   static_cast<std::size_t>(slot) * kStepValueSlotBytes;
    switch (graph_mode_) {
        case GraphMode::Replay: std::memcpy(graph_pinned(bytes), value, bytes); break;
        case GraphMode::Capture: {
            void* pinned = graph_pinned(bytes);
            std::memcpy(pinned, value, bytes);
            check(cudaMemcpyAsync(device, pinned, bytes, cudaMemcpyHostToDevice, stream()), op, "cudaMemcpyAsync",
                  device_);
            break;
        }
        case GraphMode::Record: graph_record_->pinned_bytes += pinned_slot_bytes(bytes); [[fallthrough]];
        case GraphMode::Off: uploads_.upload(device, value, bytes, stream(), op); break;
    }
    return device;
}

StepReadback CudaBackend::finish_deferred_step(std::int64_t rows, bool checked) {
    const StepGroup& group = *graph_group_;
    if (graph_op_index_ != graph_record_->ops.size()) graph_mismatch("the step's end");
    const std::size_t bytes = kStepHeaderBytes + static_cast<std::size_t>(rows) * sizeof(RowLoss);
    void* host = graph_pinned(bytes);
    if (graph_mode_ == GraphMode::Capture) {
        check(cudaMemcpyAsync(host, step_results_.get(), bytes, cudaMemcpyDeviceToHost, stream()), "step",
              "cudaMemcpyAsync", device_);
        if (graph_replica_ != 0) {
            check(cudaEventRecord(graph_join_.get(), stream()), "step graph", "cudaEventRecord", device_);
        }
    }
    group.barrier->arrive_and_wait();  // every replica's part of the step is captured, or checked
    if (graph_replica_ == 0) end_capture_and_launch(group);
    group.barrier->arrive_and_wait();  // the step ran: every replica's results are in pinned memory
    graph_mode_ = GraphMode::Off;
    uploads_.stream_drained();
    return read_step_results(host, rows, checked);
}

void CudaBackend::end_capture_and_launch(const StepGroup& group) {
    StepGraph& graph = *graphs_->current;
    if (graph_mode_ == GraphMode::Capture) {
        for (std::size_t r = 1; r < group.backends.size(); ++r) {
            check(cudaStreamWaitEvent(stream(), gpu_of(group.backends[r]).graph_join_.get(), 0), "step graph",
                  "cudaStreamWaitEvent", device_);
        }
        cudaGraph_t captured = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream(), &captured);
        cudaError_t made = ended;
        if (ended == cudaSuccess) {
            cudaGraphGetNodes(captured, nullptr, &graph.nodes);
            made = cudaGraphInstantiate(&graph.exec, captured, 0);
            cudaGraphDestroy(captured);
        }
        if (made != cudaSuccess) {
            graph.eager_only = true;
            graph.exec = nullptr;
            cudaGetLastError();
            throw OpError("[step graph] capturing the step of " + std::to_string(graphs_->key) + " samples on " +
                          name_ + " failed (" + error_text(made) + "): nothing of this step ran, and steps of this "
                          "size now run without a graph");
        }
    }
    check(cudaGraphLaunch(graph.exec, stream()), "step", "cudaGraphLaunch", device_);
    ++graph.launches;
    wait_for_stream("step");
}

void CudaBackend::add_step_graph_choices(std::vector<std::string>& lines) const {
    if (!graphs_) return;  // not replica 0 of a group whose steps could be one graph
    for (const auto& [key, graph] : graphs_->by_key) {
        std::string line = "training step of " + std::to_string(key) + " samples on " +
                           std::to_string(graph->replicas.size()) + " replicas: ";
        if (graph->eager_only) {
            line += "issued op by op (it waits for the device mid-step, or its ops changed)";
        } else if (graph->exec != nullptr) {
            line += "one CUDA Graph of " + std::to_string(graph->nodes) + " nodes, launched " +
                    std::to_string(graph->launches) + " times";
        } else {
            line += "recorded, to be captured as a CUDA Graph by its next step";
        }
        lines.push_back(line);
    }
}

void CudaBackend::abandon_step() {
    const GraphMode mode = graph_mode_;
    graph_mode_ = GraphMode::Off;
    graph_op_depth_ = 0;
    optimizer_step_queued_ = false;
    step_rows_ = 0;
    step_checked_ = false;
    if (mode == GraphMode::Record) graph_record_->ops.clear();  // recorded again by the next step of its size
    if (!graphs_) return;  // only a group's replica 0 begins captures
    // A capture replica 0 began (even one that failed before the others joined it) still holds the
    // step's work, none of which ran: drop it. The step failed for a reason of its own (a bad batch,
    // memory): the next one of its size captures again.
    cudaSetDevice(device_);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
        cudaGraph_t dropped = nullptr;
        cudaStreamEndCapture(stream(), &dropped);
        if (dropped != nullptr) cudaGraphDestroy(dropped);
    }
    cudaGetLastError();
}

}  // namespace mirrorlab::cuda
