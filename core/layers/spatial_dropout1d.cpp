// SpatialDropout1D as Keras: Dropout with noise_shape (batch, 1, channels), so in training whole
// channels of a sample are zeroed (with probability `rate`) at every step and the rest scaled by
// 1 / (1 - rate); outside training it is the identity. Neighbouring steps of a sequence are
// strongly correlated, so dropping single elements would regularise little.
//
// The mask is the aux buffer, broadcast over the steps: one new op draws it (its CPU reference
// below, from the step's seed as Dropout's, so every backend draws the same mask); the products
// with it are the Backend's dropout_backward (grad_x = grad_y * mask), run natively everywhere.
#include "core/backend/cpu_reference.h"
#include "core/layers/dropout_common.h"
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

// Keras requires the rate. The form says what it drops: whole channels, not single elements.
constexpr LayerArgument kArguments[] = {
    {.spec = &arguments::kRate,
     .keras_default = std::nullopt,
     .form_default = 0.2,
     .tooltip = MIRRORLAB_TRANSLATABLE("LayerType",
                                       "Fraction of channels set to zero during training, each over the whole sequence "
                                       "(none at evaluation)")},
};

void infer(ShapeInference& in) { in.require_sequence(); }

void forward(const LayerPass& pass) {
    if (dropout::forward_identity(pass)) return;
    OpAttributes attributes;
    attributes.real = pass.info.config.rate;
    attributes.seed = pass.seed;
    const TensorView outputs[] = {pass.aux};
    run_op(pass.backend, kMask, {}, outputs, attributes);
    pass.backend.dropout_backward(pass.in, pass.aux, pass.out);  // out = in * mask
}

}  // namespace

extern const LayerType kSpatialDropout1DLayer;
const LayerType kSpatialDropout1DLayer{
    .kind = LayerKind::SpatialDropout1D,
    .class_name = "SpatialDropout1D",
    .name_stem = "spatial_dropout1d",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "rate %1"),
    .text_arguments = dropout::kTextArguments,
    .infer = infer,
    .aux_dtype = dropout::kMaskDType,
    .aux_what = dropout::kMaskWhat,
    .inference_identity = true,
    .forward = forward,
    .backward = dropout::backward,
    .ops = kOps,
};

}  // namespace mirrorlab
