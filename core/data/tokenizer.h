#pragma once
// Keras' `keras.preprocessing.text.Tokenizer` (keras 2.15 / tf-keras), word level: the same
// word splitting, the same word index and the same ids, so a corpus tokenized here matches what a
// person following the Keras text tutorials gets in Python.
//
// Splitting (Keras `text_to_word_sequence`): lower-case, replace every character in `filters` by a
// space, split on ' ', drop empty pieces. Only ' ' splits: '\r', non-breaking spaces and other
// whitespace not listed in `filters` stay inside words, exactly as in Keras.
//
// Lower-casing works on UTF-8 code points: every code point below U+0500 (ASCII, Latin-1, Latin
// Extended-A, IPA, Greek, Cyrillic) except Latin Extended-B (U+0180..U+024F) lower-cases exactly as
// Python's str.lower() (checked code point by code point; U+0130 'İ' becomes "i\u0307" as in
// Python). Differences from Python: Latin Extended-B and scripts above U+04FF (Armenian, Georgian,
// fullwidth Latin, ...) keep their case, and a word-final capital sigma becomes 'σ', not 'ς'. Bytes
// that are not valid UTF-8 are passed through unchanged (never split, lower-cased or filtered), so
// no input is mangled.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mirrorlab {

// Keras' default filters: punctuation plus tab and newline.
inline constexpr const char* kKerasDefaultFilters = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n";

struct TokenizerOptions {
    // 0 = keep every word; else, as in Keras, only words with index < num_words are kept (the
    // others are dropped, or become the OOV id when oov_token is set). Must be >= 0.
    int64_t num_words = 0;
    // When set, the OOV word gets index 1 and replaces words outside the vocabulary.
    std::optional<std::string> oov_token;
    bool lower = true;
    std::string filters = kKerasDefaultFilters;  // UTF-8; each code point is one filter character
};

// Keras `text_to_word_sequence` with split=' ' (see the top of this file).
std::vector<std::string> text_to_word_sequence(std::string_view text,
                                               std::string_view filters = kKerasDefaultFilters,
                                               bool lower = true);

// Lower-cases UTF-8 text as described at the top of this file; invalid bytes are kept as they are.
std::string utf8_to_lower(std::string_view text);

class Tokenizer {
  public:
    Tokenizer();
    // Throws DataError when num_words < 0.
    explicit Tokenizer(TokenizerOptions options);

    const TokenizerOptions& options() const { return options_; }

    // Counts words; may be called several times (counts add up, as in Keras) and rebuilds the
    // index: ranked by count, ties in order of first appearance (Keras sorts its insertion-ordered
    // counts with Python's stable sort). Index 0 is never a word (padding); 1 is the OOV token when
    // set. A word equal to the OOV token counts as the OOV token and gets no index of its own
    // (Keras would give it a second index and leave a hole at 1).
    void fit_on_texts(const std::vector<std::string>& texts);
    // fit_on_texts(texts) and then texts_to_sequences(texts), the same ids, each text split once.
    std::vector<std::vector<int32_t>> fit_on_texts_and_sequence(const std::vector<std::string>& texts);

    // Keras `texts_to_sequences`: unknown words and words with index >= num_words are dropped, or
    // become 1 when oov_token is set. Every id is < vocabulary_size().
    std::vector<std::vector<int32_t>> texts_to_sequences(
        const std::vector<std::string>& texts) const;
    std::vector<int32_t> text_to_sequence(std::string_view text) const;

    // index -> word for every word seen (not cut by num_words); [0] is "" (padding), [1] the OOV
    // token when set.
    const std::vector<std::string>& index_word() const { return index_word_; }
    // The word's index (not cut by num_words), or 0 when it was never seen.
    int32_t index_of(std::string_view word) const;
    // How often fit_on_texts saw the word (0 when never).
    int64_t count_of(std::string_view word) const;

    // Distinct words seen by fit_on_texts (the OOV token is not counted unless it occurred).
    int64_t word_count() const { return static_cast<int64_t>(order_.size()); }
    int64_t document_count() const { return document_count_; }
    // Every id texts_to_sequences produces is < this: index_word().size(), capped at num_words.
    int32_t vocabulary_size() const;

    // Ids back to words joined by ' ' (Keras `sequences_to_texts`), except that 0 (padding) is
    // always skipped. Ids >= vocabulary_size() and negative ids become the OOV token when set and
    // are skipped otherwise.
    std::string decode(const std::vector<int32_t>& ids) const;

  private:
    void rebuild_index();
    int64_t count_word(std::string&& word);

    TokenizerOptions options_;
    int64_t document_count_ = 0;
    std::vector<std::string> order_;  // words in order of first appearance: their places
    std::vector<int64_t> counts_;     // by place
    std::unordered_map<std::string, int64_t> first_seen_;  // word -> place
    std::vector<std::string> index_word_;
    std::unordered_map<std::string, int32_t> word_index_;
};

}  // namespace mirrorlab
