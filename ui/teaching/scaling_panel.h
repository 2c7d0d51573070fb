#pragma once
// The scaling experiment: one click trains the current model for a fixed number of steps on
// 1, 2, ... N replicas of the current device configuration (same global batch, same seed) in the
// background, and plots throughput against the ideal line, time per step split into compute and
// communication, and scaling efficiency. Every experiment stays in the table (and the charts) for
// comparison and can be exported as CSV. The "What if" tab predicts clusters that are not here from
// the latest experiment (ui/teaching/what_if_panel.h); the efficiency chart draws its model and
// prediction beside the measured points. Beside the charts: what the effective batch is, why
// efficiency drops, and the learning-rate rule of thumb for larger global batches.
#include <QString>
#include <QTimer>
#include <QWidget>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/device/device.h"
#include "core/train/scaling.h"

class QChart;
class QChartView;
class QHBoxLayout;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QTableWidget;
class QValueAxis;

namespace mirrorlab::ui {

class WhatIfPanel;

class ScalingPanel : public QWidget {
    Q_OBJECT
public:
    // The current model, devices, training settings and data; nullopt (and why) when incomplete.
    using SetupProvider = std::function<std::optional<ScalingSetup>(QString* why)>;

    explicit ScalingPanel(std::shared_ptr<DeviceRegistry> registry = nullptr, QWidget* parent = nullptr);
    ~ScalingPanel() override;  // cancels a running experiment and waits for it

    void setSetupProvider(SetupProvider provider) { provider_ = std::move(provider); }
    void setMaxReplicas(int replicas);
    int maxReplicas() const;
    void setSteps(int steps);
    int steps() const;

    bool start();                          // with the provider's setup; false (and why) when blocked
    bool start(ScalingSetup setup);        // rows 1..maxReplicas(), steps() timed steps each
    void cancel();
    bool running() const { return worker_.joinable(); }
    bool waitForFinished(int timeout_ms);  // processes events meanwhile (tests, screenshots)

    const std::vector<ScalingExperiment>& experiments() const { return experiments_; }
    void clearEarlier();  // keeps only the latest experiment
    int tableRowCount() const;
    QString statusText() const;
    QString explanationText() const;
    QChart* throughputChart() const;
    QChart* stepTimeChart() const;
    QChart* efficiencyChart() const;
    bool exportCsv(const QString& path, QString* error) const;
    WhatIfPanel* whatIf() const { return what_if_; }  // the prediction for clusters not here

signals:
    void runningChanged(bool running);  // an experiment began or ended

private:
    void addPoint(const ScalingPoint& point, int done, int total);
    void finish(ScalingExperiment experiment);
    // Takes what the worker has handed over (handover_) and shows it; on the GUI thread, every 50 ms
    // while an experiment runs.
    void drainWorker();
    void refresh();
    void refreshTable();
    QHBoxLayout* buildControls();
    QWidget* buildResults();
    QScrollArea* buildExplanation();
    void refreshCharts();
    void refreshThroughputChart(const std::vector<const ScalingExperiment*>& all, const ScalingExperiment* latest,
                                int max_replicas);
    void refreshStepTimeChart(const ScalingExperiment* latest);
    void refreshEfficiencyChart(const std::vector<const ScalingExperiment*>& all, const ScalingExperiment* latest,
                                int max_replicas);
    QLineSeries* experimentSeries(const ScalingExperiment& experiment, bool latest) const;
    QValueAxis* plotPerReplica(QChart* chart, const std::vector<const ScalingExperiment*>& all,
                               const ScalingExperiment* latest, int max_replicas, const QString& y_title,
                               double (*value)(const ScalingPoint&), double& top) const;
    void refreshExplanation();
    void updateButtons();
    void exportInteractively();

    std::shared_ptr<DeviceRegistry> registry_;
    SetupProvider provider_;
    std::unique_ptr<ScalingRunner> runner_;
    std::thread worker_;
    // The worker's rows and its result reach the GUI thread through a std::mutex, which
    // ThreadSanitizer sees, not as functors posted through Qt's event queue, whose lock it cannot
    // see (a report whenever it lost the worker's side of the stack: tests/sanitizers/tsan.supp).
    struct Handover {
        struct Point {
            ScalingPoint point;
            int done = 0, total = 0;
        };
        std::vector<Point> points;
        std::optional<ScalingExperiment> result;
    };
    std::mutex handover_mutex_;
    Handover handover_;
    QTimer drain_timer_;
    std::vector<ScalingExperiment> experiments_;     // finished (completed or not)
    std::optional<ScalingExperiment> in_progress_;  // the rows so far of the running one
    int next_id_ = 1;
    double learning_rate_ = 0.0;
    std::int32_t global_batch_ = 0;

    QSpinBox* replicas_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPushButton* export_ = nullptr;
    QPushButton* clear_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QLabel* explanation_ = nullptr;
    QChartView* throughput_view_ = nullptr;
    QChartView* time_view_ = nullptr;
    QChartView* efficiency_view_ = nullptr;
    QTableWidget* table_ = nullptr;
    WhatIfPanel* what_if_ = nullptr;
};

}  // namespace mirrorlab::ui
