// The kernels of cpu_fast_kernels.h, written once over a vector type V and included by each
// cpu_fast_isa_*.cpp after it has defined V and switched on its instruction set. Everything here
// is in the includer's anonymous namespace, so the three compilations never meet at link time.
//
// V provides: F (float vector), I (int32 vector), M (lane mask), W (lanes), kRows[nv] (rows per
// GEMM block for nv column vectors, sized to the register file), kMaxVectors (the widest GEMM
// block, in vectors), kFmaChains (independent multiply-add chains that saturate the FMA units),
// and zero, set1, set1_i, tail, load, store, load_i, store_i (whole vectors), load_part,
// store_part, load_i_part, store_i_part (the lanes of a tail(n) mask, a prefix), fmadd, add, sub,
// mul, div, sqrt, relu, greater, not_less_equal (a > b or a NaN), is_nan, and_not, mask_and,
// mask_or, none (no lane set), lane_bits (bit k set where lane k is), equal_i, select, select_i,
// all_zero,
// opaque (hides a value from the optimiser so that a product is never fused into the following
// add).

// Whole vectors go through plain loads and stores; only a row's last, partial vector is masked.
// (AVX2's masked store, VMASKMOVPS, is 42 micro-ops on AMD Zen 2-4, one per 12 cycles: masking
// every store made the AVX2 GEMMs and the optimizer several times slower there.)
template <class V, bool kPartial>
typename V::F load_vector(const float* p, typename V::M lanes) {
    if constexpr (kPartial) {
        return V::load_part(p, lanes);
    } else {
        return V::load(p);
    }
}

template <class V, bool kPartial>
void store_vector(float* p, typename V::F x, typename V::M lanes) {
    if constexpr (kPartial) {
        V::store_part(p, x, lanes);
    } else {
        V::store(p, x);
    }
}

template <class V, bool kPartial>
typename V::I load_i_vector(const std::int32_t* p, typename V::M lanes) {
    if constexpr (kPartial) {
        return V::load_i_part(p, lanes);
    } else {
        return V::load_i(p);
    }
}

template <class V, bool kPartial>
void store_i_vector(std::int32_t* p, typename V::I x, typename V::M lanes) {
    if constexpr (kPartial) {
        V::store_i_part(p, x, lanes);
    } else {
        V::store_i(p, x);
    }
}

// The reference's rule for one more row of a window: strictly greater wins, and a NaN displaces a
// number.
template <class V>
[[gnu::always_inline]] inline typename V::M pool_takes(typename V::F in, typename V::F out) {
    // (in > out or in NaN) and out not NaN: two compares and a mask op, where greater, two NaN
    // tests, and_not and or took five of the FMA units' ports in the fused forward's epilogue.
    return V::and_not(V::is_nan(out), V::not_less_equal(in, out));
}

// The fused MaxPooling1D(2) of a GEMM block's rows while they are in registers (GemmArgs::pooled):
// each pair of rows as maxpool_forward's pairs path pools them.
template <class V, int MR, int NV, bool kPartial>
[[gnu::always_inline]] inline void pool_pairs(const GemmArgs& g, std::int64_t row0, std::int64_t col0,
                                              typename V::M last, const typename V::F (&acc)[MR][NV]) {
    constexpr int W = V::W;
#pragma GCC unroll 8
    for (int pair = 0; pair < MR / 2; ++pair) {
        const std::int64_t row = row0 + 2 * pair;  // even: C's rows and pool_first_row are
        float* y = g.pooled + row / 2 * g.ldc + col0;
        std::int32_t* argmax = g.pool_argmax + row / 2 * g.ldc + col0;
        const auto first = V::set1_i(static_cast<std::int32_t>(g.pool_first_row + row));
        const auto second = V::set1_i(static_cast<std::int32_t>(g.pool_first_row + row + 1));
        const auto inactive = V::set1_i(-1);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            const auto a = acc[2 * pair][v], in = acc[2 * pair + 1][v];
            const auto take = pool_takes<V>(in, a);
            const auto max = V::select(take, in, a);
            auto winner = V::select_i(take, second, first);
            if (g.pooled_only) winner = V::select_i(V::greater(max, V::zero()), winner, inactive);
            if (v == NV - 1) {
                store_vector<V, kPartial>(y + v * W, max, last);
                store_i_vector<V, kPartial>(argmax + v * W, winner, last);
            } else {
                V::store(y + v * W, max);
                V::store_i(argmax + v * W, winner);
            }
        }
    }
}

// One block of MR rows x NV vectors of C, held in registers over the whole depth; the last vector
// has only the lanes in `last` when kPartial. The strides are copied to locals and the loops fully
// unrolled so that GCC keeps the block in registers (with the arguments read through `g`, it
// spilled the accumulators every step).
template <class V, int MR, int NV, bool kPartial>
void gemm_block(const GemmArgs& g, std::int64_t row0, std::int64_t col0, typename V::M last) {
    using F = typename V::F;
    constexpr int W = V::W;
    const std::int64_t depth = g.depth, a_row = g.a_row, a_depth = g.a_depth, ldb = g.ldb,
                       ldc = g.ldc;
    F acc[MR][NV];
    float* c = g.c + row0 * ldc + col0;
    if (g.accumulate) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                acc[r][v] = v == NV - 1 ? load_vector<V, kPartial>(c + r * ldc + v * W, last)
                                        : V::load(c + r * ldc + v * W);
            }
        }
    } else {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (g.bias == nullptr) {
                acc[0][v] = V::zero();
            } else {
                acc[0][v] = v == NV - 1 ? load_vector<V, kPartial>(g.bias + col0 + v * W, last)
                                        : V::load(g.bias + col0 + v * W);
            }
        }
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
        for (int v = 0; v < NV; ++v) {
            bv[v] = v == NV - 1 ? load_vector<V, kPartial>(b + v * W, last) : V::load(b + v * W);
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const F av = V::set1(a[r * a_row]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(av, bv[v], acc[r][v]);
        }
        a += a_depth;
        b += ldb;
    }
    if (g.relu) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = V::relu(acc[r][v]);
        }
    }
    if (!g.pooled_only) {
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                if (v == NV - 1) {
                    store_vector<V, kPartial>(c + r * ldc + v * W, acc[r][v], last);
                } else {
                    V::store(c + r * ldc + v * W, acc[r][v]);
                }
            }
        }
    }
    if constexpr (MR % 2 == 0) {
        if (g.pooled != nullptr) pool_pairs<V, MR, NV, kPartial>(g, row0, col0, last, acc);
    }
}

