#pragma once
// Keras' Reuters newswire data set, read from the `reuters.npz` that
// keras.datasets.reuters.load_data() downloads, and split exactly as load_data() splits it
// (keras/src/datasets/reuters.py, followed line by line), so that the tutorial's 8,982 / 2,246
// samples come out identical, in the same order, with the same ids.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/data/dataset.h"

namespace mirrorlab {

// load_data()'s arguments. Where Keras takes None: num_words = 0 and maxlen = 0 mean None;
// start_char < 0 and oov_char < 0 mean None (no start mark; out-of-range words dropped).
struct KerasLoadOptions {
    int64_t num_words = 0;  // 0 = all
    int64_t skip_top = 0;
    int64_t maxlen = 0;
    double test_split = 0.2;
    uint64_t seed = 113;  // numpy RandomState seed: 0 to 2**32 - 1
    int32_t start_char = 1;
    int32_t oov_char = 2;
    int32_t index_from = 3;
};

// The arrays in reuters.npz: x (object array of word-rank lists) and y (int64 labels).
struct RawReuters {
    std::vector<std::vector<int64_t>> xs;
    std::vector<int64_t> labels;
};

// Reads entries x.npy and y.npy. DataError naming the file for anything wrong: not a zip,
// corrupt or truncated entries, a pickle that is not numpy's, x and y of different lengths, a
// negative label or one of kMaxClasses or more (naming its index).
RawReuters read_reuters_npz(const std::string& path);
// The same on an archive already in memory; `source_name` starts error messages.
RawReuters read_reuters_npz_bytes(std::vector<uint8_t> bytes, const std::string& source_name);

inline constexpr const char* kKerasReutersName = "Keras Reuters (reuters.npz)";

// keras.datasets.reuters.load_data(): shuffle with RandomState(seed), prepend start_char and add
// index_from, drop sequences of length >= maxlen, map ids outside [skip_top, num_words) to
// oov_char (with num_words = None, Keras uses the largest id, which itself then becomes OOV), split
// at int(len * (1 - test_split)).
// DataError for a label of kMaxClasses or more. Both halves get num_classes = max label + 1 over
// both, and vocabulary_size = the largest id in the training half + 1 (the tutorial's x_train.max()
// + 1, 30,982 on the real file; the largest id of both when the training half is empty). The
// validation half may hold ids beyond it: map_ids_to_oov() fixes that. class_names stay empty (see
// keras_reuters_label_names()). `raw` is taken by value and emptied wire by wire as it is
// converted: pass it with std::move so the corpus is not held twice at the peak.
DatasetSplit keras_load_data(RawReuters raw, const KerasLoadOptions& options,
                             std::string name = kKerasReutersName);

// keras.datasets.reuters.get_label_names(): the 46 topic names, in label order.
const std::vector<std::string>& keras_reuters_label_names();

// Where Keras (and MirrorLab) keep reuters.npz, in the order searched:
// $KERAS_HOME/datasets (where Keras downloads when KERAS_HOME is set), ~/.keras/datasets, then
// the app cache $XDG_CACHE_HOME/mirrorlab or ~/.cache/mirrorlab. Unset variables are skipped.
std::vector<std::string> find_keras_reuters_candidates();
// The first candidate that exists as a regular file.
std::optional<std::string> find_keras_reuters();

// reuters_word_index.json: word -> rank (1 = most frequent). Ids in the data are rank + index_from.
using WordIndex = std::unordered_map<std::string, int64_t>;
WordIndex read_reuters_word_index(const std::string& json_path);

// The ranked words of a word index: element rank - 1 is the word of that rank. When two words
// share a rank the alphabetically first is kept (as decode_wire() shows it); a rank no word has
// is an empty string. Ranks below 1 are ignored; DataError for a rank above 100 million.
std::vector<std::string> ranked_words(const WordIndex& word_index);
// The inverse: word -> rank for words[rank - 1] (what Reuters21578Corpus::words holds). An empty
// string is no word.
WordIndex word_index_of(const std::vector<std::string>& ranked);
// TextDataset::words for Keras' ids, id = rank + index_from: "" (padding), "<start>", "<oov>",
// "<unused>" for the ids up to index_from (as load_data() marks them), then the ranked words.
std::vector<std::string> keras_id_words(const std::vector<std::string>& ranked,
                                        int32_t index_from = 3);

// Writes `word_index` as Keras' reuters_word_index.json is written (one JSON object, word ->
// rank), in rank order, to `path`: to a temporary file beside it that is renamed into place, so
// a reader never sees half a file. DataError naming the path when it cannot be written.
void write_reuters_word_index(const std::string& path, const WordIndex& word_index);

inline constexpr const char* kKerasWordIndexName = "reuters_word_index.json";
// The word index MirrorLab derives from the Reuters-21578 files: another name, so that it is
// never taken for Keras' own file.
inline constexpr const char* kDerivedWordIndexName =
    "reuters_word_index.derived_from_reuters21578.json";
// The folder where MirrorLab keeps what it downloads or derives: $XDG_CACHE_HOME/mirrorlab or
// ~/.cache/mirrorlab (empty when neither variable gives an absolute path).
std::string mirrorlab_cache_dir();

// Where the word index of the reuters.npz at `npz_path` may be, in the order searched:
// reuters_word_index.json beside it (get_word_index() downloads it next to load_data()'s
// reuters.npz), in the folders find_keras_reuters_candidates() searches, then the derived index
// in mirrorlab_cache_dir().
struct WordIndexFile {
    std::string path;
    bool derived = false;
};
std::vector<WordIndexFile> find_reuters_word_index_candidates(const std::string& npz_path);
// The first candidate that exists as a regular file.
std::optional<WordIndexFile> find_reuters_word_index(const std::string& npz_path);

// The Keras tutorial's decoding, ' '.join(reverse_word_index.get(i - index_from, '?')): "? word
// word ...". Pad, start and OOV ids (below index_from) and unknown ranks read '?'. When two
// words share a rank, the alphabetically first is shown.
std::string decode_wire(const std::vector<int32_t>& ids, const WordIndex& word_index,
                        int32_t index_from = 3);

// Ids >= vocabulary_size (the Embedding's input_dim) become oov_id, and data.vocabulary_size is
// set to vocabulary_size; or, with error_instead, DataError naming the count, the largest id and
// the vocabulary, leaving data unchanged. largest_id is the largest out-of-range id (0 if none).
struct OovReport {
    int64_t replaced = 0;
    int32_t largest_id = 0;
};
OovReport map_ids_to_oov(TextDataset& data, int32_t vocabulary_size, int32_t oov_id,
                         bool error_instead);

}  // namespace mirrorlab
