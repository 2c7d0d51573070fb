#include "core/backend/cpu_fast.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>

#include "core/optim/optimizer.h"
#include "core/util/error.h"
#include "core/util/thread_pool.h"

namespace mirrorlab {

namespace {

using fast::GemmArgs;

std::atomic<int> g_live_backends{0};

// Rows of one convolution chunk: big enough that a chunk's GEMM amortises its set-up, small
// enough that a batch of 1 still splits over the threads.
constexpr std::int64_t kConvChunkRows = 64;
// Optimizer and elementwise chunks (elements): a few hundred microseconds of work at most.
constexpr std::int64_t kUpdateChunk = 1 << 17;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

// dst[c, r] = src[r, c]. Strips of 16 source rows keep both sides within a few cache lines
// (4x faster than the plain double loop for the Dense kernel, 2336 x 46).
void transpose(const float* src, std::int64_t rows, std::int64_t cols, float* dst) {
    constexpr std::int64_t kStrip = 16;
    for (std::int64_t r0 = 0; r0 < rows; r0 += kStrip) {
        const std::int64_t r1 = std::min(rows, r0 + kStrip);
        for (std::int64_t c = 0; c < cols; ++c) {
            for (std::int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
        }
    }
}

}  // namespace

// A 1-D convolution of stride 1 over one sample, channels last: output row t reads input rows
// t - pad .. t - pad + K - 1, i.e. the K * C floats from (t - pad) * C on. Rows whose window
// lies inside the input are "full"; the others (only with 'same' padding) are clipped.
struct ConvGeometry {
    std::int64_t batch = 0, length = 0, in_channels = 0, window = 0, out_channels = 0,
                 out_length = 0;
    std::int64_t pad = 0;
    std::int64_t full_begin = 0, full_end = 0;  // output rows with the whole window inside

