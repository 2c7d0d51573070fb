// CpuFastBackend's Conv1D and max pooling, and the two fused into one op (Conv1D with ReLU, then
// MaxPooling1D). Every convolution pass is a GEMM over a sample's sliding windows (see
// cpu_fast_kernels.h); the helpers below each do one sample's share, so that the unfused ops split
// them over the threads by rows and the fused ones take a sample through every pass at once.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "core/backend/cpu_fast.h"
#include "core/backend/cpu_fast_common.h"
#include "core/util/error.h"
#include "core/util/thread_pool.h"

namespace mirrorlab {

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
        : ConvGeometry(x.shape[0], x.shape[1], x.shape[2], kernel.shape[0], kernel.shape[2], output_length, pad_left) {}
    ConvGeometry(std::int64_t batch_, std::int64_t length_, std::int64_t in_channels_, std::int64_t window_,
                 std::int64_t out_channels_, std::int64_t out_length_, std::int64_t pad_)
        : batch(batch_),
          length(length_),
          in_channels(in_channels_),
          window(window_),
          out_channels(out_channels_),
          out_length(out_length_),
          pad(pad_) {
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
    // The input gradient is itself a convolution, of grad_y with the kernel flipped (flip_kernel):
    // grad_x[s] = sum over taps j of grad_y[s - (K - 1 - pad) + j] · flipped[j]. Its geometry: the
    // output's rows and channels in, the input's out, padded by K - 1 - pad.
    ConvGeometry input_gradient() const {
        return ConvGeometry(batch, out_length, out_channels, window, in_channels, length, window - 1 - pad);
    }
    // One sample of x, of y (or grad_y) and of grad_x.
    std::int64_t x_sample() const { return length * in_channels; }
    std::int64_t y_sample() const { return out_length * out_channels; }
};

namespace {

using fast::GemmArgs;
using fast_detail::ceil_div;
using fast_detail::kCacheLineFloats;
using fast_detail::kConvChunkRows;

// MIRRORLAB_CPU_FUSION=0 runs the fused op as its three ops (to measure what fusing gains).
bool fusion_enabled() {
    static const bool enabled = [] {
        const char* value = std::getenv("MIRRORLAB_CPU_FUSION");
        return value == nullptr || std::strcmp(value, "0") != 0;
    }();
    return enabled;
}

// One sample's MaxPooling1D(2) output and positions, for a forward pass that pools its rows as
// the GEMM stores them (GemmArgs::pooled): only where every row is a full window (no clipped rows
// one at a time) and the rows pair up exactly.
struct PooledRows {
    float* y_b = nullptr;
    std::int32_t* argmax_b = nullptr;
    bool pooled_only = false;  // GemmArgs::pooled_only
};

// Output rows [row_begin, row_end) of one sample, bias included (and the ReLU, with `relu`): the
// full rows as one GEMM, the clipped ones a row each.
void conv_forward_rows(const fast::KernelTable& kernels, const ConvGeometry& g, const float* x_b,
                       const float* kernel, const float* bias, float* y_b, std::int64_t row_begin,
                       std::int64_t row_end, bool relu = false, const PooledRows& pool = {}) {
    GemmArgs gemm;
    gemm.relu = relu;
    gemm.cols = g.out_channels;
    gemm.a_row = g.in_channels;
    gemm.a_depth = 1;
    gemm.ldb = g.out_channels;
    gemm.ldc = g.out_channels;
    gemm.bias = bias;
    const std::int64_t full_begin = std::max(row_begin, g.full_begin), full_end = std::min(row_end, g.full_end);
    if (full_begin < full_end) {
        gemm.rows = full_end - full_begin;
        gemm.depth = g.depth();
        gemm.a = x_b + (full_begin - g.pad) * g.in_channels;
        gemm.b = kernel;
        gemm.c = y_b + full_begin * g.out_channels;
        if (pool.y_b != nullptr) {
            gemm.pooled = pool.y_b + full_begin / 2 * g.out_channels;
            gemm.pool_argmax = pool.argmax_b + full_begin / 2 * g.out_channels;
            gemm.pool_first_row = full_begin;
            gemm.pooled_only = pool.pooled_only;
        }
        kernels.gemm(gemm);
    }
    for (std::int64_t t = row_begin; t < row_end; ++t) {
        if (full_begin < full_end && t >= full_begin && t < full_end) continue;
        const std::int64_t k0 = g.k_begin(t), k1 = std::max(k0, g.k_end(t));
        gemm.rows = 1;
        gemm.depth = (k1 - k0) * g.in_channels;  // 0: the row is just the bias
        gemm.a = x_b + (t + k0 - g.pad) * g.in_channels;
        gemm.b = kernel + k0 * g.in_channels * g.out_channels;
        gemm.c = y_b + t * g.out_channels;
        kernels.gemm(gemm);
    }
}

// Adds one sample's share to rows [p0, p1) of grad_kernel: grad_kernel[k * Cin + c, o] += sum
// over the sample's rows t of x[t - pad + k, c] * grad_y[t, o], a GEMM Aᵀ·B over the full rows,
// then the clipped rows one at a time. Every caller adds the samples in order, so each sum runs
// in the same order on any number of threads, fused or not.
void conv_grad_kernel_sample(const fast::KernelTable& kernels, const ConvGeometry& g, const float* x_b,
                             const float* dy_b, float* grad_kernel, std::int64_t p0, std::int64_t p1) {
    GemmArgs gemm;
    gemm.cols = g.out_channels;
    gemm.a_row = 1;
    gemm.a_depth = g.in_channels;
    gemm.ldb = g.out_channels;
    gemm.ldc = g.out_channels;
    gemm.accumulate = true;
    if (g.full_begin < g.full_end) {
        gemm.rows = p1 - p0;
        gemm.depth = g.full_end - g.full_begin;
        gemm.a = x_b + (g.full_begin - g.pad) * g.in_channels + p0;
        gemm.b = dy_b + g.full_begin * g.out_channels;
        gemm.c = grad_kernel + p0 * g.out_channels;
        kernels.gemm(gemm);
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
        gemm.c = grad_kernel + q0 * g.out_channels;
        kernels.gemm(gemm);
    }
}

// The share of the vector lanes a row of n floats fills.
double lane_use(int width, std::int64_t n) {
    return static_cast<double>(n) / static_cast<double>(ceil_div(n, width) * width);
}

// Two ways to the input gradient; the GEMM of each is as wide as its output rows, so take the
// one that fills more vector lanes: Cin wide ("direct") or K * Cin wide (conv1: 35 of 48 lanes,
// where Cin = 7 would fill 7 of 16, "folded"). At a tie the folded GEMM has the better shape (AVX2's
// conv1, 35 of 40 and 7 of 8: 296 x 35 over 64 where the direct one is 300 x 7 over 320, a broadcast
// per FMA and one vector per row; the fused backward of conv1 took 1.05 ms folded, 1.15 ms direct),
// unless both fill every lane (conv2, Cin = 64): then the direct one has no fold pass and no z to
// write and read back (conv2's fused backward: 0.76 ms direct, 0.82 folded with AVX2; 0.41 and 0.47
// with AVX-512). All measured in one process, interleaved: Xeon, batch 16, one thread.
bool grad_x_folded(const fast::KernelTable& kernels, const ConvGeometry& g) {
    const double folded = lane_use(kernels.vector_width, g.depth());
    const double direct = lane_use(kernels.vector_width, g.in_channels);
    return folded > direct || (folded == direct && direct < 1.0);
}

// The folded z of one sample as its GEMM has it (out_length rows of K * Cin) or transposed (K * Cin
// rows of out_length), whichever row fills more lanes: conv1's 296 output rows are 37 whole vectors
// with AVX2, where its 35 columns fill 35 of 40 lanes (35 of 48 with AVX-512). The transposed z
// needs grad_y transposed (8 x 8 blocks in registers), folds along its rows and transposes dx
// back, for the same bits: the fused backward of conv1, batch 16, one thread, interleaved, took
// 0.491 -> 0.480 ms with AVX2 and 0.541 -> 0.489 ms with AVX-512 (AMD EPYC Zen 4); in 200-step
// trainings of the tutorial, alternating, the step 1.944 -> 1.941 ms with AVX2 and 1.903 -> 1.875 ms
// with AVX-512. (Padding dx's 7 rows to a block of 8 for the transpose back was slower.)
bool folded_z_transposed(const fast::KernelTable& kernels, const ConvGeometry& g) {
    return kernels.fold_windows_to_rows != nullptr &&
           lane_use(kernels.vector_width, g.out_length) > lane_use(kernels.vector_width, g.depth());
}

// `floats` rounded up to whole cache lines, so that the next piece of a scratch starts on one.
std::size_t in_lines(std::int64_t floats) {
    return static_cast<std::size_t>(ceil_div(floats, kCacheLineFloats) * kCacheLineFloats);
}

// What conv_grad_x_folded_transposed_sample works in: grad_y and z of one sample, transposed, each
// starting on a cache line.
std::size_t folded_transposed_floats(const ConvGeometry& g) {
    return in_lines(g.out_channels * g.out_length) + in_lines(g.depth() * g.out_length);
}

// One sample's folded input gradient through the transposed z: zt = kernel (K * Cin x Cout) times
// grad_y transposed, then each channel's input row as the sum of its taps' rows, shifted, straight
// into dx's rows (8 x 8 transposes in registers; against fold_windows over a transposed dx and a
// transpose back, conv1's fused backward 0.477 -> 0.472 ms with AVX2, 0.481 -> 0.476 with
// AVX-512, interleaved).
void conv_grad_x_folded_transposed_sample(const fast::KernelTable& kernels, const ConvGeometry& g, const float* kernel,
                                          const float* dy_b, float* room, float* dx_b) {
    float* dyt = room;
    float* zt = dyt + in_lines(g.out_channels * g.out_length);
    kernels.transpose(dy_b, g.out_length, g.out_channels, g.out_channels, dyt, g.out_length);
    GemmArgs gemm;
    gemm.rows = g.depth();
    gemm.cols = g.out_length;
    gemm.depth = g.out_channels;
    gemm.a = kernel;
    gemm.a_row = g.out_channels;
    gemm.a_depth = 1;
    gemm.b = dyt;
    gemm.ldb = g.out_length;
    gemm.c = zt;
    gemm.ldc = g.out_length;
    kernels.gemm(gemm);
    kernels.fold_windows_to_rows(zt, g.out_length, g.window, g.in_channels, g.pad, dx_b, g.length);
}

// The direct input gradient's kernel: flipped[j, o, c] = kernel[K - 1 - j, c, o], the
// [K, Cout, Cin] kernel of ConvGeometry::input_gradient().
void flip_kernel(const ConvGeometry& g, const float* kernel, float* flipped) {
    for (std::int64_t j = 0; j < g.window; ++j) {
        for (std::int64_t c = 0; c < g.in_channels; ++c) {
            const float* w_row = kernel + ((g.window - 1 - j) * g.in_channels + c) * g.out_channels;
            for (std::int64_t o = 0; o < g.out_channels; ++o) {
                flipped[(j * g.out_channels + o) * g.in_channels + c] = w_row[o];
            }
        }
    }
}

// The folded input gradient's first half for output rows [t0, t1) of one sample: z[t, k * Cin +
// c] = grad_y[t, :] · kernel[k, c, :] (a GEMM with the transposed kernel); fold_windows then sums
// the taps that read each input row.
void conv_folded_z_rows(const fast::KernelTable& kernels, const ConvGeometry& g, const float* transposed,
                        const float* dy_b, float* z_b, std::int64_t t0, std::int64_t t1) {
    GemmArgs gemm;
    gemm.rows = std::max<std::int64_t>(0, t1 - t0);
    gemm.cols = g.depth();
    gemm.depth = g.out_channels;
    gemm.a = dy_b + t0 * g.out_channels;
    gemm.a_row = g.out_channels;
    gemm.a_depth = 1;
    gemm.b = transposed;
    gemm.ldb = g.depth();
    gemm.c = z_b + t0 * g.depth();
    gemm.ldc = g.depth();
    kernels.gemm(gemm);
}

// One sample's folded input gradient: its z, then each input row's sum of the taps that read it.
void conv_grad_x_folded_sample(const fast::KernelTable& kernels, const ConvGeometry& g, const float* transposed,
                               const float* dy_b, float* z_b, float* dx_b) {
    conv_folded_z_rows(kernels, g, transposed, dy_b, z_b, 0, g.out_length);
    kernels.fold_windows(z_b, g.out_length, g.window, g.in_channels, g.pad, dx_b, 0, g.length);
}

fast::PoolArgs pool_args(const TensorView& x, const TensorView& y, const Pool1DParams& params) {
    fast::PoolArgs geometry;
    geometry.batch = x.shape[0];
    geometry.length = x.shape[1];
    geometry.channels = x.shape[2];
    geometry.out_length = y.shape[1];
    geometry.pool_size = params.pool_size;
    geometry.stride = params.stride;
    geometry.pad_left = params.pad_left;
    return geometry;
}

}  // namespace

bool CpuFastBackend::fuses_conv_relu_pool() const {
    return fusion_enabled();
}

std::vector<std::string> CpuFastBackend::kernel_choices() const {
    return {"kernels: " + std::string(isa()),
            fusion_enabled() ? "Conv1D + ReLU + MaxPooling1D: fused, one sample at a time (the backward on one thread)"
                             : "Conv1D + ReLU + MaxPooling1D: three ops (MIRRORLAB_CPU_FUSION=0)"};
}

void CpuFastBackend::conv1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                    const TensorView& y, const Conv1DParams& params) {
    check_conv1d_shapes(x, kernel, y);
    convolve(ConvGeometry(x, kernel, y.shape[1], params.pad_left), x.f32(), kernel.f32(), bias ? bias.f32() : nullptr,
             y.f32());
}

