// .keras archives and .weights.h5 files (keras_file.h says what they hold).
#include "core/export/keras_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/data/zip_reader.h"
#include "core/export/hdf5_file.h"
#include "core/export/zip_writer.h"
#include "core/util/error.h"
#include "core/util/file.h"
#include "core/util/time_text.h"

namespace mirrorlab {

namespace {

constexpr const char* kMetadataMember = "metadata.json";
constexpr const char* kConfigMember = "config.json";
constexpr const char* kWeightsMember = "model.weights.h5";
constexpr std::size_t kMaxCompressionRatio = 1032;

std::string variable_path(const LayerInfo& layer, std::size_t index) {
    return "layers/" + layer.config.name + "/vars/" + std::to_string(index);
}

std::size_t weight_count(const Model& model) {
    std::size_t count = 0;
    for (const VariableInfo& variable : model.variables()) count += static_cast<std::size_t>(variable.shape.numel());
    return count;
}

std::vector<std::int64_t> dims(const Shape& shape) { return {shape.dims().begin(), shape.dims().end()}; }

// Keras' own: local time, "2026-12-02@03:13:50".
std::string date_saved() { return now_text("%Y-%m-%d@%H:%M:%S", TimeZone::Local); }

std::string text_of(const std::vector<std::uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

// The bytes where they are, for writing: a copy of a large model's file would double the memory
// an export needs.
std::string_view bytes_view(const std::vector<std::uint8_t>& bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Keras 3's optimizer variables in the order its optimizer.variables lists them (read off files
// Keras 3.15 saved after fit()): iteration, learning_rate, then
//   SGD with momentum  a momentum per model variable
//   Adam               per model variable: momentum, velocity (amsgrad is never on)
//   Nadam              per model variable: momentum, velocity; then u_product (a float scalar)
//   RMSprop            a velocity per model variable, then (with momentum) a momentum per one
// Each of these is one of our slots (core/optim/optimizer.h): the same quantity, updated by the same
// formula, so Keras goes on from them as MirrorLab would.
void write_optimizer_variables(hdf5::FileWriter& file, const Model& model, const OptimizerConfig& optimizer,
                               const KerasOptimizerState& state) {
    const std::size_t total = weight_count(model);
    const OptimizerSlots needed = slots_needed(optimizer.kind, optimizer.momentum > 0.0);
    // An optimizer that keeps no slots (SGD without momentum) holds one unused number in a
    // checkpoint (core/store/checkpoint.cpp): nothing to write then.
    const bool unused_number = needed.count() == 0 && state.slot_values.size() == 1;
    if (state.slot_values.size() != total * static_cast<std::size_t>(needed.count()) && !unused_number) {
        throw DataError("[keras] the optimizer state holds " + std::to_string(state.slot_values.size()) + " values; " +
                        std::string(optimizer_name(optimizer.kind)) + " on model '" + model.name() + "' has " +
                        std::to_string(total * static_cast<std::size_t>(needed.count())) + " (" +
                        std::to_string(needed.count()) + " per weight)");
    }
    std::size_t next = 0;
    auto write_slot = [&](int slot, const VariableInfo& variable, std::size_t offset) {
        const auto count = static_cast<std::size_t>(variable.shape.numel());
        file.dataset("optimizer/vars/" + std::to_string(next++), dims(variable.shape),
                     state.slot_values.subspan(static_cast<std::size_t>(slot) * total + offset, count));
    };
    file.scalar("optimizer/vars/" + std::to_string(next++), state.iterations);
    file.scalar("optimizer/vars/" + std::to_string(next++), static_cast<float>(optimizer.learning_rate));
    const bool interleaved = optimizer.kind == OptimizerKind::Adam || optimizer.kind == OptimizerKind::Nadam;
    for (int pass = 0; pass < (interleaved ? 1 : needed.count()); ++pass) {
        std::size_t offset = 0;
        for (const VariableInfo& variable : model.variables()) {
            if (interleaved) {
                write_slot(0, variable, offset);
                write_slot(1, variable, offset);
            } else {
                write_slot(pass, variable, offset);
            }
            offset += static_cast<std::size_t>(variable.shape.numel());
        }
    }
    if (optimizer.kind == OptimizerKind::Nadam) {
        file.scalar("optimizer/vars/" + std::to_string(next++), static_cast<float>(state.nadam_u_product));
    }
}

}  // namespace

KerasOptimizerState keras_optimizer_state(const TrainingState& state) {
    return {state.optimizer_state.iterations, state.optimizer_slots, state.optimizer_state.nadam_u_product};
}

std::vector<std::uint8_t> keras_weights_h5(const Model& model, std::span<const float> weights,
                                           const OptimizerConfig& optimizer, const KerasOptimizerState* state) {
    if (weights.size() != weight_count(model)) {
        throw DataError("[keras] model '" + model.name() + "' has " + std::to_string(weight_count(model)) +
                        " weights, given " + std::to_string(weights.size()));
    }
    hdf5::FileWriter file;
    file.group("layers");
    std::size_t offset = 0;
    for (const LayerInfo& layer : model.layers()) {
        const std::string group = "layers/" + layer.config.name;
        file.group(group);
        file.group(group + "/vars");
        file.string_attribute(group + "/vars", "name", layer.config.name);
        for (std::size_t i = 0; i < layer.variables.size(); ++i) {
            const auto count = static_cast<std::size_t>(layer.variables[i].shape.numel());
            file.dataset(variable_path(layer, i), dims(layer.variables[i].shape), weights.subspan(offset, count));
            offset += count;
        }
    }
    file.group("optimizer");
    file.group("optimizer/vars");
    file.string_attribute("optimizer/vars", "name", keras_optimizer_name(optimizer.kind));
    if (state != nullptr) {
        write_optimizer_variables(file, model, optimizer, *state);
    } else {
        // What a compiled Keras model whose optimizer has not run yet holds: iterations, learning rate.
        file.scalar("optimizer/vars/0", std::int64_t{0});
        file.scalar("optimizer/vars/1", static_cast<float>(optimizer.learning_rate));
    }
    file.group("vars");
    file.string_attribute("vars", "name", model.name());
    return file.finish();
}

std::vector<std::uint8_t> keras_archive(const Model& model, std::span<const float> weights,
                                        const OptimizerConfig& optimizer, const KerasOptimizerState* state) {
    json::Value metadata = json::Value::object();
    metadata.set("keras_version", kKerasFormatVersion);
    metadata.set("date_saved", date_saved());
    metadata.set("exported_by", std::string("MirrorLab ") + MIRRORLAB_VERSION);
    const std::vector<std::uint8_t> h5 = keras_weights_h5(model, weights, optimizer, state);
    const std::string metadata_text = json::dump(metadata);
    const std::string config_text = json::dump(keras_config(model, optimizer));
    return write_stored_zip({{kMetadataMember, metadata_text}, {kConfigMember, config_text}, {kWeightsMember, bytes_view(h5)}});
}

void save_keras_file(const std::string& path, const Model& model, std::span<const float> weights,
                     const OptimizerConfig& optimizer, const KerasOptimizerState* state) {
    write_file_atomically(path, bytes_view(keras_archive(model, weights, optimizer, state)), "the Keras model");
}

void save_keras_weights_file(const std::string& path, const Model& model, std::span<const float> weights,
                             const OptimizerConfig& optimizer, const KerasOptimizerState* state) {
    write_file_atomically(path, bytes_view(keras_weights_h5(model, weights, optimizer, state)), "the Keras weights");
}

std::vector<float> keras_weights_from_h5(std::vector<std::uint8_t> bytes, const Model& model,
                                         const std::string& source) {
    // Nothing is allocated for weights the file cannot hold: HDF5's deflate, like zlib's, packs at
    // most ~1032 bytes into one, and a dataset never written reads as zeros from no bytes at all.
    const std::size_t count = weight_count(model);
    if (count / kMaxCompressionRatio / sizeof(float) > bytes.size()) {
        throw DataError(source + " is " + std::to_string(bytes.size()) + " bytes, too small to hold the " +
                        format_thousands(static_cast<std::int64_t>(count)) + " weights of model '" + model.name() +
                        "': it was saved from another model");
    }
    const hdf5::FileReader file(std::move(bytes), source);
    std::vector<float> weights;
    weights.reserve(count);
    for (const LayerInfo& layer : model.layers()) {
        for (std::size_t i = 0; i < layer.variables.size(); ++i) {
            const std::string path = variable_path(layer, i);
            if (file.find(path) == nullptr) {
                throw DataError(source + " has no weight '" + path + "' (" + layer.variables[i].name +
                                "): it was not saved from this model");
            }
            const std::vector<float> values = file.read_floats(path, dims(layer.variables[i].shape));
            // A NaN or infinite weight answered every evaluation with "loss: nan" without naming it.
            const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
            if (bad != values.end()) {
                throw DataError(source + ": weight '" + path + "' (" + layer.variables[i].name + " of layer '" + layer.config.name +
                                "') holds " + (std::isnan(*bad) ? "NaN" : "an infinite value") + " at element " +
                                std::to_string(bad - values.begin()) +
                                ": the model it was saved from had diverged; save it again from a model whose loss was finite");
            }
            weights.insert(weights.end(), values.begin(), values.end());
        }
        // A weight beyond the model's (a layer with a bias where ours has none) means another model.
        const std::string extra = variable_path(layer, layer.variables.size());
        if (file.find(extra) != nullptr) {
            throw DataError(source + " has a weight '" + extra + "' that layer '" + layer.config.name + "' (" +
                            std::string(layer_class_name(layer.config.kind)) + ") does not have: another model");
        }
    }
    return weights;
}

KerasModel read_keras_archive(std::vector<std::uint8_t> bytes, const std::string& source) {
    // Every zip (and so every .keras) starts with a local file header, "PK\3\4".
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "\x89HDF", 4) == 0) {
        throw DataError(source + " is an HDF5 file (Keras' .weights.h5?), not a .keras archive; a .weights.h5 goes "
                                 "with the model it was saved from");
    }
    if (bytes.size() < 4 || std::memcmp(bytes.data(), "PK\x03\x04", 4) != 0) {
        throw DataError(source + " is not a .keras archive (a .keras file is a zip archive, and this is not one)");
    }
    const ZipReader zip(std::move(bytes), source, ".keras");
    for (const char* member : {kConfigMember, kWeightsMember}) {
        if (zip.find(member) == nullptr) {
            throw DataError(source + " is not a complete .keras archive: it has no " + member);
        }
    }
    std::string version;
    if (zip.find(kMetadataMember) != nullptr) {
        try {
            const json::Value metadata = json::parse(text_of(zip.read(kMetadataMember)), source + "/metadata.json");
            if (const json::Value* v = metadata.find("keras_version"); v != nullptr && v->is_string()) {
                version = v->as_string();
            }
        } catch (const json::ParseError& error) {
            throw DataError(source + ": metadata.json is not JSON: " + error.what());
        }
    }
    const std::string config_text = text_of(zip.read(kConfigMember));
    Model model = model_from_keras_config(config_text, source + "/config.json");
    std::vector<float> weights = keras_weights_from_h5(zip.read(kWeightsMember), model, source + "/model.weights.h5");
    KerasModel imported{std::move(model), std::move(weights), std::move(version), std::nullopt, {}};
    imported.optimizer = optimizer_from_keras_config(config_text, imported.optimizer_note);
    return imported;
}

KerasModel load_keras_file(const std::string& path) {
    return read_keras_archive(read_file_binary(path, kKerasMaxFileBytes, "'" + path + "'", "a .keras file"), path);
}

std::vector<float> load_keras_weights_file(const std::string& path, const Model& model) {
    return keras_weights_from_h5(read_file_binary(path, kKerasMaxFileBytes, "'" + path + "'", "a .weights.h5 file"),
                                 model, path);
}

}  // namespace mirrorlab
