#include "core/model/model.h"

#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "core/backend/cpu_reference.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab {

extern const char* const kReferenceModelJson;  // generated from resources/presets (see core/CMakeLists.txt)

std::string_view layer_class_name(LayerKind kind) {
    switch (kind) {
        case LayerKind::Embedding: return "Embedding";
        case LayerKind::Conv1D: return "Conv1D";
        case LayerKind::MaxPooling1D: return "MaxPooling1D";
        case LayerKind::GlobalMaxPooling1D: return "GlobalMaxPooling1D";
        case LayerKind::Flatten: return "Flatten";
        case LayerKind::Dense: return "Dense";
        case LayerKind::Dropout: return "Dropout";
        case LayerKind::Activation: return "Activation";
        case LayerKind::Invalid: break;
    }
    return "Invalid";
}

namespace {

// Sequence lengths beyond this are refused where they are read (16.7 M tokens per sample).
constexpr std::int64_t kMaxSequenceLength = std::int64_t{1} << 24;
// Every size computed from a model stays far from int64 overflow under this cap: weights,
// gradients and two optimizer slots of 2^40 parameters are 2^44 bytes (16 TiB).
constexpr std::int64_t kMaxParameters = std::int64_t{1} << 40;
constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

// Keras' default layer name stem for a class ("MaxPooling1D" -> "max_pooling1d").
std::string default_name_stem(LayerKind kind) {
    switch (kind) {
        case LayerKind::Embedding: return "embedding";
        case LayerKind::Conv1D: return "conv1d";
        case LayerKind::MaxPooling1D: return "max_pooling1d";
        case LayerKind::GlobalMaxPooling1D: return "global_max_pooling1d";
        case LayerKind::Flatten: return "flatten";
        case LayerKind::Dense: return "dense";
        case LayerKind::Dropout: return "dropout";
        case LayerKind::Activation: return "activation";
        case LayerKind::Invalid: break;
    }
    return "layer";
}

LayerKind layer_kind_from_class(std::string_view name) {
    if (name == "Embedding") return LayerKind::Embedding;
    if (name == "Conv1D" || name == "Convolution1D") return LayerKind::Conv1D;
    if (name == "MaxPooling1D" || name == "MaxPool1D") return LayerKind::MaxPooling1D;
    if (name == "GlobalMaxPooling1D" || name == "GlobalMaxPool1D") return LayerKind::GlobalMaxPooling1D;
    if (name == "Flatten") return LayerKind::Flatten;
    if (name == "Dense") return LayerKind::Dense;
    if (name == "Dropout") return LayerKind::Dropout;
    if (name == "Activation" || name == "ReLU") return LayerKind::Activation;
    return LayerKind::Invalid;
}

constexpr const char* kSupportedLayers =
    "Embedding, Conv1D, MaxPooling1D, GlobalMaxPooling1D, Flatten, Dense, Dropout, Activation, ReLU";

// Reads one layer's "config" object with messages that name the file, the layer and the key.
class ConfigReader {
public:
    ConfigReader(const json::Value& config, std::string prefix) : config_(config), prefix_(std::move(prefix)) {}

    // Fields are 32-bit in the engine (and token ids are int32): larger values are refused here
    // rather than wrapped later.
    std::int64_t positive_int(std::string_view key, std::int64_t fallback = -1, std::int64_t max = kMaxInt32) const {
        const json::Value* value = config_.find(key);
        if (value == nullptr || value->is_null()) {
            if (fallback >= 0) return fallback;
            fail("is missing '" + std::string(key) + "' (a positive integer)");
        }
        // Keras writes kernel_size, pool_size and strides as one-element lists.
        const json::Value* scalar = value;
        if (value->is_array() && value->size() == 1) scalar = &(*value)[0];
        if (!scalar->is_integer() || scalar->as_int64() <= 0) {
            fail("'" + std::string(key) + "' must be a positive integer, got " + json::dump(*value));
        }
        if (scalar->as_int64() > max) {
            fail("'" + std::string(key) + "' is " + std::to_string(scalar->as_int64()) + "; the largest supported is " +
                 std::to_string(max));
        }
        return scalar->as_int64();
    }

