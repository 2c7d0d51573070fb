#pragma once
// The main window: devices, model, data, training charts, the per-device monitor, runs and the
// log as docks a person can arrange; the layout and every panel's settings persist.
#include <QMainWindow>

#include <utility>

#include <functional>
#include <optional>

#include "core/train/scaling.h"
#include "ui/training/training_controller.h"

class QAction;
class QDockWidget;
class QLabel;

class QMenu;

namespace mirrorlab::ui {

class DataPanel;
class DevicesPanel;
class LogPanel;
class ModelPanel;
class MonitorPanel;
class RunsPanel;
class ScalingPanel;
class StepView;
class TimelineView;
class TrainingPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // `settings_scope` names the QSettings group (tests use their own so they start clean).
    explicit MainWindow(QWidget* parent = nullptr, const QString& settings_scope = QStringLiteral("MirrorLab"));
    ~MainWindow() override;

    TrainingController* controller() const { return controller_; }
    DevicesPanel* devicesPanel() const { return devices_; }
    ModelPanel* modelPanel() const { return model_; }
    DataPanel* dataPanel() const { return data_; }
    TrainingPanel* trainingPanel() const { return training_; }
    MonitorPanel* monitorPanel() const { return monitor_; }
    RunsPanel* runsPanel() const { return runs_; }
    LogPanel* logPanel() const { return log_; }
    StepView* stepView() const { return step_view_; }
    TimelineView* timelineView() const { return timeline_; }
    ScalingPanel* scalingPanel() const { return scaling_; }

    // Why Start is not possible right now (empty when it is): invalid devices, model or data.
    QString startBlocker() const;
    // Starts a run with the panels' settings; returns false (and shows why) when blocked.
    bool startTraining(int epochs_override = 0);
    // The same run on `workers` mpirun processes on this host or on `hosts` (mpirun's --host list),
    // followed live (TrainingController::launchWorkers).
    bool trainOnWorkers(int workers, const QString& hosts = QString());
    // Follows the run whose events go to `path` (mirrorlab --follow FILE); false, with the reason
    // in the window's message bar, when it cannot.
    bool followRun(const QString& path);
    // The run the forms describe now.
    RunSettings runSettings(int epochs_override = 0) const;
    // A kept run's model, settings, devices and data back in the forms; false (and the message bar
    // says why) when the run's settings cannot be read.
    bool trainAgain(int run_id);
    // Continues a kept run from its last checkpoint on the devices panel's devices and the loaded
    // data: to its planned epochs, or (when it finished them) for the compile form's epochs more.
    bool resumeRun(int run_id);
    QString messageText() const;  // the message bar's text (errors and warnings a person must see)
    // Closing during a run asks this question first (a dialog by default; tests answer it). When
    // the answer is yes the run is stopped and the window closes once the engine has wound down:
    // the event loop never waits for it.
    void setCloseConfirmation(std::function<bool(const QString& question)> ask) { confirm_close_ = std::move(ask); }

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    std::function<bool(const QString&)> confirm_close_;
    QAction* live_tensorboard_ = nullptr;
    bool close_when_idle_ = false;
    bool close_when_exported_ = false;  // closing waits for a .keras export being written
    std::pair<int, QString> train_again_load_{0, QString()};  // Train again's run and the data it is loading

    void buildCentral();
    void buildDocks();
    void connectPanels();
    std::optional<ScalingSetup> scalingSetup(QString* why) const;
    void buildActions();
    void buildViewMenu();
    void addFollowAction(QMenu* file);
    void addWorkersAction(QMenu* training);
    void updateActions();
    void showMessage(const QString& text, bool error);
    void saveSettings() const;
    void restoreSettings();
    // The dock layout's version in saveState(): 1 since Try it and the Per-class report sit in the
    // left column; a layout saved before (version 0) is restored with those two moved there.
    static constexpr int kLayoutVersion = 1;
    void moveAnswerPanelsToLeftColumn();
    // First launch: the docks share the window so that the model form, the charts and the monitor
    // each get room (window_geometry.h), and the frame stays inside the screen's available area.
    void arrangeFirstLaunchDocks();
    void keepFrameOnScreen();
    int modelDockWidthWanted(const QDockWidget* dock) const;

    bool first_launch_geometry_ = false;
    bool first_launch_docks_ = false;
    bool shown_before_ = false;

    QString settings_scope_;
    TrainingController* controller_ = nullptr;
    DevicesPanel* devices_ = nullptr;
    ModelPanel* model_ = nullptr;
    DataPanel* data_ = nullptr;
    TrainingPanel* training_ = nullptr;
    MonitorPanel* monitor_ = nullptr;
    RunsPanel* runs_ = nullptr;
    LogPanel* log_ = nullptr;
    StepView* step_view_ = nullptr;
    TimelineView* timeline_ = nullptr;
    ScalingPanel* scaling_ = nullptr;
    QLabel* message_ = nullptr;
    QAction* start_ = nullptr;
    QAction* pause_ = nullptr;
    QAction* stop_ = nullptr;
    QAction* next_step_ = nullptr;
};

}  // namespace mirrorlab::ui
