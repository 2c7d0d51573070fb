#pragma once
// The CUDA backend: the Backend op set on one GPU, one instance (and one stream) per logical
// device. Function names, argument order and checks are those of CpuReferenceBackend, which
// every op is tested against (tests/test_gpu_ops.cpp). Conv1D runs through cuDNN as a 2-D
// convolution of height 1 (algorithm chosen once per shape), Dense through cuBLAS, everything
// else through the kernels in kernels.cu.
//
// Tensors come from the logical device's arena (device memory), so every op works on device
// pointers, except that add_inplace and copy accept a source on another logical device: virtual
// devices of one GPU share its address space and are read in place; a source on another GPU is
// first copied over (peer-to-peer where enabled). Ops that return host values (the loss, sums,
// finiteness) and download() wait for the stream; the others only enqueue, uploads included
// (through pinned memory). A training step waits once (cuda_backend_step.cpp, issue #21): its
// loss rows and its finiteness verdict stay on the device, the optimizer kernels skip the update
// themselves when the verdict says so, and finish_step() reads both back in one pinned copy.
// Replicas order their work on each other's streams with events (mark_ready, wait_for). On the
// virtual GPUs of one chip the whole mirrored step becomes one CUDA Graph, replayed with one launch
// and one wait for all replicas (cuda_backend_graph.cpp, gpu/step_graph.h); with NCCL the step's
// wait polls the collective and gives up on a lost peer (CollectiveWatch).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "gpu/cuda_handles.h"
#include "gpu/kernels.h"
#include "gpu/pinned_memory.h"
#include "gpu/step_graph.h"

namespace mirrorlab::cuda {

// A collective queued on backends' streams whose peers may fail or stall (NCCL): a backend's wait
// for its stream polls it instead of blocking, and gives up on it after a timeout, so that a lost
// peer ends the step with an error instead of hanging the program (issue #21).
class CollectiveWatch {
public:
    virtual ~CollectiveWatch() = default;
    virtual std::string name() const = 0;  // "the NCCL all-reduce over GPU:0, GPU:1"
    // Why it cannot complete (a peer's error, or the reason it was aborted); empty while it may.
    virtual std::string failure() = 0;
    // Gives up on it on every stream (its queued work ends at once); failure() says `why` from now on.
    virtual void abort(const std::string& why) = 0;
};

class CudaBackend final : public Backend {
public:
    // Throws OpError naming the GPU and the library when the stream, cuBLAS or cuDNN cannot start.
    explicit CudaBackend(int device);
    ~CudaBackend() override;

    std::string_view name() const override { return name_; }
    int device() const { return device_; }
    cudaStream_t stream() const { return stream_.get(); }

    void upload(const TensorView& dst, const void* host) override;
    void download(void* host, const TensorView& src) override;
    void copy(const TensorView& dst, const TensorView& src) override;
    void fill(const TensorView& dst, float value) override;
    void synchronize() override;
    void attach_arena(MemoryArena* arena) override;
    void mark(StepMark point) override;
    double mark_elapsed_ms(StepMark from, StepMark to) override;

    void embedding_forward(const TensorView& ids, const TensorView& table, const TensorView& out) override;
    void embedding_backward(const TensorView& ids, const TensorView& grad_out, const TensorView& grad_table) override;
    void embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out, const TensorView& grad_squares,
                                  const TensorView& row_counts) override;
    void conv1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias, const TensorView& y,
                        const Conv1DParams& params) override;
    void conv1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                         const TensorView& grad_x, const TensorView& grad_kernel, const TensorView& grad_bias,
                         const Conv1DParams& params) override;
    void maxpool1d_forward(const TensorView& x, const TensorView& y, const TensorView& argmax,
                           const Pool1DParams& params) override;
    void maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax, const TensorView& grad_x) override;
    void dense_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                       const TensorView& y) override;
    void dense_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                        const TensorView& grad_x, const TensorView& grad_kernel, const TensorView& grad_bias) override;
    void activation_forward(ActivationKind kind, const TensorView& x, const TensorView& y) override;
    void activation_backward(ActivationKind kind, const TensorView& y, const TensorView& grad_y,
                             const TensorView& grad_x) override;
    void dropout_forward(const TensorView& x, const TensorView& y, const TensorView& mask, float rate,
                         std::uint64_t seed) override;
    void dropout_backward(const TensorView& grad_y, const TensorView& mask, const TensorView& grad_x) override;
    LossCounts softmax_cross_entropy(const TensorView& logits, const TensorView& labels, const TensorView& probs,
                                     const TensorView& grad_logits, float grad_scale, std::int32_t top_k) override;
    void apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                      const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) override;
    void add_inplace(const TensorView& dst, const TensorView& src) override;
    double sum_of_squares(const TensorView& x) override;
    bool all_finite(const TensorView& x) override;

    // The training step with one wait (cuda_backend_step.cpp).
    void mark_ready() override;
    void wait_for(Backend& producer) override;
    void step_loss(const TensorView& logits, const TensorView& labels, const TensorView& probs,
                   const TensorView& grad_logits, float grad_scale, std::int32_t top_k,
                   const TensorView& loss_marker) override;
    void step_check_finite(const TensorView& summed) override;
    void step_set_finite(bool summed_all_finite) override;
    void step_apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                           const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) override;
    StepReadback finish_step() override;
    // The next wait for this stream watches `collective` (queued on it): see CollectiveWatch.
    void watch_collective(CollectiveWatch* collective) { collective_ = collective; }
    // The step as one CUDA Graph for the whole group (cuda_backend_graph.cpp, gpu/step_graph.h).
    void begin_step(const StepGroup& group, int replica, std::uint64_t step_key) override;
    void abandon_step() override;
    std::vector<std::string> kernel_choices() const override;

    // How Conv1D runs: cuDNN (the default) or the direct kernels that mirror the reference loop
    // by loop. MIRRORLAB_CUDA_CONV=direct in the environment selects the latter at construction.
    enum class ConvPath { Invalid = 0, Cudnn, Direct };

