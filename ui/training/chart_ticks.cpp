#include "ui/training/chart_ticks.h"

#include <algorithm>
#include <cmath>

namespace mirrorlab::ui {

double nice_step(double span, int target_ticks) {
    if (!(span > 0.0)) return 1.0;
    const double raw = span / target_ticks;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double step : {1.0, 2.0, 5.0}) {
        if (step * magnitude >= raw * (1.0 - 1e-9)) return step * magnitude;
    }
    return 10.0 * magnitude;
}

YTicks y_ticks_that_fit(double y_min, double y_max, int max_labels, bool is_accuracy) {
    max_labels = std::max(2, max_labels);
    auto rounded_out = [&](double step) {
        YTicks ticks{std::max(0.0, std::floor(y_min / step) * step), std::ceil(y_max / step) * step, step};
        if (is_accuracy) ticks.high = std::min(1.0, ticks.high);
        if (ticks.high <= ticks.low) ticks.high = ticks.low + step;
        return ticks;
    };
    auto labels = [](const YTicks& ticks) { return std::lround((ticks.high - ticks.low) / ticks.step) + 1; };
    // The interval grows until the range, rounded out to whole intervals, has few enough labels.
    YTicks ticks;
    for (int intervals = max_labels - 1; intervals >= 1; --intervals) {
        ticks = rounded_out(nice_step(y_max - y_min, intervals));
        if (labels(ticks) <= max_labels) return ticks;
    }
    // A one-interval step can still straddle a round number (0.9..1.1 by 0.2 rounds out to 0.8,
    // 1.0, 1.2: three labels where a short plot holds two): the next round steps up reach two.
    while (labels(ticks) > max_labels) ticks = rounded_out(nice_step(ticks.step * 1.5, 1));
    return ticks;
}

QString label_format(double interval) {
    const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(interval) - 1e-9)), 0, 6);
    return QStringLiteral("%.%1f").arg(decimals);
}

}  // namespace mirrorlab::ui
