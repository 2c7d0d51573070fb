#pragma once
// The vectorised kernels behind CpuFastBackend, one table per instruction set. The kernels are
// written once (cpu_fast_kernels.inl) over a small vector type and compiled three times: for
// AVX-512, for AVX2+FMA and for plain x86-64 / any CPU (cpu_fast_isa_*.cpp). The table for the
// running CPU is chosen at run time, so the default build stays portable (no -march=native).
//
// The kernels are single-threaded and allocation-free; CpuFastBackend splits ops into chunks for
// the thread pool and calls these on each chunk.
#include <cstdint>
#include <string_view>

namespace mirrorlab {

struct OptimizerStep;

namespace fast {

// Strides are in elements. Element (row r, depth p) of A is A[r * a_row + p * a_depth], so the
// same kernel computes A·B (a_row = lda, a_depth = 1) and Aᵀ·B (a_row = 1, a_depth = lda), and
// reads a convolution's sliding windows straight from its input (implicit im2col: window t of a
// channels-last sequence is the K * C floats that start at t * C).
struct GemmArgs {
    std::int64_t rows = 0, cols = 0, depth = 0;  // C is rows x cols; the sum runs over depth
    const float* a = nullptr;
    std::int64_t a_row = 0, a_depth = 0;
    const float* b = nullptr;  // depth x cols, row stride ldb
    std::int64_t ldb = 0;
    float* c = nullptr;  // rows x cols, row stride ldc
    std::int64_t ldc = 0;
    const float* bias = nullptr;  // C starts from bias[col] (else 0) unless accumulate
    bool accumulate = false;      // C starts from its own values
    bool relu = false;            // C is stored as relu(C), relu_forward's bits (a Conv1D's activation)
    // MaxPooling1D(2) as C is stored (the fused Conv1D + ReLU + MaxPooling1D): rows 2q and 2q + 1 of
    // C go to row q of `pooled` (row stride ldc) and the winner's row in the sample, counting C's
    // row 0 as row pool_first_row, to pool_argmax (same layout): maxpool_forward's bits. Needs an
    // even number of rows and an even pool_first_row.
    float* pooled = nullptr;
    std::int32_t* pool_argmax = nullptr;
    std::int64_t pool_first_row = 0;
    // With pooled and relu, for a backward that reads neither the convolution's rows nor the pooled
    // values: C itself is not stored, and pool_argmax gets -1 where the pooled value is not above 0
    // (a window the ReLU's backward passes no gradient through).
    bool pooled_only = false;
};

struct PoolArgs {
    std::int64_t batch = 0, length = 0, channels = 0, out_length = 0;
    std::int32_t pool_size = 0, stride = 0, pad_left = 0;
};

struct KernelTable {
    std::string_view isa;  // "avx512", "avx2", "generic"
    int vector_width = 1;  // floats per vector

