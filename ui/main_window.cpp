#include "ui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTableWidget>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <memory>

#include "core/data/source.h"
#include "core/util/error.h"

#include "ui/common/column_scroll_area.h"
#include "ui/common/focus_order.h"
#include "ui/common/window_geometry.h"
#include "ui/data/data_panel.h"
#include "ui/devices/devices_panel.h"
#include "ui/inspect/class_report_view.h"
#include "ui/inspect/try_it_panel.h"
#include "ui/model/model_panel.h"
#include "ui/runs/runs_panel.h"
#include "ui/teaching/scaling_panel.h"
#include "ui/teaching/step_view.h"
#include "ui/teaching/timeline_view.h"
#include "ui/training/log_panel.h"
#include "ui/training/monitor_panel.h"
#include "ui/training/training_panel.h"
#include "ui/training/workers_dialog.h"

namespace mirrorlab::ui {

namespace {
// Scrolled panels sit in a scroll area, so a short or narrow dock scrolls them instead of squeezing
// them below their minimum (where Qt's layouts overlap widgets) or forcing the whole window to
// grow past the screen. Vertical: the panel wraps to any width and only scrolls up and down.
enum class Scroll { None, Vertical, Both };

QDockWidget* add_dock(QMainWindow* window, QWidget* panel, const QString& title, const QString& object_name,
                      Qt::DockWidgetArea area, Scroll scrolled = Scroll::None) {
    auto* dock = new QDockWidget(title, window);
    dock->setObjectName(object_name);  // saveState() needs stable names
    if (scrolled == Scroll::Vertical) {
        auto* scroll = new ColumnScrollArea(dock);
        scroll->setObjectName(object_name + QStringLiteral("Scroll"));
        scroll->setFocusPolicy(Qt::NoFocus);  // a frame around the panel, not a stop for Tab
        scroll->setPanel(panel);
        dock->setWidget(scroll);
    } else if (scrolled == Scroll::Both) {
        auto* scroll = new QScrollArea(dock);
        scroll->setObjectName(object_name + QStringLiteral("Scroll"));
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        scroll->setFocusPolicy(Qt::NoFocus);
        scroll->setWidget(panel);
        dock->setWidget(scroll);
    } else {
        dock->setWidget(panel);
    }
    window->addDockWidget(area, dock);
    return dock;
}

// "Start training (F5)": the shortcut in the tooltip, as menus show it beside the text.
QString with_shortcut(const QString& tip, const QKeySequence& shortcut) {
    return shortcut.isEmpty() ? tip : QStringLiteral("%1 (%2)").arg(tip, shortcut.toString(QKeySequence::NativeText));
}
}  // namespace

MainWindow::MainWindow(QWidget* parent, const QString& settings_scope)
    : QMainWindow(parent), settings_scope_(settings_scope) {
    setWindowTitle(tr("MirrorLab — mirrored training"));
    controller_ = new TrainingController(this);
    confirm_close_ = [this](const QString& question) {
        return QMessageBox::question(this, tr("Stop training?"), question, QMessageBox::Yes | QMessageBox::Cancel,
                                     QMessageBox::Cancel) == QMessageBox::Yes;
    };

    buildCentral();

    devices_ = new DevicesPanel(controller_->registry(), this);
    model_ = new ModelPanel(this);
    data_ = new DataPanel(this);
    monitor_ = new MonitorPanel(controller_, this);
    runs_ = new RunsPanel(controller_, this);
    log_ = new LogPanel(controller_, this);
    step_view_ = new StepView(controller_, this);
    timeline_ = new TimelineView(controller_, this);
    scaling_ = new ScalingPanel(controller_->registry(), this);

    buildDocks();

    buildActions();
    new VisualTabOrder(this);

    connect(runs_, &RunsPanel::overlayRunsChanged, training_, &TrainingPanel::setOverlayRuns);
    runs_->setTrainingPanel(training_);
    scaling_->setSetupProvider([this](QString* why) { return scalingSetup(why); });
    connectPanels();

    restoreSettings();
    model_->setReplicaCount(std::max(devices_->replicaCount(), 1));
    scaling_->setMaxReplicas(std::max(devices_->replicaCount(), 2));
    if (!data_->dataset()) data_->loadLastUsed();
    updateActions();
    statusBar()->showMessage(tr("Ready"));
}

// The charts in the middle, with the message bar above them.
void MainWindow::buildCentral() {
    auto* central = new QWidget(this);
    auto* central_layout = new QVBoxLayout(central);
    central_layout->setContentsMargins(4, 4, 4, 4);
    message_ = new QLabel(central);
    message_->setObjectName(QStringLiteral("messageBar"));
    message_->setWordWrap(true);
    message_->setVisible(false);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    central_layout->addWidget(message_);
    training_ = new TrainingPanel(controller_, central);
    central_layout->addWidget(training_, 1);
    // Messages and banners come and go above the charts: on a short screen the charts scroll
    // rather than push the window's minimum height past the screen.
    auto* central_scroll = new ColumnScrollArea(this);
    central_scroll->setObjectName(QStringLiteral("centralScroll"));
    central_scroll->setFocusPolicy(Qt::NoFocus);
    central_scroll->setPanel(central);
    setCentralWidget(central_scroll);
}

void MainWindow::buildDocks() {
    // The side docks run the window's full height; the bottom strip sits under the charts only.
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    QDockWidget* devices_dock = add_dock(this, devices_, tr("Devices"), QStringLiteral("devicesDock"), Qt::LeftDockWidgetArea);
    QDockWidget* model_dock = add_dock(this, model_, tr("Model"), QStringLiteral("modelDock"), Qt::LeftDockWidgetArea);
    QDockWidget* data_dock = add_dock(this, data_, tr("Data"), QStringLiteral("dataDock"), Qt::LeftDockWidgetArea);
    tabifyDockWidget(devices_dock, model_dock);
    tabifyDockWidget(model_dock, data_dock);
    // Asking the trained model: a newswire's topics, and the validation split topic by topic. They
    // sit beside the set-up forms, which a finished run no longer needs: the left column runs the
    // window's full height (room for the report's table and confusion matrix), and the strip under
    // the charts keeps its five tabs readable on a 1366x768 laptop.
    QDockWidget* try_it_dock = add_dock(this, new TryItPanel(controller_, this), tr("Try it"), QStringLiteral("tryItDock"),
                                        Qt::LeftDockWidgetArea, Scroll::Both);
    QDockWidget* report_dock = add_dock(this, new ClassReportView(controller_, this), tr("Per-class report"),
                                        QStringLiteral("classReportDock"), Qt::LeftDockWidgetArea, Scroll::Both);
    tabifyDockWidget(data_dock, try_it_dock);
    tabifyDockWidget(try_it_dock, report_dock);
    devices_dock->raise();
    add_dock(this, monitor_, tr("Device monitor"), QStringLiteral("monitorDock"), Qt::RightDockWidgetArea, Scroll::Vertical);
    QDockWidget* log_dock = add_dock(this, log_, tr("Log"), QStringLiteral("logDock"), Qt::BottomDockWidgetArea);
    QDockWidget* runs_dock = add_dock(this, runs_, tr("Runs"), QStringLiteral("runsDock"), Qt::BottomDockWidgetArea);
    tabifyDockWidget(log_dock, runs_dock);
    // Seeing data parallelism: the step, the per-replica timeline and the scaling experiment.
    QDockWidget* step_dock =
        add_dock(this, step_view_, tr("Step view"), QStringLiteral("stepViewDock"), Qt::BottomDockWidgetArea, Scroll::Vertical);
    QDockWidget* timeline_dock = add_dock(this, timeline_, tr("Timeline"), QStringLiteral("timelineDock"), Qt::BottomDockWidgetArea);
    QDockWidget* scaling_dock =
        add_dock(this, scaling_, tr("Scaling"), QStringLiteral("scalingDock"), Qt::BottomDockWidgetArea, Scroll::Both);
    tabifyDockWidget(runs_dock, step_dock);
    tabifyDockWidget(step_dock, timeline_dock);
    tabifyDockWidget(timeline_dock, scaling_dock);
    log_dock->raise();
}

// What the scaling experiment runs: the Devices, Model and Data panels' settings, or why not now.
std::optional<ScalingSetup> MainWindow::scalingSetup(QString* why) const {
    if (const QString blocker = startBlocker(); !blocker.isEmpty()) {
        *why = blocker;
        return std::nullopt;
    }
    if (controller_->state() != TrainingController::State::Idle) {
        *why = tr("A training run is in progress: stop it first, so that the two do not share the machine.");
        return std::nullopt;
    }
    ScalingSetup setup;
    setup.model = *model_->model();
    setup.devices = devices_->config();
    setup.config = model_->trainConfig();
    setup.config.all_reduce = devices_->allReduce();
    try {
        setup.data = make_train_data(*data_->dataset(), setup.model.input_length(), setup.model.vocabulary_size(),
                                     OovPolicy::MapToOov);
    } catch (const Error& error) {
        *why = QString::fromStdString(error.what());
        return std::nullopt;
    }
    return setup;
}

// The panels' changes reach the others and the actions; the engine's end of a run, the window.
void MainWindow::connectPanels() {
    // Queued: the export's failure box (shown as it ends) is up before this decides.
    connect(
        runs_->exportJob(), &BackgroundJob::runningChanged, this,
        [this](bool exporting) {
            if (exporting || !close_when_exported_) return;
            close_when_exported_ = false;
            // A failed export is said in its box and the Runs panel: the window stays for it.
            if (runs_->lastExportFailed()) {
                statusBar()->showMessage(tr("The export failed, so MirrorLab stays open; close it again when you have read why."));
                return;
            }
            close();
        },
        Qt::QueuedConnection);
    connect(runs_, &RunsPanel::trainAgainRequested, this, &MainWindow::trainAgain);
    connect(runs_, &RunsPanel::resumeRequested, this, &MainWindow::resumeRun);
    connect(devices_, &DevicesPanel::configChanged, this, [this] {
        model_->setReplicaCount(std::max(devices_->replicaCount(), 1));
        scaling_->setMaxReplicas(std::max(devices_->replicaCount(), 2));
        updateActions();
    });
    connect(model_, &ModelPanel::modelChanged, this, &MainWindow::updateActions);
    connect(data_, &DataPanel::datasetChanged, this, [this] {
        model_->setTrainingSamples(static_cast<std::int64_t>(data_->dataset()->train.size()));
        updateActions();
    });
    connect(data_, &DataPanel::loadFailed, this, [this](const QString& error) {
        const auto [run_id, spec] = std::exchange(train_again_load_, {0, QString()});
        if (run_id != 0 && spec == data_->failedSpec()) {
            // "Press Start" was said, and Start would train on the data loaded before: say what failed.
            showMessage(tr("Run %1's data (%2) could not be loaded: %3. The forms hold its model, settings and devices, but Start "
                           "would train on the data loaded now (%4); load the run's data in the Data panel first.")
                            .arg(run_id)
                            .arg(spec, error, data_->dataset() ? data_->dataName() : tr("none")),
                        true);
            return;
        }
        showMessage(error, true);
    });
    connect(data_, &DataPanel::datasetChanged, this, [this] { train_again_load_ = {0, QString()}; });
    connect(data_, &DataPanel::loadingChanged, this, &MainWindow::updateActions);
    connect(scaling_, &ScalingPanel::runningChanged, this, &MainWindow::updateActions);
    connect(controller_, &TrainingController::stateChanged, this, &MainWindow::updateActions);
    connect(controller_, &TrainingController::warningRaised, this, [this](const WarningEvent& event) {
        // What keeps the run (its store rows, its checkpoints) failing is said where it is seen.
        if (event.code == "run_store_recovered") showMessage(QString::fromStdString(event.text), false);
        if (event.code == "run_store" || event.code == "checkpoint") showMessage(QString::fromStdString(event.text), true);
    });
    connect(controller_, &TrainingController::runFailed, this, [this](const FailedEvent& event) {
        showMessage(tr("Training failed: %1").arg(QString::fromStdString(event.reason)), true);
    });
    connect(controller_, &TrainingController::runFinished, this, [this](const FinishedEvent& event) {
        statusBar()->showMessage(TrainingPanel::finishedSummary(event), 10000);  // in the interface's language
    });
}

MainWindow::~MainWindow() = default;

void MainWindow::buildActions() {
    // The debugger's keys: F5 runs, Shift+F5 stops, F10 steps; F6 pauses and resumes.
    start_ = new QAction(tr("Start"), this);
    start_->setObjectName(QStringLiteral("startAction"));
    start_->setShortcut(QKeySequence(Qt::Key_F5));
    connect(start_, &QAction::triggered, this, [this] { startTraining(); });
    pause_ = new QAction(tr("Pause"), this);
    pause_->setObjectName(QStringLiteral("pauseAction"));
    pause_->setShortcut(QKeySequence(Qt::Key_F6));
    connect(pause_, &QAction::triggered, this, [this] {
        if (controller_->state() == TrainingController::State::Paused) {
            controller_->resume();
        } else if (controller_->state() == TrainingController::State::Running) {
            controller_->pause();
        }
    });
    stop_ = new QAction(tr("Stop"), this);
    stop_->setObjectName(QStringLiteral("stopAction"));
    stop_->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F5));
    connect(stop_, &QAction::triggered, controller_, &TrainingController::stop);
    next_step_ = new QAction(tr("Next step"), this);
    next_step_->setObjectName(QStringLiteral("nextStepAction"));
    next_step_->setShortcut(QKeySequence(Qt::Key_F10));
    next_step_->setToolTip(with_shortcut(tr("Run exactly one more training step, then wait (slow motion)"), next_step_->shortcut()));
    connect(next_step_, &QAction::triggered, step_view_, &StepView::nextStep);

    QToolBar* toolbar = addToolBar(tr("Training"));
    toolbar->setObjectName(QStringLiteral("trainingToolbar"));
    toolbar->addAction(start_);
    toolbar->addAction(pause_);
    toolbar->addAction(stop_);
    toolbar->addAction(next_step_);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("Export history as CSV…"), this, [this] {
        // The run the charts show (a deleted one's curves are gone, and the run before it is not
        // what the person sees).
        const int run_id = training_->runId();
        if (run_id == 0 || controller_->run(run_id) == nullptr) {
            showMessage(tr("The charts show no run to export; train one, or choose a run in the Runs panel and export it there."), true);
            return;
        }
        const QString path = QFileDialog::getSaveFileName(this, tr("Export history"), QStringLiteral("history.csv"), tr("CSV files (*.csv)"));
        QString error;
        if (!path.isEmpty() && !runs_->exportCsv(run_id, path, &error)) showMessage(error, true);
    });
    file->addAction(tr("Export charts as PNG…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export charts"), QStringLiteral("charts.png"), tr("PNG images (*.png)"));
        QString error;
        if (!path.isEmpty() && !runs_->exportChartsPng(path, &error)) showMessage(error, true);
    });
    file->addSeparator();
    addFollowAction(file);
    file->addSeparator();
    QAction* quit = file->addAction(tr("Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* training = menuBar()->addMenu(tr("&Training"));
    training->addAction(start_);
    training->addAction(pause_);
    training->addAction(stop_);
    addWorkersAction(training);
    training->addSeparator();
    training->addAction(next_step_);
    training->addSeparator();
    live_tensorboard_ = training->addAction(tr("Write TensorBoard event files"));
    live_tensorboard_->setCheckable(true);
    live_tensorboard_->setChecked(controller_->liveTensorBoard());
    live_tensorboard_->setToolTip(tr("Kept runs also write TensorBoard event files while they train (in the run's folder, "
                                     "as Keras' TensorBoard callback does), so Runs → Export → Open in TensorBoard follows them live"));
    connect(live_tensorboard_, &QAction::toggled, this, [this](bool on) { controller_->setLiveTensorBoard(on); });

    buildViewMenu();
    for (QMenu* menu : {file, training}) menu->setToolTipsVisible(true);
}

bool MainWindow::followRun(const QString& path) {
    QString error;
    if (controller_->follow(path, &error) != 0) return true;
    showMessage(error, true);
    return false;
}

// A run of another process, followed from the file its events go to.
void MainWindow::addFollowAction(QMenu* file) {
    QAction* follow = file->addAction(tr("Follow a run in another process…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Follow a run"), QString(),
                                                          tr("Training events (*.jsonl *.json *.log);;All files (*)"));
        if (!path.isEmpty()) followRun(path);
    });
    follow->setObjectName(QStringLiteral("followAction"));
    follow->setToolTip(tr("Show a run of mirrorlab-cli live, from the file its `train --json` output goes to: "
                          "mpirun -np 2 mirrorlab-cli train --json … > job.jsonl"));
}

