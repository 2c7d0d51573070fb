#include "ui/training/decimate.h"

#include <algorithm>

namespace mirrorlab::ui {

QVector<QPointF> decimated_for_drawing(const QVector<QPointF>& points, double x_min, double x_max, int max_points) {
    const auto by_x = [](const QPointF& point, double x) { return point.x() < x; };
    auto first = std::lower_bound(points.begin(), points.end(), x_min, by_x);
    auto last = std::upper_bound(points.begin(), points.end(), x_max,
                                 [](double x, const QPointF& point) { return x < point.x(); });
    if (first != points.begin()) --first;  // the neighbour outside, so the line reaches the edge
    if (last != points.end()) ++last;
    const auto count = static_cast<int>(last - first);
    max_points = std::max(max_points, 4);
    if (count <= max_points) return QVector<QPointF>(first, last);

    QVector<QPointF> drawn;
    drawn.reserve(max_points + 2);
    drawn.append(*first);
    const int buckets = max_points / 2;
    const int inner = count - 2;  // the first and last points are kept on their own
    for (int bucket = 0; bucket < buckets; ++bucket) {
        const auto begin = first + 1 + static_cast<qsizetype>(static_cast<long long>(inner) * bucket / buckets);
        const auto end = first + 1 + static_cast<qsizetype>(static_cast<long long>(inner) * (bucket + 1) / buckets);
        if (begin == end) continue;
        const auto [low, high] =
            std::minmax_element(begin, end, [](const QPointF& a, const QPointF& b) { return a.y() < b.y(); });
        if (low == high) {
            drawn.append(*low);
        } else if (low < high) {
            drawn.append(*low);
            drawn.append(*high);
        } else {
            drawn.append(*high);
            drawn.append(*low);
        }
    }
    drawn.append(*(last - 1));
    return drawn;
}

}  // namespace mirrorlab::ui
