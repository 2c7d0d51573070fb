#include <algorithm>
#include <limits>
#include <vector>

#include "core/layers/layer_type.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab {

#define MIRRORLAB_DECLARE_LAYER(Name) extern const LayerType k##Name##Layer;
MIRRORLAB_LAYER_TYPES(MIRRORLAB_DECLARE_LAYER)
#undef MIRRORLAB_DECLARE_LAYER

namespace {

constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

#define MIRRORLAB_LAYER_ENTRY(Name) &k##Name##Layer,
const LayerType* const kLayerTypes[] = {MIRRORLAB_LAYER_TYPES(MIRRORLAB_LAYER_ENTRY)};
#undef MIRRORLAB_LAYER_ENTRY

}  // namespace

std::span<const LayerType* const> layer_types() { return kLayerTypes; }

const LayerType& layer_type(LayerKind kind) {
    const auto index = static_cast<std::size_t>(kind) - 1;
    if (kind == LayerKind::Invalid || index >= std::size(kLayerTypes)) throw ModelError("a layer has no type");
    const LayerType& type = *kLayerTypes[index];
    // A descriptor filed under another kind would mix up every layer after it.
    if (type.kind != kind) throw ModelError("layer registry: " + std::string(type.class_name) + " is out of place");
    return type;
}

std::string_view layer_class_name(LayerKind kind) {
    return kind == LayerKind::Invalid ? "Invalid" : layer_type(kind).class_name;
}

const LayerType* find_layer_type(std::string_view class_name) {
    for (const LayerType* type : kLayerTypes) {
        if (type->class_name == class_name) return type;
        for (const LayerAlias& alias : type->aliases) {
            if (alias.class_name == class_name) return type;
        }
    }
    return nullptr;
}

const OpDef* find_op(std::string_view name) {
    for (const LayerType* type : kLayerTypes) {
        for (const OpDef* op : type->ops) {
            if (op->name == name) return op;
        }
    }
    return nullptr;
}

std::string supported_layers_text() {
    std::string text;
    for (const LayerType* type : kLayerTypes) {
        text += (text.empty() ? "" : ", ") + std::string(type->class_name);
        for (const LayerAlias& alias : type->aliases) {
            if (alias.own_class) text += ", " + std::string(alias.class_name);
        }
    }
    return text;
}

LayerConfig default_layer_config(LayerKind kind, std::string name) {
    const LayerType& type = layer_type(kind);
    LayerConfig config;
    config.kind = kind;
    config.name = std::move(name);
    for (const LayerArgument& argument : type.arguments) argument.spec->set(config, argument.form_default);
    return config;
}

// ---------------------------------------------------------------------------------------------
// JSON

std::int64_t ConfigReader::positive_int(std::string_view key, std::int64_t fallback) const {
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
    if (scalar->as_int64() > kMaxInt32) {
        fail("'" + std::string(key) + "' is " + std::to_string(scalar->as_int64()) + "; the largest supported is " +
             std::to_string(kMaxInt32));
    }
    return scalar->as_int64();
}

std::string ConfigReader::string(std::string_view key, std::string fallback) const {
    const json::Value* value = config_.find(key);
    if (value == nullptr || value->is_null()) return fallback;
    if (!value->is_string()) fail("'" + std::string(key) + "' must be a string, got " + json::dump(*value));
    return value->as_string();
}

bool ConfigReader::boolean(std::string_view key, bool fallback) const {
    const json::Value* value = config_.find(key);
    if (value == nullptr || value->is_null()) return fallback;
    if (!value->is_bool()) fail("'" + std::string(key) + "' must be true or false, got " + json::dump(*value));
    return value->as_bool();
}

double ConfigReader::number(std::string_view key, double fallback) const {
    const json::Value* value = config_.find(key);
    if (value == nullptr || value->is_null()) return fallback;
    if (!value->is_number()) fail("'" + std::string(key) + "' must be a number, got " + json::dump(*value));
    return value->as_double();
}

ActivationKind ConfigReader::activation(std::string_view key, std::string fallback) const {
    const std::string name = string(key, std::move(fallback));
    const ActivationKind kind = activation_from_name(name);
    if (kind == ActivationKind::Invalid) {
        fail("activation '" + name + "' is not supported; use relu, linear, tanh, sigmoid or softmax");
    }
    return kind;
}

Padding ConfigReader::padding(std::string_view key, Padding fallback) const {
    const std::string name = string(key, fallback == Padding::Same ? "same" : "valid");
    if (name == "valid") return Padding::Valid;
    if (name == "same") return Padding::Same;
    fail("padding '" + name + "' is not supported; use 'valid' or 'same'");
}