// The forms' run on several workers started with mpirun, shown here live.
void MainWindow::addWorkersAction(QMenu* training) {
    QAction* on_workers = training->addAction(tr("Train on several workers (MPI)…"), this, [this] {
        const QString data_spec = data_->loadedSpec();
        WorkersDialog dialog(QString::fromStdString(devices_->config().to_spec()),
                             data_spec.isEmpty() ? QStringLiteral("—") : data_spec, this);
        QSettings settings(QStringLiteral("MirrorLab"), settings_scope_);
        dialog.setWorkers(settings.value(QStringLiteral("workers/count"), 2).toInt());
        dialog.setHosts(settings.value(QStringLiteral("workers/hosts")).toString());
        if (dialog.exec() != QDialog::Accepted) return;
        settings.setValue(QStringLiteral("workers/count"), dialog.workers());
        settings.setValue(QStringLiteral("workers/hosts"), dialog.hosts());
        trainOnWorkers(dialog.workers(), dialog.hosts());
    });
    on_workers->setObjectName(QStringLiteral("trainOnWorkersAction"));
    on_workers->setToolTip(tr("MultiWorkerMirroredStrategy: the same model, data and settings trained by several "
                              "mirrorlab-cli processes started with mpirun, shown here live"));
}

// "Open" entries bring a panel forward (shown, its tab raised, the keyboard in it), in the order the
// panels sit: left, right, bottom; Ctrl+1 ... Ctrl+9 for the nine that had them before Try it and the
// Per-class report joined the left column (keys people have learnt stay). The checkable entries
// below show and hide them.
void MainWindow::buildViewMenu() {
    QMenu* view = menuBar()->addMenu(tr("&View"));
    const struct {
        const char* dock;
        int digit;  // Ctrl+digit, 0: no key
    } order[] = {{"devicesDock", 1},  {"modelDock", 2}, {"dataDock", 3},     {"tryItDock", 0},
                 {"classReportDock", 0}, {"monitorDock", 4}, {"logDock", 5},    {"runsDock", 6},
                 {"stepViewDock", 7}, {"timelineDock", 8}, {"scalingDock", 9}};
    for (const auto& entry : order) {
        const QString name = QLatin1String(entry.dock);
        auto* dock = findChild<QDockWidget*>(name);
        if (dock == nullptr) continue;
        QAction* open = view->addAction(tr("Open %1").arg(dock->windowTitle()), this, [this, dock] {
            dock->show();
            dock->raise();
            // The keyboard goes to the panel's first control, as Tab would reach it.
            for (QWidget* control : visualFocusOrder(this)) {
                if (dock->isAncestorOf(control)) {
                    control->setFocus(Qt::ShortcutFocusReason);
                    return;
                }
            }
            dock->widget()->setFocus(Qt::ShortcutFocusReason);
        });
        open->setObjectName(name + QStringLiteral("Open"));
        if (entry.digit > 0) open->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_0 + entry.digit)));
        open->setToolTip(with_shortcut(tr("Show the %1 panel and move the keyboard focus into it").arg(dock->windowTitle()),
                                       open->shortcut()));
    }
    view->addSeparator();
    QMenu* panels = view->addMenu(tr("Show or hide panels"));
    for (QDockWidget* dock : findChildren<QDockWidget*>()) panels->addAction(dock->toggleViewAction());
    for (QMenu* menu : {view, panels}) menu->setToolTipsVisible(true);
}

