// Kept runs in the GUI: a run trained in one session is listed by the next with its epochs, steps
// and status (interrupted when its process died), and follows a run as it trains without
// re-measuring the whole table for every changed cell; names and notes edited in the table reach the
// store; the filter hides other runs; Resume continues a run from its checkpoint to the same
// numbers an uninterrupted run reaches; Train again puts its settings back into the forms; a run
// exports to TensorBoard and opens in it (or the panel says how to install it); and a store that
// cannot be opened is said in the panel while training goes on unrecorded.
#include <QtTest/QtTest>

#include <QAction>
#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMenu>
#include <QPointer>
#include <QProcess>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <memory>

#include "core/data/synthetic.h"
#include "core/export/tensorboard.h"
#include "core/export/keras_file.h"
#include "core/store/recorded_run.h"
#include "core/store/run_store.h"
#include "support/fresh_run_store.h"
#include "ui/main_window.h"
#include "ui/model/model_panel.h"
#include "ui/runs/runs_panel.h"
#include "ui/training/training_panel.h"
#include "ui/training/training_controller.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

std::shared_ptr<const Model> smallModel() {
    return std::make_shared<const Model>(Model::from_json_text(
        "{\"name\": \"small\", \"input_length\": 40, \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 1500, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 12, \"kernel_size\": 5, \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
        "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}",
        "small model"));
}

RunSettings smallRun(int epochs) {
    SyntheticReutersOptions options;
    options.train_samples = 256;
    options.validation_samples = 64;
    options.vocabulary_size = 1500;
    RunSettings settings;
    settings.model = smallModel();
    settings.devices = DeviceConfig::parse("cpu:2");
    settings.config.epochs = epochs;
    settings.config.seed = 11;
    settings.data = std::make_shared<const DatasetSplit>(make_synthetic_reuters(options));
    settings.data_name = QStringLiteral("synthetic 256/64");
    settings.data_spec = QStringLiteral("synthetic:256:64");
    return settings;
}

int rowOf(const RunsPanel& panel, int run_id) {
    for (int row = 0; row < panel.table()->rowCount(); ++row) {
        if (panel.table()->item(row, RunsPanel::RunColumn)->data(Qt::UserRole).toInt() == run_id) return row;
    }
    return -1;
}

// Shows the panel as in the window, wide enough for every column.
bool showPanel(RunsPanel& panel) {
    panel.resize(1400, 300);
    panel.show();
    return QTest::qWaitForWindowExposed(&panel);
}

// Opens the cell's editor as a double-click does; null when none opened.
QLineEdit* openEditor(RunsPanel& panel, int run_id, int column) {
    QTableWidgetItem* cell = panel.table()->item(rowOf(panel, run_id), column);
    panel.table()->setCurrentItem(cell);
    panel.table()->editItem(cell);
    QLineEdit* editor = nullptr;
    for (int tries = 0; editor == nullptr && tries < 100; ++tries) {
        QTest::qWait(10);
        editor = panel.table()->viewport()->findChild<QLineEdit*>();
    }
    return editor;
}

}  // namespace

class TestUiRuns : public QObject {
    Q_OBJECT
    FreshRunStore run_store_;

private slots:
    void init() { run_store_.start(); }
    void runsSurviveARestart();
    void deadProcessShowsInterrupted();
    void namesNotesFilterAndDelete();
    void theTableFollowsARunWithOneNoticePerRefresh();
    void anOpenEditorKeepsItsTextWhileAnotherRunTrains();
    void anEditGoesToItsRunWhenARunAboveIsDeleted();
    void aNoteTheStoreRefusesIsShownNotLost();
    void resumeReachesTheUninterruptedNumbers();
    void aRefusedResumeLeavesEverythingAsItWas();
    void ticksAndSelectionFollowTheirRun();
    void trainAgainFillsTheForms();
    void unusableStoreIsSaidAndTrainingGoesOn();
    void kerasExportAndFineTune();
    void aRunTheStoreCannotKeepIsAWarning();
    void runsBeyondTheListedAreNamed();
    void kerasExportRunsOffTheWindowsThread();
    void exportsAndOpensInTensorBoard();
    void liveTensorBoardFilesWhileTraining();
};

// Stands in for the browser: QDesktopServices hands http URLs to it.
class UrlCatcher : public QObject {
    Q_OBJECT
public:
    QList<QUrl> urls;
public slots:
    void open(const QUrl& url) { urls << url; }
};

