// mirrorlab-cli as scripts see it: commands, output, exit codes (0 ok, 1 failure, 2 usage, 130 after
// Ctrl-C) and the one-line "mirrorlab-cli: error: " reason on stderr.
#include <QtTest/QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QStringList>
#include <QTemporaryDir>

#include <signal.h>  // kill()
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/data/zip_reader.h"
#include "core/util/json.h"
#include "support/cli_process.h"
#include "support/zip_crc.h"

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif

namespace {

QString model_json(int vocabulary, int input_length, int kernel_size = 5, const QString& conv_class = QStringLiteral("Conv1D")) {
    return QStringLiteral(
               "{\"name\": \"small\", \"input_length\": %1, \"layers\": ["
               "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": %2, \"output_dim\": 8}},"
               "{\"class_name\": \"%3\", \"config\": {\"filters\": 16, \"kernel_size\": %4, \"activation\": \"relu\"}},"
               "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
               "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}")
        .arg(input_length)
        .arg(vocabulary)
        .arg(conv_class)
        .arg(kernel_size);
}

// A stored (uncompressed) zip of `entries`, as np.savez writes one.
QByteArray stored_zip(const std::vector<std::pair<std::string, QByteArray>>& entries) {
    QByteArray out, central;
    const auto put = [](QByteArray& b, std::uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i) b.append(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    for (const auto& [name, data] : entries) {
        const auto offset = static_cast<std::uint64_t>(out.size());
        const std::uint32_t crc = mirrorlab::testing::zip_crc32(
            std::span(reinterpret_cast<const std::uint8_t*>(data.constData()), static_cast<std::size_t>(data.size())));
        for (QByteArray* h : {&out, &central}) {
            const bool local = h == &out;
            put(*h, local ? 0x04034b50 : 0x02014b50, 4);
            if (!local) put(*h, 20, 2);
            put(*h, 20, 2);
            put(*h, 0, 2);  // flags
            put(*h, 0, 2);  // stored
            put(*h, 0, 4);  // time, date
            put(*h, crc, 4);
            put(*h, static_cast<std::uint64_t>(data.size()), 4);
            put(*h, static_cast<std::uint64_t>(data.size()), 4);
            put(*h, name.size(), 2);
            put(*h, 0, 2);
            if (!local) {
                put(*h, 0, 6);  // comment length, disk, internal attributes
                put(*h, 0, 4);  // external attributes
                put(*h, offset, 4);
            }
            h->append(name.data(), static_cast<qsizetype>(name.size()));
            if (local) h->append(data);
        }
    }
    const auto cd_offset = static_cast<std::uint64_t>(out.size());
    out.append(central);
    put(out, 0x06054b50, 4);
    put(out, 0, 4);
    put(out, entries.size(), 2);
    put(out, entries.size(), 2);
    put(out, static_cast<std::uint64_t>(central.size()), 4);
    put(out, cd_offset, 4);
    put(out, 0, 2);
    return out;
}

// A .npy v1.0 of int64 labels.
QByteArray labels_npy(const std::vector<std::int64_t>& labels) {
    QByteArray header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" + QByteArray::number(labels.size()) + ",), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    QByteArray out("\x93NUMPY\x01\x00", 8);
    out.append(static_cast<char>(header.size() & 0xff));
    out.append(static_cast<char>(header.size() >> 8));
    out.append(header);
    for (std::int64_t v : labels) {
        for (int i = 0; i < 8; ++i) out.append(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
    }
    return out;
}

bool looks_like_training(const CliResult& r) {
    return r.out.contains(QStringLiteral("Epoch ")) || r.out.contains(QStringLiteral("ms/step")) ||
           r.out.contains(QStringLiteral("\"type\""));
}

}  // namespace

class TestCli : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void summaryPrintsKerasTable();
    void summaryRejectsBadModels_data();
    void summaryRejectsBadModels();
    void layersListsTheRegistry();
    void devicesListsCpu();
    void versionMatchesTheProject();
    void trainPrintsKerasProgress();
    void trainJsonStreamsEvents();
    void trainTakesAConfigFile();
    void errors_data();
    void errors();
    void helpPerCommand();
    void unreadableInputsFailCleanly_data();
    void unreadableInputsFailCleanly();
    void folderSymlinkLoopsFinish();
    void outOfMemoryRunFails();
    void modelBiggerThanMemorySaysWhatItNeeds();
    void jsonReportsNonUtf8Paths();
    void outputThatCannotBeWrittenFails();
    void hugeInputsAreRefusedBeforeAllocating();
    void ctrlCStopsAfterTheStepAndKeepsFinishedEpochs();
    void ctrlCWithoutAStoreSaysNothingIsKept();
    void ctrlCIsAJsonEventWithTheExactStep();
    void ctrlCDuringValidationStopsIt();
    void secondCtrlCExitsAtOnce();

private:
    QString write_file(const QString& name, const QString& text);

    QTemporaryDir dir_;
    QString small_model_;
};

QString TestCli::write_file(const QString& name, const QString& text) {
    const QString path = dir_.filePath(name);
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return {};
    file.write(text.toUtf8());
    return path;
}

void TestCli::initTestCase() {
    QVERIFY(QFile::exists(QStringLiteral(MIRRORLAB_CLI_PATH)));
    QVERIFY(dir_.isValid());
    // The synthetic data uses Keras' Reuters vocabulary (ids up to 30981).
    small_model_ = write_file(QStringLiteral("small.json"), model_json(30982, 60));
    QVERIFY(!small_model_.isEmpty());
}

void TestCli::summaryPrintsKerasTable() {
    const CliResult r = run_cli({QStringLiteral("summary")});
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY2(r.out.contains(QStringLiteral("Total params: 332,856")), qPrintable(describe(r)));
    QVERIFY2(r.out_lines.contains(QStringLiteral("embedding (Embedding)        (None, 300, 7)            216874")),
             qPrintable(describe(r)));
    QVERIFY(r.out.startsWith(QStringLiteral("Model: \"sequential\"")));
    QVERIFY(r.err.isEmpty());
}

void TestCli::summaryRejectsBadModels_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("mentions");
    QTest::newRow("malformed json") << QStringLiteral("bad.json")
                                    << QStringLiteral("{\"input_length\": 10, \"layers\": [}")
                                    << QStringList{QStringLiteral("bad.json:1:")};
    QTest::newRow("unknown layer") << QStringLiteral("conv3d.json") << model_json(100, 60, 5, QStringLiteral("Conv3D"))
                                   << QStringList{QStringLiteral("conv3d.json"), QStringLiteral("\"Conv3D\""),
                                                  QStringLiteral("not supported")};
    QTest::newRow("impossible shape") << QStringLiteral("kernel.json") << model_json(100, 10, 50)
                                      << QStringList{QStringLiteral("kernel.json"), QStringLiteral("kernel_size 50"),
                                                     QStringLiteral("only 10 steps")};
    // A misspelt argument trained Keras' default (a linear output) without a word; Keras' own
    // arguments MirrorLab does not use (kernel_initializer, ...) are still accepted.
    QTest::newRow("misspelt argument")
        << QStringLiteral("typo.json")
        << QStringLiteral(R"({"input_length": 60, "layers": [{"class_name": "Embedding", "config": {"input_dim": 100, "output_dim": 8}},
            {"class_name": "GlobalMaxPooling1D"},
            {"class_name": "Dense", "config": {"units": 46, "activaton": "softmax", "kernel_initializer": "glorot_uniform"}}]})")
        << QStringList{QStringLiteral("layer 3 (Dense) has 'activaton'"), QStringLiteral("did you mean 'activation'?")};
}

