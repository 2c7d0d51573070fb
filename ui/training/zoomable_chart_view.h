#pragma once
// A chart view a person can explore with mouse and keyboard: rubber-band zoom (left drag; right
// click zooms out), mouse-wheel zoom around the cursor, pan with the middle button or Shift + left
// drag, arrow keys to pan and +/- to zoom. The training panel's three charts use it.
#include <QChartView>
#include <QPointF>

class QChart;
class QKeyEvent;
class QMouseEvent;
class QWheelEvent;

namespace mirrorlab::ui {

class ZoomableChartView : public QChartView {
public:
    explicit ZoomableChartView(QChart* chart, QWidget* parent = nullptr);

protected:
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    bool panning_ = false;
    QPointF last_pos_;
};

}  // namespace mirrorlab::ui
