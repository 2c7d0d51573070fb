// Dense: [features] -> [units].
#include "core/layers/arguments.h"

namespace mirrorlab {

namespace {

constexpr LayerArgument kArguments[] = {
    {&arguments::kUnits, std::nullopt, 64},
    {&arguments::kActivation, static_cast<double>(ActivationKind::Linear), static_cast<double>(ActivationKind::ReLU)},
    {&arguments::kUseBias, 1.0, 1.0, false},
};
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kUnits, &arguments::kActivation};

void infer(ShapeInference& in) {
    const LayerConfig& config = in.config;
    if (in.shape.rank() != 1) {
        in.fail("receives " + output_shape_text(in.shape) +
                "; put a Flatten, GlobalMaxPooling1D or GlobalAveragePooling1D layer before it to get one vector per sample");
    }
    in.info.variables.push_back({config.name + "/kernel", Shape{in.shape[0], config.units}, Initializer::GlorotUniform,
                                 in.shape[0], config.units});
    if (config.use_bias) {
        in.info.variables.push_back({config.name + "/bias", Shape{config.units}, Initializer::Zeros, 0, 0});
    }
    in.shape = Shape{config.units};
}

TensorView bias(const LayerPass& pass, std::span<const TensorView> variables) {
    return pass.info.config.use_bias ? variables[1] : TensorView{};
}

void forward(const LayerPass& pass) {
    pass.backend.dense_forward(pass.in, pass.variables[0], bias(pass, pass.variables), pass.out);
    if (pass.activation != ActivationKind::Linear) pass.backend.activation_forward(pass.activation, pass.out, pass.out);
}

void backward(const LayerPass& pass) {
    if (pass.activation != ActivationKind::Linear) {
        pass.backend.activation_backward(pass.activation, pass.out, pass.grad_out, pass.grad_out);
    }
    pass.backend.dense_backward(pass.in, pass.variables[0], pass.grad_out, pass.grad_in, pass.grad_variables[0],
                                bias(pass, pass.grad_variables));
}

}  // namespace

extern const LayerType kDenseLayer;
const LayerType kDenseLayer{
    .kind = LayerKind::Dense,
    .class_name = "Dense",
    .name_stem = "dense",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "%1 units, %2"),
    .text_arguments = kTextArguments,
    .infer = infer,
    .forward = forward,
    .backward = backward,
};

}  // namespace mirrorlab