bool ConfigReader::has(std::string_view key) const {
    const json::Value* value = config_.find(key);
    return value != nullptr && !value->is_null();
}

std::vector<std::string> ConfigReader::keys() const {
    std::vector<std::string> names;
    if (!config_.is_object()) return names;
    for (const auto& [key, value] : config_.as_object()) names.push_back(key);
    return names;
}

void ConfigReader::fail(const std::string& what) const { throw ModelError(prefix_ + " " + what); }

namespace {

// Levenshtein distance: how many letters to insert, delete or change to turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// Keras writes many arguments MirrorLab does not use (initializers, regularizers, dtype, ...), so an
// unknown key is no error. One a letter or two from an argument MirrorLab reads is a misspelling
// ("activaton"): reading on would train the default (a linear output) without a word.
void refuse_misspelt_arguments(const ConfigReader& read, const LayerType& type) {
    for (const std::string& key : read.keys()) {
        const auto is_key = [&](const LayerArgument& argument) { return key == argument.spec->key; };
        if (std::any_of(type.arguments.begin(), type.arguments.end(), is_key)) continue;
        for (const LayerArgument& argument : type.arguments) {
            const std::string_view known = argument.spec->key;
            const std::size_t distance = edit_distance(key, known);
            if (distance > 0 && distance <= 2 && distance * 4 <= known.size()) {
                read.fail("has '" + key + "', which is not an argument of " + std::string(type.class_name) + ": did you mean '" +
                          std::string(known) + "'?");
            }
        }
    }
}

}  // namespace

void read_arguments(const ConfigReader& read, const LayerType& type, LayerConfig& config) {
    refuse_misspelt_arguments(read, type);
    for (const LayerArgument& argument : type.arguments) {
        const ArgumentSpec& spec = *argument.spec;
        const bool required = !argument.keras_default.has_value();
        const double fallback = argument.keras_default.value_or(0.0);
        double value = 0.0;
        switch (spec.type) {
            case ArgumentType::Integer:
                value = static_cast<double>(
                    read.positive_int(spec.key, required ? -1 : static_cast<std::int64_t>(fallback)));
                break;
            case ArgumentType::Rate:
                if (required && !read.has(spec.key)) {
                    read.fail("is missing '" + std::string(spec.key) + "' (a number in [0, 1))");
                }
                value = read.number(spec.key, fallback);
                if (!(value >= 0.0 && value < 1.0)) read.fail("'" + std::string(spec.key) + "' must be in [0, 1)");
                break;
            case ArgumentType::Boolean:
                value = read.boolean(spec.key, fallback != 0.0) ? 1.0 : 0.0;
                break;
            case ArgumentType::Padding:
                value = static_cast<double>(read.padding(spec.key, static_cast<Padding>(fallback)));
                break;
            case ArgumentType::Activation:
                value = static_cast<double>(
                    read.activation(spec.key, std::string(activation_name(static_cast<ActivationKind>(fallback)))));
                break;
            case ArgumentType::Invalid:
                break;
        }
        spec.set(config, value);
    }
}

void write_arguments(const LayerConfig& config, const LayerType& type, json::Value& out) {
    for (const LayerArgument& argument : type.arguments) {
        const ArgumentSpec& spec = *argument.spec;
        const double value = spec.get(config);
        if (!argument.written_at_default && argument.keras_default == value) continue;
        const std::string key(spec.key);
        switch (spec.type) {
            case ArgumentType::Integer: out.set(key, static_cast<std::int64_t>(value)); break;
            case ArgumentType::Rate: out.set(key, value); break;
            case ArgumentType::Boolean: out.set(key, value != 0.0); break;
            case ArgumentType::Padding:
                out.set(key, static_cast<Padding>(value) == Padding::Same ? "same" : "valid");
                break;
            case ArgumentType::Activation:
                out.set(key, std::string(activation_name(static_cast<ActivationKind>(value))));
                break;
            case ArgumentType::Invalid: break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shapes

void ShapeInference::fail(const std::string& why) const {
    throw ModelError("layer '" + config.name + "' (" + std::string(layer_class_name(config.kind)) + ") " + why);
}

void ShapeInference::require_sequence() const {
    if (shape.rank() != 2) fail("needs a sequence input (steps, channels), got " + output_shape_text(shape));
}

std::string output_shape_text(const Shape& shape) {
    std::string text = "(None";
    for (auto dim : shape.dims()) text += ", " + std::to_string(dim);
    return text + ")";
}

}  // namespace mirrorlab
