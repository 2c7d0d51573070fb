#pragma once
// The median of a sample (the mean of the two middle values for an even count; 0 for none): what
// the benchmarks report, since a shared machine's outliers would move a mean.
#include <algorithm>
#include <vector>

namespace mirrorlab {

inline double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace mirrorlab
