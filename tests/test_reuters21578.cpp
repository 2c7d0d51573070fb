// The Reuters-21578 SGML importer: Keras' make_reuters_dataset recipe on tiny fixtures, and on the
// real UCI files (../shared/data/reuters21578/) when they are there (required under
// MIRRORLAB_REQUIRE_REAL_DATA=1, tests/support/real_data.h).
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/keras_reuters.h"
#include "core/data/python2_dict_order.h"
#include "core/data/reuters21578.h"
#include "core/data/source.h"
#include "core/util/error.h"
#include "support/real_data.h"
#include "support/timing.h"

using namespace mirrorlab;

namespace {

// The fixtures are stored as *.sgm.in so that no file in the repository looks like a piece of the
// real corpus; they get their real names in a temporary copy.
std::string prepare_fixtures() {
    static QTemporaryDir copy;
    const std::filesystem::path source = std::string(MIRRORLAB_TEST_DATA_DIR) + "/sgml";
    for (const auto& entry : std::filesystem::recursive_directory_iterator(source)) {
        auto target = std::filesystem::path(copy.path().toStdString()) / std::filesystem::relative(entry.path(), source);
        if (entry.is_directory()) {
            std::filesystem::create_directories(target);
        } else if (target.extension() == ".in") {
            std::filesystem::copy_file(entry.path(), target.replace_extension(), std::filesystem::copy_options::overwrite_existing);
        } else {
            std::filesystem::copy_file(entry.path(), target, std::filesystem::copy_options::overwrite_existing);
        }
    }
    return copy.path().toStdString();
}

const std::string kFixtures = prepare_fixtures();
const std::string kRealData = testsupport::reuters21578_dir().toStdString();

using Words = std::vector<std::string>;

// The message of the DataError `fn` throws ("" if it throws none).
template <typename Fn>
std::string data_error(Fn&& fn) {
    try {
        fn();
    } catch (const DataError& e) {
        return e.what();
    }
    return {};
}

void write_file(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    QVERIFY2(file.open(QIODevice::WriteOnly), qPrintable(path));
    QCOMPARE(file.write(bytes), bytes.size());
}

std::vector<int64_t> ranks_of(const Reuters21578Corpus& corpus, const Words& words) {
    std::vector<int64_t> ranks;
    for (const auto& w : words) {
        const auto it = std::find(corpus.words.begin(), corpus.words.end(), w);
        ranks.push_back(it == corpus.words.end() ? -1 : static_cast<int64_t>(it - corpus.words.begin()) + 1);
    }
    return ranks;
}

// corpus.words (UTF-8) as the Latin-1 byte strings Python 2 hashed.
Words latin1(const Words& utf8) {
    Words out;
    out.reserve(utf8.size());
    for (const auto& w : utf8) out.push_back(QString::fromStdString(w).toLatin1().toStdString());
    return out;
}

// The keys of a Python2StringDict in iteration order.
Words dict_keys(const Words& inserted) {
    Words out;
    for (size_t i : python2_dict_order(inserted)) out.push_back(inserted[i]);
    return out;
}

Words numbered_keys(int n) {
    Words keys;
    keys.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) keys.push_back("w" + std::to_string(i));
    return keys;
}

}  // namespace

class TestReuters21578 : public QObject {
    Q_OBJECT

private slots:
    void python2_string_hash_values();
    void python2_dict_iteration_order();
    void tokenizer_rules();
    void file_names_in_order();
    void fixture_wires_and_labels();
    void fixture_vocabulary_and_ranks();
    void fixture_first_seen_tie_order();
    void default_threshold_drops_small_topics();
    void errors_name_the_folder_or_file();
    void bodiless_wires_are_scanned_once();
    void hostile_layouts_are_refused();
    void damaged_distribution_is_said();
    void real_distribution_matches_keras();
    void derived_word_index_is_keras();
};

