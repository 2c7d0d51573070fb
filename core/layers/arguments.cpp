#include "core/layers/arguments.h"

namespace mirrorlab {

namespace arguments {

// get/set of a LayerConfig field, through the double every argument is carried as.
#define MIRRORLAB_FIELD(field)                                                \
    .get = [](const LayerConfig& c) { return static_cast<double>(c.field); }, \
    .set = [](LayerConfig& c, double v) { c.field = static_cast<decltype(c.field)>(v); }

const ArgumentSpec kInputDim{
    .key = "input_dim",
    .type = ArgumentType::Integer,
    .widget = "inputDim",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Vocabulary (input_dim):"),
    .tooltip = MIRRORLAB_TRANSLATABLE("LayerType",
                                      "Vocabulary size: token ids must be smaller than this (30,982 for Reuters)"),
    .minimum = 1,
    .maximum = 100'000'000,
    MIRRORLAB_FIELD(input_dim),
};
const ArgumentSpec kOutputDim{
    .key = "output_dim",
    .type = ArgumentType::Integer,
    .widget = "outputDim",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Vector size (output_dim):"),
    .tooltip = MIRRORLAB_TRANSLATABLE("LayerType", "Length of the vector each token becomes"),
    .minimum = 1,
    .maximum = 65'536,
    MIRRORLAB_FIELD(output_dim),
};
const ArgumentSpec kFilters{
    .key = "filters",
    .type = ArgumentType::Integer,
    .widget = "filters",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Filters:"),
    .minimum = 1,
    .maximum = 65'536,
    MIRRORLAB_FIELD(filters),
};
const ArgumentSpec kKernelSize{
    .key = "kernel_size",
    .type = ArgumentType::Integer,
    .widget = "kernelSize",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Kernel size:"),
    .tooltip = MIRRORLAB_TRANSLATABLE(
        "LayerType", "Window length in tokens; with padding 'valid' the output is kernel_size - 1 steps shorter"),
    .minimum = 1,
    .maximum = 100'000,
    MIRRORLAB_FIELD(kernel_size),
};
const ArgumentSpec kPoolSize{
    .key = "pool_size",
    .type = ArgumentType::Integer,
    .widget = "poolSize",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Pool size:"),
    .minimum = 1,
    .maximum = 100'000,
    MIRRORLAB_FIELD(pool_size),
};
const ArgumentSpec kStrides{
    .key = "strides",
    .type = ArgumentType::Integer,
    .widget = "strides",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Strides:"),
    .minimum = 0,
    .maximum = 100'000,
    .minimum_text = MIRRORLAB_TRANSLATABLE("LayerType", "same as pool size"),
    MIRRORLAB_FIELD(strides),
    .shown = [](const LayerConfig& c) { return static_cast<double>(c.strides > 0 ? c.strides : c.pool_size); },
};
const ArgumentSpec kPadding{
    .key = "padding",
    .type = ArgumentType::Padding,
    .widget = "padding",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Padding:"),
    MIRRORLAB_FIELD(padding),
};
const ArgumentSpec kUnits{
    .key = "units",
    .type = ArgumentType::Integer,
    .widget = "units",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Units:"),
    .tooltip = MIRRORLAB_TRANSLATABLE("LayerType",
                                      "Output size; the last Dense layer needs one unit per class (46 for Reuters)"),
    .minimum = 1,
    .maximum = 1'000'000,
    MIRRORLAB_FIELD(units),
};
const ArgumentSpec kActivation{
    .key = "activation",
    .type = ArgumentType::Activation,
    .widget = "activation",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Activation:"),
    MIRRORLAB_FIELD(activation),
};
const ArgumentSpec kUseBias{
    .key = "use_bias",
    .type = ArgumentType::Boolean,
    .widget = "useBias",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Use bias"),
    .maximum = 1,
    .off_text = MIRRORLAB_TRANSLATABLE("LayerType", ", no bias"),
    MIRRORLAB_FIELD(use_bias),
};
const ArgumentSpec kRate{
    .key = "rate",
    .type = ArgumentType::Rate,
    .widget = "rate",
    .label = MIRRORLAB_TRANSLATABLE("LayerType", "Rate:"),
    .tooltip = MIRRORLAB_TRANSLATABLE("LayerType", "Fraction of inputs set to zero during training (none at evaluation)"),
    .minimum = 0.0,
    .maximum = 0.95,
    MIRRORLAB_FIELD(rate),
};

#undef MIRRORLAB_FIELD

}  // namespace arguments

std::span<const ArgumentSpec* const> argument_specs() {
    using namespace arguments;
    static const ArgumentSpec* const kAll[] = {&kInputDim, &kOutputDim, &kFilters, &kKernelSize,
                                               &kPoolSize, &kStrides, &kPadding, &kUnits,
                                               &kActivation, &kUseBias, &kRate};
    return kAll;
}

}  // namespace mirrorlab
