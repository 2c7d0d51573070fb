// Following a run in another process (TrainingController::follow): `mirrorlab-cli train --json`
// writes its events to a file while the GUI reads them as they come and shows the run like its
// own — curves, epochs, the end — without being able to pause it; Stop stops following and the
// job goes on; a file that is not there or a run in progress is refused with the reason.
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/training/training_controller.h"

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

// A CLI run whose --json output goes to `path`, as a user would start it from a terminal.
void start_cli(QProcess& cli, const QString& path, const QStringList& extra = {}) {
    cli.setStandardOutputFile(path);
    cli.start(QStringLiteral(MIRRORLAB_CLI_PATH), QStringList{"train", "--devices", "cpu:2", "--data", "synthetic:640:64",
                                                             "--no-store", "--json"} +
                                                      extra);
    QVERIFY(cli.waitForStarted(30000));
}

}  // namespace

class FollowTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { qputenv("MIRRORLAB_DATA_DIR", store_dir_.path().toUtf8()); }

    void followsARunToItsEnd() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("job.jsonl"));
        QProcess cli;
        start_cli(cli, path, {"--epochs", "3", "--steps-per-epoch", "20"});
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(path), 30000);

        TrainingController controller;
        QSignalSpy began(&controller, &TrainingController::trainBegan);
        QSignalSpy epochs(&controller, &TrainingController::epochEnded);
        QSignalSpy finished(&controller, &TrainingController::runFinished);
        QString error;
        const int id = controller.follow(path, &error);
        QVERIFY2(id > 0, qPrintable(error));
        QVERIFY(controller.following());
        QCOMPARE(controller.state(), TrainingController::State::Running);
        QVERIFY(controller.currentRun()->title.contains(QStringLiteral("followed: job.jsonl")));
        // Another run cannot be followed meanwhile, and Pause does nothing to another process.
        QCOMPARE(controller.follow(path, &error), 0);
        QVERIFY2(error.contains(QStringLiteral("in progress")), qPrintable(error));
        controller.pause();
        QCOMPARE(controller.state(), TrainingController::State::Running);

        QVERIFY(controller.waitForFinished(120000));
        if (cli.state() != QProcess::NotRunning) QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        QCOMPARE(began.count(), 1);
        QCOMPARE(began.first().first().value<TrainBeginEvent>().replicas, 2);
        QCOMPARE(epochs.count(), 3);
        QCOMPARE(finished.count(), 1);
        QVERIFY(!controller.following());
        const RunRecord* run = controller.run(id);
        QVERIFY(run != nullptr && !run->running);
        QCOMPARE(run->epochs.size(), std::size_t{3});
        QCOMPARE(run->steps.size(), std::size_t{60});  // every step's point, for the curves
        QVERIFY(run->finished.has_value());
        QVERIFY(std::isfinite(run->epochs.back().validation.loss));
        QVERIFY(controller.lastWeights().empty());  // the weights are in the other process
    }

    void stopLeavesTheJobRunning() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("long.jsonl"));
        QProcess cli;
        start_cli(cli, path, {"--epochs", "1000"});
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(path), 30000);
        TrainingController controller;
        QSignalSpy steps(&controller, &TrainingController::stepsEnded);
        QString error;
        QVERIFY2(controller.follow(path, &error) > 0, qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steps.count() > 0, 60000);
        controller.stop();
        QCOMPARE(controller.state(), TrainingController::State::Idle);
        QVERIFY(!controller.following());
        QVERIFY(!controller.currentRun()->running);
        QVERIFY(!controller.currentRun()->finished.has_value());  // it did not finish: it was left
        QTest::qWait(300);
        QCOMPARE(cli.state(), QProcess::Running);  // the job goes on
        cli.kill();
        cli.waitForFinished(10000);
    }

    void refusesWhatCannotBeFollowed() {
        TrainingController controller;
        QString error;
        QCOMPARE(controller.follow(QStringLiteral("/nonexistent/job.jsonl"), &error), 0);
        QVERIFY2(error.contains(QStringLiteral("/nonexistent/job.jsonl")), qPrintable(error));
        QCOMPARE(controller.state(), TrainingController::State::Idle);
        QTemporaryDir dir;
        QCOMPARE(controller.follow(dir.path(), &error), 0);
        QVERIFY(!error.isEmpty());
        QVERIFY(controller.runs().empty() || !controller.currentRun()->running);
    }

    // Lines that are not events (Open MPI's messages) are shown in the log, not an error.
    void otherOutputGoesToTheLog() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("mixed.jsonl"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("mpirun noticed that process rank 1 with PID 4242 on node host exited on signal 9 (Killed).\n");
        file.write(R"({"type": "failed", "kind": "cluster", "reason": "rank 1 was lost", "epoch": 2, "step": 7})" "\n");
        file.close();
        TrainingController controller;
        QSignalSpy log(&controller, &TrainingController::logLine);
        QSignalSpy failed(&controller, &TrainingController::runFailed);
        QString error;
        QVERIFY2(controller.follow(path, &error) > 0, qPrintable(error));
        QVERIFY(controller.waitForFinished(10000));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.first().first().value<FailedEvent>().reason, std::string("rank 1 was lost"));
        bool saw_mpirun = false;
        for (const auto& arguments : log) {
            saw_mpirun = saw_mpirun || arguments.first().value<LogEvent>().text.find("rank 1 with PID") != std::string::npos;
        }
        QVERIFY(saw_mpirun);
        QVERIFY(!controller.following());
    }

private:
    QTemporaryDir store_dir_;
};

QTEST_MAIN(FollowTest)
#include "test_ui_follow.moc"
