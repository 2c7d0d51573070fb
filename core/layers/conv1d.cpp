// Conv1D: [steps, channels] -> [steps', filters], stride and dilation 1, 'valid' or 'same'.
#include "core/backend/cpu_reference.h"
#include "core/layers/arguments.h"
#include "core/layers/pooling.h"

namespace mirrorlab {

namespace {

constexpr LayerAlias kAliases[] = {{"Convolution1D"}};
constexpr LayerArgument kArguments[] = {
    {&arguments::kFilters, std::nullopt, 32},
    {&arguments::kKernelSize, std::nullopt, 3},
    {&arguments::kPadding, static_cast<double>(Padding::Valid), static_cast<double>(Padding::Valid)},
    {&arguments::kActivation, static_cast<double>(ActivationKind::Linear), static_cast<double>(ActivationKind::ReLU)},
    {&arguments::kUseBias, 1.0, 1.0, false},
};
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kFilters, &arguments::kKernelSize, &arguments::kPadding,
                                                  &arguments::kActivation};

void read(const ConfigReader& read, std::string_view, LayerConfig&) {
    if (read.positive_int("strides", 1) != 1) read.fail("strides other than 1 are not supported");
    if (read.positive_int("dilation_rate", 1) != 1) read.fail("dilation_rate other than 1 is not supported");
}

void infer(ShapeInference& in) {
    const LayerConfig& config = in.config;
    in.require_sequence();
    const bool same = config.padding == Padding::Same;
    const std::int64_t out_length = conv_output_length(in.shape[0], config.kernel_size, 1, same);
    if (out_length <= 0) {
        in.fail("has kernel_size " + std::to_string(config.kernel_size) + " but its input has only " +
                std::to_string(in.shape[0]) +
                " steps; use a shorter kernel, padding 'same', or less pooling before it");
    }
    in.info.pad_left = same ? same_pad_left(in.shape[0], config.kernel_size, 1) : 0;
    const std::int64_t channels = in.shape[1];
    in.info.variables.push_back({config.name + "/kernel", Shape{config.kernel_size, channels, config.filters},
                                 Initializer::GlorotUniform, config.kernel_size * channels,
                                 std::int64_t{config.kernel_size} * config.filters});
    if (config.use_bias) {
        in.info.variables.push_back({config.name + "/bias", Shape{config.filters}, Initializer::Zeros, 0, 0});
    }
    in.shape = Shape{out_length, config.filters};
}

TensorView bias(const LayerPass& pass, std::span<const TensorView> variables) {
    return pass.info.config.use_bias ? variables[1] : TensorView{};
}

void forward(const LayerPass& pass) {
    pass.backend.conv1d_forward(pass.in, pass.variables[0], bias(pass, pass.variables), pass.out,
                                Conv1DParams{pass.info.pad_left});
    if (pass.activation != ActivationKind::Linear) pass.backend.activation_forward(pass.activation, pass.out, pass.out);
}

void backward(const LayerPass& pass) {
    if (pass.activation != ActivationKind::Linear) {
        pass.backend.activation_backward(pass.activation, pass.out, pass.grad_out, pass.grad_out);
    }
    pass.backend.conv1d_backward(pass.in, pass.variables[0], pass.grad_out, pass.grad_in, pass.grad_variables[0],
                                 bias(pass, pass.grad_variables), Conv1DParams{pass.info.pad_left});
}

// Conv1D(activation='relu') then MaxPooling1D, the tutorial's two blocks: one op, so a CPU takes
// each sample through the convolution, the ReLU and the pooling while its output is in cache.
bool fuses_with_next(const LayerPass& pass, const LayerInfo& next) {
    return pass.activation == ActivationKind::ReLU && next.config.kind == LayerKind::MaxPooling1D;
}

void forward_with_next(const LayerPass& pass, const LayerPass& pool) {
    pass.backend.conv1d_relu_maxpool1d_forward(pass.in, pass.variables[0], bias(pass, pass.variables), pass.out,
                                               pool.out, pool.aux, Conv1DParams{pass.info.pad_left},
                                               max_pooling1d_params(pool.info));
}

void backward_with_next(const LayerPass& pass, const LayerPass& pool) {
    pass.backend.conv1d_relu_maxpool1d_backward(pass.in, pass.variables[0], pass.out, pool.out, pool.aux, pool.grad_out,
                                                pass.grad_out, pass.grad_in, pass.grad_variables[0],
                                                bias(pass, pass.grad_variables), Conv1DParams{pass.info.pad_left});
}

}  // namespace

extern const LayerType kConv1DLayer;
const LayerType kConv1DLayer{
    .kind = LayerKind::Conv1D,
    .class_name = "Conv1D",
    .aliases = kAliases,
    .name_stem = "conv1d",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "%1 filters, kernel %2, %3, %4"),
    .text_arguments = kTextArguments,
    .read = read,
    .infer = infer,
    .forward = forward,
    .backward = backward,
    .fuses_with_next = fuses_with_next,
    .forward_with_next = forward_with_next,
    .backward_with_next = backward_with_next,
};

}  // namespace mirrorlab