QString MainWindow::startBlocker() const {
    if (const QString error = devices_->validationError(); !error.isEmpty()) return tr("Devices: %1").arg(error);
    if (const QString error = model_->modelError(); !error.isEmpty()) return tr("Model: %1").arg(error);
    if (data_->isLoading()) return tr("The data is still loading.");
    // The two would share the cores: the experiment's timings and the run's would both be wrong.
    if (scaling_->running()) return tr("A scaling experiment is running: wait for it, or cancel it in the Scaling panel.");
    if (!data_->dataset()) {
        return data_->lastError().isEmpty() ? tr("No data loaded; choose a source in the Data panel and press Load.")
                                            : tr("Data: %1").arg(data_->lastError());
    }
    return {};
}

bool MainWindow::startTraining(int epochs_override) {
    if (const QString blocker = startBlocker(); !blocker.isEmpty()) {
        showMessage(blocker, true);
        return false;
    }
    message_->setVisible(false);
    controller_->start(runSettings(epochs_override));
    return true;
}

RunSettings MainWindow::runSettings(int epochs_override) const {
    RunSettings settings;
    settings.model = model_->model();
    settings.initial_weights = model_->initialWeights();
    settings.devices = devices_->config();
    settings.config = model_->trainConfig();
    settings.config.all_reduce = devices_->allReduce();
    settings.config.detailed_step_stats = true;  // gradient norms and checksums for the step view
    settings.config.detailed_step_stats_interval_ms = kDetailedStepStatsIntervalMs;
    if (epochs_override > 0) settings.config.epochs = epochs_override;
    settings.data = data_->dataset();
    settings.data_name = data_->dataName();
    settings.data_spec = data_->loadedSpec();  // what the run trains on, whatever the form shows since
    return settings;
}

