// The whole window, as a person uses it: configure devices, pick a model and data, train, see the
// charts, the monitor, the runs and the log fill; an out-of-memory run shows its error while the
// window stays usable and the earlier run is kept; settings persist between launches.
#include <QtTest>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QStatusBar>
#include <QToolBar>
#include <QToolButton>

#include "support/fresh_run_store.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "ui/data/data_panel.h"
#include "ui/devices/devices_panel.h"
#include "ui/main_window.h"
#include "ui/model/model_panel.h"
#include "ui/runs/runs_panel.h"
#include "ui/training/log_panel.h"
#include "ui/training/monitor_panel.h"
#include "ui/teaching/scaling_panel.h"
#include "ui/teaching/step_view.h"
#include "ui/training/training_panel.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

std::string small_model(std::int64_t vocabulary) {
    return "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
           "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": " + std::to_string(vocabulary) + ", \"output_dim\": 8}},"
           "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 16, \"kernel_size\": 5, \"activation\": \"relu\"}},"
           "{\"class_name\": \"GlobalMaxPooling1D\"},"
           "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}";
}

QString scope() { return QStringLiteral("MirrorLab-test-%1").arg(QCoreApplication::applicationPid()); }

void prepare(MainWindow& window, const std::string& model_json, const char* devices, int epochs) {
    window.modelPanel()->setModel(Model::from_json_text(model_json));
    window.devicesPanel()->setConfig(DeviceConfig::parse(devices));
    auto* epochs_box = window.modelPanel()->findChild<QSpinBox*>(QStringLiteral("epochs"));
    QVERIFY(epochs_box != nullptr);
    epochs_box->setValue(epochs);
}

// Shows the window and, once the first launch's own load is done, loads `spec`.
bool show_with_data(MainWindow& window, const QString& spec) {
    window.show();
    if (!window.dataPanel()->waitUntilLoaded(60000)) return false;
    window.dataPanel()->load(spec);
    return window.dataPanel()->waitUntilLoaded(60000);
}

// An events file with no events yet: following it, a run is in progress until Stop.
QString empty_events_file(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QStringLiteral("job.jsonl"));
    QFile file(path);
    return file.open(QIODevice::WriteOnly) ? path : QString();
}

// The training toolbar's button for `action_name`, as a person clicks it.
QToolButton* toolbar_button(MainWindow& window, const char* action_name) {
    auto* toolbar = window.findChild<QToolBar*>(QStringLiteral("trainingToolbar"));
    auto* action = window.findChild<QAction*>(QString::fromLatin1(action_name));
    if (toolbar == nullptr || action == nullptr) return nullptr;
    return qobject_cast<QToolButton*>(toolbar->widgetForAction(action));
}

std::int64_t steps_seen(const MainWindow& window) {
    window.controller()->drainEvents();
    const RunRecord* run = window.controller()->currentRun();
    return run == nullptr || run->steps.empty() ? 0 : run->steps.back().global_step;
}

// A CSV of `rows` texts of two topics, alternating: data a run can train on in a moment.
bool write_two_topic_csv(const QString& path, int rows) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return false;
    file.write("label,text\n");
    for (int row = 0; row < rows; ++row) file.write(row % 2 ? "sport,the team won the match\n" : "money,shares fell again\n");
    return true;
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
    FreshRunStore run_store_;
