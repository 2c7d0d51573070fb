#pragma once
// Resolves a data spec (the CLI's --data, the GUI's data panel) to a data set, and turns a data
// set into the padded tensors the trainer consumes.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/data/dataset.h"
#include "core/train/trainer.h"

namespace mirrorlab {

// "synthetic" (the Reuters-shaped default), "synthetic:TRAIN" or "synthetic:TRAIN:VALIDATION"
// (smaller synthetic sets for quick runs). Throws DataError naming the spec and the choices.
DatasetSplit load_dataset(std::string_view spec, std::uint64_t seed = 113);

// Pads (pre-padding and pre-truncation, as Keras' pad_sequences) to the model's input length.
TrainData make_train_data(const DatasetSplit& split, std::int32_t sequence_length);

}  // namespace mirrorlab
