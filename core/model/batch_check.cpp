#include "core/model/batch_check.h"

#include <string>

#include "core/layers/layer_config.h"
#include "core/util/error.h"

namespace mirrorlab {

void check_batch(const Model& model, const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch) {
    if (!model.layers().empty() && model.layers().front().config.kind == LayerKind::Embedding) {
        const std::int64_t vocabulary = model.vocabulary_size();
        const std::int64_t count = std::int64_t{batch} * model.input_length();
        for (std::int64_t i = 0; i < count; ++i) {
            if (ids[i] >= 0 && ids[i] < vocabulary) continue;
            throw OpError("[embedding] token id " + std::to_string(ids[i]) + " is outside the vocabulary of " +
                          std::to_string(vocabulary) + " (input_dim); enlarge input_dim or map such ids to OOV");
        }
    }
    const std::int32_t classes = model.num_classes();
    for (std::int32_t b = 0; b < batch; ++b) {
        if (labels[b] >= 0 && labels[b] < classes) continue;
        throw OpError("[sparse_categorical_crossentropy] label " + std::to_string(labels[b]) + " of sample " +
                      std::to_string(b) + " is outside [0, " + std::to_string(classes) +
                      "): the model's last layer has " + std::to_string(classes) + " units; it needs one per class");
    }
}

}  // namespace mirrorlab
