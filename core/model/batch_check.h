#pragma once
// The host-side check of a batch before it reaches any device (issue #21): every token id inside
// the Embedding's vocabulary, every label one of the model's classes. Done once, on the host,
// where the replica uploads its shard, so that a GPU needs no check of its own and no read-back of
// a verdict; the messages are the ones the CPU reference's ops give, word for word.
#include <cstdint>

#include "core/model/model.h"

namespace mirrorlab {

// Throws OpError naming the first bad value: "[embedding] token id 10 is outside the vocabulary
// of 10 (input_dim); enlarge input_dim or map such ids to OOV", or "[sparse_categorical_crossentropy]
// label 46 of sample 3 is outside [0, 46): ...". `ids` holds batch * input_length values.
void check_batch(const Model& model, const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch);

}  // namespace mirrorlab
