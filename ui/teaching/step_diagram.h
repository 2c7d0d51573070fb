#pragma once
// The step view's drawing: the stages of one mirrored step, the global batch and its shards, one
// box per replica, the gradient exchange as the chosen all-reduce works, the update with its
// checksums and the barrier. It holds no state of its own: every number comes from the StepView's
// step on show, and the StepView repaints it as the stages light up.
#include <QColor>
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

    void drawStages(QPainter& painter, QRectF area, const StepEndEvent* step) const;
    void drawExchange(QPainter& painter, const std::vector<QRectF>& boxes, QRectF region, const StepEndEvent& step) const;

    // A colour chosen on white, on this widget's palette (ui/common/theme.h).
    QColor ink(const QColor& designed_on_white) const;

    const StepView* view_;
};

}  // namespace mirrorlab::ui
