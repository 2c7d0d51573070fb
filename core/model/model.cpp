#include "core/model/model.h"

#include <cstdio>
#include <map>
#include <set>

#include "core/layers/layer_type.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab {

extern const char* const kReferenceModelJson;  // generated from resources/presets (see core/CMakeLists.txt)

namespace {

// Sequence lengths beyond this are refused where they are read (16.7 M tokens per sample).
constexpr std::int64_t kMaxSequenceLength = std::int64_t{1} << 24;
// Every size computed from a model stays far from int64 overflow under this cap: weights,
// gradients and two optimizer slots of 2^40 parameters are 2^44 bytes (16 TiB).
constexpr std::int64_t kMaxParameters = std::int64_t{1} << 40;

LayerConfig parse_layer(const json::Value& entry, std::size_t index, std::string_view source) {
    const std::string where = std::string(source) + ": layer " + std::to_string(index + 1);
    if (!entry.is_object()) throw ModelError(where + " must be an object with \"class_name\" and \"config\"");
    const json::Value* class_name = entry.find("class_name");
    if (class_name == nullptr || !class_name->is_string()) {
        throw ModelError(where + " has no \"class_name\" (e.g. \"Conv1D\")");
    }
    const LayerType* type = find_layer_type(class_name->as_string());
    if (type == nullptr) {
        throw ModelError(where + ": layer type \"" + class_name->as_string() +
                         "\" is not supported; supported layers: " + supported_layers_text());
    }
    LayerConfig layer;
    layer.kind = type->kind;
    static const json::Value kEmpty = json::Value::object();
    const json::Value* config = entry.find("config");
    if (config == nullptr) config = &kEmpty;
    if (!config->is_object()) throw ModelError(where + ": \"config\" must be an object");
    if (const json::Value* name = config->find("name"); name != nullptr && name->is_string()) {
        layer.name = name->as_string();
    }
    const ConfigReader read(*config, where + " (" + class_name->as_string() +
                                         (layer.name.empty() ? "" : " '" + layer.name + "'") + ")");
    read_arguments(read, *type, layer);
    if (type->read != nullptr) type->read(read, class_name->as_string(), layer);
    return layer;
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

std::string summary_table(std::string_view model_name, const std::vector<SummaryRow>& rows) {
    // Keras 2's print_summary: line_length 65, columns ending at 29, 55 and 65; each cell is cut
    // to its column and the character before the next cell is always a space.
    auto row = [](const std::string (&fields)[3]) {
        const int positions[3] = {29, 55, 65};
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
    std::string out = "Model: \"" + std::string(model_name) + "\"\n" + thin + "\n";
    out += row({"Layer (type)", "Output Shape", "Param #"});
    out += thick + "\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        out += row({rows[i].layer, rows[i].output_shape, rows[i].params});
        out += (i + 1 == rows.size() ? thick : thin) + "\n";
    }
    if (rows.empty()) out += thick + "\n";
    return out;
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
        const std::string stem(config.kind == LayerKind::Invalid ? "layer" : layer_type(config.kind).name_stem);
        if (config.name.empty()) {
            int& count = used_stems[stem];
            config.name = count == 0 ? stem : stem + "_" + std::to_string(count);
            ++count;
        } else {
            used_stems[stem] += 0;
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
        ShapeInference inference{config, i, shape, info};
        auto fail = [&](const std::string& why) { inference.fail(why); };
        if (i == 0 && config.kind != LayerKind::Embedding) {
            fail("cannot come first: the model reads token ids, so it must start with an Embedding layer");
        }
        if (config.activation == ActivationKind::Softmax && i + 1 != configs.size()) {
            fail("uses softmax, which is only supported on the last layer (it is fused with the loss)");
        }
        if (config.kind == LayerKind::Invalid) fail("has no type");
        layer_type(config.kind).infer(inference);
        shape = inference.shape;
        info.output_shape = shape;
        // Checked: sizes come from files, and a wrapped count would allocate too little and write
        // past it. Shape::numel throws on int64 overflow; the cap keeps byte counts far from it.
        try {
            for (const auto& variable : info.variables) info.param_count += variable.shape.numel();
            if (shape.numel() > kMaxParameters) fail("outputs " + output_shape_text(shape) + " per sample, too large to hold");
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
        throw ModelError("the model's output is " + output_shape_text(last.output_shape) +
                         " per sample; end with Flatten, GlobalMaxPooling1D or GlobalAveragePooling1D and a Dense layer with one "
                         "unit per class");
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
        if (!layer_type(kind).inference_identity) break;
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
    // Every layer type the engine lacks, named in one message (a Keras model often has several).
    std::string unsupported;
    for (std::size_t i = 0; i < layers->size(); ++i) {
        const json::Value* cls = (*layers)[i].is_object() ? (*layers)[i].find("class_name") : nullptr;
        if (cls == nullptr || !cls->is_string() || cls->as_string() == "InputLayer" ||
            find_layer_type(cls->as_string()) != nullptr) {
            continue;
        }
        const json::Value* config = (*layers)[i].find("config");
        const json::Value* layer_name = config != nullptr && config->is_object() ? config->find("name") : nullptr;
        unsupported += (unsupported.empty() ? "" : ", ") + ("\"" + cls->as_string() + "\"") +
                       (layer_name != nullptr && layer_name->is_string() ? " '" + layer_name->as_string() + "'" : "") +
                       " (layer " + std::to_string(i + 1) + ")";
    }
    if (!unsupported.empty()) {
        throw ModelError(std::string(source) + ": layer types not supported by MirrorLab: " + unsupported +
                         "; supported layers: " + supported_layers_text());
    }
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
        write_arguments(c, layer_type(c.kind), config);
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
    std::vector<SummaryRow> rows;
    for (const LayerInfo& layer : layers_) {
        rows.push_back({layer.config.name + " (" + std::string(layer_class_name(layer.config.kind)) + ")",
                        output_shape_text(layer.output_shape), std::to_string(layer.param_count)});
    }
    const std::string thin(65, '_');
    return summary_table(name_, rows) + "Total params: " + format_thousands(total_params_) + "\n" +
           "Trainable params: " + format_thousands(total_params_) + "\n" + "Non-trainable params: 0\n" + thin + "\n";
}

}  // namespace mirrorlab
