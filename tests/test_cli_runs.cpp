// Kept runs from the command line, as a user meets them: a run is recorded and listed, `kill -9`
// leaves it interrupted with its steps, --resume continues it (the same numbers as a run that was
// never stopped), evaluate and predict answer for a stored run, and every mistake — a damaged
// checkpoint, a setting that cannot change on resume, a run that does not exist, a store held by
// another MirrorLab — says what is wrong and how to go on.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTemporaryFile>

#include <sqlite3.h>
#include <cstdio>
#include <sys/stat.h>

#include "core/export/keras_file.h"
#include "support/cli_process.h"
#include "support/tiny_corpus.h"

namespace {

QStringList with_store(const QTemporaryDir& store, QStringList arguments) {
    arguments << QStringLiteral("--store") << store.path();
    return arguments;
}

std::vector<mirrorlab::json::Value> runs_json(const QTemporaryDir& store) {
    const CliResult result = run_cli(with_store(store, {"runs", "--json"}));
    if (result.exit_code != 0) return {};
    return mirrorlab::json::parse(result.out.toStdString(), "runs --json").as_array();
}

}  // namespace

class TestCliRuns : public QObject {
    Q_OBJECT

private slots:
    void runIsRecordedAndListed();
    void saveBestOnlyKeepsACheckpoint();
    void textThatIsNotUtf8IsKeptAndListed();
    void killedRunIsInterruptedAndResumes();
    void hangUpStopsAndNamesTheStepCheckpoint();
    void resumedRunMatchesAnUninterruptedOne();
    void resumeMistakesAreExplained();
    void evaluateAndPredictAStoredRun();
    void exportAndImportKeras();
    void earlyStoppingsRestoredWeightsAreTheRunsWeights();
    void lockedStoreWarnsAndTrainingGoesOn();
    void oddRunIdsAndCheckpointPathsAreExplained();
    void predictNeedsTheRunsOwnData();
};

void TestCliRuns::runIsRecordedAndListed() {
    QTemporaryDir store;
    const CliResult trained = run_cli(with_store(store, {"train", "--data", "synthetic:200:64", "--devices", "cpu:2", "--epochs", "2",
                                                         "--name", "first try"}));
    QVERIFY2(trained.exit_code == 0, qPrintable(describe(trained)));
    QVERIFY(trained.out.contains(QStringLiteral("Recording run 1 (\"first try\"), kept in ")));
    const auto runs = runs_json(store);
    QCOMPARE(runs.size(), std::size_t{1});
    QCOMPARE(string_field(runs[0], "status"), QStringLiteral("finished"));
    QCOMPARE(int_field(runs[0], "epochs_completed"), 2);
    QCOMPARE(int_field(runs[0], "steps_recorded"), 14);  // 200 samples / 32 = 7 steps x 2 epochs
    QVERIFY(QFile::exists(store.path() + "/runs/1/last.mlckpt"));
    const CliResult table = run_cli(with_store(store, {"runs"}));
    QVERIFY(table.out.contains(QStringLiteral("first try")) && table.out.contains(QStringLiteral("finished")));
    // A filter nothing matches is said as such (it said "No runs ... yet"); a status that is none is a usage error.
    const CliResult none = run_cli(with_store(store, {"runs", "--status", "failed"}));
    QVERIFY2(none.exit_code == 0 && none.out.contains(QStringLiteral("matches the status failed")), qPrintable(describe(none)));
    QCOMPARE(run_cli(with_store(store, {"runs", "--status", "bogus"})).exit_code, 2);
    // Rename, annotate, show, delete.
    QCOMPARE(run_cli(with_store(store, {"runs", "note", "1", "a note to clear"})).exit_code, 0);
    QCOMPARE(run_cli(with_store(store, {"runs", "note", "1", ""})).exit_code, 0);  // an empty value is not refused here
    QCOMPARE(run_cli(with_store(store, {"runs", "note", "1", "baseline"})).exit_code, 0);
    // A blank name is the default one again, not an unnamed run.
    QCOMPARE(run_cli(with_store(store, {"runs", "rename", "1", "  "})).exit_code, 0);
    QCOMPARE(string_field(runs_json(store)[0], "name"), QStringLiteral("Run 1"));
    QCOMPARE(run_cli(with_store(store, {"runs", "rename", "1", "first try"})).exit_code, 0);
    const CliResult shown = run_cli(with_store(store, {"runs", "show", "1"}));
    QVERIFY2(shown.out.contains(QStringLiteral("Note: baseline")) && shown.out.contains(QStringLiteral("Checkpoint (last)")),
             qPrintable(describe(shown)));
    // What `runs show --json` prints is a settings file for --config as it is (it was refused:
    // "unknown key 'id'"); the run trains again with the same settings.
    QCOMPARE(run_cli(with_store(store, {"runs", "rename", "1", "first try"})).exit_code, 0);
    const CliResult as_json = run_cli(with_store(store, {"runs", "show", "1", "--json"}));
    QTemporaryFile settings;
    QVERIFY(settings.open());
    settings.write(as_json.out.toUtf8());
    settings.close();
    const CliResult again = run_cli({"train", "--config", settings.fileName(), "--data", "synthetic:200:64", "--devices", "cpu", "--no-store"});
    QVERIFY2(again.exit_code == 0 && again.out.contains(QStringLiteral("Epoch 2/2")), qPrintable(describe(again)));
    QCOMPARE(run_cli(with_store(store, {"runs", "delete", "1"})).exit_code, 0);
    QVERIFY(runs_json(store).empty());
    const CliResult missing = run_cli(with_store(store, {"runs", "show", "1"}));
    QCOMPARE(missing.exit_code, 1);
    QVERIFY(missing.err.contains(QStringLiteral("there is no run 1 in")));
    QCOMPARE(run_cli(with_store(store, {"runs", "show", "one"})).exit_code, 2);
}