// The rows left after the full blocks, in one block of `rows` < MR rows (halving them instead
// left blocks of 1-3 rows, whose few accumulators wait on the FMA latency).
template <class V, int R, int NV, bool kPartial>
void gemm_remainder(const GemmArgs& g, std::int64_t row0, std::int64_t col0, typename V::M last,
                    std::int64_t rows) {
    if constexpr (R > 0) {
        if (rows == R) {
            gemm_block<V, R, NV, kPartial>(g, row0, col0, last);
        } else {
            gemm_remainder<V, R - 1, NV, kPartial>(g, row0, col0, last, rows);
        }
    }
}

template <class V, int NV, bool kPartial>
void gemm_rows(const GemmArgs& g, std::int64_t col0, typename V::M last) {
    constexpr int MR = V::kRows[NV];
    std::int64_t row0 = 0;
    for (; row0 + MR <= g.rows; row0 += MR) gemm_block<V, MR, NV, kPartial>(g, row0, col0, last);
    if (row0 < g.rows) gemm_remainder<V, MR - 1, NV, kPartial>(g, row0, col0, last, g.rows - row0);
}

template <class V, int NV>
void gemm_columns(const GemmArgs& g, std::int64_t col0, int last_lanes) {
    if (last_lanes == V::W) {
        gemm_rows<V, NV, false>(g, col0, V::tail(V::W));
    } else {
        gemm_rows<V, NV, true>(g, col0, V::tail(last_lanes));
    }
}

// The column blocks of a row of C, in vectors: blocks of `widest` vectors, never leaving a lone
// vector after a wide block (4 vectors as 2 + 2 rather than 3 + 1).
inline int column_block(std::int64_t vectors_left, int widest) {
    int nv = static_cast<int>(std::min<std::int64_t>(widest, vectors_left));
    if (nv > 2 && vectors_left - nv == 1) --nv;
    return nv;
}

// Cycles per depth step of a block of r rows x nv vectors, roughly: its FMAs at two per cycle,
// the latency of its accumulators' chains (4-5 cycles), or its loads at two per cycle.
constexpr double block_cycles(int r, int nv) {
    return std::max({r * nv / 2.0, 4.5, (r + nv) / 2.0});
}

template <class V>
double gemm_cycles(std::int64_t rows, std::int64_t vectors, int widest) {
    double cycles = 0.0;
    for (std::int64_t v0 = 0; v0 < vectors;) {
        const int nv = column_block(vectors - v0, widest);
        const int mr = V::kRows[nv];
        cycles += static_cast<double>(rows / mr) * block_cycles(mr, nv);
        if (rows % mr != 0) cycles += block_cycles(static_cast<int>(rows % mr), nv);
        v0 += nv;
    }
    return cycles;
}

// Column blocks of up to kMaxVectors vectors (the widest block that fits the register file with
// enough rows: 6 x 64 floats with AVX-512, 4 x 24 with AVX2), or narrower ones where those split
// the rows better (AVX2, 18 rows of 64: three blocks of 6 x 16 rather than 4 + 4 + 4 + 4 + 2 x 24).
// The widest column block for a GEMM of `rows` rows and `vectors` vectors of columns, remembered
// per shape: a step repeats a few shapes hundreds of times (a convolution's chunks of rows), and
// working the choice out at every call took 0.4 % of the samples of the tutorial's training (AVX2,
// AMD EPYC Zen 4; in-process A/B of 200-step trainings: 1.951 -> 1.935 and 1.941 -> 1.913 ms).
// A slot packs rows (40 bits), vectors (16) and the choice (8); threads may overwrite each other's
// slots, never tear one.
template <class V>
int widest_block(std::int64_t rows, std::int64_t vectors) {
    static std::atomic<std::uint64_t> remembered[64];
    const bool fits = rows >= 0 && rows < (std::int64_t{1} << 40) && vectors >= 0 && vectors < (1 << 16);
    const std::uint64_t key = (static_cast<std::uint64_t>(rows) << 24) | (static_cast<std::uint64_t>(vectors) << 8);
    std::atomic<std::uint64_t>& slot =
        remembered[(static_cast<std::uint64_t>(rows) * 31u + static_cast<std::uint64_t>(vectors)) & 63u];
    if (fits) {
        const std::uint64_t entry = slot.load(std::memory_order_relaxed);
        if (entry != 0 && (entry & ~std::uint64_t{0xFF}) == key) return static_cast<int>(entry & 0xFF);
    }
    int widest = V::kMaxVectors;
    double best = gemm_cycles<V>(rows, vectors, widest);
    // One row (a convolution's edge rows): the fewest blocks, i.e. the widest, win. Otherwise, at
    // a tie, the taller block: each block streams its columns of B over the whole depth once, so
    // fewer, taller blocks read B fewer times (AVX2, the tutorial's conv1 kernel gradient, 35 rows
    // over 296 samples of grad_y: 6 x 16 blocks 0.197-0.203 ms against 0.220 for 4 x 24 and their
    // 3-row remainders, batch 16, AMD EPYC Zen 4; AVX-512 unchanged).
    for (int candidate = V::kMaxVectors - 1; candidate >= 2 && rows > 1; --candidate) {
        const double cycles = gemm_cycles<V>(rows, vectors, candidate);
        if (cycles <= best) {
            best = cycles;
            widest = candidate;
        }
    }
    if (fits) slot.store(key | static_cast<std::uint64_t>(widest), std::memory_order_relaxed);
    return widest;
}