bool MainWindow::trainOnWorkers(int workers, const QString& hosts) {
    if (const QString blocker = startBlocker(); !blocker.isEmpty()) {
        showMessage(blocker, true);
        return false;
    }
    QString error;
    if (controller_->launchWorkers(runSettings(), workers, &error, hosts) == 0) {
        showMessage(error, true);
        return false;
    }
    message_->setVisible(false);
    return true;
}

bool MainWindow::trainAgain(int run_id) {
    QString error;
    const std::optional<StoredSettings> stored = controller_->storedSettings(run_id, &error);
    if (!stored) {
        showMessage(tr("Run %1 cannot be trained again: %2").arg(run_id).arg(error), true);
        return false;
    }
    model_->setModel(*stored->model);
    model_->setTrainConfig(stored->config);
    devices_->setConfig(stored->devices);
    devices_->setAllReduce(stored->config.all_reduce);
    if (!stored->data_spec.isEmpty() && stored->data_spec != data_->loadedSpec()) {
        train_again_load_ = {run_id, stored->data_spec};
        data_->load(stored->data_spec);
    }
    showMessage(tr("Run %1's model, settings, devices and data are in the forms; press Start to train it again.").arg(run_id), false);
    return true;
}

bool MainWindow::resumeRun(int run_id) {
    const RunRecord* record = controller_->run(run_id);
    if (record == nullptr) {
        showMessage(tr("Run %1 cannot be resumed: it is not in the Runs panel (deleted, or kept by another store).").arg(run_id), true);
        return false;
    }
    if (data_->dataset() == nullptr) {
        showMessage(tr("Run %1 cannot be resumed: load the data it was trained on (%2) first.").arg(run_id).arg(record->data_name), true);
        return false;
    }
    if (scaling_->running()) {
        showMessage(tr("Run %1 cannot be resumed now: %2").arg(run_id).arg(startBlocker()), true);
        return false;
    }
    const int done = static_cast<int>(record->epochs.size());
    const int total = done < record->config.epochs ? record->config.epochs : done + model_->trainConfig().epochs;
    QString error;
    if (controller_->resumeStored(run_id, total, devices_->config(), data_->dataset(), data_->dataName(), &error) == 0) {
        showMessage(tr("Run %1 cannot be resumed: %2").arg(run_id).arg(error), true);
        return false;
    }
    message_->setVisible(false);
    return true;
}