void TestCli::summaryRejectsBadModels() {
    QFETCH(QString, name);
    QFETCH(QString, text);
    QFETCH(QStringList, mentions);
    const QString path = write_file(name, text);
    QVERIFY(!path.isEmpty());
    const CliResult r = run_cli({QStringLiteral("summary"), QStringLiteral("--model"), path});
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
    QVERIFY2(r.err_lines.size() == 1, qPrintable(describe(r)));
    QVERIFY2(r.err_lines.front().startsWith(kErrorPrefix), qPrintable(describe(r)));
    QVERIFY2(r.err_lines.front().contains(path), qPrintable(describe(r)));
    for (const QString& mention : mentions) QVERIFY2(r.err.contains(mention), qPrintable(mention + "\n" + describe(r)));
    QVERIFY2(r.out.isEmpty(), qPrintable(describe(r)));
}

// The registry as a person writing a model file needs it: every class name, its arguments with
// their types and Keras' defaults.
void TestCli::layersListsTheRegistry() {
    const CliResult r = run_cli({QStringLiteral("layers")});
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    for (const char* line : {"Embedding", "Conv1D | Convolution1D", "  kernel_size: integer (required)",
                             "  padding: valid|same (default valid)", "  strides: integer (default same as pool size)",
                             "Dropout", "  rate: number in [0, 1) (default 0.5)", "Activation | ReLU", "Flatten",
                             "  no arguments"}) {
        QVERIFY2(r.out_lines.contains(QLatin1String(line)), qPrintable(QString::fromLatin1(line) + "\n" + describe(r)));
    }
    QVERIFY(r.err.isEmpty());
    const CliResult extra = run_cli({QStringLiteral("layers"), QStringLiteral("--model"), small_model_});
    QCOMPARE(extra.exit_code, 2);
}

void TestCli::devicesListsCpu() {
    const CliResult r = run_cli({QStringLiteral("devices")});
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    const QRegularExpression cpu(QStringLiteral("^\\s+CPU:0\\s+.* - \\d+ cores, [0-9.]+ [KMG]i?B memory$"));
    bool found = false;
    for (const QString& line : r.out_lines) found = found || cpu.match(line).hasMatch();
    QVERIFY2(found, qPrintable(describe(r)));
    QVERIFY(r.out.contains(QStringLiteral("GPU: ")));
}

// The man page, the package and `mirrorlab --version` name one version; scripts read this line.
void TestCli::versionMatchesTheProject() {
    const CliResult r = run_cli({QStringLiteral("--version")});
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    QCOMPARE(r.out_lines, QStringList{QStringLiteral("mirrorlab-cli " MIRRORLAB_VERSION)});
}

void TestCli::trainPrintsKerasProgress() {
    const CliResult r = run_cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"),
                                 QStringLiteral("--epochs"), QStringLiteral("2"), QStringLiteral("--data"),
                                 QStringLiteral("synthetic:300:100"), QStringLiteral("--model"), small_model_});
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY2(r.out_lines.contains(QStringLiteral("Epoch 1/2")), qPrintable(describe(r)));
    QVERIFY2(r.out_lines.contains(QStringLiteral("Epoch 2/2")), qPrintable(describe(r)));
    const QRegularExpression progress(QStringLiteral(
        "^10/10 - \\d+s \\d+ms/step - loss: \\d\\.\\d{4} - sparse_categorical_accuracy: \\d\\.\\d{4}"
        " - sparse_top_k_categorical_accuracy: \\d\\.\\d{4} - val_loss: \\d\\.\\d{4}"
        " - val_sparse_categorical_accuracy: \\d\\.\\d{4} - val_sparse_top_k_categorical_accuracy: \\d\\.\\d{4}$"));
    int progress_lines = 0;
    for (const QString& line : r.out_lines) progress_lines += progress.match(line).hasMatch() ? 1 : 0;
    QVERIFY2(progress_lines == 2, qPrintable(describe(r)));
    QVERIFY2(r.err.contains(QStringLiteral("Using MirroredStrategy with devices (/device:CPU:0, /device:CPU:1)")),
             qPrintable(describe(r)));
    // The tutorial's optimizer, as Keras would print its config (tf.keras 2 semantics: nothing extra).
    QVERIFY2(r.err.contains(QStringLiteral("Optimizer: Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07)\n")),
             qPrintable(describe(r)));
    QVERIFY2(count_error_lines(r) == 0, qPrintable(describe(r)));

    // --keras-semantics keras3: Keras 3's Nadam schedule and Embedding update, said in the log.
    const CliResult keras3 = run_cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"),
                                      QStringLiteral("--epochs"), QStringLiteral("1"), QStringLiteral("--data"),
                                      QStringLiteral("synthetic:300:100"), QStringLiteral("--model"), small_model_,
                                      QStringLiteral("--keras-semantics"), QStringLiteral("keras3")});
    QVERIFY2(keras3.finished && keras3.exit_code == 0, qPrintable(describe(keras3)));
    QVERIFY2(keras3.err.contains(QStringLiteral("Optimizer: Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, "
                                                "epsilon=1e-07, schedule_decay=1.0, embedding_update='keras3')")),
             qPrintable(describe(keras3)));
}