template <class V>
void gemm(const GemmArgs& g) {
    constexpr int W = V::W;
    const std::int64_t vectors = (g.cols + W - 1) / W;
    const int widest = widest_block<V>(g.rows, vectors);
    for (std::int64_t v0 = 0; v0 < vectors;) {
        const int nv = column_block(vectors - v0, widest);
        const std::int64_t col0 = v0 * W;
        const int last_lanes =
            static_cast<int>(std::min<std::int64_t>(W, g.cols - col0 - (nv - 1) * W));
        if constexpr (V::kMaxVectors >= 4) {
            if (nv == 4) gemm_columns<V, 4>(g, col0, last_lanes);
        }
        if constexpr (V::kMaxVectors >= 3) {
            if (nv == 3) gemm_columns<V, 3>(g, col0, last_lanes);
        }
        if (nv == 2) gemm_columns<V, 2>(g, col0, last_lanes);
        if (nv == 1) gemm_columns<V, 1>(g, col0, last_lanes);
        v0 += nv;
    }
}

// Runs body(i, lanes) on the whole vectors of [0, count) with kPartial = false, then on the last,
// partial one (if any) with its lanes: masked loads and stores only there.
template <class V, class Body>
void for_vectors(std::int64_t count, Body&& body) {
    std::int64_t i = 0;
    for (; i + V::W <= count; i += V::W) body.template operator()<false>(i, V::tail(V::W));
    if (i < count) body.template operator()<true>(i, V::tail(static_cast<int>(count - i)));
}

// Up to NV vectors of columns at once, each summing the rows in order: NV independent chains
// instead of one (a lone chain waits on the add's latency at every row), and each row of b is
// read once instead of once per vector.
template <class V, int NV, bool kPartial>
void column_sums_block(const float* b, std::int64_t rows, std::int64_t ldb, float* out,
                       bool accumulate, typename V::M last) {
    constexpr int W = V::W;
    typename V::F sum[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        if (!accumulate) {
            sum[v] = V::zero();
        } else {
            sum[v] =
                v == NV - 1 ? load_vector<V, kPartial>(out + v * W, last) : V::load(out + v * W);
        }
    }
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = b + r * ldb;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            sum[v] = V::add(sum[v], v == NV - 1 ? load_vector<V, kPartial>(row + v * W, last)
                                                : V::load(row + v * W));
        }
    }
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
        if (v == NV - 1) {
            store_vector<V, kPartial>(out + v * W, sum[v], last);
        } else {
            V::store(out + v * W, sum[v]);
        }
    }
}

template <class V, int NV>
void column_sums_vectors(const float* b, std::int64_t rows, std::int64_t ldb, float* out,
                         bool accumulate, int last_lanes) {
    if (last_lanes == V::W) {
        column_sums_block<V, NV, false>(b, rows, ldb, out, accumulate, V::tail(V::W));
    } else {
        column_sums_block<V, NV, true>(b, rows, ldb, out, accumulate, V::tail(last_lanes));
    }
}

template <class V>
void column_sums(const float* b, std::int64_t rows, std::int64_t cols, std::int64_t ldb, float* out,
                 bool accumulate) {
    constexpr int W = V::W, kBlock = 8;
    for (std::int64_t col0 = 0; col0 < cols; col0 += kBlock * W) {
        const std::int64_t width = std::min<std::int64_t>(kBlock * W, cols - col0);
        const int vectors = static_cast<int>((width + W - 1) / W);
        const int last_lanes = static_cast<int>(width - (vectors - 1) * W);
        const float* block = b + col0;
        float* sums = out + col0;
        switch (vectors) {
            case 1:
                column_sums_vectors<V, 1>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            case 2:
                column_sums_vectors<V, 2>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            case 3:
                column_sums_vectors<V, 3>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            case 4:
                column_sums_vectors<V, 4>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            case 5:
                column_sums_vectors<V, 5>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            case 6:
                column_sums_vectors<V, 6>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            case 7:
                column_sums_vectors<V, 7>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
            default:
                column_sums_vectors<V, 8>(block, rows, ldb, sums, accumulate, last_lanes);
                break;
        }
    }
}

template <class V>
void fold_windows(const float* z, std::int64_t out_length, std::int64_t window,
                  std::int64_t channels, std::int64_t pad, float* dx, std::int64_t row_begin,
                  std::int64_t row_end) {
    for (std::int64_t s = row_begin; s < row_end; ++s) {
        for_vectors<V>(channels, [&]<bool kPartial>(std::int64_t c0, typename V::M lanes) {
            auto sum = V::zero();
            for (std::int64_t k = 0; k < window; ++k) {
                const std::int64_t t = s + pad - k;
                if (t < 0 || t >= out_length) continue;
                sum = V::add(sum,
                             load_vector<V, kPartial>(z + (t * window + k) * channels + c0, lanes));
            }
            store_vector<V, kPartial>(dx + s * channels + c0, sum, lanes);
        });
    }
}


template <class V>
void relu_forward(const float* x, float* y, std::int64_t count) {
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        store_vector<V, kPartial>(y + i, V::relu(load_vector<V, kPartial>(x + i, lanes)), lanes);
    });
}

template <class V>
void relu_backward(const float* y, const float* dy, float* dx, std::int64_t count) {
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        const auto positive = V::greater(load_vector<V, kPartial>(y + i, lanes), V::zero());
        store_vector<V, kPartial>(
            dx + i, V::select(positive, load_vector<V, kPartial>(dy + i, lanes), V::zero()), lanes);
    });
}


