#pragma once
// How far one run's floats are from another's, for tests that compare a backend with the CPU
// reference over whole weight vectors (summation orders differ, so close, not equal).
#include <algorithm>
#include <cstddef>
#include <vector>

namespace mirrorlab::test {

// Normalised squared error: sum (got - want)^2 / sum want^2 (want's norm floored at 1e-30).
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
    double error = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double d = static_cast<double>(got[i]) - want[i];
        error += d * d;
        norm += static_cast<double>(want[i]) * want[i];
    }
    return error / std::max(norm, 1e-30);
}

}  // namespace mirrorlab::test
