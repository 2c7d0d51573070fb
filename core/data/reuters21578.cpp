#include "core/data/reuters21578.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <system_error>
#include <unordered_map>

#include "core/data/python2_dict_order.h"
#include "core/util/error.h"
#include "core/util/file.h"

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

// A file checked out on Windows or unpacked with `unzip -a` has CRLF line ends: each '\r' stayed in
// the word before it ("said\r"), and the vocabulary grew by 9,000 words. The UCI files have LF
// only, so every CRLF is read as the LF it was.
std::string read_file(const fs::path& path) {
    std::string text;
    try {
        text = read_file_text(path.string(), kMaxTextDataFileBytes, "'" + path.string() + "'", "one Reuters-21578 file");
    } catch (const DataError& e) {
        fail(e.what());
    }
    if (text.find("\r\n") != std::string::npos) {
        size_t kept = 0;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
            text[kept++] = text[i];
        }
        text.resize(kept);
    }
    return text;
}

// The UCI distribution: reut2-000.sgm ... reut2-021.sgm, 1,000 articles each but the last (578),
// each ending with </REUTERS>. What the folder lacks of it, said as warnings: a missing, empty or
// cut file gave fewer wires (8,534 training samples instead of 8,982) without a word.
constexpr int kUciFiles = 22;

std::string uci_file_name(int index) {
    char name[16];
    std::snprintf(name, sizeof name, "reut2-%03d.sgm", index);
    return name;
}

bool is_uci_file_name(const std::string& name) {
    return name.size() == 13 && name.starts_with("reut2-") && name.ends_with(".sgm") &&
           std::all_of(name.begin() + 6, name.begin() + 9, [](char c) { return c >= '0' && c <= '9'; });
}

void check_uci_file(const std::string& path, std::string_view text, std::vector<std::string>& warnings) {
    const std::string name = fs::path(path).filename().string();
    int index = kUciFiles;
    for (int i = 0; i < kUciFiles; ++i) index = name == uci_file_name(i) ? i : index;
    if (index == kUciFiles) {  // reut2-022.sgm and on: read, but not the distribution's
        warnings.push_back("read " + path + ", which is not a file of the UCI distribution (reut2-000.sgm ... reut2-021.sgm): "
                           "the data is not Keras'");
        return;
    }
    const int64_t expected = index == kUciFiles - 1 ? 578 : 1000;
    int64_t articles = 0;
    for (size_t at = text.find("<REUTERS"); at != std::string_view::npos; at = text.find("<REUTERS", at + 8)) ++articles;
    const size_t end = text.find_last_not_of(" \t\r\n");
    const bool closed = end != std::string_view::npos && text.substr(0, end + 1).ends_with("</REUTERS>");
    if (articles == expected && closed) return;
    warnings.push_back(path + " holds " + std::to_string(articles) + " of the UCI file's " + std::to_string(expected) +
                       " articles" + (articles > 0 && !closed ? " and does not end with </REUTERS>" : "") +
                       " (it is empty, cut short, edited or another file): the data is not Keras'; replace it with the UCI "
                       "file (the distribution's SHA256SUMS tell a good copy)");
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
constexpr size_t kMaxTopicsBytes = 4096;
// The texts of a file's wires add up to about 0.35 times its size on the UCI files (at most 0.43).
// Keras' recipe gives a wire without a body the next body in the file, so a file of many bodiless
// wires before one long body would make every wire a copy of it: a few MB of SGML could ask for
// gigabytes of word ids. More than this many times the file's size (plus 1 MiB) is refused.
constexpr uint64_t kMaxTextToFileRatio = 8;

// text.find(needle, from) for a sequence of calls whose `from` does not go backwards. The recipe
// searches for the next <BODY> (and the next "</" after it) from every <TOPICS> tag; when many
// wires have no body of their own, each of those searches would run over the same long stretch of
// the file again, which makes a plain find quadratic (a 7.7 MB file took minutes). Remembering the
// last hit answers every later search that starts at or before it without scanning, so each byte
// is scanned about once per needle. Answers are exactly find()'s, whatever the order of calls.
class ForwardFinder {
  public:
    ForwardFinder(std::string_view text, std::string_view needle, int64_t& bytes_scanned)
        : text_(text), needle_(needle), bytes_scanned_(bytes_scanned) {}

    size_t find(size_t from) {
        // The cached hit is the first occurrence at or after from_, so also at or after `from`
        // when from_ <= from <= hit_ (npos: there is none after from_, so none after `from`).
        if (searched_ && from_ <= from && from <= hit_) return hit_;
        hit_ = text_.find(needle_, from);
        from_ = from;
        searched_ = true;
        const size_t stop = hit_ == std::string_view::npos ? text_.size() : hit_ + needle_.size();
        if (stop > from) bytes_scanned_ += static_cast<int64_t>(stop - from);
        return hit_;
    }

  private:
    std::string_view text_;
    std::string_view needle_;
    int64_t& bytes_scanned_;
    bool searched_ = false;
    size_t from_ = 0;
    size_t hit_ = std::string_view::npos;
};

// Steps 2 and 3 on one file's text; appends its topic wires.
void scan_file(const std::string& text, size_t file_index, const std::string& file_name,
               std::vector<TopicWire>& wires, Reuters21578Corpus& corpus) {
    // One finder per call site: each site's starting points only move forward.
    int64_t& scanned = corpus.bytes_searched;
    ForwardFinder topics_tags(text, kTopicsTag, scanned);
    ForwardFinder topics_ends(text, kClose, scanned);
    ForwardFinder bodies(text, kBodyTag, scanned);
    ForwardFinder text_ends(text, kClose, scanned);
    uint64_t text_bytes = 0;
    size_t pos = 0;
    while (true) {
        const size_t tag = topics_tags.find(pos);
        if (tag == std::string::npos) break;
        const size_t content = tag + kTopicsTag.size();
        const size_t close = topics_ends.find(content);
        if (close == std::string::npos) {
            fail(file_name + ": <TOPICS> at byte " + std::to_string(tag) +
                 " has no closing tag (truncated file?)");
        }
        pos = content;
        if (close == content) continue;  // <TOPICS></TOPICS>: skipped
        // Real topic lists are a few dozen bytes; a tag whose content runs on and on is not one
        // (and copying it for every later <TOPICS> inside it would be quadratic).
        if (close - content > kMaxTopicsBytes) {
            fail(file_name + ": <TOPICS> at byte " + std::to_string(tag) + " runs for " +
                 std::to_string(close - content) +
                 " bytes before its closing tag; this is not a Reuters-21578 SGML file");
        }

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

        const size_t body = bodies.find(content);
        const size_t next_topics = topics_tags.find(content);  // the next loop's search, too
        if (body == std::string::npos || (next_topics != std::string::npos && body > next_topics)) {
            ++corpus.wires_without_body;
        }
        // Python: s[s.find('<BODY>') + 6:] with find == -1 starts 5 bytes into s.
        const size_t begin = body == std::string::npos
                                 ? std::min(content + kBodyTag.size() - 1, text.size())
                                 : body + kBodyTag.size();
        const size_t end = text_ends.find(begin);
        if (end == std::string::npos) {
            fail(file_name + ": the text of the wire whose <TOPICS> is at byte " +
                 std::to_string(tag) + " has no closing tag (truncated file?)");
        }
        wire.begin = begin;
        wire.end = end;
        wires.push_back(std::move(wire));
        text_bytes += end - begin;
        if (text_bytes > kMaxTextToFileRatio * text.size() + (uint64_t{1} << 20)) {
            fail(file_name + ": the texts of its wires add up to more than " +
                 std::to_string(kMaxTextToFileRatio) +
                 " times the file's size, because many wires without a <BODY> take the same later "
                 "body (Keras' recipe); this is not the Reuters-21578 layout");
        }
    }
}

// The folder's files against the distribution's names: copies ignored, files missing.
void warn_of_other_files(const std::string& directory, const std::vector<std::string>& paths, std::vector<std::string> ignored,
                         std::vector<std::string>& warnings) {
    std::sort(ignored.begin(), ignored.end());
    for (const std::string& name : ignored) {
        warnings.push_back("ignored " + (fs::path(directory) / name).string() +
                           ": not a file name of the UCI distribution (reut2-000.sgm ... reut2-021.sgm), a copy would count its "
                           "wires twice");
    }
    std::vector<bool> present(kUciFiles, false);
    for (const std::string& path : paths) {
        for (int i = 0; i < kUciFiles; ++i) present[i] = present[i] || fs::path(path).filename() == uci_file_name(i);
    }
    std::string missing;
    int missing_count = 0;
    for (int i = 0; i < kUciFiles; ++i) {
        if (present[i]) continue;
        if (++missing_count <= 3) missing += (missing.empty() ? "" : ", ") + uci_file_name(i);
    }
    if (missing_count > 3) missing += " and " + std::to_string(missing_count - 3) + " more";
    if (missing_count > 0) {
        warnings.push_back("'" + directory + "' lacks " + missing + " of the UCI distribution's 22 files (reut2-000.sgm ... " +
                           "reut2-021.sgm): the data is not Keras'; copy the missing files there");
    }
}

}  // namespace

