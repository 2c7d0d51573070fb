// config.json of a .keras archive: written as Keras 3.15 serializes a Sequential model, and read
// back with the checks for what MirrorLab cannot run (keras_file.h says what is written).
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "core/export/keras_file.h"
#include "core/layers/layer_type.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

using json::Value;

Value object(std::initializer_list<std::pair<const char*, Value>> members) {
    Value out = Value::object();
    for (const auto& [key, value] : members) out.set(key, value);
    return out;
}

// A serialized Keras object: {"module", "class_name", "config", "registered_name"}.
Value keras_object(const char* module, std::string_view class_name, Value config) {
    return object({{"module", module}, {"class_name", class_name}, {"config", std::move(config)}, {"registered_name", nullptr}});
}

Value dtype_policy() { return keras_object("keras", "DTypePolicy", object({{"name", "float32"}})); }

Value one(std::int64_t value) {
    Value list = Value::array();
    list.push_back(value);
    return list;
}

Value batch_shape(const Shape& shape) {
    Value list = Value::array();
    list.push_back(nullptr);
    for (std::int64_t dim : shape.dims()) list.push_back(dim);
    return list;
}

Value glorot_uniform() {
    return keras_object("keras.initializers", "GlorotUniform",
                        object({{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}));
}

// Keras 3.15's get_config() of each layer type, key for key.
Value layer_config(const LayerInfo& layer) {
    const LayerConfig& c = layer.config;
    Value config = object({{"name", c.name}, {"trainable", true}, {"dtype", dtype_policy()}});
    const std::string_view padding = c.padding == Padding::Same ? "same" : "valid";
    auto add = [&](const char* key, Value value) { config.set(key, std::move(value)); };
    auto kernel_and_bias = [&](bool activity_regularizer) {
        add("kernel_initializer", glorot_uniform());
        add("bias_initializer", keras_object("keras.initializers", "Zeros", Value::object()));
        add("kernel_regularizer", nullptr);
        add("bias_regularizer", nullptr);
        if (activity_regularizer) add("activity_regularizer", nullptr);
        add("kernel_constraint", nullptr);
        add("bias_constraint", nullptr);
    };
    switch (c.kind) {
        case LayerKind::Embedding:
            add("input_dim", c.input_dim);
            add("output_dim", c.output_dim);
            add("embeddings_initializer",
                keras_object("keras.initializers", "RandomUniform",
                             object({{"seed", nullptr}, {"minval", -0.05}, {"maxval", 0.05}})));
            add("embeddings_regularizer", nullptr);
            add("activity_regularizer", nullptr);
            add("embeddings_constraint", nullptr);
            add("mask_zero", false);
            add("quantization_config", nullptr);
            break;
        case LayerKind::Conv1D:
            add("filters", c.filters);
            add("kernel_size", one(c.kernel_size));
            add("strides", one(1));
            add("padding", padding);
            add("data_format", "channels_last");
            add("dilation_rate", one(1));
            add("groups", 1);
            add("activation", activation_name(c.activation));
            add("use_bias", c.use_bias);
            kernel_and_bias(true);
            break;
        case LayerKind::MaxPooling1D:
            add("pool_size", one(c.pool_size));
            add("padding", padding);
            add("strides", one(c.strides > 0 ? c.strides : c.pool_size));
            add("data_format", "channels_last");
            break;
        case LayerKind::GlobalMaxPooling1D:
        case LayerKind::GlobalAveragePooling1D:
            add("data_format", "channels_last");
            add("keepdims", false);
            break;
        case LayerKind::Flatten: add("data_format", "channels_last"); break;
        case LayerKind::Dense:
            add("units", c.units);
            add("activation", activation_name(c.activation));
            add("use_bias", c.use_bias);
            kernel_and_bias(false);
            add("quantization_config", nullptr);
            break;
        case LayerKind::Dropout:
            add("rate", c.rate);
            add("seed", nullptr);
            add("noise_shape", nullptr);
            break;
        case LayerKind::SpatialDropout1D:
            // Keras 3.15's own get_config() of SpatialDropout1D, whose dtype is a plain name.
            config = object({{"rate", c.rate}, {"seed", nullptr}, {"name", c.name}, {"dtype", "float32"}});
            break;
        case LayerKind::Activation: add("activation", activation_name(c.activation)); break;
        case LayerKind::Invalid: throw ModelError("[keras] layer '" + c.name + "' has no type");
    }
    Value entry = keras_object("keras.layers", layer_class_name(c.kind), std::move(config));
    // Keras records the input shape of the layers that define build(): those with weights, and Flatten.
    if (!layer.variables.empty() || c.kind == LayerKind::Flatten) {
        entry.set("build_config", object({{"input_shape", batch_shape(layer.input_shape)}}));
    }
    return entry;
}

Value optimizer_config(const OptimizerConfig& optimizer) {
    const std::string name = keras_optimizer_name(optimizer.kind);
    // Keras keeps hyper-parameters in float32 variables and writes them back as doubles.
    auto f32 = [](double value) { return static_cast<double>(static_cast<float>(value)); };
    Value config = object({{"name", name},
                           {"learning_rate", f32(optimizer.learning_rate)},
                           {"weight_decay", nullptr},
                           {"clipnorm", nullptr},
                           {"global_clipnorm", nullptr},
                           {"clipvalue", nullptr},
                           {"use_ema", false},
                           {"ema_momentum", 0.99},
                           {"ema_overwrite_frequency", nullptr},
                           {"loss_scale_factor", nullptr},
                           {"gradient_accumulation_steps", nullptr}});
    switch (optimizer.kind) {
        case OptimizerKind::Adam:
        case OptimizerKind::Nadam:
            config.set("beta_1", optimizer.beta_1);
            config.set("beta_2", optimizer.beta_2);
            config.set("epsilon", optimizer.epsilon);
            if (optimizer.kind == OptimizerKind::Adam) config.set("amsgrad", false);
            break;
        case OptimizerKind::SGD:
            config.set("momentum", optimizer.momentum);
            config.set("nesterov", optimizer.nesterov);
            break;
        case OptimizerKind::RMSprop:
            config.set("rho", optimizer.rho);
            config.set("momentum", optimizer.momentum);
            config.set("epsilon", optimizer.epsilon);
            config.set("centered", false);
            break;
        case OptimizerKind::Invalid: throw ModelError("[keras] the run has no optimizer to export");
    }
    return keras_object("keras.optimizers", optimizer_name(optimizer.kind), std::move(config));
}

// What a layer's Keras config may say that MirrorLab would silently run differently: each
// must hold its Keras default. Keys and their defaults, for every layer type.
struct KerasDefault {
    const char* key;
    Value value;
};

std::string unsupported_settings(const Value& config) {
    static const KerasDefault kDefaults[] = {
        {"data_format", "channels_last"}, {"mask_zero", false},           {"groups", 1},
        {"kernel_regularizer", nullptr},  {"bias_regularizer", nullptr},  {"activity_regularizer", nullptr},
        {"embeddings_regularizer", nullptr}, {"kernel_constraint", nullptr}, {"bias_constraint", nullptr},
        {"embeddings_constraint", nullptr}, {"noise_shape", nullptr},     {"keepdims", false},
        {"quantization_config", nullptr}, {"trainable", true},
    };
    std::string found;
    for (const auto& [key, fallback] : kDefaults) {
        const Value* value = config.find(key);
        if (value == nullptr || *value == fallback) continue;
        found += (found.empty() ? "" : ", ") + std::string(key) + " " + json::dump(*value);
    }
    return found;
}

}  // namespace