// --config: every training setting from a file (what the GUI hands the workers it launches);
// --epochs may override it, an option that sets what the file holds is refused, a bad file named.
void TestCli::trainTakesAConfigFile() {
    QTemporaryDir dir;
    const QString config = dir.filePath(QStringLiteral("config.json"));
    QFile file(config);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"epochs": 3, "batch_size": 16, "seed": 7, "max_steps_per_epoch": 4,
                   "optimizer": {"class_name": "Adam", "learning_rate": 0.002, "beta_1": 0.8}})");
    file.close();
    const QStringList common = {QStringLiteral("train"), QStringLiteral("--data"), QStringLiteral("synthetic:300:100"),
                                QStringLiteral("--model"), small_model_, QStringLiteral("--no-store"), QStringLiteral("--json"),
                                QStringLiteral("--config"), config};
    const CliResult r = run_cli(common + QStringList{QStringLiteral("--epochs"), QStringLiteral("1")});
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    int epochs = 0;
    for (const QString& line : r.out_lines) {
        const mirrorlab::json::Value value = mirrorlab::json::parse(line.toStdString(), "stdout");
        const std::string type = value.at("type").as_string();
        if (type == "train_begin") {
            QCOMPARE(value.at("global_batch").as_int64(), std::int64_t{16});  // the file's
            QCOMPARE(value.at("steps_per_epoch").as_int64(), std::int64_t{4});
            QCOMPARE(value.at("epochs").as_int64(), std::int64_t{1});  // --epochs over the file's 3
        }
        if (type == "epoch_end") ++epochs;
    }
    QCOMPARE(epochs, 1);
    const CliResult both = run_cli(common + QStringList{QStringLiteral("--batch-size"), QStringLiteral("8")});
    QCOMPARE(both.exit_code, 2);
    QVERIFY2(both.err.contains(QStringLiteral("--batch-size cannot be given with --config")), qPrintable(describe(both)));
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(R"({"optimizer": {"class_name": "AdamW"}})");
    file.close();
    const CliResult bad = run_cli(common);
    QCOMPARE(bad.exit_code, 1);
    QVERIFY2(bad.err.contains(config) && bad.err.contains(QStringLiteral("AdamW")), qPrintable(describe(bad)));

    // A misspelt key, a number the engine's field cannot hold, one the option refuses: named, not
    // ignored or wrapped (4294967297 epochs trained 1 epoch; "batchsize" trained batch 32).
    const struct {
        const char* text;
        const char* said;
    } refused[] = {
        {R"({"batchsize": 64})", "unknown key 'batchsize' (the keys are epochs, batch_size"},
        {R"({"epochs": 4294967297})", "'epochs' is 4294967297, outside 1..1000000"},
        {R"({"early_stopping": {"enabled": true, "patience": -1}})", "'patience' is -1, outside 0..1000000"},
        {R"({"early_stopping": {"enabled": true, "monitor": "val_acc"}})",
         "early_stopping's monitor 'val_acc' is none of loss, accuracy, top5, val_loss, val_accuracy, val_top5"},
        {R"({"max_steps_per_epoch": -5})", "'max_steps_per_epoch' is -5, outside 0.."},
        {R"({"prefetch_batches": 1000000000})", "'prefetch_batches' is 1000000000, outside 0..64"},
        {R"({"optimizer": {"class_name": "Adam", "lr": 0.1}})", "unknown key 'lr' in 'optimizer'"},
    };
    for (const auto& c : refused) {
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(c.text);
        file.close();
        const CliResult r2 = run_cli(common);
        QVERIFY2(r2.exit_code == 1 && r2.err.contains(config) && r2.err.contains(QLatin1String(c.said)), qPrintable(describe(r2)));
    }
    // A run's settings as `runs show --json` prints them: their train_config is used.
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(R"({"train_config": {"epochs": 1, "batch_size": 8, "max_steps_per_epoch": 2,
                   "optimizer": {"class_name": "SGD", "learning_rate": 0.05}}, "devices": "cpu", "data": "synthetic"})");
    file.close();
    const CliResult stored = run_cli(common);
    QVERIFY2(stored.exit_code == 0 && stored.out.contains(QStringLiteral("\"global_batch\":8")), qPrintable(describe(stored)));
    QVERIFY2(stored.out.contains(QStringLiteral("Optimizer: SGD(learning_rate=0.05")), qPrintable(describe(stored)));
}

void TestCli::trainJsonStreamsEvents() {
    const CliResult r = run_cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"),
                                 QStringLiteral("--epochs"), QStringLiteral("2"), QStringLiteral("--data"),
                                 QStringLiteral("synthetic:300:100"), QStringLiteral("--model"), small_model_,
                                 QStringLiteral("--json")});
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY(!r.out_lines.isEmpty());
    QStringList types;
    int epoch_ends = 0;
    for (const QString& line : r.out_lines) {
        mirrorlab::json::Value value;
        try {
            value = mirrorlab::json::parse(line.toStdString(), "stdout");
        } catch (const mirrorlab::Error& error) {
            QFAIL(qPrintable(QStringLiteral("not JSON: ") + line + "\n" + error.what()));
        }
        QVERIFY2(value.is_object(), qPrintable(line));
        const mirrorlab::json::Value* type = value.find("type");
        QVERIFY2(type != nullptr && type->is_string(), qPrintable(line));
        const QString name = QString::fromStdString(type->as_string());
        if (!types.contains(name)) types.append(name);
        if (name == QStringLiteral("epoch_end")) {
            ++epoch_ends;
            for (const char* key : {"epoch", "loss", "accuracy", "top5", "val_loss", "val_accuracy", "val_top5",
                                    "epoch_seconds"}) {
                const mirrorlab::json::Value* field = value.find(key);
                QVERIFY2(field != nullptr && field->is_number(), qPrintable(QString::fromLatin1(key) + " in " + line));
            }
            QCOMPARE(value.at("epoch").as_int64(), std::int64_t{epoch_ends});
        }
    }
    QCOMPARE(epoch_ends, 2);
    for (const char* expected : {"train_begin", "epoch_begin", "step_end", "epoch_end", "memory", "log", "finished"}) {
        QVERIFY2(types.contains(QString::fromLatin1(expected)), qPrintable(types.join(QLatin1Char(' '))));
    }
    QVERIFY2(r.out_lines.back().contains(QStringLiteral("\"type\":\"finished\"")), qPrintable(r.out_lines.back()));
    QVERIFY2(!r.out.contains(QStringLiteral("Epoch 1/2")), "--json prints only JSON on stdout");
}

