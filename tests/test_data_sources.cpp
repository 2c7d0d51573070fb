// Every data source a person can name, end to end through the CLI's data specs: the default, the
// synthetic corpus, Keras' reuters.npz, the Reuters-21578 files, a text folder and a CSV file;
// `mirrorlab-cli data` and `train` on each. The real Reuters files are read in place from
// ../shared/data (skipped with a message when absent; a failure under MIRRORLAB_REQUIRE_REAL_DATA=1,
// tests/support/real_data.h).
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/data/keras_reuters.h"
#include "core/data/reuters21578.h"
#include "core/data/source.h"
#include "core/model/model.h"
#include "core/util/cancellation.h"
#include "core/util/error.h"
#include "support/real_data.h"

using namespace mirrorlab;

namespace {

const QString kRealReuters = testsupport::reuters21578_dir();

struct Result {
    int exit_code = -1;
    QString out, err;
};

Result cli(const QStringList& arguments) {
    QProcess process;
    process.setProgram(QStringLiteral(MIRRORLAB_CLI_PATH));
    process.setArguments(arguments);
    process.start();
    process.waitForFinished(300000);
    return {process.exitCode(), QString::fromUtf8(process.readAllStandardOutput()),
            QString::fromUtf8(process.readAllStandardError())};
}

void write(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).path());
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(bytes);
}

// A small model for the own-corpus sources (their vocabularies are tiny).
QString small_model(QTemporaryDir& dir, int vocabulary, int classes) {
    const QString path = dir.filePath(QStringLiteral("small.json"));
    write(path, QStringLiteral("{\"input_length\": 40, \"layers\": ["
                               "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": %1, \"output_dim\": 8}},"
                               "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 8, \"kernel_size\": 3, \"activation\": \"relu\"}},"
                               "{\"class_name\": \"GlobalMaxPooling1D\"},"
                               "{\"class_name\": \"Dense\", \"config\": {\"units\": %2, \"activation\": \"softmax\"}}]}")
                    .arg(vocabulary)
                    .arg(classes)
                    .toUtf8());
    return path;
}

void write_corpus(QTemporaryDir& dir) {
    const char* sport[] = {"the team won the match", "a late goal decided the final", "the striker scored twice",
                           "fans cheered the home team", "the coach praised the players", "rain stopped the match"};
    const char* money[] = {"shares fell on the market", "the bank raised interest rates", "profits rose last quarter",
                           "the dollar gained against the yen", "investors sold bonds", "inflation slowed in march"};
    QByteArray csv = "label,text\n";
    for (int i = 0; i < 6; ++i) {
        write(dir.filePath(QStringLiteral("texts/sport/%1.txt").arg(i)), sport[i]);
        write(dir.filePath(QStringLiteral("texts/money/%1.txt").arg(i)), money[i]);
        csv += QByteArray("sport,\"") + sport[i] + "\"\nmoney,\"" + money[i] + "\"\n";
    }
    write(dir.filePath(QStringLiteral("texts.csv")), csv);
}

}  // namespace

