#pragma once
// What a chart draws of a long curve. A run of 100 epochs logs ~28,000 steps per metric; handing
// them all to Qt Charts on every refresh costs memory (the series keeps its own copy and its
// geometry) and time, while a chart 1,000 pixels wide shows at most a couple of points per pixel
// column. Min-max decimation keeps, per bucket of neighbouring points, the lowest and the highest:
// the curve's envelope and every spike (a loss that jumps, a NaN step's neighbours) stay visible.
#include <QPointF>
#include <QVector>

namespace mirrorlab::ui {

// Points drawn per curve at most (two per bucket).
inline constexpr int kMaxDrawnPoints = 2000;

// The points of `points` (sorted by x) with x in [x_min, x_max], plus the nearest one outside on
// each side so the line reaches the edges; where more than `max_points` remain, the lowest and the
// highest of each of max_points / 2 buckets of consecutive points, in x order. First and last
// points of the range are always kept.
QVector<QPointF> decimated_for_drawing(const QVector<QPointF>& points, double x_min, double x_max,
                                       int max_points = kMaxDrawnPoints);

}  // namespace mirrorlab::ui
