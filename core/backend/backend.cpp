#include "core/backend/backend.h"

#include <array>
#include <cmath>
#include <limits>
#include <cstddef>
#include <vector>

#include "core/util/error.h"

namespace mirrorlab {

void Backend::step_loss(const TensorView& logits, const TensorView& labels, const TensorView& probs,
                        const TensorView& grad_logits, float grad_scale, std::int32_t top_k,
                        const TensorView& loss_marker) {
    step_results_.counts = softmax_cross_entropy(logits, labels, probs, grad_logits, grad_scale, top_k);
    const bool finite = std::isfinite(step_results_.counts.loss_sum);
    fill(loss_marker, finite ? 0.0f : std::numeric_limits<float>::quiet_NaN());
}

void Backend::step_check_finite(const TensorView& summed) { step_update_allowed_ = all_finite(summed); }

bool Backend::add_inplace_all_finite(const TensorView& dst, const TensorView& src) {
    add_inplace(dst, src);
    synchronize();
    return all_finite(dst);
}

bool Backend::add_into_both_all_finite(const TensorView& a, const TensorView& b) {
    const bool finite = add_inplace_all_finite(a, b);
    copy(b, a);
    synchronize();
    return finite;
}

void Backend::step_apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                                const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) {
    if (step_update_allowed_) apply_update(step, weights, grads, slot0, slot1, sparse);
}

StepReadback Backend::finish_step() {
    synchronize();
    StepReadback results = step_results_;
    results.update_applied = step_update_allowed_;
    step_results_ = StepReadback{};
    step_update_allowed_ = false;
    return results;
}

void Backend::conv1d_relu_maxpool1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                            const TensorView& conv_y, const TensorView& y, const TensorView& argmax,
                                            const Conv1DParams& conv, const Pool1DParams& pool) {
    conv1d_forward(x, kernel, bias, conv_y, conv);
    activation_forward(ActivationKind::ReLU, conv_y, conv_y);
    maxpool1d_forward(conv_y, y, argmax, pool);
}

void Backend::conv1d_relu_maxpool1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& conv_y,
                                             const TensorView& y, const TensorView& argmax, const TensorView& grad_y,
                                             const TensorView& grad_conv_y, const TensorView& grad_x,
                                             const TensorView& grad_kernel, const TensorView& grad_bias,
                                             const Conv1DParams& conv) {
    (void)y;
    maxpool1d_backward(grad_y, argmax, grad_conv_y);
    activation_backward(ActivationKind::ReLU, conv_y, grad_conv_y, grad_conv_y);
    conv1d_backward(x, kernel, grad_conv_y, grad_x, grad_kernel, grad_bias, conv);
}

void Backend::run(const OpCall& call) {
    throw OpError("[" + std::string(call.op) + "] " + std::string(name()) + " has no kernel of its own for this op");
}

namespace {

constexpr std::size_t kMaxOpTensors = 8;

// Host copies of one op call's tensors, per thread (replicas run on threads of their own). The
// buffer grows and never shrinks, so a steady-state step allocates nothing here either.
std::vector<std::byte>& host_staging() {
    thread_local std::vector<std::byte> staging;
    return staging;
}

std::int64_t staged_bytes(const TensorView& view) { return (view.bytes() + 63) / 64 * 64; }

}  // namespace

void run_op(Backend& backend, const OpDef& op, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
            const OpAttributes& attributes) {
    const OpCall call{op.name, inputs, outputs, attributes};
    if (backend.supports(op.name)) {
        backend.run(call);
        return;
    }
    if (backend.host_memory()) {
        op.reference(call);
        return;
    }
    // The reference on a device that cannot run it: download every input, run the reference on
    // host copies, upload every output. Each call waits for the device's queue (download and
    // upload synchronise) and moves the inputs and outputs across the bus once, e.g. for
    // GlobalAveragePooling1D's forward pass on the tutorial's shapes [16, 146, 32] -> [16, 32]:
    // 299 KB down and 2 KB up, plus the loop on one host core. That is slow next to a kernel, but
    // it is correct on every backend from the day the op exists, and a kernel can follow.
    if (inputs.size() > kMaxOpTensors || outputs.size() > kMaxOpTensors) {
        throw OpError("[" + std::string(op.name) + "] the host fallback takes at most " +
                      std::to_string(kMaxOpTensors) + " inputs and outputs");
    }
    std::int64_t total = 0;
    for (const TensorView& view : inputs) total += staged_bytes(view);
    for (const TensorView& view : outputs) total += staged_bytes(view);
    std::vector<std::byte>& staging = host_staging();
    if (static_cast<std::int64_t>(staging.size()) < total) staging.resize(static_cast<std::size_t>(total));
    std::array<TensorView, kMaxOpTensors> host_inputs, host_outputs;
    std::int64_t offset = 0;
    auto stage = [&](const TensorView& view) {
        if (!view) return TensorView{};
        TensorView host{staging.data() + offset, view.shape, view.dtype};
        offset += staged_bytes(view);
        return host;
    };
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        host_inputs[i] = stage(inputs[i]);
        if (host_inputs[i]) backend.download(host_inputs[i].data, inputs[i]);
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) host_outputs[i] = stage(outputs[i]);
    op.reference(OpCall{op.name, std::span<const TensorView>(host_inputs.data(), inputs.size()),
                        std::span<const TensorView>(host_outputs.data(), outputs.size()), attributes});
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i]) backend.upload(outputs[i], host_outputs[i].data);
    }
}

