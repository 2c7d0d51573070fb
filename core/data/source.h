#pragma once
// Resolves a data spec (the CLI's --data, the GUI's data panel) to a data set, and turns a data
// set into the padded tensors the trainer consumes.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/train_data.h"

namespace mirrorlab {

// Specs:
//   default                 Reuters when found locally (reuters.npz where Keras keeps it, else a
//                           Reuters-21578 folder), otherwise the synthetic corpus
//   synthetic[:TRAIN[:VAL]] the built-in Reuters-shaped synthetic newswire corpus
//   keras[:PATH]            Keras' reuters.npz (without PATH: where Keras downloads it), with
//                           words from reuters_word_index.json where find_reuters_word_index()
//                           finds one
//   reuters21578:DIR        the UCI Reuters-21578 SGML files, built with Keras' recipe
//   folder:DIR              one subfolder of .txt files (or files without an extension) per class
//   csv:FILE / tsv:FILE     a label column and a text column
// Throws DataError naming the spec (and the file) and the choices. Once `*cancel` turns true (set
// by another thread: the GUI's Cancel) the load stops within a row, a text or a file and throws
// Cancelled (core/util/cancellation.h), so that its memory and its core are free again.
// Keras' reuters.load_data shuffles with seed 113; the other sources split with it too.
inline constexpr std::uint64_t kDefaultDataSeed = 113;
DatasetSplit load_dataset(std::string_view spec, std::uint64_t seed = kDefaultDataSeed,
                          const std::atomic<bool>* cancel = nullptr);

// Throws DataError when `spec` cannot be read as a data spec at all (an unknown kind, a missing
// path, a sample count that is not one), before any file is looked at: what the command line's
// checks use. Whether the files are there is load_dataset()'s to say.
void check_data_spec(std::string_view spec);

// The spec with its path made absolute against the current folder ("csv:d3.csv" ->
// "csv:/home/me/d3.csv"): what a run keeps, so that evaluate, predict and resume find the data
// from any folder. Specs without a path (default, synthetic, keras) are returned as they are.
std::string absolute_data_spec(std::string_view spec);

// The spec "default" resolves to, and the folders searched for Reuters-21578.
std::string resolve_default_data_spec();
std::vector<std::string> reuters21578_candidates();
// The first candidate holding reut2-000.sgm.
std::optional<std::string> find_reuters21578();

// Keras' word index rebuilt from the Reuters-21578 files of `reuters21578_dir` with Keras' recipe
// (the importer's word ranks: the same 30,979 ranks as reuters_word_index.json), written to
// `destination` (usually mirrorlab_cache_dir() + "/" + kDerivedWordIndexName, where load_dataset()
// finds it for a reuters.npz that has no reuters_word_index.json beside it). Returns
// `destination`; DataError for unreadable files or an unwritable destination.
std::string derive_reuters_word_index(const std::string& reuters21578_dir,
                                      const std::string& destination);

enum class OovPolicy { Invalid = 0, MapToOov, Error };

// Pads (pre-padding and pre-truncation, as Keras' pad_sequences) to the model's input length.
// Ids at or beyond `vocabulary_size` (the model's Embedding input_dim; 0 = no check) are mapped to
// the data set's OOV id with a warning, or rejected with DataError under OovPolicy::Error: the
// tutorial sizes its Embedding from x_train alone.
TrainData make_train_data(const DatasetSplit& split, std::int32_t sequence_length, std::int64_t vocabulary_size = 0,
                          OovPolicy policy = OovPolicy::MapToOov);

}  // namespace mirrorlab