// Windows of two rows side by side, none clipped (the tutorial's MaxPooling1D(2)): the positions
// broadcast once per window, no loop over the window's rows per vector. (Plain functions over
// locals, as in maxpool_backward_disjoint below.)
template <class V, bool kPartial>
[[gnu::always_inline]] inline void pool_pair_vector(const float* row, std::int64_t channels, float* y,
                                                    std::int32_t* argmax, typename V::I first, typename V::I second,
                                                    typename V::M lanes) {
    const auto a = load_vector<V, kPartial>(row, lanes);
    const auto in = load_vector<V, kPartial>(row + channels, lanes);
    const auto take = pool_takes<V>(in, a);
    store_vector<V, kPartial>(y, V::select(take, in, a), lanes);
    store_i_vector<V, kPartial>(argmax, V::select_i(take, second, first), lanes);
}

template <class V>
void maxpool_forward_pairs(const PoolArgs& p, const float* x, float* y, std::int32_t* argmax, std::int64_t b) {
    const std::int64_t channels = p.channels, whole = channels / V::W * V::W;
    const auto tail = V::tail(static_cast<int>(channels - whole));
    for (std::int64_t t = 0; t < p.out_length; ++t) {
        const float* row = x + (b * p.length + 2 * t) * channels;
        const std::int64_t out = (b * p.out_length + t) * channels;
        const auto first = V::set1_i(static_cast<std::int32_t>(2 * t));
        const auto second = V::set1_i(static_cast<std::int32_t>(2 * t + 1));
        for (std::int64_t c0 = 0; c0 < whole; c0 += V::W) {
            pool_pair_vector<V, false>(row + c0, channels, y + out + c0, argmax + out + c0, first, second, tail);
        }
        if (whole < channels) {
            pool_pair_vector<V, true>(row + whole, channels, y + out + whole, argmax + out + whole, first, second, tail);
        }
    }
}

template <class V>
void maxpool_forward(const PoolArgs& p, const float* x, float* y, std::int32_t* argmax,
                     std::int64_t batch_begin, std::int64_t batch_end) {
    const bool pairs = p.pool_size == 2 && p.stride == 2 && p.pad_left == 0 && 2 * p.out_length <= p.length;
    for (std::int64_t b = batch_begin; b < batch_end; ++b) {
        if (pairs) {
            maxpool_forward_pairs<V>(p, x, y, argmax, b);
            continue;
        }
        for (std::int64_t t = 0; t < p.out_length; ++t) {
            const std::int64_t out_offset = (b * p.out_length + t) * p.channels;
            for_vectors<V>(p.channels, [&]<bool kPartial>(std::int64_t c0, typename V::M lanes) {
                auto out = V::set1(-std::numeric_limits<float>::infinity());
                auto arg = V::set1_i(-1);
                bool first = true;
                const std::int64_t start = t * p.stride - p.pad_left;  // the window's rows inside the input only
                const std::int64_t k_end = std::min<std::int64_t>(p.pool_size, p.length - start);
                for (std::int64_t k = std::max<std::int64_t>(0, -start); k < k_end; ++k) {
                    const std::int64_t source = start + k;
                    const auto in = load_vector<V, kPartial>(
                        x + (b * p.length + source) * p.channels + c0, lanes);
                    const auto position = V::set1_i(static_cast<std::int32_t>(source));
                    if (first) {
                        out = in;
                        arg = position;
                        first = false;
                        continue;
                    }
                    const auto take = pool_takes<V>(in, out);
                    out = V::select(take, in, out);
                    arg = V::select_i(take, position, arg);
                }
                store_vector<V, kPartial>(y + out_offset + c0, out, lanes);
                store_i_vector<V, kPartial>(argmax + out_offset + c0, arg, lanes);
            });
        }
    }
}

// One window of maxpool_backward_disjoint, a vector of channels at a time: its gradient (kept
// only where the pooled value, the ReLU's output at the winning row, is above 0: the ReLU's
// backward) goes to the row its argmax names and 0 to the window's other rows (to all of them
// where the argmax is -1, a window the forward marked inactive).
template <class V>
struct PoolWindowPointers {
    const float* grad_y;
    const std::int32_t* argmax;
    const float* relu_pooled_y;  // or null: no ReLU before the pooling
    float* grad_x;               // the window's first row inside the sample (padding rows are not)
    std::int64_t first_row;      // that row's index in the sample
    std::int64_t rows;           // the window's rows inside the sample
    std::int64_t row_stride;     // floats from one row to the next
};

template <class V, bool kPartial>
[[gnu::always_inline]] inline void pool_window_vector(const PoolWindowPointers<V>& w, std::int64_t c0,
                                                      typename V::M lanes) {
    auto gradient = load_vector<V, kPartial>(w.grad_y + c0, lanes);
    if (w.relu_pooled_y != nullptr) {
        gradient = V::select(V::greater(load_vector<V, kPartial>(w.relu_pooled_y + c0, lanes), V::zero()), gradient,
                             V::zero());
    }
    const auto winner = load_i_vector<V, kPartial>(w.argmax + c0, lanes);
    for (std::int64_t k = 0; k < w.rows; ++k) {
        const auto won = V::equal_i(winner, V::set1_i(static_cast<std::int32_t>(w.first_row + k)));
        store_vector<V, kPartial>(w.grad_x + k * w.row_stride + c0, V::select(won, gradient, V::zero()), lanes);
    }
}