// kill -9 in the middle of an epoch: the next look at the store lists the run as interrupted with
// every step up to the last commit; --resume continues it from its last finished epoch.
void TestCliRuns::killedRunIsInterruptedAndResumes() {
    QTemporaryDir store;
    LiveCli live(with_store(store, {"train", "--data", "synthetic:3000:100", "--devices", "cpu:2", "--epochs", "40", "--json",
                                    "--checkpoint-every", "10"}));
    QVERIFY(live.started());
    // Two epochs take seconds in a normal build; under ASan on two loaded cores they took over the
    // default two minutes, so this wait allows ten (a limit for a hang, not a speed check).
    QVERIFY2(live.wait_until([&] { return live.out().count(QStringLiteral("\"type\":\"epoch_end\"")) >= 2; }, 600000),
             qPrintable(live.err()));
    QTest::qWait(700);  // past a commit of the third epoch's first steps
    QVERIFY(live.send(SIGKILL));
    const CliResult killed = live.finish();
    QCOMPARE(killed.exit_code, -1);  // killed, not exited
    const auto runs = runs_json(store);
    QCOMPARE(runs.size(), std::size_t{1});
    QCOMPARE(string_field(runs[0], "status"), QStringLiteral("interrupted"));
    const std::int64_t epochs_done = int_field(runs[0], "epochs_completed");
    QVERIFY(epochs_done >= 2);
    // Its best epoch as its best checkpoint recorded it (the list said 0 for a killed run).
    QVERIFY2(int_field(runs[0], "best_epoch") >= 1 && int_field(runs[0], "best_epoch") <= epochs_done,
             qPrintable(QString::number(int_field(runs[0], "best_epoch"))));
    QVERIFY2(int_field(runs[0], "steps_recorded") >= epochs_done * 94, qPrintable(QString::number(int_field(runs[0], "steps_recorded"))));

    const CliResult resumed = run_cli(with_store(store, {"train", "--resume", "1", "--epochs", QString::number(epochs_done + 1)}));
    QVERIFY2(resumed.exit_code == 0, qPrintable(describe(resumed)));
    QVERIFY(resumed.out.contains(QStringLiteral("Resuming run 1")));
    // From the last checkpoint, at most 10 steps back: inside the epoch that was killed, unless the
    // kill came within 10 steps of that epoch's start.
    QVERIFY2(resumed.err.contains(QStringLiteral("INFO: Resuming ")), qPrintable(resumed.err));
    QVERIFY(resumed.out.contains(QStringLiteral("Epoch %1/%1").arg(epochs_done + 1)));
    QVERIFY(!resumed.out.contains(QStringLiteral("Epoch 1/")));
    const auto after = runs_json(store);
    QCOMPARE(string_field(after[0], "status"), QStringLiteral("finished"));
    QCOMPARE(int_field(after[0], "epochs_completed"), epochs_done + 1);
    QCOMPARE(int_field(after[0], "steps_recorded"), (epochs_done + 1) * 94);  // the killed epoch's partial steps were replaced
}

// The terminal closing (SIGHUP, an ssh session dropped) killed the run mid-step; it now stops as
// for SIGTERM. The stop line said "0 complete epochs kept" though --checkpoint-every had kept a
// step of epoch 1 that --resume continues from.
void TestCliRuns::hangUpStopsAndNamesTheStepCheckpoint() {
    QTemporaryDir store;
    LiveCli live(with_store(store, {"train", "--data", "synthetic:30000:100", "--devices", "cpu", "--epochs", "2", "--checkpoint-every", "5"}));
    QVERIFY(live.started());
    const QString last = store.path() + "/runs/1/last.mlckpt";
    QVERIFY2(live.wait_until([&] { return QFileInfo::exists(last); }, 600000), qPrintable(live.err()));
    QVERIFY(live.send(SIGHUP));
    const CliResult stopped = live.finish();
    QVERIFY2(stopped.exit_code == 128 + SIGHUP, qPrintable(describe(stopped)));
    const QString line = stopped.err_lines.isEmpty() ? QString() : stopped.err_lines.back();
    QVERIFY2(line.startsWith(QStringLiteral("mirrorlab-cli: stopped by SIGHUP (the terminal closed) in epoch 1 after step ")) &&
                 line.contains(QStringLiteral("; 0 complete epochs kept, and a checkpoint after step ")) &&
                 line.endsWith(QStringLiteral(" of epoch 1: `mirrorlab-cli train --resume 1` continues from it")),
             qPrintable(describe(stopped)));
    QCOMPARE(string_field(runs_json(store).front(), "status"), QStringLiteral("stopped"));
}

void TestCliRuns::resumedRunMatchesAnUninterruptedOne() {
    QTemporaryDir straight_store, resumed_store;
    const QStringList run = {"train", "--data", "synthetic:320:64", "--devices", "cpu:2", "--seed", "5", "--json"};
    const CliResult straight = run_cli(with_store(straight_store, run + QStringList{"--epochs", "3"}));
    QCOMPARE(straight.exit_code, 0);
    QCOMPARE(run_cli(with_store(resumed_store, run + QStringList{"--epochs", "1"})).exit_code, 0);
    const CliResult resumed = run_cli(with_store(resumed_store, {"train", "--resume", "1", "--epochs", "3", "--json"}));
    QVERIFY2(resumed.exit_code == 0, qPrintable(describe(resumed)));
    const auto straight_epochs = json_events(straight.out_lines, "epoch_end");
    const auto resumed_epochs = json_events(resumed.out_lines, "epoch_end");
    QCOMPARE(resumed_epochs.size(), std::size_t{2});
    for (const char* key : {"loss", "val_loss", "val_accuracy"}) {
        const auto& a = straight_epochs.back().at(key);
        const auto& b = resumed_epochs.back().at(key);
        QVERIFY2(a == b, key);  // the same doubles, printed exactly
    }
}

// The CLI run with arguments as raw bytes: QProcess would pass a QString's UTF-8, and a Latin-1
// byte never reaches the program as itself. A shell script carries the bytes as written.
CliResult run_cli_bytes(const QTemporaryDir& dir, const QList<QByteArray>& arguments) {
    QByteArray script = "exec '" + QFile::encodeName(QStringLiteral(MIRRORLAB_CLI_PATH)) + "'";
    for (const QByteArray& argument : arguments) script += " '" + argument + "'";
    const QString path = dir.filePath(QStringLiteral("run.sh"));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(script + "\n") < 0) return {};
    file.close();
    QProcess process;
    process.start(QStringLiteral("/bin/sh"), {path});
    CliResult result;
    result.finished = process.waitForFinished(kTimeoutMs);
    result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    result.out = QString::fromUtf8(process.readAllStandardOutput());
    result.err = QString::fromUtf8(process.readAllStandardError());
    return result;
}