class TestDataSources : public QObject {
    Q_OBJECT
private slots:
    void reuters21578MatchesKerasLoadData() {
        if (!testsupport::have_reuters21578()) {
            REAL_DATA_MISSING("the Reuters-21578 files are not at " + kRealReuters);
        }
        const DatasetSplit split = load_dataset("reuters21578:" + kRealReuters.toStdString());
        QCOMPARE(split.train.size(), std::size_t{8982});
        QCOMPARE(split.validation.size(), std::size_t{2246});
        QCOMPARE(split.train.num_classes, 46);
        QCOMPARE(split.train.vocabulary_size, 30982);  // the tutorial's x_train.max() + 1
        const auto counts = split.train.class_counts();
        QCOMPARE(static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin()), 3);
        // x_train[0] as keras.datasets.reuters.load_data() returns it: label 3 (earn), and the
        // well-known wire "? mcgrath rentcorp said as a result of its december acquisition ...".
        QCOMPARE(split.train.labels[0], 3);
        const std::vector<int32_t> head(split.train.sequences[0].begin(), split.train.sequences[0].begin() + 8);
        QCOMPARE(QString::fromStdString(decode_sequence(split.train, head)),
                 QStringLiteral("<start> mcgrath rentcorp said as a result of"));
        // With num_words=10000 the whole of x_train[0] is known (Deep Learning with Python's listing;
        // Keras' make_reuters_dataset code rebuilds the same 87 ids under CPython 2.7.18). The ranks
        // of mid-frequency words such as "space" (3095) need the Python 2 dict order of ties.
        const Reuters21578Corpus corpus = read_reuters21578(kRealReuters.toStdString());
        KerasLoadOptions options;
        options.num_words = 10000;
        const DatasetSplit limited = keras_load_data(RawReuters{corpus.xs, corpus.labels}, options);
        const std::vector<int32_t> expected{
            1,   2,   2,   8,   43,   10,   447, 5,   25,  207, 270, 5,   3095, 111, 16,  369, 186, 90,
            67,  7,   89,  5,   19,   102,  6,   19,  124, 15,  90,  67,  84,   22,  482, 26,  7,   48,
            4,   49,  8,   864, 39,   209,  154, 6,   151, 6,   83,  11,  15,   22,  155, 11,  15,  7,
            48,  9,   4579, 1005, 504, 6,   258, 6,   272, 11,  15,  22,  134,  44,  11,  15,  16,  8,
            197, 1245, 90, 67,  52,   29,   209, 30,  32,  132, 6,   109, 15,   17,  12};
        QCOMPARE(expected.size(), std::size_t{87});
        QCOMPARE(limited.train.labels[0], 3);
        QCOMPARE(limited.train.sequences[0], expected);

