#include "core/data/keras_reuters.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

#include "core/data/npy.h"
#include "core/data/numpy_random.h"
#include "core/data/zip_reader.h"
#include "core/util/cancellation.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab {

namespace {

[[noreturn]] void fail_load(const std::string& problem) {
    throw DataError("[keras_load_data] " + problem);
}

NpyArray read_member(const ZipReader& zip, const char* entry) {
    const std::string member = std::string(entry) + ".npy";
    const ZipEntry* e = zip.find(member);
    if (e == nullptr) {
        std::string listing;
        for (const auto& other : zip.entries())
            listing += (listing.empty() ? "'" : ", '") + other.name + "'";
        throw DataError(zip.source_name() + ": has no '" + member +
                        "' entry, so it is not Keras' reuters.npz (entries: " +
                        (listing.empty() ? std::string("none") : listing) + ")");
    }
    return parse_npy(zip.read(*e), zip.source_name() + ": entry '" + member + "'");
}

std::string label_too_large(int64_t label, size_t index) {
    return "label " + std::to_string(label) + " at index " + std::to_string(index) +
           " is too large: labels are class numbers 0, 1, 2, ... (the class count is the largest "
           "label + 1), and MirrorLab supports at most " +
           std::to_string(kMaxClasses) + " classes; renumber the classes from 0";
}

std::string home_dir() {
    const char* home = std::getenv("HOME");
    return home != nullptr ? std::string(home) : std::string();
}

}  // namespace

RawReuters read_reuters_npz(const std::string& path) {
    return read_reuters_npz_bytes(read_archive_file(path), path);
}

RawReuters read_reuters_npz_bytes(std::vector<uint8_t> bytes, const std::string& source_name) {
    const ZipReader zip(std::move(bytes), source_name);
    // A ragged x made otherwise than Keras made it (numpy arrays inside, float ids) was refused in
    // pickle's terms only ("opcode BINFLOAT", "global numpy._core.multiarray.scalar"): say how to
    // save it so that it loads.
    const auto member = [&](const char* name, const char* how) {
        try {
            return read_member(zip, name);
        } catch (const DataError& e) {
            const std::string what = e.what();
            if (what.find("pickle") == std::string::npos) throw;
            throw DataError(what + "; save " + name + " as Keras' reuters.npz holds it: " + how);
        }
    };
    NpyArray x = member("x", "an object array of Python lists of int ids, np.array([list(map(int, a)) for a in xs], dtype=object)");
    const NpyArray y = member("y", "an integer array, np.array(labels, dtype=np.int64)");
    if (x.kind != NpyKind::Object || x.shape.size() != 1) {
        throw DataError(x.source + ": holds a '" + x.descr + "' array of " +
                        std::to_string(x.shape.size()) +
                        " dimensions, expected a 1-D object array of word-id lists");
    }
    if (y.shape.size() != 1) {
        throw DataError(y.source + ": holds a " + std::to_string(y.shape.size()) +
                        "-dimensional array, expected a 1-D array of labels");
    }
    RawReuters raw;
    raw.labels = y.to_int64();
    raw.xs = std::move(x.objects);
    if (raw.xs.empty()) {
        throw DataError(source_name + ": x holds no wires; save the wires' word-id lists in x and their labels in y");
    }
    if (raw.xs.size() != raw.labels.size()) {
        throw DataError(source_name + ": x has " + std::to_string(raw.xs.size()) +
                        " wires but y has " + std::to_string(raw.labels.size()) +
                        " labels; they must match");
    }
    for (size_t i = 0; i < raw.labels.size(); ++i) {
        if (raw.labels[i] < 0) {
            throw DataError(source_name + ": label " + std::to_string(raw.labels[i]) +
                            " at index " + std::to_string(i) + " is negative");
        }
        if (raw.labels[i] >= kMaxClasses)
            throw DataError(source_name + ": " + label_too_large(raw.labels[i], i));
    }
    return raw;
}