    // C = init + A·B over depth, fused multiply-add in depth order.
    void (*gemm)(const GemmArgs& args);
    // out[col] = (accumulate ? out[col] : 0) + sum over rows of b[row * ldb + col].
    void (*column_sums)(const float* b, std::int64_t rows, std::int64_t cols, std::int64_t ldb,
                        float* out, bool accumulate);
    // dx[s, c] = sum over taps k with t = s + pad - k in [0, out_length) of
    // z[t, k * channels + c], for rows s in [row_begin, row_end): the transpose of reading
    // sliding windows (col2im), summed in tap order.
    void (*fold_windows)(const float* z, std::int64_t out_length, std::int64_t window,
                         std::int64_t channels, std::int64_t pad, float* dx, std::int64_t row_begin,
                         std::int64_t row_end);
    // fold_windows from a transposed z, zt[(k * channels + c) * out_length + t], into dx's rows
    // (dx[s * channels + c], all `length` rows), the same sums bit for bit; null where the
    // instruction set has no 8 x 8 transpose in registers (one float per vector: a transposed z
    // fills no more lanes there).
    void (*fold_windows_to_rows)(const float* zt, std::int64_t out_length, std::int64_t window,
                                 std::int64_t channels, std::int64_t pad, float* dx, std::int64_t length) = nullptr;
    // y = relu(x) (NaN stays NaN, -0 stays -0, as the reference); y may alias x.
    void (*relu_forward)(const float* x, float* y, std::int64_t count);
    // dx = y > 0 ? dy : 0; dx may alias dy.
    void (*relu_backward)(const float* y, const float* dy, float* dx, std::int64_t count);
    // Max pooling over samples [batch_begin, batch_end), the reference's tie and NaN rules.
    void (*maxpool_forward)(const PoolArgs& args, const float* x, float* y, std::int32_t* argmax,
                            std::int64_t batch_begin, std::int64_t batch_end);
    // Needs windows that do not overlap (stride >= pool_size): each input row then has at most
    // one window, so grad_x is written once instead of zero-filled and scattered into. With
    // relu_pooled_y (the pooling's output where its input is a ReLU's output; else null) it is also
    // the ReLU's backward, relu_backward on the result bit for bit, in the same pass: the winning
    // row's ReLU output is the pooled value. A window whose argmax is -1 (GemmArgs::
    // pooled_only) gives every row 0: the ReLU's backward without relu_pooled_y.
    void (*maxpool_backward_disjoint)(const PoolArgs& args, const float* grad_y, const std::int32_t* argmax,
                                      const float* relu_pooled_y, float* grad_x, std::int64_t batch_begin,
                                      std::int64_t batch_end);
    // dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols (8 x 8 blocks in registers
    // with AVX2 and AVX-512).
    void (*transpose)(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t ld_src, float* dst,
                      std::int64_t ld_dst);
    // An Embedding's rows, ids already checked to lie in [0, rows): out[i] = table[ids[i]] (gather)
    // and table[ids[i]] += grad[i] in position order, the reference's sums bit for bit (scatter).
    void (*embedding_gather)(const float* table, std::int64_t rows, std::int64_t width, const std::int32_t* ids,
                             std::int64_t count, float* out);
    void (*embedding_scatter_add)(float* table, std::int64_t rows, std::int64_t width, const std::int32_t* ids,
                                  std::int64_t count, const float* grad);
    // Adam and Nadam exactly as reference_apply_update (same operation order, no contraction):
    // bit-identical results.
    void (*adam)(const OptimizerStep& step, float* weights, const float* grads, float* m, float* v,
                 std::int64_t count);
    void (*nadam)(const OptimizerStep& step, float* weights, const float* grads, float* m, float* v,
                  std::int64_t count);
    // TF2's sparse Nadam on an Embedding table of `rows` rows of `width` floats: the rows in the
    // batch (row_counts[row] != 0) as nadam updates them; the others' moments decay as nadam
    // computes them (m = beta_1 m + (1 - beta_1) g, v = beta_2 v + (1 - beta_2) g²) and their
    // weights stay.
    void (*nadam_rows)(const OptimizerStep& step, float* weights, const float* grads, float* m, float* v,
                       const float* row_counts, std::int64_t rows, std::int64_t width);
    // nadam_rows with the decays of rows outside the batch deferred (IndexedSlicesStats::
    // moment_decays; `clock` already advanced for this update): rows outside the batch are not
    // touched; a batch row first takes the decays it owes, and its mark becomes `clock`.
    void (*nadam_rows_deferred)(const OptimizerStep& step, float* weights, const float* grads, float* m, float* v,
                                const float* row_counts, std::uint32_t* decay_marks, std::uint32_t clock,
                                std::int64_t rows, std::int64_t width);
    void (*add)(float* dst, const float* src, std::int64_t count);
    // add, then whether every element of dst is finite (all_finite, in the same pass).
    bool (*add_all_finite)(float* dst, const float* src, std::int64_t count);
    bool (*add_into_both_all_finite)(float* a, float* b, std::int64_t count);  // a = b = a + b
    bool (*all_finite)(const float* x, std::int64_t count);
    // The sum of the squares in double (the reference's, summed in another order).
    double (*sum_of_squares)(const float* x, std::int64_t count);

    // The FMA units' peak for this instruction set (the bench's floor): `iterations` rounds of
    // independent multiply-add chains, one vector register each, enough of them to cover the
    // units' latency (2 units x 4-5 cycles on current x86 cores). Returns a value that depends on
    // every chain, so that none is optimised away; fma_probe_flops per iteration.
    float (*fma_probe)(std::int64_t iterations);
    std::int64_t fma_probe_flops = 0;  // 2 x lanes x chains
};

const KernelTable& kernels_generic();
const KernelTable* kernels_avx2();    // nullptr when the compiler cannot target it
const KernelTable* kernels_avx512();  // nullptr when the compiler cannot target it

// The best table this CPU runs; MIRRORLAB_CPU_ISA=generic|avx2|avx512 caps it (for tests).
const KernelTable& best_kernels();

}  // namespace fast
}  // namespace mirrorlab
