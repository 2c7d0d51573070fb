// Embedding: token ids [steps] -> vectors [steps, output_dim]; its table is the model's one
// sparse variable (the optimizer's IndexedSlices update, see core/optim/optimizer.h).
#include "core/layers/arguments.h"

namespace mirrorlab {

namespace {

constexpr LayerArgument kArguments[] = {
    {&arguments::kInputDim, std::nullopt, 30'982},  // the form starts at the Reuters vocabulary
    {&arguments::kOutputDim, std::nullopt, 16},
};
constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kInputDim, &arguments::kOutputDim};

void infer(ShapeInference& in) {
    const LayerConfig& config = in.config;
    if (in.index != 0) in.fail("must be the first layer (it turns token ids into vectors)");
    in.shape = Shape{in.shape[0], config.output_dim};
    in.info.variables.push_back({config.name + "/embeddings", Shape{config.input_dim, config.output_dim},
                                 Initializer::EmbeddingUniform, config.input_dim, config.output_dim});
}

void forward(const LayerPass& pass) { pass.backend.embedding_forward(pass.in, pass.variables[0], pass.out); }

void backward(const LayerPass& pass) {
    pass.backend.embedding_backward(pass.in, pass.grad_out, pass.grad_variables[0]);
    if (pass.embedding_stats.grad_squares || pass.embedding_stats.row_counts) {
        pass.backend.embedding_gradient_stats(pass.in, pass.grad_out, pass.embedding_stats.grad_squares,
                                              pass.embedding_stats.row_counts);
    }
}

}  // namespace

extern const LayerType kEmbeddingLayer;
const LayerType kEmbeddingLayer{
    .kind = LayerKind::Embedding,
    .class_name = "Embedding",
    .name_stem = "embedding",
    .arguments = kArguments,
    .arguments_text = MIRRORLAB_TRANSLATABLE("LayerType", "%1 tokens → %2 dims"),
    .text_arguments = kTextArguments,
    .infer = infer,
    .forward = forward,
    .backward = backward,
};

}  // namespace mirrorlab