private slots:
    void init() { run_store_.start(); }
    void cleanupTestCase() { QSettings(QStringLiteral("MirrorLab"), scope()).clear(); }

    void trainsAndShowsEverything() {
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, QStringLiteral("synthetic:400:100")));
        QVERIFY2(window.dataPanel()->dataName().contains(QStringLiteral("ynthetic")), qPrintable(window.dataPanel()->dataName()));
        prepare(window, small_model(30982), "cpu:2x512MB", 2);
        QVERIFY2(window.startBlocker().isEmpty(), qPrintable(window.startBlocker()));

        QSignalSpy status(window.statusBar(), &QStatusBar::messageChanged);  // shown for 10 s only
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(120000));
        window.trainingPanel()->refreshNow();
        window.monitorPanel()->refreshNow();
        QVERIFY(window.trainingPanel()->trainingPointCount() > 0);
        QCOMPARE(window.trainingPanel()->validationPointCount(), 2);
        QCOMPARE(window.monitorPanel()->deviceRowCount(), 2);
        QVERIFY(window.monitorPanel()->shownBytesInUse(0) > 0);
        QCOMPARE(window.runsPanel()->rowCount(), 1);
        // The status bar says how the run ended as the panel does, in the interface's words.
        auto said_finished = [&] {
            for (const QList<QVariant>& message : status) {
                if (message.first().toString() == QStringLiteral("Finished: 2 epochs")) return true;
            }
            return false;
        };
        QTRY_VERIFY(said_finished());
        const QString log = window.logPanel()->plainText();
        QVERIFY2(log.contains(QStringLiteral("Using MirroredStrategy with devices (/device:CPU:0, /device:CPU:1)")), qPrintable(log));
        QVERIFY(log.contains(QStringLiteral("Reduce to /device:CPU:0 then broadcast")));
        QVERIFY(window.messageText().isEmpty() || !window.messageText().contains(QStringLiteral("failed")));
    }

    void outOfMemoryIsShownAndTheWindowStaysUsable() {
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, QStringLiteral("synthetic:300:60")));

        // A first run that works, so there is history to keep.
        prepare(window, small_model(30982), "cpu:2x512MB", 1);
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(120000));
        QCOMPARE(window.runsPanel()->rowCount(), 1);

        // 2,000,000 x 8 floats = 61 MiB of variables on a 16 MB virtual device.
        prepare(window, small_model(2000000), "cpu:2x16MB", 1);
        QVERIFY2(window.startBlocker().isEmpty(), qPrintable(window.startBlocker()));
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(120000));
        const QString message = window.messageText();
        QVERIFY2(message.contains(QStringLiteral("out of memory on /device:CPU:0")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("16.0 MiB")), qPrintable(message));
        QVERIFY(window.trainingPanel()->statusText().contains(QStringLiteral("memory"), Qt::CaseInsensitive));
        QCOMPARE(window.runsPanel()->rowCount(), 2);
        const RunRecord* first = window.controller()->run(1);
        QVERIFY(first != nullptr && first->epochs.size() == 1);  // nothing already computed is lost

        // Fix the configuration and train again in the same window.
        prepare(window, small_model(30982), "cpu:2x512MB", 1);
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(120000));
        QVERIFY(window.controller()->currentRun()->finished.has_value());
        QCOMPARE(window.runsPanel()->rowCount(), 3);
    }

    // Closing during a run asks first; "no" keeps training, "yes" stops the run and the window closes
    // once the engine has wound down. close() itself never waits for the engine.
    void closingDuringARunAsksAndNeverWaits() {
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, QStringLiteral("synthetic:2000:200")));
        prepare(window, small_model(30982), "cpu:2", 1000);
        QStringList questions;
        bool answer = false;
        window.setCloseConfirmation([&](const QString& question) {
            questions << question;
            return answer;
        });
        QVERIFY(window.startTraining());
        QVERIFY(!window.close());
        QCOMPARE(questions.size(), 1);
        QVERIFY2(questions.front().contains(QStringLiteral("training run is in progress")), qPrintable(questions.front()));
        QVERIFY(window.isVisible());
        QCOMPARE(window.controller()->state(), TrainingController::State::Running);

        answer = true;
        QVERIFY(!window.close());  // the close is deferred until the engine has stopped
        QCOMPARE(window.controller()->state(), TrainingController::State::Stopping);
        QTRY_VERIFY_WITH_TIMEOUT(!window.isVisible(), 60000);
        QCOMPARE(window.controller()->state(), TrainingController::State::Idle);
        QCOMPARE(questions.size(), 2);
        QVERIFY(window.controller()->currentRun()->finished.has_value());
    }

    // The run ends while the question is open: "yes" closes the window then, and nothing is left
    // waiting to close it at the end of a later run. Closing while following another process's run
    // closes at once (stopping to follow takes no step). Before, the window stayed open saying it
    // would close, and closed by itself, unasked, when the next run ended.
    void closingAsTheRunEndsClosesOnce() {
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, QStringLiteral("synthetic:320:64")));
        prepare(window, small_model(30982), "cpu:2", 1000);
        int questions = 0;
        window.setCloseConfirmation([&](const QString&) {
            ++questions;
            window.controller()->stop();  // the run ends while the person reads the question
            return window.controller()->waitForFinished(60000);
        });
        QVERIFY(window.startTraining());
        QVERIFY(window.close());
        QCOMPARE(questions, 1);
        QVERIFY(!window.isVisible());

        window.show();  // as if opened again: a later run's end closes nothing
        prepare(window, small_model(30982), "cpu:2", 1);
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(60000));
        QTest::qWait(100);
        QVERIFY(window.isVisible());

        QTemporaryDir dir;
        const QString events = empty_events_file(dir);
        QVERIFY(!events.isEmpty());
        QString error;
        QVERIFY2(window.controller()->follow(events, &error) > 0, qPrintable(error));
        window.setCloseConfirmation([&](const QString&) {
            ++questions;
            return true;
        });
        QVERIFY(window.close());
        QCOMPARE(questions, 2);
        QVERIFY(!window.isVisible());
        QCOMPARE(window.controller()->state(), TrainingController::State::Idle);
    }

    // A run records the data it trained on, not a choice made in the Data panel since the last
    // Load; the panel says that choice is not loaded yet, and shows what a load brought (Train
    // again's among them). Before, the run recorded the form's choice, and Train again loaded it.
    void aRunRecordsTheDataItTrainedOn() {
        MainWindow window(nullptr, scope());
        window.show();
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QTemporaryDir dir;
        const QString csv = dir.filePath(QStringLiteral("tiny.csv"));
        QFile file(csv);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("label,text\nsport,team wins the cup\nfinance,shares fall\nsport,goal in the last minute\n"
                   "finance,bank profits rise\nsport,team wins again\nfinance,stocks drop\n");
        file.close();
        window.dataPanel()->load(QStringLiteral("csv:") + csv);
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        auto* source = window.dataPanel()->findChild<QComboBox*>(QStringLiteral("dataSource"));
        auto* path = window.dataPanel()->findChild<QLineEdit*>(QStringLiteral("dataPath"));
        auto* not_loaded = window.dataPanel()->findChild<QLabel*>(QStringLiteral("dataNotLoaded"));
        QVERIFY(source != nullptr && path != nullptr && not_loaded != nullptr);
        QVERIFY2(source->currentText().startsWith(QStringLiteral("CSV")), qPrintable(source->currentText()));
        QCOMPARE(path->text(), csv);  // the form shows what was loaded
        QVERIFY(!not_loaded->isVisible());

        window.dataPanel()->load(QStringLiteral("synthetic:320:64"));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QVERIFY2(source->currentText().startsWith(QStringLiteral("Synthetic")), qPrintable(source->currentText()));
        // Another choice, made by hand and not loaded: the run trains on, and records, the
        // synthetic data. (What a load puts in the form is no such choice.)
        QVERIFY(!not_loaded->isVisible());
        const int csv_index = source->findText(QStringLiteral("CSV"), Qt::MatchStartsWith);
        source->setCurrentIndex(csv_index);
        emit source->activated(csv_index);  // as a person's pick from the list
        QVERIFY(not_loaded->isVisible());
        QVERIFY2(not_loaded->text().contains(QStringLiteral("synthetic:320:64")) && not_loaded->text().contains(QStringLiteral("press Load")),
                 qPrintable(not_loaded->text()));
        prepare(window, small_model(30982), "cpu", 1);
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(60000));
        const int id = window.controller()->currentRun()->id;
        QString error;
        const auto stored = window.controller()->storedSettings(id, &error);
        QVERIFY2(stored.has_value(), qPrintable(error));
        QCOMPARE(stored->data_spec, QStringLiteral("synthetic:320:64"));

        // Train again, with the CSV loaded meanwhile: the run's data comes back, form included.
        window.dataPanel()->load(QStringLiteral("csv:") + csv);
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QVERIFY(window.trainAgain(id));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QCOMPARE(window.dataPanel()->loadedSpec(), QStringLiteral("synthetic:320:64"));
        QVERIFY2(source->currentText().startsWith(QStringLiteral("Synthetic")), qPrintable(source->currentText()));
        QVERIFY(!not_loaded->isVisible());
        // Picking "Synthetic" by hand names the built-in default set, not the 320 wires loaded.
        emit source->activated(source->currentIndex());
        QVERIFY(not_loaded->isVisible());
    }

    // While a scaling experiment or a followed run is in progress, nothing else can start, and the
    // actions say so before a dialog is filled in. Before, Start trained beside the experiment
    // (both measured wrong), "Train on several workers" opened its dialog only to refuse, and the
    // step view's Next step armed slow motion for the next run. The scaling status names the timed
    // steps an epoch allows, not the steps asked for.
    void oneThingAtATime() {
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, QStringLiteral("synthetic:4000:64")));
        prepare(window, small_model(30982), "cpu:2", 1);
        auto action = [&](const char* name) { return window.findChild<QAction*>(QLatin1String(name)); };
        QVERIFY(action("startAction")->isEnabled() && action("trainOnWorkersAction")->isEnabled() && action("followAction")->isEnabled());

        window.scalingPanel()->setSteps(3000);
        QVERIFY(window.scalingPanel()->start());
        QVERIFY(!action("startAction")->isEnabled());
        QVERIFY2(action("startAction")->toolTip().contains(QStringLiteral("scaling experiment is running")),
                 qPrintable(action("startAction")->toolTip()));
        QVERIFY(!action("trainOnWorkersAction")->isEnabled() && !action("followAction")->isEnabled());
        QVERIFY(!window.startTraining());
        QVERIFY(window.scalingPanel()->waitForFinished(120000));
        QVERIFY(action("startAction")->isEnabled() && action("trainOnWorkersAction")->isEnabled());
        QVERIFY2(window.scalingPanel()->statusText().contains(QStringLiteral("timed steps")) &&
                     window.scalingPanel()->statusText().contains(QStringLiteral("3000 were asked for")),
                 qPrintable(window.scalingPanel()->statusText()));

        QTemporaryDir dir;
        const QString events = empty_events_file(dir);
        QVERIFY(!events.isEmpty());
        QString error;
        QVERIFY2(window.controller()->follow(events, &error) > 0, qPrintable(error));
        auto* next_step = window.stepView()->findChild<QPushButton*>(QStringLiteral("nextStep"));
        QVERIFY(next_step != nullptr && !next_step->isEnabled());
        QVERIFY(!action("followAction")->isEnabled() && !action("trainOnWorkersAction")->isEnabled());
        window.controller()->stop();
        QVERIFY(action("followAction")->isEnabled());

        // A load that fails leaves Start saying what is wrong, not that the data is still loading.
        window.dataPanel()->load(QStringLiteral("csv:/nonexistent/wires.csv"));
        QVERIFY(!action("startAction")->isEnabled());
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QVERIFY2(!action("startAction")->toolTip().contains(QStringLiteral("still loading")), qPrintable(action("startAction")->toolTip()));
    }

    // Start, Pause, Resume and Stop as a person uses them: clicks on the training toolbar's buttons
    // (not calls into the window), checking what the window shows after each: which buttons are
    // enabled, the Pause button turning into Resume, the status line, steps that stop advancing
    // while paused and go on after Resume, and a stopped run that keeps what it computed. Then a
    // second run is stopped while paused.
    void toolbarStartPauseResumeStop() {
        MainWindow window(nullptr, scope());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        window.dataPanel()->load(QStringLiteral("synthetic:320:64"));  // 10 steps per epoch
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        prepare(window, small_model(30982), "cpu:2", 1000);  // runs until stopped
        QToolButton* start = toolbar_button(window, "startAction");
        QToolButton* pause = toolbar_button(window, "pauseAction");
        QToolButton* stop = toolbar_button(window, "stopAction");
        QVERIFY(start != nullptr && pause != nullptr && stop != nullptr);
        QVERIFY(start->isVisible() && pause->isVisible() && stop->isVisible());
        auto buttons = [&] {
            return QString("start %1, pause %2 (%3), stop %4")
                .arg(start->isEnabled())
                .arg(pause->isEnabled())
                .arg(pause->text())
                .arg(stop->isEnabled());
        };
        QCOMPARE(buttons(), QStringLiteral("start 1, pause 0 (Pause), stop 0"));

        QTest::mouseClick(start, Qt::LeftButton);
        QCOMPARE(window.controller()->state(), TrainingController::State::Running);
        QCOMPARE(buttons(), QStringLiteral("start 0, pause 1 (Pause), stop 1"));
        QCOMPARE(window.trainingPanel()->statusText(), QStringLiteral("Running"));
        QTRY_VERIFY_WITH_TIMEOUT(steps_seen(window) >= 3, 60000);

        QTest::mouseClick(pause, Qt::LeftButton);
        QCOMPARE(window.controller()->state(), TrainingController::State::Paused);
        QCOMPARE(buttons(), QStringLiteral("start 0, pause 1 (Resume), stop 1"));
        QCOMPARE(window.trainingPanel()->statusText(), QStringLiteral("Paused"));
        // The step in flight may still land (once the count has been still for a second, however
        // slow the machine); after that nothing moves.
        const std::int64_t at_pause = steps_seen(window);
        std::int64_t held = at_pause;
        QElapsedTimer since_change, waited;
        since_change.start();
        waited.start();
        while (since_change.elapsed() < 1000 && waited.elapsed() < 30000) {
            QTest::qWait(50);
            if (const std::int64_t now = steps_seen(window); now != held) {
                held = now;
                since_change.restart();
            }
        }
        QVERIFY2(held <= at_pause + 1, qPrintable(QString("%1 steps at Pause, %2 while paused").arg(at_pause).arg(held)));
        QTest::qWait(1500);
        QCOMPARE(steps_seen(window), held);

        QTest::mouseClick(pause, Qt::LeftButton);  // now labelled Resume
        QCOMPARE(window.controller()->state(), TrainingController::State::Running);
        QCOMPARE(buttons(), QStringLiteral("start 0, pause 1 (Pause), stop 1"));
        QCOMPARE(window.trainingPanel()->statusText(), QStringLiteral("Running"));
        QTRY_VERIFY_WITH_TIMEOUT(steps_seen(window) >= held + 12, 60000);  // into the next epoch

        QTest::mouseClick(stop, Qt::LeftButton);
        QCOMPARE(window.controller()->state(), TrainingController::State::Stopping);
        QCOMPARE(buttons(), QStringLiteral("start 0, pause 0 (Pause), stop 0"));
        QVERIFY2(window.trainingPanel()->statusText().startsWith(QStringLiteral("Stopping")), qPrintable(window.trainingPanel()->statusText()));
        QVERIFY(window.controller()->waitForFinished(120000));
        QCOMPARE(window.controller()->state(), TrainingController::State::Idle);
        QCOMPARE(buttons(), QStringLiteral("start 1, pause 0 (Pause), stop 0"));
        const RunRecord* run = window.controller()->currentRun();
        QVERIFY(run != nullptr && run->finished.has_value());
        QCOMPARE(run->finished->reason, FinishReason::StoppedByUser);
        QVERIFY2(run->finished->epochs_completed >= 1, "a stop after 12 more steps of 10-step epochs left no complete epoch");
        // What was computed is kept: every finished epoch, the streamed steps, the charts, the run's row.
        QCOMPARE(static_cast<int>(run->epochs.size()), run->finished->epochs_completed);
        QVERIFY(static_cast<std::int64_t>(run->steps.size()) >= held + 12);
        const QString status = window.trainingPanel()->statusText();
        QVERIFY2(status.startsWith(QStringLiteral("Stopped after %1 complete epoch").arg(run->finished->epochs_completed)), qPrintable(status));
        window.trainingPanel()->refreshNow();
        QVERIFY(window.trainingPanel()->trainingPointCount() > 0);
        QCOMPARE(window.trainingPanel()->validationPointCount(), run->finished->epochs_completed);
        QCOMPARE(window.runsPanel()->rowCount(), 1);

        // Stop while paused: the paused engine wakes up to stop.
        QTest::mouseClick(start, Qt::LeftButton);
        QCOMPARE(window.controller()->state(), TrainingController::State::Running);
        QTRY_VERIFY_WITH_TIMEOUT(steps_seen(window) >= 1, 60000);
        QTest::mouseClick(pause, Qt::LeftButton);
        QCOMPARE(window.controller()->state(), TrainingController::State::Paused);
        QTest::mouseClick(stop, Qt::LeftButton);
        QVERIFY(window.controller()->waitForFinished(120000));
        QCOMPARE(buttons(), QStringLiteral("start 1, pause 0 (Pause), stop 0"));
        QVERIFY(window.controller()->currentRun()->finished.has_value());
        QCOMPARE(window.controller()->currentRun()->finished->reason, FinishReason::StoppedByUser);
        QCOMPARE(window.runsPanel()->rowCount(), 2);
    }

    // A load can be given up: the panel keeps the data it had and loads something else at once.
    void dataLoadCanBeCancelled() {
        MainWindow window(nullptr, scope());
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        const auto before = window.dataPanel()->dataset();
        window.dataPanel()->load(QStringLiteral("synthetic:400000:100000"));
        QVERIFY(window.dataPanel()->isLoading());
        window.dataPanel()->cancelLoad();
        QVERIFY(!window.dataPanel()->isLoading());
        QCOMPARE(window.dataPanel()->dataset(), before);
        window.dataPanel()->load(QStringLiteral("synthetic:300:60"));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QCOMPARE(window.dataPanel()->dataset()->train.size(), std::size_t{300});
        // The abandoned load's result, whenever it comes, does not replace the data chosen since.
        QTest::qWait(200);
        QCOMPARE(window.dataPanel()->dataset()->train.size(), std::size_t{300});
    }

    // mirrorlab --follow FILE that cannot be followed: the window closed at once and the reason went
    // to a terminal the user may not see. It stays, and says why.
    void aFollowThatFailsIsSaidInTheWindow() {
        MainWindow window(nullptr, scope());
        QVERIFY(!window.followRun(QStringLiteral("/nonexistent/job.jsonl")));
        QVERIFY2(window.messageText().contains(QStringLiteral("Cannot follow /nonexistent/job.jsonl")), qPrintable(window.messageText()));
        QCOMPARE(window.controller()->state(), TrainingController::State::Idle);
    }

    void invalidDevicesBlockStartWithAReason() {
        MainWindow window(nullptr, scope());
        DeviceConfig none;
        window.devicesPanel()->setConfig(none);
        QVERIFY(window.startBlocker().contains(QStringLiteral("no device is selected")));
        QVERIFY(!window.startTraining());
        QVERIFY(window.messageText().contains(QStringLiteral("no device is selected")));
        QCOMPARE(window.controller()->runs().size(), std::size_t{0});
    }

    // A layout saved by an earlier MirrorLab (state version 0, Try it and the Per-class report in the
    // strip under the charts) is kept as the person left it, with those two moved beside Data.
    void earlierLayoutIsKeptWithTheAnswersMoved() {
        const QString old_scope = scope() + QStringLiteral("-layout-v0");
        QSettings(QStringLiteral("MirrorLab"), old_scope).clear();
        {
            MainWindow window(nullptr, old_scope);
            window.resize(1600, 900);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            auto* log = window.findChild<QDockWidget*>(QStringLiteral("logDock"));
            auto* try_it = window.findChild<QDockWidget*>(QStringLiteral("tryItDock"));
            auto* report = window.findChild<QDockWidget*>(QStringLiteral("classReportDock"));
            window.tabifyDockWidget(log, try_it);  // where they were
            window.tabifyDockWidget(try_it, report);
            window.findChild<QDockWidget*>(QStringLiteral("scalingDock"))->hide();  // the person's own change
            QCOMPARE(window.dockWidgetArea(try_it), Qt::BottomDockWidgetArea);
            QSettings(QStringLiteral("MirrorLab"), old_scope).setValue(QStringLiteral("window/state"), window.saveState(0));
        }
        MainWindow again(nullptr, old_scope);
        again.show();
        QVERIFY(QTest::qWaitForWindowExposed(&again));
        auto* data = again.findChild<QDockWidget*>(QStringLiteral("dataDock"));
        for (const char* name : {"tryItDock", "classReportDock"}) {
            auto* dock = again.findChild<QDockWidget*>(QLatin1String(name));
            QCOMPARE(again.dockWidgetArea(dock), Qt::LeftDockWidgetArea);
            QVERIFY2(again.tabifiedDockWidgets(data).contains(dock), name);
        }
        QVERIFY(again.findChild<QDockWidget*>(QStringLiteral("scalingDock"))->isHidden());
        QCOMPARE(again.dockWidgetArea(again.findChild<QDockWidget*>(QStringLiteral("logDock"))), Qt::BottomDockWidgetArea);
        again.hide();
        QSettings(QStringLiteral("MirrorLab"), old_scope).clear();
    }

    // The last session's data file moved or deleted: the window loads the default data instead and
    // says what happened, where it was left with no data and Start disabled.
    void lastDataThatIsGoneFallsBackToTheDefault() {
        const QString gone_scope = scope() + QStringLiteral("-gone-data");
        QSettings(QStringLiteral("MirrorLab"), gone_scope).clear();
        QTemporaryDir dir;
        const QString csv = dir.filePath(QStringLiteral("mine.csv"));
        QVERIFY(write_two_topic_csv(csv, 12));
        {
            MainWindow window(nullptr, gone_scope);
            QVERIFY(show_with_data(window, "csv:" + csv));
            QCOMPARE(window.dataPanel()->loadedSpec(), "csv:" + csv);
            window.close();  // closing saves the form
        }
        QVERIFY(QFile::remove(csv));
        MainWindow again(nullptr, gone_scope);
        again.show();
        QTRY_VERIFY_WITH_TIMEOUT(again.dataPanel()->dataset() != nullptr, 60000);
        QCOMPARE(again.dataPanel()->loadedSpec(), QStringLiteral("default"));
        const QString message = again.messageText();
        QVERIFY2(message.contains(QStringLiteral("The data used last time (csv:%1) could not be loaded").arg(csv)) &&
                     message.contains(QStringLiteral("mine.csv")) && message.contains(QStringLiteral("The default data is loaded instead")),
                 qPrintable(message));
        again.hide();
        QSettings(QStringLiteral("MirrorLab"), gone_scope).clear();
    }

    // Closing while a .keras export is written waited for it without a word, or would have left
    // half a file: the window says it closes once the file is written, and then does.
    void closingWaitsForAnExportAndSaysSo() {
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, QStringLiteral("synthetic:200:50")));
        prepare(window, small_model(30982), "cpu", 1);
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(120000));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("run.keras"));
        QString error;
        QVERIFY2(window.runsPanel()->startKerasExport(window.controller()->currentRun()->id, path, &error), qPrintable(error));
        QVERIFY(!window.close());  // not now: the export is being written
        QVERIFY(window.isVisible());
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("closes when it is written")),
                 qPrintable(window.statusBar()->currentMessage()));
        QTRY_VERIFY_WITH_TIMEOUT(!window.isVisible(), 60000);
        QVERIFY(QFileInfo(path).size() > 0);
    }

    // Train again of a run whose data file is gone: "press Start" was said, the load failed with a
    // bare file error, and Start trained on the data loaded before.
    void trainAgainWithItsDataGoneSaysWhatStartWouldTrainOn() {
        QTemporaryDir dir;
        const QString csv = dir.filePath(QStringLiteral("theirs.csv"));
        QVERIFY(write_two_topic_csv(csv, 40));
        MainWindow window(nullptr, scope());
        QVERIFY(show_with_data(window, "csv:" + csv));
        prepare(window, small_model(100), "cpu", 1);
        QVERIFY(window.startTraining());
        QVERIFY(window.controller()->waitForFinished(120000));
        const int id = window.controller()->currentRun()->id;
        window.dataPanel()->load(QStringLiteral("synthetic:200:50"));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QVERIFY(QFile::remove(csv));
        QVERIFY(window.trainAgain(id));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        const QString message = window.messageText();
        QVERIFY2(message.contains(QStringLiteral("Run %1's data (csv:%2) could not be loaded").arg(id).arg(csv)) &&
                     message.contains(QStringLiteral("Start would train on the data loaded now")),
                 qPrintable(message));
    }

    void settingsPersistBetweenLaunches() {
        {
            MainWindow window(nullptr, scope());
            window.devicesPanel()->setConfig(DeviceConfig::parse("cpu:3x256MB"));
            window.close();  // closing saves
        }
        MainWindow again(nullptr, scope());
        QCOMPARE(QString::fromStdString(again.devicesPanel()->config().to_spec()), QStringLiteral("cpu:3x256MB"));
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_ui_main_window.moc"