namespace {

// Keras' load_data() would accept (or fail on) these inputs and options; ours fail here, named.
void check_load_inputs(const RawReuters& raw, const KerasLoadOptions& o) {
    if (raw.xs.size() != raw.labels.size()) {
        fail_load(std::to_string(raw.xs.size()) + " wires but " +
                  std::to_string(raw.labels.size()) + " labels; they must match");
    }
    if (o.num_words < 0 || o.skip_top < 0 || o.maxlen < 0) {
        fail_load(
            "num_words, skip_top and maxlen must be >= 0 (0 = None for num_words and maxlen)");
    }
    if (!(o.test_split >= 0.0 && o.test_split <= 1.0)) {
        fail_load("test_split must be between 0 and 1, got " + std::to_string(o.test_split));
    }
    if (o.seed > 0xffffffffu)
        fail_load("seed must be between 0 and 2**32 - 1, as numpy's RandomState requires");

    // The class count is the largest label + 1 and sizes per-class tables and the output layer,
    // so a stray huge label must not decide it.
    for (size_t i = 0; i < raw.labels.size(); ++i) {
        if (raw.labels[i] >= kMaxClasses) fail_load(label_too_large(raw.labels[i], i));
    }
}

// if not num_words: num_words = max(max(x) for x in xs); then
// [w if skip_top <= w < num_words else oov_char for w in x], or drop w when oov_char is None.
void limit_vocabulary(std::vector<std::vector<int64_t>>& xs, const KerasLoadOptions& o) {
    int64_t num_words = o.num_words;
    if (num_words == 0) {
        if (xs.empty())
            fail_load(
                "no wire is left to take the largest id from (Keras fails here too: max() of an "
                "empty sequence)");
        num_words = std::numeric_limits<int64_t>::min();
        for (size_t i = 0; i < xs.size(); ++i) {
            if (xs[i].empty()) {
                fail_load(
                    "a wire is empty and num_words is None (Keras fails here too: max() of an "
                    "empty sequence)");
            }
            num_words = std::max(num_words, *std::max_element(xs[i].begin(), xs[i].end()));
        }
    }
    for (auto& seq : xs) {
        if (o.oov_char >= 0) {
            for (int64_t& w : seq) {
                if (!(o.skip_top <= w && w < num_words)) w = o.oov_char;
            }
        } else {
            std::erase_if(seq, [&](int64_t w) { return !(o.skip_top <= w && w < num_words); });
        }
    }
}

}  // namespace

DatasetSplit keras_load_data(RawReuters raw, const KerasLoadOptions& o, std::string name) {
    check_load_inputs(raw, o);

    // rng = np.random.RandomState(seed); indices = np.arange(len(xs)); rng.shuffle(indices)
    NumpyRandomState rng(static_cast<uint32_t>(o.seed));
    const std::vector<int64_t> indices = rng.shuffled_indices(raw.xs.size());

    // xs = [[start_char] + [w + index_from for w in x] for x in xs], then remove_long_seq(maxlen)
    // keeps len(x) < maxlen. Doing both in one pass gives the same lists in the same order.
    std::vector<std::vector<int64_t>> xs;
    std::vector<int64_t> labels;
    xs.reserve(raw.xs.size());
    labels.reserve(raw.xs.size());
    for (int64_t index : indices) {
        const auto& source = raw.xs[static_cast<size_t>(index)];
        std::vector<int64_t> seq;
        seq.reserve(source.size() + 1);
        if (o.start_char >= 0) seq.push_back(o.start_char);
        for (int64_t w : source) {
            int64_t shifted = 0;
            if (__builtin_add_overflow(w, int64_t{o.index_from}, &shifted)) {
                fail_load("word id " + std::to_string(w) + " overflows when index_from is added");
            }
            seq.push_back(shifted);
        }
        // Each wire is held once at a time, not twice: the whole corpus is ~10 MB of int64 ids.
        std::vector<int64_t>().swap(raw.xs[static_cast<size_t>(index)]);
        if (o.maxlen > 0 && static_cast<int64_t>(seq.size()) >= o.maxlen) continue;
        xs.push_back(std::move(seq));
        labels.push_back(raw.labels[static_cast<size_t>(index)]);
    }

    limit_vocabulary(xs, o);

    // idx = int(len(xs) * (1 - test_split)): the same double arithmetic, truncated as int() does.
    const auto split = static_cast<size_t>(static_cast<double>(xs.size()) * (1.0 - o.test_split));

    DatasetSplit out;
    int64_t largest_label = -1;
    int64_t largest_train_id = -1, largest_id = -1;
    for (size_t i = 0; i < xs.size(); ++i) {
        TextDataset& part = i < split ? out.train : out.validation;
        if (labels[i] < 0) fail_load("label " + std::to_string(labels[i]) + " is negative");
        largest_label = std::max(largest_label, labels[i]);
        part.labels.push_back(static_cast<int32_t>(labels[i]));
        std::vector<int32_t> seq;
        seq.reserve(xs[i].size());
        for (int64_t w : xs[i]) {
            // Every id left is >= 0: it passed skip_top <= w, or it is oov_char >= 0.
            if (w > std::numeric_limits<int32_t>::max())
                fail_load("word id " + std::to_string(w) + " does not fit in 32 bits");
            seq.push_back(static_cast<int32_t>(w));
            largest_id = std::max(largest_id, w);
            if (i < split) largest_train_id = std::max(largest_train_id, w);
        }
        part.sequences.push_back(std::move(seq));
        std::vector<int64_t>().swap(xs[i]);  // its 32-bit copy is made
    }
    const int64_t vocabulary = (split > 0 ? largest_train_id : largest_id) + 1;
    for (TextDataset* part : {&out.train, &out.validation}) {
        part->name = name;
        part->synthetic = false;
        part->num_classes = static_cast<int32_t>(largest_label + 1);
        part->vocabulary_size = static_cast<int32_t>(std::max<int64_t>(vocabulary, 0));
    }
    return out;
}