void TestCli::errors_data() {
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exit_code");
    QTest::addColumn<QString>("mentions");
    const QStringList train{QStringLiteral("train"), QStringLiteral("--data"), QStringLiteral("synthetic:100:20"),
                            QStringLiteral("--epochs"), QStringLiteral("1")};
    // A device spec that cannot be read is a usage mistake (2); one this machine cannot run fails (1).
    QTest::newRow("tpu") << train + QStringList{QStringLiteral("--devices"), QStringLiteral("tpu:0")} << 2
                         << QStringLiteral("--devices: device spec 'tpu:0': 'tpu' is not a device type (cpu or gpu)");
    QTest::newRow("empty devices") << train + QStringList{QStringLiteral("--devices"), QString()} << 2
                                   << QStringLiteral("device spec '': it is empty");
    QTest::newRow("limit below 16 MB") << train + QStringList{QStringLiteral("--devices"), QStringLiteral("cpu:2x8MB")} << 1
                                       << QStringLiteral("16");
    QTest::newRow("no gpu") << train + QStringList{QStringLiteral("--devices"), QStringLiteral("gpu:0")} << 1
                            << QStringLiteral("GPU");
    QTest::newRow("epochs 0") << QStringList{QStringLiteral("train"), QStringLiteral("--epochs"), QStringLiteral("0"),
                                             QStringLiteral("--devices"), QStringLiteral("cpu")}
                              << 2 << QStringLiteral("--epochs");
    QTest::newRow("epochs abc") << QStringList{QStringLiteral("train"), QStringLiteral("--epochs"), QStringLiteral("abc"),
                                               QStringLiteral("--devices"), QStringLiteral("cpu")}
                                << 2 << QStringLiteral("'abc'");
    // Numbers past the engine's int fields are refused, not wrapped (2^32 + 1 epochs ran one epoch,
    // gpu:99999999999 was reported as GPU:1215752191).
    QTest::newRow("epochs past int32") << QStringList{QStringLiteral("train"), QStringLiteral("--epochs"),
                                                      QStringLiteral("4294967297"), QStringLiteral("--devices"), QStringLiteral("cpu")}
                                       << 2 << QStringLiteral("--epochs must be an integer from 1 to 1000000, got '4294967297'");
    QTest::newRow("batch past int32") << QStringList{QStringLiteral("train"), QStringLiteral("--batch-size"),
                                                     QStringLiteral("4294967328"), QStringLiteral("--devices"), QStringLiteral("cpu")}
                                      << 2 << QStringLiteral("--batch-size must be an integer from 1 to 16777216");
    QTest::newRow("gpu index past int32") << train + QStringList{QStringLiteral("--devices"), QStringLiteral("gpu:99999999999")}
                                          << 2 << QStringLiteral("'99999999999' is not a GPU index");
    // Optimizer settings are read while the command line is: a mistake there is a usage error.
    QTest::newRow("unknown keras semantics")
        << train + QStringList{QStringLiteral("--keras-semantics"), QStringLiteral("keras2")} << 2
        << QStringLiteral("--keras-semantics: unknown embedding update 'keras2'; accepted: tf2");
    QTest::newRow("unknown optimizer") << train + QStringList{QStringLiteral("--optimizer"), QStringLiteral("adamw")} << 2
                                       << QStringLiteral("--optimizer: unknown optimizer 'adamw'; accepted names");
    // strtod read "0x10" as 16 and trained with it.
    QTest::newRow("hex learning rate") << train + QStringList{QStringLiteral("--learning-rate"), QStringLiteral("0x10")} << 2
                                       << QStringLiteral("--learning-rate must be a decimal number > 0, e.g. 0.001 or 1e-3, got '0x10'");
    QTest::newRow("learning rate below a double") << train + QStringList{QStringLiteral("--learning-rate"), QStringLiteral("1e-320")} << 2
                                                  << QStringLiteral("within float32's normal range (1.1754944e-38 to 3.4028235e+38), e.g. 0.001 or 1e-3, got '1e-320'");
    // A data spec that cannot be read is a usage mistake; a file that is not there fails (1).
    QTest::newRow("unknown data kind") << QStringList{QStringLiteral("train"), QStringLiteral("--data"), QStringLiteral("bogus:x")} << 2
                                       << QStringLiteral("--data: data spec 'bogus:x' is not supported; use default, synthetic");
    QTest::newRow("bad sample count") << QStringList{QStringLiteral("bench"), QStringLiteral("--data"), QStringLiteral("synthetic:abc")} << 2
                                      << QStringLiteral("'abc' is not a sample count");
    QTest::newRow("missing data file") << QStringList{QStringLiteral("train"), QStringLiteral("--data"), QStringLiteral("csv:/nonexistent.csv")}
                                       << 1 << QStringLiteral("/nonexistent.csv");
    QTest::newRow("learning rate past float32") << train + QStringList{QStringLiteral("--learning-rate"), QStringLiteral("1e39")} << 2
                                                << QStringLiteral("within float32's normal range");
    QTest::newRow("learning rate 0") << train + QStringList{QStringLiteral("--learning-rate"), QStringLiteral("0")} << 2
                                     << QStringLiteral("--learning-rate must be a finite number > 0, e.g. 0.001");
    // An empty value (an unset shell variable) trained with the default store or settings, unasked.
    QTest::newRow("empty store") << train + QStringList{QStringLiteral("--store"), QString()} << 2
                                 << QStringLiteral("option --store needs a value, got an empty one");
    QTest::newRow("empty config") << train + QStringList{QStringLiteral("--config="), QStringLiteral("--no-store")} << 2
                                  << QStringLiteral("option --config needs a value, got an empty one");
    // The evaluation's options without --evaluate printed the summary and nothing of them.
    QTest::newRow("import --json alone") << QStringList{QStringLiteral("import"), QStringLiteral("model.keras"), QStringLiteral("--json")}
                                         << 2 << QStringLiteral("--json requires --evaluate");
    QTest::newRow("unknown option") << QStringList{QStringLiteral("train"), QStringLiteral("--frobnicate"), QStringLiteral("1")}
                                    << 2 << QStringLiteral("--frobnicate");
    QTest::newRow("missing value") << QStringList{QStringLiteral("train"), QStringLiteral("--epochs")} << 2
                                   << QStringLiteral("option --epochs needs a value");
    QTest::newRow("flag with a value") << QStringList{QStringLiteral("train"), QStringLiteral("--json=yes please")} << 2
                                       << QStringLiteral("--json takes no value, got 'yes please'");
    QTest::newRow("stray argument") << QStringList{QStringLiteral("summary"), QStringLiteral("model.json")} << 2
                                    << QStringLiteral("unexpected argument 'model.json'");
    QTest::newRow("bench option") << QStringList{QStringLiteral("bench"), QStringLiteral("--threads=0")} << 2
                                  << QStringLiteral("--threads must be an integer from 1 to 4096, got '0'");
    // An option of another runs action was ignored without a word.
    QTest::newRow("runs show --tensorboard") << QStringList{QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("1"),
                                                            QStringLiteral("--tensorboard"), QStringLiteral("tb")}
                                             << 2 << QStringLiteral("--tensorboard is for runs export, not runs show");
    QTest::newRow("runs --tensorboard-batches") << QStringList{QStringLiteral("runs"), QStringLiteral("--tensorboard-batches")} << 2
                                                << QStringLiteral("--tensorboard-batches is for runs export, not runs list");
    QTest::newRow("runs delete --json") << QStringList{QStringLiteral("runs"), QStringLiteral("delete"), QStringLiteral("1"),
                                                       QStringLiteral("--json")}
                                        << 2 << QStringLiteral("--json is for runs list and runs show, not runs delete");
    QTest::newRow("runs unknown action with an option")
        << QStringList{QStringLiteral("runs"), QStringLiteral("frobnicate"), QStringLiteral("--json")} << 2
        << QStringLiteral("runs: unknown action 'frobnicate'");
    QTest::newRow("unknown command") << QStringList{QStringLiteral("frobnicate")} << 2 << QStringLiteral("frobnicate");
    QTest::newRow("no command") << QStringList{} << 2 << QStringLiteral("usage");
}

void TestCli::errors() {
    QFETCH(QStringList, arguments);
    QFETCH(int, exit_code);
    QFETCH(QString, mentions);
    if (arguments.contains(QStringLiteral("gpu:0"))) {
        const CliResult devices = run_cli({QStringLiteral("devices")});
        if (devices.out.contains(QStringLiteral("GPU:0"))) QSKIP("this machine has a GPU:0");
    }
    const CliResult r = run_cli(arguments);
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == exit_code, qPrintable(describe(r)));
    QVERIFY2(!looks_like_training(r), qPrintable(describe(r)));
    QVERIFY2(!r.err_lines.isEmpty(), qPrintable(describe(r)));
    QVERIFY2(r.err.contains(mentions), qPrintable(describe(r)));
    if (arguments.isEmpty()) return;  // bare invocation: the usage text on stderr
    QVERIFY2(r.err_lines.front().startsWith(kErrorPrefix), qPrintable(describe(r)));
    QVERIFY2(count_error_lines(r) == 1, qPrintable(describe(r)));
    if (exit_code == 1) QVERIFY2(r.err_lines.size() == 1, qPrintable(describe(r)));
    // A usage error says where the options are: the command's own help when a command was named.
    if (exit_code == 2) {
        const QString help = arguments.front().startsWith(QLatin1Char('-')) || arguments.front() == QStringLiteral("frobnicate")
                                 ? QStringLiteral("Run 'mirrorlab-cli --help'")
                                 : QStringLiteral("Run 'mirrorlab-cli ") + arguments.front() + QStringLiteral(" --help'");
        QVERIFY2(r.err_lines.back().startsWith(help), qPrintable(describe(r)));
    }
}