// Every expected value below was printed by CPython 2.7.18 (64-bit Linux, no -R) for the same
// input: hash(s), d.keys() after `for k in keys: d[k] = 1`.
void TestReuters21578::python2_string_hash_values() {
    QCOMPARE(python2_string_hash(""), int64_t{0});
    QCOMPARE(python2_string_hash("a"), int64_t{12416037344});
    QCOMPARE(python2_string_hash("abc"), int64_t{1453079729188098211});
    QCOMPARE(python2_string_hash("the"), int64_t{-1495230934636648966});
    QCOMPARE(python2_string_hash("said"), int64_t{-1840375907644881757});
    QCOMPARE(python2_string_hash("mln"), int64_t{6387157653037356396});
    QCOMPARE(python2_string_hash("earn"), int64_t{-4664233514621057950});
    QCOMPARE(python2_string_hash("\xfc"), int64_t{32256097021});  // bytes are unsigned
}

void TestReuters21578::python2_dict_iteration_order() {
    const Words keys{"the", "of",  "to",  "in",   "said", "and", "a",    "mln",    "3",  "vs",
                     "for", "dlrs", "it", "reuter", "pct", "on", "cts",  "is",     "that", "from",
                     "its", "year", "by", "at",   "net",  "with", "be",  "will",   "was", "u"};
    // 5 keys fill the 8-slot table to 5 (5 * 3 < 16): no resize; hash & 7 and the probes decide.
    QCOMPARE(dict_keys(Words(keys.begin(), keys.begin() + 5)), (Words{"of", "the", "in", "said", "to"}));
    // The 6th key makes fill * 3 >= 16: the table grows to 32 (> 4 * 6) and the order changes.
    QCOMPARE(dict_keys(Words(keys.begin(), keys.begin() + 6)),
             (Words{"and", "said", "of", "to", "in", "the"}));
    // 30 keys: grown again at 22 keys (22 * 3 >= 64) to 128 slots.
    QCOMPARE(dict_keys(keys),
             (Words{"and", "is", "year", "it", "vs", "at", "in", "its", "said", "from", "for", "reuter", "pct", "to", "3",
                    "net", "was", "be", "that", "on", "with", "by", "a", "dlrs", "cts", "of", "mln", "will", "u", "the"}));
    Python2StringDict small;
    for (int i = 0; i < 5; ++i) small.find_or_insert(keys[static_cast<size_t>(i)]);
    QCOMPARE(small.table_size(), size_t{8});
    QCOMPARE(small.find_or_insert("of"), (std::pair<size_t, bool>{1, false}));
    QCOMPARE(small.find("said"), int64_t{4});
    QCOMPARE(small.find("and"), int64_t{-1});
    QCOMPARE(small.find_or_insert("and"), (std::pair<size_t, bool>{5, true}));
    QCOMPARE(small.table_size(), size_t{32});

    // 60,000 keys "w0" ... "w59999": many collisions and resizes (the last one at 21,846 keys, to
    // 131,072 slots).
    const Words many = numbered_keys(60000);
    const Words order = dict_keys(many);
    QCOMPARE(Words(order.begin(), order.begin() + 8),
             (Words{"w7853", "w7854", "w7855", "w17928", "w17929", "w7856", "w17920", "w17921"}));
    QCOMPARE(order[10000], std::string("w42746"));
    QCOMPARE(order[30000], std::string("w41280"));
    QCOMPARE(order[59999], std::string("w16345"));
    // 100,000 keys: above 50,000 keys a dict grows to 2 * used, not 4 * used: at 87,382 keys to
    // 262,144 slots (4 * used would have given 524,288).
    const Words more = numbered_keys(100000);
    Python2StringDict big;
    for (const auto& k : more) big.find_or_insert(k);
    QCOMPARE(big.table_size(), size_t{262144});
    const Words big_order = dict_keys(more);
    QCOMPARE(Words(big_order.begin(), big_order.begin() + 4), (Words{"w43332", "w17768", "w65415", "w65414"}));
    QCOMPARE(big_order[50000], std::string("w51080"));
    QCOMPARE(big_order[99999], std::string("w43330"));
}

