// SpatialDropout1D as Keras: Dropout with noise_shape (batch, 1, channels), so in training whole
// channels of a sample are zeroed (with probability `rate`) at every step and the rest scaled by
// 1 / (1 - rate); outside training it is the identity. Neighbouring steps of a sequence are
// strongly correlated, so dropping single elements would regularise little.
//
// The mask is the aux buffer, broadcast over the steps: one new op draws it (its CPU reference
// below, from the step's seed as Dropout's, so every backend draws the same mask); the products
// with it are the Backend's dropout_backward (grad_x = grad_y * mask), run natively everywhere.
#include "core/backend/cpu_reference.h"
#include "core/layers/arguments.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// inputs {}, outputs {mask [B, T, C]}, attributes.real = rate, attributes.seed: mask[b, t, c] is
// 1 / (1 - rate) where counter_uniform(seed, b * C + c) >= rate, else 0, the same at every t.
void mask_reference(const OpCall& call) {
    const TensorView& mask = call.outputs[0];
    check_rank(mask, 3, "spatial_dropout1d", "the mask");
    const std::int64_t batch = mask.shape[0], length = mask.shape[1], channels = mask.shape[2];
    const auto rate = static_cast<float>(call.attributes.real);
    const float keep_scale = 1.0f / (1.0f - rate);
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t c = 0; c < channels; ++c) {
            const auto draw = static_cast<std::uint64_t>(b * channels + c);
            const float scale = counter_uniform(call.attributes.seed, draw) >= rate ? keep_scale : 0.0f;
            for (std::int64_t t = 0; t < length; ++t) mask.f32()[(b * length + t) * channels + c] = scale;
        }
    }
}

const OpDef kMask{"spatial_dropout1d_mask", mask_reference};
const OpDef* const kOps[] = {&kMask};

constexpr LayerArgument kArguments[] = {{&arguments::kRate, std::nullopt, 0.2}};  // Keras requires the rate
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kRate};

void infer(ShapeInference& in) { in.require_sequence(); }

void forward(const LayerPass& pass) {
    const double rate = pass.info.config.rate;
    if (!pass.training || rate == 0.0) {
        pass.backend.copy(pass.out, pass.in);
        pass.backend.fill(pass.aux, 1.0f);
        return;
    }
    OpAttributes attributes;
    attributes.real = rate;
    attributes.seed = pass.seed;
    const TensorView outputs[] = {pass.aux};
    run_op(pass.backend, kMask, {}, outputs, attributes);
    pass.backend.dropout_backward(pass.in, pass.aux, pass.out);  // out = in * mask
}

void backward(const LayerPass& pass) { pass.backend.dropout_backward(pass.grad_out, pass.aux, pass.grad_in); }

}  // namespace

extern const LayerType kSpatialDropout1DLayer;
const LayerType kSpatialDropout1DLayer{
    .kind = LayerKind::SpatialDropout1D,
    .class_name = "SpatialDropout1D",
    .name_stem = "spatial_dropout1d",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "rate %1"),
    .text_arguments = kTextArguments,
    .infer = infer,
    .aux_dtype = DType::F32,
    .aux_what = "the dropout mask",
    .inference_identity = true,
    .forward = forward,
    .backward = backward,
    .ops = kOps,
};

}  // namespace mirrorlab