// Every command lists its options with --help (and "help COMMAND"), on stdout with exit status 0.
void TestCli::helpPerCommand() {
    const CliResult top = run_cli({QStringLiteral("--help")});
    QVERIFY2(top.finished && top.exit_code == 0 && top.err.isEmpty(), qPrintable(describe(top)));
    for (const char* command : {"devices", "summary", "layers", "train", "bench", "data"}) {
        QVERIFY2(top.out.contains(QStringLiteral("\n  ") + QLatin1String(command) + QLatin1Char(' ')),
                 qPrintable(QLatin1String(command) + QLatin1Char('\n') + describe(top)));
    }
    const std::pair<QString, QStringList> commands[] = {
        {QStringLiteral("train"),
         {QStringLiteral("--epochs N"), QStringLiteral("(default 10)"), QStringLiteral("--devices SPEC"),
          QStringLiteral("--oov map|error"), QStringLiteral("--early-stopping PATIENCE"), QStringLiteral("--json")}},
        {QStringLiteral("bench"), {QStringLiteral("--scaling-steps N"), QStringLiteral("--threads N")}},
        {QStringLiteral("data"), {QStringLiteral("--sequence-length N"), QStringLiteral("--data SPEC")}},
        {QStringLiteral("summary"), {QStringLiteral("--model FILE")}},
    };
    for (const auto& [command, mentions] : commands) {
        for (const QStringList& arguments : {QStringList{command, QStringLiteral("--help")},
                                             QStringList{QStringLiteral("help"), command}}) {
            const CliResult r = run_cli(arguments);
            QVERIFY2(r.finished && r.exit_code == 0 && r.err.isEmpty(), qPrintable(describe(r)));
            QVERIFY2(r.out.contains(QStringLiteral("usage: mirrorlab-cli ") + command), qPrintable(describe(r)));
            for (const QString& mention : mentions) QVERIFY2(r.out.contains(mention), qPrintable(mention + "\n" + describe(r)));
        }
    }
}

// Issue #13: inputs that used to hang, fill memory or ask for gigabytes end with one clear error.
void TestCli::unreadableInputsFailCleanly_data() {
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QStringList>("mentions");
    const QString fifo = dir_.filePath(QStringLiteral("model-fifo.json"));
    QFile::remove(fifo);
    QVERIFY(::mkfifo(fifo.toLocal8Bit().constData(), 0600) == 0);

    // A Keras-shaped npz whose labels are fine except one of 2,000,000,000 (formerly 16 GB).
    QFile fixture(QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/npz/reuters_small_savez.npz"));
    QVERIFY(fixture.open(QIODevice::ReadOnly));
    const QByteArray fixture_bytes = fixture.readAll();
    const std::vector<std::uint8_t> archive(fixture_bytes.begin(), fixture_bytes.end());
    const std::vector<std::uint8_t> x = mirrorlab::ZipReader(archive, "fixture").read("x.npy");
    std::vector<std::int64_t> labels(60, 3);
    labels[11] = 2000000000;
    const QString npz = dir_.filePath(QStringLiteral("huge-label.npz"));
    QFile out(npz);
    QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
    out.write(stored_zip({{"x.npy", QByteArray(reinterpret_cast<const char*>(x.data()), static_cast<qsizetype>(x.size()))},
                          {"y.npy", labels_npy(labels)}}));
    out.close();

    const QString zero = QStringLiteral("/dev/zero");
    QTest::newRow("model /dev/zero") << QStringList{QStringLiteral("summary"), QStringLiteral("--model"), zero}
                                     << QStringList{QStringLiteral("'/dev/zero'"), QStringLiteral("not a regular file")};
    QTest::newRow("model FIFO") << QStringList{QStringLiteral("summary"), QStringLiteral("--model"), fifo}
                                << QStringList{fifo, QStringLiteral("FIFO (named pipe), not a regular file")};
    QTest::newRow("train --model /dev/zero")
        << QStringList{QStringLiteral("train"), QStringLiteral("--data"), QStringLiteral("synthetic:100:20"),
                       QStringLiteral("--devices"), QStringLiteral("cpu"), QStringLiteral("--model"), zero}
        << QStringList{QStringLiteral("not a regular file")};
    QTest::newRow("csv /dev/zero") << QStringList{QStringLiteral("data"), QStringLiteral("--data"), QStringLiteral("csv:/dev/zero")}
                                   << QStringList{QStringLiteral("'/dev/zero'"), QStringLiteral("not a regular file")};
    QTest::newRow("npz /dev/zero") << QStringList{QStringLiteral("data"), QStringLiteral("--data"), QStringLiteral("keras:/dev/zero")}
                                   << QStringList{QStringLiteral("'/dev/zero'"), QStringLiteral("not a regular file")};
    QTest::newRow("npz label 2000000000")
        << QStringList{QStringLiteral("data"), QStringLiteral("--data"), QStringLiteral("keras:") + npz}
        << QStringList{npz, QStringLiteral("label 2000000000 at index 11 is too large"), QStringLiteral("at most 100000 classes")};
}

void TestCli::unreadableInputsFailCleanly() {
    QFETCH(QStringList, arguments);
    QFETCH(QStringList, mentions);
    const CliResult r = run_cli(arguments, std::uint64_t{2} << 30);
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
    QVERIFY2(r.err_lines.size() == 1 && r.err_lines.front().startsWith(kErrorPrefix), qPrintable(describe(r)));
    for (const QString& mention : mentions) QVERIFY2(r.err.contains(mention), qPrintable(mention + "\n" + describe(r)));
    QVERIFY2(!r.err.contains(QStringLiteral("unexpected failure")), qPrintable(describe(r)));
}

// Two self-links in a class folder used to grow the walk until memory ran out; now each folder is
// read once and the links are named in warnings.
void TestCli::folderSymlinkLoopsFinish() {
    namespace fs = std::filesystem;
    const fs::path root = dir_.filePath(QStringLiteral("loops")).toStdString();
    for (const char* cls : {"neg", "pos"}) {
        fs::create_directories(root / cls);
        for (int i = 0; i < 3; ++i) {
            QFile f(QString::fromStdString((root / cls / ("t" + std::to_string(i) + ".txt")).string()));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray(cls) + " text " + QByteArray::number(i));
        }
    }
    fs::create_directory_symlink(".", root / "pos" / "a");
    fs::create_directory_symlink(".", root / "pos" / "b");
    fs::create_directory_symlink("..", root / "neg" / "up");
    const CliResult r = run_cli({QStringLiteral("data"), QStringLiteral("--data"),
                                 QStringLiteral("folder:") + QString::fromStdString(root.string())},
                                std::uint64_t{2} << 30);
    QVERIFY2(r.finished && r.exit_code == 0, qPrintable(describe(r)));
    QVERIFY2(r.out.contains(QStringLiteral("Samples:     5")), qPrintable(describe(r)));  // 6 texts, 1 to validation
    QVERIFY2(r.out.contains(QStringLiteral("Validation split: 1 samples")), qPrintable(describe(r)));
    // The class the one validation sample does not belong to: only training counts were printed.
    QVERIFY2(r.out.contains(QStringLiteral("  1 of the 2 classes has no validation sample ('")) &&
                 r.out.contains(QStringLiteral("'): its accuracy is not measured")),
             qPrintable(describe(r)));
    QVERIFY2(r.out.contains(QStringLiteral("WARNING: skipped '") + QString::fromStdString((root / "pos" / "a").string()) +
                            QStringLiteral("': it leads to a folder that was already read")),
             qPrintable(describe(r)));
    QVERIFY2(r.out.contains(QStringLiteral("WARNING: skipped '") + QString::fromStdString((root / "neg" / "up").string()) +
                            QStringLiteral("': it leads to '")),
             qPrintable(describe(r)));
    QVERIFY2(count_error_lines(r) == 0, qPrintable(describe(r)));
}

