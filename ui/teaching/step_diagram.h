#pragma once
// The step view's drawing: the stages of one mirrored step, the global batch and its shards, one
// box per replica, the gradient exchange as the chosen all-reduce works, the update with its
// checksums and the barrier. It holds no state of its own: every number comes from the StepView's
// step on show, and the StepView repaints it as the stages light up.
#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QWidget>

#include <vector>

#include "core/train/events.h"
#include "ui/teaching/step_view.h"

class QPainter;

namespace mirrorlab::ui {

class StepDiagram : public QWidget {
public:
    explicit StepDiagram(const StepView* view, QWidget* parent);

    QSize sizeHint() const override { return {1000, 620}; }
    QSize minimumSizeHint() const override { return {560, 560}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    bool lit(StepView::Stage stage) const;
    bool current(StepView::Stage stage) const { return view_->currentStage() == stage; }
    QColor stageColour(StepView::Stage stage, const QColor& active) const;

    // Where the rows below the stages go for the step on show: one column per replica, and the
    // rows' heights (the arrows and the exchange take the spare height of a tall dock).
    struct Layout {
        double line = 0.0;  // one line of text
        int replicas = 1;
        double column_width = 0.0;
        double column_gap = 0.0;
        double columns_width = 0.0;
        double columns_left = 0.0;
        double bar_height = 0.0;
        double arrow_height = 0.0;
        double box_height = 0.0;
        double exchange_height = 0.0;
        double update_height = 0.0;
        double columnX(int replica) const { return columns_left + replica * (column_width + column_gap); }
    };
    Layout layoutFor(const StepEndEvent& step, QRectF area, double top) const;

    // Each row, top to bottom; those that return a y return where the next row starts.
    void drawStages(QPainter& painter, QRectF area, const StepEndEvent* step) const;
    double drawBatch(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y,
                     std::vector<QPointF>& shard_centres) const;
    std::vector<QRectF> drawReplicas(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y) const;
    void drawExchange(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const StepEndEvent& step) const;
    struct Pen {  // the exchange's arrows: lit or not, and thicker while the all-reduce runs
        QColor colour;
        double width = 1.0;
        bool active = false;
    };
    // The arrows of one all-reduce; each returns the caption that explains it.
    QString drawRing(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const Pen& pen,
                     const StepEndEvent& step) const;
    QString drawGather(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const Pen& pen,
                       const StepEndEvent& step) const;
    // Several workers (mpirun): into each worker's buffer, across the workers, back to the replicas.
    QString drawWorkers(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const Pen& pen,
                        const StepEndEvent& step, const std::vector<int>& workers) const;

public:
    // Each replica's worker (its device's /job:worker/task:K), or empty for one process.
    static std::vector<int> workerOfReplicas(const TrainBeginEvent& begin);
    // What the two-level exchange of a multi-worker step moves, in words (the diagram's caption).
    static QString workersCaption(const StepEndEvent& step, const std::vector<int>& workers);

private:
    double drawUpdates(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y) const;
    void drawBarrier(QPainter& painter, const Layout& layout, const StepEndEvent& step, double y) const;

    // A colour chosen on white, on this widget's palette (ui/common/theme.h).
    QColor ink(const QColor& designed_on_white) const;

    const StepView* view_;
};

}  // namespace mirrorlab::ui
