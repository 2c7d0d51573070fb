// The kernels of cpu_fast_kernels.h, written once over a vector type V and included by each
// cpu_fast_isa_*.cpp after it has defined V and switched on its instruction set. Everything here
// is in the includer's anonymous namespace, so the three compilations never meet at link time.
//
// V provides: F (float vector), I (int32 vector), M (lane mask), W (lanes), kRows[nv] (rows per
// GEMM block for nv column vectors, sized to the register file), kFmaChains (independent
// multiply-add chains that saturate the FMA units), and zero, set1, set1_i, tail,
// load_part, store_part, load_i_part, store_i_part, fmadd, add, sub, mul, div, sqrt, relu,
// greater, is_nan, and_not, mask_or, equal_i, select, select_i, all_zero, opaque (hides a value
// from the optimiser so that a product is never fused into the following add).

// One block of MR rows x NV vectors of C, held in registers over the whole depth. The strides
// and masks are copied to locals and the loops fully unrolled so that GCC keeps the block in
// registers (with the arguments read through `g`, it spilled the accumulators every step).
template <class V, int MR, int NV>
void gemm_block(const GemmArgs& g, std::int64_t row0, std::int64_t col0,
                const typename V::M* tail_masks) {
    using F = typename V::F;
    constexpr int W = V::W;
    const std::int64_t depth = g.depth, a_row = g.a_row, a_depth = g.a_depth, ldb = g.ldb,
                       ldc = g.ldc;
    typename V::M masks[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) masks[v] = tail_masks[v];
    F acc[MR][NV];
    float* c = g.c + row0 * ldc + col0;
    if (g.accumulate) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = V::load_part(c + r * ldc + v * W, masks[v]);
        }
    } else {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[0][v] =
                g.bias != nullptr ? V::load_part(g.bias + col0 + v * W, masks[v]) : V::zero();
#pragma GCC unroll 16
        for (int r = 1; r < MR; ++r) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = acc[0][v];
        }
    }
    const float* a = g.a + row0 * a_row;
    const float* b = g.b + col0;
    for (std::int64_t p = 0; p < depth; ++p) {
        F bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) bv[v] = V::load_part(b + v * W, masks[v]);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const F av = V::set1(a[r * a_row]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(av, bv[v], acc[r][v]);
        }
        a += a_depth;
        b += ldb;
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) V::store_part(c + r * ldc + v * W, acc[r][v], masks[v]);
    }
}

// Full blocks of MR rows, then the remainder in blocks of MR/2, MR/4, ..., 1.
template <class V, int MR, int NV>
void gemm_rows(const GemmArgs& g, std::int64_t row0, std::int64_t col0,
               const typename V::M* masks) {
    for (; row0 + MR <= g.rows; row0 += MR) gemm_block<V, MR, NV>(g, row0, col0, masks);
    if constexpr (MR > 1) {
        if (row0 < g.rows) gemm_rows<V, MR / 2, NV>(g, row0, col0, masks);
    }
}

template <class V>
void gemm(const GemmArgs& g) {
    constexpr int W = V::W;
    for (std::int64_t col0 = 0; col0 < g.cols; col0 += 4 * W) {
        const std::int64_t width = std::min<std::int64_t>(4 * W, g.cols - col0);
        const int vectors = static_cast<int>((width + W - 1) / W);
        typename V::M masks[4];
        for (int v = 0; v < vectors; ++v)
            masks[v] = V::tail(static_cast<int>(std::min<std::int64_t>(W, width - v * W)));
        switch (vectors) {
            case 1:
                gemm_rows<V, V::kRows[1], 1>(g, 0, col0, masks);
                break;
            case 2:
                gemm_rows<V, V::kRows[2], 2>(g, 0, col0, masks);
                break;
            case 3:
                gemm_rows<V, V::kRows[3], 3>(g, 0, col0, masks);
                break;
            default:
                gemm_rows<V, V::kRows[4], 4>(g, 0, col0, masks);
                break;
        }
    }
}

template <class V>
void column_sums(const float* b, std::int64_t rows, std::int64_t cols, std::int64_t ldb, float* out,
                 bool accumulate) {
    constexpr int W = V::W;
    for (std::int64_t col0 = 0; col0 < cols; col0 += W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(W, cols - col0)));
        auto sum = accumulate ? V::load_part(out + col0, mask) : V::zero();
        for (std::int64_t r = 0; r < rows; ++r)
            sum = V::add(sum, V::load_part(b + r * ldb + col0, mask));
        V::store_part(out + col0, sum, mask);
    }
}

template <class V>
void fold_windows(const float* z, std::int64_t out_length, std::int64_t window,
                  std::int64_t channels, std::int64_t pad, float* dx, std::int64_t row_begin,
                  std::int64_t row_end) {
    constexpr int W = V::W;
    for (std::int64_t s = row_begin; s < row_end; ++s) {
        for (std::int64_t c0 = 0; c0 < channels; c0 += W) {
            const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(W, channels - c0)));
            auto sum = V::zero();
            for (std::int64_t k = 0; k < window; ++k) {
                const std::int64_t t = s + pad - k;
                if (t < 0 || t >= out_length) continue;
                sum = V::add(sum, V::load_part(z + (t * window + k) * channels + c0, mask));
            }
            V::store_part(dx + s * channels + c0, sum, mask);
        }
    }
}