// A name, a note and a data path in Latin-1 (bytes that are not UTF-8): the run trains and is
// recorded, and every JSON listing writes the bad bytes as U+FFFD. Before, `train --json --name`
// failed and left a junk run, and one such name made `runs --json` fail for the whole store.
void TestCliRuns::textThatIsNotUtf8IsKeptAndListed() {
    QTemporaryDir store, data;
    const QByteArray csv = QFile::encodeName(data.path()) + "/lat\xE9n.csv";
    {
        QFile file(QString::fromLatin1(csv));  // not the name: written through a link below
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("label,text\nsport,team wins the cup\nfinance,shares fall\nsport,goal in the last minute\n"
                   "finance,bank profits rise\nsport,team wins again\nfinance,stocks drop\n");
    }
    QCOMPARE(::rename(QFile::encodeName(QString::fromLatin1(csv)).constData(), csv.constData()), 0);
    const QByteArray store_path = QFile::encodeName(store.path());
    const CliResult trained = run_cli_bytes(data, {"train", "--json", "--epochs", "1", "--devices", "cpu", "--name", "caf\xE9",
                                                   "--data", "csv:" + csv, "--store", store_path});
    QVERIFY2(trained.exit_code == 0, qPrintable(describe(trained)));
    bool named = false;
    for (const QString& line : trained.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const mirrorlab::json::Value event = mirrorlab::json::parse(line.toStdString(), "train --json");
        if (const mirrorlab::json::Value* got = event.find("name")) named = named || got->as_string() == "caf\xEF\xBF\xBD";
    }
    QVERIFY2(named, qPrintable(trained.out.left(2000)));
    const CliResult noted = run_cli_bytes(data, {"runs", "note", "1", "r\xE9sum\xE9", "--store", store_path});
    QVERIFY2(noted.exit_code == 0, qPrintable(describe(noted)));
    const std::vector<mirrorlab::json::Value> listed = runs_json(store);
    QCOMPARE(listed.size(), std::size_t{1});
    QCOMPARE(listed[0].at("name").as_string(), std::string("caf\xEF\xBF\xBD"));
    QCOMPARE(listed[0].at("note").as_string(), std::string("r\xEF\xBF\xBDsum\xEF\xBF\xBD"));
    const CliResult shown = run_cli(with_store(store, {"runs", "show", "1", "--json"}));
    QVERIFY2(shown.exit_code == 0, qPrintable(describe(shown)));
    QVERIFY2(shown.out.contains(QStringLiteral("lat\uFFFDn.csv")), qPrintable(shown.out.left(3000)));

    // The table: a name with a line break and ESC broke it and recoloured the terminal, and a long
    // name of wide characters was cut inside a character (invalid UTF-8).
    QCOMPARE(run_cli(with_store(store, {"runs", "rename", "1", QStringLiteral("a\nb\x1b[31mred")})).exit_code, 0);
    CliResult table = run_cli(with_store(store, {"runs"}));
    QVERIFY2(table.exit_code == 0 && table.out_lines.size() == 2 && !table.out.contains(QChar(0x1b)) &&
                 table.out_lines[1].contains(QStringLiteral("a\\x0Ab\\x1B[31mred")),
             qPrintable(describe(table)));
    QCOMPARE(run_cli(with_store(store, {"runs", "rename", "1", QStringLiteral("日本語のとても長いランの名前です")})).exit_code, 0);
    table = run_cli(with_store(store, {"runs"}));
    QVERIFY2(table.exit_code == 0 && table.out_lines[1].contains(QStringLiteral("  日本語のとても長い…   finished")),
             qPrintable(describe(table)));
}

// --save-best-only keeps the best epoch's checkpoint; without validation data there is no val_loss
// to compare, and every epoch is kept instead, said once. Keras (and MirrorLab before) saved
// nothing: the run then could not be evaluated, resumed or exported.
void TestCliRuns::saveBestOnlyKeepsACheckpoint() {
    QTemporaryDir store;
    const QStringList common{"train", "--devices", "cpu", "--epochs", "2", "--steps-per-epoch", "2", "--save-best-only"};
    const CliResult validated = run_cli(with_store(store, common + QStringList{"--data", "synthetic:200:64"}));
    QVERIFY2(validated.exit_code == 0, qPrintable(describe(validated)));
    QVERIFY(QFileInfo::exists(store.path() + "/runs/1/best.mlckpt"));
    QVERIFY(!QFileInfo::exists(store.path() + "/runs/1/last.mlckpt"));
    QVERIFY(!validated.err.contains(QStringLiteral("no validation data")));

    const CliResult unvalidated = run_cli(with_store(store, common + QStringList{"--data", "synthetic:200:0"}));
    QVERIFY2(unvalidated.exit_code == 0, qPrintable(describe(unvalidated)));
    QCOMPARE(unvalidated.err.count(QStringLiteral("this run has no validation data: every epoch's checkpoint is kept")), 1);
    QVERIFY(QFileInfo::exists(store.path() + "/runs/2/last.mlckpt"));
    const CliResult evaluated = run_cli(with_store(store, {"evaluate", "--run", "2", "--data", "synthetic:200:64"}));
    QVERIFY2(evaluated.exit_code == 0, qPrintable(describe(evaluated)));
    const CliResult best = run_cli(with_store(store, {"evaluate", "--run", "2", "--checkpoint", "best", "--data", "synthetic:200:64"}));
    QVERIFY2(best.exit_code == 1 && best.err.contains(QStringLiteral("no epoch had a validation loss to call best")) &&
                 best.err.contains(QStringLiteral("use its last checkpoint")),
             qPrintable(describe(best)));
    // Run 1 kept only its best checkpoint, as asked: it answers for the run.
    const CliResult best_only = run_cli(with_store(store, {"evaluate", "--run", "1"}));
    QVERIFY2(best_only.exit_code == 0, qPrintable(describe(best_only)));

    // A run that kept both, its last.mlckpt moved away: the best one answered in its place, and
    // --resume retrained (and rewrote) the epochs after it without a word.
    const CliResult both = run_cli(with_store(store, {"train", "--devices", "cpu", "--epochs", "2", "--steps-per-epoch", "2",
                                                      "--data", "synthetic:200:64"}));
    QVERIFY2(both.exit_code == 0, qPrintable(describe(both)));
    QVERIFY(QFile::rename(store.path() + "/runs/3/last.mlckpt", store.path() + "/last-away.mlckpt"));
    for (const QStringList& command : {QStringList{"evaluate", "--run", "3"}, QStringList{"train", "--resume", "3", "--epochs", "3"}}) {
        const CliResult missing = run_cli(with_store(store, command));
        QVERIFY2(missing.exit_code != 0 && missing.err.contains(QStringLiteral("run 3's last checkpoint '")) &&
                     missing.err.contains(QStringLiteral("is missing (moved or deleted); its best checkpoint is there")),
                 qPrintable(describe(missing)));
    }
    QCOMPARE(run_cli(with_store(store, {"evaluate", "--run", "3", "--checkpoint", "best"})).exit_code, 0);
}

