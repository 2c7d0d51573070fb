#pragma once
// A person's text turned into the ids a model trained on a data set expects: the data set's own
// words and tokenisation (Keras' text_to_word_sequence: lower case, punctuation filtered, split on
// spaces), its start mark when it has one (Keras' start_char = 1 for Reuters), and its OOV id for
// words it does not know or whose id is beyond the model's Embedding.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.h"

namespace mirrorlab {

struct EncodedText {
    std::vector<std::int32_t> ids;           // unpadded; pad with pad_sequences
    std::vector<std::string> words;          // the text's words, in order
    std::vector<bool> known;                 // per word: has an id below the vocabulary limit
    std::int64_t unknown_count = 0;
};

// Throws DataError when the data set has no words (ids only: a reuters.npz without its word index)
// — then a text cannot be encoded, and the message says where to get the word index.
EncodedText encode_text(const TextDataset& data, std::string_view text, std::int64_t vocabulary_limit);

}  // namespace mirrorlab