template <class V>
void relu_forward(const float* x, float* y, std::int64_t count) {
    for (std::int64_t i = 0; i < count; i += V::W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(V::W, count - i)));
        V::store_part(y + i, V::relu(V::load_part(x + i, mask)), mask);
    }
}

template <class V>
void relu_backward(const float* y, const float* dy, float* dx, std::int64_t count) {
    for (std::int64_t i = 0; i < count; i += V::W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(V::W, count - i)));
        const auto positive = V::greater(V::load_part(y + i, mask), V::zero());
        V::store_part(dx + i, V::select(positive, V::load_part(dy + i, mask), V::zero()), mask);
    }
}

template <class V>
void maxpool_forward(const PoolArgs& p, const float* x, float* y, std::int32_t* argmax,
                     std::int64_t batch_begin, std::int64_t batch_end) {
    constexpr int W = V::W;
    for (std::int64_t b = batch_begin; b < batch_end; ++b) {
        for (std::int64_t t = 0; t < p.out_length; ++t) {
            const std::int64_t out_offset = (b * p.out_length + t) * p.channels;
            for (std::int64_t c0 = 0; c0 < p.channels; c0 += W) {
                const auto mask =
                    V::tail(static_cast<int>(std::min<std::int64_t>(W, p.channels - c0)));
                auto out = V::set1(-std::numeric_limits<float>::infinity());
                auto arg = V::set1_i(-1);
                bool first = true;
                for (std::int32_t k = 0; k < p.pool_size; ++k) {
                    const std::int64_t source = t * p.stride + k - p.pad_left;
                    if (source < 0 || source >= p.length) continue;
                    const auto in =
                        V::load_part(x + (b * p.length + source) * p.channels + c0, mask);
                    const auto position = V::set1_i(static_cast<std::int32_t>(source));
                    if (first) {
                        out = in;
                        arg = position;
                        first = false;
                        continue;
                    }
                    // The reference's rule: strictly greater wins, and a NaN displaces a number.
                    const auto take =
                        V::mask_or(V::greater(in, out), V::and_not(V::is_nan(out), V::is_nan(in)));
                    out = V::select(take, in, out);
                    arg = V::select_i(take, position, arg);
                }
                V::store_part(y + out_offset + c0, out, mask);
                V::store_i_part(argmax + out_offset + c0, arg, mask);
            }
        }
    }
}

// With stride >= pool_size, window t owns input rows t * stride - pad + k for k < pool_size and
// no window reads the rows after them up to the next window (k in [pool_size, stride)) or past
// the last window: those get zeros.
template <class V>
void maxpool_backward_disjoint(const PoolArgs& p, const float* grad_y, const std::int32_t* argmax,
                               float* grad_x, std::int64_t batch_begin, std::int64_t batch_end) {
    constexpr int W = V::W;
    auto write_row = [&](std::int64_t b, std::int64_t s, std::int64_t t, bool covered) {
        float* dx = grad_x + (b * p.length + s) * p.channels;
        const float* dy = grad_y + (b * p.out_length + t) * p.channels;
        const std::int32_t* arg = argmax + (b * p.out_length + t) * p.channels;
        const auto position = V::set1_i(static_cast<std::int32_t>(s));
        for (std::int64_t c0 = 0; c0 < p.channels; c0 += W) {
            const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(W, p.channels - c0)));
            auto value = V::zero();
            if (covered) {
                const auto won = V::equal_i(V::load_i_part(arg + c0, mask), position);
                value = V::select(won, V::load_part(dy + c0, mask), V::zero());
            }
            V::store_part(dx + c0, value, mask);
        }
    };
    for (std::int64_t b = batch_begin; b < batch_end; ++b) {
        for (std::int64_t t = 0; t < p.out_length; ++t) {
            for (std::int64_t k = 0; k < p.stride; ++k) {
                const std::int64_t s = t * p.stride + k - p.pad_left;
                if (s >= 0 && s < p.length) write_row(b, s, t, k < p.pool_size);
            }
        }
        for (std::int64_t s = std::max<std::int64_t>(0, p.out_length * p.stride - p.pad_left);
             s < p.length; ++s) {
            write_row(b, s, 0, false);
        }
    }
}