void TestCli::outOfMemoryRunFails() {
    const QString huge = write_file(QStringLiteral("huge.json"), model_json(2000000, 60));
    QVERIFY(!huge.isEmpty());
    const CliResult r = run_cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2x16MB"),
                                 QStringLiteral("--epochs"), QStringLiteral("1"), QStringLiteral("--data"),
                                 QStringLiteral("synthetic:100:20"), QStringLiteral("--model"), huge});
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 1, qPrintable(describe(r)));
    QVERIFY2(count_error_lines(r) == 1, qPrintable(describe(r)));
    QString reason;
    for (const QString& line : r.err_lines) {
        if (line.startsWith(kErrorPrefix)) reason = line;
    }
    QVERIFY2(reason.contains(QStringLiteral("out of memory on /device:CPU:0")), qPrintable(describe(r)));
    QVERIFY2(reason.contains(QStringLiteral("16.0 MiB")), qPrintable(describe(r)));
    QVERIFY2(!r.out.contains(QStringLiteral("ms/step")), qPrintable(describe(r)));
}

// A model larger than the machine (137 billion parameters: 550 GB of weights) is refused before
// anything is allocated, with what it needs and what there is, instead of "std::bad_alloc".
void TestCli::modelBiggerThanMemorySaysWhatItNeeds() {
    const QString giant = write_file(
        QStringLiteral("giant.json"),
        QStringLiteral("{\"input_length\": 60, \"layers\": ["
                       "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 2147483647, \"output_dim\": 64}},"
                       "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
                       "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}"));
    QVERIFY(!giant.isEmpty());
    const QStringList run{QStringLiteral("train"), QStringLiteral("--epochs"), QStringLiteral("1"), QStringLiteral("--data"),
                          QStringLiteral("synthetic:100:20"), QStringLiteral("--model"), giant, QStringLiteral("--devices")};
    const std::pair<QString, QStringList> cases[] = {
        {QStringLiteral("cpu"),
         {QStringLiteral("out of memory on the host: the model needs"), QStringLiteral("137,438,956,398 parameters"),
          QStringLiteral("is available")}},
        {QStringLiteral("cpu:2x512MB"),
         {QStringLiteral("out of memory on /device:CPU:0: the model needs"), QStringLiteral("on each replica"),
          QStringLiteral("over the device's limit of 512.0 MiB"), QStringLiteral("lower the batch size")}},
    };
    for (const auto& [devices, mentions] : cases) {
        const CliResult r = run_cli(run + QStringList{devices});
        QVERIFY2(r.finished && r.exit_code == 1, qPrintable(describe(r)));
        QVERIFY2(count_error_lines(r) == 1, qPrintable(describe(r)));
        QVERIFY2(!r.err.contains(QStringLiteral("bad_alloc")), qPrintable(describe(r)));
        for (const QString& mention : mentions) QVERIFY2(r.err.contains(mention), qPrintable(mention + "\n" + describe(r)));
        QVERIFY2(!looks_like_training(r), qPrintable(describe(r)));
    }
}

// Inputs that would take more memory than a computer has are refused by name before anything is
// allocated, under a 2 GiB address-space cap: a synthetic corpus of 10^8 samples (it took 6 GB
// and more), an input_length that pads the data to hundreds of GB, a multi-GB file given as a
// checkpoint (read whole before its signature was looked at).
void TestCli::hugeInputsAreRefusedBeforeAllocating() {
    constexpr std::uint64_t kCap = std::uint64_t{2} << 30;
    const CliResult corpus = run_cli({QStringLiteral("data"), QStringLiteral("--data"), QStringLiteral("synthetic:100000000")}, kCap);
    QVERIFY2(corpus.exit_code == 2 && corpus.err.contains(QStringLiteral("at most 1000000 training")), qPrintable(describe(corpus)));

    const QString long_model = write_file(QStringLiteral("long.json"), QStringLiteral(
        R"({"name": "long", "input_length": 16777216, "layers": [
            {"class_name": "Embedding", "config": {"input_dim": 30982, "output_dim": 2}},
            {"class_name": "GlobalMaxPooling1D"},
            {"class_name": "Dense", "config": {"units": 46, "activation": "softmax"}}]})"));
    const CliResult padded = run_cli({QStringLiteral("train"), QStringLiteral("--no-store"), QStringLiteral("--devices"),
                                      QStringLiteral("cpu"), QStringLiteral("--data"), QStringLiteral("synthetic:20000:2000"),
                                      QStringLiteral("--model"), long_model},
                                     kCap);
    QVERIFY2(padded.exit_code == 1 && padded.err.contains(QStringLiteral("tokens each (the model's input_length) needs")) &&
                 padded.err.contains(QStringLiteral("lower input_length")),
             qPrintable(describe(padded)));

    const QString big = dir_.filePath(QStringLiteral("big.mlckpt"));
    {
        QFile file(big);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QVERIFY(file.resize(qint64{3} << 30));  // sparse: no disk is used
    }
    const CliResult checkpoint = run_cli({QStringLiteral("train"), QStringLiteral("--store"), dir_.filePath(QStringLiteral("store")),
                                          QStringLiteral("--resume"), big, QStringLiteral("--epochs"), QStringLiteral("2")},
                                         kCap);
    QFile::remove(big);
    QVERIFY2(checkpoint.exit_code == 1 && checkpoint.err.contains(QStringLiteral("is not a MirrorLab checkpoint")),
             qPrintable(describe(checkpoint)));
}

