#include "core/data/reuters21578.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <system_error>
#include <unordered_map>

#include "core/data/python2_dict_order.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& problem) {
    throw DataError("[reuters21578] " + problem);
}

// One wire with topics: where its text lies in its file.
struct TopicWire {
    size_t file = 0;
    size_t begin = 0;
    size_t end = 0;
    std::string topic;
};

std::string read_file(const fs::path& path) {
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::is_regular_file(status)) {
        fail("cannot read " + path.string() + ": " +
             (ec ? ec.message() : std::string("not a regular file")));
    }
    const auto size = fs::file_size(path, ec);
    if (ec) fail("cannot read " + path.string() + ": " + ec.message());
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open " + path.string() + ": " + std::strerror(errno));
    std::string text(static_cast<size_t>(size), '\0');
    if (size > 0 && !in.read(text.data(), static_cast<std::streamsize>(size))) {
        fail("cannot read " + path.string() + " (read " + std::to_string(in.gcount()) + " of " +
             std::to_string(size) + " bytes)");
    }
    return text;
}

std::string latin1_to_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x80) {
            out.push_back(ch);
        } else {
            out.push_back(static_cast<char>(0xC0 | (c >> 6)));
            out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
        }
    }
    return out;
}

// Step 5 of the recipe, per byte: is it a separator, and its lower-case form.
struct TokenTables {
    std::array<bool, 256> separator{};
    std::array<char, 256> lower{};
};

constexpr TokenTables make_token_tables() {
    TokenTables t;
    for (int c = 0; c < 256; ++c) {
        int l = c;
        if (c >= 'A' && c <= 'Z') l = c + 32;
        t.lower[static_cast<size_t>(c)] = static_cast<char>(static_cast<unsigned char>(l));
    }
    const std::string_view separators = "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n ";
    for (char c : separators) t.separator[static_cast<unsigned char>(c)] = true;
    return t;
}

constexpr TokenTables kTokens = make_token_tables();

// Calls `emit(const std::string& word)` for every word of `text`, lower-cased into `buffer`.
template <typename Emit>
void for_each_word(std::string_view text, std::string& buffer, Emit&& emit) {
    buffer.clear();
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (kTokens.separator[c]) {
            if (!buffer.empty()) {
                emit(buffer);
                buffer.clear();
            }
        } else {
            buffer.push_back(kTokens.lower[c]);
        }
    }
    if (!buffer.empty()) emit(buffer);
}

constexpr std::string_view kTopicsTag = "<TOPICS>";
constexpr std::string_view kBodyTag = "<BODY>";
constexpr std::string_view kClose = "</";

// Steps 2 and 3 on one file's text; appends its topic wires.
void scan_file(const std::string& text, size_t file_index, const std::string& file_name,
               std::vector<TopicWire>& wires, Reuters21578Corpus& corpus) {
    size_t pos = 0;
    while (true) {
        const size_t tag = text.find(kTopicsTag, pos);
        if (tag == std::string::npos) break;
        const size_t content = tag + kTopicsTag.size();
        const size_t close = text.find(kClose, content);
        if (close == std::string::npos) {
            fail(file_name + ": <TOPICS> at byte " + std::to_string(tag) +
                 " has no closing tag (truncated file?)");
        }
        pos = content;
        if (close == content) continue;  // <TOPICS></TOPICS>: skipped

        ++corpus.wires_with_topics;
        if (text.compare(close, 7, "</D><D>") == 0) ++corpus.multi_topic_wires;

        TopicWire wire;
        wire.file = file_index;
        for (size_t i = content; i < close;) {
            if (text.compare(i, 3, "<D>") == 0) {
                i += 3;
            } else {
                wire.topic.push_back(text[i]);
                ++i;
            }
        }

        const size_t body = text.find(kBodyTag, content);
        const size_t next_topics = text.find(kTopicsTag, content);
        if (body == std::string::npos || (next_topics != std::string::npos && body > next_topics)) {
            ++corpus.wires_without_body;
        }
        // Python: s[s.find('<BODY>') + 6:] with find == -1 starts 5 bytes into s.
        const size_t begin = body == std::string::npos
                                 ? std::min(content + kBodyTag.size() - 1, text.size())
                                 : body + kBodyTag.size();
        const size_t end = text.find(kClose, begin);
        if (end == std::string::npos) {
            fail(file_name + ": the text of the wire whose <TOPICS> is at byte " +
                 std::to_string(tag) + " has no closing tag (truncated file?)");
        }
        wire.begin = begin;
        wire.end = end;
        wires.push_back(std::move(wire));
    }
}

}  // namespace

