// Dropout as Keras: in training, each element is zeroed with probability `rate` and the others
// are scaled by 1 / (1 - rate); outside training it is the identity. The mask (0 or the scale)
// is the aux buffer, drawn from the step's seed, so every backend draws the same one.
#include "core/layers/arguments.h"

namespace mirrorlab {

namespace {

constexpr LayerArgument kArguments[] = {{&arguments::kRate, 0.5, 0.5}};
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kRate};

void infer(ShapeInference&) {}

void forward(const LayerPass& pass) {
    const double rate = pass.info.config.rate;
    if (pass.training && rate > 0.0) {
        pass.backend.dropout_forward(pass.in, pass.out, pass.aux, static_cast<float>(rate), pass.seed);
    } else {
        pass.backend.copy(pass.out, pass.in);
        pass.backend.fill(pass.aux, 1.0f);
    }
}

void backward(const LayerPass& pass) { pass.backend.dropout_backward(pass.grad_out, pass.aux, pass.grad_in); }

}  // namespace

extern const LayerType kDropoutLayer;
const LayerType kDropoutLayer{
    .kind = LayerKind::Dropout,
    .class_name = "Dropout",
    .name_stem = "dropout",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "rate %1"),
    .text_arguments = kTextArguments,
    .infer = infer,
    .aux_dtype = DType::F32,
    .aux_what = "the dropout mask",
    .inference_identity = true,
    .forward = forward,
    .backward = backward,
};

}  // namespace mirrorlab