    std::string string(std::string_view key, std::string fallback) const {
        const json::Value* value = config_.find(key);
        if (value == nullptr || value->is_null()) return fallback;
        if (!value->is_string()) fail("'" + std::string(key) + "' must be a string, got " + json::dump(*value));
        return value->as_string();
    }

    bool boolean(std::string_view key, bool fallback) const {
        const json::Value* value = config_.find(key);
        if (value == nullptr || value->is_null()) return fallback;
        if (!value->is_bool()) fail("'" + std::string(key) + "' must be true or false, got " + json::dump(*value));
        return value->as_bool();
    }

    double number(std::string_view key, double fallback) const {
        const json::Value* value = config_.find(key);
        if (value == nullptr || value->is_null()) return fallback;
        if (!value->is_number()) fail("'" + std::string(key) + "' must be a number, got " + json::dump(*value));
        return value->as_double();
    }

    ActivationKind activation(std::string_view key, std::string fallback) const {
        const std::string name = string(key, std::move(fallback));
        const ActivationKind kind = activation_from_name(name);
        if (kind == ActivationKind::Invalid) {
            fail("activation '" + name + "' is not supported; use relu, linear, tanh, sigmoid or softmax");
        }
        return kind;
    }

    Padding padding() const {
        const std::string name = string("padding", "valid");
        if (name == "valid") return Padding::Valid;
        if (name == "same") return Padding::Same;
        fail("padding '" + name + "' is not supported; use 'valid' or 'same'");
    }

    [[noreturn]] void fail(const std::string& what) const { throw ModelError(prefix_ + " " + what); }

private:
    const json::Value& config_;
    std::string prefix_;
};

LayerConfig parse_layer(const json::Value& entry, std::size_t index, std::string_view source) {
    const std::string where = std::string(source) + ": layer " + std::to_string(index + 1);
    if (!entry.is_object()) throw ModelError(where + " must be an object with \"class_name\" and \"config\"");
    const json::Value* class_name = entry.find("class_name");
    if (class_name == nullptr || !class_name->is_string()) {
        throw ModelError(where + " has no \"class_name\" (e.g. \"Conv1D\")");
    }
    LayerConfig layer;
    layer.kind = layer_kind_from_class(class_name->as_string());
    if (layer.kind == LayerKind::Invalid) {
        throw ModelError(where + ": layer type \"" + class_name->as_string() +
                         "\" is not supported; supported layers: " + kSupportedLayers);
    }
    static const json::Value kEmpty = json::Value::object();
    const json::Value* config = entry.find("config");
    if (config == nullptr) config = &kEmpty;
    if (!config->is_object()) throw ModelError(where + ": \"config\" must be an object");
    if (const json::Value* name = config->find("name"); name != nullptr && name->is_string()) {
        layer.name = name->as_string();
    }
    const ConfigReader read(*config, where + " (" + class_name->as_string() +
                                         (layer.name.empty() ? "" : " '" + layer.name + "'") + ")");
    switch (layer.kind) {
        case LayerKind::Embedding:
            layer.input_dim = read.positive_int("input_dim");
            layer.output_dim = read.positive_int("output_dim");
            break;
        case LayerKind::Conv1D:
            layer.filters = static_cast<std::int32_t>(read.positive_int("filters"));
            layer.kernel_size = static_cast<std::int32_t>(read.positive_int("kernel_size"));
            if (read.positive_int("strides", 1) != 1) read.fail("strides other than 1 are not supported");
            if (read.positive_int("dilation_rate", 1) != 1) read.fail("dilation_rate other than 1 is not supported");
            layer.padding = read.padding();
            layer.activation = read.activation("activation", "linear");
            layer.use_bias = read.boolean("use_bias", true);
            break;
        case LayerKind::MaxPooling1D:
            layer.pool_size = static_cast<std::int32_t>(read.positive_int("pool_size", 2));
            layer.strides = static_cast<std::int32_t>(read.positive_int("strides", layer.pool_size));
            layer.padding = read.padding();
            break;
        case LayerKind::Dense:
            layer.units = static_cast<std::int32_t>(read.positive_int("units"));
            layer.activation = read.activation("activation", "linear");
            layer.use_bias = read.boolean("use_bias", true);
            break;
        case LayerKind::Dropout:
            layer.rate = read.number("rate", 0.5);
            if (!(layer.rate >= 0.0 && layer.rate < 1.0)) read.fail("'rate' must be in [0, 1)");
            break;
        case LayerKind::Activation:
            layer.activation = class_name->as_string() == "ReLU" ? ActivationKind::ReLU
                                                                 : read.activation("activation", "");
            break;
        case LayerKind::GlobalMaxPooling1D:
        case LayerKind::Flatten:
        case LayerKind::Invalid:
            break;
    }
    return layer;
}

std::string shape_text(const Shape& shape) {
    std::string text = "(None";
    for (auto dim : shape.dims()) text += ", " + std::to_string(dim);
    return text + ")";
}

}  // namespace