void TestCliRuns::resumeMistakesAreExplained() {
    QTemporaryDir store;
    QCOMPARE(run_cli(with_store(store, {"train", "--data", "synthetic:200:64", "--devices", "cpu", "--epochs", "1"})).exit_code, 0);
    const CliResult changed = run_cli(with_store(store, {"train", "--resume", "1", "--epochs", "3", "--optimizer", "sgd"}));
    QCOMPARE(changed.exit_code, 2);
    QVERIFY2(changed.err.contains(QStringLiteral("--optimizer cannot be changed when resuming")), qPrintable(changed.err));
    const CliResult no_run = run_cli(with_store(store, {"train", "--resume", "9", "--epochs", "3"}));
    QCOMPARE(no_run.exit_code, 1);
    QVERIFY(no_run.err.contains(QStringLiteral("there is no run 9")));
    const CliResult done = run_cli(with_store(store, {"train", "--resume", "1", "--epochs", "1"}));
    QCOMPARE(done.exit_code, 1);
    QVERIFY2(done.err.contains(QStringLiteral("already trained 1 epoch; ask for more than 1 epochs")), qPrintable(done.err));
    // The refused resume left the run as it had ended: finished, its epoch kept (it was "failed, 0/1").
    const std::vector<mirrorlab::json::Value> listed = runs_json(store);
    QCOMPARE(listed.size(), std::size_t{1});
    QCOMPARE(listed[0].at("status").as_string(), std::string("finished"));
    QCOMPARE(listed[0].at("epochs_completed").as_int64(), std::int64_t{1});
    QCOMPARE(listed[0].at("epochs_planned").as_int64(), std::int64_t{1});
    QCOMPARE(listed[0].at("best_epoch").as_int64(), std::int64_t{1});
    // A run trained without a validation split: evaluate says how to evaluate it anyway.
    QTemporaryDir unsplit;
    QCOMPARE(run_cli(with_store(unsplit, {"train", "--data", "synthetic:200:0", "--devices", "cpu", "--epochs", "1"})).exit_code, 0);
    const CliResult nothing_to_evaluate = run_cli(with_store(unsplit, {"evaluate", "--run", "1"}));
    QVERIFY2(nothing_to_evaluate.exit_code == 1 && nothing_to_evaluate.err.contains(QStringLiteral("has no validation split")) &&
                 nothing_to_evaluate.err.contains(QStringLiteral("with --data SPEC")),
             qPrintable(describe(nothing_to_evaluate)));
    // Resumed on other devices: the run lists the devices it trains on now (it kept the first ones).
    const CliResult moved = run_cli(with_store(store, {"train", "--resume", "1", "--epochs", "2", "--devices", "cpu:2"}));
    QVERIFY2(moved.exit_code == 0, qPrintable(describe(moved)));
    const CliResult shown = run_cli(with_store(store, {"runs", "show", "1"}));
    QVERIFY2(shown.out.contains(QStringLiteral("cpu:2 (2 replicas)")), qPrintable(shown.out));
    // Other data than the checkpoint's: refused with the difference named.
    const CliResult other = run_cli(with_store(store, {"train", "--resume", "1", "--epochs", "2", "--data", "synthetic:300:64"}));
    QCOMPARE(other.exit_code, 1);
    QVERIFY2(other.err.contains(QStringLiteral("was trained on other data")), qPrintable(other.err));
    // A damaged checkpoint: refused, and the file is not touched.
    const QString checkpoint = store.path() + "/runs/1/last.mlckpt";
    QFile file(checkpoint);
    QVERIFY(file.open(QIODevice::ReadWrite));
    QByteArray bytes = file.readAll();
    bytes[bytes.size() - 50] = static_cast<char>(bytes[bytes.size() - 50] ^ 0x40);
    file.seek(0);
    file.write(bytes);
    file.close();
    const CliResult damaged = run_cli(with_store(store, {"train", "--resume", checkpoint, "--epochs", "2"}));
    QCOMPARE(damaged.exit_code, 1);
    QVERIFY2(damaged.err.contains(QStringLiteral("is damaged: its checksum does not match")), qPrintable(damaged.err));
    const CliResult truncated_eval = run_cli(with_store(store, {"evaluate", "--run", "1"}));
    QCOMPARE(truncated_eval.exit_code, 1);
    QVERIFY(truncated_eval.err.contains(QStringLiteral("is damaged")));
    // The best checkpoint beside it is named as the way on.
    QVERIFY2(truncated_eval.err.contains(QStringLiteral("; run 1's best checkpoint may be whole: --checkpoint best, or train --resume '")),
             qPrintable(truncated_eval.err));
    QCOMPARE(run_cli(with_store(store, {"evaluate", "--run", "1", "--checkpoint", "best"})).exit_code, 0);
}