const std::vector<std::string>& keras_reuters_label_names() {
    static const std::vector<std::string> names = {
        "cocoa",        "grain",   "veg-oil",   "earn",
        "acq",          "wheat",   "copper",    "housing",
        "money-supply", "coffee",  "sugar",     "trade",
        "reserves",     "ship",    "cotton",    "carcass",
        "crude",        "nat-gas", "cpi",       "money-fx",
        "interest",     "gnp",     "meal-feed", "alum",
        "oilseed",      "gold",    "tin",       "strategic-metal",
        "livestock",    "retail",  "ipi",       "iron-steel",
        "rubber",       "heat",    "jobs",      "lei",
        "bop",          "zinc",    "orange",    "pet-chem",
        "dlr",          "gas",     "silver",    "wpi",
        "hog",          "lead"};
    return names;
}

std::vector<std::string> find_keras_reuters_candidates() {
    std::vector<std::string> out;
    auto add = [&](const std::filesystem::path& p) {
        const std::string s = p.lexically_normal().string();
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    };
    const std::string home = home_dir();
    const char* keras_home = std::getenv("KERAS_HOME");
    if (keras_home != nullptr && *keras_home != '\0')
        add(std::filesystem::path(keras_home) / "datasets" / "reuters.npz");
    if (!home.empty()) add(std::filesystem::path(home) / ".keras" / "datasets" / "reuters.npz");
    // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
    const char* xdg_cache = std::getenv("XDG_CACHE_HOME");
    if (xdg_cache != nullptr && xdg_cache[0] == '/') {
        add(std::filesystem::path(xdg_cache) / "mirrorlab" / "reuters.npz");
    } else if (!home.empty()) {
        add(std::filesystem::path(home) / ".cache" / "mirrorlab" / "reuters.npz");
    }
    return out;
}

std::optional<std::string> find_keras_reuters() {
    for (const std::string& candidate : find_keras_reuters_candidates()) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    }
    return std::nullopt;
}

WordIndex read_reuters_word_index(const std::string& json_path) {
    json::Value doc;
    try {
        doc = json::parse_file(json_path);
    } catch (const DataError&) {
        throw;
    } catch (const Cancelled&) {
        throw;  // a load stopped on purpose, not a bad file
    } catch (const Error& e) {
        throw DataError(e.what());  // parse errors already name the file, line and column
    }
    if (!doc.is_object()) {
        throw DataError(json_path + ": is a JSON " + doc.type_name() +
                        ", expected an object of word -> index");
    }
    WordIndex index;
    index.reserve(doc.size());
    for (const auto& [word, value] : doc.as_object()) {
        if (!value.is_integer()) {
            throw DataError(json_path + ": the index of '" + word + "' is a " + value.type_name() +
                            ", expected an integer");
        }
        index[word] = value.as_int64();
    }
    return index;
}

std::vector<std::string> ranked_words(const WordIndex& word_index) {
    constexpr int64_t kMaxRank = 100'000'000;
    int64_t largest = 0;
    for (const auto& [word, rank] : word_index) {
        if (rank > kMaxRank) {
            throw DataError("word index: the rank of '" + word + "' is " + std::to_string(rank) +
                            ", more than " + std::to_string(kMaxRank));
        }
        largest = std::max(largest, rank);
    }
    std::vector<std::string> ranked(static_cast<size_t>(largest));
    for (const auto& [word, rank] : word_index) {
        if (rank < 1) continue;
        std::string& slot = ranked[static_cast<size_t>(rank - 1)];
        if (slot.empty() || word < slot) slot = word;
    }
    return ranked;
}

WordIndex word_index_of(const std::vector<std::string>& ranked) {
    WordIndex index;
    index.reserve(ranked.size());
    for (size_t i = 0; i < ranked.size(); ++i) {
        if (!ranked[i].empty()) index.emplace(ranked[i], static_cast<int64_t>(i) + 1);
    }
    return index;
}

std::vector<std::string> keras_id_words(const std::vector<std::string>& ranked,
                                        int32_t index_from) {
    std::vector<std::string> words;
    words.reserve(ranked.size() + static_cast<size_t>(std::max(index_from, 0)) + 1);
    // Rank 1 is id index_from + 1: the ids up to index_from are marks.
    for (int32_t id = 0; id <= index_from; ++id) {
        words.emplace_back(id == 0 ? "" : id == 1 ? "<start>" : id == 2 ? "<oov>" : "<unused>");
    }
    words.insert(words.end(), ranked.begin(), ranked.end());
    return words;
}