private:
    struct ConvShape {
        std::int64_t batch = 0, length = 0, in_channels = 0, window = 0, out_channels = 0, out_length = 0;
        std::int32_t pad_left = 0;
        auto operator<=>(const ConvShape&) const = default;
    };
    // One shape's cuDNN set-up; a pass without a cuDNN algorithm runs the direct kernels.
    struct ConvPlan {
        bool forward_cudnn = false, data_cudnn = false, filter_cudnn = false;
        bool explicit_padding = false;
        std::int64_t padded_length = 0;  // the input length cuDNN sees
        TensorDescriptor x, y;
        FilterDescriptor w;
        ConvolutionDescriptor conv;
        cudnnConvolutionFwdAlgo_t forward_algorithm{};
        cudnnConvolutionBwdDataAlgo_t data_algorithm{};
        cudnnConvolutionBwdFilterAlgo_t filter_algorithm{};
        std::size_t forward_workspace = 0, data_workspace = 0, filter_workspace = 0;
        // Why a pass runs the direct kernels (empty while it runs cuDNN's algorithm).
        std::string forward_note, data_note, filter_note;
    };

    ConvShape conv_shape(const TensorView& x, const TensorView& kernel, std::int64_t out_length,
                         const Conv1DParams& params) const;
    ConvPlan& conv_plan(const ConvShape& shape);
    void choose_algorithms(ConvPlan& plan);
    // conv1d_backward's two halves: grad_x, and grad_kernel (cuDNN, else the direct kernels).
    void conv1d_grad_x(const ConvShape& shape, ConvPlan& plan, const TensorView& kernel, const TensorView& grad_y,
                       const TensorView& grad_x);
    void conv1d_grad_kernel(const ConvShape& shape, ConvPlan& plan, const TensorView& x, const TensorView& grad_y,
                            const TensorView& grad_kernel);
    void bias_gradient(const TensorView& grad_y, std::int64_t rows, std::int64_t cols, const TensorView& grad_bias);
    // A pointer to src's data that this device's kernels may read: src itself when it lives on
    // this GPU, else a copy in staging_ (from another GPU or from host memory).
    const void* readable_source(const TensorView& src, std::string_view op);
    // Waits for the stream (op names the reason in an error) and tells the upload ring.
    void wait_for_stream(std::string_view op);
    void wait_watching_collective(std::string_view op);
    CollectiveWatch* collective_ = nullptr;  // queued on the stream since its last wait
    // The step's device-side results: a StepHeader (padded to kStepHeaderBytes, so the rows'
    // doubles stay aligned), then one RowLoss per sample of step_loss.
    static constexpr std::size_t kStepHeaderBytes = 16;
    struct StepHeader {
        std::int32_t non_finite = 0;  // step_check_finite's verdict: 1 when an element was not
        std::int32_t unused = 0;
    };
    StepHeader* step_header(std::string_view op);
    // `on_device`: the step's scalars where the kernel reads them (step_value).
    void launch_update(const OptimizerStep& step, const OptimizerStep* on_device, const TensorView& weights,
                       const TensorView& grads, const TensorView& slot0, const TensorView& slot1,
                       const IndexedSlicesViews& sparse, const std::int32_t* non_finite);
    template <typename T>
    T* results(std::size_t count, std::string_view op) {
        return static_cast<T*>(results_.reserve(count * sizeof(T), op));
    }

    // Every op that queues device work starts with graph_op(): in a deferred step it checks the op
    // against the recorded step (Record: notes it), and `skip` is set in a replayed step, where
    // the graph does the op's device work (the op then only updates what the host keeps).
    struct [[nodiscard]] DeferredOp {
        int* depth = nullptr;
        bool skip = false;
        DeferredOp(int* depth_, bool skip_) : depth(depth_), skip(skip_) {}
        DeferredOp(const DeferredOp&) = delete;
        DeferredOp& operator=(const DeferredOp&) = delete;
        ~DeferredOp() { --*depth; }
    };
    DeferredOp graph_op(std::uint64_t fingerprint, std::string_view op);
    // An op that waits for the device or reads from it, or that a replay could not redo: a step
    // with one cannot be deferred (Record notes it; in a deferred step it is a mismatch).
    void graph_cannot_defer(std::string_view op);
    // The next `bytes` of this replica's pinned slots in the step's graph (Capture, Replay).
    void* graph_pinned(std::size_t bytes);
    // Where the next kernel reads `bytes` of per-step scalars from: a device slot (0: the
    // optimizer's step, 1: a dropout seed) that `value` is copied into in stream order, from the
    // graph's pinned slots in a deferred step, so that each replay takes the step's own values.
    const void* step_value(int slot, const void* value, std::size_t bytes, std::string_view op);
    std::uint64_t scratch_generation() const;
    bool graph_eligible(const StepGroup& group) const;
    void lead_step(const StepGroup& group, std::uint64_t step_key);
    void lead_capture(const StepGroup& group, StepGraph& graph);
    void end_capture_and_launch(const StepGroup& group);
    StepReadback finish_deferred_step(std::int64_t rows, bool checked);
    StepReadback read_step_results(const void* host, std::int64_t rows, bool checked);
    [[noreturn]] void graph_mismatch(std::string_view op);
    void add_step_graph_choices(std::vector<std::string>& lines) const;

    int device_ = 0;
    std::string name_;
    Stream stream_;
    CublasHandle cublas_;
    CudnnHandle cudnn_;
    ConvPath conv_path_ = ConvPath::Cudnn;
    // MIRRORLAB_CUDA_DETERMINISTIC=1 at construction: the embedding gradient as sorted segment sums
    // (kernels.h), the same bits on every run, instead of atomics, whose order varies.
    bool deterministic_ = false;
    bool embedding_gradient_ran_ = false;  // for kernel_choices
    DeviceBuffer embedding_sort_;  // the positions' bucket sort (kernels.h: embedding_sort_scratch)
    std::int32_t* sort_embedding_positions(const TensorView& ids, std::int64_t vocabulary);
    std::map<ConvShape, std::unique_ptr<ConvPlan>> conv_plans_;
    // The most workspace a cuDNN algorithm may ask for: a fixed cap, and no more than the
    // logical device's arena has left under its limit.
    std::size_t workspace_budget_bytes() const;
    // The cuDNN workspace for one pass in `workspace` (null for 0 bytes); false when the device's
    // arena cannot hold it, and the pass then runs the direct kernels.
    bool try_workspace(std::size_t bytes, void*& workspace);

    // Scratch the backend keeps between ops, allocated from the logical device's arena once one is
    // attached: cuDNN workspace, the kernel in cuDNN's layout and its gradient, explicitly padded
    // inputs, staging for other GPUs' buffers, partial sums and small results read back by the host.
    DeviceBuffer workspace_, filter_, filter_grad_, padded_, padded_grad_, staging_, partials_, results_;
    DeviceBuffer step_results_;  // StepHeader + rows, read back once per step
    MemoryArena* arena_ = nullptr;
    StepEvents step_events_;  // CUDA events on stream_ for the phases of a step
    Event ready_;             // mark_ready(): the work another backend's wait_for() waits for
    PinnedUploadRing uploads_;
    PinnedBuffer step_readback_;  // where finish_step() reads the step's results to
    std::int64_t step_rows_ = 0;  // samples step_loss() queued in this step
    bool step_checked_ = false;   // step_check_finite() ran in this step
    // The step graphs (gpu/step_graph.h): the group's, when this is its replica 0; and the step
    // under way.
    std::shared_ptr<StepGraphs> graphs_;
    StepGraphs* group_graphs_ = nullptr;
    const StepGroup* graph_group_ = nullptr;
    int graph_replica_ = 0;
    GraphMode graph_mode_ = GraphMode::Off;
    ReplicaStepRecord* graph_record_ = nullptr;
    std::size_t graph_op_index_ = 0;
    std::size_t graph_pinned_cursor_ = 0;
    int graph_op_depth_ = 0;
    Event graph_fork_;  // replica 0's: the other streams join the capture after it
    Event graph_join_;  // each other replica's: replica 0's stream waits for it before the capture ends
    DeviceBuffer step_values_;
    // cuBLAS' workspace, from the arena so that the device's limit counts it (and a captured GEMM
    // never allocates); empty when the arena had no room, and then cuBLAS keeps its own.
    DeviceBuffer cublas_workspace_;
    bool cublas_workspace_tried_ = false;
    void use_arena_for_cublas();
    bool optimizer_step_queued_ = false;  // this step's OptimizerStep is in step_values_ already
    // Host copies of per-step results, kept so that a steady-state step allocates nothing.
    std::vector<RowLoss> host_row_losses_;
    std::vector<double> host_partials_;
};

}  // namespace mirrorlab::cuda
