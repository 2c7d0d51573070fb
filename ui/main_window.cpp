#include "ui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include "core/data/source.h"
#include "core/util/error.h"

#include "ui/data_panel.h"
#include "ui/devices_panel.h"
#include "ui/log_panel.h"
#include "ui/model_panel.h"
#include "ui/monitor_panel.h"
#include "ui/runs_panel.h"
#include "ui/scaling_panel.h"
#include "ui/step_view.h"
#include "ui/timeline_view.h"
#include "ui/training_panel.h"

namespace mirrorlab::ui {

namespace {
QDockWidget* add_dock(QMainWindow* window, QWidget* panel, const QString& title, const QString& object_name,
                      Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, window);
    dock->setObjectName(object_name);  // saveState() needs stable names
    dock->setWidget(panel);
    window->addDockWidget(area, dock);
    return dock;
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
    setCentralWidget(central);

    devices_ = new DevicesPanel(controller_->registry(), this);
    model_ = new ModelPanel(this);
    data_ = new DataPanel(this);
    monitor_ = new MonitorPanel(controller_, this);
    runs_ = new RunsPanel(controller_, this);
    log_ = new LogPanel(controller_, this);
    step_view_ = new StepView(controller_, this);
    timeline_ = new TimelineView(controller_, this);
    scaling_ = new ScalingPanel(controller_->registry(), this);

    QDockWidget* devices_dock = add_dock(this, devices_, tr("Devices"), QStringLiteral("devicesDock"), Qt::LeftDockWidgetArea);
    QDockWidget* model_dock = add_dock(this, model_, tr("Model"), QStringLiteral("modelDock"), Qt::LeftDockWidgetArea);
    QDockWidget* data_dock = add_dock(this, data_, tr("Data"), QStringLiteral("dataDock"), Qt::LeftDockWidgetArea);
    tabifyDockWidget(devices_dock, model_dock);
    tabifyDockWidget(model_dock, data_dock);
    devices_dock->raise();
    add_dock(this, monitor_, tr("Device monitor"), QStringLiteral("monitorDock"), Qt::RightDockWidgetArea);
    QDockWidget* runs_dock = add_dock(this, runs_, tr("Runs"), QStringLiteral("runsDock"), Qt::BottomDockWidgetArea);
    QDockWidget* log_dock = add_dock(this, log_, tr("Log"), QStringLiteral("logDock"), Qt::BottomDockWidgetArea);
    tabifyDockWidget(log_dock, runs_dock);
    // Seeing data parallelism: the step, the per-replica timeline and the scaling experiment.
    QDockWidget* step_dock = add_dock(this, step_view_, tr("Step view"), QStringLiteral("stepViewDock"), Qt::BottomDockWidgetArea);
    QDockWidget* timeline_dock = add_dock(this, timeline_, tr("Timeline"), QStringLiteral("timelineDock"), Qt::BottomDockWidgetArea);
    QDockWidget* scaling_dock = add_dock(this, scaling_, tr("Scaling"), QStringLiteral("scalingDock"), Qt::BottomDockWidgetArea);
    tabifyDockWidget(runs_dock, step_dock);
    tabifyDockWidget(step_dock, timeline_dock);
    tabifyDockWidget(timeline_dock, scaling_dock);
    log_dock->raise();

    buildActions();

    connect(runs_, &RunsPanel::overlayRunsChanged, training_, &TrainingPanel::setOverlayRuns);
    runs_->setTrainingPanel(training_);
    scaling_->setSetupProvider([this](QString* why) -> std::optional<ScalingSetup> {
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
    });
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
    connect(data_, &DataPanel::loadFailed, this, [this](const QString& error) { showMessage(error, true); });
    connect(controller_, &TrainingController::stateChanged, this, &MainWindow::updateActions);
    connect(controller_, &TrainingController::runFailed, this, [this](const FailedEvent& event) {
        showMessage(tr("Training failed: %1").arg(QString::fromStdString(event.reason)), true);
    });
    connect(controller_, &TrainingController::runFinished, this, [this](const FinishedEvent& event) {
        statusBar()->showMessage(QString::fromStdString(event.text), 10000);
    });
    connect(controller_, &TrainingController::warningRaised, this, [this](const WarningEvent& event) {
        if (event.code == "overfitting") showMessage(QString::fromStdString(event.text), false);
    });

