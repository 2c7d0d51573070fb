#include "core/data/sequence.h"

#include <algorithm>
#include <string>

#include "core/util/error.h"

namespace mirrorlab {

PaddedSequences pad_sequences(const std::vector<std::vector<int32_t>>& sequences, int32_t maxlen,
                              PadSide padding, PadSide truncating, int32_t value) {
    if (maxlen <= 0) {
        throw DataError("[pad_sequences] maxlen is " + std::to_string(maxlen) + ", must be > 0");
    }
    PaddedSequences out;
    out.count = static_cast<int64_t>(sequences.size());
    out.length = maxlen;
    const auto width = static_cast<size_t>(maxlen);
    out.ids.assign(sequences.size() * width, value);
    for (size_t i = 0; i < sequences.size(); ++i) {
        const auto& seq = sequences[i];
        const size_t kept = std::min(seq.size(), width);
        if (seq.size() > width) ++out.truncated_count;
        const auto from = seq.begin() + static_cast<std::ptrdiff_t>(
                                            truncating == PadSide::Pre ? seq.size() - kept : 0);
        auto row = out.ids.begin() + static_cast<std::ptrdiff_t>(i * width);
        std::copy(from, from + static_cast<std::ptrdiff_t>(kept),
                  row + static_cast<std::ptrdiff_t>(padding == PadSide::Pre ? width - kept : 0));
    }
    return out;
}

}  // namespace mirrorlab