void TestUiRuns::runsSurviveARestart() {
    int id = 0;
    {
        TrainingController controller;
        QVERIFY(controller.store() != nullptr);
        id = controller.start(smallRun(2));
        QVERIFY(controller.waitForFinished(60000));
        QVERIFY(controller.run(id)->has_checkpoint);
    }
    TrainingController later;  // the next session
    const RunRecord* record = later.run(id);
    QVERIFY(record != nullptr);
    QVERIFY(record->from_earlier);
    QCOMPARE(record->stored_status, RunStatus::Finished);
    QCOMPARE(record->epochs.size(), std::size_t{2});
    QCOMPARE(record->steps.size(), std::size_t{16});
    QCOMPARE(record->config.batch_size, 32);
    RunsPanel panel(&later);
    QCOMPARE(panel.rowCount(), 1);
    QCOMPARE(panel.statusText(id), QStringLiteral("finished"));
    // The charts open on it as it ended, not "Running" over a bar waiting for its first epoch.
    TrainingPanel charts(&later);
    QCOMPARE(charts.statusText(), QStringLiteral("Finished: 2 epochs"));
    QCOMPARE(charts.progressText(), QStringLiteral("2 of 2 epochs"));
    QCOMPARE(panel.table()->item(0, RunsPanel::NameColumn)->text(), QStringLiteral("Run %1").arg(id));
    QVERIFY(panel.findChild<QLabel*>(QStringLiteral("runsStoreLabel"))->text().contains(run_store_.path()));
}