// Every sample's output rows in chunks of kConvChunkRows, split over the threads.
void CpuFastBackend::convolve(const ConvGeometry& g, const float* x, const float* kernel, const float* bias, float* y) {
    const std::int64_t chunks_per_sample = std::max<std::int64_t>(1, ceil_div(g.out_length, kConvChunkRows));
    ThreadPool::instance().parallel_for(g.batch * chunks_per_sample, threads(), [&](std::int64_t chunk) {
        const std::int64_t b = chunk / chunks_per_sample;
        const std::int64_t row_begin = chunk % chunks_per_sample * kConvChunkRows;
        conv_forward_rows(kernels_, g, x + b * g.x_sample(), kernel, bias, y + b * g.y_sample(), row_begin,
                          std::min(g.out_length, row_begin + kConvChunkRows));
    });
}

void CpuFastBackend::conv1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                                     const TensorView& grad_x, const TensorView& grad_kernel,
                                     const TensorView& grad_bias, const Conv1DParams& params) {
    const ConvGeometry g(x, kernel, grad_y.shape[1], params.pad_left);
    const int thread_count = threads();
    if (grad_bias) {
        kernels_.column_sums(grad_y.f32(), g.batch * g.out_length, g.out_channels, g.out_channels,
                             grad_bias.f32(), false);
    }
    // The kernel gradient split by kernel rows: each thread sums its rows over every sample.
    const std::int64_t depth = g.depth();
    const std::int64_t rows_per_chunk = std::max<std::int64_t>(6, ceil_div(depth, 2 * thread_count));
    ThreadPool::instance().parallel_for(ceil_div(depth, rows_per_chunk), thread_count, [&](std::int64_t chunk) {
        const std::int64_t p0 = chunk * rows_per_chunk, p1 = std::min(depth, p0 + rows_per_chunk);
        std::fill_n(grad_kernel.f32() + p0 * g.out_channels, (p1 - p0) * g.out_channels, 0.0f);
        for (std::int64_t b = 0; b < g.batch; ++b) {
            conv_grad_kernel_sample(kernels_, g, x.f32() + b * g.x_sample(), grad_y.f32() + b * g.y_sample(),
                                    grad_kernel.f32(), p0, p1);
        }
    });
    if (!grad_x) return;
    if (grad_x_folded(kernels_, g)) {
        conv1d_grad_x_folded(g, kernel, grad_y, grad_x);
    } else {
        conv1d_grad_x_direct(g, kernel, grad_y, grad_x);
    }
}

