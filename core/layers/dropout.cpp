// Dropout as Keras: in training, each element is zeroed with probability `rate` and the others
// are scaled by 1 / (1 - rate); outside training it is the identity. The mask (0 or the scale)
// is the aux buffer, drawn from the step's seed, so every backend draws the same one.
#include "core/layers/dropout_common.h"

namespace mirrorlab {

namespace {

constexpr LayerArgument kArguments[] = {{&arguments::kRate, 0.5, 0.5}};

void infer(ShapeInference&) {}  // any shape, unchanged

void forward(const LayerPass& pass) {
    if (dropout::forward_identity(pass)) return;
    pass.backend.dropout_forward(pass.in, pass.out, pass.aux, static_cast<float>(pass.info.config.rate), pass.seed);
}

}  // namespace

extern const LayerType kDropoutLayer;
const LayerType kDropoutLayer{
    .kind = LayerKind::Dropout,
    .class_name = "Dropout",
    .name_stem = "dropout",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "rate %1"),
    .text_arguments = dropout::kTextArguments,
    .infer = infer,
    .aux_dtype = dropout::kMaskDType,
    .aux_what = dropout::kMaskWhat,
    .inference_identity = true,
    .forward = forward,
    .backward = dropout::backward,
};

}  // namespace mirrorlab
