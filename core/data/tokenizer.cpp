#include "core/data/tokenizer.h"
#include "core/util/utf8.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "core/util/cancellation.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// One step through UTF-8: the code point at `pos` and its byte length, or nothing when the bytes
// there are not a valid (shortest-form, non-surrogate) UTF-8 sequence.
struct Decoded {
    char32_t cp = 0;
    size_t length = 0;  // 0 = invalid byte at pos
};

Decoded decode_at(std::string_view s, size_t pos) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char b0 = byte(pos);
    if (b0 < 0x80) return {b0, 1};
    size_t length = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        length = 2;
        cp = b0 & 0x1F;
        min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        length = 3;
        cp = b0 & 0x0F;
        min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        length = 4;
        cp = b0 & 0x07;
        min = 0x10000;
    } else {
        return {};
    }
    if (pos + length > s.size()) return {};
    for (size_t i = 1; i < length; ++i) {
        const unsigned char b = byte(pos + i);
        if ((b & 0xC0) != 0x80) return {};
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
    return {cp, length};
}


// Python's str.lower() for one code point in the covered blocks (see tokenizer.h); U+0130 is
// handled by the caller because it lower-cases to two code points.
char32_t lower_code_point(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c < 0x100) return (c >= 0xC0 && c <= 0xDE && c != 0xD7) ? c + 32 : c;
    if (c < 0x180) {  // Latin Extended-A: upper/lower pairs
        if (c <= 0x137) return (c % 2 == 0) ? c + 1 : c;
        if (c >= 0x139 && c <= 0x148) return (c % 2 == 1) ? c + 1 : c;
        if (c >= 0x14A && c <= 0x177) return (c % 2 == 0) ? c + 1 : c;
        if (c == 0x178) return 0xFF;
        if (c >= 0x179 && c <= 0x17E) return (c % 2 == 1) ? c + 1 : c;
        return c;
    }
    if (c >= 0x370 && c < 0x400) {  // Greek
        if (c == 0x386) return 0x3AC;
        if (c >= 0x388 && c <= 0x38A) return c + 37;
        if (c == 0x38C) return 0x3CC;
        if (c == 0x38E || c == 0x38F) return c + 63;
        if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
        if (c == 0x370 || c == 0x372 || c == 0x376 || c == 0x3F7 || c == 0x3FA) return c + 1;
        if (c >= 0x3D8 && c <= 0x3EF) return (c % 2 == 0) ? c + 1 : c;
        if (c == 0x37F) return 0x3F3;
        if (c == 0x3CF) return 0x3D7;
        if (c == 0x3F4) return 0x3B8;
        if (c == 0x3F9) return 0x3F2;
        if (c >= 0x3FD) return c - 0x82;  // U+03FD..U+03FF -> U+037B..U+037D
        return c;
    }
    if (c >= 0x400 && c < 0x500) {  // Cyrillic
        if (c <= 0x40F) return c + 80;
        if (c <= 0x42F) return c + 32;
        if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) ||
            (c >= 0x4D0 && c <= 0x4FF)) {
            return (c % 2 == 0) ? c + 1 : c;
        }
        if (c == 0x4C0) return 0x4CF;
        if (c >= 0x4C1 && c <= 0x4CE) return (c % 2 == 1) ? c + 1 : c;
        return c;
    }
    return c;
}

// The filter characters as a set of code points (ASCII in a table, the rest in a short list).
class FilterSet {
  public:
    explicit FilterSet(std::string_view filters) {
        size_t pos = 0;
        while (pos < filters.size()) {
            const Decoded d = decode_at(filters, pos);
            if (d.length == 0) {  // an invalid byte in the filters can never match valid text
                ++pos;
                continue;
            }
            if (d.cp < 0x80)
                ascii_[d.cp] = true;
            else
                other_.push_back(d.cp);
            pos += d.length;
        }
    }
    bool contains(char32_t cp) const {
        if (cp < 0x80) return ascii_[cp];
        return std::find(other_.begin(), other_.end(), cp) != other_.end();
    }