    restoreSettings();
    model_->setReplicaCount(std::max(devices_->replicaCount(), 1));
    scaling_->setMaxReplicas(std::max(devices_->replicaCount(), 2));
    if (!data_->dataset()) data_->load(data_->spec());
    updateActions();
    statusBar()->showMessage(tr("Ready"));
}

MainWindow::~MainWindow() = default;

void MainWindow::buildActions() {
    QToolBar* toolbar = addToolBar(tr("Training"));
    toolbar->setObjectName(QStringLiteral("trainingToolbar"));
    start_ = toolbar->addAction(tr("Start"), this, [this] { startTraining(); });
    start_->setObjectName(QStringLiteral("startAction"));
    pause_ = toolbar->addAction(tr("Pause"), this, [this] {
        if (controller_->state() == TrainingController::State::Paused) {
            controller_->resume();
        } else {
            controller_->pause();
        }
    });
    pause_->setObjectName(QStringLiteral("pauseAction"));
    stop_ = toolbar->addAction(tr("Stop"), controller_, &TrainingController::stop);
    stop_->setObjectName(QStringLiteral("stopAction"));

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("Export history as CSV…"), this, [this] {
        const RunRecord* run = controller_->currentRun();
        if (run == nullptr) return;
        const QString path = QFileDialog::getSaveFileName(this, tr("Export history"), QStringLiteral("history.csv"), tr("CSV files (*.csv)"));
        QString error;
        if (!path.isEmpty() && !runs_->exportCsv(run->id, path, &error)) showMessage(error, true);
    });
    file->addAction(tr("Export charts as PNG…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export charts"), QStringLiteral("charts.png"), tr("PNG images (*.png)"));
        QString error;
        if (!path.isEmpty() && !runs_->exportChartsPng(path, &error)) showMessage(error, true);
    });
    file->addSeparator();
    file->addAction(tr("Quit"), this, &QWidget::close);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
}

QString MainWindow::startBlocker() const {
    if (const QString error = devices_->validationError(); !error.isEmpty()) return tr("Devices: %1").arg(error);
    if (const QString error = model_->modelError(); !error.isEmpty()) return tr("Model: %1").arg(error);
    if (data_->isLoading()) return tr("The data is still loading.");
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
    RunSettings settings;
    settings.model = model_->model();
    settings.devices = devices_->config();
    settings.config = model_->trainConfig();
    settings.config.all_reduce = devices_->allReduce();
    settings.config.detailed_step_stats = true;  // gradient norms and checksums for the step view
    if (epochs_override > 0) settings.config.epochs = epochs_override;
    settings.data = data_->dataset();
    settings.data_name = data_->dataName();
    message_->setVisible(false);
    controller_->start(settings);
    return true;
}

void MainWindow::updateActions() {
    const auto state = controller_->state();
    const bool idle = state == TrainingController::State::Idle;
    const QString blocker = startBlocker();
    start_->setEnabled(idle && blocker.isEmpty());
    start_->setToolTip(blocker.isEmpty() ? tr("Start training") : blocker);
    pause_->setEnabled(state == TrainingController::State::Running || state == TrainingController::State::Paused);
    pause_->setText(state == TrainingController::State::Paused ? tr("Resume") : tr("Pause"));
    stop_->setEnabled(state == TrainingController::State::Running || state == TrainingController::State::Paused);
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
    settings.setValue(QStringLiteral("window/state"), saveState());
    devices_->saveSettings(settings);
    model_->saveSettings(settings);
    data_->saveSettings(settings);
}

void MainWindow::restoreSettings() {
    QSettings settings(QStringLiteral("MirrorLab"), settings_scope_);
    if (settings.contains(QStringLiteral("window/geometry"))) {
        restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    } else {
        resize(1500, 950);
    }
    if (!restoreState(settings.value(QStringLiteral("window/state")).toByteArray())) {
        // First launch: the charts get the height, the log and runs a strip at the bottom.
        // Dock sizes apply only once the window is laid out, hence the queued call.
        QTimer::singleShot(0, this, [this] {
            if (auto* log_dock = findChild<QDockWidget*>(QStringLiteral("logDock"))) {
                resizeDocks({log_dock}, {200}, Qt::Vertical);
            }
        });
    }
    devices_->restoreSettings(settings);
    model_->restoreSettings(settings);
    data_->restoreSettings(settings);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (controller_->state() != TrainingController::State::Idle) {
        if (!close_when_idle_) {
            const QString question =
                tr("A training run is in progress. Stop it and close MirrorLab?\n\nThe epochs finished so far are in the "
                   "Runs panel; export them there first if you want to keep them.");
            if (!confirm_close_(question)) {
                event->ignore();
                return;
            }
            close_when_idle_ = true;
            // Closed again once the engine has stopped (after the step in flight), never waited for here.
            connect(controller_, &TrainingController::stateChanged, this, [this](TrainingController::State state) {
                if (state == TrainingController::State::Idle) close();
            });
        }
        controller_->stop();
        statusBar()->showMessage(tr("Stopping the run; MirrorLab closes when the step in flight has finished…"));
        event->ignore();
        return;
    }
    saveSettings();
    QMainWindow::closeEvent(event);
}

}  // namespace mirrorlab::ui
