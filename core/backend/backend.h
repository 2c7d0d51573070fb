#pragma once
// The op set a logical device runs. The CPU backend's reference kernels are the oracle that every
// faster kernel and the CUDA backend are tested against, so each op's contract is written here
// once: layouts are Keras' (channels last), shapes come from the views, and `grad_*` outputs are
// overwritten, not accumulated.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/tensor.h"

namespace mirrorlab {

struct OptimizerStep;
class MemoryArena;
class StepBarrier;
class Backend;

// Points in a training step that a backend with its own clock (CUDA events) can time on the
// device; see Backend::mark.
enum class StepMark { ForwardBegin = 0, ForwardEnd, BackwardEnd, AllReduceBegin, AllReduceEnd, UpdateBegin, UpdateEnd, Count };

enum class ActivationKind { Invalid = 0, Linear, ReLU, Tanh, Sigmoid, Softmax };

struct Conv1DParams {
    std::int32_t pad_left = 0;  // 'valid': 0; 'same': (kernel_size - 1) / 2 as TensorFlow
};

struct Pool1DParams {
    std::int32_t pool_size = 2;
    std::int32_t stride = 2;
    std::int32_t pad_left = 0;  // 'same' pads with -inf, so padding never wins the max
};

// Host-side results of the fused softmax cross-entropy.
struct LossCounts {
    double loss_sum = 0.0;            // sum over the samples of -log p[label]
    std::int64_t correct = 0;         // argmax == label (first max wins, as tf.argmax)
    std::int64_t top_k_correct = 0;   // label among the k largest (in_top_k: ties count as in)
    std::int64_t samples = 0;

    LossCounts& operator+=(const LossCounts& other) {
        loss_sum += other.loss_sum;
        correct += other.correct;
        top_k_correct += other.top_k_correct;
        samples += other.samples;
        return *this;
    }
};

// The statistics of an Embedding table's IndexedSlices gradient on the device, for its update
// (IndexedSlicesStats in core/optim/optimizer.h says what each holds). Empty views: the dense update.
struct IndexedSlicesViews {
    TensorView grad_squares;  // f32 [V, D], or empty
    TensorView row_counts;    // f32 [V], or empty
    TensorView moment_decays;  // i32 [V + 1] holding uint32 counters, or empty; only where the
                               // backend defers_moment_decays()
};

// What the host learns of one replica's training step, all at once at its end (Backend::finish_step).
struct StepReadback {
    LossCounts counts;            // the step's fused loss on this replica's shard
    bool update_applied = false;  // the summed gradients were finite, so step_apply_update ran
};

// The replicas of one process that take each training step together (MirroredStrategy), as a
// backend that runs a whole step as one unit of device work (a CUDA Graph, issue #21) needs to
// know them: the group is handed to every replica's Backend::begin_step.
struct StepGroup {
    std::vector<Backend*> backends;     // by local replica index
    StepBarrier* barrier = nullptr;     // the step's barrier: replicas meet there, and a failing one breaks it
    std::uint64_t build_generation = 0;  // new replicas (new buffers) get a new number
    // Whether the step's host code waits for a device or reads from one between begin_step() and
    // finish_step() (detailed statistics, an all-reduce through the host or with host waits):
    // then its work cannot be deferred to one launch at the step's end.
    bool host_waits_mid_step = true;
};

// An op beyond the Backend's typed set below: one that a layer type brings (core/layers) and
// names in its descriptor. Its contract is its CPU reference function, which every backend runs
// unless it says it has a kernel of its own (Backend::supports), as ggml's backends declare
// supports_op; so a new op lands on the CPU first and reaches each GPU later, or never.
struct OpAttributes {
    std::int64_t ints[4] = {0, 0, 0, 0};  // sizes, windows: what the op's comment says
    double real = 0.0;                    // a rate
    std::uint64_t seed = 0;               // a random stream (counter_uniform)
};

struct OpCall {
    std::string_view op;                   // the OpDef's name
    std::span<const TensorView> inputs;    // read only
    std::span<const TensorView> outputs;   // written whole and never read; may be empty views
    OpAttributes attributes;
};

struct OpDef {
    std::string_view name;                 // "global_average_pooling1d_forward": [layer] errors name it
    void (*reference)(const OpCall& call) = nullptr;  // the plain loops, on host memory
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string_view name() const = 0;