void CpuFastBackend::conv1d_grad_x_direct(const ConvGeometry& g, const TensorView& kernel,
                                          const TensorView& grad_y, const TensorView& grad_x) {
    float* flipped = scratch(static_cast<std::size_t>(g.window * g.out_channels * g.in_channels));
    flip_kernel(g, kernel.f32(), flipped);
    convolve(g.input_gradient(), grad_y.f32(), flipped, nullptr, grad_x.f32());
}

void CpuFastBackend::conv1d_grad_x_folded(const ConvGeometry& g, const TensorView& kernel,
                                          const TensorView& grad_y, const TensorView& grad_x) {
    const std::int64_t depth = g.depth();
    ThreadPool& pool = ThreadPool::instance();
    const int thread_count = threads();
    if (g.batch >= thread_count && folded_z_transposed(kernels_, g)) {
        // A sample at a time through the transposed z, as the fused backward takes it (same bits):
        // conv1's unfused backward (MIRRORLAB_CPU_FUSION=0, or a Conv1D without the pooling) about
        // 0.463 -> 0.452 ms with AVX2 and 0.487 -> 0.452 with AVX-512 (batch 16, one thread, AMD EPYC
        // Zen 4, medians of processes alternating). Each thread's run of samples reuses one room.
        const std::size_t room = folded_transposed_floats(g);
        float* rooms = scratch(room * static_cast<std::size_t>(thread_count));
        const std::int64_t samples_per_run = ceil_div(g.batch, thread_count);
        pool.parallel_for(thread_count, thread_count, [&](std::int64_t run) {
            for (std::int64_t b = run * samples_per_run; b < std::min(g.batch, (run + 1) * samples_per_run); ++b) {
                conv_grad_x_folded_transposed_sample(kernels_, g, kernel.f32(), grad_y.f32() + b * g.y_sample(),
                                                     rooms + static_cast<std::size_t>(run) * room,
                                                     grad_x.f32() + b * g.x_sample());
            }
        });
        return;
    }
    float* transposed = scratch(static_cast<std::size_t>(depth * g.out_channels + g.batch * g.out_length * depth));
    float* z = transposed + depth * g.out_channels;
    kernels_.transpose(kernel.f32(), depth, g.out_channels, g.out_channels, transposed, depth);
    if (g.batch >= thread_count) {
        // A sample at a time, its z folded while it is in cache (the batch's z is 0.66 MB at batch
        // 16 for the tutorial's conv1, more than a Zen 3 core's L2).
        pool.parallel_for(g.batch, thread_count, [&](std::int64_t b) {
            conv_grad_x_folded_sample(kernels_, g, transposed, grad_y.f32() + b * g.y_sample(),
                                      z + b * g.out_length * depth, grad_x.f32() + b * g.x_sample());
        });
        return;
    }
    const std::int64_t z_chunks = std::max<std::int64_t>(1, ceil_div(g.out_length, kConvChunkRows));
    pool.parallel_for(g.batch * z_chunks, thread_count, [&](std::int64_t chunk) {
        const std::int64_t b = chunk / z_chunks;
        const std::int64_t t0 = chunk % z_chunks * kConvChunkRows;
        conv_folded_z_rows(kernels_, g, transposed, grad_y.f32() + b * g.y_sample(), z + b * g.out_length * depth, t0,
                           std::min(g.out_length, t0 + kConvChunkRows));
    });
    const std::int64_t x_chunks = std::max<std::int64_t>(1, ceil_div(g.length, kConvChunkRows));
    pool.parallel_for(g.batch * x_chunks, thread_count, [&](std::int64_t chunk) {
        const std::int64_t b = chunk / x_chunks;
        const std::int64_t s0 = chunk % x_chunks * kConvChunkRows;
        kernels_.fold_windows(z + b * g.out_length * depth, g.out_length, g.window, g.in_channels, g.pad,
                              grad_x.f32() + b * g.x_sample(), s0, std::min(g.length, s0 + kConvChunkRows));
    });
}

