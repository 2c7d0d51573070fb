#pragma once
// A Sequential text-classification model described in JSON with Keras' layer names and
// arguments. Building a Model validates every layer, infers shapes and counts parameters, so an
// impossible model is rejected with a message naming the layer before anything is allocated.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/tensor.h"
#include "core/layers/layer_config.h"

namespace mirrorlab {

namespace json {
class Value;
}

class Model {
public:
    // Accepts our format ({"name", "input_length", "layers": [{"class_name", "config"}]}) and
    // Keras' own `model.to_json()` of a Sequential model. `source` names the file in errors.
    static Model from_json(const json::Value& value, std::string_view source = "model");
    static Model from_json_text(std::string_view text, std::string_view source = "model");
    static Model from_json_file(const std::string& path);
    // The Keras tutorial's model (resources/presets/reuters_tutorial.json, built into core).
    static Model reference();

    json::Value to_json() const;
    std::string to_json_text() const;

    const std::string& name() const { return name_; }
    std::int32_t input_length() const { return input_length_; }
    const std::vector<LayerInfo>& layers() const { return layers_; }
    std::int64_t total_params() const { return total_params_; }
    std::int32_t num_classes() const { return num_classes_; }
    std::int64_t vocabulary_size() const;  // the Embedding's input_dim
    ActivationKind output_activation() const;
    std::vector<VariableInfo> variables() const;

    // The same layers for another sequence length (shapes re-inferred and re-validated).
    Model with_input_length(std::int32_t input_length) const;

    // Keras 2's `model.summary()` table, character for character.
    std::string summary() const;

    // Builds and validates; throws ModelError.
    Model(std::string name, std::int32_t input_length, std::vector<LayerConfig> layers);

private:
    std::string name_;
    std::int32_t input_length_ = 0;
    std::vector<LayerInfo> layers_;
    std::int64_t total_params_ = 0;
    std::int32_t num_classes_ = 0;
};

std::string format_thousands(std::int64_t value);  // 332856 -> "332,856"

// One row of Keras 2's model.summary() table, and the table: the model's name, the header, the
// rows between rules, the closing double rule. Model::summary() adds the totals; the model form
// uses the same table for a model that does not build, with what is known of each layer.
struct SummaryRow {
    std::string layer;         // "conv1d (Conv1D)"
    std::string output_shape;  // "(None, 296, 64)"
    std::string params;        // "2304"
};
std::string summary_table(std::string_view model_name, const std::vector<SummaryRow>& rows);

}  // namespace mirrorlab