void TestUiRuns::deadProcessShowsInterrupted() {
    const pid_t child = ::fork();
    if (child == 0) {
        RunStore store(run_store_.path().toStdString());
        RunInfo run;
        run.settings_json = "{}";
        run.model_json = smallModel()->to_json_text();
        const RunInfo begun = store.begin_run(run);
        store.append_steps(begun.id, {StepRow{1, 1, 1, Metrics{3.0, 0.1, 0.2}, 2.0}});
        ::kill(::getpid(), SIGKILL);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    TrainingController controller;
    RunsPanel panel(&controller);
    QCOMPARE(panel.rowCount(), 1);
    QCOMPARE(panel.statusText(1), QStringLiteral("interrupted"));
    TrainingPanel charts(&controller);
    QCOMPARE(charts.statusText(), QStringLiteral("Interrupted before its first epoch finished"));  // no checkpoint: no Resume
    QVERIFY(panel.table()->item(0, RunsPanel::StatusColumn)->toolTip().contains(QStringLiteral("ended without finishing")));
    QCOMPARE(controller.run(1)->steps.size(), std::size_t{1});
}

void TestUiRuns::namesNotesFilterAndDelete() {
    TrainingController controller;
    RunsPanel panel(&controller);
    const int first = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    const int second = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    QCOMPARE(panel.rowCount(), 2);
    // Edited in the table as a person does (the item's text), kept in the store.
    panel.table()->item(rowOf(panel, first), RunsPanel::NameColumn)->setText(QStringLiteral("baseline"));
    panel.table()->item(rowOf(panel, second), RunsPanel::NoteColumn)->setText(QStringLiteral("lr too high?"));
    RunStore store(run_store_.path().toStdString());
    QCOMPARE(store.get(first).name, std::string("baseline"));
    QCOMPARE(store.get(second).note, std::string("lr too high?"));
    panel.filterEdit()->setText(QStringLiteral("BASELINE"));
    QCOMPARE(panel.visibleRowCount(), 1);
    QVERIFY(!panel.table()->isRowHidden(rowOf(panel, first)));
    panel.filterEdit()->clear();
    QCOMPARE(panel.visibleRowCount(), 2);
    const QString folder = QString::fromStdString(store.get(first).folder);
    QVERIFY(QFile::exists(folder + "/last.mlckpt"));
    QString error;
    QVERIFY2(controller.deleteRun(first, &error), qPrintable(error));
    QCOMPARE(panel.rowCount(), 1);
    QVERIFY(!QFile::exists(folder));
    QVERIFY(!store.find(first).has_value());
}

// The table sizes its columns to their contents, so every notice of a changed cell had the view
// measure all the cells' text again: several times at each epoch's end, on the GUI thread that
// shares the cores with the replicas, growing with the square of the runs kept. Each refresh now
// tells the view once, and the columns still fit what they show.
void TestUiRuns::theTableFollowsARunWithOneNoticePerRefresh() {
    TrainingController controller;
    RunsPanel panel(&controller);
    QVERIFY(showPanel(panel));
    QSignalSpy notices(panel.table()->model(), &QAbstractItemModel::dataChanged);
    // The controller's signals that refresh the panel.
    QSignalSpy started(&controller, &TrainingController::runStarted);
    QSignalSpy epochs(&controller, &TrainingController::epochEnded);
    QSignalSpy finished(&controller, &TrainingController::runFinished);
    QSignalSpy states(&controller, &TrainingController::stateChanged);
    QSignalSpy changes(&controller, &TrainingController::runsChanged);
    auto refreshCount = [&] { return started.count() + epochs.count() + finished.count() + states.count() + changes.count(); };
    const int id = controller.start(smallRun(3));
    QVERIFY(controller.waitForFinished(60000));
    QCOMPARE(epochs.count(), 3);  // each shown as it ended
    QVERIFY2(notices.count() <= refreshCount(),
             qPrintable(QStringLiteral("%1 notices for %2 refreshes").arg(notices.count()).arg(refreshCount())));
    const int row = rowOf(panel, id);
    QCOMPARE(panel.table()->item(row, RunsPanel::EpochsColumn)->text(), QStringLiteral("3/3"));
    QCOMPARE(panel.statusText(id), QStringLiteral("finished"));

    const int name_width = panel.table()->columnWidth(RunsPanel::NameColumn);
    const QString long_name = QStringLiteral("Nadam at a tenth of the learning rate, second try");
    notices.clear();
    QString error;
    QVERIFY2(controller.renameRun(id, long_name, &error), qPrintable(error));
    QCOMPARE(notices.count(), 1);
    QCOMPARE(panel.table()->item(row, RunsPanel::NameColumn)->text(), long_name);
    QTRY_VERIFY(panel.table()->columnWidth(RunsPanel::NameColumn) >
                name_width + panel.fontMetrics().horizontalAdvance(QStringLiteral("of the learning rate")));
}

// A person annotates one run while another trains: the refreshes at its epochs' ends, and a
// rename of the annotated run itself, leave the text being typed alone, and it is kept when they
// press Return.
void TestUiRuns::anOpenEditorKeepsItsTextWhileAnotherRunTrains() {
    TrainingController controller;
    RunsPanel panel(&controller);
    QVERIFY(showPanel(panel));
    const int annotated = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    const QPointer<QLineEdit> editor = openEditor(panel, annotated, RunsPanel::NoteColumn);
    QVERIFY(editor);
    const QString typed = QStringLiteral("try half the learning rate");
    QTest::keyClicks(editor, typed);

    QSignalSpy epochs(&controller, &TrainingController::epochEnded);
    const int training = controller.start(smallRun(3));
    QVERIFY(controller.waitForFinished(60000));
    QCOMPARE(epochs.count(), 3);
    QCOMPARE(panel.table()->item(rowOf(panel, training), RunsPanel::EpochsColumn)->text(), QStringLiteral("3/3"));
    QVERIFY2(editor, "the editor was closed while the other run trained");
    QCOMPARE(editor->text(), typed);
    QString error;
    QVERIFY2(controller.renameRun(annotated, QStringLiteral("baseline"), &error), qPrintable(error));
    QCOMPARE(panel.table()->item(rowOf(panel, annotated), RunsPanel::NameColumn)->text(), QStringLiteral("baseline"));
    QVERIFY2(editor, "the editor was closed by the rename");
    QCOMPARE(editor->text(), typed);

    QTest::keyClick(editor, Qt::Key_Return);  // the delegate stores it from the event loop
    QTRY_COMPARE(controller.run(annotated)->note, typed);
    RunStore store(run_store_.path().toStdString());
    QCOMPARE(QString::fromStdString(store.get(annotated).note), typed);
    QCOMPARE(panel.table()->item(rowOf(panel, annotated), RunsPanel::NoteColumn)->text(), typed);
}

// Another MirrorLab holds the store's lock when a note is stored: the cell went back to what the
// store holds and the typed note was gone. The warning shows it, to copy.
void TestUiRuns::aNoteTheStoreRefusesIsShownNotLost() {
    TrainingController controller;
    RunsPanel panel(&controller);
    QVERIFY(showPanel(panel));
    const int id = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    const QPointer<QLineEdit> editor = openEditor(panel, id, RunsPanel::NoteColumn);
    QVERIFY(editor);
    const QString typed = QStringLiteral("a long note about why this run diverged");
    QTest::keyClicks(editor, typed);
    sqlite3* other = nullptr;
    QCOMPARE(sqlite3_open((run_store_.path() + "/runs.sqlite").toUtf8().constData(), &other), SQLITE_OK);
    QCOMPARE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    QString shown;
    QTimer::singleShot(0, [&] {
        std::function<void()> look = [&] {
            auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
            if (!box) {
                QTimer::singleShot(100, look);
                return;
            }
            shown = box->text() + "\n" + box->informativeText();
            box->accept();
        };
        look();
    });
    QTest::keyClick(editor, Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), 30000);
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    QVERIFY2(shown.contains(QStringLiteral("is locked by another MirrorLab")) && shown.contains(typed), qPrintable(shown));
}

