// Following a run in another process (TrainingController::follow): `mirrorlab-cli train --json`
// writes its events to a file while the GUI reads them as they come and shows the run like its
// own — curves, epochs, the end — without being able to pause it; Stop stops following and the
// job goes on; a file that is not there or a run in progress is refused with the reason.
#include <QDialogButtonBox>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <set>

#include "core/data/source.h"
#include "ui/inspect/class_report_view.h"
#include "ui/inspect/try_it_panel.h"
#include "ui/training/mpi_hosts.h"
#include "ui/training/training_controller.h"
#include "ui/training/workers_dialog.h"

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
        TryItPanel try_it(&controller);
        ClassReportView report(&controller);
        try_it.setText(QStringLiteral("oil prices rose sharply"));
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
        // Try it and the report say so, rather than "train a model first" or an earlier run's answer.
        QTRY_VERIFY2(try_it.statusText().contains(QStringLiteral("trained in another process")), qPrintable(try_it.statusText()));
        QTRY_VERIFY2(report.statusText().contains(QStringLiteral("trained in another process")), qPrintable(report.statusText()));
    }

    // A followed run is not kept here (its process keeps it, or not): a run trained here afterwards
    // gets a number of its own. Both were numbered the store's next id, so selecting, overlaying or
    // deleting one in the Runs panel hit the other too.
    void aRunAfterAFollowedOneHasItsOwnNumber() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("short.jsonl"));
        QProcess cli;
        start_cli(cli, path, {"--epochs", "1", "--steps-per-epoch", "3"});  // --no-store
        QVERIFY(cli.waitForFinished(120000));
        TrainingController controller;
        QString error;
        const int followed = controller.follow(path, &error);
        QVERIFY2(followed > 0, qPrintable(error));
        QVERIFY(controller.waitForFinished(60000));
        RunSettings local = worker_settings(1);
        local.data = std::make_shared<const DatasetSplit>(load_dataset("synthetic:640:64"));
        const int trained = controller.start(local);
        QVERIFY(controller.waitForFinished(120000));
        QVERIFY2(trained != followed, qPrintable(QString::number(trained)));
        QVERIFY(controller.run(trained)->stored);
        QVERIFY(!controller.run(followed)->stored);
        // A new window lists the kept run under its number, and numbers the next run after both.
        TrainingController again;
        QVERIFY(again.run(trained) != nullptr && again.run(followed) == nullptr);
        QVERIFY(again.follow(path, &error) > std::max(trained, followed));
        QVERIFY(again.waitForFinished(60000));
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
        const std::size_t runs_before = controller.runs().size();  // the store's, from earlier cases
        QString error;
        QCOMPARE(controller.follow(QStringLiteral("/nonexistent/job.jsonl"), &error), 0);
        QVERIFY2(error.contains(QStringLiteral("/nonexistent/job.jsonl")), qPrintable(error));
        QCOMPARE(controller.state(), TrainingController::State::Idle);
        QTemporaryDir dir;
        QCOMPARE(controller.follow(dir.path(), &error), 0);
        QVERIFY2(error.contains(dir.path()), qPrintable(error));
        // A named pipe: opening it waited for a writer and froze the window (this test hung).
        const QString fifo = dir.filePath(QStringLiteral("job.fifo"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QCOMPARE(controller.follow(fifo, &error), 0);
        QVERIFY2(error.contains(fifo), qPrintable(error));
        QCOMPARE(controller.runs().size(), runs_before);  // nothing was started
        QCOMPARE(controller.state(), TrainingController::State::Idle);
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

    // Training > "Train on several workers": mpirun starts the workers with this window's model,
    // settings and data; rank 0's events show here, every worker's replica in them.
    void launchesWorkersAndShowsThem() {
        if (QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty()) QSKIP("mpirun not found (install openmpi-bin)");
        TrainingController controller;
        controller.setCliPath(QStringLiteral(MIRRORLAB_CLI_PATH));
        QSignalSpy began(&controller, &TrainingController::trainBegan);
        QSignalSpy steps(&controller, &TrainingController::stepsEnded);
        QSignalSpy finished(&controller, &TrainingController::runFinished);
        QString error;
        const int id = controller.launchWorkers(worker_settings(2), 2, &error);
        QVERIFY2(id > 0, qPrintable(error));
        QVERIFY(controller.jobRunning());
        QVERIFY(controller.waitForFinished(120000));
        QTRY_VERIFY_WITH_TIMEOUT(!controller.jobRunning(), 30000);
        QCOMPARE(finished.count(), 1);
        const TrainBeginEvent begin = began.first().first().value<TrainBeginEvent>();
        QCOMPARE(begin.replicas, 2);
        QCOMPARE(begin.devices.front(), std::string("/job:worker/task:0/device:CPU:0"));
        QCOMPARE(begin.global_batch, 32);
        const auto last = steps.last().first().value<std::vector<StepEndEvent>>();
        QCOMPARE(last.back().replicas.size(), std::size_t{2});  // both workers' replicas
        const RunRecord* run = controller.run(id);
        QCOMPARE(run->epochs.size(), std::size_t{2});
        QVERIFY(run->title.contains(QStringLiteral("2 workers")));
        // The job's weights, from the checkpoint rank 0 kept: Try it and the report use them.
        QCOMPARE(static_cast<std::int64_t>(controller.lastWeights().size()), Model::reference().total_params());
        QCOMPARE(controller.lastModel()->total_params(), Model::reference().total_params());
    }

    void stopEndsTheWorkers() {
        if (QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty()) QSKIP("mpirun not found (install openmpi-bin)");
        TrainingController controller;
        controller.setCliPath(QStringLiteral(MIRRORLAB_CLI_PATH));
        QSignalSpy steps(&controller, &TrainingController::stepsEnded);
        QString error;
        QVERIFY2(controller.launchWorkers(worker_settings(1000), 2, &error) > 0, qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(steps.count() > 0, 60000);
        controller.stop();
        QVERIFY(controller.waitForFinished(60000));
        QTRY_VERIFY_WITH_TIMEOUT(!controller.jobRunning(), 30000);
        QVERIFY(!controller.currentRun()->running);
        QVERIFY(!controller.currentRun()->failed.has_value());  // stopped, not failed
    }

    // Other hosts: mpirun's --host list, this host first (rank 0 keeps the run here). Here the only
    // host is this one, given by name, as a user with one machine would try it first.
    void launchesWorkersOnTheHostsGiven() {
        if (QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty()) QSKIP("mpirun not found (install openmpi-bin)");
        TrainingController controller;
        controller.setCliPath(QStringLiteral(MIRRORLAB_CLI_PATH));
        QSignalSpy log(&controller, &TrainingController::logLine);
        QSignalSpy began(&controller, &TrainingController::trainBegan);
        QString error;
        const int id = controller.launchWorkers(worker_settings(1), 2, &error, QStringLiteral("localhost:2"));
        QVERIFY2(id > 0, qPrintable(error));
        QVERIFY(controller.waitForFinished(120000));
        QTRY_VERIFY_WITH_TIMEOUT(!controller.jobRunning(), 30000);
        QVERIFY2(controller.currentRun()->epochs.size() == 1 && !controller.currentRun()->failed.has_value(),
                 qPrintable(QString::fromStdString(controller.currentRun()->failed ? controller.currentRun()->failed->reason : "")));
        QCOMPARE(began.first().first().value<TrainBeginEvent>().replicas, 2);
        bool said = false;
        for (const auto& arguments : log) {
            said = said || arguments.first().value<LogEvent>().text.find("--host localhost:2 ") != std::string::npos;
        }
        QVERIFY(said);
        QVERIFY2(controller.run(id)->devices_spec.endsWith(QStringLiteral(" on localhost:2")), qPrintable(controller.run(id)->devices_spec));
    }

    // A host list mpirun cannot take, or one where rank 0 would not run here, is refused by name
    // before anything starts; the dialog says so under the field and keeps Train disabled, and says
    // what mpirun does where the workers and the hosts' slots differ.
    void hostListsAreCheckedFirst() {
        TrainingController controller;
        controller.setCliPath(QStringLiteral(MIRRORLAB_CLI_PATH));
        const struct {
            const char* hosts;
            const char* said;
        } cases[] = {{"elsewhere.invalid:2, localhost:2", "put this computer first (localhost:2,elsewhere.invalid:2)"},
                     {"elsewhere.invalid", "put this computer first (localhost,elsewhere.invalid)"},
                     {"localhost:2, node 2", "'node 2' is not a host"},  // quoted as typed
                     {"localhost:0", "'localhost:0' is not a host"},
                     {"localhost;rm -rf x", "'localhost;rm -rf x' is not a host"},
                     {"-np:2", "'-np:2' is not a host"}};
        for (const auto& c : cases) {
            QString error;
            QCOMPARE(controller.launchWorkers(worker_settings(1), 2, &error, QLatin1String(c.hosts)), 0);
            QVERIFY2(error.startsWith(QStringLiteral("Hosts: ")) && error.contains(QLatin1String(c.said)), qPrintable(error));
            QCOMPARE(controller.state(), TrainingController::State::Idle);
        }
        // This computer by any of its names or addresses, then others; empty entries dropped.
        for (const QString& first : {QStringLiteral("localhost"), QStringLiteral("127.0.1.1"), QSysInfo::machineHostName()}) {
            const QString hosts = normalizedHosts(first + QStringLiteral(":2, ,node-2.example.org:4,10.0.0.7,"));
            QCOMPARE(hosts, first + QStringLiteral(":2,node-2.example.org:4,10.0.0.7"));
            QVERIFY2(hostsProblem(hosts).isEmpty(), qPrintable(hostsProblem(hosts)));
            QCOMPARE(hostSlots(hosts), 7);
        }

        WorkersDialog dialog(QStringLiteral("cpu:2"), QStringLiteral("synthetic"));
        QPushButton* train = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        QVERIFY(dialog.hosts().isEmpty() && dialog.problem().isEmpty() && train->isEnabled());  // this host only
        dialog.findChild<QLineEdit*>(QStringLiteral("workersHosts"))->setText(QStringLiteral("elsewhere.invalid:2,localhost:2"));
        QVERIFY2(dialog.problem().contains(QStringLiteral("put this computer first")), qPrintable(dialog.problem()));
        QVERIFY(!train->isEnabled());
        dialog.setHosts(QStringLiteral("localhost:2, elsewhere.invalid:2"));
        QVERIFY(dialog.problem().isEmpty() && train->isEnabled());
        dialog.setWorkers(2);  // 4 slots, 2 workers: the second host would get none
        QVERIFY2(dialog.slotsNote().contains(QStringLiteral("4 slots for 2 workers")), qPrintable(dialog.slotsNote()));
        dialog.setWorkers(4);
        QVERIFY(dialog.slotsNote().isEmpty());
        dialog.setWorkers(6);
        QVERIFY2(dialog.slotsNote().contains(QStringLiteral("share the cores")), qPrintable(dialog.slotsNote()));
        QVERIFY(train->isEnabled());
    }

    // Rank 0 has said its run ended while mpirun still waits for the workers to exit: what starts
    // next (another job, a run here) is its own. The job's end was taken for the next job's (it
    // crashed the window) and Stop went to the old job while the run here trained on.
    void aJobStillExitingLeavesTheNextRunAlone() {
        QTemporaryDir dir;
        // A finished run's events, as rank 0 writes them, from a real CLI run.
        const QString recorded = dir.filePath(QStringLiteral("recorded.jsonl"));
        QProcess cli;
        start_cli(cli, recorded, {"--epochs", "1", "--steps-per-epoch", "5"});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        // An mpirun that writes them and then lingers, as one whose workers are still exiting does.
        QFile fake(dir.filePath(QStringLiteral("mpirun")));
        QVERIFY(fake.open(QIODevice::WriteOnly));
        fake.write("#!/bin/sh\ncat '" + recorded.toUtf8() + "'\nexec sleep 60\n");
        fake.close();
        fake.setPermissions(fake.permissions() | QFileDevice::ExeOwner);
        const QByteArray path = qgetenv("PATH");
        qputenv("PATH", dir.path().toUtf8() + ":" + path);
        auto restore_path = qScopeGuard([&] { qputenv("PATH", path); });

        TrainingController controller;
        controller.setCliPath(QStringLiteral(MIRRORLAB_CLI_PATH));
        QString error;
        const int first = controller.launchWorkers(worker_settings(1), 2, &error);
        QVERIFY2(first > 0, qPrintable(error));
        QVERIFY(controller.waitForFinished(60000));
        QVERIFY(controller.jobRunning());  // the run has ended, mpirun has not
        QVERIFY(controller.run(first)->finished.has_value());

        // Another job: it starts, and the first job's end says nothing about it.
        const int second = controller.launchWorkers(worker_settings(1), 2, &error);
        QVERIFY2(second > first, qPrintable(error));
        QVERIFY(controller.waitForFinished(60000));
        const RunRecord* run = controller.run(second);
        QVERIFY(run != nullptr);
        QVERIFY2(!run->failed.has_value(), run->failed ? run->failed->reason.c_str() : "");
        QVERIFY(run->finished.has_value());
        QVERIFY(controller.jobRunning());

        // A run here: Stop stops it, not the job that is still exiting.
        RunSettings local = worker_settings(1000);
        local.data = std::make_shared<const DatasetSplit>(load_dataset("synthetic:640:64"));
        QSignalSpy steps(&controller, &TrainingController::stepsEnded);
        QVERIFY(controller.start(local) > 0);
        QVERIFY(!controller.jobRunning());  // ended before the run began, and let go
        QTRY_VERIFY_WITH_TIMEOUT(steps.count() > 0, 60000);
        controller.stop();
        QVERIFY(controller.waitForFinished(60000));
        run = controller.currentRun();
        QVERIFY(run != nullptr && !run->running);
        QVERIFY2(run->finished.has_value() && run->finished->reason == FinishReason::StoppedByUser,
                 run->failed ? run->failed->reason.c_str() : run->finished ? run->finished->text.c_str() : "no end");
        QVERIFY(run->epochs.size() < 1000);
        // This fake mpirun kept no run in the store: the jobs' numbers are still not given again.
        std::set<int> ids;
        for (const RunRecord& record : controller.runs()) QVERIFY2(ids.insert(record.id).second, qPrintable(QString::number(record.id)));
    }

    void workersNeedMpirunAndNamedData() {
        TrainingController controller;
        controller.setCliPath(QStringLiteral(MIRRORLAB_CLI_PATH));
        QString error;
        RunSettings no_spec = worker_settings(1);
        no_spec.data_spec.clear();
        if (!QStandardPaths::findExecutable(QStringLiteral("mpirun")).isEmpty()) {
            QCOMPARE(controller.launchWorkers(no_spec, 2, &error), 0);
            QVERIFY2(error.contains(QStringLiteral("load the data themselves")), qPrintable(error));
        }
        const QByteArray path = qgetenv("PATH");
        qputenv("PATH", "/nonexistent");
        const int id = controller.launchWorkers(worker_settings(1), 2, &error);
        qputenv("PATH", path);
        QCOMPARE(id, 0);
        QVERIFY2(error.contains(QStringLiteral("mpirun was not found")) && error.contains(QStringLiteral("openmpi-bin")),
                 qPrintable(error));
        QCOMPARE(controller.state(), TrainingController::State::Idle);
    }

private:
    static RunSettings worker_settings(int epochs) {
        RunSettings settings;
        settings.model = std::make_shared<const Model>(Model::reference());
        settings.devices = DeviceConfig::parse("cpu");
        settings.config.epochs = epochs;
        settings.config.max_steps_per_epoch = 5;
        settings.data_spec = QStringLiteral("synthetic:640:64");
        settings.data_name = QStringLiteral("synthetic");
        return settings;
    }

    QTemporaryDir store_dir_;
};

QTEST_MAIN(FollowTest)
#include "test_ui_follow.moc"
