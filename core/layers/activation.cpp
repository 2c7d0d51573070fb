// Activation (and Keras' ReLU class): an elementwise function; a softmax output is fused into
// the loss instead (LayerPass::activation is then linear).
#include "core/layers/arguments.h"

namespace mirrorlab {

namespace {

constexpr LayerAlias kAliases[] = {{"ReLU", true}};
constexpr LayerArgument kArguments[] = {
    {&arguments::kActivation, static_cast<double>(ActivationKind::Linear), static_cast<double>(ActivationKind::ReLU)},
};
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kActivation};

void read(const ConfigReader&, std::string_view class_name, LayerConfig& config) {
    if (class_name == "ReLU") config.activation = ActivationKind::ReLU;
}

void infer(ShapeInference&) {}

void forward(const LayerPass& pass) {
    if (pass.activation == ActivationKind::Linear) {
        pass.backend.copy(pass.out, pass.in);
    } else {
        pass.backend.activation_forward(pass.activation, pass.in, pass.out);
    }
}

void backward(const LayerPass& pass) {
    if (pass.activation == ActivationKind::Linear) {
        pass.backend.copy(pass.grad_in, pass.grad_out);
    } else {
        pass.backend.activation_backward(pass.activation, pass.out, pass.grad_out, pass.grad_in);
    }
}

}  // namespace

extern const LayerType kActivationLayer;
const LayerType kActivationLayer{
    .kind = LayerKind::Activation,
    .class_name = "Activation",
    .aliases = kAliases,
    .name_stem = "activation",
    .arguments = kArguments,
    .arguments_text = "%1",
    .text_arguments = kTextArguments,
    .read = read,
    .infer = infer,
    .forward = forward,
    .backward = backward,
};

}  // namespace mirrorlab
