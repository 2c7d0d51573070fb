#include "ui/training/zoomable_chart_view.h"

#include <QChart>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>

namespace mirrorlab::ui {

ZoomableChartView::ZoomableChartView(QChart* chart, QWidget* parent) : QChartView(chart, parent) {
    setRubberBand(QChartView::RectangleRubberBand);
    setRenderHint(QPainter::Antialiasing);
    setFocusPolicy(Qt::StrongFocus);
}

void ZoomableChartView::wheelEvent(QWheelEvent* event) {
    const QRectF area = chart()->plotArea();
    const QPointF pos = event->position();
    if (!area.contains(pos) || event->angleDelta().y() == 0) {
        QChartView::wheelEvent(event);
        return;
    }
    const double factor = event->angleDelta().y() > 0 ? 0.8 : 1.25;
    // Keep the point under the cursor where it is.
    QRectF zoomed(pos.x() - (pos.x() - area.left()) * factor, pos.y() - (pos.y() - area.top()) * factor,
                  area.width() * factor, area.height() * factor);
    chart()->zoomIn(zoomed);
    event->accept();
}

void ZoomableChartView::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::MiddleButton ||
        (event->button() == Qt::LeftButton && event->modifiers().testFlag(Qt::ShiftModifier))) {
        panning_ = true;
        last_pos_ = event->position();
        setCursor(Qt::ClosedHandCursor);
        event->accept();
        return;
    }
    QChartView::mousePressEvent(event);
}

void ZoomableChartView::mouseMoveEvent(QMouseEvent* event) {
    if (panning_) {
        const QPointF delta = event->position() - last_pos_;
        last_pos_ = event->position();
        chart()->scroll(-delta.x(), delta.y());
        event->accept();
        return;
    }
    QChartView::mouseMoveEvent(event);
}

void ZoomableChartView::mouseReleaseEvent(QMouseEvent* event) {
    if (panning_) {
        panning_ = false;
        unsetCursor();
        event->accept();
        return;
    }
    QChartView::mouseReleaseEvent(event);
}

void ZoomableChartView::keyPressEvent(QKeyEvent* event) {
    const QRectF area = chart()->plotArea();
    switch (event->key()) {
        case Qt::Key_Plus: chart()->zoom(1.25); break;
        case Qt::Key_Minus: chart()->zoom(0.8); break;
        case Qt::Key_Left: chart()->scroll(-area.width() / 10.0, 0); break;
        case Qt::Key_Right: chart()->scroll(area.width() / 10.0, 0); break;
        case Qt::Key_Up: chart()->scroll(0, area.height() / 10.0); break;
        case Qt::Key_Down: chart()->scroll(0, -area.height() / 10.0); break;
        default: QChartView::keyPressEvent(event); return;
    }
    event->accept();
}

}  // namespace mirrorlab::ui
