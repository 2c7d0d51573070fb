// mirrorlab-cli as scripts see it: commands, output, exit codes (0 ok, 1 failure, 2 usage) and the
// one-line "mirrorlab-cli: error: " reason on stderr.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStringList>
#include <QTemporaryDir>

#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/zip_reader.h"
#include "core/util/json.h"

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif

namespace {

constexpr int kTimeoutMs = 120000;
const QString kErrorPrefix = QStringLiteral("mirrorlab-cli: error: ");

struct CliResult {
    bool finished = false;
    int exit_code = -1;
    QString out;
    QString err;
    QStringList out_lines;
    QStringList err_lines;
};

QStringList lines(const QString& text) {
    QStringList all = text.split(QLatin1Char('\n'));
    while (!all.isEmpty() && all.back().isEmpty()) all.removeLast();
    return all;
}

// `address_space_bytes` > 0 caps the child's memory (RLIMIT_AS), so that a regression that reads
// without bound fails this test instead of exhausting the machine.
CliResult run_cli(const QStringList& arguments, std::uint64_t address_space_bytes = 0) {
    QProcess process;
    process.setProgram(QStringLiteral(MIRRORLAB_CLI_PATH));
    process.setArguments(arguments);
    if (address_space_bytes > 0) {
        process.setChildProcessModifier([address_space_bytes] {
            const rlimit limit{address_space_bytes, address_space_bytes};
            ::setrlimit(RLIMIT_AS, &limit);
        });
    }
    process.start();
    CliResult result;
    if (!process.waitForStarted(kTimeoutMs)) return result;
    result.finished = process.waitForFinished(kTimeoutMs);
    if (!result.finished) {
        process.kill();
        process.waitForFinished(5000);
    }
    result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    result.out = QString::fromUtf8(process.readAllStandardOutput());
    result.err = QString::fromUtf8(process.readAllStandardError());
    result.out_lines = lines(result.out);
    result.err_lines = lines(result.err);
    return result;
}

QString describe(const CliResult& r) {
    return QStringLiteral("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3").arg(r.exit_code).arg(r.out.left(4000), r.err.left(4000));
}

int count_error_lines(const CliResult& r) {
    int n = 0;
    for (const QString& line : r.err_lines) n += line.startsWith(kErrorPrefix) ? 1 : 0;
    return n;
}

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
        const std::uint32_t crc = mirrorlab::zip_crc32(
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
    void devicesListsCpu();
    void versionMatchesTheProject();
    void trainPrintsKerasProgress();
    void trainJsonStreamsEvents();
    void errors_data();
    void errors();
    void unreadableInputsFailCleanly_data();
    void unreadableInputsFailCleanly();
    void folderSymlinkLoopsFinish();
    void outOfMemoryRunFails();

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
    QVERIFY2(count_error_lines(r) == 0, qPrintable(describe(r)));
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
    QTest::newRow("tpu") << train + QStringList{QStringLiteral("--devices"), QStringLiteral("tpu:0")} << 1
                         << QStringLiteral("tpu:0");
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
    QTest::newRow("unknown option") << QStringList{QStringLiteral("train"), QStringLiteral("--frobnicate"), QStringLiteral("1")}
                                    << 2 << QStringLiteral("--frobnicate");
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

QTEST_APPLESS_MAIN(TestCli)
#include "test_cli.moc"