void check_rank(const TensorView& view, int rank, std::string_view op, std::string_view what) {
    if (view.shape.rank() != rank) {
        throw OpError("[" + std::string(op) + "] " + std::string(what) + " must have rank " +
                      std::to_string(rank) + ", got shape " + view.shape.to_string());
    }
}

void check_same_shape(const TensorView& a, const TensorView& b, std::string_view op) {
    if (!(a.shape == b.shape)) {
        throw OpError("[" + std::string(op) + "] shapes differ: " + a.shape.to_string() + " vs " +
                      b.shape.to_string());
    }
}

void check_indexed_slices(const TensorView& weights, const IndexedSlicesViews& sparse) {
    if (sparse.grad_squares) check_same_shape(weights, sparse.grad_squares, "optimizer");
    if (sparse.moment_decays && !sparse.row_counts) {
        throw OpError("[optimizer] deferred moment decays need the embedding row counts");
    }
    if (!sparse.row_counts) return;
    check_rank(weights, 2, "optimizer", "an embedding table with row counts");
    check_rank(sparse.row_counts, 1, "optimizer", "the embedding row counts");
    if (sparse.row_counts.shape[0] != weights.shape[0]) {
        throw OpError("[optimizer] " + std::to_string(sparse.row_counts.shape[0]) + " row counts for a table of " +
                      std::to_string(weights.shape[0]) + " rows");
    }
    if (!sparse.moment_decays) return;
    check_rank(sparse.moment_decays, 1, "optimizer", "the embedding moment decays");
    if (sparse.moment_decays.dtype != DType::I32 || sparse.moment_decays.shape[0] != weights.shape[0] + 1) {
        throw OpError("[optimizer] the moment decays of a table of " + std::to_string(weights.shape[0]) +
                      " rows are " + std::to_string(weights.shape[0] + 1) + " int32 counters");
    }
}

void check_conv1d_shapes(const TensorView& x, const TensorView& kernel, const TensorView& y) {
    check_rank(x, 3, "conv1d", "input");
    check_rank(kernel, 3, "conv1d", "kernel");
    if (kernel.shape[1] != x.shape[2]) {
        throw OpError("[conv1d] input has " + std::to_string(x.shape[2]) + " channels, kernel expects " +
                      std::to_string(kernel.shape[1]));
    }
    if (!y) return;
    check_rank(y, 3, "conv1d", "output");
    if (y.shape[0] != x.shape[0] || y.shape[2] != kernel.shape[2]) {
        throw OpError("[conv1d] output " + y.shape.to_string() + " does not match input " + x.shape.to_string() +
                      " and kernel " + kernel.shape.to_string());
    }
}

void check_dense_shapes(const TensorView& x, const TensorView& kernel) {
    check_rank(x, 2, "dense", "input");
    check_rank(kernel, 2, "dense", "kernel");
    if (kernel.shape[0] != x.shape[1]) {
        throw OpError("[dense] input has " + std::to_string(x.shape[1]) + " features, kernel expects " +
                      std::to_string(kernel.shape[0]));
    }
}

std::string_view activation_name(ActivationKind kind) {
    switch (kind) {
        case ActivationKind::Linear: return "linear";
        case ActivationKind::ReLU: return "relu";
        case ActivationKind::Tanh: return "tanh";
        case ActivationKind::Sigmoid: return "sigmoid";
        case ActivationKind::Softmax: return "softmax";
        case ActivationKind::Invalid: break;
    }
    return "invalid";
}

ActivationKind activation_from_name(std::string_view name) {
    if (name == "linear" || name.empty()) return ActivationKind::Linear;
    if (name == "relu") return ActivationKind::ReLU;
    if (name == "tanh") return ActivationKind::Tanh;
    if (name == "sigmoid") return ActivationKind::Sigmoid;
    if (name == "softmax") return ActivationKind::Softmax;
    return ActivationKind::Invalid;
}

}  // namespace mirrorlab
