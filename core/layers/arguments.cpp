#include "core/layers/arguments.h"

namespace mirrorlab {

namespace arguments {

#define MIRRORLAB_FIELD(field) \
    [](const LayerConfig& c) { return static_cast<double>(c.field); }, \
    [](LayerConfig& c, double v) { c.field = static_cast<decltype(c.field)>(v); }

const ArgumentSpec kInputDim{
    "input_dim", ArgumentType::Integer, "inputDim", MIRRORLAB_TRANSLATABLE("LayerType", "Vocabulary (input_dim):"),
    MIRRORLAB_TRANSLATABLE("LayerType", "Vocabulary size: token ids must be smaller than this (30,982 for Reuters)"),
    1, 100'000'000, {}, {}, MIRRORLAB_FIELD(input_dim), nullptr};
const ArgumentSpec kOutputDim{
    "output_dim", ArgumentType::Integer, "outputDim", MIRRORLAB_TRANSLATABLE("LayerType", "Vector size (output_dim):"),
    MIRRORLAB_TRANSLATABLE("LayerType", "Length of the vector each token becomes"), 1, 65'536, {}, {},
    MIRRORLAB_FIELD(output_dim), nullptr};
const ArgumentSpec kFilters{"filters", ArgumentType::Integer, "filters", MIRRORLAB_TRANSLATABLE("LayerType", "Filters:"),
                            {}, 1, 65'536, {}, {}, MIRRORLAB_FIELD(filters), nullptr};
const ArgumentSpec kKernelSize{
    "kernel_size", ArgumentType::Integer, "kernelSize", MIRRORLAB_TRANSLATABLE("LayerType", "Kernel size:"),
    MIRRORLAB_TRANSLATABLE("LayerType",
                           "Window length in tokens; with padding 'valid' the output is kernel_size - 1 steps shorter"),
    1, 100'000, {}, {}, MIRRORLAB_FIELD(kernel_size), nullptr};
const ArgumentSpec kPoolSize{"pool_size", ArgumentType::Integer, "poolSize", MIRRORLAB_TRANSLATABLE("LayerType", "Pool size:"),
                             {}, 1, 100'000, {}, {}, MIRRORLAB_FIELD(pool_size), nullptr};
const ArgumentSpec kStrides{"strides", ArgumentType::Integer, "strides", MIRRORLAB_TRANSLATABLE("LayerType", "Strides:"),
                            {}, 0, 100'000, MIRRORLAB_TRANSLATABLE("LayerType", "same as pool size"), {},
                            MIRRORLAB_FIELD(strides),
                            [](const LayerConfig& c) { return static_cast<double>(c.strides > 0 ? c.strides : c.pool_size); }};
const ArgumentSpec kPadding{"padding", ArgumentType::Padding, "padding", MIRRORLAB_TRANSLATABLE("LayerType", "Padding:"),
                            {}, 0, 0, {}, {}, MIRRORLAB_FIELD(padding), nullptr};
const ArgumentSpec kUnits{
    "units", ArgumentType::Integer, "units", MIRRORLAB_TRANSLATABLE("LayerType", "Units:"),
    MIRRORLAB_TRANSLATABLE("LayerType", "Output size; the last Dense layer needs one unit per class (46 for Reuters)"),
    1, 1'000'000, {}, {}, MIRRORLAB_FIELD(units), nullptr};
const ArgumentSpec kActivation{"activation", ArgumentType::Activation, "activation",
                               MIRRORLAB_TRANSLATABLE("LayerType", "Activation:"), {}, 0, 0, {}, {},
                               MIRRORLAB_FIELD(activation), nullptr};
const ArgumentSpec kUseBias{"use_bias", ArgumentType::Boolean, "useBias", MIRRORLAB_TRANSLATABLE("LayerType", "Use bias"),
                            {}, 0, 1, {}, MIRRORLAB_TRANSLATABLE("LayerType", ", no bias"), MIRRORLAB_FIELD(use_bias),
                            nullptr};
const ArgumentSpec kRate{"rate", ArgumentType::Rate, "rate", MIRRORLAB_TRANSLATABLE("LayerType", "Rate:"),
                         MIRRORLAB_TRANSLATABLE("LayerType", "Fraction of inputs set to zero during training (none at evaluation)"),
                         0.0, 0.95, {}, {}, MIRRORLAB_FIELD(rate), nullptr};

#undef MIRRORLAB_FIELD

}  // namespace arguments

std::span<const ArgumentSpec* const> argument_specs() {
    using namespace arguments;
    static const ArgumentSpec* const kAll[] = {&kInputDim, &kOutputDim, &kFilters,    &kKernelSize, &kPoolSize, &kStrides,
                                               &kPadding,  &kUnits,     &kActivation, &kUseBias,    &kRate};
    return kAll;
}

}  // namespace mirrorlab
