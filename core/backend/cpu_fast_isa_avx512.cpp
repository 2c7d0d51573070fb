// The kernels compiled for AVX-512 (16 floats per vector, 32 vector registers). Only this file's
// own functions get the instruction set; the table is handed out only when the CPU has it.
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
#define MIRRORLAB_HAVE_AVX512 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
// GCC 12's _mm512_undefined_ps() is `__m512 __Y = __Y;`, which -Wmaybe-uninitialized reports at
// every inlined _mm512_sqrt_ps / _mm512_max_ps (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "core/backend/cpu_fast_transpose8.h"

namespace mirrorlab::fast {
namespace {

struct V512 {
    using F = __m512;
    using I = __m512i;
    using M = __mmask16;
    static constexpr int W = 16;
    // GEMM rows per block for 1..4 column vectors: accumulators + operands fit 32 registers.
    static constexpr int kRows[5] = {0, 12, 12, 8, 6};
    static constexpr int kMaxVectors = 4;
    static constexpr int kFmaChains = 24;  // of 32 registers
    static constexpr int kTransposeBlock = 8;  // transpose_block: 8 x 8 floats
    static void transpose_block(const float* src, std::int64_t ld_src, float* dst, std::int64_t ld_dst) {
        transpose_8x8(src, ld_src, dst, ld_dst);
    }

    static F zero() { return _mm512_setzero_ps(); }
    static F set1(float x) { return _mm512_set1_ps(x); }
    static I set1_i(std::int32_t x) { return _mm512_set1_epi32(x); }
    static M tail(int n) { return n >= W ? M(0xFFFF) : M((1u << std::max(n, 0)) - 1u); }
    static F load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, F x) { _mm512_storeu_ps(p, x); }
    static I load_i(const std::int32_t* p) { return _mm512_loadu_si512(p); }
    static void store_i(std::int32_t* p, I x) { _mm512_storeu_si512(p, x); }
    static F load_part(const float* p, M m) { return _mm512_maskz_loadu_ps(m, p); }
    static void store_part(float* p, F x, M m) { _mm512_mask_storeu_ps(p, m, x); }
    static I load_i_part(const std::int32_t* p, M m) { return _mm512_maskz_loadu_epi32(m, p); }
    static void store_i_part(std::int32_t* p, I x, M m) { _mm512_mask_storeu_epi32(p, m, x); }
    static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static F add(F a, F b) { return _mm512_add_ps(a, b); }
    static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static F div(F a, F b) { return _mm512_div_ps(a, b); }
    static F sqrt(F a) { return _mm512_sqrt_ps(a); }
    // MAXPS returns its second operand when either is NaN and for two zeros: NaN and -0 pass.
    static F relu(F x) { return _mm512_max_ps(zero(), x); }
    static M greater(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
    static M not_less_equal(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLE_UQ); }  // a > b or a NaN
    static M is_nan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
    static M and_not(M a, M b) { return M(~a & b); }
    static M mask_and(M a, M b) { return M(a & b); }
    static M mask_or(M a, M b) { return M(a | b); }
    static bool none(M m) { return m == 0; }
    static unsigned lane_bits(M m) { return m; }
    static M equal_i(I a, I b) { return _mm512_cmpeq_epi32_mask(a, b); }
    static F select(M m, F if_true, F if_false) {
        return _mm512_mask_blend_ps(m, if_false, if_true);
    }
    static I select_i(M m, I if_true, I if_false) {
        return _mm512_mask_blend_epi32(m, if_false, if_true);
    }
    static bool all_zero(F x) { return _mm512_cmp_ps_mask(x, zero(), _CMP_NEQ_UQ) == 0; }
    static F opaque(F x) {
        asm("" : "+v"(x));
        return x;
    }
};

#include "core/backend/cpu_fast_kernels.inl"

KernelTable make_avx512_table() {
    KernelTable table = make_table<V512>("avx512");
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

const KernelTable* kernels_avx512() {
#if defined(MIRRORLAB_HAVE_AVX512)
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("fma")) return nullptr;
    static const KernelTable table = make_avx512_table();
    return &table;
#else
    return nullptr;
#endif
}

}  // namespace mirrorlab::fast