// A run deleted above the one being annotated (from elsewhere: another window, the CLI) moves the
// rows: the note typed so far is stored for the run it was typed for, not the row's next run.
void TestUiRuns::anEditGoesToItsRunWhenARunAboveIsDeleted() {
    TrainingController controller;
    RunsPanel panel(&controller);
    QVERIFY(showPanel(panel));
    const int above = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    const int annotated = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    const int below = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    QLineEdit* editor = openEditor(panel, annotated, RunsPanel::NoteColumn);
    QVERIFY(editor != nullptr);
    const QString typed = QStringLiteral("the one with dropout");
    QTest::keyClicks(editor, typed);

    QString error;
    QVERIFY2(controller.deleteRun(above, &error), qPrintable(error));
    QCOMPARE(panel.rowCount(), 2);
    QTRY_COMPARE(controller.run(annotated)->note, typed);
    QCOMPARE(controller.run(below)->note, QString());
    RunStore store(run_store_.path().toStdString());
    QCOMPARE(QString::fromStdString(store.get(annotated).note), typed);
    QCOMPARE(store.get(below).note, std::string());
    QCOMPARE(panel.table()->item(rowOf(panel, annotated), RunsPanel::NoteColumn)->text(), typed);
    QCOMPARE(panel.table()->item(rowOf(panel, below), RunsPanel::NoteColumn)->text(), QString());
}

void TestUiRuns::resumeReachesTheUninterruptedNumbers() {
    TrainingController controller;
    const RunSettings settings = smallRun(3);
    const int straight = controller.start(settings);
    QVERIFY(controller.waitForFinished(60000));
    RunSettings one_epoch = settings;
    one_epoch.config.epochs = 1;
    const int stopped = controller.start(one_epoch);
    QVERIFY(controller.waitForFinished(60000));
    TrainingPanel charts(&controller);
    QString error;
    QCOMPARE(controller.resumeStored(stopped, 3, settings.devices, settings.data, settings.data_name, &error), stopped);
    QVERIFY(controller.waitForFinished(60000));
    const RunRecord* resumed = controller.run(stopped);
    QCOMPARE(resumed->epochs.size(), std::size_t{3});
    // The charts go on from the first epoch: every epoch and step of the run, not only the resumed ones.
    QCOMPARE(charts.validationPointCount(), 3);
    QCOMPARE(charts.trainingPointCount(), static_cast<int>(resumed->steps.size()));
    QCOMPARE(resumed->epochs.back().validation.loss, controller.run(straight)->epochs.back().validation.loss);
    QCOMPARE(resumed->epochs.back().train.accuracy, controller.run(straight)->epochs.back().train.accuracy);
    QCOMPARE(RunStore(run_store_.path().toStdString()).epochs(stopped).size(), std::size_t{3});
    // Another data set: refused with the reason, nothing starts.
    RunSettings other = smallRun(3);
    SyntheticReutersOptions options;
    options.train_samples = 300;
    options.vocabulary_size = 1500;
    other.data = std::make_shared<const DatasetSplit>(make_synthetic_reuters(options));
    QCOMPARE(controller.resumeStored(stopped, 5, settings.devices, other.data, other.data_name, &error), 0);
    QVERIFY2(error.contains(QStringLiteral("was trained on other data")), qPrintable(error));
    QCOMPARE(controller.state(), TrainingController::State::Idle);
}