// export --keras / --weights and import --evaluate (#16): the imported run evaluates as the run
// itself does; mistakes are usage errors (2) or one message naming the file (1).
void TestCliRuns::exportAndImportKeras() {
    QTemporaryDir store, out;
    const QStringList data{"--data", "synthetic:200:64"};
    QCOMPARE(run_cli(with_store(store, QStringList{"train", "--devices", "cpu", "--epochs", "1", "--steps-per-epoch", "2"} + data)).exit_code, 0);
    const QString keras = out.path() + "/run1.keras";
    const CliResult exported = run_cli(with_store(store, {"export", "--run", "1", "--keras", keras}));
    QVERIFY2(exported.exit_code == 0 && exported.out.contains(QStringLiteral("keras.saving.load_model")), qPrintable(describe(exported)));
    QCOMPARE(run_cli(with_store(store, {"export", "--run", "1", "--weights", out.path() + "/run1.weights.h5"})).exit_code, 0);
    // Plain SGD keeps no optimizer slots (its checkpoint holds one unused number): it exports too.
    QTemporaryDir sgd_store;
    QCOMPARE(run_cli(with_store(sgd_store, QStringList{"train", "--devices", "cpu", "--epochs", "1", "--steps-per-epoch", "2",
                                                       "--optimizer", "sgd"} + data))
                 .exit_code,
             0);
    const CliResult sgd = run_cli(with_store(sgd_store, {"export", "--run", "1", "--keras", out.path() + "/sgd.keras"}));
    QVERIFY2(sgd.exit_code == 0, qPrintable(sgd.err));
    QCOMPARE(run_cli({"import", out.path() + "/sgd.keras"}).exit_code, 0);
    const CliResult neither = run_cli(with_store(store, {"export", "--run", "1"}));
    QVERIFY2(neither.exit_code == 2 && neither.err.contains(QStringLiteral("--keras")), qPrintable(describe(neither)));
    // What is at the path decides: a FIFO is refused and left as it was (renaming over it, or over
    // a device node such as /dev/null as root, replaced it); a symbolic link's file is replaced
    // and the link stays.
    const QString fifo = out.path() + "/fifo.keras";
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0644), 0);
    const CliResult to_fifo = run_cli(with_store(store, {"export", "--run", "1", "--keras", fifo}));
    QVERIFY2(to_fifo.exit_code == 1 && to_fifo.err.contains(QStringLiteral("it is a FIFO (named pipe), not a regular file")),
             qPrintable(describe(to_fifo)));
    QVERIFY(QFileInfo(fifo).isFile() == false && QFileInfo(fifo).exists());
    const QString link = out.path() + "/latest.keras";
    QVERIFY(QFile::link(QStringLiteral("run1.keras"), link));
    QVERIFY(QFile::remove(keras));
    const CliResult through_link = run_cli(with_store(store, {"export", "--run", "1", "--keras", link}));
    QVERIFY2(through_link.exit_code == 0, qPrintable(describe(through_link)));
    QVERIFY(QFileInfo(link).isSymLink());
    QVERIFY(QFileInfo(keras).isFile() && QFileInfo(keras).size() > 100000);
    QVERIFY(QDir(out.path()).mkdir("folder.weights.h5"));
    const CliResult to_folder = run_cli(with_store(store, {"export", "--run", "1", "--weights", out.path() + "/folder.weights.h5"}));
    QVERIFY2(to_folder.exit_code == 1 && to_folder.err.contains(QStringLiteral("it is a folder")), qPrintable(describe(to_folder)));
    // Names Keras 3 does not load were written, and the printed Python line failed.
    for (const QStringList& named : {QStringList{"--keras", out.path() + "/model"}, QStringList{"--keras", out.path() + "/m.weights.h5"},
                                     QStringList{"--weights", out.path() + "/w.keras"}}) {
        const CliResult misnamed = run_cli(with_store(store, QStringList{"export", "--run", "1"} + named));
        QVERIFY2(misnamed.exit_code == 2 && misnamed.err.contains(QStringLiteral("reads only files whose names end in")),
                 qPrintable(describe(misnamed)));
    }
    // The store's own files: the database (every run lost) and the checkpoint being read.
    const QByteArray database = [&] {
        QFile file(store.path() + "/runs.sqlite");
        return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    }();
    const CliResult over_store = run_cli(with_store(store, {"export", "--run", "1", "--weights", store.path() + "/runs.sqlite"}));
    QVERIFY2(over_store.exit_code == 2 && over_store.err.contains(QStringLiteral("reads only files whose names end in")),
             qPrintable(describe(over_store)));
    QVERIFY(QFile::link(QStringLiteral("runs.sqlite"), store.path() + "/db.weights.h5"));
    const CliResult through_name = run_cli(with_store(store, {"export", "--run", "1", "--weights", store.path() + "/db.weights.h5"}));
    QVERIFY2(through_name.exit_code == 2 && through_name.err.contains(QStringLiteral("is the run store's database")),
             qPrintable(describe(through_name)));
    QVERIFY(QFile::link(QStringLiteral("runs/1/last.mlckpt"), store.path() + "/last.keras"));
    const CliResult over_source = run_cli(with_store(store, {"export", "--run", "1", "--keras", store.path() + "/last.keras"}));
    QVERIFY2(over_source.exit_code == 2 && over_source.err.contains(QStringLiteral("is the checkpoint being exported")),
             qPrintable(describe(over_source)));
    const CliResult into_run = run_cli(with_store(store, {"export", "--run", "1", "--keras", store.path() + "/runs/1/model.keras"}));
    QVERIFY2(into_run.exit_code == 2 && into_run.err.contains(QStringLiteral("inside the run store's run folders")),
             qPrintable(describe(into_run)));
    QFile database_after(store.path() + "/runs.sqlite");
    QVERIFY(database_after.open(QIODevice::ReadOnly));
    QCOMPARE(database_after.readAll(), database);

    const CliResult summary = run_cli({"import", keras});
    QVERIFY2(summary.exit_code == 0 && summary.out.contains(QStringLiteral("Total params: 332,856")), qPrintable(describe(summary)));
    const CliResult imported = run_cli(QStringList{"import", keras, "--evaluate", "--json"} + data);
    const CliResult evaluated = run_cli(with_store(store, {"evaluate", "--run", "1", "--json"}));
    QVERIFY2(imported.exit_code == 0 && evaluated.exit_code == 0, qPrintable(describe(imported) + describe(evaluated)));
    const auto ours = mirrorlab::json::parse(imported.out.toStdString(), "import");
    const auto run = mirrorlab::json::parse(evaluated.out.toStdString(), "evaluate");
    QCOMPARE(ours.at("loss").as_double(), run.at("loss").as_double());
    QCOMPARE(ours.at("sparse_categorical_accuracy").as_double(), run.at("accuracy").as_double());

    // A model.to_json() file with the exported weights beside it; and files that are not models.
    QFile config(out.path() + "/model.json");
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(mirrorlab::json::dump(mirrorlab::keras_config(mirrorlab::Model::reference(),
                                                                mirrorlab::OptimizerConfig::defaults(mirrorlab::OptimizerKind::Nadam)))
                     .c_str());
    config.close();
    const CliResult with_weights =
        run_cli(QStringList{"import", config.fileName(), "--weights", out.path() + "/run1.weights.h5", "--evaluate", "--json"} + data);
    QVERIFY2(with_weights.exit_code == 0, qPrintable(describe(with_weights)));
    QCOMPARE(mirrorlab::json::parse(with_weights.out.toStdString(), "import").at("loss").as_double(), run.at("loss").as_double());
    const CliResult not_keras = run_cli({"import", out.path() + "/run1.weights.h5"});
    QVERIFY2(not_keras.exit_code == 1 && not_keras.err.contains(QStringLiteral("not a .keras archive")) &&
                 not_keras.err.contains(QStringLiteral("it is an HDF5 file (weights?)")),
             qPrintable(describe(not_keras)));
    // By what a file holds, not its name: a config named CFG.JSON was refused as "not a .keras archive".
    QVERIFY(QFile::copy(config.fileName(), out.path() + "/CFG.JSON"));
    const CliResult upper = run_cli({"import", out.path() + "/CFG.JSON"});
    QVERIFY2(upper.exit_code == 0 && upper.out.contains(QStringLiteral("Total params")), qPrintable(describe(upper)));
    {  // Windows Notepad's UTF-8 starts with a byte-order mark
        QFile with_bom(out.path() + "/bom.json");
        QVERIFY(with_bom.open(QIODevice::WriteOnly));
        QFile plain(config.fileName());
        QVERIFY(plain.open(QIODevice::ReadOnly));
        with_bom.write("\xEF\xBB\xBF" + plain.readAll());
    }
    const CliResult bom = run_cli({"import", out.path() + "/bom.json"});
    QVERIFY2(bom.exit_code == 0 && bom.out.contains(QStringLiteral("Total params")), qPrintable(describe(bom)));
    // A .keras archive where a model JSON or a checkpoint is read: "invalid literal 'PK'", and "not a
    // MirrorLab checkpoint", named neither what it is nor the command that reads it.
    const CliResult as_model = run_cli({"summary", "--model", keras});
    QVERIFY2(as_model.exit_code == 1 && as_model.err.contains(QStringLiteral("is a zip archive (a Keras .keras file?), not a model JSON: "
                                                                             "`mirrorlab-cli import ")),
             qPrintable(describe(as_model)));
    const CliResult as_checkpoint = run_cli(with_store(store, {"evaluate", "--run", keras}));
    QVERIFY2(as_checkpoint.exit_code == 1 && as_checkpoint.err.contains(QStringLiteral("`mirrorlab-cli import FILE --evaluate`")),
             qPrintable(describe(as_checkpoint)));
    const CliResult no_weights = run_cli({"import", config.fileName(), "--evaluate"});
    QVERIFY2(no_weights.exit_code == 2 && no_weights.err.contains(QStringLiteral("needs weights")), qPrintable(describe(no_weights)));
}