std::vector<std::string> reuters21578_file_names(const std::string& directory) {
    std::error_code ec;
    const fs::path dir(directory);
    if (!fs::is_directory(dir, ec)) {
        fail("Reuters-21578 folder not found: '" + directory +
             "' (expected the reut2-000.sgm ... reut2-021.sgm files of the UCI distribution)");
    }
    std::vector<std::string> names;
    fs::directory_iterator it(dir, ec);
    if (ec) fail("cannot list the Reuters-21578 folder '" + directory + "': " + ec.message());
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const std::string name = it->path().filename().string();
        if (name.size() > 10 && name.starts_with("reut2-") && name.ends_with(".sgm"))
            names.push_back(name);
    }
    if (ec) fail("cannot list the Reuters-21578 folder '" + directory + "': " + ec.message());
    if (names.empty()) {
        fail("no reut2-*.sgm files in '" + directory +
             "' (expected the reut2-000.sgm ... reut2-021.sgm files of the UCI distribution)");
    }
    std::sort(names.begin(), names.end());
    std::vector<std::string> paths;
    paths.reserve(names.size());
    for (const auto& name : names) paths.push_back((dir / name).string());
    return paths;
}

std::vector<std::string> reuters21578_tokenize(std::string_view text) {
    std::vector<std::string> words;
    std::string buffer;
    for_each_word(text, buffer, [&](const std::string& word) { words.push_back(word); });
    return words;
}

Reuters21578Corpus read_reuters21578(const std::string& directory,
                                     const Reuters21578Options& options) {
    Reuters21578Corpus corpus;
    const std::vector<std::string> paths = reuters21578_file_names(directory);

    std::vector<std::string> texts;
    texts.reserve(paths.size());
    std::vector<TopicWire> wires;
    for (size_t f = 0; f < paths.size(); ++f) {
        texts.push_back(read_file(paths[f]));
        scan_file(texts.back(), f, paths[f], wires, corpus);
    }

    // Step 4: keep topics with enough wires, number labels by first appearance.
    std::unordered_map<std::string, int64_t> wires_per_topic;
    for (const auto& wire : wires) ++wires_per_topic[wire.topic];
    std::unordered_map<std::string, int64_t> label_of;
    std::vector<const TopicWire*> kept;
    kept.reserve(wires.size());
    for (const auto& wire : wires) {
        if (wires_per_topic[wire.topic] < options.min_wires_per_topic) continue;
        auto [slot, inserted] =
            label_of.try_emplace(wire.topic, static_cast<int64_t>(corpus.topics.size()));
        if (inserted) corpus.topics.push_back(latin1_to_utf8(wire.topic));
        corpus.labels.push_back(slot->second);
        kept.push_back(&wire);
    }

    // Steps 5 and 6: tokenize the kept wires into ids (order of first appearance) counted in a
    // Python 2.7 dict, then rank by count, ties in the dict's iteration order (or first-seen
    // order).
    Python2StringDict word_counts;
    std::vector<int64_t> counts;  // id -> count
    std::string buffer;
    corpus.xs.reserve(kept.size());
    for (const TopicWire* wire : kept) {
        const std::string_view text(texts[wire->file].data() + wire->begin,
                                    wire->end - wire->begin);
        std::vector<int64_t> ids;
        for_each_word(text, buffer, [&](const std::string& word) {
            const auto [id, inserted] = word_counts.find_or_insert(word);
            if (inserted) counts.push_back(0);
            ++counts[id];
            ids.push_back(static_cast<int64_t>(id));
        });
        corpus.xs.push_back(std::move(ids));
    }
    std::vector<size_t> order;
    if (options.tie_order == Reuters21578TieOrder::kPython2Dict) {
        order = word_counts.iteration_order();
    } else {
        order.resize(counts.size());
        std::iota(order.begin(), order.end(), size_t{0});
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return counts[a] > counts[b]; });
    std::vector<int64_t> rank(counts.size());
    corpus.words.reserve(order.size());
    for (size_t r = 0; r < order.size(); ++r) {
        rank[order[r]] = static_cast<int64_t>(r) + 1;
        corpus.words.push_back(latin1_to_utf8(word_counts.key(order[r])));
    }
    for (auto& seq : corpus.xs) {
        for (auto& v : seq) v = rank[static_cast<size_t>(v)];
    }
    return corpus;
}

}  // namespace mirrorlab
