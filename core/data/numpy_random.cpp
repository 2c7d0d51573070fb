#include "core/data/numpy_random.h"

#include <numeric>

namespace mirrorlab {

namespace {
constexpr size_t kN = 624;
constexpr size_t kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0df;
constexpr uint32_t kUpperMask = 0x80000000;
constexpr uint32_t kLowerMask = 0x7fffffff;
}  // namespace

NumpyRandomState::NumpyRandomState(uint32_t seed) {
    // init_genrand, as numpy's mt19937_seed.
    key_[0] = seed;
    for (size_t i = 1; i < kN; ++i) {
        key_[i] = 1812433253u * (key_[i - 1] ^ (key_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
    pos_ = kN;
}

void NumpyRandomState::generate() {
    for (size_t i = 0; i < kN; ++i) {
        const uint32_t y = (key_[i] & kUpperMask) | (key_[(i + 1) % kN] & kLowerMask);
        key_[i] = key_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    pos_ = 0;
}

uint32_t NumpyRandomState::next_uint32() {
    if (pos_ == kN) generate();
    uint32_t y = key_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint64_t NumpyRandomState::next_uint64() {
    const uint64_t high = next_uint32();
    return (high << 32) | next_uint32();
}

uint64_t NumpyRandomState::random_interval(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    uint64_t value = 0;
    if (max <= 0xffffffffu) {
        while ((value = (next_uint32() & mask)) > max) {
        }
    } else {
        while ((value = (next_uint64() & mask)) > max) {
        }
    }
    return value;
}

std::vector<int64_t> NumpyRandomState::shuffled_indices(size_t n) {
    std::vector<int64_t> indices(n);
    std::iota(indices.begin(), indices.end(), int64_t{0});
    shuffle(std::span<int64_t>(indices));
    return indices;
}

}  // namespace mirrorlab
