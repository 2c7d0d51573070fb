#pragma once
// A data set as the trainer consumes it: padded id matrices and labels for the training and the
// validation split (make_train_data() in core/data/source.h builds it).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/sequence.h"

namespace mirrorlab {

struct TrainData {
    std::string name;
    std::shared_ptr<const PaddedSequences> train_ids;
    std::shared_ptr<const std::vector<std::int32_t>> train_labels;
    std::shared_ptr<const PaddedSequences> validation_ids;  // may be null
    std::shared_ptr<const std::vector<std::int32_t>> validation_labels;
    std::int32_t num_classes = 0;
    std::vector<std::string> warnings;  // shown when the run starts (e.g. ids mapped to OOV)
};

}  // namespace mirrorlab
