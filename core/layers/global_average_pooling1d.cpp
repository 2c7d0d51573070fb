// GlobalAveragePooling1D as Keras (channels last, keepdims False, no mask): [steps, channels] ->
// [channels], the mean over the steps. Its two ops are new to the Backend and exist only as the
// CPU reference below; a backend without a kernel for them runs them through run_op's fallback.
#include "core/layers/layer_type.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

constexpr std::string_view kOp = "global_average_pooling1d";

void check_shapes(const TensorView& sequence, const TensorView& pooled) {
    check_rank(sequence, 3, kOp, "the sequence");
    check_rank(pooled, 2, kOp, "the pooled output");
    if (pooled.shape[0] != sequence.shape[0] || pooled.shape[1] != sequence.shape[2]) {
        throw OpError("[" + std::string(kOp) + "] pooled " + pooled.shape.to_string() +
                      " does not match the sequence " + sequence.shape.to_string());
    }
}

// inputs {x [B, T, C]}, outputs {y [B, C]}: y[b, c] = sum_t x[b, t, c] / T (summed in double).
void forward_reference(const OpCall& call) {
    const TensorView& x = call.inputs[0];
    const TensorView& y = call.outputs[0];
    check_shapes(x, y);
    const std::int64_t batch = x.shape[0], length = x.shape[1], channels = x.shape[2];
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t c = 0; c < channels; ++c) {
            double sum = 0.0;
            for (std::int64_t t = 0; t < length; ++t) sum += x.f32()[(b * length + t) * channels + c];
            y.f32()[b * channels + c] = static_cast<float>(sum / static_cast<double>(length));
        }
    }
}

// inputs {grad_y [B, C]}, outputs {grad_x [B, T, C]}: every step gets grad_y / T, as TensorFlow's
// gradient of reduce_mean (a float division by T).
void backward_reference(const OpCall& call) {
    const TensorView& grad_y = call.inputs[0];
    const TensorView& grad_x = call.outputs[0];
    check_shapes(grad_x, grad_y);
    const std::int64_t batch = grad_x.shape[0], length = grad_x.shape[1], channels = grad_x.shape[2];
    const auto steps = static_cast<float>(length);
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < length; ++t) {
            for (std::int64_t c = 0; c < channels; ++c) {
                grad_x.f32()[(b * length + t) * channels + c] = grad_y.f32()[b * channels + c] / steps;
            }
        }
    }
}

const OpDef kForward{"global_average_pooling1d_forward", forward_reference};
const OpDef kBackward{"global_average_pooling1d_backward", backward_reference};
const OpDef* const kOps[] = {&kForward, &kBackward};

constexpr LayerAlias kAliases[] = {{"GlobalAvgPool1D"}};

// Keras' other forms of the layer would give another shape or axis; say so rather than guess.
void read(const ConfigReader& read, std::string_view, LayerConfig&) {
    if (read.string("data_format", "channels_last") != "channels_last") {
        read.fail("data_format '" + read.string("data_format", "") + "' is not supported; use 'channels_last'");
    }
    if (read.boolean("keepdims", false)) {
        read.fail("keepdims=True is not supported; the pooled output is (None, channels)");
    }
}

void infer(ShapeInference& in) {
    in.require_sequence();
    in.shape = Shape{in.shape[1]};
}

void forward(const LayerPass& pass) {
    const TensorView inputs[] = {pass.in}, outputs[] = {pass.out};
    run_op(pass.backend, kForward, inputs, outputs);
}

void backward(const LayerPass& pass) {
    const TensorView inputs[] = {pass.grad_out}, outputs[] = {pass.grad_in};
    run_op(pass.backend, kBackward, inputs, outputs);
}

}  // namespace

extern const LayerType kGlobalAveragePooling1DLayer;
const LayerType kGlobalAveragePooling1DLayer{
    .kind = LayerKind::GlobalAveragePooling1D,
    .class_name = "GlobalAveragePooling1D",
    .aliases = kAliases,
    .name_stem = "global_average_pooling1d",
    .read = read,
    .infer = infer,
    .forward = forward,
    .backward = backward,
    .ops = kOps,
};

}  // namespace mirrorlab