void TestCliRuns::evaluateAndPredictAStoredRun() {
    QTemporaryDir store, corpus;
    write_corpus(corpus.path());
    QTemporaryDir model_dir;
    QFile model(model_dir.path() + "/tiny.json");
    QVERIFY(model.open(QIODevice::WriteOnly));
    model.write(R"({"name": "tiny", "input_length": 20, "layers": [
        {"class_name": "Embedding", "config": {"input_dim": 100, "output_dim": 8}},
        {"class_name": "GlobalAveragePooling1D", "config": {}},
        {"class_name": "Dense", "config": {"units": 2, "activation": "softmax"}}]})");
    model.close();
    const CliResult trained = run_cli(with_store(store, {"train", "--data", "folder:" + corpus.path(), "--model", model.fileName(),
                                                         "--devices", "cpu", "--epochs", "15", "--learning-rate", "0.05", "--json"}));
    QVERIFY2(trained.exit_code == 0, qPrintable(describe(trained)));
    const auto epochs = json_events(trained.out_lines, "epoch_end");
    const CliResult evaluated = run_cli(with_store(store, {"evaluate", "--run", "1", "--json"}));
    QVERIFY2(evaluated.exit_code == 0, qPrintable(describe(evaluated)));
    const auto evaluation = mirrorlab::json::parse(evaluated.out.toStdString(), "evaluate");
    QVERIFY(std::abs(evaluation.at("loss").as_double() - epochs.back().at("val_loss").as_double()) < 1e-6);
    QCOMPARE(evaluation.at("accuracy").as_double(), epochs.back().at("val_accuracy").as_double());
    // The largest batch allowed, far beyond the validation split: buffers for it needed GiB and the
    // evaluation was refused as out of memory; it now takes the split in one step.
    const CliResult one_batch = run_cli(with_store(store, {"evaluate", "--run", "1", "--batch-size", "1048576", "--devices", "cpu:1x16MB", "--json"}));
    QVERIFY2(one_batch.exit_code == 0, qPrintable(describe(one_batch)));
    QCOMPARE(mirrorlab::json::parse(one_batch.out.toStdString(), "evaluate").at("loss").as_double(), evaluation.at("loss").as_double());
    const CliResult report = run_cli(with_store(store, {"evaluate", "--run", "1", "--report"}));
    QVERIFY2(report.out.contains(QStringLiteral("sparse_categorical_accuracy")) && report.out.contains(QStringLiteral("precision")) &&
                 report.out.contains(QStringLiteral("wheat")),
             qPrintable(describe(report)));

    const CliResult predicted = run_cli(with_store(store, {"predict", "--run", "1", "--json", "--text", "The wheat HARVEST, zorblat crop!"}));
    QVERIFY2(predicted.exit_code == 0, qPrintable(describe(predicted)));
    const auto answer = mirrorlab::json::parse(predicted.out.toStdString(), "predict");
    QCOMPARE(answer.at("top")[0].at("name").as_string(), std::string("wheat"));
    QVERIFY(answer.at("top")[0].at("probability").as_double() > 0.6);
    QCOMPARE(answer.at("unknown_words").size(), std::size_t{2});  // "the" and "zorblat"
    const CliResult oil = run_cli(with_store(store, {"predict", "--run", "1", "--text", "opec crude barrels"}));
    QVERIFY2(oil.out.contains(QStringLiteral("1. oil")), qPrintable(describe(oil)));
    // Control bytes of the input are shown escaped, never sent to the terminal (ESC could recolour
    // it, BEL ring it).
    const CliResult controls = run_cli(with_store(store, {"predict", "--run", "1", "--text", QStringLiteral("opec zz\x1b[31mred\x07 crude")}));
    QVERIFY2(controls.exit_code == 0 && !controls.out.contains(QChar(0x1b)) && !controls.out.contains(QChar(0x07)) &&
                 controls.out.contains(QStringLiteral("\\x1B")),
             qPrintable(describe(controls)));
    const CliResult empty = run_cli(with_store(store, {"predict", "--run", "1", "--text", "   "}));
    QCOMPARE(empty.exit_code, 1);
    QVERIFY(empty.err.contains(QStringLiteral("there is no text to classify")));

    // --file: read as a corpus's text files are (Latin-1 bytes kept), UTF-16 and binary files
    // refused (they were classified as words full of NULs), and a text of more than 8 MiB refused
    // before it is read (a 400 MB file took 9 GB to tokenize).
    const auto file_with = [&](const QString& name, const QByteArray& bytes) {
        QFile file(corpus.path() + "/" + name);
        if (file.open(QIODevice::WriteOnly)) file.write(bytes);
        return file.fileName();
    };
    const CliResult latin1 = run_cli(with_store(store, {"predict", "--run", "1", "--file", file_with("latin1.txt", "opec crude caf\xE9")}));
    QVERIFY2(latin1.exit_code == 0 && latin1.out.contains(QStringLiteral("café")), qPrintable(describe(latin1)));
    QByteArray utf16("\xFF\xFE");
    for (const char c : QByteArray("opec crude")) utf16.append(c).append('\0');
    const QString utf16_file = file_with("utf16.txt", utf16);
    const CliResult wide = run_cli(with_store(store, {"predict", "--run", "1", "--file", utf16_file}));
    QVERIFY2(wide.exit_code == 1 && wide.err.contains(utf16_file + " is UTF-16 text"), qPrintable(describe(wide)));
    const QString binary_file = file_with("binary.txt", QByteArray("\x7F" "ELF\x02\x01\x01\0\0\0", 10));
    const CliResult binary = run_cli(with_store(store, {"predict", "--run", "1", "--file", binary_file}));
    QVERIFY2(binary.exit_code == 1 && binary.err.contains(binary_file + ":1: the file holds a NUL byte"), qPrintable(describe(binary)));
    const QString huge_file = file_with("huge.txt", "opec ");
    QVERIFY(QFile::resize(huge_file, (qint64{8} << 20) + 1));
    const CliResult huge = run_cli(with_store(store, {"predict", "--run", "1", "--file", huge_file}), qint64{1} << 30);
    QVERIFY2(huge.exit_code == 1 && huge.err.contains(QStringLiteral("more than the 8.0 MiB limit for one text to classify")),
             qPrintable(describe(huge)));
}