  private:
    std::array<bool, 128> ascii_{};
    std::vector<char32_t> other_;
};

// Lower-cases (when asked) and filters `text` in one pass, then splits on ' '.
std::vector<std::string> split_words(std::string_view text, const FilterSet& filters, bool lower) {
    std::vector<std::string> words;
    std::string current;
    auto flush = [&] {
        if (!current.empty()) words.push_back(std::move(current));
        current.clear();
    };
    size_t pos = 0;
    while (pos < text.size()) {
        const Decoded d = decode_at(text, pos);
        if (d.length == 0) {  // not UTF-8: keep the byte as it is
            current += text[pos];
            ++pos;
            continue;
        }
        pos += d.length;
        char32_t cp = d.cp;
        if (lower) {
            if (cp == 0x130) {  // 'İ' -> "i" + combining dot above, as Python
                current += 'i';
                append_utf8(current, 0x307);
                continue;
            }
            cp = lower_code_point(cp);
        }
        if (cp == U' ' || filters.contains(cp)) {
            flush();
        } else {
            append_utf8(current, cp);
        }
    }
    flush();
    return words;
}

[[noreturn]] void fail(const std::string& problem) {
    throw DataError("[tokenizer] " + problem);
}

}  // namespace

std::vector<std::string> text_to_word_sequence(std::string_view text, std::string_view filters,
                                               bool lower) {
    return split_words(text, FilterSet(filters), lower);
}

