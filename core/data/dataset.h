#pragma once
// Text classification data before padding, and the data module's random numbers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mirrorlab {

// The most classes a data set may have. Where the class count comes from a file (Keras' npz:
// the largest label + 1), a label beyond this is a DataError rather than a request for gigabytes
// of per-class counters, names and output units.
inline constexpr int32_t kMaxClasses = 100000;

// Token-id sequences with integer labels, as Keras' `reuters.load_data()` returns them: one
// variable-length sequence per sample. Id conventions follow Keras (`start_char=1`,
// `oov_char=2`, `index_from=3`) so that models and presets written for the tutorial fit.
struct TextDataset {
    std::string name;  // shown to people: "Synthetic newswire (Reuters-shaped)", ...
    bool synthetic = false;
    std::vector<std::vector<int32_t>> sequences;
    std::vector<int32_t> labels;
    int32_t num_classes = 0;
    // Every id is < vocabulary_size; 0 = padding, 1 = start, 2 = out of vocabulary.
    int32_t vocabulary_size = 0;
    std::vector<std::string> class_names;  // may be empty; else one per class
    int32_t oov_id = 2;                    // where ids beyond a model's vocabulary are mapped
    std::vector<std::string> words;        // id -> word for previews; may be empty (synthetic, npz)

    size_t size() const { return sequences.size(); }
    // Samples per class (num_classes entries); labels out of range are not counted.
    std::vector<int64_t> class_counts() const;
    // Throws DataError naming the first problem found (and the sample index where there is one),
    // including num_classes above kMaxClasses. Ids are checked against vocabulary_size, or only for
    // being non-negative (a validation split, whose words the training vocabulary may lack).
    enum class IdCheck { WithinVocabulary, NonNegative };
    void validate(IdCheck ids = IdCheck::WithinVocabulary) const;
};

// Where the words of TextDataset::words came from, so the app can say which it used.
struct WordsOrigin {
    enum class Kind {
        None = 0,          // no words: samples show their ids
        Vocabulary,        // the source's own (Reuters-21578 files, a text corpus, synthetic)
        KerasWordIndex,    // Keras' reuters_word_index.json, at `path`
        DerivedWordIndex,  // derived from the Reuters-21578 files with Keras' recipe, at `path`
    };
    Kind kind = Kind::None;
    std::string path;
};

struct DatasetSplit {
    TextDataset train;
    TextDataset validation;
    std::vector<std::string> warnings;  // for people: skipped files, encodings, guesses made
    WordsOrigin words_origin;
};

// "? the wheat harvest ..." for previews: ids without a word (or with no word list) print as
// "<id>", padding is skipped.
std::string decode_sequence(const TextDataset& data, const std::vector<int32_t>& ids, size_t max_words = 40);

// Deterministic pseudo-random numbers for shuffles and synthetic data: xoshiro256** seeded
// through splitmix64. The std:: distributions are not used anywhere in the data module because
// their output differs between standard libraries, and a seed must give the same data set and
// the same batch order on every machine (checkpoints, bug reports, mirrored replicas).
class DataRandom {
  public:
    explicit DataRandom(uint64_t seed);

    uint64_t next_u64();
    // Uniform in [0, 1) with 53 random bits.
    double uniform();
    // Uniform integer in [0, n); n must be > 0. Lemire's multiply-shift, bias < n / 2^64.
    uint64_t below(uint64_t n);
    // Standard normal (Box-Muller; the second value is cached).
    double normal();

    // splitmix64's output function: a good 64-bit mixer, used to derive independent seeds.
    static uint64_t mix(uint64_t x);

  private:
    uint64_t s_[4] = {};
    double spare_normal_ = 0.0;
    bool has_spare_ = false;
};

}  // namespace mirrorlab