void MainWindow::updateActions() {
    const auto state = controller_->state();
    const bool idle = state == TrainingController::State::Idle;
    const QString blocker = startBlocker();
    const bool active = state == TrainingController::State::Running || state == TrainingController::State::Paused;
    start_->setEnabled(idle && blocker.isEmpty());
    start_->setToolTip(with_shortcut(blocker.isEmpty() ? tr("Start training") : blocker, start_->shortcut()));
    const bool here = !controller_->following();  // a followed run trains in its own process
    pause_->setEnabled(active && here);
    pause_->setText(state == TrainingController::State::Paused ? tr("Resume") : tr("Pause"));
    pause_->setToolTip(with_shortcut(state == TrainingController::State::Paused ? tr("Resume training") : tr("Pause training after the step in flight"),
                                     pause_->shortcut()));
    stop_->setEnabled(active);
    stop_->setToolTip(with_shortcut(here ? tr("Stop training; the epochs finished so far are kept")
                                         : tr("Stop following the other process's run (it goes on)"),
                                    stop_->shortcut()));
    next_step_->setEnabled(active && here);
    // Another run cannot start while one is in progress: said before a dialog is filled in.
    for (const char* name : {"trainOnWorkersAction", "followAction"}) {
        if (auto* action = findChild<QAction*>(QLatin1String(name))) action->setEnabled(idle && !scaling_->running());
    }
}