void CpuFastBackend::remember_pool(const void* argmax, const fast::PoolArgs& geometry, bool pooled_only) {
    PoolRecord* record = nullptr;
    for (auto& candidate : pools_) {
        if (candidate.argmax == argmax) record = &candidate;
    }
    for (std::size_t tried = 0; record == nullptr && tried < pools_.size(); ++tried) {
        PoolRecord& oldest = pools_[next_pool_];
        next_pool_ = (next_pool_ + 1) % pools_.size();
        if (!oldest.pooled_only) record = &oldest;
    }
    if (record == nullptr) record = &pools_.emplace_back();
    record->argmax = argmax;
    record->geometry = geometry;
    record->pooled_only = pooled_only;
}

const CpuFastBackend::PoolRecord* CpuFastBackend::disjoint_pool(const TensorView& argmax, const TensorView& grad_y,
                                                                const TensorView& grad_x) const {
    const PoolRecord* record = nullptr;
    for (const auto& candidate : pools_) {
        if (candidate.argmax == argmax.data) record = &candidate;
    }
    // Only the geometry of the matching forward call tells which input rows a window covered.
    const bool known = record != nullptr && record->geometry.batch == grad_x.shape[0] &&
                       record->geometry.length == grad_x.shape[1] && record->geometry.channels == grad_x.shape[2] &&
                       record->geometry.out_length == grad_y.shape[1] &&
                       record->geometry.stride >= record->geometry.pool_size && record->geometry.pad_left >= 0;
    return known ? record : nullptr;
}