// The two optimizers below repeat reference_apply_update's formulas operation for operation.
// Products that feed an addition pass through V::opaque, which keeps the compiler from fusing
// them into a multiply-add (a different rounding); sqrt and division are correctly rounded in
// both, so every element comes out bit-identical.
template <class V>
void adam(const OptimizerStep& s, float* weights, const float* grads, float* m_slot, float* v_slot,
          std::int64_t count) {
    const auto one_minus_beta_1 = V::set1(s.one_minus_beta_1),
               one_minus_beta_2 = V::set1(s.one_minus_beta_2);
    const auto alpha = V::set1(s.adam_alpha), epsilon = V::set1(s.epsilon);
    for (std::int64_t i = 0; i < count; i += V::W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(V::W, count - i)));
        const auto g = V::load_part(grads + i, mask);
        auto m = V::load_part(m_slot + i, mask);
        auto v = V::load_part(v_slot + i, mask);
        m = V::add(m, V::opaque(V::mul(V::sub(g, m), one_minus_beta_1)));
        v = V::add(v, V::opaque(V::mul(V::sub(V::opaque(V::mul(g, g)), v), one_minus_beta_2)));
        const auto step = V::div(V::mul(m, alpha), V::add(V::sqrt(v), epsilon));
        V::store_part(weights + i, V::sub(V::load_part(weights + i, mask), step), mask);
        V::store_part(m_slot + i, m, mask);
        V::store_part(v_slot + i, v, mask);
    }
}

template <class V>
void nadam(const OptimizerStep& s, float* weights, const float* grads, float* m_slot, float* v_slot,
           std::int64_t count) {
    const auto beta_1 = V::set1(s.beta_1), one_minus_beta_1 = V::set1(s.one_minus_beta_1);
    const auto beta_2 = V::set1(s.beta_2), one_minus_beta_2 = V::set1(s.one_minus_beta_2);
    const auto g_coeff = V::set1(s.nadam_g_coeff), m_coeff = V::set1(s.nadam_m_coeff);
    const auto v_scale = V::set1(s.nadam_v_scale), learning_rate = V::set1(s.learning_rate);
    const auto epsilon = V::set1(s.epsilon);
    for (std::int64_t i = 0; i < count; i += V::W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(V::W, count - i)));
        const auto g = V::load_part(grads + i, mask);
        auto m = V::load_part(m_slot + i, mask);
        auto v = V::load_part(v_slot + i, mask);
        m = V::add(V::opaque(V::mul(beta_1, m)), V::opaque(V::mul(one_minus_beta_1, g)));
        v = V::add(V::opaque(V::mul(beta_2, v)), V::opaque(V::mul(one_minus_beta_2, V::mul(g, g))));
        const auto m_hat = V::add(V::opaque(V::mul(g_coeff, g)), V::opaque(V::mul(m_coeff, m)));
        const auto v_hat = V::mul(v, v_scale);
        const auto step = V::div(V::mul(learning_rate, m_hat), V::add(V::sqrt(v_hat), epsilon));
        V::store_part(weights + i, V::sub(V::load_part(weights + i, mask), step), mask);
        V::store_part(m_slot + i, m, mask);
        V::store_part(v_slot + i, v, mask);
    }
}

template <class V>
void add(float* dst, const float* src, std::int64_t count) {
    for (std::int64_t i = 0; i < count; i += V::W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(V::W, count - i)));
        V::store_part(dst + i, V::add(V::load_part(dst + i, mask), V::load_part(src + i, mask)),
                      mask);
    }
}

// x * 0 is 0 for every finite x and NaN for an infinity or a NaN; the sum stays 0 until then.
template <class V>
bool all_finite(const float* x, std::int64_t count) {
    auto sum = V::zero();
    for (std::int64_t i = 0; i < count; i += V::W) {
        const auto mask = V::tail(static_cast<int>(std::min<std::int64_t>(V::W, count - i)));
        sum = V::add(sum, V::mul(V::load_part(x + i, mask), V::zero()));
    }
    return V::all_zero(sum);
}

template <class V>
float fma_probe(std::int64_t iterations) {
    constexpr int N = V::kFmaChains;
    typename V::F acc[N];
#pragma GCC unroll 32
    for (int i = 0; i < N; ++i) acc[i] = V::set1(0.001f * static_cast<float>(i + 1));
    // acc -> acc * a + b converges to b / (1 - a) = 0.1: no overflow, no denormals.
    const auto a = V::set1(0.999f), b = V::set1(1e-4f);
    for (std::int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 32
        for (int i = 0; i < N; ++i) acc[i] = V::fmadd(acc[i], a, b);
    }
    auto sum = acc[0];
#pragma GCC unroll 32
    for (int i = 1; i < N; ++i) sum = V::add(sum, acc[i]);
    float lanes[V::W];
    V::store_part(lanes, sum, V::tail(V::W));
    return lanes[0];
}

template <class V>
KernelTable make_table(std::string_view isa) {
    KernelTable table;
    table.isa = isa;
    table.vector_width = V::W;
    table.gemm = gemm<V>;
    table.column_sums = column_sums<V>;
    table.fold_windows = fold_windows<V>;
    table.relu_forward = relu_forward<V>;
    table.relu_backward = relu_backward<V>;
    table.maxpool_forward = maxpool_forward<V>;
    table.maxpool_backward_disjoint = maxpool_backward_disjoint<V>;
    table.adam = adam<V>;
    table.nadam = nadam<V>;
    table.add = add<V>;
    table.all_finite = all_finite<V>;
    table.fma_probe = fma_probe<V>;
    table.fma_probe_flops = 2 * V::W * V::kFmaChains;
    return table;
}
