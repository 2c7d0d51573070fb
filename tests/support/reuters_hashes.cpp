#include "support/reuters_hashes.h"

#include <QCryptographicHash>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mirrorlab::testsupport {

namespace {

void append_int32_le(QByteArray& bytes, std::int64_t value) {
    const auto v = static_cast<std::uint32_t>(static_cast<std::int32_t>(value));
    const char le[4] = {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff),
                        static_cast<char>((v >> 16) & 0xff), static_cast<char>((v >> 24) & 0xff)};
    bytes.append(le, 4);
}

QByteArray ids_bytes(const std::vector<std::int32_t>& ids) {
    QByteArray bytes;
    bytes.reserve(static_cast<qsizetype>(ids.size() * 4));
    for (std::int32_t id : ids) append_int32_le(bytes, id);
    return bytes;
}

std::vector<ReutersSampleHash> hash_split(const TextDataset& data, QCryptographicHash& all) {
    std::vector<ReutersSampleHash> out;
    out.reserve(data.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
        const QByteArray ids = ids_bytes(data.sequences[i]);
        QByteArray head;
        append_int32_le(head, data.labels[i]);
        append_int32_le(head, static_cast<std::int64_t>(data.sequences[i].size()));
        all.addData(head);
        all.addData(ids);
        const QByteArray digest = QCryptographicHash::hash(ids, QCryptographicHash::Sha256).toHex();
        out.push_back({data.labels[i], digest.left(8).toStdString()});
    }
    return out;
}

[[noreturn]] void bad(const std::string& source, int line, const std::string& what) {
    throw std::runtime_error(source + ":" + std::to_string(line) + ": " + what);
}

bool is_hex(const std::string& text, std::size_t length) {
    if (text.size() != length) return false;
    for (char c : text) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

}  // namespace

ReutersHashes hash_load_data(const DatasetSplit& split, std::vector<std::string> comments) {
    ReutersHashes hashes;
    hashes.comments = std::move(comments);
    QCryptographicHash all(QCryptographicHash::Sha256);
    hashes.train = hash_split(split.train, all);
    hashes.test = hash_split(split.validation, all);
    hashes.sha256 = all.result().toHex().toStdString();
    return hashes;
}

std::string format_reuters_hashes(const ReutersHashes& hashes) {
    std::ostringstream out;
    for (const auto& comment : hashes.comments) out << "# " << comment << "\n";
    out << "sha256 " << hashes.sha256 << "\n";
    out << "train " << hashes.train.size() << "\n";
    for (const auto& sample : hashes.train) out << sample.label << " " << sample.ids_hash << "\n";
    out << "test " << hashes.test.size() << "\n";
    for (const auto& sample : hashes.test) out << sample.label << " " << sample.ids_hash << "\n";
    return out.str();
}