void write_reuters_word_index(const std::string& path, const WordIndex& word_index) {
    std::vector<std::pair<int64_t, const std::string*>> by_rank;
    by_rank.reserve(word_index.size());
    for (const auto& [word, rank] : word_index) by_rank.emplace_back(rank, &word);
    std::sort(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    });
    json::Value::Object object;
    for (const auto& [rank, word] : by_rank) object.emplace_back(*word, json::Value(rank));
    const std::string text = json::dump(json::Value(std::move(object)));
    const std::filesystem::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
    const std::string temporary = path + ".part";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.close();
        if (!out)
            throw DataError("cannot write the word index " + temporary + ": " +
                            std::strerror(errno));
    }
    std::filesystem::rename(temporary, target, ec);
    if (ec) {
        std::filesystem::remove(temporary, ec);
        throw DataError("cannot write the word index " + path + ": " + ec.message());
    }
}

std::string mirrorlab_cache_dir() {
    const char* xdg_cache = std::getenv("XDG_CACHE_HOME");
    if (xdg_cache != nullptr && xdg_cache[0] == '/')
        return (std::filesystem::path(xdg_cache) / "mirrorlab").string();
    const std::string home = home_dir();
    return home.empty() ? std::string()
                        : (std::filesystem::path(home) / ".cache" / "mirrorlab").string();
}

std::vector<WordIndexFile> find_reuters_word_index_candidates(const std::string& npz_path) {
    std::vector<WordIndexFile> out;
    auto add = [&](const std::filesystem::path& p, bool derived) {
        const std::string s = p.lexically_normal().string();
        for (const auto& seen : out) {
            if (seen.path == s) return;
        }
        out.push_back({s, derived});
    };
    if (!npz_path.empty())
        add(std::filesystem::path(npz_path).parent_path() / kKerasWordIndexName, false);
    for (const std::string& npz : find_keras_reuters_candidates()) {
        add(std::filesystem::path(npz).parent_path() / kKerasWordIndexName, false);
    }
    if (const std::string cache = mirrorlab_cache_dir(); !cache.empty()) {
        add(std::filesystem::path(cache) / kDerivedWordIndexName, true);
    }
    return out;
}

std::optional<WordIndexFile> find_reuters_word_index(const std::string& npz_path) {
    for (const WordIndexFile& candidate : find_reuters_word_index_candidates(npz_path)) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate.path, ec)) return candidate;
    }
    return std::nullopt;
}

std::string decode_wire(const std::vector<int32_t>& ids, const WordIndex& word_index,
                        int32_t index_from) {
    std::unordered_map<int64_t, const std::string*> reverse;
    reverse.reserve(word_index.size());
    for (const auto& [word, rank] : word_index) {
        auto [it, inserted] = reverse.emplace(rank, &word);
        if (!inserted && word < *it->second) it->second = &word;
    }
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ' ';
        const auto it = reverse.find(int64_t{ids[i]} - index_from);
        out += it != reverse.end() ? *it->second : std::string("?");
    }
    return out;
}

OovReport map_ids_to_oov(TextDataset& data, int32_t vocabulary_size, int32_t oov_id,
                         bool error_instead) {
    const std::string who =
        data.name.empty() ? std::string("data set") : "data set '" + data.name + "'";
    if (vocabulary_size <= 0 || oov_id < 0 || oov_id >= vocabulary_size) {
        throw DataError("[data] " + who + ": cannot map ids to OOV id " + std::to_string(oov_id) +
                        " with a vocabulary of " + std::to_string(vocabulary_size) +
                        " (the OOV id must be inside the vocabulary)");
    }
    OovReport report;
    for (const auto& seq : data.sequences) {
        for (int32_t id : seq) {
            if (id >= vocabulary_size) {
                ++report.replaced;
                report.largest_id = std::max(report.largest_id, id);
            }
        }
    }
    if (report.replaced > 0 && error_instead) {
        throw DataError("[data] " + who + ": " + std::to_string(report.replaced) + " token id" +
                        (report.replaced == 1 ? " is" : "s are") + " outside the vocabulary of " +
                        std::to_string(vocabulary_size) + " (largest id " +
                        std::to_string(report.largest_id) + "); an Embedding with input_dim " +
                        std::to_string(vocabulary_size) +
                        " cannot look them up. Map them to the OOV id or enlarge the vocabulary.");
    }
    if (report.replaced > 0) {
        for (auto& seq : data.sequences) {
            for (int32_t& id : seq) {
                if (id >= vocabulary_size) id = oov_id;
            }
        }
    }
    data.vocabulary_size = vocabulary_size;
    return report;
}

}  // namespace mirrorlab