void MainWindow::showMessage(const QString& text, bool error) {
    message_->setText(text);
    message_->setStyleSheet(error ? QStringLiteral("background:#fde7e9; color:#8a0010; padding:6px; border:1px solid #e8a0a8;")
                                  : QStringLiteral("background:#fff4e0; color:#7a4a00; padding:6px; border:1px solid #e8c890;"));
    message_->setVisible(true);
}

QString MainWindow::messageText() const { return message_->isHidden() ? QString() : message_->text(); }

void MainWindow::saveSettings() const {
    QSettings settings(QStringLiteral("MirrorLab"), settings_scope_);
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState(kLayoutVersion));
    settings.setValue(QStringLiteral("training/liveTensorBoard"), live_tensorboard_->isChecked());
    devices_->saveSettings(settings);
    model_->saveSettings(settings);
    data_->saveSettings(settings);
}

void MainWindow::restoreSettings() {
    QSettings settings(QStringLiteral("MirrorLab"), settings_scope_);
    live_tensorboard_->setChecked(settings.value(QStringLiteral("training/liveTensorBoard"), true).toBool());
    // Qt's restoreGeometry() moves and shrinks a saved geometry onto the screens there are now.
    if (!settings.contains(QStringLiteral("window/geometry")) ||
        !restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        first_launch_geometry_ = true;
        if (const QScreen* on = screen()) setGeometry(firstLaunchGeometry(on->availableGeometry(), expectedFrameMargins()));
    }
    // First launch: the docks are sized once the window is laid out (showEvent).
    const QByteArray state = settings.value(QStringLiteral("window/state")).toByteArray();
    bool restored = restoreState(state, kLayoutVersion);
    if (!restored && restoreState(state, 0)) {  // a layout saved before version 1: keep it, but move the answers
        restored = true;
        moveAnswerPanelsToLeftColumn();
    }
    first_launch_docks_ = !restored;
    devices_->restoreSettings(settings);
    model_->restoreSettings(settings);
    data_->restoreSettings(settings);
}