std::string format_thousands(std::int64_t value) {
    std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

Model::Model(std::string name, std::int32_t input_length, std::vector<LayerConfig> configs)
    : name_(std::move(name)), input_length_(input_length) {
    if (name_.empty()) name_ = "sequential";
    if (input_length_ <= 0 || input_length_ > kMaxSequenceLength) {
        throw ModelError("model '" + name_ + "': input_length must be a sequence length between 1 and " +
                         std::to_string(kMaxSequenceLength) + ", got " + std::to_string(input_length_));
    }
    if (configs.empty()) throw ModelError("model '" + name_ + "' has no layers; start with an Embedding layer");

    // Keras' automatic names: the first conv is "conv1d", the second "conv1d_1", ...
    std::map<std::string, int> used_stems;
    std::set<std::string> names;
    for (auto& config : configs) {
        if (config.name.empty()) {
            const std::string stem = default_name_stem(config.kind);
            int& count = used_stems[stem];
            config.name = count == 0 ? stem : stem + "_" + std::to_string(count);
            ++count;
        } else {
            used_stems[default_name_stem(config.kind)] += 0;
        }
        if (!names.insert(config.name).second) {
            throw ModelError("model '" + name_ + "': two layers are named '" + config.name +
                             "'; layer names must be unique");
        }
    }

    Shape shape{input_length_};  // token ids
    for (std::size_t i = 0; i < configs.size(); ++i) {
        const LayerConfig& config = configs[i];
        LayerInfo info;
        info.config = config;
        info.input_shape = shape;
        const std::string where = "layer '" + config.name + "' (" + std::string(layer_class_name(config.kind)) + ")";
        auto fail = [&](const std::string& why) { throw ModelError(where + " " + why); };
        if (i == 0 && config.kind != LayerKind::Embedding) {
            fail("cannot come first: the model reads token ids, so it must start with an Embedding layer");
        }
        if (config.activation == ActivationKind::Softmax && i + 1 != configs.size()) {
            fail("uses softmax, which is only supported on the last layer (it is fused with the loss)");
        }
        switch (config.kind) {
            case LayerKind::Embedding:
                if (i != 0) fail("must be the first layer (it turns token ids into vectors)");
                shape = Shape{input_length_, config.output_dim};
                info.variables.push_back({config.name + "/embeddings", Shape{config.input_dim, config.output_dim},
                                          Initializer::EmbeddingUniform, config.input_dim, config.output_dim});
                break;
            case LayerKind::Conv1D: {
                if (shape.rank() != 2) fail("needs a sequence input (steps, channels), got " + shape_text(shape));
                const bool same = config.padding == Padding::Same;
                const std::int64_t out_length = conv_output_length(shape[0], config.kernel_size, 1, same);
                if (out_length <= 0) {
                    fail("has kernel_size " + std::to_string(config.kernel_size) + " but its input has only " +
                         std::to_string(shape[0]) +
                         " steps; use a shorter kernel, padding 'same', or less pooling before it");
                }
                info.pad_left = same ? same_pad_left(shape[0], config.kernel_size, 1) : 0;
                const std::int64_t channels = shape[1];
                info.variables.push_back({config.name + "/kernel", Shape{config.kernel_size, channels, config.filters},
                                          Initializer::GlorotUniform, config.kernel_size * channels,
                                          std::int64_t{config.kernel_size} * config.filters});
                if (config.use_bias) {
                    info.variables.push_back({config.name + "/bias", Shape{config.filters}, Initializer::Zeros, 0, 0});
                }
                shape = Shape{out_length, config.filters};
                break;
            }
            case LayerKind::MaxPooling1D: {
                if (shape.rank() != 2) fail("needs a sequence input (steps, channels), got " + shape_text(shape));
                const bool same = config.padding == Padding::Same;
                const std::int32_t stride = config.strides > 0 ? config.strides : config.pool_size;
                const std::int64_t out_length = conv_output_length(shape[0], config.pool_size, stride, same);
                if (out_length <= 0) {
                    fail("has pool_size " + std::to_string(config.pool_size) + " but its input has only " +
                         std::to_string(shape[0]) + " steps; use a smaller pool or padding 'same'");
                }
                info.pad_left = same ? same_pad_left(shape[0], config.pool_size, stride) : 0;
                shape = Shape{out_length, shape[1]};
                break;
            }
            case LayerKind::GlobalMaxPooling1D:
                if (shape.rank() != 2) fail("needs a sequence input (steps, channels), got " + shape_text(shape));
                shape = Shape{shape[1]};
                break;
            case LayerKind::Flatten:
                shape = Shape{shape.numel()};
                break;
            case LayerKind::Dense:
                if (shape.rank() != 1) {
                    fail("receives " + shape_text(shape) +
                         "; put a Flatten or GlobalMaxPooling1D layer before it to get one vector per sample");
                }
                info.variables.push_back({config.name + "/kernel", Shape{shape[0], config.units},
                                          Initializer::GlorotUniform, shape[0], config.units});
                if (config.use_bias) {
                    info.variables.push_back({config.name + "/bias", Shape{config.units}, Initializer::Zeros, 0, 0});
                }
                shape = Shape{config.units};
                break;
            case LayerKind::Dropout:
            case LayerKind::Activation:
                break;
            case LayerKind::Invalid:
                fail("has no type");
        }
        info.output_shape = shape;
        // Checked: sizes come from files, and a wrapped count would allocate too little and write
        // past it. Shape::numel throws on int64 overflow; the cap keeps byte counts far from it.
        try {
            for (const auto& variable : info.variables) info.param_count += variable.shape.numel();
            if (shape.numel() > kMaxParameters) fail("outputs " + shape_text(shape) + " per sample, too large to hold");
        } catch (const OpError&) {
            fail("would have more parameters than can be counted; reduce its sizes");
        }
        if (info.param_count > kMaxParameters || total_params_ + info.param_count > kMaxParameters) {
            fail("brings the model to more than " + format_thousands(kMaxParameters) +
                 " parameters (16 TiB of weights, gradients and slots); reduce its sizes");
        }
        total_params_ += info.param_count;
        layers_.push_back(std::move(info));
    }

    const LayerInfo& last = layers_.back();
    if (last.output_shape.rank() != 1) {
        throw ModelError("the model's output is " + shape_text(last.output_shape) +
                         " per sample; end with Flatten or GlobalMaxPooling1D and a Dense layer with one unit per class");
    }
    bool has_dense = false;
    for (const auto& layer : layers_) has_dense = has_dense || layer.config.kind == LayerKind::Dense;
    if (!has_dense) throw ModelError("the model has no Dense layer; end with Dense(units = number of classes)");
    num_classes_ = static_cast<std::int32_t>(last.output_shape[0]);
    if (num_classes_ < 2) {
        throw ModelError("the last layer has " + std::to_string(num_classes_) +
                         " unit; a classifier needs one unit per class (at least 2)");
    }
}

std::int64_t Model::vocabulary_size() const { return layers_.front().config.input_dim; }

ActivationKind Model::output_activation() const {
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
        const auto kind = it->config.kind;
        if (kind == LayerKind::Dense || kind == LayerKind::Activation) return it->config.activation;
        if (kind != LayerKind::Dropout) break;
    }
    return ActivationKind::Linear;
}

