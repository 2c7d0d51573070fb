#pragma once
// Per-sample hashes of what keras.datasets.reuters.load_data() returns, in the text format that
// tests/golden/hash_keras_reuters.py writes (format in tests/golden/README.md). They let a test
// compare 11,228 samples id for id with a 130 KB file instead of the 2.7 MB data set, and name
// the first sample that differs.
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace mirrorlab::testsupport {

struct ReutersSampleHash {
    int label = 0;
    std::string ids_hash;  // the first 8 hex digits of sha256(ids as little-endian int32)
};

struct ReutersHashes {
    std::vector<std::string> comments;  // the "#" lines, without "# " (free text: source, caveats)
    std::string sha256;                 // over every sample (see the README); 64 hex digits
    std::vector<ReutersSampleHash> train, test;
};

// load_data()'s (x_train, y_train), (x_test, y_test): split.train, then split.validation.
ReutersHashes hash_load_data(const DatasetSplit& split, std::vector<std::string> comments);

std::string format_reuters_hashes(const ReutersHashes& hashes);
// Throws std::runtime_error naming the file and line of the first problem.
ReutersHashes read_reuters_hashes(const std::string& path);
ReutersHashes parse_reuters_hashes(const std::string& text, const std::string& source_name);

// "" when both hold the same samples; otherwise the first difference, e.g.
// "train sample 17 (line 23 of the file): ids differ (sha256 3fa0c1d2 in <a_name>, 9e1b0a77 in
// <b_name>)" or "test: 2246 samples in <a_name>, 2245 in <b_name>". Comments are not compared.
std::string first_difference(const ReutersHashes& a, const std::string& a_name,
                             const ReutersHashes& b, const std::string& b_name);

}  // namespace mirrorlab::testsupport
