#pragma once
// Where a metric chart puts its tick labels: round intervals (1, 2 or 5 times a power of ten), a
// range rounded out to whole intervals, and never more labels than the plot's height holds (Qt
// Charts elides every label of a crowded axis to "...", which leaves a chart unreadable).
#include <QString>

namespace mirrorlab::ui {

// The smallest round interval (1, 2 or 5 × 10^k) that splits `span` into at most `target_ticks`
// intervals; 1 for an empty or invalid span.
double nice_step(double span, int target_ticks);

struct YTicks {
    double low = 0.0;
    double high = 1.0;
    double step = 1.0;
};

// The y range [y_min, y_max] rounded out to whole round intervals, with at most `max_labels`
// labels (at least 2). The range never starts below 0 (losses and accuracies are not negative);
// an accuracy range never ends above 1.
YTicks y_ticks_that_fit(double y_min, double y_max, int max_labels, bool is_accuracy);

// The labels' printf format: as many decimals as the interval needs.
QString label_format(double interval);

}  // namespace mirrorlab::ui
