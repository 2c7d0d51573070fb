#pragma once
// What CpuFastBackend's two source files share: cpu_fast.cpp (Dense, ReLU, the optimizers, the
// all-reduce's add and the NaN guard) and cpu_fast_conv.cpp (Conv1D, max pooling, and the two
// fused). Internal to the backend: nothing outside core/backend includes it.
#include <algorithm>
#include <cstdint>

namespace mirrorlab::fast_detail {

// Rows of one convolution chunk: big enough that a chunk's GEMM amortises its set-up, small
// enough that a batch of 1 still splits over the threads.
constexpr std::int64_t kConvChunkRows = 64;
// Optimizer and elementwise chunks (elements): a few hundred microseconds of work at most.
constexpr std::int64_t kUpdateChunk = 1 << 17;

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

// dst[c, r] = src[r, c]. Strips of 16 source rows keep both sides within a few cache lines
// (4x faster than the plain double loop for the Dense kernel, 2336 x 46).
inline void transpose(const float* src, std::int64_t rows, std::int64_t cols, float* dst) {
    constexpr std::int64_t kStrip = 16;
    for (std::int64_t r0 = 0; r0 < rows; r0 += kStrip) {
        const std::int64_t r1 = std::min(rows, r0 + kStrip);
        for (std::int64_t c = 0; c < cols; ++c) {
            for (std::int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
        }
    }
}

}  // namespace mirrorlab::fast_detail