    // Memory movement. `host` pointers are ordinary CPU memory, free for the caller to reuse once
    // upload() returns; download() returns with the bytes there. copy() and add_inplace() are
    // queued in order with the backend's other work: another backend may read dst once this one's
    // work is done (synchronize()) or ordered before its own (mark_ready() / wait_for()).
    virtual void upload(const TensorView& dst, const void* host) = 0;
    virtual void download(void* host, const TensorView& src) = 0;
    virtual void copy(const TensorView& dst, const TensorView& src) = 0;
    virtual void fill(const TensorView& dst, float value) = 0;
    virtual void synchronize() {}

    // Orders work between backends without the host waiting for either (a GPU's events): after
    // `producer.mark_ready()` and then `wait_for(producer)` (the caller orders the two calls, e.g.
    // by a barrier), work queued on this backend runs after everything `producer` had queued at
    // that mark. No-ops where work is complete once queued (the CPU backends).
    virtual void mark_ready() {}
    virtual void wait_for(Backend& producer) { (void)producer; }

    // A training step whose results reach the host once, at its end (issue #21): on a GPU,
    // finish_step() is the step's only host synchronisation. The defaults below fit backends whose
    // work is complete once queued; a GPU keeps the counts and the verdict on the device instead.
    //
    // softmax_cross_entropy() with its counts kept for finish_step(). `loss_marker` (one f32 of
    // the buffer the all-reduce sums) becomes 0 when every sample's loss is finite, else NaN, so
    // that the summed buffer carries every replica's verdict on its loss.
    virtual void step_loss(const TensorView& logits, const TensorView& labels, const TensorView& probs,
                           const TensorView& grad_logits, float grad_scale, std::int32_t top_k,
                           const TensorView& loss_marker);
    // The guard of this step's update: every element of `summed` (the all-reduced gradient
    // buffer, loss markers included, bit-identical on every replica, so every replica decides
    // alike) is finite. Decided where `summed` lives; the host learns it from finish_step().
    virtual void step_check_finite(const TensorView& summed);
    // step_check_finite() for a caller that already knows the verdict: the all-reduce through host
    // memory saw every element of the sum as it made it (add_inplace_all_finite). For backends whose
    // memory the host reads; one that keeps its verdict on the device (CUDA) refuses it.
    virtual void step_set_finite(bool summed_all_finite) { step_update_allowed_ = summed_all_finite; }
    // apply_update(), run only when the last step_check_finite() or step_set_finite() found
    // everything finite.
    virtual void step_apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                                   const TensorView& slot0, const TensorView& slot1,
                                   const IndexedSlicesViews& sparse);
    // Waits for the step's work and returns its counts and whether its update ran; starts afresh.
    virtual StepReadback finish_step();
    // Called first in every replica's training step, on its thread, with the same `step_key` on
    // every replica (the global batch size: steps with one key issue the same ops on the same
    // buffers). A backend may then defer the step's work and issue it at finish_step() as one unit
    // (the CUDA backend captures the step as a graph and replays it); the default runs every op
    // as it comes.
    virtual void begin_step(const StepGroup& group, int replica, std::uint64_t step_key) {
        (void)group;
        (void)replica;
        (void)step_key;
    }
    // The step begun on this backend failed before its finish_step(): whatever it deferred is
    // dropped and the backend runs ops as they come again. Called on the caller's thread once
    // every replica's thread has left the step.
    virtual void abandon_step() {}

    // The logical device's arena, given once by the device that owns this backend: scratch the
    // backend keeps between ops (cuDNN workspaces, staging) comes from it, so the device's memory
    // limit covers all of its memory. The arena outlives the backend.
    virtual void attach_arena(MemoryArena* arena) { (void)arena; }

    // Device-side timing of a step's phases. mark() records a point in the backend's work queue;
    // mark_elapsed_ms(from, to) is the device time between two recorded marks once both are done
    // (after synchronize), or a negative number when the backend has no clock of its own: on a CPU
    // the caller's wall clock already is the device's time.
    virtual void mark(StepMark point) { (void)point; }
    virtual double mark_elapsed_ms(StepMark from, StepMark to) {
        (void)from;
        (void)to;
        return -1.0;
    }

