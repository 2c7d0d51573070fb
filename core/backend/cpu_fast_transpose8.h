#pragma once
// An 8 x 8 block of floats transposed in registers (AVX): what the AVX2 and the AVX-512 kernels'
// transpose (KernelTable::transpose) moves a block at a time. Included by those two files after
// they switch their instruction set on, so that it compiles with it; no other file includes it.
#include <immintrin.h>

#include <cstdint>

namespace mirrorlab::fast {
namespace {

// dst[c * ld_dst + r] = src[r * ld_src + c] for r, c < 8: pairs of rows interleaved, then pairs of
// pairs, then the 128-bit halves swapped, 24 shuffles for 64 floats instead of 64 scalar moves
// whose loads stride through the source.
inline void transpose_8x8(const float* src, std::int64_t ld_src, float* dst, std::int64_t ld_dst) {
    __m256 row[8];
    for (int r = 0; r < 8; ++r) row[r] = _mm256_loadu_ps(src + r * ld_src);
    __m256 pairs[8], quads[8];
    for (int r = 0; r < 8; r += 2) {
        pairs[r] = _mm256_unpacklo_ps(row[r], row[r + 1]);
        pairs[r + 1] = _mm256_unpackhi_ps(row[r], row[r + 1]);
    }
    for (int r = 0; r < 8; r += 4) {
        quads[r] = _mm256_shuffle_ps(pairs[r], pairs[r + 2], 0x44);
        quads[r + 1] = _mm256_shuffle_ps(pairs[r], pairs[r + 2], 0xEE);
        quads[r + 2] = _mm256_shuffle_ps(pairs[r + 1], pairs[r + 3], 0x44);
        quads[r + 3] = _mm256_shuffle_ps(pairs[r + 1], pairs[r + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
        _mm256_storeu_ps(dst + c * ld_dst, _mm256_permute2f128_ps(quads[c], quads[c + 4], 0x20));
        _mm256_storeu_ps(dst + (c + 4) * ld_dst, _mm256_permute2f128_ps(quads[c], quads[c + 4], 0x31));
    }
}

}  // namespace
}  // namespace mirrorlab::fast
