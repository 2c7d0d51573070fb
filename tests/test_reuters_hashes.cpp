// The Reuters-21578 importer against a committed per-sample hash of all 11,228 samples that
// keras.datasets.reuters.load_data() returns (tests/data/reuters_load_data_hashes.txt; format in
// tests/golden/README.md), so that every wire is compared id for id wherever the SGML files are,
// and the first differing sample is named.
//
// What that file is and is not: it was written from our own importer
// (MIRRORLAB_WRITE_REUTERS_HASHES, below), because Keras' reuters.npz cannot be downloaded on the
// project's machines. It pins the importer's output (any change fails here), and it is Keras' data
// only as far as the importer has been checked against Keras: the counts and x_train[0]
// (test_data_sources, test_reuters21578). Where a reuters.npz exists, the npz is compared with the
// same file, and tests/golden/hash_keras_reuters.py checks the file against the npz or Keras
// itself.
//
// The C++ writer and the Python script are proven to write the same hashes on the small npz
// fixtures, whose load_data() output Keras itself computed (expected_load_data.txt).
#include <QtTest/QtTest>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/keras_reuters.h"
#include "core/data/reuters21578.h"
#include "support/real_data.h"
#include "support/reuters_hashes.h"

using namespace mirrorlab;
using namespace mirrorlab::testsupport;

namespace {

const std::string kNpzDir = std::string(MIRRORLAB_TEST_DATA_DIR) + "/npz/";
const std::string kFixtureHashes = kNpzDir + "reuters_small_hashes.txt";
const std::string kCommittedHashes =
    std::string(MIRRORLAB_TEST_DATA_DIR) + "/reuters_load_data_hashes.txt";

DatasetSplit load_data_of_npz(const std::string& path) {
    return keras_load_data(read_reuters_npz(path), KerasLoadOptions{});
}

// The first block of expected_load_data.txt (default options), which make_npz_fixtures.py computed
// with keras.datasets.reuters.load_data itself.
DatasetSplit keras_computed_fixture_split() {
    std::ifstream in(kNpzDir + "expected_load_data.txt");
    std::string line;
    while (std::getline(in, line) && !line.starts_with("options ")) {
    }
    if (line !=
        "options num_words=0 skip_top=0 maxlen=0 test_split=0.2 seed=113 start_char=1 oov_char=2 "
        "index_from=3") {
        throw std::runtime_error(
            "expected_load_data.txt: the first options line is not load_data()'s defaults: " +
            line);
    }
    DatasetSplit split;
    for (TextDataset* data : {&split.train, &split.validation}) {
        std::getline(in, line);
        std::istringstream header(line);
        std::string name;
        std::size_t count = 0;
        header >> name >> count;
        for (std::size_t i = 0; i < count && std::getline(in, line); ++i) {
            std::istringstream values(line);
            std::int32_t label = 0, id = 0;
            values >> label;
            std::vector<std::int32_t> ids;
            while (values >> id) ids.push_back(id);
            data->labels.push_back(label);
            data->sequences.push_back(std::move(ids));
        }
    }
    return split;
}

DatasetSplit load_data_of_importer() {
    const Reuters21578Corpus corpus = read_reuters21578(reuters21578_dir().toStdString());
    return keras_load_data(RawReuters{corpus.xs, corpus.labels}, KerasLoadOptions{});
}

const std::vector<std::string> kImporterComments = {
    "MirrorLab Reuters hashes, format 1 (tests/golden/README.md)",
    "source: the UCI Reuters-21578 SGML files (reut2-000.sgm ... reut2-021.sgm) through "
    "MirrorLab's importer: "
    "read_reuters21578 (core/data/reuters21578.h), then keras_load_data with default options "
    "(core/data/keras_reuters.h)",
    "arrays: keras.datasets.reuters.load_data() with default arguments: x_train, y_train, then "
    "x_test, y_test",
    "NOT yet checked against Keras' reuters.npz, which could not be downloaded where this file was "
    "made.",
    "Checked against Keras so far: 11,228 wires, 46 topics, 30,979 words, the 8,982 / 2,246 split, "
    "the per-class",
    "counts of the first labels and x_train[0] of load_data(num_words=10000). To check every "
    "sample:",
    "  python3 tests/golden/hash_keras_reuters.py ~/.keras/datasets/reuters.npz --check "
    "tests/data/reuters_load_data_hashes.txt",
    "Written by: MIRRORLAB_WRITE_REUTERS_HASHES=<file> test_reuters_hashes "
    "importerMatchesCommittedHashes",
};

}  // namespace

class TestReutersHashes : public QObject {
    Q_OBJECT

  private slots:
    // The Python script's hashes of the fixture (committed) equal the C++ ones of every container
    // variant of the same data: the two implementations of the format agree.
    void cppAndPythonWriteTheSameHashes_data() {
        QTest::addColumn<QString>("npz");
        for (const char* variant : {"savez", "compressed", "p2", "p3", "py2", "stream"}) {
            QTest::newRow(variant) << QStringLiteral("reuters_small_%1.npz").arg(variant);
        }
    }
    void cppAndPythonWriteTheSameHashes() {
        QFETCH(QString, npz);
        const ReutersHashes python = read_reuters_hashes(kFixtureHashes);
        QCOMPARE(python.train.size(), std::size_t{48});
        QCOMPARE(python.test.size(), std::size_t{12});
        const ReutersHashes cpp = hash_load_data(load_data_of_npz(kNpzDir + npz.toStdString()), {});
        const std::string difference =
            first_difference(cpp, "C++", python, "reuters_small_hashes.txt");
        QVERIFY2(difference.empty(), difference.c_str());
        QCOMPARE(cpp.sha256, python.sha256);
    }

