#include "core/data/dataset.h"

#include <cmath>
#include <numbers>
#include <string>

#include "core/util/error.h"

namespace mirrorlab {

namespace {

[[noreturn]] void fail(const TextDataset& data, const std::string& problem) {
    const std::string who =
        data.name.empty() ? std::string("data set") : "data set '" + data.name + "'";
    throw DataError("[data] " + who + ": " + problem);
}

}  // namespace

std::vector<int64_t> TextDataset::class_counts() const {
    std::vector<int64_t> counts(static_cast<size_t>(num_classes > 0 ? num_classes : 0), 0);
    for (int32_t label : labels) {
        if (label >= 0 && label < num_classes) ++counts[static_cast<size_t>(label)];
    }
    return counts;
}

void TextDataset::validate(IdCheck ids) const {
    if (sequences.empty()) fail(*this, "is empty (no sequences)");
    if (sequences.size() != labels.size()) {
        fail(*this, "has " + std::to_string(sequences.size()) + " sequences but " +
                        std::to_string(labels.size()) + " labels; they must match");
    }
    if (num_classes <= 0)
        fail(*this, "num_classes is " + std::to_string(num_classes) + ", must be > 0");
    if (num_classes > kMaxClasses) {
        fail(*this, "num_classes is " + std::to_string(num_classes) + ", more than the " +
                        std::to_string(kMaxClasses) + " classes MirrorLab supports");
    }
    if (vocabulary_size <= 0) {
        fail(*this, "vocabulary_size is " + std::to_string(vocabulary_size) + ", must be > 0");
    }
    if (!class_names.empty() && class_names.size() != static_cast<size_t>(num_classes)) {
        fail(*this, "has " + std::to_string(class_names.size()) + " class names for " +
                        std::to_string(num_classes) + " classes");
    }
    for (size_t i = 0; i < labels.size(); ++i) {
        if (labels[i] < 0 || labels[i] >= num_classes) {
            fail(*this, "sample " + std::to_string(i) + " has label " + std::to_string(labels[i]) +
                            ", outside [0, " + std::to_string(num_classes) + ")");
        }
    }
    for (size_t i = 0; i < sequences.size(); ++i) {
        const auto& seq = sequences[i];
        for (size_t j = 0; j < seq.size(); ++j) {
            if (seq[j] < 0) {
                fail(*this, "sample " + std::to_string(i) + " has a negative token id " +
                                std::to_string(seq[j]) + " at position " + std::to_string(j));
            }
            if (ids == IdCheck::WithinVocabulary && seq[j] >= vocabulary_size) {
                fail(*this, "sample " + std::to_string(i) + " has token id " +
                                std::to_string(seq[j]) + " at position " + std::to_string(j) +
                                ", outside the vocabulary of " + std::to_string(vocabulary_size) +
                                " (an embedding would read past its table)");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

uint64_t DataRandom::mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

DataRandom::DataRandom(uint64_t seed) {
    // The first four outputs of splitmix64(seed): the state is never all zero because mix() is
    // a bijection applied to four distinct inputs.
    for (uint64_t i = 0; i < 4; ++i) s_[i] = mix(seed + 0x9E3779B97F4A7C15ull * i);
}

uint64_t DataRandom::next_u64() {
    auto rotl = [](uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double DataRandom::uniform() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

uint64_t DataRandom::below(uint64_t n) {
    __extension__ typedef unsigned __int128 u128;  // __extension__: no -Wpedantic noise
    return static_cast<uint64_t>((static_cast<u128>(next_u64()) * n) >> 64);
}

double DataRandom::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_normal_;
    }
    // 1 - uniform() is in (0, 1], so the logarithm is finite.
    const double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    const double theta = 2.0 * std::numbers::pi * uniform();
    spare_normal_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
}

std::string decode_sequence(const TextDataset& data, const std::vector<int32_t>& ids, size_t max_words) {
    std::string text;
    size_t shown = 0;
    for (int32_t id : ids) {
        if (id == 0) continue;
        if (shown == max_words) {
            text += " ...";
            break;
        }
        if (!text.empty()) text += ' ';
        const auto index = static_cast<size_t>(id);
        text += index < data.words.size() && !data.words[index].empty() ? data.words[index] : "<" + std::to_string(id) + ">";
        ++shown;
    }
    return text;
}

}  // namespace mirrorlab
