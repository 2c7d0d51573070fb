// MaxPooling1D ([steps, channels] -> [steps', channels]) and GlobalMaxPooling1D (-> [channels]),
// both through the Backend's maxpool1d ops; the positions of the maxima are the aux buffer.
#include "core/backend/cpu_reference.h"
#include "core/layers/arguments.h"
#include "core/layers/pooling.h"

namespace mirrorlab {

namespace {

constexpr LayerAlias kAliases[] = {{"MaxPool1D"}};
constexpr LayerArgument kArguments[] = {
    {&arguments::kPoolSize, 2.0, 2.0},
    {&arguments::kStrides, 0.0, 0.0, false},  // 0: the pool size, Keras' default
    {&arguments::kPadding, static_cast<double>(Padding::Valid), static_cast<double>(Padding::Valid), false},
};
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kPoolSize, &arguments::kStrides, &arguments::kPadding};

std::int32_t stride(const LayerConfig& config) { return config.strides > 0 ? config.strides : config.pool_size; }

// Keras writes the default strides out ([2] for pool_size [2]); kept as 0, the file reads back
// the same and is written without it.
void read(const ConfigReader&, std::string_view, LayerConfig& config) {
    if (config.strides == config.pool_size) config.strides = 0;
}

void infer(ShapeInference& in) {
    const LayerConfig& config = in.config;
    in.require_sequence();
    const bool same = config.padding == Padding::Same;
    const std::int64_t out_length = conv_output_length(in.shape[0], config.pool_size, stride(config), same);
    if (out_length <= 0) {
        in.fail("has pool_size " + std::to_string(config.pool_size) + " but its input has only " +
                std::to_string(in.shape[0]) + " steps; use a smaller pool or padding 'same'");
    }
    in.info.pad_left = same ? same_pad_left(in.shape[0], config.pool_size, stride(config)) : 0;
    in.shape = Shape{out_length, in.shape[1]};
}

void forward(const LayerPass& pass) {
    pass.backend.maxpool1d_forward(pass.in, pass.out, pass.aux, max_pooling1d_params(pass.info));
}

void backward(const LayerPass& pass) { pass.backend.maxpool1d_backward(pass.grad_out, pass.aux, pass.grad_in); }

// GlobalMaxPooling1D: one window over all steps.
constexpr LayerAlias kGlobalAliases[] = {{"GlobalMaxPool1D"}};

void infer_global(ShapeInference& in) {
    in.require_sequence();
    in.shape = Shape{in.shape[1]};
}

Shape pooled(const LayerPass& pass) { return Shape{pass.batch, 1, pass.info.output_shape[0]}; }

void forward_global(const LayerPass& pass) {
    const auto length = static_cast<std::int32_t>(pass.info.input_shape[0]);
    pass.backend.maxpool1d_forward(pass.in, pass.out.reshaped(pooled(pass)), pass.aux.reshaped(pooled(pass)),
                                   Pool1DParams{length, length, 0});
}

void backward_global(const LayerPass& pass) {
    pass.backend.maxpool1d_backward(pass.grad_out.reshaped(pooled(pass)), pass.aux.reshaped(pooled(pass)),
                                    pass.grad_in);
}

}  // namespace

Pool1DParams max_pooling1d_params(const LayerInfo& info) {
    return Pool1DParams{info.config.pool_size, stride(info.config), info.pad_left};
}

extern const LayerType kMaxPooling1DLayer;
const LayerType kMaxPooling1DLayer{
    .kind = LayerKind::MaxPooling1D,
    .class_name = "MaxPooling1D",
    .aliases = kAliases,
    .name_stem = "max_pooling1d",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "pool %1, stride %2, %3"),
    .text_arguments = kTextArguments,
    .read = read,
    .infer = infer,
    .aux_dtype = DType::I32,
    .aux_what = "the pooling positions",
    .forward = forward,
    .backward = backward,
};

extern const LayerType kGlobalMaxPooling1DLayer;
const LayerType kGlobalMaxPooling1DLayer{
    .kind = LayerKind::GlobalMaxPooling1D,
    .class_name = "GlobalMaxPooling1D",
    .aliases = kGlobalAliases,
    .name_stem = "global_max_pooling1d",
    .infer = infer_global,
    .aux_dtype = DType::I32,
    .aux_what = "the pooling positions",
    .forward = forward_global,
    .backward = backward_global,
};

}  // namespace mirrorlab