    ConvGeometry(const TensorView& x, const TensorView& kernel, std::int64_t output_length,
                 std::int32_t pad_left)
        : batch(x.shape[0]),
          length(x.shape[1]),
          in_channels(x.shape[2]),
          window(kernel.shape[0]),
          out_channels(kernel.shape[2]),
          out_length(output_length),
          pad(pad_left) {
        full_begin = std::clamp<std::int64_t>(pad, 0, out_length);
        full_end = std::clamp<std::int64_t>(length - window + pad + 1, full_begin, out_length);
    }
    std::int64_t depth() const { return window * in_channels; }
    bool full(std::int64_t t) const { return t >= full_begin && t < full_end; }
    // The window taps [k_begin, k_end) of output row t that fall inside the input.
    std::int64_t k_begin(std::int64_t t) const { return std::max<std::int64_t>(0, pad - t); }
    std::int64_t k_end(std::int64_t t) const {
        return std::min<std::int64_t>(window, length + pad - t);
    }
};


CpuFastBackend::CpuFastBackend() : CpuFastBackend(fast::best_kernels()) {}

CpuFastBackend::CpuFastBackend(const fast::KernelTable& kernels) : kernels_(kernels) {
    ++g_live_backends;
}

CpuFastBackend::~CpuFastBackend() {
    --g_live_backends;
}

std::string_view CpuFastBackend::isa() const {
    return kernels_.isa;
}

int CpuFastBackend::threads() const {
    return std::max(1, ThreadPool::instance().limit() / std::max(1, g_live_backends.load()));
}

float* CpuFastBackend::scratch(std::size_t count) {
    if (scratch_.size() < count) scratch_.resize(count);
    return scratch_.data();
}

void CpuFastBackend::conv1d_forward(const TensorView& x, const TensorView& kernel,
                                    const TensorView& bias, const TensorView& y,
                                    const Conv1DParams& params) {
    check_conv1d_shapes(x, kernel, y);
    const ConvGeometry g(x, kernel, y.shape[1], params.pad_left);
    const std::int64_t chunks_per_sample =
        std::max<std::int64_t>(1, ceil_div(g.out_length, kConvChunkRows));
    const float* bias_data = bias ? bias.f32() : nullptr;
    ThreadPool::instance().parallel_for(
        g.batch * chunks_per_sample, threads(), [&](std::int64_t chunk) {
            const std::int64_t b = chunk / chunks_per_sample;
            const std::int64_t row_begin = chunk % chunks_per_sample * kConvChunkRows;
            const std::int64_t row_end = std::min(g.out_length, row_begin + kConvChunkRows);
            const float* x_b = x.f32() + b * g.length * g.in_channels;
            float* y_b = y.f32() + b * g.out_length * g.out_channels;
            GemmArgs gemm;
            gemm.cols = g.out_channels;
            gemm.a_row = g.in_channels;
            gemm.a_depth = 1;
            gemm.ldb = g.out_channels;
            gemm.ldc = g.out_channels;
            gemm.bias = bias_data;
            const std::int64_t full_begin = std::max(row_begin, g.full_begin),
                               full_end = std::min(row_end, g.full_end);
            if (full_begin < full_end) {
                gemm.rows = full_end - full_begin;
                gemm.depth = g.depth();
                gemm.a = x_b + (full_begin - g.pad) * g.in_channels;
                gemm.b = kernel.f32();
                gemm.c = y_b + full_begin * g.out_channels;
                kernels_.gemm(gemm);
            }
            for (std::int64_t t = row_begin; t < row_end; ++t) {
                if (full_begin < full_end && t >= full_begin && t < full_end) continue;
                const std::int64_t k0 = g.k_begin(t), k1 = std::max(k0, g.k_end(t));
                gemm.rows = 1;
                gemm.depth = (k1 - k0) * g.in_channels;  // 0: the row is just the bias
                gemm.a = x_b + (t + k0 - g.pad) * g.in_channels;
                gemm.b = kernel.f32() + k0 * g.in_channels * g.out_channels;
                gemm.c = y_b + t * g.out_channels;
                kernels_.gemm(gemm);
            }
        });
}

void CpuFastBackend::conv1d_backward(const TensorView& x, const TensorView& kernel,
                                     const TensorView& grad_y, const TensorView& grad_x,
                                     const TensorView& grad_kernel, const TensorView& grad_bias,
                                     const Conv1DParams& params) {
    const ConvGeometry g(x, kernel, grad_y.shape[1], params.pad_left);
    const int thread_count = threads();
    ThreadPool& pool = ThreadPool::instance();
    if (grad_bias) {
        kernels_.column_sums(grad_y.f32(), g.batch * g.out_length, g.out_channels, g.out_channels,
                             grad_bias.f32(), false);
    }

    // grad_kernel[k * Cin + c, o] = sum over samples and rows t of x[t - pad + k, c] * grad_y[t,
    // o]: a GEMM Aᵀ·B over the rows, split by kernel rows so that every sum runs in the same order
    // on any number of threads.
    const std::int64_t depth = g.depth();
    const std::int64_t rows_per_chunk =
        std::max<std::int64_t>(6, ceil_div(depth, 2 * thread_count));
    pool.parallel_for(ceil_div(depth, rows_per_chunk), thread_count, [&](std::int64_t chunk) {
        const std::int64_t p0 = chunk * rows_per_chunk, p1 = std::min(depth, p0 + rows_per_chunk);
        float* dw = grad_kernel.f32() + p0 * g.out_channels;
        std::fill_n(dw, (p1 - p0) * g.out_channels, 0.0f);
        GemmArgs gemm;
        gemm.cols = g.out_channels;
        gemm.a_row = 1;
        gemm.a_depth = g.in_channels;
        gemm.ldb = g.out_channels;
        gemm.ldc = g.out_channels;
        gemm.accumulate = true;
        for (std::int64_t b = 0; b < g.batch; ++b) {
            const float* x_b = x.f32() + b * g.length * g.in_channels;
            const float* dy_b = grad_y.f32() + b * g.out_length * g.out_channels;
            if (g.full_begin < g.full_end) {
                gemm.rows = p1 - p0;
                gemm.depth = g.full_end - g.full_begin;
                gemm.a = x_b + (g.full_begin - g.pad) * g.in_channels + p0;
                gemm.b = dy_b + g.full_begin * g.out_channels;
                gemm.c = dw;
                kernels_.gemm(gemm);
            }
            for (std::int64_t t = 0; t < g.out_length; ++t) {
                if (g.full(t)) continue;
                const std::int64_t q0 = std::max(p0, g.k_begin(t) * g.in_channels);
                const std::int64_t q1 = std::min(p1, g.k_end(t) * g.in_channels);
                if (q0 >= q1) continue;
                gemm.rows = q1 - q0;
                gemm.depth = 1;
                gemm.a = x_b + (t - g.pad) * g.in_channels + q0;
                gemm.b = dy_b + t * g.out_channels;
                gemm.c = grad_kernel.f32() + q0 * g.out_channels;
                kernels_.gemm(gemm);
            }
        }
    });
    if (!grad_x) return;
    // Two ways to the input gradient; the GEMM of each is as wide as its output rows, so take
    // the one that fills more vector lanes: Cin wide (conv2: 64 of 64) or K * Cin wide (conv1:
    // 35 of 48 lanes, where Cin = 7 would fill 7 of 16).
    const int width = kernels_.vector_width;
    auto lane_use = [width](std::int64_t n) {
        return static_cast<double>(n) / static_cast<double>(ceil_div(n, width) * width);
    };
    if (lane_use(g.depth()) > lane_use(g.in_channels)) {
        conv1d_grad_x_folded(g, kernel, grad_y, grad_x);
    } else {
        conv1d_grad_x_direct(g, kernel, grad_y, grad_x);
    }
}

// grad_x[s, c] = sum over taps j of grad_y[s + pad - (K - 1) + j, :] · flipped[j, :, c], with
// flipped[j, o, c] = kernel[K - 1 - j, c, o]: again a sliding-window GEMM, now over grad_y.
void CpuFastBackend::conv1d_grad_x_direct(const ConvGeometry& g, const TensorView& kernel,
                                          const TensorView& grad_y, const TensorView& grad_x) {
    float* flipped = scratch(static_cast<std::size_t>(g.window * g.out_channels * g.in_channels));
    for (std::int64_t j = 0; j < g.window; ++j) {
        for (std::int64_t c = 0; c < g.in_channels; ++c) {
            const float* w_row =
                kernel.f32() + ((g.window - 1 - j) * g.in_channels + c) * g.out_channels;
            for (std::int64_t o = 0; o < g.out_channels; ++o) {
                flipped[(j * g.out_channels + o) * g.in_channels + c] = w_row[o];
            }
        }
    }
    // Input rows s whose taps all land on output rows: s + pad - (K - 1) >= 0 and s + pad < To.
    const std::int64_t s_full_begin = std::clamp<std::int64_t>(g.window - 1 - g.pad, 0, g.length);
    const std::int64_t s_full_end =
        std::clamp<std::int64_t>(g.out_length - g.pad, s_full_begin, g.length);
    const std::int64_t chunks_per_sample =
        std::max<std::int64_t>(1, ceil_div(g.length, kConvChunkRows));
    ThreadPool::instance().parallel_for(
        g.batch * chunks_per_sample, threads(), [&](std::int64_t chunk) {
            const std::int64_t b = chunk / chunks_per_sample;
            const std::int64_t row_begin = chunk % chunks_per_sample * kConvChunkRows;
            const std::int64_t row_end = std::min(g.length, row_begin + kConvChunkRows);
            const float* dy_b = grad_y.f32() + b * g.out_length * g.out_channels;
            float* dx_b = grad_x.f32() + b * g.length * g.in_channels;
            GemmArgs gemm;
            gemm.cols = g.in_channels;
            gemm.a_row = g.out_channels;
            gemm.a_depth = 1;
            gemm.ldb = g.in_channels;
            gemm.ldc = g.in_channels;
            const std::int64_t full_begin = std::max(row_begin, s_full_begin),
                               full_end = std::min(row_end, s_full_end);
            if (full_begin < full_end) {
                gemm.rows = full_end - full_begin;
                gemm.depth = g.window * g.out_channels;
                gemm.a = dy_b + (full_begin + g.pad - g.window + 1) * g.out_channels;
                gemm.b = flipped;
                gemm.c = dx_b + full_begin * g.in_channels;
                kernels_.gemm(gemm);
            }
            for (std::int64_t s = row_begin; s < row_end; ++s) {
                if (full_begin < full_end && s >= full_begin && s < full_end) continue;
                const std::int64_t first_t = s + g.pad - g.window + 1;  // output row of tap j = 0
                const std::int64_t j0 = std::max<std::int64_t>(0, -first_t);
                const std::int64_t j1 = std::max(j0, std::min(g.window, g.out_length - first_t));
                gemm.rows = 1;
                gemm.depth = (j1 - j0) * g.out_channels;  // 0: no output row reads this input row
                gemm.a = dy_b + (first_t + j0) * g.out_channels;
                gemm.b = flipped + j0 * g.out_channels * g.in_channels;
                gemm.c = dx_b + s * g.in_channels;
                kernels_.gemm(gemm);
            }
        });
}

// z[t, k * Cin + c] = grad_y[t, :] · kernel[k, c, :] for every output row (a GEMM with the kernel
// transposed), then each input row sums the taps that read it (fold_windows).
void CpuFastBackend::conv1d_grad_x_folded(const ConvGeometry& g, const TensorView& kernel,
                                          const TensorView& grad_y, const TensorView& grad_x) {
    const std::int64_t depth = g.depth();
    float* transposed =
        scratch(static_cast<std::size_t>(depth * g.out_channels + g.batch * g.out_length * depth));
    float* z = transposed + depth * g.out_channels;
    transpose(kernel.f32(), depth, g.out_channels, transposed);
    ThreadPool& pool = ThreadPool::instance();
    const int thread_count = threads();
    const std::int64_t z_chunks = std::max<std::int64_t>(1, ceil_div(g.out_length, kConvChunkRows));
    pool.parallel_for(g.batch * z_chunks, thread_count, [&](std::int64_t chunk) {
        const std::int64_t b = chunk / z_chunks;
        const std::int64_t t0 = chunk % z_chunks * kConvChunkRows;
        GemmArgs gemm;
        gemm.rows = std::max<std::int64_t>(0, std::min(kConvChunkRows, g.out_length - t0));
        gemm.cols = depth;
        gemm.depth = g.out_channels;
        gemm.a = grad_y.f32() + (b * g.out_length + t0) * g.out_channels;
        gemm.a_row = g.out_channels;
        gemm.a_depth = 1;
        gemm.b = transposed;
        gemm.ldb = depth;
        gemm.c = z + (b * g.out_length + t0) * depth;
        gemm.ldc = depth;
        kernels_.gemm(gemm);
    });
    const std::int64_t x_chunks = std::max<std::int64_t>(1, ceil_div(g.length, kConvChunkRows));
    pool.parallel_for(g.batch * x_chunks, thread_count, [&](std::int64_t chunk) {
        const std::int64_t b = chunk / x_chunks;
        const std::int64_t s0 = chunk % x_chunks * kConvChunkRows;
        kernels_.fold_windows(z + b * g.out_length * depth, g.out_length, g.window, g.in_channels,
                              g.pad, grad_x.f32() + b * g.length * g.in_channels, s0,
                              std::min(g.length, s0 + kConvChunkRows));
    });
}

void CpuFastBackend::maxpool1d_forward(const TensorView& x, const TensorView& y,
                                       const TensorView& argmax, const Pool1DParams& params) {
    check_rank(x, 3, "max_pooling1d", "input");
    fast::PoolArgs geometry;
    geometry.batch = x.shape[0];
    geometry.length = x.shape[1];
    geometry.channels = x.shape[2];
    geometry.out_length = y.shape[1];
    geometry.pool_size = params.pool_size;
    geometry.stride = params.stride;
    geometry.pad_left = params.pad_left;
    ThreadPool::instance().parallel_for(geometry.batch, threads(), [&](std::int64_t b) {
        kernels_.maxpool_forward(geometry, x.f32(), y.f32(), argmax.i32(), b, b + 1);
    });
    PoolRecord* record = nullptr;
    for (auto& candidate : pools_) {
        if (candidate.argmax == argmax.data) record = &candidate;
    }
    if (record == nullptr) {
        record = &pools_[next_pool_];
        next_pool_ = (next_pool_ + 1) % static_cast<int>(std::size(pools_));
    }
    record->argmax = argmax.data;
    record->geometry = geometry;
}

void CpuFastBackend::maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax,
                                        const TensorView& grad_x) {
    const PoolRecord* record = nullptr;
    for (const auto& candidate : pools_) {
        if (candidate.argmax == argmax.data) record = &candidate;
    }
    // Only the geometry of the matching forward call tells which input rows a window covered.
    const bool known = record != nullptr && record->geometry.batch == grad_x.shape[0] &&
                       record->geometry.length == grad_x.shape[1] &&
                       record->geometry.channels == grad_x.shape[2] &&
                       record->geometry.out_length == grad_y.shape[1] &&
                       record->geometry.stride >= record->geometry.pool_size &&
                       record->geometry.pad_left >= 0;
    if (!known) {
        CpuReferenceBackend::maxpool1d_backward(grad_y, argmax, grad_x);
        return;
    }
    const fast::PoolArgs& geometry = record->geometry;
    ThreadPool::instance().parallel_for(geometry.batch, threads(), [&](std::int64_t b) {
        kernels_.maxpool_backward_disjoint(geometry, grad_y.f32(), argmax.i32(), grad_x.f32(), b,
                                           b + 1);
    });
}

void CpuFastBackend::dense_forward(const TensorView& x, const TensorView& kernel,
                                   const TensorView& bias, const TensorView& y) {
    check_dense_shapes(x, kernel);
    const std::int64_t batch = x.shape[0], inputs = x.shape[1], units = kernel.shape[1];
    constexpr std::int64_t kRowsPerChunk = 8;
    ThreadPool::instance().parallel_for(ceil_div(batch, kRowsPerChunk), threads(),
                                        [&](std::int64_t chunk) {
                                            const std::int64_t row0 = chunk * kRowsPerChunk;
                                            GemmArgs gemm;
                                            gemm.rows = std::min(kRowsPerChunk, batch - row0);
                                            gemm.cols = units;
                                            gemm.depth = inputs;
                                            gemm.a = x.f32() + row0 * inputs;
                                            gemm.a_row = inputs;
                                            gemm.a_depth = 1;
                                            gemm.b = kernel.f32();
                                            gemm.ldb = units;
                                            gemm.c = y.f32() + row0 * units;
                                            gemm.ldc = units;
                                            gemm.bias = bias ? bias.f32() : nullptr;
                                            kernels_.gemm(gemm);
                                        });
}

void CpuFastBackend::dense_backward(const TensorView& x, const TensorView& kernel,
                                    const TensorView& grad_y, const TensorView& grad_x,
                                    const TensorView& grad_kernel, const TensorView& grad_bias) {
    const std::int64_t batch = x.shape[0], inputs = x.shape[1], units = kernel.shape[1];
    if (grad_bias) kernels_.column_sums(grad_y.f32(), batch, units, units, grad_bias.f32(), false);
    // grad_x = grad_y · kernelᵀ is computed as its transpose, kernel · grad_yᵀ: the GEMM then reads
    // the kernel's rows as they are, and what gets transposed is grad_y (units x batch) and the
    // result (inputs x batch), not the kernel (inputs x units: 2336 x 46 took a third of the op).
    // Each element still sums over the units in order, as the reference does.
    float* grad_y_t = nullptr;
    float* grad_x_t = nullptr;
    if (grad_x) {
        grad_y_t = scratch(static_cast<std::size_t>(units * batch + inputs * batch));
        grad_x_t = grad_y_t + units * batch;
        transpose(grad_y.f32(), batch, units, grad_y_t);
    }
    // Chunks of kernel rows (grad_kernel) and of input features (grad_x), one parallel loop.
    constexpr std::int64_t kChunk = 256;
    const std::int64_t chunks = ceil_div(inputs, kChunk);
    ThreadPool::instance().parallel_for(
        grad_x ? 2 * chunks : chunks, threads(), [&](std::int64_t chunk) {
            const std::int64_t i0 = chunk % chunks * kChunk, i1 = std::min(inputs, i0 + kChunk);
            GemmArgs gemm;
            if (chunk < chunks) {  // grad_kernel[i, o] = sum over samples of x[b, i] * grad_y[b, o]
                gemm.rows = i1 - i0;
                gemm.cols = units;
                gemm.depth = batch;
                gemm.a = x.f32() + i0;
                gemm.a_row = 1;
                gemm.a_depth = inputs;
                gemm.b = grad_y.f32();
                gemm.ldb = units;
                gemm.c = grad_kernel.f32() + i0 * units;
                gemm.ldc = units;
                kernels_.gemm(gemm);
                return;
            }
            // grad_x[b, i] = sum over units of kernel[i, o] * grad_y[b, o], as rows i of grad_xᵀ
            gemm.rows = i1 - i0;
            gemm.cols = batch;
            gemm.depth = units;
            gemm.a = kernel.f32() + i0 * units;
            gemm.a_row = units;
            gemm.a_depth = 1;
            gemm.b = grad_y_t;
            gemm.ldb = batch;
            gemm.c = grad_x_t + i0 * batch;
            gemm.ldc = batch;
            kernels_.gemm(gemm);
            for (std::int64_t b = 0; b < batch; ++b) {
                float* dx = grad_x.f32() + b * inputs;
                for (std::int64_t i = i0; i < i1; ++i) dx[i] = grad_x_t[i * batch + b];
            }
        });
}

void CpuFastBackend::activation_forward(ActivationKind kind, const TensorView& x,
                                        const TensorView& y) {
    if (kind != ActivationKind::ReLU) {
        CpuReferenceBackend::activation_forward(kind, x, y);
        return;
    }
    const std::int64_t count = x.numel();
    ThreadPool::instance().parallel_for(
        ceil_div(count, kUpdateChunk), threads(), [&](std::int64_t chunk) {
            const std::int64_t begin = chunk * kUpdateChunk;
            kernels_.relu_forward(x.f32() + begin, y.f32() + begin,
                                  std::min(kUpdateChunk, count - begin));
        });
}

void CpuFastBackend::activation_backward(ActivationKind kind, const TensorView& y,
                                         const TensorView& grad_y, const TensorView& grad_x) {
    if (kind != ActivationKind::ReLU) {
        CpuReferenceBackend::activation_backward(kind, y, grad_y, grad_x);
        return;
    }
    const std::int64_t count = y.numel();
    ThreadPool::instance().parallel_for(
        ceil_div(count, kUpdateChunk), threads(), [&](std::int64_t chunk) {
            const std::int64_t begin = chunk * kUpdateChunk;
            kernels_.relu_backward(y.f32() + begin, grad_y.f32() + begin, grad_x.f32() + begin,
                                   std::min(kUpdateChunk, count - begin));
        });
}

// TF2's sparse Nadam on an Embedding table (reference_apply_update with row counts): runs of rows
// in the batch go through the vectorised kernel, rows outside only decay their moments, in the
// reference's operation order, so the result is the reference's bit for bit.
void CpuFastBackend::apply_nadam_to_batch_rows(const OptimizerStep& step, const TensorView& weights,
                                               const TensorView& grads, const TensorView& m, const TensorView& v,
                                               const IndexedSlicesViews& sparse) {
    check_same_shape(weights, grads, "optimizer");
    check_indexed_slices(weights, sparse);
    const std::int64_t rows = weights.shape[0], width = weights.shape[1];
    const float* counts = sparse.row_counts.f32();
    const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, kUpdateChunk / std::max<std::int64_t>(width, 1));
    ThreadPool::instance().parallel_for(ceil_div(rows, rows_per_chunk), threads(), [&](std::int64_t chunk) {
        const std::int64_t chunk_end = std::min(rows, (chunk + 1) * rows_per_chunk);
        for (std::int64_t row = chunk * rows_per_chunk; row < chunk_end;) {
            const bool in_batch = counts[row] != 0.0f;
            std::int64_t run_end = row + 1;
            while (run_end < chunk_end && (counts[run_end] != 0.0f) == in_batch) ++run_end;
            const std::int64_t begin = row * width, count = (run_end - row) * width;
            if (in_batch) {
                kernels_.nadam(step, weights.f32() + begin, grads.f32() + begin, m.f32() + begin, v.f32() + begin,
                               count);
            } else {
                float* m_row = m.f32() + begin;
                float* v_row = v.f32() + begin;
                const float* g = grads.f32() + begin;
                for (std::int64_t i = 0; i < count; ++i) {
                    m_row[i] = step.beta_1 * m_row[i] + step.one_minus_beta_1 * g[i];
                    v_row[i] = step.beta_2 * v_row[i] + step.one_minus_beta_2 * (g[i] * g[i]);
                }
            }
            row = run_end;
        }
    });
}