void CpuFastBackend::maxpool1d_forward(const TensorView& x, const TensorView& y, const TensorView& argmax,
                                       const Pool1DParams& params) {
    check_rank(x, 3, "max_pooling1d", "input");
    const fast::PoolArgs geometry = pool_args(x, y, params);
    ThreadPool::instance().parallel_for(geometry.batch, threads(), [&](std::int64_t b) {
        kernels_.maxpool_forward(geometry, x.f32(), y.f32(), argmax.i32(), b, b + 1);
    });
    remember_pool(argmax.data, geometry);
}

void CpuFastBackend::maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax, const TensorView& grad_x) {
    const PoolRecord* record = disjoint_pool(argmax, grad_y, grad_x);
    if (record == nullptr) {
        CpuReferenceBackend::maxpool1d_backward(grad_y, argmax, grad_x);
        return;
    }
    const fast::PoolArgs* geometry = &record->geometry;
    ThreadPool::instance().parallel_for(geometry->batch, threads(), [&](std::int64_t b) {
        kernels_.maxpool_backward_disjoint(*geometry, grad_y.f32(), argmax.i32(), nullptr, grad_x.f32(), b, b + 1);
    });
}

// One sample at a time through the convolution with the ReLU applied as the GEMM stores its
// output (GemmArgs::relu), then the pooling while the sample is in L2: the unfused ops stream the
// whole batch's convolution output (1.2 MB per replica for the tutorial's first Conv1D) through
// memory three times. Same kernels, same order per element: the result is the three ops' bit for bit.
void CpuFastBackend::conv1d_relu_maxpool1d_forward(const TensorView& x, const TensorView& kernel,
                                                   const TensorView& bias, const TensorView& conv_y,
                                                   const TensorView& y, const TensorView& argmax,
                                                   const Conv1DParams& conv, const Pool1DParams& pool) {
    const int thread_count = threads();
    // The threads split the batch by samples: with fewer samples than threads the ops split rows.
    if (!fusion_enabled() || x.shape[0] < thread_count) {
        Backend::conv1d_relu_maxpool1d_forward(x, kernel, bias, conv_y, y, argmax, conv, pool);
        return;
    }
    check_conv1d_shapes(x, kernel, conv_y);
    check_rank(y, 3, "max_pooling1d", "output");
    const ConvGeometry g(x, kernel, conv_y.shape[1], conv.pad_left);
    const fast::PoolArgs geometry = pool_args(conv_y, y, pool);
    const float* bias_data = bias ? bias.f32() : nullptr;
    // MaxPooling1D(2) of the tutorial's blocks as the GEMM stores the rows, in registers, where
    // every row is a full window and they pair up exactly: no pass over the convolution's output.
    static_assert(kConvChunkRows % 2 == 0, "a chunk of rows must not split a pooling window");
    const bool pool_in_gemm = geometry.pool_size == 2 && geometry.stride == 2 && geometry.pad_left == 0 &&
                              2 * geometry.out_length == g.out_length && g.full_begin == 0 &&
                              g.full_end == g.out_length;
    // With the pooling in the stores and one thread, the backward takes this op's fused path (the
    // pool record says so), which never reads conv_y: the GEMM then stores only the pooled rows
    // (GemmArgs::pooled_only). A slot per sample (conv1's 1.2 MB for a batch of 16) had every
    // store fetch a line that left the caches a step before: 2-3 % of the tutorial's step on an
    // AMD EPYC (Zen 4), AVX2; the first sample's slot for every sample, in L2, 1 % more than no
    // store at all (in-process A/B, 200-step trainings, 12-16 rounds: 2.020 -> 1.994, 1.932 ->
    // 1.910 ms per step, once a tie). (ModelReplica::layer_output computes such a layer's output
    // again.) The windows the ReLU passes no gradient through are marked -1 in argmax, so that the
    // backward needs no pooled values either.
    const bool pooled_only = pool_in_gemm && thread_count == 1;
    ThreadPool::instance().parallel_for(g.batch, thread_count, [&](std::int64_t b) {
        const std::int64_t pooled_offset = b * geometry.out_length * geometry.channels;
        const PooledRows pooled = pool_in_gemm ? PooledRows{y.f32() + pooled_offset, argmax.i32() + pooled_offset, pooled_only}
                                               : PooledRows{};
        // In chunks of rows, as the unfused op (one GEMM over all 296 rows of the tutorial's conv1 was
        // slower with AVX-512, 0.25-0.29 ms against 0.22-0.23 for the batch; no faster with AVX2).
        for (std::int64_t row_begin = 0; row_begin < g.out_length; row_begin += kConvChunkRows) {
            const std::int64_t row_end = std::min(g.out_length, row_begin + kConvChunkRows);
            conv_forward_rows(kernels_, g, x.f32() + b * g.x_sample(), kernel.f32(), bias_data,
                              conv_y.f32() + b * g.y_sample(), row_begin, row_end, true, pooled);
        }
        if (!pool_in_gemm) kernels_.maxpool_forward(geometry, conv_y.f32(), y.f32(), argmax.i32(), b, b + 1);
    });
    remember_pool(argmax.data, geometry, pooled_only);
}