void TestReuters21578::tokenizer_rules() {
    // Punctuation (not the apostrophe) becomes a space; tabs and newlines too; lower-case; no empties.
    QCOMPARE(reuters21578_tokenize("It's a U.S.-based co.\tHello\nWORLD  (1,000)"),
             (Words{"it's", "a", "u", "s", "based", "co", "hello", "world", "1", "000"}));
    // Every character of Python's string.punctuation except the apostrophe separates.
    QCOMPARE(reuters21578_tokenize("a!b\"c#d$e%f&g(h)i*j+k,l-m.n/o:p;q<r=s>t?u@v[w\\x]y^z_0`1{2|3}4~5"),
             (Words{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q",
                    "r", "s", "t", "u", "v", "w", "x", "y", "z", "0", "1", "2", "3", "4", "5"}));
    // Entities are not decoded: they become words.
    QCOMPARE(reuters21578_tokenize("&lt;ABC&gt; Reuter\n&#3;"), (Words{"lt", "abc", "gt", "reuter", "3"}));
    // Only the space, tab and newline split among white space; '\r' stays inside a word.
    QCOMPARE(reuters21578_tokenize("one\rtwo  three "), (Words{"one\rtwo", "three"}));
    // Only ASCII is lower-cased, as Python 2's str.lower: the Latin-1 capital 0xDC stays.
    QCOMPARE(reuters21578_tokenize("Z\xdcRICH"), (Words{"z\xdcrich"}));
    QVERIFY(reuters21578_tokenize(" .,\t\n").empty());
}

void TestReuters21578::file_names_in_order() {
    const auto names = reuters21578_file_names(kFixtures + "/basic");
    QCOMPARE(names.size(), size_t{2});  // notes.sgm is not a reut2-*.sgm file
    QVERIFY(names[0].ends_with("/reut2-000.sgm"));
    QVERIFY(names[1].ends_with("/reut2-001.sgm"));
}

void TestReuters21578::fixture_wires_and_labels() {
    const auto corpus = read_reuters21578(kFixtures + "/basic", Reuters21578Options{2});
    // Wires with non-empty topics: 1 (grain, wheat), 3, 4, 5, 6, 7, 8; wire 2 is skipped.
    QCOMPARE(corpus.wires_with_topics, int64_t{7});
    QCOMPARE(corpus.multi_topic_wires, int64_t{1});
    QCOMPARE(corpus.wires_without_body, int64_t{2});  // wires 3 and 8
    // grain 2 wires, earn 3, rare 1, acq 1: with at least 2, wires 1, 3, 4, 6, 8 stay.
    // Wire 1 counts under its first topic (grain), so grain is label 0 although earn is larger.
    QCOMPARE(corpus.topics, (Words{"grain", "earn"}));
    QCOMPARE(corpus.labels, (std::vector<int64_t>{0, 1, 1, 0, 1}));
    QCOMPARE(corpus.xs.size(), size_t{5});
    const auto& w = corpus.words;
    auto text = [&](size_t i) {
        Words out;
        for (int64_t r : corpus.xs[i]) out.push_back(w.at(static_cast<size_t>(r - 1)));
        return out;
    };
    QCOMPARE(text(0), (Words{"wheat", "exports", "rose", "the", "ministry's", "report", "said", "reuter", "3"}));
    // Wire 3 has no body: it takes the next one (wire 4's).
    const Words wire4{"net", "profit", "up", "5", "2", "pct", "vs", "loss", "lt", "abc", "gt", "co's"};
    QCOMPARE(text(1), wire4);
    QCOMPARE(text(2), wire4);
    // Latin-1 byte 0xDC (not lower-cased) is stored as UTF-8.
    QCOMPARE(text(3), (Words{"the", "wheat", "the", "wheat", "grain", "z\xc3\x9crich"}));
    // The last topic wire of a file with no <BODY> after it: Python's find() == -1 made the text
    // start 5 bytes after <TOPICS>, i.e. "rn" out of "<D>earn</D>".
    QCOMPARE(text(4), (Words{"rn"}));
}

