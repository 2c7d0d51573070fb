#include "core/data/source.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/data/corpus.h"
#include "core/data/keras_reuters.h"
#include "core/data/reuters21578.h"
#include "core/data/sequence.h"
#include "core/data/synthetic.h"
#include "core/util/cancellation.h"
#include "core/util/error.h"
#include "core/util/file.h"

namespace mirrorlab {

namespace {

constexpr const char* kChoices =
    "use default, synthetic, synthetic:TRAIN[:VALIDATION], keras[:PATH], reuters21578:DIR, folder:DIR, csv:FILE or tsv:FILE";

// The built-in corpus takes ~800 bytes a sample before padding: a million is ~0.8 GB, a hundred
// times Reuters' 8,982 training wires. More is refused before any is made.
constexpr std::int32_t kMostSyntheticSamples = 1'000'000;

std::int32_t parse_count(std::string_view spec, std::string_view text) {
    std::int32_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
        throw DataError("data spec '" + std::string(spec) + "': '" + std::string(text) + "' is not a sample count");
    }
    if (value > kMostSyntheticSamples) {
        throw DataError("data spec '" + std::string(spec) + "': " + std::string(text) + " samples is more than the built-in corpus makes (at most " +
                        std::to_string(kMostSyntheticSamples) + " training and as many validation samples)");
    }
    return value;
}

// Padding makes every sample input_length ids long: a long input_length over many samples asks
// for more memory than the computer has, and would exhaust it before the model's own memory check.
void check_padded_size(const DatasetSplit& split, std::int32_t sequence_length) {
    const std::uint64_t samples = split.train.size() + split.validation.size();
    const std::uint64_t padded_bytes = samples * static_cast<std::uint64_t>(std::max(sequence_length, 0)) * sizeof(std::int32_t);
    const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return;
    std::uint64_t memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
    std::string whose = "this computer's";
    // A process given less (ulimit -v) runs out sooner.
    struct rlimit address_space {};
    if (::getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY &&
        address_space.rlim_cur < memory_bytes) {
        memory_bytes = address_space.rlim_cur;
        whose = "this process's memory limit of";
    }
    if (padded_bytes <= memory_bytes / 2) return;
    throw DataError("padding the " + std::to_string(samples) + " samples to " + std::to_string(sequence_length) +
                    " tokens each (the model's input_length) needs " + byte_size(padded_bytes) + ", more than half of " + whose +
                    " " + byte_size(memory_bytes) + "; lower input_length (the sequence length)");
}

void set_class_names(DatasetSplit& split, const std::vector<std::string>& names) {
    if (static_cast<std::int32_t>(names.size()) < split.train.num_classes) return;
    split.train.class_names.assign(names.begin(), names.begin() + split.train.num_classes);
    split.validation.class_names = split.train.class_names;
}

DatasetSplit load_keras(const std::string& path) {
    DatasetSplit split = keras_load_data(read_reuters_npz(path), KerasLoadOptions{});
    set_class_names(split, keras_reuters_label_names());
    // The npz holds ids only; the words are in a file of their own, which may be missing.
    if (const auto index_file = find_reuters_word_index(path)) {
        std::vector<std::string> words =
            keras_id_words(ranked_words(read_reuters_word_index(index_file->path)));
        split.train.words = words;
        split.validation.words = std::move(words);
        split.words_origin = {index_file->derived ? WordsOrigin::Kind::DerivedWordIndex
                                                  : WordsOrigin::Kind::KerasWordIndex,
                              index_file->path};
    }
    return split;
}

DatasetSplit load_reuters21578(const std::string& directory) {
    Reuters21578Corpus corpus = read_reuters21578(directory);
    RawReuters raw;
    raw.xs = std::move(corpus.xs);  // handed on, not copied: the ids are most of the corpus's memory
    raw.labels = std::move(corpus.labels);
    DatasetSplit split =
        keras_load_data(std::move(raw), KerasLoadOptions{}, "Reuters-21578 (UCI files, Keras' recipe)");
    set_class_names(split, corpus.topics);
    split.warnings.insert(split.warnings.end(), corpus.warnings.begin(), corpus.warnings.end());
    // Keras' ids: 0 padding, 1 start, 2 out of vocabulary, 3 unused, then word rank + 3 (rank 1
    // is the most frequent word, so it is id 4).
    std::vector<std::string> words = keras_id_words(corpus.words);
    split.train.words = words;
    split.validation.words = std::move(words);
    split.words_origin = {WordsOrigin::Kind::Vocabulary, directory};
    return split;
}

DatasetSplit load_corpus(LabelledTexts texts, std::uint64_t seed) {
    TokenizerOptions options;
    options.oov_token = "<oov>";
    Tokenizer tokenizer;
    const std::vector<std::string> warnings = std::move(texts.warnings);
    const std::string source = texts.source;
    DatasetSplit split = build_dataset(std::move(texts), options, 0.2, seed, source, &tokenizer);
    for (TextDataset* part : {&split.train, &split.validation}) {
        part->oov_id = 1;
        part->words = tokenizer.index_word();
    }
    split.words_origin.kind = WordsOrigin::Kind::Vocabulary;
    split.warnings.insert(split.warnings.begin(), warnings.begin(), warnings.end());
    return split;
}

std::string from_environment(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
}

}  // namespace

