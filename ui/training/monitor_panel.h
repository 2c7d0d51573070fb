#pragma once
// What the devices are doing during a run: per logical device the memory in use, the peak and
// the limit; per replica the step time split into its phases (data wait, forward, backward,
// all-reduce, update) over the last steps; and the samples per second. Events are collected as
// they arrive and the charts are redrawn in batches on a timer.
#include <QPointF>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/train/events.h"

class QGroupBox;
class QChart;
class QChartView;
class QBoxLayout;
class QComboBox;
class QLabel;
class QLineSeries;
class QTimer;
class QValueAxis;

namespace mirrorlab::ui {

class TrainingController;
class MemoryBarsView;

class MonitorPanel : public QWidget {
    Q_OBJECT
public:
    explicit MonitorPanel(TrainingController* controller, QWidget* parent = nullptr);
    ~MonitorPanel() override;

    void clear();  // on runStarted

    // What is shown, for tests.
    int deviceRowCount() const;
    std::int64_t shownBytesInUse(int device) const;
    QString shownDeviceText(int device) const;  // the line beside the bar; empty if no such row
    QStringList shownDeviceLines(int device) const;  // that text as painted at the panel's width
    int phaseSampleCount() const;  // steps in the phase chart of the selected replica
    double samplesPerSecond() const;
    void refreshNow();  // redraws the charts now instead of on the timer

    void addSteps(const std::vector<StepEndEvent>& steps);
    void setMemory(const MemoryEvent& event);
    void setReplicaNames(const std::vector<std::string>& devices);

protected:
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct PhaseSample {
        double step = 0.0;
        double ms[5] = {0, 0, 0, 0, 0};  // data wait, forward, backward, all-reduce, update
    };

    QGroupBox* buildThroughputBox();
    QGroupBox* buildMemoryBox();
    QGroupBox* buildPhaseBox();
    QString summary(const PhaseSample* last, int replica, double total_ms) const;
    void scheduleRefresh();
    void ensureReplicaEntries(int replicas);
    void keepWrappedTextTall();
    void fitLabelHeight(QLabel* label);

    std::vector<std::deque<PhaseSample>> phases_;  // per replica, the last kHistory steps
    std::deque<double> recent_rates_;               // for the rolling average
    std::deque<QPointF> rate_points_;               // (global step, rolling samples/s)
    double samples_per_second_ = 0.0;
    std::vector<std::string> replica_names_;

    MemoryBarsView* memory_ = nullptr;
    QBoxLayout* rate_layout_ = nullptr;
    QLabel* rate_label_ = nullptr;
    QChartView* rate_view_ = nullptr;
    QLineSeries* rate_series_ = nullptr;
    QValueAxis* rate_x_ = nullptr;
    QValueAxis* rate_y_ = nullptr;
    QComboBox* replica_ = nullptr;
    QChartView* phase_view_ = nullptr;
    std::vector<QLineSeries*> phase_upper_;  // cumulative tops, one per phase
    std::vector<QLineSeries*> phase_lower_;  // the previous phase's top (null for the first)
    QValueAxis* phase_x_ = nullptr;
    QValueAxis* phase_y_ = nullptr;
    QLabel* phase_summary_ = nullptr;
    TrainingController* controller_ = nullptr;  // may be null (tests)
    QTimer* refresh_timer_ = nullptr;
};

}  // namespace mirrorlab::ui