// Standard output to a full disk (/dev/full stands for one): the command says it could not write
// its output and exits 1. It exited 0, leaving an empty or truncated file behind `> file`.
void TestCli::outputThatCannotBeWrittenFails() {
    if (!QFileInfo::exists(QStringLiteral("/dev/full"))) QSKIP("no /dev/full on this system");
    for (const QStringList& arguments : {QStringList{QStringLiteral("summary")},
                                         QStringList{QStringLiteral("data"), QStringLiteral("--data"), QStringLiteral("synthetic:100:20")}}) {
        QProcess process;
        process.setStandardOutputFile(QStringLiteral("/dev/full"));
        process.start(QStringLiteral(MIRRORLAB_CLI_PATH), arguments);
        QVERIFY(process.waitForFinished(kTimeoutMs));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QCOMPARE(process.exitCode(), 1);
        QVERIFY2(err.contains(QStringLiteral("cannot write the output to standard output: No space left on device")), qPrintable(err));
    }
}

// A Latin-1 file whose name is Latin-1 too (café.csv as bytes 63 61 66 E9) is named in a warning: with --json the
// run used to end in std::terminate (exit 134) when the JSON writer refused the byte.
void TestCli::jsonReportsNonUtf8Paths() {
    const QByteArray path = QFile::encodeName(dir_.path()) + "/caf\xE9.csv";
    {
        QFile file(QFile::decodeName(path));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("label,text\nsport,team wins the cup at the caf\xE9\nfinance,shares fall\nsport,goal in the last minute\n"
                   "finance,bank profits rise\nsport,team wins again\nfinance,stocks drop\n");
    }
    QProcess process;
    process.setProgram(QStringLiteral(MIRRORLAB_CLI_PATH));
    // The argument must reach the program as the same bytes, whatever the test's locale.
    process.setArguments({QStringLiteral("train"), QStringLiteral("--json"), QStringLiteral("--epochs"), QStringLiteral("1"),
                          QStringLiteral("--devices"), QStringLiteral("cpu"), QStringLiteral("--data"),
                          QStringLiteral("csv:") + QFile::decodeName(path)});
    process.start();
    QVERIFY(process.waitForFinished(kTimeoutMs));
    const QByteArray out = process.readAllStandardOutput();
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0, qPrintable(err));
    bool warned = false;
    bool classes_said = false;
    bool finished = false;
    for (const QByteArray& line : out.split('\n')) {
        if (line.isEmpty()) continue;
        try {
            const mirrorlab::json::Value event = mirrorlab::json::parse(line.toStdString());
            const std::string type = event.find("type")->as_string();
            const mirrorlab::json::Value* text = event.find("text");
            warned = warned || (type == "warning" && text != nullptr &&
                                text->as_string().find("caf\xEF\xBF\xBD.csv is not UTF-8") != std::string::npos);
            // Two topics on the tutorial's 46 units: the 44 outputs naming no topic are said.
            classes_said = classes_said || (type == "warning" && text != nullptr &&
                                            text->as_string().find("46 units but the data has 2 classes: 44 outputs name no "
                                                                   "class") != std::string::npos);
            finished = finished || type == "finished";
        } catch (const std::exception& error) {
            QFAIL(qPrintable(QStringLiteral("not a JSON line: ") + QString::fromUtf8(line) + " (" + error.what() + ")"));
        }
    }
    QVERIFY2(warned, out.constData());
    QVERIFY2(classes_said, out.constData());
    QVERIFY2(finished, out.constData());
}

// Ctrl-C in the middle of a run: the step in flight completes, the finished epochs are kept and
// said so in one line, and the exit status (128 + SIGINT) tells a script that the run did not finish.
void TestCli::ctrlCStopsAfterTheStepAndKeepsFinishedEpochs() {
    LiveCli cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"), QStringLiteral("--epochs"),
                 QStringLiteral("1000"), QStringLiteral("--data"), QStringLiteral("synthetic:300:100"),
                 QStringLiteral("--model"), small_model_});
    QVERIFY(cli.started());
    // "Epoch 2/1000" comes after epoch 1's progress line: at least one epoch is complete.
    QVERIFY2(cli.wait_until([&] { return cli.out().contains(QStringLiteral("Epoch 2/1000")); }), qPrintable(cli.err()));
    QVERIFY(cli.send(SIGINT));
    const CliResult r = cli.finish();
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 130, qPrintable(describe(r)));
    QVERIFY2(count_error_lines(r) == 0, qPrintable(describe(r)));

    int progress_lines = 0;
    for (const QString& line : r.out_lines) progress_lines += line.startsWith(QStringLiteral("10/10 - ")) ? 1 : 0;
    QVERIFY2(progress_lines >= 1, qPrintable(describe(r)));
    // The last line on stderr says where the run stopped and what was kept.
    const QRegularExpression summary(QStringLiteral(
        "^mirrorlab-cli: stopped by Ctrl-C (?:in epoch (\\d+) after step (\\d+)/10|in epoch (\\d+), validation step \\d+/4 "
        "\\(after all 10 training steps\\)|after epoch (\\d+)); (\\d+) complete epochs? kept$"));
    QVERIFY2(!r.err_lines.isEmpty(), qPrintable(describe(r)));
    const QRegularExpressionMatch match = summary.match(r.err_lines.back());
    QVERIFY2(match.hasMatch(), qPrintable(describe(r)));
    const int kept = match.captured(5).toInt();
    QCOMPARE(kept, progress_lines);
    if (!match.captured(1).isEmpty()) {
        QCOMPARE(match.captured(1).toInt(), kept + 1);
        // 0 when the stop came between the epoch's "Epoch N/1000" line and its first step.
        QVERIFY(match.captured(2).toInt() >= 0 && match.captured(2).toInt() <= 10);
    } else if (!match.captured(3).isEmpty()) {
        QCOMPARE(match.captured(3).toInt(), kept + 1);
    } else {
        QCOMPARE(match.captured(4).toInt(), kept);
    }
    QVERIFY2(r.err.contains(QStringLiteral("press Ctrl-C again")), qPrintable(describe(r)));
    QVERIFY2(!r.err.contains(QStringLiteral("Training finished")), qPrintable(describe(r)));
}

// With --no-store nothing outlives the process: the stop line says the epochs were trained and
// none kept. It said "1 complete epoch kept" though nothing was.
void TestCli::ctrlCWithoutAStoreSaysNothingIsKept() {
    LiveCli cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu"), QStringLiteral("--epochs"),
                 QStringLiteral("1000"), QStringLiteral("--data"), QStringLiteral("synthetic:300:100"),
                 QStringLiteral("--model"), small_model_, QStringLiteral("--no-store")});
    QVERIFY(cli.started());
    QVERIFY2(cli.wait_until([&] { return cli.out().contains(QStringLiteral("Epoch 2/1000")); }), qPrintable(cli.err()));
    QVERIFY(cli.send(SIGINT));
    const CliResult r = cli.finish();
    QVERIFY2(r.finished && r.exit_code == 130, qPrintable(describe(r)));
    QVERIFY2(r.err_lines.back().contains(QStringLiteral("trained, none kept (the run was not recorded)")) &&
                 !r.err_lines.back().contains(QStringLiteral("epochs kept")) && !r.err_lines.back().contains(QStringLiteral("epoch kept")),
             qPrintable(describe(r)));
}

