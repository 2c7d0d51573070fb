#pragma once
// An 8 x 8 block of floats transposed in registers (AVX): what the AVX2 and the AVX-512 kernels'
// transpose (KernelTable::transpose) moves a block at a time, and their fold of a transposed z into
// dx's rows (KernelTable::fold_windows_to_rows). Included by those two files after they switch
// their instruction set on, so that it compiles with it; no other file includes it.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace mirrorlab::fast {
namespace {

// Eight rows of 8 floats transposed in place, in registers: pairs of rows interleaved, then pairs
// of pairs, then the 128-bit halves swapped, 24 shuffles for 64 floats.
inline void transpose_8x8_registers(__m256 (&row)[8]) {
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
        row[c] = _mm256_permute2f128_ps(quads[c], quads[c + 4], 0x20);
        row[c + 4] = _mm256_permute2f128_ps(quads[c], quads[c + 4], 0x31);
    }
}

// dst[c * ld_dst + r] = src[r * ld_src + c] for r, c < 8, instead of 64 scalar moves whose loads
// stride through the source.
inline void transpose_8x8(const float* src, std::int64_t ld_src, float* dst, std::int64_t ld_dst) {
    __m256 row[8];
    for (int r = 0; r < 8; ++r) row[r] = _mm256_loadu_ps(src + r * ld_src);
    transpose_8x8_registers(row);
    for (int c = 0; c < 8; ++c) _mm256_storeu_ps(dst + c * ld_dst, row[c]);
}

// KernelTable::fold_windows_to_rows: fold_windows' sums from a transposed z, straight into dx's
// rows. Eight input rows at a time where every tap of every row reads an output row inside (the
// rows near the edges one float at a time, as fold_windows): for each group of up to 8 channels,
// each channel's eight sums along the rows, 0 + the taps in order, then transposed in registers
// into eight rows of the group. A group narrower than 8 (the last one) stores 8 floats anyway:
// they run past its row into the next row's first channels, so that group goes first and the
// full groups, or the next block, or the edge rows after it, overwrite them; a block is taken only
// where those stores stay inside dx.
inline void fold_windows_to_rows_8(const float* zt, std::int64_t out_length, std::int64_t window,
                                   std::int64_t channels, std::int64_t pad, float* dx, std::int64_t length) {
    const auto row_by_row = [&](std::int64_t s) {
        for (std::int64_t c = 0; c < channels; ++c) {
            float sum = 0.0f;
            for (std::int64_t k = 0; k < window; ++k) {
                const std::int64_t t = s + pad - k;
                if (t >= 0 && t < out_length) sum += zt[(k * channels + c) * out_length + t];
            }
            dx[s * channels + c] = sum;
        }
    };
    // The eight rows [s, s + 8) of channels [c0, c0 + 8), zeros beyond the last channel.
    const auto group = [&](std::int64_t s, std::int64_t c0) {
        __m256 sums[8];
        for (std::int64_t c = 0; c < 8; ++c) {
            __m256 sum = _mm256_setzero_ps();
            if (c0 + c < channels) {
                const float* tap_rows = zt + (c0 + c) * out_length + s + pad;
                for (std::int64_t k = 0; k < window; ++k) {
                    sum = _mm256_add_ps(sum, _mm256_loadu_ps(tap_rows + k * channels * out_length - k));
                }
            }
            sums[c] = sum;
        }
        transpose_8x8_registers(sums);
        for (int r = 0; r < 8; ++r) _mm256_storeu_ps(dx + (s + r) * channels + c0, sums[r]);
    };
    const std::int64_t full_groups = channels / 8, narrow = channels % 8;
    const std::int64_t last_group = narrow != 0 ? full_groups * 8 : channels - 8;  // its stores reach furthest
    // Rows s with s + pad - (window - 1) >= 0 and s + pad < out_length read every tap.
    const std::int64_t first = std::min(length, std::max<std::int64_t>(0, window - 1 - pad));
    const std::int64_t inside_end = std::min(length, out_length - pad);
    std::int64_t s = 0;
    for (; s < first; ++s) row_by_row(s);
    for (; s + 8 <= inside_end && (s + 7) * channels + last_group + 8 <= length * channels; s += 8) {
        if (narrow != 0) group(s, full_groups * 8);
        for (std::int64_t g = 0; g < full_groups; ++g) group(s, g * 8);
    }
    for (; s < length; ++s) row_by_row(s);
}

}  // namespace
}  // namespace mirrorlab::fast