void MainWindow::moveAnswerPanelsToLeftColumn() {
    // Each after the one before it: Data, Try it, Per-class report (buildDocks made all three).
    QDockWidget* after = findChild<QDockWidget*>(QStringLiteral("dataDock"));
    for (const QString& name : {QStringLiteral("tryItDock"), QStringLiteral("classReportDock")}) {
        auto* dock = findChild<QDockWidget*>(name);
        if (dockWidgetArea(dock) == Qt::BottomDockWidgetArea && !dock->isFloating()) tabifyDockWidget(after, dock);
        after = dock;
    }
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (shown_before_) return;
    shown_before_ = true;
    // Queued: the docks have their sizes only once the first layout pass has run.
    QTimer::singleShot(0, this, [this] {
        if (first_launch_docks_) arrangeFirstLaunchDocks();
        if (first_launch_geometry_) keepFrameOnScreen();
    });
    // A window manager decorates the window a moment after it is mapped: check again then.
    if (first_launch_geometry_) QTimer::singleShot(500, this, &MainWindow::keepFrameOnScreen);
}

void MainWindow::keepFrameOnScreen() {
    const QScreen* on = screen();
    if (on == nullptr || isMaximized() || isFullScreen()) return;
    const QRect available = on->availableGeometry();
    const QRect frame = frameGeometry();
    if (available.contains(frame)) return;
    const QRect inner = geometry();
    const QMargins margins(inner.left() - frame.left(), inner.top() - frame.top(), frame.right() - inner.right(),
                           frame.bottom() - inner.bottom());
    const QSize room = available.size().shrunkBy(margins);
    resize(size().boundedTo(room));
    QRect moved = frameGeometry();
    moved.moveLeft(std::clamp(moved.left(), available.left(), std::max(available.left(), available.right() - moved.width() + 1)));
    moved.moveTop(std::clamp(moved.top(), available.top(), std::max(available.top(), available.bottom() - moved.height() + 1)));
    move(moved.topLeft());
}

int MainWindow::modelDockWidthWanted(const QDockWidget* dock) const {
    auto* table = model_->findChild<QTableWidget*>(QStringLiteral("layerTable"));
    QScrollArea* scroll = nullptr;
    for (QWidget* up = table; up != nullptr && scroll == nullptr; up = up->parentWidget()) scroll = qobject_cast<QScrollArea*>(up);
    if (table == nullptr || scroll == nullptr || scroll->widget() == nullptr) return dock->width();
    // What ResizeToContents gives every column: the layer table without a cut or a scroll bar.
    int columns = 0;
    for (int column = 0; column < table->columnCount(); ++column) {
        columns += std::max(static_cast<const QAbstractItemView*>(table)->sizeHintForColumn(column),
                            table->horizontalHeader()->sectionSizeHint(column));
    }
    const int extent = style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, scroll);
    const int table_wanted = columns + 2 * table->frameWidth() + (table->verticalScrollBar()->isVisible() ? extent : 0);
    const QWidget* content = scroll->widget();
    // The table takes every pixel the form grows by.
    const int content_wanted = std::max(content->minimumSizeHint().width(), content->width() + table_wanted - table->width());
    const int around = dock->width() - scroll->viewport()->width() + (scroll->verticalScrollBar()->isVisible() ? 0 : extent);
    return content_wanted + around;
}

