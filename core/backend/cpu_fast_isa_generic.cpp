// The kernels compiled for the build's baseline (x86-64 without AVX, or any other CPU), one float
// per "vector", and the run-time choice between the tables.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "core/backend/cpu_fast_kernels.h"
#include "core/optim/optimizer.h"

namespace mirrorlab::fast {
namespace {

struct Scalar {
    using F = float;
    using I = std::int32_t;
    using M = bool;
    static constexpr int W = 1;
    static constexpr int kRows[5] = {0, 4, 4, 2, 2};
    static constexpr int kMaxVectors = 4;
    static constexpr int kFmaChains = 32;  // 8 SSE2 vectors of multiply-add chains
    static constexpr int kTransposeBlock = 1;
    static void transpose_block(const float* src, std::int64_t, float* dst, std::int64_t) { *dst = *src; }

    static F zero() { return 0.0f; }
    static F set1(float x) { return x; }
    static I set1_i(std::int32_t x) { return x; }
    static M tail(int n) { return n > 0; }
    static F load(const float* p) { return *p; }
    static void store(float* p, F x) { *p = x; }
    static I load_i(const std::int32_t* p) { return *p; }
    static void store_i(std::int32_t* p, I x) { *p = x; }
    static F load_part(const float* p, M m) { return m ? *p : 0.0f; }
    static void store_part(float* p, F x, M m) {
        if (m) *p = x;
    }
    static I load_i_part(const std::int32_t* p, M m) { return m ? *p : 0; }
    static void store_i_part(std::int32_t* p, I x, M m) {
        if (m) *p = x;
    }
    static F fmadd(F a, F b, F c) { return a * b + c; }
    static F add(F a, F b) { return a + b; }
    static F sub(F a, F b) { return a - b; }
    static F mul(F a, F b) { return a * b; }
    static F div(F a, F b) { return a / b; }
    static F sqrt(F a) { return std::sqrt(a); }
    static F relu(F x) { return std::isnan(x) ? x : std::max(x, 0.0f); }
    static M greater(F a, F b) { return a > b; }
    static M not_less_equal(F a, F b) { return !(a <= b); }  // a > b or a NaN
    static M is_nan(F a) { return std::isnan(a); }
    static M and_not(M a, M b) { return !a && b; }
    static M mask_and(M a, M b) { return a && b; }
    static M mask_or(M a, M b) { return a || b; }
    static bool none(M m) { return !m; }
    static unsigned lane_bits(M m) { return m ? 1u : 0u; }
    static M equal_i(I a, I b) { return a == b; }
    static F select(M m, F if_true, F if_false) { return m ? if_true : if_false; }
    static I select_i(M m, I if_true, I if_false) { return m ? if_true : if_false; }
    static bool all_zero(F x) { return x == 0.0f; }
    static F opaque(F x) {
#if defined(__x86_64__) || defined(__i386__)
        asm("" : "+x"(x));
#elif defined(__aarch64__)
        asm("" : "+w"(x));
#endif
        return x;
    }
};

#include "core/backend/cpu_fast_kernels.inl"

}  // namespace

const KernelTable& kernels_generic() {
    static const KernelTable table = make_table<Scalar>("generic");
    return table;
}

const KernelTable& best_kernels() {
    static const KernelTable& chosen = [&]() -> const KernelTable& {
        const char* cap = std::getenv("MIRRORLAB_CPU_ISA");
        const std::string_view limit = cap != nullptr ? cap : "avx512";
        if (limit == "avx512") {
            if (const KernelTable* table = kernels_avx512()) return *table;
        }
        if (limit == "avx512" || limit == "avx2") {
            if (const KernelTable* table = kernels_avx2()) return *table;
        }
        return kernels_generic();
    }();
    return chosen;
}

}  // namespace mirrorlab::fast