// With stride >= pool_size, window t owns input rows t * stride - pad + k for k < pool_size and
// no window reads the rows after them up to the next window (k in [pool_size, stride)) or past
// the last window: those get zeros. A window at a time, so its gradient, argmax and pooled value
// are read once for all its rows (the ReLU's own output, the pooling's input, is not read at all).
template <class V>
void maxpool_backward_disjoint(const PoolArgs& p, const float* grad_y, const std::int32_t* argmax,
                               const float* relu_pooled_y, float* grad_x, std::int64_t batch_begin,
                               std::int64_t batch_end) {
    // Plain loops over locals: through a lambda per vector GCC reloaded every captured pointer for
    // each vector, a dozen scalar loads per 8 floats.
    const std::int64_t channels = p.channels, whole = channels / V::W * V::W;
    const auto tail = V::tail(static_cast<int>(channels - whole));
    auto zero_rows = [&](float* row, std::int64_t count) { std::fill_n(row, count * channels, 0.0f); };
    for (std::int64_t b = batch_begin; b < batch_end; ++b) {
        float* sample = grad_x + b * p.length * channels;
        for (std::int64_t t = 0; t < p.out_length; ++t) {
            const std::int64_t first = t * p.stride - p.pad_left;  // the window's first row
            const std::int64_t skip = std::max<std::int64_t>(0, -first);
            const std::int64_t rows = std::min<std::int64_t>(p.pool_size, p.length - first) - skip;
            const std::int64_t out_row = (b * p.out_length + t) * channels;
            if (rows > 0) {
                const PoolWindowPointers<V> w{grad_y + out_row, argmax + out_row,
                                              relu_pooled_y ? relu_pooled_y + out_row : nullptr,
                                              sample + (first + skip) * channels, first + skip, rows, channels};
                for (std::int64_t c0 = 0; c0 < whole; c0 += V::W) pool_window_vector<V, false>(w, c0, tail);
                if (whole < channels) pool_window_vector<V, true>(w, whole, tail);
            }
            // The rows between this window and the next that no window reads.
            const std::int64_t gap_begin = std::max<std::int64_t>(0, first + p.pool_size);
            const std::int64_t gap_end = std::min<std::int64_t>(p.length, first + p.stride);
            if (gap_begin < gap_end) zero_rows(sample + gap_begin * channels, gap_end - gap_begin);
        }
        const std::int64_t covered = std::clamp<std::int64_t>(p.out_length * p.stride - p.pad_left, 0, p.length);
        zero_rows(sample + covered * channels, p.length - covered);
    }
}

// The two optimizers below repeat reference_apply_update's formulas operation for operation.
// Products that feed an addition pass through V::opaque, which keeps the compiler from fusing
// them into a multiply-add (a different rounding); sqrt and division are correctly rounded in
// both, so every element comes out bit-identical. Whole vectors use plain loads and stores:
// with AVX2's masked stores (three per vector, 12 cycles each on AMD Zen) the AVX2 update ran
// 6x slower than AVX-512's on the same EPYC, where twice would be the width.
template <class V>
void adam(const OptimizerStep& s, float* weights, const float* grads, float* m_slot, float* v_slot,
          std::int64_t count) {
    const auto one_minus_beta_1 = V::set1(s.one_minus_beta_1),
               one_minus_beta_2 = V::set1(s.one_minus_beta_2);
    const auto alpha = V::set1(s.adam_alpha), epsilon = V::set1(s.epsilon);
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        const auto g = load_vector<V, kPartial>(grads + i, lanes);
        auto m = load_vector<V, kPartial>(m_slot + i, lanes);
        auto v = load_vector<V, kPartial>(v_slot + i, lanes);
        m = V::add(m, V::opaque(V::mul(V::sub(g, m), one_minus_beta_1)));
        v = V::add(v, V::opaque(V::mul(V::sub(V::opaque(V::mul(g, g)), v), one_minus_beta_2)));
        const auto step = V::div(V::mul(m, alpha), V::add(V::sqrt(v), epsilon));
        store_vector<V, kPartial>(
            weights + i, V::sub(load_vector<V, kPartial>(weights + i, lanes), step), lanes);
        store_vector<V, kPartial>(m_slot + i, m, lanes);
        store_vector<V, kPartial>(v_slot + i, v, lanes);
    });
}

template <class V>
void transpose(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld_src, float* dst,
               std::int64_t ld_dst) {
    constexpr std::int64_t kBlock = V::kTransposeBlock;
    const std::int64_t block_rows = rows / kBlock * kBlock, block_cols = cols / kBlock * kBlock;
    for (std::int64_t r = 0; r < block_rows; r += kBlock) {
        for (std::int64_t c = 0; c < block_cols; c += kBlock) {
            V::transpose_block(src + r * ld_src + c, ld_src, dst + c * ld_dst + r, ld_dst);
        }
    }
    // The edges: the columns right of the blocks, then the rows below them.
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = r < block_rows ? block_cols : 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
    }
}

// An Embedding row is whole vectors, then a tail of width % W floats. Rows of a few floats (the
// tutorial's 7) are one vector each where a vector's overhang stays inside its buffer: a gathered
// row's overhang is overwritten by the next position's row, a scattered row's carries the next
// row's own bits back (select), and reads past a row read floats of the buffer that are left alone.
// Only the buffers' last rows take their tail as a part (masked loads, plain partial stores: a
// masked store costs 42 micro-ops on AMD). Replaces a memcpy call (or a scalar loop) per position.
template <class V>
struct EmbeddingRows {
    std::int64_t whole;
    int tail;
    std::int64_t rows_reached;  // rows after its own that a tail vector reaches into
    typename V::M tail_lanes;

    explicit EmbeddingRows(std::int64_t row_width)
        : whole(row_width / V::W * V::W),
          tail(static_cast<int>(row_width % V::W)),
          rows_reached(tail == 0 ? 0 : (V::W - tail + row_width - 1) / row_width),
          tail_lanes(V::tail(tail)) {}
    // Whether a tail vector of row `row` of `rows` stays inside its buffer.
    bool room_after(std::int64_t row, std::int64_t rows) const { return row + rows_reached < rows; }
};

template <class V>
void embedding_gather(const float* table, std::int64_t rows, std::int64_t width, const std::int32_t* ids,
                      std::int64_t count, float* out) {
    const EmbeddingRows<V> shape(width);
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t id = ids[i];
        const float* row = table + id * width;
        float* to = out + i * width;
        for (std::int64_t d = 0; d < shape.whole; d += V::W) V::store(to + d, V::load(row + d));
        if (shape.tail == 0) continue;
        const auto x = shape.room_after(id, rows) ? V::load(row + shape.whole)
                                                  : V::load_part(row + shape.whole, shape.tail_lanes);
        if (shape.room_after(i, count)) {
            V::store(to + shape.whole, x);
        } else {
            V::store_part(to + shape.whole, x, shape.tail_lanes);
        }
    }
}

