// The Reuters-21578 SGML importer: Keras' make_reuters_dataset recipe on tiny fixtures, and on the
// real UCI files (../shared/data/reuters21578/) when they are there.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/reuters21578.h"
#include "core/util/error.h"

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
const std::string kRealData = std::string(MIRRORLAB_SHARED_DIR) + "/data/reuters21578";

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

}  // namespace

class TestReuters21578 : public QObject {
    Q_OBJECT

private slots:
    void tokenizer_rules();
    void file_names_in_order();
    void fixture_wires_and_labels();
    void fixture_vocabulary_and_ranks();
    void default_threshold_drops_small_topics();
    void errors_name_the_folder_or_file();
    void real_distribution_matches_keras();
};

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
    // Latin-1 capitals are lower-cased (bytes, not UTF-8).
    QCOMPARE(reuters21578_tokenize("Z\xdcRICH"), (Words{"z\xfcrich"}));
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
    // Latin-1 byte 0xDC, lower-cased to 0xFC, is stored as UTF-8.
    QCOMPARE(text(3), (Words{"the", "wheat", "the", "wheat", "grain", "z\xc3\xbcrich"}));
    // The last topic wire of a file with no <BODY> after it: Python's find() == -1 made the text
    // start 5 bytes after <TOPICS>, i.e. "rn" out of "<D>earn</D>".
    QCOMPARE(text(4), (Words{"rn"}));
}

void TestReuters21578::fixture_vocabulary_and_ranks() {
    const auto corpus = read_reuters21578(kFixtures + "/basic", Reuters21578Options{2});
    // Counts: wheat 3, the 3 (wheat seen first), then the count-2 words of wires 3/4 in order, then
    // the words seen once in order of first appearance. Words of dropped wires are not counted.
    const Words expected{"wheat", "the",     "net",        "profit", "up",   "5",      "2",      "pct",
                         "vs",    "loss",    "lt",         "abc",    "gt",   "co's",   "exports", "rose",
                         "ministry's", "report", "said",   "reuter", "3",    "grain",  "z\xc3\xbcrich", "rn"};
    QCOMPARE(corpus.words, expected);
    QCOMPARE(ranks_of(corpus, {"skipped", "rare", "acquisition"}), (std::vector<int64_t>{-1, -1, -1}));
    QCOMPARE(corpus.xs[0].front(), int64_t{1});  // "wheat"
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
    QVERIFY2(message.find(empty_path) != std::string::npos && message.find("reut2-*.sgm") != std::string::npos,
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

void TestReuters21578::real_distribution_matches_keras() {
    if (!std::filesystem::is_directory(kRealData)) {
        QSKIP(qPrintable(QString::fromStdString("Reuters-21578 SGML files not found at " + kRealData +
                                                " (put reut2-000.sgm ... reut2-021.sgm there to run this test)")));
    }
    QCOMPARE(reuters21578_file_names(kRealData).size(), size_t{22});
    const auto start = std::chrono::steady_clock::now();
    const auto corpus = read_reuters21578(kRealData);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("read_reuters21578: %.3f s", seconds);

    QCOMPARE(corpus.wires_with_topics, int64_t{11367});
    QCOMPARE(corpus.multi_topic_wires, int64_t{1873});
    QCOMPARE(corpus.wires_without_body, int64_t{990});
    QCOMPARE(corpus.xs.size(), size_t{11228});
    QCOMPARE(corpus.labels.size(), size_t{11228});
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
#ifdef NDEBUG
    QVERIFY2(seconds < 2.0, "reading the 22 files should take well under 2 s in Release");
#endif
}

QTEST_APPLESS_MAIN(TestReuters21578)
#include "test_reuters21578.moc"