std::string derive_reuters_word_index(const std::string& reuters21578_dir,
                                      const std::string& destination) {
    const Reuters21578Corpus corpus = read_reuters21578(reuters21578_dir);
    write_reuters_word_index(destination, word_index_of(corpus.words));
    return destination;
}

std::optional<std::string> find_reuters21578() {
    for (const auto& dir : reuters21578_candidates()) {
        std::error_code error;
        if (std::filesystem::exists(dir + "/reut2-000.sgm", error)) return dir;
    }
    return std::nullopt;
}

std::vector<std::string> reuters21578_candidates() {
    std::vector<std::string> candidates;
    if (auto dir = from_environment("MIRRORLAB_REUTERS21578_DIR"); !dir.empty()) candidates.push_back(dir);
    if (auto cache = from_environment("XDG_CACHE_HOME"); !cache.empty() && cache.front() == '/') {
        candidates.push_back(cache + "/mirrorlab/reuters21578");
    } else if (auto home = from_environment("HOME"); !home.empty()) {
        candidates.push_back(home + "/.cache/mirrorlab/reuters21578");
    }
    return candidates;
}

std::string resolve_default_data_spec() {
    if (auto npz = find_keras_reuters()) return "keras:" + *npz;
    if (auto dir = find_reuters21578()) return "reuters21578:" + *dir;
    return "synthetic";
}

namespace {

// "kind" and what follows its first colon.
struct DataSpecParts {
    std::string_view kind;
    std::string argument;
};

DataSpecParts split_data_spec(std::string_view spec) {
    const auto colon = spec.find(':');
    return {spec.substr(0, colon), colon == std::string_view::npos ? std::string() : std::string(spec.substr(colon + 1))};
}

SyntheticReutersOptions synthetic_options(std::string_view spec, const std::string& argument, std::uint64_t seed) {
    SyntheticReutersOptions options;
    options.seed = seed;
    if (!argument.empty()) {
        const auto second = argument.find(':');
        options.train_samples = parse_count(spec, std::string_view(argument).substr(0, second));
        options.validation_samples = second == std::string::npos ? options.train_samples / 4
                                                                 : parse_count(spec, std::string_view(argument).substr(second + 1));
    }
    return options;
}

}  // namespace

void check_data_spec(std::string_view spec) {
    const DataSpecParts parts = split_data_spec(spec);
    const std::string_view kind = parts.kind;
    auto need_argument = [&](const char* what) {
        if (parts.argument.empty()) {
            throw DataError("data spec '" + std::string(spec) + "' needs " + what + " after the colon, e.g. " +
                            std::string(kind) + ":/path");
        }
    };
    if (kind.empty() || kind == "default" || kind == "keras") return;
    if (kind == "synthetic") {
        (void)synthetic_options(spec, parts.argument, 0);
    } else if (kind == "reuters21578") {
        need_argument("the folder holding reut2-000.sgm ... reut2-021.sgm");
    } else if (kind == "folder") {
        need_argument("a folder with one subfolder of text files per class");
    } else if (kind == "csv" || kind == "tsv") {
        need_argument("a CSV or TSV file");
    } else {
        throw DataError("data spec '" + std::string(spec) + "' is not supported; " + kChoices);
    }
}