template <class V>
void embedding_scatter_add(float* table, std::int64_t rows, std::int64_t width, const std::int32_t* ids,
                           std::int64_t count, const float* grad) {
    const EmbeddingRows<V> shape(width);
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t id = ids[i];
        float* row = table + id * width;
        const float* g = grad + i * width;
        for (std::int64_t d = 0; d < shape.whole; d += V::W) V::store(row + d, V::add(V::load(row + d), V::load(g + d)));
        if (shape.tail == 0) continue;
        const auto addend = shape.room_after(i, count) ? V::load(g + shape.whole)
                                                       : V::load_part(g + shape.whole, shape.tail_lanes);
        if (shape.room_after(id, rows)) {
            const auto old = V::load(row + shape.whole);
            V::store(row + shape.whole, V::select(shape.tail_lanes, V::add(old, addend), old));
        } else {
            const auto old = V::load_part(row + shape.whole, shape.tail_lanes);
            V::store_part(row + shape.whole, V::add(old, addend), shape.tail_lanes);
        }
    }
}

// Nadam's arithmetic, in reference_apply_update's order and with no product fused into an add
// (V::opaque): nadam and nadam_rows both use it, so they stay the reference's bit for bit.
template <class V>
struct NadamMath {
    using F = typename V::F;
    F beta_1, one_minus_beta_1, beta_2, one_minus_beta_2, g_coeff, m_coeff, v_scale, learning_rate, epsilon;

    explicit NadamMath(const OptimizerStep& s)
        : beta_1(V::set1(s.beta_1)),
          one_minus_beta_1(V::set1(s.one_minus_beta_1)),
          beta_2(V::set1(s.beta_2)),
          one_minus_beta_2(V::set1(s.one_minus_beta_2)),
          g_coeff(V::set1(s.nadam_g_coeff)),
          m_coeff(V::set1(s.nadam_m_coeff)),
          v_scale(V::set1(s.nadam_v_scale)),
          learning_rate(V::set1(s.learning_rate)),
          epsilon(V::set1(s.epsilon)) {}
    // m = beta_1 m + (1 - beta_1) g, v = beta_2 v + (1 - beta_2) g².
    void moments(F g, F& m, F& v) const {
        m = V::add(V::opaque(V::mul(beta_1, m)), V::opaque(V::mul(one_minus_beta_1, g)));
        v = V::add(V::opaque(V::mul(beta_2, v)), V::opaque(V::mul(one_minus_beta_2, V::mul(g, g))));
    }
    // What the weight loses, from the gradient and the updated moments.
    F step(F g, F m, F v) const {
        const F m_hat = V::add(V::opaque(V::mul(g_coeff, g)), V::opaque(V::mul(m_coeff, m)));
        const F v_hat = V::mul(v, v_scale);
        return V::div(V::mul(learning_rate, m_hat), V::add(V::sqrt(v_hat), epsilon));
    }
};

template <class V>
void nadam(const OptimizerStep& s, float* weights, const float* grads, float* m_slot, float* v_slot,
           std::int64_t count) {
    const NadamMath<V> nadam_math(s);
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        const auto g = load_vector<V, kPartial>(grads + i, lanes);
        auto m = load_vector<V, kPartial>(m_slot + i, lanes);
        auto v = load_vector<V, kPartial>(v_slot + i, lanes);
        nadam_math.moments(g, m, v);
        const auto step = nadam_math.step(g, m, v);
        store_vector<V, kPartial>(
            weights + i, V::sub(load_vector<V, kPartial>(weights + i, lanes), step), lanes);
        store_vector<V, kPartial>(m_slot + i, m, lanes);
        store_vector<V, kPartial>(v_slot + i, v, lanes);
    });
}

// The lanes of a vector whose first float is `offset` floats into row `row` (of rows of `width`
// floats) that belong to rows in the batch (row_counts != 0): row row + k holds the lanes
// [k * width - offset, (k + 1) * width - offset).
template <class V>
typename V::M lanes_in_batch(const float* row_counts, std::int64_t rows, std::int64_t width, std::int64_t row,
                             std::int64_t offset) {
    auto in_batch = V::tail(0);
    for (std::int64_t k = 0, first = -offset; first < V::W && row + k < rows; ++k, first += width) {
        if (row_counts[row + k] == 0.0f) continue;
        const int lanes_before = static_cast<int>(std::max<std::int64_t>(first, 0));
        const int lanes_through = static_cast<int>(std::min<std::int64_t>(first + width, V::W));
        in_batch = V::mask_or(in_batch, V::and_not(V::tail(lanes_before), V::tail(lanes_through)));
    }
    return in_batch;
}

// TF2's sparse Nadam on an Embedding's rows: every row's moments as nadam computes them, and the
// weights of the rows in the batch as nadam updates them (the others keep theirs). Flat over the
// rows' floats, a vector at a time, whatever the row width: a kernel call per run of rows in or
// out of the batch cost more than the arithmetic (the batch's rows are scattered, runs of a few
// rows of 7 floats).
template <class V>
void nadam_rows(const OptimizerStep& s, float* weights, const float* grads, float* m_slot, float* v_slot,
                const float* row_counts, std::int64_t rows, std::int64_t width) {
    const NadamMath<V> nadam_math(s);
    std::int64_t row = 0, offset = 0;  // the row of the vector's first float, and that float's place in it
    for_vectors<V>(rows * width, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        const auto in_batch = lanes_in_batch<V>(row_counts, rows, width, row, offset);
        const auto g = load_vector<V, kPartial>(grads + i, lanes);
        auto m = load_vector<V, kPartial>(m_slot + i, lanes);
        auto v = load_vector<V, kPartial>(v_slot + i, lanes);
        nadam_math.moments(g, m, v);
        store_vector<V, kPartial>(m_slot + i, m, lanes);
        store_vector<V, kPartial>(v_slot + i, v, lanes);
        if (!V::none(in_batch)) {
            const auto w = load_vector<V, kPartial>(weights + i, lanes);
            store_vector<V, kPartial>(weights + i, V::select(in_batch, V::sub(w, nadam_math.step(g, m, v)), w), lanes);
        }
        for (offset += V::W; offset >= width; offset -= width) ++row;
    });
}

