#pragma once
// One layer of a model as the engine holds it: its type, its Keras arguments (LayerConfig) and what
// shape inference made of it (LayerInfo: shapes, variables, parameter count). The layer registry
// (layer_type.h) reads and fills these; Model (core/model) is a sequence of them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/tensor.h"
#include "core/layers/layer_list.h"

namespace mirrorlab {

#define MIRRORLAB_LAYER_KIND(Name) Name,
enum class LayerKind { Invalid = 0, MIRRORLAB_LAYER_TYPES(MIRRORLAB_LAYER_KIND) };
#undef MIRRORLAB_LAYER_KIND
enum class Padding { Invalid = 0, Valid, Same };
enum class Initializer { Invalid = 0, GlorotUniform, Zeros, EmbeddingUniform };

std::string_view layer_class_name(LayerKind kind);  // "Conv1D", "MaxPooling1D", ... (the registry's)

struct LayerConfig {
    LayerKind kind = LayerKind::Invalid;
    std::string name;
    std::int64_t input_dim = 0;   // Embedding
    std::int64_t output_dim = 0;  // Embedding
    std::int32_t filters = 0;     // Conv1D
    std::int32_t kernel_size = 0; // Conv1D
    std::int32_t pool_size = 2;   // MaxPooling1D
    std::int32_t strides = 0;     // MaxPooling1D: 0 means pool_size (Keras' default)
    Padding padding = Padding::Valid;
    std::int32_t units = 0;       // Dense
    ActivationKind activation = ActivationKind::Linear;
    bool use_bias = true;
    double rate = 0.0;            // Dropout
};
// Each field belongs to the layer types whose descriptors list it (core/layers/arguments.h).

struct VariableInfo {
    std::string name;  // "conv1d/kernel", Keras' variable naming
    Shape shape;
    Initializer initializer = Initializer::Invalid;
    std::int64_t fan_in = 0;
    std::int64_t fan_out = 0;
};

struct LayerInfo {
    LayerConfig config;
    Shape input_shape;   // without the batch dimension
    Shape output_shape;  // without the batch dimension
    std::vector<VariableInfo> variables;
    std::int64_t param_count = 0;
    std::int32_t pad_left = 0;  // resolved 'same' padding for Conv1D / MaxPooling1D
};

std::string output_shape_text(const Shape& shape);  // "(None, 300, 7)", as model.summary() shows it

}  // namespace mirrorlab