std::vector<VariableInfo> Model::variables() const {
    std::vector<VariableInfo> all;
    for (const auto& layer : layers_) all.insert(all.end(), layer.variables.begin(), layer.variables.end());
    return all;
}

Model Model::with_input_length(std::int32_t input_length) const {
    std::vector<LayerConfig> configs;
    for (const auto& layer : layers_) configs.push_back(layer.config);
    return Model(name_, input_length, std::move(configs));
}

Model Model::from_json(const json::Value& root, std::string_view source) {
    if (!root.is_object()) throw ModelError(std::string(source) + ": a model must be a JSON object");
    const json::Value* body = &root;
    std::int32_t input_length = 0;
    // Keras' model.to_json(): {"class_name": "Sequential", "config": {"name", "layers": [...]}}
    if (const json::Value* cls = root.find("class_name"); cls != nullptr && cls->is_string()) {
        if (cls->as_string() != "Sequential") {
            throw ModelError(std::string(source) + ": only Sequential models are supported, got \"" +
                             cls->as_string() + "\"");
        }
        body = root.find("config");
        if (body == nullptr || !body->is_object()) throw ModelError(std::string(source) + ": Sequential has no \"config\"");
    }
    const json::Value* layers = body->find("layers");
    if (layers == nullptr || !layers->is_array()) {
        throw ModelError(std::string(source) + ": a model needs a \"layers\" list");
    }
    std::string name = "sequential";
    if (const json::Value* n = body->find("name"); n != nullptr && n->is_string()) name = n->as_string();
    // Every place a sequence length is read is checked the same way before it narrows to int32.
    auto sequence_length = [&](const json::Value& value, std::string_view key) {
        if (!value.is_integer() || value.as_int64() <= 0 || value.as_int64() > kMaxSequenceLength) {
            throw ModelError(std::string(source) + ": \"" + std::string(key) + "\" must give a sequence length between 1 and " +
                             std::to_string(kMaxSequenceLength) + ", got " + json::dump(value));
        }
        return static_cast<std::int32_t>(value.as_int64());
    };
    if (const json::Value* len = root.find("input_length"); len != nullptr) input_length = sequence_length(*len, "input_length");
    std::vector<LayerConfig> configs;
    for (std::size_t i = 0; i < layers->size(); ++i) {
        const json::Value& entry = (*layers)[i];
        // Keras input shapes: an InputLayer entry, or batch_input_shape / input_length on the first layer.
        const json::Value* config = entry.is_object() ? entry.find("config") : nullptr;
        if (config != nullptr && config->is_object()) {
            for (const char* key : {"batch_input_shape", "batch_shape"}) {
                const json::Value* shape = config->find(key);
                if (input_length == 0 && shape != nullptr && shape->is_array() && shape->size() == 2 &&
                    (*shape)[1].is_integer()) {
                    input_length = sequence_length((*shape)[1], key);
                }
            }
            const json::Value* keras_length = config->find("input_length");
            if (input_length == 0 && keras_length != nullptr && keras_length->is_integer()) {
                input_length = sequence_length(*keras_length, "input_length");
            }
        }
        const json::Value* cls = entry.is_object() ? entry.find("class_name") : nullptr;
        if (cls != nullptr && cls->is_string() && cls->as_string() == "InputLayer") continue;
        configs.push_back(parse_layer(entry, i, source));
    }
    if (input_length == 0) {
        throw ModelError(std::string(source) + ": the sequence length is unknown; add \"input_length\": 300 (tokens per sample)");
    }
    try {
        return Model(std::move(name), input_length, std::move(configs));
    } catch (const ModelError& error) {
        throw ModelError(std::string(source) + ": " + error.what());
    }
}