void TestReuters21578::fixture_vocabulary_and_ranks() {
    const auto corpus = read_reuters21578(kFixtures + "/basic", Reuters21578Options{2});
    // Counts: wheat 3, the 3, the twelve words of wires 3/4 twice, the rest once. Equal counts are
    // in CPython 2.7's dict order: this list is what Keras 0.2's make_reuters_dataset code
    // (min_samples_per_topic=2) printed for these two files under CPython 2.7.18.
    const Words expected{"wheat",  "the",   "gt",         "vs",     "profit", "lt",
                         "pct",    "2",     "5",          "net",    "abc",    "loss",
                         "up",     "co's",  "ministry's", "said",   "rose",   "z\xc3\x9crich",
                         "reuter", "3",     "exports",    "report", "rn",     "grain"};
    QCOMPARE(corpus.words, expected);
    QCOMPARE(ranks_of(corpus, {"skipped", "rare", "acquisition"}), (std::vector<int64_t>{-1, -1, -1}));
    QCOMPARE(corpus.xs[0].front(), int64_t{1});  // "wheat"
    // The key order of the word index dict (json.dump of it), from the same Python 2.7.18 run.
    Words keys;
    for (size_t i : python2_dict_order(latin1(corpus.words))) keys.push_back(corpus.words[i]);
    QCOMPARE(keys, (Words{"gt", "ministry's", "vs", "abc", "profit", "rose", "z\xc3\x9crich", "reuter",
                          "lt", "pct", "3", "2", "5", "net", "exports", "wheat", "said", "report",
                          "rn", "loss", "up", "co's", "grain", "the"}));
}

void TestReuters21578::fixture_first_seen_tie_order() {
    Reuters21578Options options{2};
    options.tie_order = Reuters21578TieOrder::kFirstSeen;
    const auto corpus = read_reuters21578(kFixtures + "/basic", options);
    // wheat 3, the 3 (wheat seen first), then the count-2 words of wires 3/4 in order, then the
    // words seen once in order of first appearance. Words of dropped wires are not counted.
    const Words expected{"wheat", "the",     "net",        "profit", "up",   "5",      "2",      "pct",
                         "vs",    "loss",    "lt",         "abc",    "gt",   "co's",   "exports", "rose",
                         "ministry's", "report", "said",   "reuter", "3",    "grain",  "z\xc3\x9crich", "rn"};
    QCOMPARE(corpus.words, expected);
}

void TestReuters21578::default_threshold_drops_small_topics() {
    const auto corpus = read_reuters21578(kFixtures + "/basic");
    QCOMPARE(corpus.wires_with_topics, int64_t{7});
    QVERIFY(corpus.xs.empty());
    QVERIFY(corpus.labels.empty());
    QVERIFY(corpus.topics.empty());
    QVERIFY(corpus.words.empty());
}

void TestReuters21578::errors_name_the_folder_or_file() {
    // Missing folder.
    const std::string missing = kFixtures + "/no-such-folder";
    std::string message = data_error([&] { read_reuters21578(missing); });
    QVERIFY2(message.find("no-such-folder") != std::string::npos, message.c_str());

    // A folder without reut2-*.sgm files.
    QTemporaryDir empty;
    QVERIFY(empty.isValid());
    write_file(empty.filePath("reut2-000.txt"), "<TOPICS><D>earn</D></TOPICS><BODY>x</BODY>");
    const std::string empty_path = empty.path().toStdString();
    message = data_error([&] { read_reuters21578(empty_path); });
    QVERIFY2(message.find(empty_path) != std::string::npos && message.find("reut2-NNN.sgm") != std::string::npos,
             message.c_str());

    // Truncated: <TOPICS> without a closing tag.
    message = data_error([&] { read_reuters21578(kFixtures + "/truncated"); });
    QVERIFY2(message.find("reut2-000.sgm") != std::string::npos && message.find("truncated") != std::string::npos,
             message.c_str());

    // Truncated inside a body: the text has no closing tag.
    QTemporaryDir cut;
    QVERIFY(cut.isValid());
    write_file(cut.filePath("reut2-000.sgm"), "<TOPICS><D>earn</D></TOPICS>\n<TEXT><BODY>cut off here");
    message = data_error([&] { read_reuters21578(cut.path().toStdString()); });
    QVERIFY2(message.find("reut2-000.sgm") != std::string::npos && message.find("truncated") != std::string::npos,
             message.c_str());

    // Unreadable: a folder where a file should be (works as root too, unlike chmod 000).
    QTemporaryDir odd;
    QVERIFY(odd.isValid());
    write_file(odd.filePath("reut2-000.sgm"), "<TOPICS><D>earn</D></TOPICS><BODY>fine</BODY>");
    QVERIFY(QDir(odd.path()).mkdir("reut2-001.sgm"));
    message = data_error([&] { read_reuters21578(odd.path().toStdString()); });
    QVERIFY2(message.find("reut2-001.sgm") != std::string::npos, message.c_str());

    // An empty file is fine (no wires).
    QTemporaryDir blank;
    QVERIFY(blank.isValid());
    write_file(blank.filePath("reut2-000.sgm"), "");
    const auto corpus = read_reuters21578(blank.path().toStdString());
    QCOMPARE(corpus.wires_with_topics, int64_t{0});
    QVERIFY(corpus.xs.empty());
}