// Another MirrorLab holds the store's write lock: training waits briefly, says the run is not
// recorded and why, and trains anyway.
void TestCliRuns::lockedStoreWarnsAndTrainingGoesOn() {
    QTemporaryDir store;
    QCOMPARE(run_cli(with_store(store, {"runs"})).exit_code, 0);  // creates it
    sqlite3* other = nullptr;
    QCOMPARE(sqlite3_open((store.path() + "/runs.sqlite").toUtf8().constData(), &other), SQLITE_OK);
    QCOMPARE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    const CliResult trained = run_cli(with_store(store, {"train", "--data", "synthetic:100:32", "--devices", "cpu", "--epochs", "1"}));
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    QVERIFY2(trained.exit_code == 0, qPrintable(describe(trained)));
    QVERIFY2(trained.err.contains(QStringLiteral("WARNING: this run is not recorded")) &&
                 trained.err.contains(QStringLiteral("is locked by another MirrorLab")),
             qPrintable(trained.err));
    QVERIFY(trained.out.contains(QStringLiteral("Epoch 1/1")));

    // A --store that cannot be a store (a file): the run trained unrecorded, said in a warning,
    // and exited 0 as if kept. It asked for that store by name, so it is an error.
    const QString file = store.path() + "/not-a-folder";
    QVERIFY(QFile(file).open(QIODevice::WriteOnly));
    const CliResult into_file = run_cli({"train", "--data", "synthetic:100:32", "--devices", "cpu", "--epochs", "1", "--store", file});
    QVERIFY2(into_file.exit_code == 1 && into_file.err.contains(QStringLiteral("cannot create the run store's folder '") + file) &&
                 !into_file.out.contains(QStringLiteral("Epoch 1/1")),
             qPrintable(describe(into_file)));
}

// Each ended in "unexpected failure" (std::stoll's out_of_range, std::filesystem's exceptions).
void TestCliRuns::oddRunIdsAndCheckpointPathsAreExplained() {
    QTemporaryDir store;
    QCOMPARE(run_cli(with_store(store, {"train", "--data", "synthetic:200:64", "--devices", "cpu", "--epochs", "1"})).exit_code, 0);
    const CliResult long_id = run_cli(with_store(store, {"evaluate", "--run", "99999999999999999999"}));
    QVERIFY2(long_id.exit_code == 2 && long_id.err.contains(QStringLiteral("a run id is a number from 1")), qPrintable(describe(long_id)));
    // The largest id is an id (it was refused as "not a number" by runs show).
    const CliResult largest = run_cli(with_store(store, {"runs", "show", "9223372036854775807"}));
    QVERIFY2(largest.exit_code == 1 && largest.err.contains(QStringLiteral("there is no run 9223372036854775807")),
             qPrintable(describe(largest)));
    // A copy of a run's checkpoint whose run folder is gone is read as a file of its own.
    const QString copy = store.path() + "/copy.mlckpt";
    QVERIFY(QFile::copy(store.path() + "/runs/1/last.mlckpt", copy));
    QVERIFY(QDir(store.path()).rename("runs/1", "away"));
    const CliResult copied = run_cli(with_store(store, {"evaluate", "--run", copy}));
    QVERIFY2(copied.exit_code == 0 && copied.out.contains(QStringLiteral("loss:")), qPrintable(describe(copied)));
    QVERIFY(QDir(store.path()).rename("away", "runs/1"));
    // A checkpoint file stands on its own: a damaged store, or none where --store points, does not
    // keep it from being evaluated or exported (each failed opening the store), and no store is made
    // for it.
    const QString database = store.path() + "/runs.sqlite";
    QVERIFY(QFile::rename(database, database + ".good"));
    {
        QFile damaged(database);
        QVERIFY(damaged.open(QIODevice::WriteOnly));
        damaged.write(QByteArray(8192, 'x'));
    }
    const QString nowhere = store.path() + "/no-store-here";
    for (const QString& folder : {store.path(), nowhere}) {
        for (const QStringList& command : {QStringList{"evaluate", "--run", copy},
                                           QStringList{"export", "--run", copy, "--weights", store.path() + "/copy.weights.h5"}}) {
            const CliResult alone = run_cli(command + QStringList{"--store", folder});
            QVERIFY2(alone.exit_code == 0, qPrintable(folder + ": " + describe(alone)));
        }
    }
    QVERIFY2(!QFileInfo::exists(nowhere), "a store was made for a checkpoint file");
    // Runs looked for in a --store where there is none (a typo): it was made into an empty store
    // and the runs were "not there".
    for (const QStringList& command : {QStringList{"runs"}, QStringList{"runs", "show", "1"}, QStringList{"evaluate", "--run", "1"}}) {
        const CliResult typo = run_cli(command + QStringList{"--store", nowhere});
        QVERIFY2(typo.exit_code == 1 && typo.err.contains("there is no run store in '" + nowhere + "'"), qPrintable(describe(typo)));
    }
    QVERIFY2(!QFileInfo::exists(nowhere), "a store was made by reading runs");
    QVERIFY(QFile::remove(database));
    QVERIFY(QFile::rename(database + ".good", database));
    // A file named 1 where the command runs: it answered for run 1 (another run's copied checkpoint
    // exported as run 1) without a word. ./1 still names the file.
    QVERIFY(QFile::copy(copy, store.path() + "/1"));
    const CliResult shadowed = run_cli(with_store(store, {"evaluate", "--run", "1"}), 0, store.path());
    QVERIFY2(shadowed.exit_code == 2 && shadowed.err.contains(QStringLiteral("'1' is both run 1 of the store and a file or folder here")),
             qPrintable(describe(shadowed)));
    QCOMPARE(run_cli(with_store(store, {"evaluate", "--run", "./1"}), 0, store.path()).exit_code, 0);
    // A checkpoint that is a loop of symbolic links is named with the reason.
    const QString last = store.path() + "/runs/1/last.mlckpt";
    QVERIFY(QFile::remove(last));
    QVERIFY(QFile::link(QStringLiteral("last.mlckpt"), last));
    for (const QStringList& command : {QStringList{"evaluate", "--run", "1"}, QStringList{"export", "--run", "1", "--keras", store.path() + "/x.keras"}}) {
        const CliResult loop = run_cli(with_store(store, command));
        QVERIFY2(loop.exit_code == 1 && loop.err.contains(QStringLiteral("cannot look at the checkpoint '")) &&
                     loop.err.contains(QStringLiteral("Too many levels of symbolic links")) && !loop.err.contains(QStringLiteral("unexpected")),
                 qPrintable(describe(loop)));
    }
}