// The rows of a table whose row count is not 0 (a NaN count too, as nadam_rows and the reference
// decide; counts are never negative), in order: a vector of counts at a time, then its set lanes.
// (Queueing the rows ahead to prefetch theirs was slower.)
template <class V>
class BatchRows {
  public:
    BatchRows(const float* row_counts, std::int64_t rows) : counts_(row_counts), rows_(rows) {}
    // The next row in the batch, or -1.
    std::int64_t next() {
        while (lanes_ == 0) {
            group_ = scanned_;
            if (scanned_ + V::W <= rows_) {
                const auto counts = V::load(counts_ + scanned_);
                lanes_ = V::lane_bits(V::mask_or(V::greater(counts, V::zero()), V::is_nan(counts)));
                scanned_ += V::W;
            } else if (scanned_ < rows_) {
                lanes_ = counts_[scanned_] != 0.0f ? 1u : 0u;
                scanned_ += 1;
            } else {
                return -1;
            }
        }
        const std::int64_t row = group_ + std::countr_zero(lanes_);
        lanes_ &= lanes_ - 1;
        return row;
    }

  private:
    const float* counts_;
    std::int64_t rows_, scanned_ = 0, group_ = 0;  // group_: the first row of the lanes left
    unsigned lanes_ = 0;
};

// nadam_rows with the decays of the rows outside the batch deferred (IndexedSlicesStats::
// moment_decays): only the batch's rows are read and written, each first taking the decays it owes
// (nadam's moments for a zero gradient, one update at a time), then nadam's update. `clock` is this
// update's (the table's counter, already advanced).
//
// The decays a row owes are a chain of dependent multiply-adds (a rare word's row owes hundreds),
// so rows of up to one vector take them side by side: kSlots rows at once, each slot taking the
// next batch row as soon as its own has paid, so the chains overlap instead of each waiting on the
// latency of the one before. Wider rows take theirs one vector at a time.
template <class V>
void nadam_rows_deferred(const OptimizerStep& s, float* weights, const float* grads, float* m_slot, float* v_slot,
                         const float* row_counts, std::uint32_t* decay_marks, std::uint32_t clock,
                         std::int64_t rows, std::int64_t width) {
    using F = typename V::F;
    const NadamMath<V> nadam_math(s);
    BatchRows<V> batch_rows(row_counts, rows);
    const auto owed = [&](std::int64_t row) {
        const std::uint32_t decays = clock - 1u - decay_marks[row];
        decay_marks[row] = clock;
        return decays;
    };
    // Nadam's update of the floats of vector i (of a batch row), from their caught-up moments.
    const auto update = [&]<bool kPartial>(std::int64_t i, typename V::M lanes, F m, F v) {
        const auto g = load_vector<V, kPartial>(grads + i, lanes);
        nadam_math.moments(g, m, v);
        const auto step = nadam_math.step(g, m, v);
        store_vector<V, kPartial>(weights + i, V::sub(load_vector<V, kPartial>(weights + i, lanes), step), lanes);
        store_vector<V, kPartial>(m_slot + i, m, lanes);
        store_vector<V, kPartial>(v_slot + i, v, lanes);
    };
    if (width > V::W) {
        for (std::int64_t row = batch_rows.next(); row >= 0; row = batch_rows.next()) {
            const std::uint32_t decays = owed(row);
            for_vectors<V>(width, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
                i += row * width;
                auto m = load_vector<V, kPartial>(m_slot + i, lanes);
                auto v = load_vector<V, kPartial>(v_slot + i, lanes);
                for (std::uint32_t k = 0; k < decays; ++k) nadam_math.moments(V::zero(), m, v);
                update.template operator()<kPartial>(i, lanes, m, v);
            });
        }
        return;
    }
    constexpr int kSlots = 4;  // 8 chains of 2 operations: enough to fill two pipes' latency
    const auto lanes = V::tail(static_cast<int>(width));
    // A row's floats as one whole vector where the vector stays inside this chunk of rows
    // (EmbeddingRows, as the gather and the scatter read theirs), its overhang reading into the rows
    // after it, which the partial stores leave alone: the batch's rows are scattered cache lines, and
    // the masked loads of them were this kernel's hottest instructions (AMD Zen 4, AVX2, the tutorial's
    // table with the tables evicted between updates: 0.187-0.194 -> 0.173-0.181 ms per update; a proxy
    // of 3,511 rows, 4 tables: 171 -> 124 us). The chunk's last rows load their own floats only.
    const EmbeddingRows<V> shape(width);
    const auto load_row = [&](const float* table, std::int64_t row) {
        return shape.room_after(row, rows) ? V::load(table + row * width) : V::load_part(table + row * width, lanes);
    };
    // Nadam's update of a batch row of at most one vector, from its caught-up moments.
    const auto update_row = [&](std::int64_t row, F m, F v) {
        const auto g = load_row(grads, row);
        nadam_math.moments(g, m, v);
        const auto step = nadam_math.step(g, m, v);
        float* const at = weights + row * width;
        V::store_part(at, V::sub(load_row(weights, row), step), lanes);
        V::store_part(m_slot + row * width, m, lanes);
        V::store_part(v_slot + row * width, v, lanes);
    };
    F m[kSlots], v[kSlots];  // an idle slot's decay zeros, which nothing stores