// Issue #13: every wire without a <BODY> searched for one to the end of the file, so a few MB of
// brief wires took minutes (4 MB of them: 45 s; 7.7 MB: over 2 minutes). The searches must look
// at each byte about once, and still give Keras' results: each bodiless wire takes the next body
// in its file, or, with none left, the text 5 bytes into its <TOPICS>.
void TestReuters21578::bodiless_wires_are_scanned_once() {
    constexpr int kBrief = 40000;
    QByteArray first;  // kBrief bodiless wires, then one wire with a body they all take
    for (int i = 1; i <= kBrief; ++i) {
        first += "<REUTERS NEWID=\"" + QByteArray::number(i) +
                 "\">\n<TOPICS><D>earn</D></TOPICS>\n<TEXT TYPE=\"BRIEF\"><TITLE>BRIEF " +
                 QByteArray::number(i) + "</TITLE></TEXT>\n</REUTERS>\n";
    }
    first += "<REUTERS><TOPICS><D>acq</D></TOPICS>\n<TEXT><BODY>Shared body text.</BODY></TEXT></REUTERS>\n";
    QByteArray second;  // bodiless wires and no body at all
    for (int i = 1; i <= kBrief; ++i) {
        second += "<REUTERS><TOPICS><D>earn</D><D>acq</D></TOPICS><TEXT TYPE=\"UNPROC\">&#2;x</TEXT></REUTERS>\n";
    }
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    write_file(dir.filePath("reut2-000.sgm"), first);
    write_file(dir.filePath("reut2-001.sgm"), second);
    const auto total_bytes = static_cast<int64_t>(first.size() + second.size());

    Reuters21578Options options;
    options.min_wires_per_topic = 1;
    const auto start = std::chrono::steady_clock::now();
    const auto corpus = read_reuters21578(dir.path().toStdString(), options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("%.1f MB of bodiless wires: %.3f s, %lld bytes searched (%.2f per byte of SGML)",
          static_cast<double>(total_bytes) / 1e6, seconds, static_cast<long long>(corpus.bytes_searched),
          static_cast<double>(corpus.bytes_searched) / static_cast<double>(total_bytes));

    QCOMPARE(corpus.wires_with_topics, int64_t{2 * kBrief + 1});
    QCOMPARE(corpus.wires_without_body, int64_t{2 * kBrief});
    QCOMPARE(corpus.multi_topic_wires, int64_t{kBrief});
    QCOMPARE(corpus.xs.size(), size_t{2 * kBrief + 1});
    QCOMPARE(corpus.topics, (Words{"earn", "acq"}));
    // The first file's wires all read "shared body text"; the second file's read "rn" (from
    // "<D>earn</D>": 5 bytes into the <TOPICS> content, up to the next "</").
    const std::vector<int64_t> shared = corpus.xs.front();
    QCOMPARE(ranks_of(corpus, {"shared", "body", "text"}), shared);
    for (int i = 0; i <= kBrief; ++i) QCOMPARE(corpus.xs[static_cast<size_t>(i)], shared);
    const std::vector<int64_t> rn = ranks_of(corpus, {"rn"});
    for (size_t i = kBrief + 1; i < corpus.xs.size(); ++i) QCOMPARE(corpus.xs[i], rn);
    // The structural check: the old reader searched about kBrief * (file size) / 2 bytes here,
    // over 10^11; a linear one looks at each byte a few times (once per tag it searches for).
    QVERIFY2(corpus.bytes_searched <= 4 * total_bytes,
             qPrintable(QString("searched %1 bytes for %2 bytes of SGML").arg(corpus.bytes_searched).arg(total_bytes)));
}

// Layouts that would make a small file cost quadratic time or memory are refused, naming the file.
void TestReuters21578::hostile_layouts_are_refused() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // A <TOPICS> that never closes for a long stretch: its "topic" would be copied for every
    // <TOPICS> inside it.
    write_file(dir.filePath("reut2-000.sgm"), "<TOPICS>" + QByteArray(5000, 'x') + "</TOPICS><BODY>b</BODY>");
    std::string message = data_error([&] { read_reuters21578(dir.path().toStdString()); });
    QVERIFY2(message.find("reut2-000.sgm") != std::string::npos &&
                 message.find("runs for 5000 bytes before its closing tag") != std::string::npos,
             message.c_str());

    // Many bodiless wires before one long body: each would become a copy of it (20,000 x 100 KB
    // of text from a 2.5 MB file).
    QByteArray many;
    for (int i = 0; i < 20000; ++i) many += "<TOPICS><D>earn</D></TOPICS>\n";
    many += "<BODY>" + QByteArray(100000, 'w') + "</BODY>";
    write_file(dir.filePath("reut2-000.sgm"), many);
    message = data_error([&] { read_reuters21578(dir.path().toStdString()); });
    QVERIFY2(message.find("reut2-000.sgm") != std::string::npos &&
                 message.find("more than 8 times the file's size") != std::string::npos,
             message.c_str());

    // A device where a file should be is refused at once instead of being read forever.
    QTemporaryDir odd;
    QVERIFY(odd.isValid());
    QVERIFY(QFile::link("/dev/zero", odd.filePath("reut2-000.sgm")));
    message = data_error([&] { read_reuters21578(odd.path().toStdString()); });
    QVERIFY2(message.find("reut2-000.sgm") != std::string::npos &&
                 message.find("not a regular file") != std::string::npos,
             message.c_str());
}

