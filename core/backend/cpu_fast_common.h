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

// Floats in a 64-byte cache line: the arena's tensors and the backend's scratch start on one.
constexpr std::int64_t kCacheLineFloats = 16;

}  // namespace mirrorlab::fast_detail
