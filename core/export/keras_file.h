#pragma once
// Keras 3 model files: the `.keras` archive (a zip of metadata.json, config.json and
// model.weights.h5, as keras.saving.save_model writes it) and the bare `.weights.h5`
// (model.save_weights), written and read for MirrorLab's Sequential models.
//
// What we write (keras_file.cpp; the layout Keras 3.15 writes, checked against files Keras wrote
// in tests/test_keras_file.cpp):
//   metadata.json     {"keras_version", "date_saved"} and "exported_by": "MirrorLab <version>"
//   config.json       the Sequential's serialized config: an InputLayer of batch_shape
//                     [null, input_length], every layer's full Keras 3 config and build_config,
//                     and a compile_config (the run's optimizer, sparse categorical
//                     cross-entropy, accuracy and top-5 accuracy), so load_model() returns a
//                     compiled model
//   model.weights.h5  layers/<layer name>/vars/0, 1, ... (float32, Keras' shapes: Embedding
//                     [vocab, dim], Conv1D kernel [k, in, filters], Dense [in, units], biases),
//                     a vars group per layer and one for the model (attribute "name"), and
//                     optimizer/vars/0 (iterations, int64), /1 (learning_rate, float32) and, for a
//                     trained model (KerasOptimizerState given), the optimizer's variables as Keras
//                     3's optimizer.variables lists them (keras_file.cpp), so model.fit() in Keras
//                     goes on with the moments MirrorLab reached instead of starting them afresh.
//                     Without a state: what a freshly compiled Keras optimizer holds (Keras warns
//                     when it loads such a file for a model it builds, as for its own unfitted files).
//
// Reading takes the model from config.json (or a `model.to_json()` string) and the weights from
// layers/<name>/vars/<i>; anything else in the weight file (the optimizer's state) is left out.
// Every failure is one error naming the file and the part: a DataError for the container (not a
// zip, a missing member, a corrupt HDF5 file, a missing or misshaped weight), a ModelError for
// the model (unsupported layers, all named at once; Keras features MirrorLab does not run). A
// failed import returns nothing: there is no half-imported model.
#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "core/train/fit_state.h"
#include "core/util/json.h"

namespace mirrorlab {

// The Keras version whose layout we write (metadata.json's keras_version).
inline constexpr std::string_view kKerasFormatVersion = "3.15.1";
// A .keras or .weights.h5 file larger than this is refused before it is read.
inline constexpr std::uint64_t kKerasMaxFileBytes = std::uint64_t{2} << 30;

// --- writing ---------------------------------------------------------------------------------

// Where the optimizer stands after training (a checkpoint's TrainingState): exported as Keras 3's
// optimizer variables.
struct KerasOptimizerState {
    std::int64_t iterations = 0;
    // TrainingState::optimizer_slots: slot 0 of every variable in Model::variables() order, then
    // slot 1 (the slots per kind: core/optim/optimizer.h).
    std::span<const float> slot_values;
    double nadam_u_product = 1.0;
};

// A checkpoint's optimizer state, as keras_weights_h5 exports it (views into `state`).
KerasOptimizerState keras_optimizer_state(const TrainingState& state);

json::Value keras_config(const Model& model, const OptimizerConfig& optimizer);
// The optimizer's default name in Keras 3 ("nadam", "sgd"): the optimizer group's "name".
std::string keras_optimizer_name(OptimizerKind kind);
// model.weights.h5's bytes; `weights` is Model::variables() in order, row-major; `state`, where
// given, the optimizer's (DataError when its slots do not fit the model and optimizer).
std::vector<std::uint8_t> keras_weights_h5(const Model& model, std::span<const float> weights,
                                           const OptimizerConfig& optimizer,
                                           const KerasOptimizerState* state = nullptr);
// The whole .keras archive.
std::vector<std::uint8_t> keras_archive(const Model& model, std::span<const float> weights,
                                        const OptimizerConfig& optimizer,
                                        const KerasOptimizerState* state = nullptr);
// Written atomically (core/util/file.h); DataError naming the file when it cannot be.
void save_keras_file(const std::string& path, const Model& model, std::span<const float> weights,
                     const OptimizerConfig& optimizer, const KerasOptimizerState* state = nullptr);
void save_keras_weights_file(const std::string& path, const Model& model, std::span<const float> weights,
                             const OptimizerConfig& optimizer, const KerasOptimizerState* state = nullptr);

// --- reading ---------------------------------------------------------------------------------

struct KerasModel {
    Model model;
    std::vector<float> weights;  // Model::variables() in order; empty when the source had none
    std::string keras_version;   // metadata.json's, when there is one
    // The optimizer compile_config names, with its hyper-parameters and Keras 3's semantics
    // (follow_keras(Keras3)); none when the model was not compiled or its optimizer is not one
    // MirrorLab has (then `optimizer_note` says which it was).
    std::optional<OptimizerConfig> optimizer;
    std::string optimizer_note;
};

// compile_config's optimizer of a Keras model config (config.json or model.to_json()); nullopt,
// with `note` saying why, when there is none MirrorLab can run. Never throws for a missing or odd
// compile_config: the layers are what an import needs.
std::optional<OptimizerConfig> optimizer_from_keras_config(std::string_view json_text, std::string& note);

// A Keras Sequential config: config.json's or model.to_json()'s. ModelError naming `source`.
Model model_from_keras_config(std::string_view json_text, std::string_view source);
// The weights of `model` from a Keras weight file's bytes. DataError naming `source`.
std::vector<float> keras_weights_from_h5(std::vector<std::uint8_t> bytes, const Model& model,
                                         const std::string& source);
// A whole .keras archive in memory; `source` starts every message.
KerasModel read_keras_archive(std::vector<std::uint8_t> bytes, const std::string& source);

// A .keras file.
KerasModel load_keras_file(const std::string& path);
// A .weights.h5 file for `model`.
std::vector<float> load_keras_weights_file(const std::string& path, const Model& model);

}  // namespace mirrorlab