std::string keras_optimizer_name(OptimizerKind kind) {
    std::string name(optimizer_name(kind));
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return name;
}

json::Value keras_config(const Model& model, const OptimizerConfig& optimizer) {
    const Shape input{model.input_length()};
    Value layers = Value::array();
    layers.push_back(keras_object("keras.layers", "InputLayer",
                                  object({{"batch_shape", batch_shape(input)},
                                          {"dtype", "float32"},
                                          {"sparse", false},
                                          {"ragged", false},
                                          {"name", "input_layer"},
                                          {"optional", false}})));
    for (const LayerInfo& layer : model.layers()) layers.push_back(layer_config(layer));
    Value config = object({{"name", model.name()},
                           {"trainable", true},
                           {"dtype", dtype_policy()},
                           {"layers", std::move(layers)},
                           {"build_input_shape", batch_shape(input)}});
    Value metrics = Value::array();
    metrics.push_back("sparse_categorical_accuracy");
    metrics.push_back("sparse_top_k_categorical_accuracy");
    Value root = keras_object("keras", "Sequential", std::move(config));
    root.set("build_config", object({{"input_shape", batch_shape(input)}}));
    root.set("compile_config", object({{"optimizer", optimizer_config(optimizer)},
                                       {"loss", "sparse_categorical_crossentropy"},
                                       {"loss_weights", nullptr},
                                       {"metrics", std::move(metrics)},
                                       {"weighted_metrics", nullptr},
                                       {"run_eagerly", false},
                                       {"steps_per_execution", 1},
                                       {"jit_compile", false}}));
    return root;
}