// A folder shaped like the UCI distribution (22 files, 1,000 articles each but the last's 578), then
// as people damage it: CRLF line ends (a Windows checkout) put '\r' into words and grew the
// vocabulary; a missing, empty or cut file and a browser's second copy changed the wire count; none
// said a word.
void TestReuters21578::damaged_distribution_is_said() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto file_name = [](int index) { return QString::asprintf("reut2-%03d.sgm", index); };
    const auto articles = [](int index, int count, const char* line_end) {
        QByteArray text = QByteArray("<!DOCTYPE lewis SYSTEM \"lewis.dtd\">") + line_end;
        for (int a = 0; a < count; ++a) {
            const QByteArray id = QByteArray::number(index * 1000 + a);
            text += "<REUTERS NEWID=\"" + id + "\">" + line_end + "<TOPICS><D>" + (a % 2 ? "earn" : "acq") + "</D></TOPICS>" +
                    line_end + "<TEXT><BODY>said " + id + line_end + "shares rose</BODY></TEXT>" + line_end + "</REUTERS>" + line_end;
        }
        return text;
    };
    const auto write_all = [&](const char* line_end) {
        for (int i = 0; i < 22; ++i) write_file(dir.filePath(file_name(i)), articles(i, i == 21 ? 578 : 1000, line_end));
    };
    write_all("\n");
    const Reuters21578Corpus whole = read_reuters21578(dir.path().toStdString());
    QCOMPARE(whole.xs.size(), size_t{21578});
    QCOMPARE(whole.words.size(), size_t{21578 + 3});  // "said", "shares", "rose" and the ids
    QCOMPARE(whole.warnings, Words{});

    write_all("\r\n");
    const Reuters21578Corpus windows = read_reuters21578(dir.path().toStdString());
    QCOMPARE(windows.words, whole.words);
    QCOMPARE(windows.xs, whole.xs);
    QCOMPARE(windows.warnings, Words{});

    write_all("\n");
    const std::string folder = dir.path().toStdString();
    QVERIFY(QFile::remove(dir.filePath(file_name(10))));
    write_file(dir.filePath(file_name(5)), "");
    const QByteArray cut = articles(7, 1000, "\n");
    write_file(dir.filePath(file_name(7)), cut.left(cut.indexOf("</REUTERS>\n", cut.size() / 2) + 11));  // after a whole article
    write_file(dir.filePath("reut2-003 (1).sgm"), articles(3, 1000, "\n"));
    write_file(dir.filePath("reut2-022.sgm"), articles(22, 3, "\n"));  // read, but not the distribution's
    const Reuters21578Corpus damaged = read_reuters21578(folder);
    const int64_t cut_articles = cut.left(cut.indexOf("</REUTERS>\n", cut.size() / 2)).count("<REUTERS");
    QCOMPARE(static_cast<int64_t>(damaged.xs.size()), 21578 - 2000 - (1000 - cut_articles) + 3);  // the copy is not read
    QCOMPARE(damaged.warnings,
             (Words{"ignored " + folder + "/reut2-003 (1).sgm: not a file name of the UCI distribution (reut2-000.sgm ... "
                    "reut2-021.sgm), a copy would count its wires twice",
                    "'" + folder + "' lacks reut2-010.sgm of the UCI distribution's 22 files (reut2-000.sgm ... reut2-021.sgm): "
                    "the data is not Keras'; copy the missing files there",
                    folder + "/reut2-005.sgm holds 0 of the UCI file's 1000 articles (it is empty, cut short, edited or another "
                    "file): the data is not Keras'; replace it with the UCI file (the distribution's SHA256SUMS tell a good copy)",
                    folder + "/reut2-007.sgm holds " + std::to_string(cut_articles) +
                        " of the UCI file's 1000 articles (it is empty, cut short, edited or another file): the data is not "
                        "Keras'; replace it with the UCI file (the distribution's SHA256SUMS tell a good copy)",
                    "read " + folder + "/reut2-022.sgm, which is not a file of the UCI distribution (reut2-000.sgm ... "
                    "reut2-021.sgm): the data is not Keras'"}));
    // The data set loaded by its spec carries them to the CLI's and the window's warnings.
    const DatasetSplit split = load_dataset("reuters21578:" + folder);
    for (const std::string& warning : damaged.warnings)
        QVERIFY2(std::find(split.warnings.begin(), split.warnings.end(), warning) != split.warnings.end(), warning.c_str());
}

