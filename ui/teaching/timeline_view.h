#pragma once
// The per-replica timeline of the last steps: one lane per device, a bar per phase (data wait,
// forward, backward, all-reduce, update) placed where it ran within its step, and the waits drawn
// as hatched bars: before the all-reduce (the barrier, where faster replicas wait for the
// slowest) and at the end of the step. Stragglers show as long compute bars with the others'
// waits beside them. Hovering a bar shows its numbers.
#include <QRectF>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/train/events.h"

class QPainter;

namespace mirrorlab::ui {

class TrainingController;

class TimelineView : public QWidget {
    Q_OBJECT
public:
    enum class Phase { Invalid = 0, DataWait, Forward, Backward, BarrierWait, AllReduce, Update, FinishWait };
    Q_ENUM(Phase)
    static constexpr int kMaxSteps = 30;

    explicit TimelineView(TrainingController* controller, QWidget* parent = nullptr);
    ~TimelineView() override;

    static QString phaseName(Phase phase);

    void clear();
    void setRunInfo(const TrainBeginEvent& begin);
    void addSteps(const std::vector<StepEndEvent>& steps);

    // What is shown, for tests.
    int laneCount() const;
    int stepCount() const { return static_cast<int>(steps_.size()); }
    QStringList laneNames() const;
    struct Bar {
        QRectF rect;
        int lane = 0;
        std::int64_t step = 0;  // global step
        Phase phase = Phase::Invalid;
        double begin_ms = 0.0;  // from the start of the step (its data wait)
        double length_ms = 0.0;
    };
    std::vector<Bar> bars() const;  // laid out for the current size
    QString toolTipAt(const QPoint& position) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    bool event(QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

private:
    void drawLegend(QPainter& painter, double y) const;
    void drawSummary(QPainter& painter, double y) const;
    QRectF plotArea() const;
    double laneTop(int lane) const;

    std::deque<StepEndEvent> steps_;
    std::vector<std::string> devices_;
};

}  // namespace mirrorlab::ui
