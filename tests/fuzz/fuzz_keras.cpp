// libFuzzer target: Keras model files, byte 0 choosing the reader for the rest.
//   even: read_keras_archive (zip, metadata.json, config.json through model_from_keras_config,
//         model.weights.h5 through HDF5), and on success the invariant that the model and weights
//         export and read back unchanged;
//   odd:  keras_weights_from_h5 for a fixed small model (a bare .weights.h5).
// Only mirrorlab::Error may escape the readers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/export/keras_file.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

namespace {

const Model& small_model() {
    static const Model model = Model::from_json_text(R"({"name": "sequential", "input_length": 12, "layers": [
        {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 20, "output_dim": 4}},
        {"class_name": "Conv1D", "config": {"name": "conv1d", "filters": 6, "kernel_size": 3, "activation": "relu"}},
        {"class_name": "GlobalMaxPooling1D", "config": {"name": "global_max_pooling1d"}},
        {"class_name": "Dense", "config": {"name": "dense", "units": 5, "activation": "softmax"}}]})");
    return model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::vector<uint8_t> bytes(data + 1, data + size);
    try {
        if (data[0] % 2 == 0) {
            const KerasModel imported = read_keras_archive(std::move(bytes), "fuzz.keras");
            if (imported.weights.size() != static_cast<std::size_t>(imported.model.total_params())) {
                fuzz::invariant_failed("read_keras_archive returned weights that do not fill the model");
            }
            const OptimizerConfig optimizer = OptimizerConfig::defaults(OptimizerKind::Nadam);
            const KerasModel again =
                read_keras_archive(keras_archive(imported.model, imported.weights, optimizer), "again.keras");
            if (again.weights != imported.weights || again.model.to_json_text() != imported.model.to_json_text()) {
                fuzz::invariant_failed("an imported Keras model does not export and read back unchanged");
            }
        } else {
            const std::vector<float> weights = keras_weights_from_h5(bytes, small_model(), "fuzz.weights.h5");
            if (weights.size() != static_cast<std::size_t>(small_model().total_params())) {
                fuzz::invariant_failed("keras_weights_from_h5 returned the wrong number of weights");
            }
        }
    } catch (const Error&) {
    }
    return 0;
}