    // ids i32 [B, T], table [V, D] -> out [B, T, D]. Ids must lie in [0, V): the caller checks
    // them on the host before they are uploaded (check_batch, core/model/batch_check.h), once for
    // every backend. The CPU backends still report one outside as an OpError (it costs them
    // nothing); a GPU trusts them (an id outside yields zeros, never a read outside the table).
    virtual void embedding_forward(const TensorView& ids, const TensorView& table,
                                   const TensorView& out) = 0;
    // grad_table [V, D] = scatter-add of grad_out rows at ids.
    virtual void embedding_backward(const TensorView& ids, const TensorView& grad_out,
                                    const TensorView& grad_table) = 0;
    // What the table's IndexedSlices gradient carries beyond grad_table (see EmbeddingUpdate):
    // grad_squares [V, D] = scatter-add of the squared grad_out rows, row_counts f32 [V] = how
    // often each id occurs. Either may be empty (not computed). Ids were checked by
    // embedding_backward, which runs first.
    virtual void embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out,
                                          const TensorView& grad_squares, const TensorView& row_counts) = 0;

    // x [B, T, Cin], kernel [K, Cin, Cout], bias [Cout] -> y [B, To, Cout].
    virtual void conv1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                const TensorView& y, const Conv1DParams& params) = 0;
    // grad_x may be empty (no view) when the input needs no gradient.
    virtual void conv1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                                 const TensorView& grad_x, const TensorView& grad_kernel,
                                 const TensorView& grad_bias, const Conv1DParams& params) = 0;

    // x [B, T, C] -> y [B, To, C]; argmax i32 [B, To, C] records the winning input position.
    virtual void maxpool1d_forward(const TensorView& x, const TensorView& y, const TensorView& argmax,
                                   const Pool1DParams& params) = 0;
    virtual void maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax,
                                    const TensorView& grad_x) = 0;

    // A Conv1D with activation ReLU whose output goes straight into a MaxPooling1D, as one op:
    // y and argmax get the pooling, exactly what conv1d_forward, activation_forward(ReLU) and
    // maxpool1d_forward write. conv_y [B, T', Cout] is room for the convolution after the ReLU: the
    // default leaves it there for the whole batch; a backend whose backward op then does not read it
    // may keep less (the CPU's keeps none on one thread). A backend may take each sample
    // through all three while its convolution output is still in cache (the CPU's does: 1.2 MB per
    // replica of the tutorial's first Conv1D otherwise leaves the L2 cache twice). The default runs
    // the three ops.
    virtual void conv1d_relu_maxpool1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                               const TensorView& conv_y, const TensorView& y,
                                               const TensorView& argmax, const Conv1DParams& conv,
                                               const Pool1DParams& pool);
    // Their backward: grad_y through the pooling and the ReLU, then conv1d_backward. grad_conv_y is
    // room for the gradient of the convolution's output: the default leaves there what
    // maxpool1d_backward and activation_backward write, a backend may use it as it likes (the CPU's
    // takes one sample at a time through its first rows). y and argmax are what the forward op wrote
    // (a backend may take the ReLU's verdict from the pooled values, the winning rows' ReLU output).
    // The default runs the three ops.
    virtual void conv1d_relu_maxpool1d_backward(const TensorView& x, const TensorView& kernel,
                                                const TensorView& conv_y, const TensorView& y,
                                                const TensorView& argmax,
                                                const TensorView& grad_y, const TensorView& grad_conv_y,
                                                const TensorView& grad_x, const TensorView& grad_kernel,
                                                const TensorView& grad_bias, const Conv1DParams& conv);

    // x [B, In], kernel [In, Out], bias [Out] -> y [B, Out].
    virtual void dense_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                               const TensorView& y) = 0;
    virtual void dense_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                                const TensorView& grad_x, const TensorView& grad_kernel,
                                const TensorView& grad_bias) = 0;

    // Elementwise; y may alias x. Softmax is not elementwise: it is fused into the loss.
    virtual void activation_forward(ActivationKind kind, const TensorView& x, const TensorView& y) = 0;
    // Uses the activation's output y (all supported activations' derivatives are functions of y).
    virtual void activation_backward(ActivationKind kind, const TensorView& y, const TensorView& grad_y,
                                     const TensorView& grad_x) = 0;

    // Inverted dropout as Keras: kept elements are scaled by 1 / (1 - rate). mask f32 holds the
    // scale (0 or 1/(1-rate)) so backward is a product. Deterministic for (seed).
    virtual void dropout_forward(const TensorView& x, const TensorView& y, const TensorView& mask,
                                 float rate, std::uint64_t seed) = 0;
    virtual void dropout_backward(const TensorView& grad_y, const TensorView& mask,
                                  const TensorView& grad_x) = 0;

    // logits [B, C], labels i32 [B] -> probs [B, C] (softmax), grad_logits [B, C] =
    // (probs - onehot) * grad_scale (1 / global batch size, so replica gradients add up to the
    // single-device gradient). Labels outside [0, C) are an OpError here; a training step's labels
    // are checked on the host before upload (check_batch), and step_loss() may trust them.
    // grad_logits may be empty.
    virtual LossCounts softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                             const TensorView& probs, const TensorView& grad_logits,
                                             float grad_scale, std::int32_t top_k) = 0;

    // One optimizer step on one variable; slots as OptimizerSchedule::slot_count() says. `sparse`
    // is empty except for an Embedding table (reference_apply_update says what it changes).
    virtual void apply_update(const OptimizerStep& step, const TensorView& weights,
                              const TensorView& grads, const TensorView& slot0,
                              const TensorView& slot1, const IndexedSlicesViews& sparse) = 0;
    // Whether apply_update() takes IndexedSlicesViews::moment_decays: TF2's sparse Nadam leaving the
    // decay of rows outside the batch until they are next in one (IndexedSlicesStats says how).
    virtual bool defers_moment_decays() const { return false; }

    // dst += src (same shape); the all-reduce's building block. Queued as copy() is.
    virtual void add_inplace(const TensorView& dst, const TensorView& src) = 0;
    // add_inplace(), then whether every element of dst is finite: for an all-reduce through host
    // memory (CPU devices), which checks its sum as it makes it instead of the update reading the
    // summed buffer again (step_set_finite). The host waits for the sum.
    virtual bool add_inplace_all_finite(const TensorView& dst, const TensorView& src);
    // Both a and b become a + b (same shape), then whether every element of the sum is finite: the
    // last add of an all-reduce through host memory, which leaves the sum in both buffers in one
    // pass where add_inplace_all_finite and a copy took two. The host waits for the sum.
    virtual bool add_into_both_all_finite(const TensorView& a, const TensorView& b);
    // Sum of squares in double (gradient norms) and a finiteness check (NaN guard).
    virtual double sum_of_squares(const TensorView& x) = 0;
    virtual bool all_finite(const TensorView& x) = 0;

    // What this backend chose where it had a choice, one line each: cuDNN's algorithm for each
    // convolution pass and why a pass runs other kernels, how its training steps run (graphs).
    // For the device check and the logs, so that no such choice goes unseen.
    virtual std::vector<std::string> kernel_choices() const { return {}; }

    // The layer types' own ops (OpDef). Every backend runs the typed ops above; of these it runs
    // natively only those supports() names, in run(). Callers go through run_op(), which falls
    // back to the op's CPU reference for the rest. By default a backend supports none of them.
    virtual bool supports(std::string_view op) const {
        (void)op;
        return false;
    }
    virtual void run(const OpCall& call);  // throws: only called for ops supports() names
    // True where tensors are plain host memory (the CPU backends): the reference then runs on
    // them in place, with no copies.
    virtual bool host_memory() const { return false; }