// With --json the stop is an event a script can read, and its step count is exactly the number of
// steps that ran in the interrupted epoch.
void TestCli::ctrlCIsAJsonEventWithTheExactStep() {
    LiveCli cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"), QStringLiteral("--epochs"),
                 QStringLiteral("1000"), QStringLiteral("--data"), QStringLiteral("synthetic:300:100"),
                 QStringLiteral("--model"), small_model_, QStringLiteral("--json")});
    QVERIFY(cli.started());
    QVERIFY2(cli.wait_until([&] { return cli.out().contains(QStringLiteral("\"type\":\"step_end\"")); }),
             qPrintable(cli.err()));
    QVERIFY(cli.send(SIGINT));
    const CliResult r = cli.finish();
    QVERIFY2(r.finished && r.exit_code == 130, qPrintable(describe(r)));
    QVERIFY2(!r.out_lines.isEmpty(), qPrintable(describe(r)));

    const auto stops = json_events(r.out_lines, "interrupted");
    QVERIFY2(stops.size() == 1, qPrintable(describe(r)));
    QVERIFY2(r.out_lines.back().contains(QStringLiteral("\"type\":\"interrupted\"")), qPrintable(describe(r)));
    const mirrorlab::json::Value& stop = stops.front();
    QCOMPARE(string_field(stop, "signal"), QStringLiteral("SIGINT"));
    QCOMPARE(int_field(stop, "exit_code"), std::int64_t{130});
    const auto epoch_ends = json_events(r.out_lines, "epoch_end");
    QCOMPARE(int_field(stop, "epochs_completed"), static_cast<std::int64_t>(epoch_ends.size()));

    const std::int64_t epoch = int_field(stop, "epoch");
    const QString phase = string_field(stop, "phase");
    std::int64_t steps_in_epoch = 0;
    for (const auto& step : json_events(r.out_lines, "step_end")) steps_in_epoch += int_field(step, "epoch") == epoch ? 1 : 0;
    if (phase == QStringLiteral("between_epochs")) {
        QCOMPARE(epoch, static_cast<std::int64_t>(epoch_ends.size()));
    } else {
        QVERIFY2(phase == QStringLiteral("training") || phase == QStringLiteral("validation"), qPrintable(r.out_lines.back()));
        QCOMPARE(epoch, static_cast<std::int64_t>(epoch_ends.size()) + 1);
        QCOMPARE(int_field(stop, "step"), steps_in_epoch);
        QCOMPARE(int_field(stop, "steps"), std::int64_t{10});
    }
    // The engine's own account precedes it.
    const auto finished = json_events(r.out_lines, "finished");
    QVERIFY2(finished.size() == 1, qPrintable(describe(r)));
    QCOMPARE(string_field(finished.front(), "reason"), QStringLiteral("stopped"));
    QCOMPARE(int_field(finished.front(), "epochs_completed"), static_cast<std::int64_t>(epoch_ends.size()));
    QVERIFY2(r.err_lines.back().startsWith(QStringLiteral("mirrorlab-cli: stopped by Ctrl-C ")), qPrintable(describe(r)));
}

// A long validation pass (60,000 samples after a 64-sample epoch) is cut short too; the epoch it
// belonged to is not a finished epoch.
void TestCli::ctrlCDuringValidationStopsIt() {
    LiveCli cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"), QStringLiteral("--epochs"),
                 QStringLiteral("3"), QStringLiteral("--data"), QStringLiteral("synthetic:64:60000"), QStringLiteral("--json")});
    QVERIFY(cli.started());
    QVERIFY2(cli.wait_until([&] { return cli.out().contains(QStringLiteral("\"type\":\"validation_begin\"")); }),
             qPrintable(cli.out().right(2000) + cli.err()));
    QVERIFY(cli.send(SIGINT));
    const CliResult r = cli.finish();
    QVERIFY2(r.finished && r.exit_code == 130, qPrintable(describe(r)));

    const auto begins = json_events(r.out_lines, "validation_begin");
    QVERIFY2(begins.size() == 1, qPrintable(describe(r)));
    const std::int64_t validation_steps = int_field(begins.front(), "steps");
    QCOMPARE(validation_steps, std::int64_t{1875});  // ceil(60000 / 32)
    const auto stops = json_events(r.out_lines, "interrupted");
    QVERIFY2(stops.size() == 1, qPrintable(describe(r)));
    const mirrorlab::json::Value& stop = stops.front();
    QCOMPARE(string_field(stop, "phase"), QStringLiteral("validation"));
    QCOMPARE(int_field(stop, "epoch"), std::int64_t{1});
    QCOMPARE(int_field(stop, "step"), std::int64_t{2});  // both training steps ran
    QCOMPARE(int_field(stop, "validation_steps"), validation_steps);
    const std::int64_t validated = int_field(stop, "validation_step");
    QVERIFY2(validated >= 0 && validated < validation_steps, qPrintable(r.out_lines.back()));
    QCOMPARE(int_field(stop, "epochs_completed"), std::int64_t{0});
    QVERIFY2(json_events(r.out_lines, "epoch_end").empty(), qPrintable(describe(r)));
    QVERIFY2(r.err_lines.back().contains(QStringLiteral("0 complete epochs kept")), qPrintable(describe(r)));
}

// A second Ctrl-C while the first is still winding down ends the program at once. The test makes
// the wind-down slow on purpose (MIRRORLAB_CLI_TEST_SLOW_STOP_MS holds the trainer's next event for
// ten minutes once a stop was asked), so the second signal always lands while it is in progress.
void TestCli::secondCtrlCExitsAtOnce() {
    LiveCli cli({QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("cpu:2"), QStringLiteral("--epochs"),
                 QStringLiteral("1000"), QStringLiteral("--data"), QStringLiteral("synthetic:300:100"),
                 QStringLiteral("--model"), small_model_, QStringLiteral("--json")},
                {QStringLiteral("MIRRORLAB_CLI_TEST_SLOW_STOP_MS=600000")});
    QVERIFY(cli.started());
    QVERIFY2(cli.wait_until([&] { return cli.out().contains(QStringLiteral("\"type\":\"step_end\"")); }),
             qPrintable(cli.err()));
    QVERIFY(cli.send(SIGINT));
    // The first Ctrl-C is acknowledged; the run is now stopping (and held there).
    QVERIFY2(cli.wait_until([&] { return cli.err().contains(QStringLiteral("press Ctrl-C again")); }, 60000),
             qPrintable(cli.err()));
    QVERIFY(cli.send(SIGINT));
    // Well before the ten-minute hold would end.
    const CliResult r = cli.finish(60000);
    QVERIFY2(r.finished, qPrintable(describe(r)));
    QVERIFY2(r.exit_code == 130, qPrintable(describe(r)));
    QVERIFY2(r.err_lines.back() == QStringLiteral("mirrorlab-cli: Ctrl-C again: exiting at once"), qPrintable(describe(r)));
    // It did not wait for the run to wind down.
    QVERIFY2(json_events(r.out_lines, "finished").empty(), qPrintable(describe(r)));
    QVERIFY2(json_events(r.out_lines, "interrupted").empty(), qPrintable(describe(r)));
}

QTEST_APPLESS_MAIN(TestCli)
#include "test_cli.moc"