std::string absolute_data_spec(std::string_view spec) {
    const DataSpecParts parts = split_data_spec(spec);
    const bool has_path = parts.kind == "keras" || parts.kind == "reuters21578" || parts.kind == "folder" || parts.kind == "csv" ||
                          parts.kind == "tsv";
    if (!has_path || parts.argument.empty() || parts.argument.front() == '/') return std::string(spec);
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(parts.argument, error);
    if (error) return std::string(spec);
    return std::string(parts.kind) + ":" + absolute.lexically_normal().string();
}

DatasetSplit load_dataset(std::string_view spec, std::uint64_t seed, const std::atomic<bool>* cancel) {
    const ScopedCancellation cancellation(cancel);
    check_data_spec(spec);
    const DataSpecParts parts = split_data_spec(spec);
    const std::string_view kind = parts.kind;
    const std::string& argument = parts.argument;
    if (kind.empty() || kind == "default") return load_dataset(resolve_default_data_spec(), seed, cancel);
    if (kind == "synthetic") return make_synthetic_reuters(synthetic_options(spec, argument, seed));
    if (kind == "keras") {
        if (!argument.empty()) return load_keras(argument);
        if (auto found = find_keras_reuters()) return load_keras(*found);
        std::string searched;
        for (const auto& candidate : find_keras_reuters_candidates()) searched += "\n  " + candidate;
        throw DataError("reuters.npz was not found; searched:" + searched +
                        "\nDownload it in the app (Data panel), copy it to one of these places, or use "
                        "--data reuters21578:DIR (the UCI files) or --data synthetic");
    }
    if (kind == "reuters21578") return load_reuters21578(argument);
    if (kind == "folder") return load_corpus(read_text_folder(argument), seed);
    DelimitedOptions options;  // csv or tsv, as check_data_spec() allowed
    if (kind == "tsv") options.delimiter = '\t';
    return load_corpus(read_delimited(argument, options), seed);
}

TrainData make_train_data(const DatasetSplit& split, std::int32_t sequence_length, std::int64_t vocabulary_size,
                          OovPolicy policy) {
    split.train.validate();
    check_padded_size(split, sequence_length);
    TrainData data;
    data.name = split.train.name;
    data.num_classes = split.train.num_classes;
    data.warnings = split.warnings;
    auto pad = [&](const TextDataset& part, const char* which) {
        PaddedSequences padded = pad_sequences(part.sequences, sequence_length);
        if (vocabulary_size <= 0) return padded;
        std::int64_t replaced = 0;
        std::int32_t largest = 0;
        for (auto& id : padded.ids) {
            if (id >= vocabulary_size) {
                largest = std::max(largest, id);
                ++replaced;
                id = part.oov_id;
            }
        }
        if (replaced > 0) {
            const std::string counts = std::to_string(replaced) + " token" + (replaced == 1 ? "" : "s") + " in the " + which +
                                       " data (largest id " + std::to_string(largest) + ") are beyond the Embedding's input_dim of " +
                                       std::to_string(vocabulary_size);
            if (policy == OovPolicy::Error) {
                throw DataError(counts + "; raise input_dim to " + std::to_string(largest + 1) +
                                " or allow mapping them to the OOV id (mirrorlab-cli train --oov map, the default)");
            }
            data.warnings.push_back(counts + "; they are mapped to the out-of-vocabulary id " + std::to_string(part.oov_id) +
                                    " (TensorFlow would embed zeros on a GPU and fail on a CPU)");
        }
        return padded;
    };
    data.train_ids = std::make_shared<const PaddedSequences>(pad(split.train, "training"));
    data.train_labels = std::make_shared<const std::vector<std::int32_t>>(split.train.labels);
    if (split.validation.size() > 0) {
        // The validation split may hold words the training split never had (Keras' load_data keeps
        // them); the model's input_dim decides above, not the training vocabulary.
        split.validation.validate(TextDataset::IdCheck::NonNegative);
        data.validation_ids = std::make_shared<const PaddedSequences>(pad(split.validation, "validation"));
        data.validation_labels = std::make_shared<const std::vector<std::int32_t>>(split.validation.labels);
    }
    return data;
}

}  // namespace mirrorlab