// One sample at a time through the pooling's backward, the ReLU's and the convolution's three
// gradients, while the sample's gradient of the convolution output is in L2. The kernel and bias
// gradients sum over the samples in order, as the unfused ops do on any number of threads, but
// they split those sums by kernel rows over the threads: so the fused pass runs on one thread
// (each replica's, when there are as many replicas as cores: the reference setting) and leaves
// several threads to the unfused ops.
void CpuFastBackend::conv1d_relu_maxpool1d_backward(const TensorView& x, const TensorView& kernel,
                                                    const TensorView& conv_y, const TensorView& y,
                                                    const TensorView& argmax,
                                                    const TensorView& grad_y, const TensorView& grad_conv_y,
                                                    const TensorView& grad_x, const TensorView& grad_kernel,
                                                    const TensorView& grad_bias, const Conv1DParams& conv) {
    const PoolRecord* record = disjoint_pool(argmax, grad_y, grad_conv_y);
    // The ReLU's verdict comes from the pooled values: without them, the three ops (they read conv_y).
    // After a pooled-only forward (conv_y not kept) this path, whatever the threads now.
    const bool pooled = y && y.numel() == grad_y.numel();
    const bool pooled_only = record != nullptr && record->pooled_only;
    if (!fusion_enabled() || record == nullptr || !pooled || (threads() != 1 && !pooled_only)) {
        Backend::conv1d_relu_maxpool1d_backward(x, kernel, conv_y, y, argmax, grad_y, grad_conv_y, grad_x, grad_kernel,
                                                grad_bias, conv);
        return;
    }
    const ConvGeometry g(x, kernel, grad_conv_y.shape[1], conv.pad_left);
    const std::int64_t depth = g.depth();
    const bool folded = grad_x && grad_x_folded(kernels_, g);
    const bool folded_transposed = folded && folded_z_transposed(kernels_, g);
    // The flipped or transposed kernel, then (folded) one sample's z; or the transposed z's room.
    const std::int64_t kernel_and_z = depth * g.out_channels + (folded ? g.out_length * depth : 0);
    float* prepared =
        scratch(folded_transposed ? folded_transposed_floats(g) : static_cast<std::size_t>(kernel_and_z));
    if (grad_x && !folded_transposed) {
        if (folded) {
            kernels_.transpose(kernel.f32(), depth, g.out_channels, g.out_channels, prepared, depth);
        } else {
            flip_kernel(g, kernel.f32(), prepared);
        }
    }
    float* z = folded_transposed ? nullptr : prepared + depth * g.out_channels;
    const ConvGeometry flipped_geometry = g.input_gradient();
    std::fill_n(grad_kernel.f32(), depth * g.out_channels, 0.0f);
    if (grad_bias) std::fill_n(grad_bias.f32(), g.out_channels, 0.0f);
    // Every sample's gradient of the convolution output goes to the first sample's rows of
    // grad_conv_y, written, read by the sample's three GEMMs and done with while it is in L2. A slot
    // per sample (conv1's 1.2 MB for a batch of 16) had every store fetch a line that left the caches
    // a step before: 2-3 % of the tutorial's step on an AMD EPYC (Zen 4), AVX2. So grad_conv_y holds
    // the last sample's gradient afterwards (backend.h leaves it to the backend).
    float* dy_b = grad_conv_y.f32();
    const fast::PoolArgs& pool = record->geometry;
    const std::int64_t pooled_sample = pool.out_length * pool.channels;
    for (std::int64_t b = 0; b < g.batch; ++b) {
        const float* x_b = x.f32() + b * g.x_sample();
        // The pooling's and the ReLU's backward in one pass over the sample's windows, the ReLU's
        // verdict from the pooled values. (Adding each row to the bias gradient in the same pass was
        // slower with AVX-512: every row's sums waited on the previous row's store; column_sums keeps
        // them in registers.)
        const std::int64_t pooled_offset = b * pooled_sample;
        kernels_.maxpool_backward_disjoint(pool, grad_y.f32() + pooled_offset, argmax.i32() + pooled_offset,
                                           pooled_only ? nullptr : y.f32() + pooled_offset, dy_b, 0, 1);
        // 0 + the first sample's sum is that sum: the same bits as the unfused op's fresh sums.
        if (grad_bias) kernels_.column_sums(dy_b, g.out_length, g.out_channels, g.out_channels, grad_bias.f32(), true);
        conv_grad_kernel_sample(kernels_, g, x_b, dy_b, grad_kernel.f32(), 0, depth);
        if (!grad_x) continue;
        float* dx_b = grad_x.f32() + b * g.x_sample();
        if (folded_transposed) {
            conv_grad_x_folded_transposed_sample(kernels_, g, kernel.f32(), dy_b, prepared, dx_b);
        } else if (folded) {
            conv_grad_x_folded_sample(kernels_, g, prepared, dy_b, z, dx_b);
        } else {
            conv_forward_rows(kernels_, flipped_geometry, dy_b, prepared, nullptr, dx_b, 0, g.length);
        }
    }
}

}  // namespace mirrorlab