// A resume the store refuses (another MirrorLab trains the run) says why and changes nothing: the
// run stays listed with its epochs, the last run's weights stay, and asking again says the same.
// Before, the run left the list and the second try asked to "load the data it was trained on ()".
void TestUiRuns::aRefusedResumeLeavesEverythingAsItWas() {
    TrainingController controller;
    const RunSettings settings = smallRun(1);
    const int id = controller.start(settings);
    QVERIFY(controller.waitForFinished(60000));
    const std::vector<float> weights = controller.lastWeights();
    QVERIFY(!weights.empty());
    const std::size_t listed = controller.runs().size();
    RunStore elsewhere(run_store_.path().toStdString());  // another MirrorLab resumes it first
    elsewhere.reopen_run(id, 1, controller.run(id)->steps.back().global_step, 3, "cpu", 1);
    for (int attempt = 0; attempt < 2; ++attempt) {
        QString error;
        QCOMPARE(controller.resumeStored(id, 3, settings.devices, settings.data, settings.data_name, &error), 0);
        QVERIFY2(error.contains(QStringLiteral("still running in another MirrorLab")), qPrintable(error));
        QCOMPARE(controller.state(), TrainingController::State::Idle);
        QCOMPARE(controller.runs().size(), listed);
        QVERIFY(controller.run(id) != nullptr);
        QCOMPARE(controller.run(id)->epochs.size(), std::size_t{1});
        QCOMPARE(controller.currentRun()->id, id);
        QVERIFY(controller.lastWeights() == weights);
    }
    elsewhere.finish_run(id, RunStatus::Finished, "Training finished after 1 epoch.", 1, 1);
    QString error;
    QCOMPARE(controller.resumeStored(id, 2, settings.devices, settings.data, settings.data_name, &error), id);
    QVERIFY(controller.waitForFinished(60000));
    QCOMPARE(controller.runs().size(), listed);
    QCOMPARE(controller.run(id)->epochs.size(), std::size_t{2});
}

// A run's overlay tick and the selection stay with the run when rows move (a run above deleted,
// a run resumed to the end); a deleted run's tick goes with it and the charts are told. Before,
// ticks stayed with row numbers: the deleted run stayed drawn and its tick moved to the next run.
void TestUiRuns::ticksAndSelectionFollowTheirRun() {
    TrainingController controller;
    RunsPanel panel(&controller);
    QSignalSpy overlays(&panel, &RunsPanel::overlayRunsChanged);
    const RunSettings settings = smallRun(1);
    const int first = controller.start(settings);
    QVERIFY(controller.waitForFinished(60000));
    const int second = controller.start(settings);
    QVERIFY(controller.waitForFinished(60000));
    const int third = controller.start(settings);
    QVERIFY(controller.waitForFinished(60000));
    panel.setOverlayChecked(first, true);
    panel.setOverlayChecked(third, true);
    QCOMPARE(panel.overlayRuns(), (QList<int>{first, third}));
    overlays.clear();

    QString error;
    QVERIFY2(controller.deleteRun(first, &error), qPrintable(error));
    QCOMPARE(panel.overlayRuns(), QList<int>{third});
    QCOMPARE(overlays.count(), 1);
    QCOMPARE(overlays.last().first().value<QList<int>>(), QList<int>{third});

    // Resumed, the second run moves to the end of the list; the third keeps its tick, and the
    // selected run stays selected.
    panel.selectRun(third);
    QCOMPARE(controller.resumeStored(second, 2, settings.devices, settings.data, settings.data_name, &error), second);
    QVERIFY(controller.waitForFinished(60000));
    QCOMPARE(panel.overlayRuns(), QList<int>{third});
    QCOMPARE(panel.selectedRunId(), third);
    QVERIFY(panel.table()->item(rowOf(panel, second), RunsPanel::RunColumn)->checkState() == Qt::Unchecked);

    // The selected run deleted: no other run is left selected, one click from deleting it too.
    QVERIFY2(controller.deleteRun(third, &error), qPrintable(error));
    QVERIFY(panel.table()->selectionModel()->selectedRows().isEmpty());
    QVERIFY(panel.overlayRuns().isEmpty());
}

void TestUiRuns::trainAgainFillsTheForms() {
    int id = 0;
    {
        TrainingController controller;
        RunSettings settings = smallRun(1);
        settings.config.batch_size = 48;
        settings.config.optimizer.learning_rate = 0.0025;
        id = controller.start(settings);
        QVERIFY(controller.waitForFinished(60000));
    }
    MainWindow window(nullptr, QStringLiteral("test_ui_runs"));
    QVERIFY(window.trainAgain(id));
    QCOMPARE(window.modelPanel()->trainConfig().batch_size, 48);
    QCOMPARE(window.modelPanel()->trainConfig().optimizer.learning_rate, 0.0025);
    QCOMPARE(window.modelPanel()->model()->input_length(), 40);
    QVERIFY(window.messageText().contains(QStringLiteral("press Start to train it again")));
    QVERIFY(!window.trainAgain(999));
    QVERIFY(window.messageText().contains(QStringLiteral("there is no run 999")));
    QVERIFY(!window.resumeRun(999));
    QVERIFY2(window.messageText().contains(QStringLiteral("not in the Runs panel")), qPrintable(window.messageText()));
}

