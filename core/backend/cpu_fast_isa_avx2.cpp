// The kernels compiled for AVX2 + FMA (8 floats per vector, 16 vector registers). Only this
// file's own functions get the instruction set; the table is handed out only when the CPU has it.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/backend/cpu_fast_kernels.h"
#include "core/optim/optimizer.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MIRRORLAB_HAVE_AVX2 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#include "core/backend/cpu_fast_transpose8.h"

namespace mirrorlab::fast {
namespace {

struct V256 {
    using F = __m256;
    using I = __m256i;
    using M = __m256;  // all-ones lanes where true
    static constexpr int W = 8;
    // GEMM blocks for 1..3 column vectors: 12 x 8, 6 x 16 or 4 x 24 floats, i.e. 12 accumulators
    // (2 FMA units x 4-5 cycles of latency need at least 10) + the B vectors + one broadcast
    // within the 16 registers; the AVX-512 shapes (6 x 4 vectors) would spill here.
    static constexpr int kRows[5] = {0, 12, 6, 4, 2};
    static constexpr int kMaxVectors = 3;
    static constexpr int kFmaChains = 12;  // of 16 registers; Zen 2/3 and Intel need >= 10
    static constexpr int kTransposeBlock = 8;  // transpose_block: 8 x 8 floats
    static void transpose_block(const float* src, std::int64_t ld_src, float* dst, std::int64_t ld_dst) {
        transpose_8x8(src, ld_src, dst, ld_dst);
    }

    static F zero() { return _mm256_setzero_ps(); }
    static F set1(float x) { return _mm256_set1_ps(x); }
    static I set1_i(std::int32_t x) { return _mm256_set1_epi32(x); }
    static M tail(int n) {
        return _mm256_castsi256_ps(
            _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    }
    static F load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, F x) { _mm256_storeu_ps(p, x); }
    static I load_i(const std::int32_t* p) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    }
    static void store_i(std::int32_t* p, I x) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x);
    }
    // Masked loads are one micro-op on AMD and two on Intel.
    static F load_part(const float* p, M m) {
        return _mm256_maskload_ps(p, _mm256_castps_si256(m));
    }
    static I load_i_part(const std::int32_t* p, M m) {
        return _mm256_maskload_epi32(reinterpret_cast<const int*>(p), _mm256_castps_si256(m));
    }
    // Masked stores (VMASKMOVPS / VPMASKMOVD) are 42 micro-ops, one per 12 cycles, on AMD Zen 2-4
    // (uops.info), so a tail(n) prefix is stored as 4, 2 and 1 floats with plain SSE stores.
    static void store_part(float* p, F x, M m) {
        int n = __builtin_ctz(static_cast<unsigned>(_mm256_movemask_ps(m)) + 1u);
        if (n == W) {
            _mm256_storeu_ps(p, x);
            return;
        }
        __m128 part = _mm256_castps256_ps128(x);
        if (n >= 4) {
            _mm_storeu_ps(p, part);
            part = _mm256_extractf128_ps(x, 1);
            p += 4;
            n -= 4;
        }
        if (n >= 2) {
            _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
            part = _mm_movehl_ps(part, part);
            p += 2;
            n -= 2;
        }
        if (n == 1) _mm_store_ss(p, part);
    }
    static void store_i_part(std::int32_t* p, I x, M m) {
        store_part(reinterpret_cast<float*>(p), _mm256_castsi256_ps(x), m);
    }
    static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static F add(F a, F b) { return _mm256_add_ps(a, b); }
    static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static F div(F a, F b) { return _mm256_div_ps(a, b); }
    static F sqrt(F a) { return _mm256_sqrt_ps(a); }
    // MAXPS returns its second operand when either is NaN and for two zeros: NaN and -0 pass.
    static F relu(F x) { return _mm256_max_ps(zero(), x); }
    static M greater(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
    static M not_less_equal(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_NLE_UQ); }  // a > b or a NaN
    static M is_nan(F a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
    static M and_not(M a, M b) { return _mm256_andnot_ps(a, b); }
    static M mask_and(M a, M b) { return _mm256_and_ps(a, b); }
    static M mask_or(M a, M b) { return _mm256_or_ps(a, b); }
    static bool none(M m) { return _mm256_testz_ps(m, m) != 0; }
    static unsigned lane_bits(M m) { return static_cast<unsigned>(_mm256_movemask_ps(m)); }
    static M equal_i(I a, I b) { return _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)); }
    static F select(M m, F if_true, F if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
    static I select_i(M m, I if_true, I if_false) {
        return _mm256_castps_si256(
            _mm256_blendv_ps(_mm256_castsi256_ps(if_false), _mm256_castsi256_ps(if_true), m));
    }
    static bool all_zero(F x) {
        return _mm256_movemask_ps(_mm256_cmp_ps(x, zero(), _CMP_NEQ_UQ)) == 0;
    }
    static F opaque(F x) {
        asm("" : "+x"(x));
        return x;
    }
};

#include "core/backend/cpu_fast_kernels.inl"

KernelTable make_avx2_table() {
    KernelTable table = make_table<V256>("avx2");
    table.fold_windows_to_rows = fold_windows_to_rows_8;
    return table;
}

}  // namespace
}  // namespace mirrorlab::fast

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

namespace mirrorlab::fast {

const KernelTable* kernels_avx2() {
#if defined(MIRRORLAB_HAVE_AVX2)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return nullptr;
    static const KernelTable table = make_avx2_table();
    return &table;
#else
    return nullptr;
#endif
}

}  // namespace mirrorlab::fast