// predict reads the run's data for its words and topic names. A CSV moved away was named as a
// missing file only, a CSV edited since gave predictions through another vocabulary without a
// word; a damaged settings row in the database named neither the run nor the database.
void TestCliRuns::predictNeedsTheRunsOwnData() {
    QTemporaryDir store;
    const QString csv = store.path() + "/news.csv";
    QFile file(csv);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("label,text\n");
    for (int i = 0; i < 40; ++i) file.write(QStringLiteral("sport,team wins the cup %1\nfinance,shares fall at the bank %1\n").arg(i).toUtf8());
    file.close();
    // Trained with a path relative to the folder it ran in: the run keeps it absolute, so another
    // folder finds the data (it said "put it back where it was" of a file that never moved).
    QVERIFY(QDir(store.path()).mkdir("elsewhere"));
    QCOMPARE(run_cli(with_store(store, {"train", "--data", "csv:news.csv", "--devices", "cpu", "--epochs", "1"}), 0, store.path()).exit_code, 0);
    const CliResult from_elsewhere = run_cli(with_store(store, {"predict", "--run", "1", "--text", "team wins"}), 0, store.path() + "/elsewhere");
    QVERIFY2(from_elsewhere.exit_code == 0, qPrintable(describe(from_elsewhere)));
    QVERIFY(file.open(QIODevice::Append));
    file.write("sport,one more match\n");
    file.close();
    const CliResult edited = run_cli(with_store(store, {"predict", "--run", "1", "--text", "team wins"}));
    QVERIFY2(edited.exit_code == 1 && edited.err.contains(QStringLiteral("was trained on other data")), qPrintable(describe(edited)));
    QVERIFY(QFile::rename(csv, csv + ".moved"));
    const CliResult moved = run_cli(with_store(store, {"predict", "--run", "1", "--text", "team wins"}));
    QVERIFY2(moved.exit_code == 1 && moved.err.contains(QStringLiteral("the data run 1 was trained on ('csv:")) &&
                 moved.err.contains(QStringLiteral("put it back where it was")),
             qPrintable(describe(moved)));
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(QString(store.path() + "/runs.sqlite").toUtf8().constData(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "UPDATE runs SET settings = '{bad' WHERE id = 1", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    const CliResult shown = run_cli(with_store(store, {"runs", "show", "1", "--json"}));
    QVERIFY2(shown.exit_code == 1 && shown.err.contains(QStringLiteral("run 1's settings in '")), qPrintable(describe(shown)));
}

// Early stopping with restore_best_weights: Keras' model after fit() holds the best epoch's weights,
// and so does the run now; evaluate read the last epoch's (another loss than the one it named).
void TestCliRuns::earlyStoppingsRestoredWeightsAreTheRunsWeights() {
    QTemporaryDir store;
    const CliResult trained = run_cli(with_store(store, {"train", "--data", "synthetic:400:100", "--devices", "cpu", "--epochs", "20",
                                                        "--early-stopping", "1", "--learning-rate", "0.01"}));
    QVERIFY2(trained.exit_code == 0 && trained.err.contains(QStringLiteral("Restoring model weights from the end of the best epoch")),
             qPrintable(describe(trained)));
    const std::vector<mirrorlab::json::Value> listed = runs_json(store);
    QCOMPARE(listed.size(), std::size_t{1});
    const std::int64_t epochs = listed[0].at("epochs_completed").as_int64();
    const std::int64_t best = listed[0].at("best_epoch").as_int64();
    QVERIFY(best < epochs);
    const CliResult shown = run_cli(with_store(store, {"runs", "show", "1", "--json"}));
    const mirrorlab::json::Value run = mirrorlab::json::parse(shown.out.toStdString());
    const double best_val_loss = run.at("epochs").as_array()[static_cast<std::size_t>(best - 1)].at("val_loss").as_double();
    const CliResult evaluated = run_cli(with_store(store, {"evaluate", "--run", "1", "--json"}));
    QVERIFY2(evaluated.exit_code == 0, qPrintable(describe(evaluated)));
    const mirrorlab::json::Value result = mirrorlab::json::parse(evaluated.out.toStdString());
    QVERIFY2(std::abs(result.at("loss").as_double() - best_val_loss) < 1e-6,
             qPrintable(QStringLiteral("%1 vs epoch %2's %3").arg(result.at("loss").as_double()).arg(best).arg(best_val_loss)));
    QVERIFY2(QString::fromStdString(result.at("source").as_string())
                 .contains(QStringLiteral("epoch %1's weights (restored by early stopping after epoch %2)").arg(best).arg(epochs)),
             qPrintable(evaluated.out));
}

QTEST_GUILESS_MAIN(TestCliRuns)
#include "test_cli_runs.moc"