#pragma GCC unroll 4
    for (int k = 0; k < kSlots; ++k) m[k] = v[k] = V::zero();
    std::int64_t slot_row[kSlots];  // -1: the slot is idle (no batch rows left)
    std::uint32_t left[kSlots] = {};  // decays its row still owes (any uint32, 2^32 - 1 included)
    // Slot k takes the next batch row (or goes idle), then hands rows that owe nothing straight on.
    const auto fill = [&](int k) {
        for (;;) {
            const std::int64_t row = batch_rows.next();
            slot_row[k] = row;
            if (row < 0) return;
            m[k] = load_row(m_slot, row);
            v[k] = load_row(v_slot, row);
            left[k] = owed(row);
            if (left[k] != 0) return;
            update_row(row, m[k], v[k]);
        }
    };
#pragma GCC unroll 4
    for (int k = 0; k < kSlots; ++k) fill(k);
    constexpr std::uint64_t kNoRow = ~std::uint64_t{0};  // above every uint32 count
    for (;;) {
        std::uint64_t decays = kNoRow;
#pragma GCC unroll 4
        for (int k = 0; k < kSlots; ++k) {
            if (slot_row[k] >= 0) decays = std::min<std::uint64_t>(decays, left[k]);
        }
        if (decays == kNoRow) return;
        for (std::uint64_t d = 0; d < decays; ++d) {
#pragma GCC unroll 4
            for (int k = 0; k < kSlots; ++k) nadam_math.moments(V::zero(), m[k], v[k]);
        }
#pragma GCC unroll 4
        for (int k = 0; k < kSlots; ++k) {
            if (slot_row[k] < 0) continue;
            left[k] -= static_cast<std::uint32_t>(decays);
            if (left[k] != 0) continue;
            update_row(slot_row[k], m[k], v[k]);
            fill(k);
        }
    }
}

// The sum of x² in double, as the reference (each float's square is exact in double), over eight
// independent sums: the reference's one chain waits for each add (4 cycles an element; the step
// view's gradient norms took 1 % of the GUI's training with it). Only the order of the additions
// differs from the reference's, in the last bits of a double.
template <class V>
double sum_of_squares(const float* x, std::int64_t count) {
    constexpr int kSums = 8;
    double sums[kSums] = {};
    std::int64_t i = 0;
    for (; i + kSums <= count; i += kSums) {
#pragma GCC unroll 8
        for (int k = 0; k < kSums; ++k) sums[k] += static_cast<double>(x[i + k]) * x[i + k];
    }
    for (int k = 0; i < count; ++i, ++k) sums[k] += static_cast<double>(x[i]) * x[i];
    return ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
}

template <class V>
void add(float* dst, const float* src, std::int64_t count) {
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        store_vector<V, kPartial>(dst + i,
                                  V::add(load_vector<V, kPartial>(dst + i, lanes),
                                         load_vector<V, kPartial>(src + i, lanes)),
                                  lanes);
    });
}

// The all-reduce's sum with its finiteness check riding on it (the sum is in registers anyway):
// dst += src, then whether every element of the result is finite, as all_finite below decides.
template <class V>
bool add_all_finite(float* dst, const float* src, std::int64_t count) {
    auto check = V::zero();
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        const auto sum = V::add(load_vector<V, kPartial>(dst + i, lanes), load_vector<V, kPartial>(src + i, lanes));
        store_vector<V, kPartial>(dst + i, sum, lanes);
        check = V::add(check, V::mul(sum, V::zero()));
    });
    return V::all_zero(check);
}

// add_all_finite storing the sum into both addends: a two-replica all-reduce's sum, in both
// replicas' buffers without a copy that reads it back. AMD EPYC Zen 4, AVX2, the tutorial's
// gradients, in-process A/B of 200-step trainings (10 rounds, medians): the all-reduce 0.049 ->
// 0.030 and 0.070 -> 0.033 ms, the step 1.978 -> 1.960 and 2.128 -> 2.058 ms. (Two check
// accumulators instead of one changed nothing: the pass is bound by memory.)
template <class V>
bool add_into_both_all_finite(float* a, float* b, std::int64_t count) {
    auto check = V::zero();
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        const auto sum = V::add(load_vector<V, kPartial>(a + i, lanes), load_vector<V, kPartial>(b + i, lanes));
        store_vector<V, kPartial>(a + i, sum, lanes);
        store_vector<V, kPartial>(b + i, sum, lanes);
        check = V::add(check, V::mul(sum, V::zero()));
    });
    return V::all_zero(check);
}

// x * 0 is 0 for every finite x and NaN for an infinity or a NaN; the sum stays 0 until then.
template <class V>
bool all_finite(const float* x, std::int64_t count) {
    auto sum = V::zero();
    for_vectors<V>(count, [&]<bool kPartial>(std::int64_t i, typename V::M lanes) {
        sum = V::add(sum, V::mul(load_vector<V, kPartial>(x + i, lanes), V::zero()));
    });
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
        if constexpr (V::W == 1) {
            // Plain code: the compiler vectorises this loop with the baseline's vectors (SSE2 on
            // x86-64), as it does the scalar GEMM blocks, which reach twice a scalar chain's rate.
            for (int i = 0; i < N; ++i) acc[i] = V::fmadd(acc[i], a, b);
        } else {
#pragma GCC unroll 32
            for (int i = 0; i < N; ++i) acc[i] = V::fmadd(acc[i], a, b);
        }
    }
    auto sum = acc[0];
#pragma GCC unroll 32
    for (int i = 1; i < N; ++i) sum = V::add(sum, acc[i]);
    float lanes[V::W];
    V::store(lanes, sum);
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
    table.transpose = transpose<V>;
    table.embedding_gather = embedding_gather<V>;
    table.embedding_scatter_add = embedding_scatter_add<V>;
    table.nadam_rows = nadam_rows<V>;
    table.nadam_rows_deferred = nadam_rows_deferred<V>;
    table.add = add<V>;
    table.add_all_finite = add_all_finite<V>;
    table.add_into_both_all_finite = add_into_both_all_finite<V>;
    table.all_finite = all_finite<V>;
    table.sum_of_squares = sum_of_squares<V>;
    table.fma_probe = fma_probe<V>;
    table.fma_probe_flops = 2 * V::W * V::kFmaChains;
    return table;
}