void TestUiRuns::unusableStoreIsSaidAndTrainingGoesOn() {
    QTemporaryDir dir;
    const QString file = dir.path() + "/not-a-folder";
    QFile blocker(file);
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    qputenv("MIRRORLAB_DATA_DIR", file.toUtf8());
    TrainingController controller;
    QVERIFY(controller.store() == nullptr);
    QVERIFY2(controller.storeProblem().contains(QStringLiteral("Runs are not kept")) && controller.storeProblem().contains(file),
             qPrintable(controller.storeProblem()));
    RunsPanel panel(&controller);
    QCOMPARE(panel.findChild<QLabel*>(QStringLiteral("runsStoreLabel"))->text(), controller.storeProblem());
    const int id = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    QVERIFY(controller.run(id)->finished.has_value());
    QVERIFY(!controller.run(id)->stored);
}

void TestUiRuns::exportsAndOpensInTensorBoard() {
    TrainingController controller;
    RunsPanel panel(&controller);
    const int id = controller.start(smallRun(2));
    QVERIFY(controller.waitForFinished(60000));
    panel.selectRun(id);
    QAction* export_action = nullptr;
    QAction* open_action = nullptr;
    for (QAction* action : panel.findChild<QToolButton*>(QStringLiteral("runsExportButton"))->menu()->actions()) {
        if (action->text() == QStringLiteral("Export to TensorBoard…")) export_action = action;
        if (action->text() == QStringLiteral("Open in TensorBoard")) open_action = action;
    }
    QVERIFY(export_action != nullptr && open_action != nullptr);
    QVERIFY(export_action->isEnabled() && open_action->isEnabled());

    QTemporaryDir logs;
    QString error;
    QVERIFY2(panel.exportTensorBoard(id, logs.path(), &error), qPrintable(error));
    for (const char* sub : {"train", "validation"}) {
        const QStringList files = QDir(logs.path() + "/" + sub).entryList({QStringLiteral("events.out.tfevents.*.v2")});
        QCOMPARE(files.size(), 1);
        const auto events = read_tensorboard_events((logs.path() + "/" + sub + "/" + files.front()).toStdString());
        QCOMPARE(events.front().file_version, std::string("brain.Event:2"));
        QCOMPARE(events.back().values.front().tag,
                 std::string(sub) == "train" ? "epoch_learning_rate" : "epoch_sparse_top_k_categorical_accuracy");
        QCOMPARE(events.back().step, std::int64_t{1});
    }
    QVERIFY(!panel.exportTensorBoard(id + 100, logs.path(), &error));
    QVERIFY2(error.contains(QString::number(id + 100)), qPrintable(error));

    // No tensorboard on PATH: the run is exported beside it, and the panel says how to install it.
    const QByteArray path = qgetenv("PATH");
    QTemporaryDir bin;
    qputenv("PATH", bin.path().toUtf8());
    QString message;
    QVERIFY(!panel.openInTensorBoard(id, &message));
    QVERIFY2(message.contains(QStringLiteral("pip install tensorboard")) && message.contains(panel.tensorBoardFolder(id)),
             qPrintable(message));
    QVERIFY(QDir(panel.tensorBoardFolder(id) + "/train").exists());

    // A tensorboard on PATH: started on the run's folder; the browser opens at the URL it prints.
    QFile fake(bin.path() + "/tensorboard");
    QVERIFY(fake.open(QIODevice::WriteOnly));
    fake.write("#!/bin/sh\necho \"$@\" > \"${0%/*}/arguments\"\n"  // PATH holds only this folder: no dirname
               "echo 'TensorBoard 2.21.0 at http://localhost:6123/ (Press CTRL+C to quit)' >&2\nexec /bin/sleep 30\n");
    fake.close();
    fake.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    UrlCatcher browser;
    QDesktopServices::setUrlHandler(QStringLiteral("http"), &browser, "open");
    const bool opened = panel.openInTensorBoard(id, &message);
    qputenv("PATH", path);
    QVERIFY2(opened, qPrintable(message));
    QTRY_COMPARE_WITH_TIMEOUT(browser.urls.size(), 1, 10000);
    QCOMPARE(browser.urls.front(), QUrl(QStringLiteral("http://localhost:6123/")));
    QFile arguments(bin.path() + "/arguments");
    QVERIFY(arguments.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(arguments.readAll()).trimmed(), QStringLiteral("--logdir ") + panel.tensorBoardFolder(id));
    QDesktopServices::unsetUrlHandler(QStringLiteral("http"));
    QVERIFY(panel.tensorBoardProcess() != nullptr);
    QCOMPARE(panel.tensorBoardProcess()->state(), QProcess::Running);  // TensorBoard keeps serving
    panel.tensorBoardProcess()->kill();
    panel.tensorBoardProcess()->waitForFinished(5000);
}

