#pragma once
// Keras `pad_sequences`: variable-length token sequences to one fixed-length matrix.
#include <cstdint>
#include <vector>

namespace mirrorlab {

// Pre = at the start of a sequence, Post = at its end (Keras 'pre' / 'post').
enum class PadSide { Pre, Post };

struct PaddedSequences {
    int64_t count = 0;
    int32_t length = 0;
    std::vector<int32_t> ids;     // row-major count x length
    int64_t truncated_count = 0;  // sequences longer than `length`, so people see what was cut
};

// Keras defaults: pre-padding and pre-truncation (a long wire keeps its last `maxlen` tokens,
// which for Reuters drops the start id), pad value 0. Empty sequences become all `value`.
// Throws DataError when maxlen <= 0.
PaddedSequences pad_sequences(const std::vector<std::vector<int32_t>>& sequences, int32_t maxlen,
                              PadSide padding = PadSide::Pre, PadSide truncating = PadSide::Pre,
                              int32_t value = 0);

}  // namespace mirrorlab