void TestReuters21578::real_distribution_matches_keras() {
    if (!testsupport::have_reuters21578()) {
        REAL_DATA_MISSING(QString::fromStdString("Reuters-21578 SGML files not found at " + kRealData +
                                                 " (put reut2-000.sgm ... reut2-021.sgm there to run this test)"));
    }
    QCOMPARE(reuters21578_file_names(kRealData).size(), size_t{22});
    const auto start = std::chrono::steady_clock::now();
    const auto corpus = read_reuters21578(kRealData);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("read_reuters21578: %.3f s, %lld bytes searched", seconds, static_cast<long long>(corpus.bytes_searched));

    QCOMPARE(corpus.wires_with_topics, int64_t{11367});
    QCOMPARE(corpus.multi_topic_wires, int64_t{1873});
    QCOMPARE(corpus.wires_without_body, int64_t{990});
    QCOMPARE(corpus.xs.size(), size_t{11228});
    QCOMPARE(corpus.labels.size(), size_t{11228});
    QCOMPARE(corpus.warnings, Words{});  // the 22 files, whole
    QCOMPARE(corpus.topics.size(), size_t{46});
    QCOMPARE(corpus.words.size(), size_t{30979});

    std::vector<int64_t> per_class(corpus.topics.size(), 0);
    for (int64_t label : corpus.labels) ++per_class.at(static_cast<size_t>(label));
    QString line;
    for (size_t c = 0; c < per_class.size(); ++c) {
        line += QString("%1:%2=%3 ").arg(c).arg(QString::fromStdString(corpus.topics[c])).arg(per_class[c]);
    }
    qInfo("per-class counts: %s", qPrintable(line));
    QCOMPARE(std::max_element(per_class.begin(), per_class.end()) - per_class.begin(), 3);
    QCOMPARE(corpus.topics[3], std::string("earn"));
    // Keras' per-class totals (train + test of reuters.npz) for the first labels.
    QCOMPARE(std::vector<int64_t>(per_class.begin(), per_class.begin() + 5),
             (std::vector<int64_t>{67, 537, 94, 3972, 2423}));
    QCOMPARE(corpus.topics[0], std::string("cocoa"));
    QCOMPARE(corpus.topics[4], std::string("acq"));

    // Keras' word index begins the, of, to, in, said, and, a, mln, 3 (the &#3; after "Reuter").
    QCOMPARE(Words(corpus.words.begin(), corpus.words.begin() + 9),
             (Words{"the", "of", "to", "in", "said", "and", "a", "mln", "3"}));
    for (const auto& seq : corpus.xs) {
        for (int64_t r : seq) QVERIFY(r >= 1 && r <= 30979);
    }
    QVERIFY(std::find(corpus.words.begin(), corpus.words.end(), "\xc3\xbc") != corpus.words.end());
    // Mid-frequency words, whose ranks depend on the Python 2 dict order of ties (first-seen order
    // gives 109, 3121, 365, ...). Ranks from Keras' word index as the real script rebuilds it under
    // CPython 2.7.18 (all 30,979 agree with this reader).
    QCOMPARE(ranks_of(corpus, {"co", "four", "expects", "wednesday", "grains", "space", "mdbl", "fawc",
                               "degussa", "woods", "hanging", "localized"}),
             (std::vector<int64_t>{108, 185, 366, 1220, 1642, 3092, 10996, 16260, 12089, 8803, 13796, 20672}));
    // reuters_word_index.json (json.dump of that dict) lists its keys in dict order.
    const auto index_order = python2_dict_order(latin1(corpus.words));
    Words first_keys;
    for (size_t k = 0; k < 10; ++k) first_keys.push_back(corpus.words[index_order[k]]);
    QCOMPARE(first_keys, (Words{"mdbl", "fawc", "degussa", "woods", "hanging", "localized", "sation", "chanthaburi",
                                "refunding", "hermann"}));
#ifdef NDEBUG
    // The time was printed above; a bound only on request (tests/support/timing.h).
    if (testsupport::timing_asserts()) {
        QVERIFY2(seconds < 2.0, "reading the 22 files should take well under 2 s in Release");
    }
#endif
}

