#pragma once
// What a data set looks like before training (sizes, classes, lengths, truncation), as numbers for
// the UI and as a text block for the CLI, plus "lints": plain checks that return a warning sentence
// for people, or "" when there is nothing to say.
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace mirrorlab {

struct DatasetStatistics {
    int64_t samples = 0;
    int32_t classes = 0;                // the data set's num_classes
    std::vector<int64_t> class_counts;  // one per class
    std::vector<std::string>
        class_names;  // one per class ("0", "1", ... when the data set has none)
    int32_t vocabulary_size = 0;
    int64_t tokens = 0;  // sum of sequence lengths (before padding/truncation)
    int32_t min_length = 0;
    int32_t median_length = 0;  // mean of the two middle lengths, rounded down, for even counts
    int32_t max_length = 0;
    double mean_length = 0.0;
    // Sequence lengths in bins of histogram_bin_width tokens: bin i holds lengths in
    // [i * width, (i + 1) * width). width = ceil((max_length + 1) / histogram_bins), at least 1;
    // the last bin holds max_length, so there are at most histogram_bins bins.
    std::vector<int64_t> length_histogram;
    int32_t histogram_bin_width = 1;
    double truncated_share = 0.0;  // share of samples longer than sequence_length (0..1)
    int32_t sequence_length = 0;
};

// An empty data set gives zero counts and lengths. Throws DataError when sequence_length or
// histogram_bins is not positive.
DatasetStatistics compute_statistics(const TextDataset& data, int32_t sequence_length,
                                     int32_t histogram_bins = 20);

// A text block for the CLI (UTF-8, ends with a newline): samples, classes with counts (the 10
// largest, then "…"), vocabulary, tokens, lengths, a small histogram and the truncation share.
std::string format_statistics(const DatasetStatistics& stats);

// More than half the samples are longer than the sequence length:
// "most sequences are truncated at 300 tokens (62 %); consider a longer sequence length ...".
std::string lint_truncation(const DatasetStatistics& stats);

// A global batch that does not split evenly over the replicas:
// "the global batch of 33 does not divide evenly over 2 replicas (17 + 16); ...". Replicas <= 1 or
// an even split give "". Shards as MirroredStrategy cuts them: the first replicas take the
// remainder.
std::string lint_uneven_batch(int32_t global_batch, int replicas);

// tf.data's cache() placed after shuffle() (as the Keras multi-GPU tutorial does) freezes the
// first epoch's order; explains that and what MirrorLab does instead. false gives "".
std::string lint_cache_after_shuffle(bool cache_after_shuffle);

}  // namespace mirrorlab