std::string utf8_to_lower(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const Decoded d = decode_at(text, pos);
        if (d.length == 0) {
            out += text[pos++];
            continue;
        }
        pos += d.length;
        if (d.cp == 0x130) {
            out += 'i';
            append_utf8(out, 0x307);
        } else {
            append_utf8(out, lower_code_point(d.cp));
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------

Tokenizer::Tokenizer() : Tokenizer(TokenizerOptions{}) {}

Tokenizer::Tokenizer(TokenizerOptions options) : options_(std::move(options)) {
    if (options_.num_words < 0) {
        fail("num_words is " + std::to_string(options_.num_words) +
             "; use 0 to keep every word or a positive limit");
    }
    rebuild_index();
}

// The word's place in order of first appearance, counted once more.
int64_t Tokenizer::count_word(std::string&& word) {
    const auto [it, inserted] = first_seen_.try_emplace(word, static_cast<int64_t>(order_.size()));
    if (inserted) {
        order_.push_back(std::move(word));
        counts_.push_back(0);
    }
    ++counts_[static_cast<size_t>(it->second)];
    return it->second;
}

void Tokenizer::fit_on_texts(const std::vector<std::string>& texts) {
    const FilterSet filters(options_.filters);
    for (const auto& text : texts) {
        throw_if_cancelled();
        ++document_count_;
        for (auto& word : split_words(text, filters, options_.lower)) count_word(std::move(word));
    }
    rebuild_index();
}

std::vector<std::vector<int32_t>> Tokenizer::fit_on_texts_and_sequence(const std::vector<std::string>& texts) {
    // Each token is first kept as its word's place in order of first appearance; once every text
    // is counted (the ranks depend on all of them), the places become ids as texts_to_sequences()
    // gives them. Splitting the texts twice was a third of a large CSV's load.
    const FilterSet filters(options_.filters);
    std::vector<std::vector<int32_t>> sequences;
    sequences.reserve(texts.size());
    for (const auto& text : texts) {
        throw_if_cancelled();
        ++document_count_;
        std::vector<int32_t> places;
        for (auto& word : split_words(text, filters, options_.lower)) {
            const int64_t place = count_word(std::move(word));
            if (place > std::numeric_limits<int32_t>::max()) {
                fail("the texts have more than " + std::to_string(std::numeric_limits<int32_t>::max()) + " distinct words");
            }
            places.push_back(static_cast<int32_t>(place));
        }
        sequences.push_back(std::move(places));
    }
    rebuild_index();
    // A place's id, or -1 where texts_to_sequences() drops the word (beyond num_words, no OOV).
    const int32_t limit = vocabulary_size();
    const bool oov = options_.oov_token.has_value();
    std::vector<int32_t> id_of_place(order_.size());
    for (size_t place = 0; place < order_.size(); ++place) {
        const int32_t id = word_index_.at(order_[place]);
        id_of_place[place] = id < limit ? id : oov ? 1 : -1;
    }
    for (auto& sequence : sequences) {
        for (int32_t& token : sequence) token = id_of_place[static_cast<size_t>(token)];
        std::erase(sequence, -1);
    }
    return sequences;
}

void Tokenizer::rebuild_index() {
    // Ranked by count, ties in order of first appearance: a stable sort of the places.
    std::vector<size_t> ranked;
    ranked.reserve(order_.size());
    for (size_t place = 0; place < order_.size(); ++place) {
        if (options_.oov_token && order_[place] == *options_.oov_token) continue;
        ranked.push_back(place);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return counts_[a] > counts_[b]; });
    const size_t total = ranked.size() + 1 + (options_.oov_token ? 1 : 0);
    if (total > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        fail("the vocabulary has " + std::to_string(total) +
             " words, more than 32-bit ids can hold");
    }
    index_word_.clear();
    word_index_.clear();
    index_word_.reserve(total);
    index_word_.emplace_back();  // 0: padding
    if (options_.oov_token) {
        index_word_.push_back(*options_.oov_token);
        word_index_.emplace(*options_.oov_token, 1);
    }
    for (const size_t place : ranked) {
        word_index_.emplace(order_[place], static_cast<int32_t>(index_word_.size()));
        index_word_.push_back(order_[place]);
    }
}

int32_t Tokenizer::index_of(std::string_view word) const {
    const auto it = word_index_.find(std::string(word));
    return it == word_index_.end() ? 0 : it->second;
}

int64_t Tokenizer::count_of(std::string_view word) const {
    const auto it = first_seen_.find(std::string(word));
    return it == first_seen_.end() ? 0 : counts_[static_cast<size_t>(it->second)];
}

int32_t Tokenizer::vocabulary_size() const {
    const auto size = static_cast<int64_t>(index_word_.size());
    return static_cast<int32_t>(options_.num_words > 0 ? std::min(size, options_.num_words) : size);
}

std::vector<int32_t> Tokenizer::text_to_sequence(std::string_view text) const {
    return texts_to_sequences({std::string(text)}).front();
}

std::vector<std::vector<int32_t>> Tokenizer::texts_to_sequences(
    const std::vector<std::string>& texts) const {
    const FilterSet filters(options_.filters);
    const int32_t limit = vocabulary_size();
    const bool oov = options_.oov_token.has_value();
    std::vector<std::vector<int32_t>> sequences;
    sequences.reserve(texts.size());
    for (const auto& text : texts) {
        throw_if_cancelled();
        std::vector<int32_t> ids;
        for (const auto& word : split_words(text, filters, options_.lower)) {
            const auto it = word_index_.find(word);
            if (it != word_index_.end() && it->second < limit)
                ids.push_back(it->second);
            else if (oov)
                ids.push_back(1);
        }
        sequences.push_back(std::move(ids));
    }
    return sequences;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    const int32_t limit = vocabulary_size();
    std::string text;
    for (int32_t id : ids) {
        if (id == 0) continue;
        const std::string* word = nullptr;
        if (id > 0 && id < limit)
            word = &index_word_[static_cast<size_t>(id)];
        else if (options_.oov_token)
            word = &*options_.oov_token;
        if (word == nullptr) continue;
        if (!text.empty()) text += ' ';
        text += *word;
    }
    return text;
}

}  // namespace mirrorlab