// For a reuters.npz without reuters_word_index.json: the index derived from the SGML files is
// Keras' (the importer's ranks), written where load_dataset() looks for it.
void TestReuters21578::derived_word_index_is_keras() {
    if (!testsupport::have_reuters21578()) {
        REAL_DATA_MISSING(
            QString::fromStdString("Reuters-21578 SGML files not found at " + kRealData));
    }
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QString::fromLatin1(kDerivedWordIndexName)).toStdString();
    QCOMPARE(derive_reuters_word_index(kRealData, path), path);
    const WordIndex index = read_reuters_word_index(path);
    QCOMPARE(index.size(), size_t{30979});
    // Keras' ranks (see real_distribution_matches_keras).
    const std::vector<std::pair<std::string, int64_t>> known = {
        {"the", 1},      {"of", 2},       {"said", 5},         {"3", 9}, {"co", 108}, {"four", 185},
        {"space", 3092}, {"mdbl", 10996}, {"localized", 20672}};
    for (const auto& [word, rank] : known) QCOMPARE(index.at(word), rank);
    const std::vector<std::string> words = keras_id_words(ranked_words(index));
    QCOMPARE(words.size(), size_t{30983});  // 4 marks (pad, start, OOV, unused) and 30,979 words
    QCOMPARE(words[4], std::string("the"));
}

QTEST_APPLESS_MAIN(TestReuters21578)
#include "test_reuters21578.moc"