std::optional<OptimizerConfig> optimizer_from_keras_config(std::string_view json_text, std::string& note) {
    note.clear();
    Value root;
    try {
        root = json::parse(json_text, "config.json");
    } catch (const json::ParseError&) {
        note = "the config is not JSON";
        return std::nullopt;
    }
    const Value* compile = root.is_object() ? root.find("compile_config") : nullptr;
    const Value* optimizer = compile != nullptr && compile->is_object() ? compile->find("optimizer") : nullptr;
    if (optimizer == nullptr || optimizer->is_null()) {
        note = "the model was saved without compile()";
        return std::nullopt;
    }
    // {"module": "keras.optimizers", "class_name": "Nadam", "config": {...}}, or a bare name.
    std::string name;
    const Value* config = nullptr;
    if (optimizer->is_string()) {
        name = optimizer->as_string();
    } else if (optimizer->is_object()) {
        if (const Value* class_name = optimizer->find("class_name"); class_name != nullptr && class_name->is_string()) {
            name = class_name->as_string();
        }
        config = optimizer->find("config");
    }
    OptimizerConfig result;
    try {
        result = OptimizerConfig::defaults(optimizer_kind_from_name(name));
    } catch (const ModelError&) {
        note = "its optimizer '" + name + "' is not one MirrorLab has (SGD, Adam, Nadam, RMSprop)";
        return std::nullopt;
    }
    result.follow_keras(EmbeddingUpdate::Keras3);  // a .keras file is Keras 3's
    // Keras keeps hyper-parameters in float32 and writes them back widened (0.0010000000474974513):
    // the shortest decimal that is the same float32 is what the user typed (0.001).
    auto number = [&](const char* key, double& field) {
        const Value* value = config != nullptr && config->is_object() ? config->find(key) : nullptr;
        if (value == nullptr || !value->is_number()) return;
        field = value->as_double();
        for (int digits = 6; digits <= 9; ++digits) {
            char text[32];
            std::snprintf(text, sizeof text, "%.*g", digits, field);
            const double shortest = std::strtod(text, nullptr);
            if (static_cast<float>(shortest) == static_cast<float>(field)) {
                field = shortest;
                break;
            }
        }
    };
    number("learning_rate", result.learning_rate);
    number("beta_1", result.beta_1);
    number("beta_2", result.beta_2);
    number("epsilon", result.epsilon);
    number("momentum", result.momentum);
    number("rho", result.rho);
    if (const Value* nesterov = config != nullptr && config->is_object() ? config->find("nesterov") : nullptr;
        nesterov != nullptr && nesterov->is_bool()) {
        result.nesterov = nesterov->as_bool();
    }
    try {
        result.validate();
    } catch (const ModelError& error) {
        note = std::string("its optimizer settings cannot be used: ") + error.what();
        return std::nullopt;
    }
    return result;
}

Model model_from_keras_config(std::string_view json_text, std::string_view source) {
    Value root;
    try {
        root = json::parse(json_text, source);
    } catch (const json::ParseError& error) {
        throw ModelError(std::string("cannot read the Keras model: ") + error.what());
    }
    // Model::from_json names unsupported layer types (all at once); settings it would ignore are
    // refused here, every one named, before anything is built.
    const Value* body = root.is_object() ? root.find("config") : nullptr;
    const Value* layers = body != nullptr && body->is_object() ? body->find("layers") : nullptr;
    std::string problems;
    for (std::size_t i = 0; layers != nullptr && layers->is_array() && i < layers->size(); ++i) {
        const Value& entry = (*layers)[i];
        const Value* config = entry.is_object() ? entry.find("config") : nullptr;
        if (config == nullptr || !config->is_object()) continue;
        const std::string settings = unsupported_settings(*config);
        if (settings.empty()) continue;
        const Value* name = config->find("name");
        problems += std::string(problems.empty() ? "" : "; ") + "layer " + std::to_string(i + 1) +
                    (name != nullptr && name->is_string() ? " '" + name->as_string() + "'" : std::string()) + ": " +
                    settings;
    }
    if (!problems.empty()) {
        throw ModelError(std::string(source) + ": settings MirrorLab does not support (only Keras' defaults are): " +
                         problems);
    }
    return Model::from_json(root, source);
}

}  // namespace mirrorlab