    // The fixture's hashes are of Keras' own load_data() output (computed by Keras when
    // make_npz_fixtures.py ran), not only of our copies of it.
    void fixtureHashesAreOfKerasOwnOutput() {
        const ReutersHashes keras = hash_load_data(keras_computed_fixture_split(), {});
        const std::string difference =
            first_difference(keras, "expected_load_data.txt", read_reuters_hashes(kFixtureHashes),
                             "reuters_small_hashes.txt");
        QVERIFY2(difference.empty(), difference.c_str());
    }

    // Negative controls: a changed id, a changed label, a lost sample, and a damaged file are each
    // caught, and the message names the sample or the line.
    void differencesAreNamed() {
        const DatasetSplit original = load_data_of_npz(kNpzDir + "reuters_small_savez.npz");
        const ReutersHashes expected = hash_load_data(original, {"a comment"});
        QCOMPARE(first_difference(expected, "a", expected, "b"), std::string());

        DatasetSplit changed = original;
        changed.train.sequences[17].back() += 1;
        std::string message =
            first_difference(hash_load_data(changed, {}), "importer", expected, "file");
        QVERIFY2(message.starts_with("train sample 17 (line 21 of file): ids differ"),
                 message.c_str());

        changed = original;
        changed.validation.labels[3] += 1;
        message = first_difference(hash_load_data(changed, {}), "importer", expected, "file");
        QVERIFY2(
            message.starts_with("test sample 3 ") && message.find("label") != std::string::npos,
            message.c_str());

        changed = original;
        changed.validation.sequences.pop_back();
        changed.validation.labels.pop_back();
        message = first_difference(hash_load_data(changed, {}), "importer", expected, "file");
        QVERIFY2(message == "test: 11 samples in importer, 12 in file", message.c_str());

        // Two samples swapped within a split: both hashes move, the first one is named.
        changed = original;
        std::swap(changed.train.sequences[30], changed.train.sequences[31]);
        message = first_difference(hash_load_data(changed, {}), "importer", expected, "file");
        QVERIFY2(message.starts_with("train sample 30 "), message.c_str());

        // The text round-trips, and a damaged line is named.
        const std::string text = format_reuters_hashes(expected);
        QCOMPARE(
            first_difference(parse_reuters_hashes(text, "text"), "parsed", expected, "written"),
            std::string());
        QCOMPARE(parse_reuters_hashes(text, "text").comments,
                 std::vector<std::string>{"a comment"});
        std::string damaged = text;
        damaged.replace(damaged.find("\ntrain 48\n") + 10, 1, "x");
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, parse_reuters_hashes(damaged, "damaged"));
        try {
            parse_reuters_hashes(damaged, "damaged");
        } catch (const std::runtime_error& error) {
            QVERIFY2(std::string(error.what()).starts_with("damaged:4: "), error.what());
        }
    }

    // Every one of the 11,228 samples of the importer, id for id, against the committed file.
    void importerMatchesCommittedHashes() {
        if (!have_reuters21578())
            REAL_DATA_MISSING("the Reuters-21578 files are not at " + reuters21578_dir());
        const ReutersHashes importer = hash_load_data(load_data_of_importer(), kImporterComments);
        if (const QString out = qEnvironmentVariable("MIRRORLAB_WRITE_REUTERS_HASHES");
            !out.isEmpty()) {
            std::ofstream file(out.toStdString(), std::ios::binary);
            file << format_reuters_hashes(importer);
            QVERIFY2(file.good(), qPrintable(out));
            qInfo("wrote %s", qPrintable(out));
        }
        const ReutersHashes committed = read_reuters_hashes(kCommittedHashes);
        QCOMPARE(committed.train.size(), std::size_t{8982});
        QCOMPARE(committed.test.size(), std::size_t{2246});
        const std::string difference = first_difference(importer, "the importer's load_data()",
                                                        committed, "reuters_load_data_hashes.txt");
        QVERIFY2(difference.empty(), difference.c_str());
    }

    // Keras' reuters.npz, where one exists, against the same file: the check the file still lacks.
    void kerasNpzMatchesCommittedHashes() {
        const std::optional<std::string> npz = find_keras_reuters();
        if (!npz)
            KERAS_NPZ_MISSING(
                "no reuters.npz on this machine (find_keras_reuters()); the committed hashes stay "
                "unchecked against Keras");
        const ReutersHashes keras = hash_load_data(load_data_of_npz(*npz), {});
        const std::string difference = first_difference(
            keras, *npz, read_reuters_hashes(kCommittedHashes), "reuters_load_data_hashes.txt");
        QVERIFY2(difference.empty(), difference.c_str());
    }
};

QTEST_APPLESS_MAIN(TestReutersHashes)
#include "test_reuters_hashes.moc"
