// TensorBoard event files against the ones Keras 3's TensorBoard callback wrote for a small
// model.fit with validation (tests/data/tensorboard/, tests/golden/make_tensorboard_fixture.py):
// our reader reads Keras' files (their CRCs included), and our writer, fed the events of a run of
// the same shape with Keras' numbers, writes the same records — the same tags in the same order in
// each folder, the same steps, the same encoding (float32 scalar tensor in tensor_content, plugin
// "scalars") and the same values. A damaged byte is caught by the framing's CRCs; a folder that
// cannot be written is a warning naming it, never a crash; a stored run exports like a live one.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>
#include <map>

#include "core/export/tensorboard.h"
#include "core/store/recorded_run.h"
#include "core/store/run_store.h"
#include "core/util/crc32c.h"
#include "support/cli_process.h"

using namespace mirrorlab;

namespace {

const QString kFixtures = QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/tensorboard");
const QRegularExpression kEventFileName(QStringLiteral(R"(^events\.out\.tfevents\.\d{10}\.[^/]+\.\d+\.\d+\.v2$)"));

// The one event file in `folder` ("" when there is none or several).
QString event_file(const QString& folder) {
    const QStringList files = QDir(folder).entryList({QStringLiteral("events.out.tfevents.*")}, QDir::Files);
    return files.size() == 1 ? folder + "/" + files.front() : QString();
}

std::vector<TensorBoardEvent> read_folder(const QString& folder) {
    const QString file = event_file(folder);
    if (file.isEmpty()) return {};
    return read_tensorboard_events(file.toStdString());
}

// One summary record as a line: what must agree between Keras' file and ours.
QString describe(const TensorBoardEvent& event) {
    if (event.values.size() != 1) return QStringLiteral("step %1: %2 values").arg(event.step).arg(event.values.size());
    const TensorBoardValue& v = event.values.front();
    return QStringLiteral("step %1 %2 dtype=%3 shape=[%4]%5 plugin=%6 %7 value=%8")
        .arg(event.step)
        .arg(QString::fromStdString(v.tag))
        .arg(v.dtype)
        .arg(v.shape.size())
        .arg(v.has_shape ? "" : " (no shape)")
        .arg(QString::fromStdString(v.plugin_name))
        .arg(v.simple_value ? "simple_value" : v.in_tensor_content ? "tensor_content" : "float_val")
        .arg(static_cast<double>(static_cast<float>(v.value)), 0, 'g', 9);
}

QStringList describe_all(const std::vector<TensorBoardEvent>& events) {
    QStringList lines;
    for (std::size_t i = 1; i < events.size(); ++i) lines << describe(events[i]);
    return lines;
}

// The value of `tag` at `step` in `events`; NaN when absent.
double value_at(const std::vector<TensorBoardEvent>& events, const std::string& tag, std::int64_t step) {
    for (const TensorBoardEvent& event : events) {
        for (const TensorBoardValue& value : event.values) {
            if (value.tag == tag && event.step == step) return value.value;
        }
    }
    return std::nan("");
}

Metrics metrics_at(const std::vector<TensorBoardEvent>& events, const std::string& prefix, std::int64_t step) {
    Metrics m;
    m.loss = value_at(events, prefix + "loss", step);
    m.accuracy = value_at(events, prefix + "sparse_categorical_accuracy", step);
    m.top5 = value_at(events, prefix + "sparse_top_k_categorical_accuracy", step);
    return m;
}

// The fixture's run: 2 epochs of 4 steps with validation, Nadam(1e-3).
constexpr int kEpochs = 2;
constexpr int kStepsPerEpoch = 4;

struct KerasRun {
    std::vector<TensorBoardEvent> train, validation, batch_train;
};

KerasRun keras_run() {
    return {read_folder(kFixtures + "/epoch/train"), read_folder(kFixtures + "/epoch/validation"),
            read_folder(kFixtures + "/batch/train")};
}

// The trainer's events of that run, carrying Keras' numbers.
std::vector<Event> trainer_events(const KerasRun& keras) {
    std::vector<Event> events;
    TrainBeginEvent begin;
    begin.epochs = kEpochs;
    begin.steps_per_epoch = kStepsPerEpoch;
    begin.validation_steps = 2;
    events.emplace_back(begin);
    std::int64_t global_step = 0;
    for (int epoch = 1; epoch <= kEpochs; ++epoch) {
        events.emplace_back(EpochBeginEvent{epoch, kEpochs, kStepsPerEpoch});
        for (int step = 1; step <= kStepsPerEpoch; ++step) {
            StepEndEvent end;
            end.epoch = epoch;
            end.step = step;
            end.steps = kStepsPerEpoch;
            end.global_step = ++global_step;
            end.running = metrics_at(keras.batch_train, "batch_", global_step);
            events.emplace_back(end);
        }
        events.emplace_back(ValidationBeginEvent{epoch, 2});
        EpochEndEvent end;
        end.epoch = epoch;
        end.epochs = kEpochs;
        end.steps = kStepsPerEpoch;
        end.train = metrics_at(keras.train, "epoch_", epoch - 1);
        end.validation = metrics_at(keras.validation, "epoch_", epoch - 1);
        end.has_validation = true;
        events.emplace_back(end);
    }
    FinishedEvent finished;
    finished.epochs_completed = kEpochs;
    events.emplace_back(finished);
    return events;
}

void write_with_logger(const QString& log_dir, bool batches, const std::vector<Event>& events,
                       std::vector<std::string>* warnings = nullptr) {
    TensorBoardOptions options;
    options.log_dir = log_dir.toStdString();
    options.batches = batches;
    options.learning_rate = 0.001;
    TensorBoardLogger logger(options, [warnings](const std::string& text) {
        if (warnings) warnings->push_back(text);
    });
    for (const Event& event : events) logger.consume(event);
}

QByteArray file_bytes(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

std::string parse_error(const QByteArray& bytes) {
    try {
        parse_tensorboard_events(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())), "damaged");
    } catch (const TensorBoardError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

class TestTensorBoard : public QObject {
    Q_OBJECT

private slots:
    void maskedCrc();
    void hardwareCrcMatchesTheTable();
    void readsKerasFiles_data();
    void readsKerasFiles();
    void writesWhatKerasWrites_data();
    void writesWhatKerasWrites();
    void damagedFilesAreCaught();
    void unwritableFolderIsAWarning();
    void storedRunExportsLikeALiveOne();
    void cliWritesAndExports();
};

void TestTensorBoard::maskedCrc() {
    QCOMPARE(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
    for (std::uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu}) {
        QVERIFY(crc32c_mask(crc) != crc);
        QCOMPARE(crc32c_unmask(crc32c_mask(crc)), crc);
    }
    // Known answers from a file TensorFlow framed: the first record's length and its masked CRC.
    QFile keras(event_file(kFixtures + "/epoch/train"));
    QVERIFY(keras.open(QIODevice::ReadOnly));
    const QByteArray head = keras.read(12);
    std::uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= std::uint32_t{static_cast<unsigned char>(head[8 + i])} << (8 * i);
    QCOMPARE(crc32c_mask(crc32c(head.constData(), 8)), stored);
    QVERIFY(crc32c(head.constData(), 8) != stored);  // the mask matters
}

// The hardware CRC (SSE 4.2, where the CPU has it) gives the table's value for every length and
// alignment, whole or continued piece by piece, as checkpoints and event files compute it.
void TestTensorBoard::hardwareCrcMatchesTheTable() {
    QCOMPARE(crc32c_portable("123456789", 9), 0xE3069283u);
    std::vector<unsigned char> bytes(4099);
    std::uint32_t state = 12345;
    for (auto& byte : bytes) {
        state = state * 1664525u + 1013904223u;
        byte = static_cast<unsigned char>(state >> 24);
    }
    for (std::size_t offset : {0, 1, 3, 7}) {
        for (std::size_t size : {0, 1, 7, 8, 9, 15, 16, 17, 64, 4000, 4092}) {
            const unsigned char* data = bytes.data() + offset;
            QCOMPARE(crc32c(data, size), crc32c_portable(data, size));
            QCOMPARE(crc32c(data, size, 0xDEADBEEFu), crc32c_portable(data, size, 0xDEADBEEFu));
            const std::size_t first = std::min(size, size / 2 + offset);  // where the CRC is continued
            QCOMPARE(crc32c(data + first, size - first, crc32c(data, first)), crc32c_portable(data, size));
        }
    }
    const std::uint32_t intact = crc32c(bytes.data(), bytes.size());
    bytes[100] ^= 0x10;  // one flipped bit, as a damaged checkpoint has
    QVERIFY(crc32c(bytes.data(), bytes.size()) != intact);
}

void TestTensorBoard::readsKerasFiles_data() {
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QStringList>("tags");
    const QStringList metrics = {"loss", "sparse_categorical_accuracy", "sparse_top_k_categorical_accuracy"};
    QStringList epoch_train, epoch_validation, batch_train;
    for (const QString& m : metrics) {
        epoch_train << "epoch_" + m;
        batch_train << "batch_" + m;
        epoch_validation << "epoch_" + m << "evaluation_" + m + "_vs_iterations";
    }
    epoch_train << "epoch_learning_rate";
    QTest::newRow("epoch/train") << "epoch/train" << epoch_train;
    QTest::newRow("epoch/validation") << "epoch/validation" << epoch_validation;
    QTest::newRow("batch/train") << "batch/train" << epoch_train + batch_train;
    QTest::newRow("batch/validation") << "batch/validation" << epoch_validation;
}

void TestTensorBoard::readsKerasFiles() {
    QFETCH(QString, folder);
    QFETCH(QStringList, tags);
    const QString file = event_file(kFixtures + "/" + folder);
    QVERIFY2(!file.isEmpty(), qPrintable(kFixtures + "/" + folder));
    QVERIFY2(kEventFileName.match(QFileInfo(file).fileName()).hasMatch(), qPrintable(file));
    const std::vector<TensorBoardEvent> events = read_tensorboard_events(file.toStdString());  // every CRC checked
    QVERIFY(events.size() > 1);
    QCOMPARE(events.front().file_version, std::string("brain.Event:2"));
    QVERIFY(events.front().values.empty());
    QSet<QString> seen;
    for (std::size_t i = 1; i < events.size(); ++i) {
        QCOMPARE(events[i].values.size(), std::size_t{1});  // one scalar per Event, as tf.summary writes
        const TensorBoardValue& value = events[i].values.front();
        seen.insert(QString::fromStdString(value.tag));
        QCOMPARE(value.plugin_name, std::string("scalars"));
        QCOMPARE(value.dtype, 1);  // DT_FLOAT
        QVERIFY(value.has_shape && value.shape.empty());
        QVERIFY(value.in_tensor_content && !value.simple_value);
        QVERIFY(std::isfinite(value.value));
    }
    QCOMPARE(QStringList(seen.begin(), seen.end()).size(), tags.size());
    for (const QString& tag : tags) QVERIFY2(seen.contains(tag), qPrintable(tag));
}

void TestTensorBoard::writesWhatKerasWrites_data() {
    QTest::addColumn<bool>("batches");
    QTest::newRow("update_freq=epoch") << false;
    QTest::newRow("update_freq=batch") << true;
}

void TestTensorBoard::writesWhatKerasWrites() {
    QFETCH(bool, batches);
    const KerasRun keras = keras_run();
    QVERIFY(!keras.train.empty() && !keras.validation.empty() && !keras.batch_train.empty());
    QTemporaryDir dir;
    write_with_logger(dir.path(), batches, trainer_events(keras));
    const QString keras_dir = kFixtures + (batches ? "/batch" : "/epoch");
    for (const char* sub : {"train", "validation"}) {
        const QString ours_file = event_file(dir.path() + "/" + sub);
        QVERIFY2(!ours_file.isEmpty(), sub);
        QVERIFY2(kEventFileName.match(QFileInfo(ours_file).fileName()).hasMatch(), qPrintable(ours_file));
        const std::vector<TensorBoardEvent> ours = read_tensorboard_events(ours_file.toStdString());
        const std::vector<TensorBoardEvent> theirs = read_folder(keras_dir + "/" + sub);
        QCOMPARE(ours.front().file_version, theirs.front().file_version);
        QVERIFY(!ours.front().source_writer.empty() && !theirs.front().source_writer.empty());
        QVERIFY(ours.front().wall_time > 1.7e9);
        const QStringList ours_lines = describe_all(ours), theirs_lines = describe_all(theirs);
        QVERIFY2(ours_lines == theirs_lines, qPrintable(QStringLiteral("%1:\nours:\n  %2\nKeras:\n  %3")
                                                            .arg(sub, ours_lines.join("\n  "), theirs_lines.join("\n  "))));
        for (std::size_t i = 1; i < ours.size(); ++i) QVERIFY(ours[i].wall_time >= ours[i - 1].wall_time);
    }
}

// Negative controls: one changed byte anywhere in a record, or a cut-off file, is reported.
void TestTensorBoard::damagedFilesAreCaught() {
    QTemporaryDir dir;
    write_with_logger(dir.path(), false, trainer_events(keras_run()));
    const QByteArray good = file_bytes(event_file(dir.path() + "/validation"));
    QVERIFY(good.size() > 100);
    QCOMPARE(parse_error(good), std::string());
    const QByteArray keras_good = file_bytes(event_file(kFixtures + "/epoch/validation"));
    QCOMPARE(parse_error(keras_good), std::string());

    for (const QByteArray& original : {good, keras_good}) {
        // The first record is 12 + n + 4 bytes; damage the second record's data and its length.
        const int first_length = static_cast<unsigned char>(original[0]) | static_cast<unsigned char>(original[1]) << 8;
        const int second = 12 + first_length + 4;
        QByteArray data = original;
        data[second + 12 + 5] = static_cast<char>(data[second + 12 + 5] ^ 0x01);  // one bit of a tag or a value
        std::string error = parse_error(data);
        QVERIFY2(error.find("record 2") != std::string::npos && error.find("CRC of the record's data") != std::string::npos, error.c_str());

        QByteArray length = original;
        length[second] = static_cast<char>(length[second] ^ 0x04);
        error = parse_error(length);
        QVERIFY2(error.find("CRC of the record's length") != std::string::npos, error.c_str());

        QByteArray footer = original;
        footer[second - 1] = static_cast<char>(footer[second - 1] ^ 0x80);  // the first record's data CRC itself
        error = parse_error(footer);
        QVERIFY2(error.find("record 1") != std::string::npos && error.find("CRC") != std::string::npos, error.c_str());

        error = parse_error(original.left(original.size() - 3));
        QVERIFY2(error.find("truncated") != std::string::npos, error.c_str());
    }
    // A file that is not an event file at all.
    QVERIFY(parse_error(QByteArray("not a TFRecord file, just text")).find("CRC") != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(TensorBoardError, read_tensorboard_events((dir.path() + "/missing").toStdString()));
}

void TestTensorBoard::unwritableFolderIsAWarning() {
    QTemporaryDir dir;
    // A folder inside a regular file cannot be created, whoever runs the test (root included).
    QFile blocker(dir.path() + "/not-a-folder");
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const QString log_dir = blocker.fileName() + "/logs";
    std::vector<std::string> warnings;
    write_with_logger(log_dir, true, trainer_events(keras_run()), &warnings);
    QCOMPARE(warnings.size(), std::size_t{1});  // once, at the start, not per step
    QVERIFY2(warnings[0].find((log_dir + "/train").toStdString()) != std::string::npos, warnings[0].c_str());
    QVERIFY2(warnings[0].find("training goes on") != std::string::npos, warnings[0].c_str());

    // The export of a stored run has no training to go on with: an error naming the folder.
    RunStore store(dir.path().toStdString() + "/store");
    RunInfo run;
    run.name = "r";
    const std::int64_t id = store.begin_run(run).id;
    store.finish_run(id, RunStatus::Finished, "", 0, 0);
    try {
        export_run_to_tensorboard(store, id, log_dir.toStdString(), false);
        QFAIL("no error");
    } catch (const TensorBoardError& e) {
        QVERIFY2(std::string(e.what()).find(log_dir.toStdString()) != std::string::npos, e.what());
    }
}

// A run kept in the store exports the records the logger writes while it trains (wall times aside).
void TestTensorBoard::storedRunExportsLikeALiveOne() {
    const KerasRun keras = keras_run();
    const std::vector<Event> events = trainer_events(keras);
    QTemporaryDir dir;
    RunStore store(dir.path().toStdString() + "/store");
    RunInfo run;
    run.name = "exported";
    run.settings_json = json::dump(run_settings_json(TrainConfig{}, "cpu", json::Value::object()));  // Nadam(1e-3)
    const RunInfo begun = store.begin_run(run);
    std::vector<StepRow> steps;
    for (const Event& event : events) {
        if (const auto* step = std::get_if<StepEndEvent>(&event)) {
            steps.push_back({step->global_step, step->epoch, step->step, step->running, 250.0});
        } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
            store.append_steps(begun.id, steps);
            steps.clear();
            store.append_epoch(begun.id, {end->epoch, end->train, end->validation, true, 3.0});
        }
    }
    store.finish_run(begun.id, RunStatus::Finished, "done", kEpochs, 1);

    for (bool batches : {false, true}) {
        const QString exported = dir.path() + (batches ? "/exported-batches" : "/exported");
        const std::vector<std::string> files = export_run_to_tensorboard(store, begun.id, exported.toStdString(), batches);
        QCOMPARE(files.size(), std::size_t{2});
        const QString live = dir.path() + (batches ? "/live-batches" : "/live");
        write_with_logger(live, batches, events);
        for (const char* sub : {"train", "validation"}) {
            const std::vector<TensorBoardEvent> ours = read_folder(exported + "/" + sub);
            QVERIFY2(describe_all(ours) == describe_all(read_folder(live + "/" + sub)), qPrintable(describe_all(ours).join("\n")));
            // Wall times follow the run: its start, then each epoch's seconds.
            const double start = wall_time_of_utc(begun.started_at);
            QCOMPARE(ours.front().wall_time, std::string(sub) == "train" ? start : start + 3.0);
            QCOMPARE(ours.back().wall_time, start + 2 * 3.0);
        }
    }
    // A run stopped in its second epoch: the steps of the unfinished epoch are batch scalars too.
    RunInfo cut;
    cut.name = "cut short";
    const std::int64_t cut_id = store.begin_run(cut).id;
    store.append_steps(cut_id, {StepRow{1, 1, 1, Metrics{2.0, 0.5, 0.75}, 10.0}, StepRow{2, 1, 2, Metrics{1.5, 0.5, 0.75}, 10.0},
                                StepRow{3, 2, 1, Metrics{1.0, 0.25, 0.5}, 10.0}});
    store.append_epoch(cut_id, {1, Metrics{1.5, 0.5, 0.75}, Metrics{1.75, 0.5, 0.75}, true, 1.0});
    store.finish_run(cut_id, RunStatus::Stopped, "stopped", 1, 1);
    export_run_to_tensorboard(store, cut_id, (dir.path() + "/cut").toStdString(), true);
    const std::vector<TensorBoardEvent> cut_train = read_folder(dir.path() + "/cut/train");
    QCOMPARE(value_at(cut_train, "batch_loss", 3), 1.0);
    QCOMPARE(value_at(cut_train, "epoch_loss", 0), 1.5);
    QCOMPARE(value_at(read_folder(dir.path() + "/cut/validation"), "evaluation_loss_vs_iterations", 2), 1.75);

    QCOMPARE(wall_time_of_utc("1970-01-02T00:00:01Z"), 86401.0);
    QVERIFY(std::isnan(wall_time_of_utc("yesterday")));
}

void TestTensorBoard::cliWritesAndExports() {
    QTemporaryDir dir;
    const QString store = dir.path() + "/store", logs = dir.path() + "/logs";
    const CliResult trained = run_cli({"train", "--data", "synthetic:96:32", "--devices", "cpu:2", "--epochs", "2", "--store", store,
                                       "--tensorboard", logs, "--tensorboard-batches"});
    QVERIFY2(trained.exit_code == 0, qPrintable(describe(trained)));
    const std::vector<TensorBoardEvent> train = read_folder(logs + "/train");
    const std::vector<TensorBoardEvent> validation = read_folder(logs + "/validation");
    std::map<std::string, int> counts;
    for (const auto& event : train) {
        for (const auto& value : event.values) ++counts[value.tag];
    }
    QCOMPARE(counts["epoch_loss"], 2);
    QCOMPARE(counts["epoch_learning_rate"], 2);
    QCOMPARE(counts["batch_sparse_top_k_categorical_accuracy"], 6);  // 96 samples / 32 = 3 steps x 2 epochs
    QCOMPARE(value_at(validation, "evaluation_loss_vs_iterations", 6), value_at(validation, "epoch_loss", 1));

    // The same run exported from the store: the same records.
    const CliResult exported = run_cli({"runs", "export", "1", "--tensorboard", dir.path() + "/exported", "--tensorboard-batches",
                                        "--store", store});
    QVERIFY2(exported.exit_code == 0, qPrintable(describe(exported)));
    QVERIFY(exported.out.contains(QStringLiteral("tensorboard --logdir")));
    QCOMPARE(describe_all(read_folder(dir.path() + "/exported/train")), describe_all(train));
    QCOMPARE(describe_all(read_folder(dir.path() + "/exported/validation")), describe_all(validation));

    // A folder that cannot be written: a warning naming it, and the run trains to its end.
    QFile blocker(dir.path() + "/file");
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    const CliResult warned = run_cli({"train", "--data", "synthetic:96:32", "--epochs", "1", "--no-store", "--tensorboard",
                                      blocker.fileName() + "/logs"});
    QVERIFY2(warned.exit_code == 0, qPrintable(describe(warned)));
    QVERIFY2(warned.err.contains(QStringLiteral("WARNING: cannot write TensorBoard event files in '%1/logs/train'").arg(blocker.fileName())),
             qPrintable(warned.err));
    QVERIFY(warned.out.contains(QStringLiteral("Epoch 1/1")));

    QCOMPARE(run_cli({"runs", "export", "1", "--store", store}).exit_code, 2);  // no --tensorboard
    QCOMPARE(run_cli({"train", "--tensorboard-batches", "--no-store"}).exit_code, 2);
}

QTEST_GUILESS_MAIN(TestTensorBoard)
#include "test_tensorboard.moc"
