#include "core/data/source.h"

#include <charconv>

#include "core/data/sequence.h"
#include "core/data/synthetic.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {
std::int32_t parse_count(std::string_view spec, std::string_view text) {
    std::int32_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
        throw DataError("data spec '" + std::string(spec) + "': '" + std::string(text) +
                        "' is not a sample count");
    }
    return value;
}
}  // namespace

DatasetSplit load_dataset(std::string_view spec, std::uint64_t seed) {
    const std::string_view kind = spec.substr(0, spec.find(':'));
    if (kind == "synthetic") {
        SyntheticReutersOptions options;
        options.seed = seed;
        if (spec.size() > kind.size()) {
            std::string_view rest = spec.substr(kind.size() + 1);
            const auto colon = rest.find(':');
            options.train_samples = parse_count(spec, rest.substr(0, colon));
            if (colon != std::string_view::npos) {
                options.validation_samples = parse_count(spec, rest.substr(colon + 1));
            } else {
                options.validation_samples = options.train_samples / 4;
            }
        }
        return make_synthetic_reuters(options);
    }
    throw DataError(
        "data spec '" + std::string(spec) +
        "' is not supported; use synthetic, synthetic:TRAIN or synthetic:TRAIN:VALIDATION");
}

TrainData make_train_data(const DatasetSplit& split, std::int32_t sequence_length) {
    split.train.validate();
    TrainData data;
    data.name = split.train.name;
    data.num_classes = split.train.num_classes;
    data.train_ids = std::make_shared<const PaddedSequences>(
        pad_sequences(split.train.sequences, sequence_length));
    data.train_labels = std::make_shared<const std::vector<std::int32_t>>(split.train.labels);
    if (split.validation.size() > 0) {
        split.validation.validate();
        data.validation_ids = std::make_shared<const PaddedSequences>(
            pad_sequences(split.validation.sequences, sequence_length));
        data.validation_labels =
            std::make_shared<const std::vector<std::int32_t>>(split.validation.labels);
    }
    return data;
}

}  // namespace mirrorlab