Model Model::from_json_text(std::string_view text, std::string_view source) {
    json::Value value;
    try {
        value = json::parse(text, source);
    } catch (const json::ParseError& error) {
        throw ModelError(std::string("cannot read the model: ") + error.what());
    }
    return from_json(value, source);
}

Model Model::from_json_file(const std::string& path) {
    json::Value value;
    try {
        value = json::parse_file(path);
    } catch (const Error& error) {
        throw ModelError(std::string("cannot read the model: ") + error.what());
    }
    return from_json(value, path);
}

Model Model::reference() { return from_json_text(kReferenceModelJson, "preset reuters_tutorial"); }

json::Value Model::to_json() const {
    json::Value root = json::Value::object();
    root.set("name", name_);
    root.set("input_length", std::int64_t{input_length_});
    json::Value layers = json::Value::array();
    for (const auto& layer : layers_) {
        const LayerConfig& c = layer.config;
        json::Value config = json::Value::object();
        config.set("name", c.name);
        switch (c.kind) {
            case LayerKind::Embedding:
                config.set("input_dim", c.input_dim);
                config.set("output_dim", c.output_dim);
                break;
            case LayerKind::Conv1D:
                config.set("filters", std::int64_t{c.filters});
                config.set("kernel_size", std::int64_t{c.kernel_size});
                config.set("padding", c.padding == Padding::Same ? "same" : "valid");
                config.set("activation", std::string(activation_name(c.activation)));
                if (!c.use_bias) config.set("use_bias", false);
                break;
            case LayerKind::MaxPooling1D:
                config.set("pool_size", std::int64_t{c.pool_size});
                if (c.strides > 0 && c.strides != c.pool_size) config.set("strides", std::int64_t{c.strides});
                if (c.padding == Padding::Same) config.set("padding", "same");
                break;
            case LayerKind::Dense:
                config.set("units", std::int64_t{c.units});
                config.set("activation", std::string(activation_name(c.activation)));
                if (!c.use_bias) config.set("use_bias", false);
                break;
            case LayerKind::Dropout:
                config.set("rate", c.rate);
                break;
            case LayerKind::Activation:
                config.set("activation", std::string(activation_name(c.activation)));
                break;
            case LayerKind::GlobalMaxPooling1D:
            case LayerKind::Flatten:
            case LayerKind::Invalid:
                break;
        }
        json::Value entry = json::Value::object();
        entry.set("class_name", std::string(layer_class_name(c.kind)));
        entry.set("config", std::move(config));
        layers.push_back(std::move(entry));
    }
    root.set("layers", std::move(layers));
    return root;
}