private:
    // The step results of the default step_* implementations.
    StepReadback step_results_;
    bool step_update_allowed_ = false;
};

// Runs `op` on `backend`: its own kernel where it supports the op, else the op's CPU reference,
// in place on host memory or through a host round trip (see backend.cpp for what that costs).
void run_op(Backend& backend, const OpDef& op, std::span<const TensorView> inputs,
            std::span<const TensorView> outputs, const OpAttributes& attributes = {});

// Checks shared by every backend's ops, so that each reports the same message for the same misuse.
void check_rank(const TensorView& view, int rank, std::string_view op, std::string_view what);
void check_same_shape(const TensorView& a, const TensorView& b, std::string_view op);
// An Embedding update's statistics fit its table: grad_squares the table's shape, row_counts one
// f32 per row of a [V, D] table. Empty views always fit.
void check_indexed_slices(const TensorView& weights, const IndexedSlicesViews& sparse);
// x [B, T, Cin], kernel [K, Cin, Cout], and y [B, To, Cout] unless y is empty.
void check_conv1d_shapes(const TensorView& x, const TensorView& kernel, const TensorView& y);
// x [B, In], kernel [In, Out].
void check_dense_shapes(const TensorView& x, const TensorView& kernel);

std::string_view activation_name(ActivationKind kind);  // Keras names: "relu", "linear", ...
ActivationKind activation_from_name(std::string_view name);  // Invalid when unknown

}  // namespace mirrorlab