        if (auto npz = find_keras_reuters()) {
            const DatasetSplit keras = load_dataset("keras:" + *npz);
            QCOMPARE(keras.train.sequences, split.train.sequences);
            QCOMPARE(keras.train.labels, split.train.labels);
            QCOMPARE(keras.validation.sequences, split.validation.sequences);
            QCOMPARE(keras.validation.labels, split.validation.labels);
        } else if (testsupport::keras_npz_required()) {
            QFAIL("MIRRORLAB_REQUIRE_KERAS_NPZ=1, but find_keras_reuters() found no reuters.npz");
        } else {
            // Not a failure under MIRRORLAB_REQUIRE_REAL_DATA: Keras' reuters.npz cannot be downloaded
            // on the project's machines (CI included). test_reuters_hashes compares the importer with
            // the committed per-sample hashes instead, and those with reuters.npz where it exists.
            qInfo("reuters.npz is not on this machine; the sample-for-sample comparison with it is skipped");
        }
    }

    void defaultPrefersLocalReuters() {
        const std::string spec = resolve_default_data_spec();
        if (find_keras_reuters()) {
            QVERIFY(spec.rfind("keras:", 0) == 0);
        } else if (testsupport::have_reuters21578()) {
            QVERIFY2(spec.rfind("reuters21578:", 0) == 0, spec.c_str());
        } else {
            if (testsupport::real_data_required()) {
                QFAIL(qPrintable("MIRRORLAB_REQUIRE_REAL_DATA=1, but the Reuters-21578 files are not at " + kRealReuters));
            }
            QCOMPARE(QString::fromStdString(spec), QStringLiteral("synthetic"));
            QVERIFY(load_dataset("default").train.synthetic);
        }
    }

    void badSpecsNameTheChoices() {
        // Each message names what was wrong with that spec.
        const std::pair<const char*, const char*> cases[] = {
            {"mnist", "synthetic"},  // an unknown kind lists the kinds
            {"folder:", "needs a folder"},
            {"csv:/nonexistent/file.csv", "/nonexistent/file.csv"},
            {"reuters21578:/nonexistent", "/nonexistent"},
        };
        for (const auto& [spec, expected] : cases) {
            try {
                load_dataset(spec);
                QFAIL(spec);
            } catch (const DataError& error) {
                const QString message = QString::fromUtf8(error.what());
                QVERIFY2(message.contains(QString::fromUtf8(expected)), qPrintable(QString(spec) + ": " + message));
            }
        }
    }

    // The data panel's Cancel: a cancelled load stops at its next row, text or file instead of
    // reading a multi-GB CSV to its end beside the next load (and holding its memory meanwhile).
    void aCancelledLoadStops() {
        QTemporaryDir dir;
        write_corpus(dir);
        QByteArray rows = "label,text\n";
        for (int row = 0; row < 200000; ++row) {
            rows += row % 2 ? "sport,\"" : "money,\"";
            for (int word = 0; word < 30; ++word) rows += "w" + QByteArray::number((row * 31 + word * 17) % 5000) + ' ';
            rows += "\"\n";
        }
        const QString big = dir.filePath(QStringLiteral("big.csv"));
        write(big, rows);

        // Cancelled before it starts: every kind of source stops, saying so, with nothing loaded.
        std::atomic<bool> cancelled{true};
        QStringList specs = {QStringLiteral("synthetic:20000:5000"), "csv:" + big, "folder:" + dir.filePath(QStringLiteral("texts"))};
        if (!kRealReuters.isEmpty()) specs << "reuters21578:" + kRealReuters;
        for (const QString& spec : specs) {
            QVERIFY_THROWS_EXCEPTION(Cancelled, load_dataset(spec.toStdString(), kDefaultDataSeed, &cancelled));
        }

        // Cancelled while it reads: the 200,000 rows take a second or more to tokenize.
        std::atomic<bool> cancel_later{false};
        std::thread canceller([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            cancel_later = true;
        });
        bool stopped = false;
        try {
            load_dataset(("csv:" + big).toStdString(), kDefaultDataSeed, &cancel_later);
        } catch (const Cancelled&) {
            stopped = true;
        }
        canceller.join();
        QVERIFY2(stopped, "the load read to its end after it was cancelled");

        // The thread's next load is not cancelled: the flag went with the load it was given to.
        const DatasetSplit split = load_dataset(("csv:" + dir.filePath(QStringLiteral("texts.csv"))).toStdString());
        QCOMPARE(split.train.size() + split.validation.size(), std::size_t{12});
    }

    void oovIdsAreMappedWithAWarningOrRefused() {
        DatasetSplit split = load_dataset("synthetic:200:50");
        const TrainData mapped = make_train_data(split, 50, 1000, OovPolicy::MapToOov);
        QVERIFY(!mapped.warnings.empty());
        QVERIFY2(QString::fromStdString(mapped.warnings.front()).contains(QStringLiteral("beyond the Embedding's input_dim of 1000")),
                 mapped.warnings.front().c_str());
        for (auto id : mapped.train_ids->ids) QVERIFY(id < 1000);
        QVERIFY_THROWS_EXCEPTION(DataError, make_train_data(split, 50, 1000, OovPolicy::Error));
        QVERIFY(make_train_data(split, 50, 30982, OovPolicy::Error).warnings.empty());
    }

    // Keras' load_data keeps words that only the test split has (Reuters' id 30,982 is one): such a
    // validation split used to be refused with a false "an embedding would read past its table",
    // even under --oov map, and aborted the GUI on Start. It follows the OOV policy like any other id.
    void validationIdsBeyondTheTrainingVocabularyFollowTheOovPolicy() {
        DatasetSplit split = load_dataset("synthetic:200:50");
        const std::int32_t vocabulary = split.train.vocabulary_size;
        split.validation.sequences[3].back() = vocabulary + 7;
        const TrainData mapped = make_train_data(split, 50, vocabulary, OovPolicy::MapToOov);
        QCOMPARE(mapped.warnings.size(), std::size_t{1});
        const QString warning = QString::fromStdString(mapped.warnings.front());
        QVERIFY2(warning.contains(QStringLiteral("1 token in the validation data (largest id %1)").arg(vocabulary + 7)),
                 qPrintable(warning));
        QVERIFY2(warning.contains(QStringLiteral("mapped to the out-of-vocabulary id %1").arg(split.validation.oov_id)),
                 qPrintable(warning));
        for (auto id : mapped.validation_ids->ids) QVERIFY(id < vocabulary);
        try {
            make_train_data(split, 50, vocabulary, OovPolicy::Error);
            QFAIL("no DataError under OovPolicy::Error");
        } catch (const DataError& error) {
            QVERIFY2(QString(error.what()).contains(QStringLiteral("raise input_dim to %1").arg(vocabulary + 8)), error.what());
            QVERIFY2(QString(error.what()).contains(QStringLiteral("--oov map")), error.what());  // the option that allows it
        }
        // A negative id is still malformed data, in either split.
        split.validation.sequences[3].back() = -4;
        QVERIFY_THROWS_EXCEPTION(DataError, make_train_data(split, 50, vocabulary, OovPolicy::MapToOov));
    }

    void cliTrainsOnEverySource() {
        QTemporaryDir dir;
        write_corpus(dir);
        const QString small = small_model(dir, 64, 2);
        const QString npz = QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/npz/reuters_small_savez.npz");
        QVERIFY2(QFileInfo::exists(npz), qPrintable(npz));
        QList<QStringList> runs{
            {"--data", "synthetic:200:50", "--steps-per-epoch", "3"},
            {"--data", "folder:" + dir.filePath("texts"), "--model", small, "--batch-size", "4"},
            {"--data", "csv:" + dir.filePath("texts.csv"), "--model", small, "--batch-size", "4"},
            {"--data", "keras:" + npz, "--model", small_model(dir, 4000, 46), "--batch-size", "8"},
        };
        if (testsupport::have_reuters21578()) {
            runs.append(QStringList{"--data", "reuters21578:" + kRealReuters, "--steps-per-epoch", "3"});
            runs.append(QStringList{"--steps-per-epoch", "3"});  // the default
        } else if (testsupport::real_data_required()) {
            QFAIL(qPrintable("MIRRORLAB_REQUIRE_REAL_DATA=1, but the Reuters-21578 files are not at " + kRealReuters));
        }
        for (const QStringList& extra : runs) {
            const Result result = cli(QStringList{"train", "--devices", "cpu:2", "--epochs", "1"} + extra);
            QVERIFY2(result.exit_code == 0, qPrintable(extra.join(' ') + "\n" + result.err));
            QVERIFY2(result.out.contains(QStringLiteral("Epoch 1/1")), qPrintable(result.out));
            QVERIFY2(result.out.contains(QStringLiteral(" - val_loss: ")), qPrintable(result.out));
        }
    }

    void cliDataPrintsStatistics() {
        QTemporaryDir dir;
        write_corpus(dir);
        Result result = cli({"data", "--data", "csv:" + dir.filePath("texts.csv")});
        QVERIFY2(result.exit_code == 0, qPrintable(result.err));
        QVERIFY2(result.out.contains(QStringLiteral("Classes:")) && result.out.contains(QStringLiteral("money")), qPrintable(result.out));
        QVERIFY(result.out.contains(QStringLiteral("Vocabulary:")));
        result = cli({"data", "--data", "synthetic:100:20"});
        QVERIFY(result.out.contains(QStringLiteral("(synthetic)")));
        result = cli({"data", "--data", "folder:" + dir.filePath("missing")});
        QCOMPARE(result.exit_code, 1);
        QVERIFY2(result.err.startsWith(QStringLiteral("mirrorlab-cli: error: ")) && result.err.contains(QStringLiteral("missing")),
                 qPrintable(result.err));
    }
};

QTEST_APPLESS_MAIN(TestDataSources)
#include "test_data_sources.moc"