// The GUI's option per run: a kept run writes TensorBoard event files as it trains (in its folder),
// with the epochs' values; switched off, it writes none.
void TestUiRuns::liveTensorBoardFilesWhileTraining() {
    TrainingController controller;
    QVERIFY(controller.liveTensorBoard());
    const int id = controller.start(smallRun(2));
    QVERIFY(controller.waitForFinished(60000));
    const QString folder = controller.liveTensorBoardFolder(id);
    QVERIFY2(!folder.isEmpty(), "no live event files");
    const QStringList files = QDir(folder + "/train").entryList({QStringLiteral("events.out.tfevents.*")}, QDir::Files);
    QCOMPARE(files.size(), 1);
    std::vector<double> losses;
    for (const TensorBoardEvent& event : read_tensorboard_events((folder + "/train/" + files.front()).toStdString())) {
        for (const TensorBoardValue& value : event.values) {
            if (value.tag == "epoch_loss") losses.push_back(value.value);
        }
    }
    const RunRecord* record = controller.run(id);
    QCOMPARE(losses.size(), std::size_t{2});
    QCOMPARE(static_cast<float>(losses[1]), static_cast<float>(record->epochs[1].train.loss));
    controller.setLiveTensorBoard(false);
    const int quiet = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    QVERIFY(controller.liveTensorBoardFolder(quiet).isEmpty());
}

QTEST_MAIN(TestUiRuns)
// Runs -> Export -> "Export as Keras model…" writes the run's last checkpoint; a run started from
// those weights (what the model form's Load of a .keras file hands the next run) begins where the
// first ended: with a learning rate too small to move a float32 weight, its validation loss is the
// first run's.
void TestUiRuns::kerasExportAndFineTune() {
    TrainingController controller;
    RunsPanel panel(&controller);
    const int first = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("run.keras"));
    QString error;
    QVERIFY2(panel.exportKeras(first, path, &error), qPrintable(error));
    const KerasModel imported = load_keras_file(path.toStdString());
    const Checkpoint checkpoint = load_checkpoint(checkpoint_path_of(controller.store()->get(first)));
    QCOMPARE(imported.weights, checkpoint.state.weights);
    QVERIFY(!panel.exportKeras(first + 100, path, &error));
    QVERIFY2(error.contains(QStringLiteral("Keras")), qPrintable(error));

    RunSettings again = smallRun(1);
    again.initial_weights = imported.weights;
    again.config.optimizer.learning_rate = 1e-30;
    const int second = controller.start(again);
    QVERIFY(controller.waitForFinished(60000));
    const double before = controller.run(first)->epochs.back().validation.loss;
    const double after = controller.run(second)->epochs.back().validation.loss;
    QVERIFY2(std::abs(before - after) < 1e-6, qPrintable(QStringLiteral("%1 vs %2").arg(before).arg(after)));
}