void CpuFastBackend::apply_update(const OptimizerStep& step, const TensorView& weights,
                                  const TensorView& grads, const TensorView& slot0,
                                  const TensorView& slot1, const IndexedSlicesViews& sparse) {
    const bool adam_family = (step.kind == OptimizerKind::Adam || step.kind == OptimizerKind::Nadam) && slot0 && slot1;
    if (adam_family && step.kind == OptimizerKind::Nadam && sparse.row_counts && !sparse.grad_squares) {
        apply_nadam_to_batch_rows(step, weights, grads, slot0, slot1, sparse);  // the tutorial's Embedding
        return;
    }
    // Keras 3's squared slices take the reference path (a second input per element, on one variable).
    const bool vectorised = adam_family && !sparse.grad_squares && !sparse.row_counts;
    if (!vectorised) {  // SGD, RMSprop, embedding statistics and misuse (the reference names the missing slot)
        CpuReferenceBackend::apply_update(step, weights, grads, slot0, slot1, sparse);
        return;
    }
    check_same_shape(weights, grads, "optimizer");
    const auto kernel = step.kind == OptimizerKind::Adam ? kernels_.adam : kernels_.nadam;
    const std::int64_t count = weights.numel();
    ThreadPool::instance().parallel_for(
        ceil_div(count, kUpdateChunk), threads(), [&](std::int64_t chunk) {
            const std::int64_t begin = chunk * kUpdateChunk;
            kernel(step, weights.f32() + begin, grads.f32() + begin, slot0.f32() + begin,
                   slot1.f32() + begin, std::min(kUpdateChunk, count - begin));
        });
}

void CpuFastBackend::add_inplace(const TensorView& dst, const TensorView& src) {
    if (dst.numel() != src.numel()) check_same_shape(dst, src, "add");
    kernels_.add(dst.f32(), src.f32(), dst.numel());
}

bool CpuFastBackend::all_finite(const TensorView& x) {
    return kernels_.all_finite(x.f32(), x.numel());
}

}  // namespace mirrorlab