std::string Model::to_json_text() const { return json::dump(to_json(), 2) + "\n"; }

std::string Model::summary() const {
    // Keras 2's print_summary: line_length 65, columns ending at 29, 55 and 65; each cell is cut
    // to its column and the character before the next cell is always a space.
    const int positions[3] = {29, 55, 65};
    auto row = [&](const std::string (&fields)[3]) {
        std::string line;
        for (int i = 0; i < 3; ++i) {
            if (i > 0) line = line.substr(0, line.size() - 1) + " ";
            line += fields[i];
            if (static_cast<int>(line.size()) > positions[i]) line.resize(static_cast<std::size_t>(positions[i]));
            line.append(static_cast<std::size_t>(positions[i]) - line.size(), ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        return line + "\n";
    };
    const std::string thin(65, '_'), thick(65, '=');
    std::string out = "Model: \"" + name_ + "\"\n" + thin + "\n";
    out += row({"Layer (type)", "Output Shape", "Param #"});
    out += thick + "\n";
    for (std::size_t i = 0; i < layers_.size(); ++i) {
        const LayerInfo& layer = layers_[i];
        const std::string type = layer.config.name + " (" + std::string(layer_class_name(layer.config.kind)) + ")";
        Shape shown = layer.output_shape;
        out += row({type, shape_text(shown), std::to_string(layer.param_count)});
        out += (i + 1 == layers_.size() ? thick : thin) + "\n";
    }
    out += "Total params: " + format_thousands(total_params_) + "\n";
    out += "Trainable params: " + format_thousands(total_params_) + "\n";
    out += "Non-trainable params: 0\n";
    out += thin + "\n";
    return out;
}

}  // namespace mirrorlab