void MainWindow::arrangeFirstLaunchDocks() {
    auto dock = [this](const char* name) { return findChild<QDockWidget*>(QLatin1String(name)); };
    QDockWidget* devices_dock = dock("devicesDock");
    QDockWidget* model_dock = dock("modelDock");
    QDockWidget* monitor_dock = dock("monitorDock");
    QDockWidget* log_dock = dock("logDock");
    if (devices_dock == nullptr || model_dock == nullptr || monitor_dock == nullptr || log_dock == nullptr) return;
    DockNeeds needs;
    // A tab behind others is not laid out: the model form is measured with its tab up.
    model_dock->raise();
    needs.left_wanted = modelDockWidthWanted(model_dock);
    devices_dock->raise();
    for (const char* name : {"devicesDock", "modelDock", "dataDock"}) {
        if (QDockWidget* left = dock(name)) needs.left_minimum = std::max(needs.left_minimum, left->minimumSizeHint().width());
    }
    // The monitor scrolls vertically only: its dock is as wide as the panel's minimum and the bar.
    needs.right_minimum = monitor_->minimumSizeHint().width() + style()->pixelMetric(QStyle::PM_ScrollBarExtent) +
                          monitor_dock->width() - monitor_dock->widget()->width() + 2;
    needs.central_minimum = training_->minimumSizeHint().width() + 8;  // inside the scroll area's margins
    int bottom_minimum = 0;
    for (const char* name : {"logDock", "runsDock", "stepViewDock", "timelineDock", "scalingDock"}) {
        if (QDockWidget* bottom = dock(name)) bottom_minimum = std::max(bottom_minimum, bottom->minimumSizeHint().height());
    }
    // About five log lines under the log's own bar; the tabs' bar comes on top of the dock.
    const int tab_bar = QFontMetrics(font()).height() + 12;
    needs.bottom_minimum = bottom_minimum;
    needs.bottom_wanted = log_dock->minimumSizeHint().height() + 3 * QFontMetrics(log_->font()).lineSpacing();
    const int separator = style()->pixelMetric(QStyle::PM_DockWidgetSeparatorExtent, nullptr, this);
    const DockLayout layout = firstLaunchDocks(size() - QSize(2 * separator, separator), needs);
    resizeDocks({devices_dock, monitor_dock}, {layout.left_width, layout.right_width}, Qt::Horizontal);
    resizeDocks({log_dock}, {layout.bottom_height + tab_bar}, Qt::Vertical);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    auto running = [this] { return controller_->state() != TrainingController::State::Idle; };
    if (running() && !close_when_idle_) {
        const QString question =
            tr("A training run is in progress. Stop it and close MirrorLab?\n\nThe epochs finished so far are in the "
               "Runs panel; export them there first if you want to keep them.");
        if (!confirm_close_(question)) {
            event->ignore();
            return;
        }
        // The run may have ended while the question was open; then the window closes now.
        if (running()) {
            controller_->stop();  // stopping to follow another process's run ends at once
            if (running()) {
                close_when_idle_ = true;
                // Closed again once the engine has stopped (after the step in flight), never waited
                // for here; queued, so that close() does not run inside this close event.
                auto connection = std::make_shared<QMetaObject::Connection>();
                *connection = connect(
                    controller_, &TrainingController::stateChanged, this,
                    [this, connection](TrainingController::State state) {
                        if (state != TrainingController::State::Idle) return;
                        disconnect(*connection);  // once: a later run's end closes nothing
                        close_when_idle_ = false;
                        close();
                    },
                    Qt::QueuedConnection);
            }
        }
    }
    if (running()) {
        statusBar()->showMessage(tr("Stopping the run; MirrorLab closes when the step in flight has finished…"));
        event->ignore();
        return;
    }
    if (runs_->exportJob()->isRunning()) {
        // A half-written .keras file would be no file at all: the window closes once it is written.
        statusBar()->showMessage(tr("Writing the Keras export; MirrorLab closes when it is written…"));
        close_when_exported_ = true;  // connectPanels(): the export's end closes the window then
        event->ignore();
        return;
    }
    saveSettings();
    QMainWindow::closeEvent(event);
}

}  // namespace mirrorlab::ui