// The menu's export writes on a thread of its own (a 50-million-parameter model's archive takes
// seconds, and the window froze for them): the panel says it is exporting and offers neither a
// second export nor deleting the run until it is written; then it says where the file went, or
// why it could not be written.
void TestUiRuns::kerasExportRunsOffTheWindowsThread() {
    TrainingController controller;
    RunsPanel panel(&controller);
    const int id = controller.start(smallRun(1));
    QVERIFY(controller.waitForFinished(60000));
    panel.refresh();
    panel.selectRun(id);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("run.keras"));
    QString error;
    QVERIFY2(panel.startKerasExport(id, path, &error), qPrintable(error));
    QVERIFY(panel.exportJob()->isRunning());  // started, not done: the call returned at once
    QVERIFY2(panel.exportStatus().startsWith(QStringLiteral("Exporting run %1").arg(id)), qPrintable(panel.exportStatus()));
    auto* export_button = panel.findChild<QToolButton*>(QStringLiteral("runsExportButton"));
    for (QAction* action : export_button->menu()->actions()) {
        if (action->text().contains(QStringLiteral("Keras"))) QVERIFY(!action->isEnabled());
    }
    QVERIFY(!panel.startKerasExport(id, dir.filePath(QStringLiteral("second.keras")), &error));
    QVERIFY2(error.contains(QStringLiteral("another export")), qPrintable(error));
    QVERIFY(panel.exportJob()->waitForFinished(60000));
    QCOMPARE(panel.exportStatus(), QStringLiteral("Exported run %1 to %2").arg(id).arg(QDir::toNativeSeparators(path)));
    const Checkpoint checkpoint = load_checkpoint(checkpoint_path_of(controller.store()->get(id)));
    QCOMPARE(load_keras_file(path.toStdString()).weights, checkpoint.state.weights);
    for (QAction* action : export_button->menu()->actions()) {
        if (action->text().contains(QStringLiteral("Keras"))) QVERIFY(action->isEnabled());
    }

    // A folder that is not there: said in the panel, which exports again afterwards.
    QVERIFY(panel.startKerasExport(id, dir.filePath(QStringLiteral("missing/run.keras")), &error));
    QVERIFY(panel.exportJob()->waitForFinished(60000));
    QVERIFY2(panel.exportStatus().contains(QStringLiteral("Cannot export run %1 as a Keras model").arg(id)) &&
                 panel.exportStatus().contains(QStringLiteral("missing")),
             qPrintable(panel.exportStatus()));
    QVERIFY(panel.startKerasExport(id, path, &error));
    QVERIFY(panel.exportJob()->waitForFinished(60000));
    QVERIFY(panel.exportStatus().startsWith(QStringLiteral("Exported")));
}

// A run the store cannot keep (another MirrorLab holds its lock) was said in the log alone: it now
// raises a warning the window shows above the charts.
void TestUiRuns::aRunTheStoreCannotKeepIsAWarning() {
    TrainingController controller;
    QVERIFY(controller.store() != nullptr);
    QList<WarningEvent> warnings;
    connect(&controller, &TrainingController::warningRaised, &controller, [&](const WarningEvent& event) { warnings.append(event); });
    sqlite3* other = nullptr;
    QCOMPARE(sqlite3_open((run_store_.path() + "/runs.sqlite").toUtf8().constData(), &other), SQLITE_OK);
    QCOMPARE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    controller.start(smallRun(1));
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    QVERIFY(controller.waitForFinished(60000));
    controller.drainEvents();
    const auto said = std::find_if(warnings.begin(), warnings.end(), [](const WarningEvent& w) { return w.code == "run_store"; });
    QVERIFY2(said != warnings.end(), "no run_store warning");
    QVERIFY2(QString::fromStdString(said->text).contains(QStringLiteral("This run is not kept")) &&
                 QString::fromStdString(said->text).contains(QStringLiteral("is locked by another MirrorLab")),
             said->text.c_str());
}

// Only the 200 most recent stored runs are listed: older ones were out of sight without a word.
void TestUiRuns::runsBeyondTheListedAreNamed() {
    {
        RunStore store(run_store_.path().toStdString());
        RunInfo run;
        run.settings_json = run.model_json = "{}";
        for (int i = 0; i < TrainingController::storedRunsListed() + 3; ++i)
            store.finish_run(store.begin_run(run).id, RunStatus::Finished, "done", 1, 1);
    }
    TrainingController controller;
    RunsPanel panel(&controller);
    QCOMPARE(panel.rowCount(), TrainingController::storedRunsListed());
    const QLabel* label = panel.findChild<QLabel*>(QStringLiteral("runsStoreLabel"));
    QVERIFY2(label->text().endsWith(QStringLiteral(" (200 of 203 listed)")), qPrintable(label->text()));
    QVERIFY2(label->toolTip().contains(QStringLiteral("The 200 most recent of the store's 203 runs are listed here")) &&
                 label->toolTip().contains(QStringLiteral("mirrorlab-cli runs --store")),
             qPrintable(label->toolTip()));
}

#include "test_ui_runs.moc"