ReutersHashes parse_reuters_hashes(const std::string& text, const std::string& source_name) {
    ReutersHashes hashes;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    std::vector<ReutersSampleHash>* split = nullptr;
    std::size_t expected = 0;
    bool seen_test = false;
    while (std::getline(in, line)) {
        ++number;
        if (line.starts_with("#")) {
            if (hashes.sha256.empty()) {
                hashes.comments.push_back(line.size() > 2 && line[1] == ' ' ? line.substr(2)
                                                                            : line.substr(1));
                continue;
            }
            bad(source_name, number, "a comment after the data");
        }
        std::istringstream words(line);
        std::string first, second, rest;
        words >> first >> second;
        if (first.empty() || second.empty() || (words >> rest))
            bad(source_name, number, "expected two words, got '" + line + "'");
        if (hashes.sha256.empty()) {
            if (first != "sha256" || !is_hex(second, 64))
                bad(source_name, number, "expected 'sha256 <64 hex digits>'");
            hashes.sha256 = second;
            continue;
        }
        if (first == "train" || first == "test") {
            if (split != nullptr && split->size() != expected) {
                bad(source_name, number,
                    "the previous split announced " + std::to_string(expected) +
                        " samples and has " + std::to_string(split->size()));
            }
            if ((first == "train") != (split == nullptr) || (first == "test" && seen_test)) {
                bad(source_name, number, "expected 'train N' first, then 'test N'");
            }
            split = first == "train" ? &hashes.train : &hashes.test;
            seen_test = seen_test || first == "test";
            try {
                expected = std::stoul(second);
            } catch (const std::exception&) {
                bad(source_name, number, "'" + second + "' is not a sample count");
            }
            continue;
        }
        if (split == nullptr) bad(source_name, number, "a sample before 'train N'");
        ReutersSampleHash sample;
        try {
            std::size_t used = 0;
            sample.label = std::stoi(first, &used);
            if (used != first.size() || sample.label < 0) throw std::invalid_argument(first);
        } catch (const std::exception&) {
            bad(source_name, number, "'" + first + "' is not a label");
        }
        if (!is_hex(second, 8))
            bad(source_name, number, "'" + second + "' is not 8 lower-case hex digits");
        sample.ids_hash = second;
        split->push_back(sample);
    }
    if (!seen_test) bad(source_name, number, "no 'test N' line");
    if (split->size() != expected) {
        bad(source_name, number,
            "the test split announced " + std::to_string(expected) + " samples and has " +
                std::to_string(split->size()));
    }
    return hashes;
}

ReutersHashes read_reuters_hashes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_reuters_hashes(text.str(), path);
}

std::string first_difference(const ReutersHashes& a, const std::string& a_name,
                             const ReutersHashes& b, const std::string& b_name) {
    // The line of b's file that holds a sample (comments, sha256, "train N", train samples, "test
    // N").
    const std::size_t train_first_line = b.comments.size() + 3;
    const std::size_t test_first_line = train_first_line + b.train.size() + 1;
    const std::pair<const char*, std::pair<const std::vector<ReutersSampleHash>*,
                                           const std::vector<ReutersSampleHash>*>>
        splits[] = {{"train", {&a.train, &b.train}}, {"test", {&a.test, &b.test}}};
    for (const auto& [name, pair] : splits) {
        const auto& [xs, ys] = pair;
        const std::size_t first_line =
            std::string(name) == "train" ? train_first_line : test_first_line;
        const std::size_t common = std::min(xs->size(), ys->size());
        for (std::size_t i = 0; i < common; ++i) {
            const ReutersSampleHash& x = (*xs)[i];
            const ReutersSampleHash& y = (*ys)[i];
            if (x.label == y.label && x.ids_hash == y.ids_hash) continue;
            std::string what = std::string(name) + " sample " + std::to_string(i) + " (line " +
                               std::to_string(first_line + i) + " of " + b_name + "): ";
            if (x.label != y.label) {
                what += "label " + std::to_string(x.label) + " in " + a_name + ", " +
                        std::to_string(y.label) + " in " + b_name;
                if (x.ids_hash != y.ids_hash) what += "; ";
            }
            if (x.ids_hash != y.ids_hash) {
                what += "ids differ (sha256 " + x.ids_hash + "... in " + a_name + ", " +
                        y.ids_hash + "... in " + b_name + ")";
            }
            return what;
        }
        if (xs->size() != ys->size()) {
            return std::string(name) + ": " + std::to_string(xs->size()) + " samples in " + a_name +
                   ", " + std::to_string(ys->size()) + " in " + b_name;
        }
    }
    // Every sample's 32-bit prefix agrees; the full sha256 over all samples decides.
    if (a.sha256 != b.sha256) {
        return "every sample's hash prefix agrees but the sha256 over all samples differs (" +
               a.sha256 + " in " + a_name + ", " + b.sha256 + " in " + b_name + ")";
    }
    return {};
}

}  // namespace mirrorlab::testsupport