std::vector<std::string> reuters21578_file_names(const std::string& directory, std::vector<std::string>* ignored) {
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
        if (is_uci_file_name(name)) names.push_back(name);
        else if (ignored && name.starts_with("reut2-") && name.ends_with(".sgm")) ignored->push_back(name);
    }
    if (ec) fail("cannot list the Reuters-21578 folder '" + directory + "': " + ec.message());
    if (names.empty()) {
        fail("no reut2-NNN.sgm files in '" + directory +
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
    std::vector<std::string> ignored;
    const std::vector<std::string> paths = reuters21578_file_names(directory, &ignored);
    warn_of_other_files(directory, paths, ignored, corpus.warnings);

    // Two passes over the files, one file in memory at a time: which wires are kept depends on
    // every file's topics (step 4), and holding all 22 files (27 MB) until then was most of the
    // loader's peak memory. Reading them again costs ~10 ms from the page cache.
    std::vector<size_t> file_sizes;
    file_sizes.reserve(paths.size());
    std::vector<TopicWire> wires;
    for (size_t f = 0; f < paths.size(); ++f) {  // read_file_text() is where a cancelled load stops
        const std::string text = read_file(paths[f]);
        check_uci_file(paths[f], text, corpus.warnings);
        scan_file(text, f, paths[f], wires, corpus);
        file_sizes.push_back(text.size());
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
    std::string file_text;
    size_t file_in_memory = paths.size();  // none yet; kept wires come in file order
    for (const TopicWire* wire : kept) {
        if (wire->file != file_in_memory) {
            file_in_memory = wire->file;
            file_text = read_file(paths[file_in_memory]);
            if (file_text.size() != file_sizes[file_in_memory]) {
                fail(paths[file_in_memory] + " changed while it was being read (" +
                     std::to_string(file_sizes[file_in_memory]) + " bytes, then " +
                     std::to_string(file_text.size()) + "); load the data again once it is complete");
            }
        }
        const std::string_view text(file_text.data() + wire->begin, wire->end - wire->begin);
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
