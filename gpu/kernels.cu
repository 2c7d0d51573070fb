// CUDA kernels of the CUDA backend. Each kernel is the body of the CPU reference's loop
// (core/backend/cpu_reference.cpp) with the loop index turned into a thread index; where the
// reference accumulates, the kernel accumulates in the same order, except the scatters (embedding
// backward, max-pool backward with overlapping windows), which add with atomics: their order, and
// so the last bits, can differ from run to run (mirrored replicas still agree, as they all copy
// the one all-reduced sum). Compiled with --fmad=false so that a * b + c rounds twice, as on the CPU.
#include "gpu/kernels.h"

#include <cmath>
#include <cstdint>

// A kernel launch. The host emulator that runs these kernels in the tests defines its own.
#ifndef MIRRORLAB_LAUNCH
#define MIRRORLAB_LAUNCH(kernel, grid, block, stream) kernel<<<(grid), (block), 0, (stream)>>>
#endif

namespace mirrorlab::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 16384;  // grid-stride loops cover the rest
constexpr int64_t kColumnSumRows = 256;

int blocks_for(int64_t count) {
    const int64_t blocks = (count + kThreads - 1) / kThreads;
    return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

__device__ inline int64_t thread_index() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline int64_t thread_stride() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }

// counter_uniform of cpu_reference.cpp, bit for bit.
__device__ inline float counter_uniform(std::uint64_t seed, std::uint64_t index) {
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

__global__ void fill_f32_kernel(float* dst, int64_t count, float value) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) dst[i] = value;
}

__global__ void fill_i32_kernel(int32_t* dst, int64_t count, int32_t value) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) dst[i] = value;
}

// Ids were checked on the host (check_batch); one outside the table still never reads outside it.
__global__ void embedding_forward_kernel(const int32_t* ids, int64_t count, const float* table, int64_t vocabulary,
                                         int64_t width, float* out) {
    for (int64_t i = thread_index(); i < count * width; i += thread_stride()) {
        const int64_t position = i / width, d = i % width;
        const int32_t id = ids[position];
        if (id < 0 || id >= vocabulary) {
            out[i] = 0.0f;
            continue;
        }
        out[i] = table[id * width + d];
    }
}

__global__ void embedding_backward_kernel(const int32_t* ids, int64_t count, const float* grad_out,
                                          int64_t vocabulary, int64_t width, float* grad_table) {
    for (int64_t i = thread_index(); i < count * width; i += thread_stride()) {
        const int64_t position = i / width, d = i % width;
        const int32_t id = ids[position];
        if (id < 0 || id >= vocabulary) continue;
        atomicAdd(grad_table + id * width + d, grad_out[i]);
    }
}

__global__ void embedding_gradient_stats_kernel(const int32_t* ids, int64_t count, const float* grad_out,
                                                int64_t vocabulary, int64_t width, float* grad_squares,
                                                float* row_counts) {
    for (int64_t i = thread_index(); i < count * width; i += thread_stride()) {
        const int64_t position = i / width, d = i % width;
        const int64_t id = ids[position];
        if (id < 0 || id >= vocabulary) continue;
        if (grad_squares != nullptr) atomicAdd(grad_squares + id * width + d, grad_out[i] * grad_out[i]);
        if (row_counts != nullptr && d == 0) atomicAdd(row_counts + id, 1.0f);
    }
}

// The deterministic embedding gradient (embedding_sort_positions, embedding_segment_sums): each
// id's positions in ascending order, then every row summed in that order, as the reference's loop.
__global__ void embedding_count_kernel(const int32_t* ids, int64_t count, int64_t vocabulary, int32_t* counts) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        const int32_t id = ids[i];
        if (id >= 0 && id < vocabulary) atomicAdd(counts + id, 1);  // integers: the same in any order
    }
}

// One thread: a vocabulary of tens of thousands of rows is a few microseconds of serial adds.
__global__ void embedding_bucket_starts_kernel(const int32_t* counts, int64_t vocabulary, int32_t* starts,
                                               int32_t* cursors) {
    if (thread_index() != 0) return;
    int32_t sum = 0;
    for (int64_t v = 0; v < vocabulary; ++v) {
        starts[v] = sum;
        cursors[v] = sum;
        sum += counts[v];
    }
    starts[vocabulary] = sum;
}

__global__ void embedding_bucket_kernel(const int32_t* ids, int64_t count, int64_t vocabulary, int32_t* cursors,
                                        int32_t* order) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        const int32_t id = ids[i];
        if (id >= 0 && id < vocabulary) order[atomicAdd(cursors + id, 1)] = static_cast<int32_t>(i);
    }
}

// Each bucket's positions landed in any order: sorted ascending (a bucket holds one id's few
// occurrences in a batch, so insertion sort).
__global__ void embedding_sort_buckets_kernel(const int32_t* starts, int64_t vocabulary, int32_t* order) {
    for (int64_t v = thread_index(); v < vocabulary; v += thread_stride()) {
        for (int32_t k = starts[v] + 1; k < starts[v + 1]; ++k) {
            const int32_t position = order[k];
            int32_t j = k - 1;
            for (; j >= starts[v] && order[j] > position; --j) order[j + 1] = order[j];
            order[j + 1] = position;
        }
    }
}

// Every row of the table (and of the statistics) written: rows no id hit become zero.
__global__ void embedding_segment_sums_kernel(const int32_t* starts, const int32_t* order, int64_t vocabulary,
                                              int64_t width, const float* grad_out, float* grad_table,
                                              float* grad_squares, float* row_counts) {
    for (int64_t e = thread_index(); e < vocabulary * width; e += thread_stride()) {
        const int64_t v = e / width, d = e % width;
        float sum = 0.0f, squares = 0.0f;
        for (int32_t k = starts[v]; k < starts[v + 1]; ++k) {
            const float g = grad_out[static_cast<int64_t>(order[k]) * width + d];
            sum += g;
            squares += g * g;
        }
        if (grad_table != nullptr) grad_table[e] = sum;
        if (grad_squares != nullptr) grad_squares[e] = squares;
        if (row_counts != nullptr && d == 0) row_counts[v] = static_cast<float>(starts[v + 1] - starts[v]);
    }
}

// One output element y[b, t, o] per thread: bias, then k ascending, then c ascending, as the
// reference adds into out[o].
__global__ void conv1d_forward_kernel(const float* x, int64_t batch, int64_t length, int64_t in_channels,
                                      const float* kernel, int64_t window, int64_t out_channels, const float* bias,
                                      float* y, int64_t out_length, int32_t pad_left) {
    for (int64_t i = thread_index(); i < batch * out_length * out_channels; i += thread_stride()) {
        const int64_t o = i % out_channels, t = (i / out_channels) % out_length, b = i / (out_channels * out_length);
        float out = bias != nullptr ? bias[o] : 0.0f;
        for (int64_t k = 0; k < window; ++k) {
            const int64_t source = t + k - pad_left;
            if (source < 0 || source >= length) continue;  // zero padding
            const float* in = x + (b * length + source) * in_channels;
            for (int64_t c = 0; c < in_channels; ++c) out += in[c] * kernel[(k * in_channels + c) * out_channels + o];
        }
        y[i] = out;
    }
}

// One input gradient grad_x[b, s, c] per thread: the reference adds one dot product per output
// position t that reads s, in t order.
__global__ void conv1d_backward_data_kernel(const float* kernel, const float* grad_y, int64_t batch, int64_t length,
                                            int64_t in_channels, int64_t window, int64_t out_channels,
                                            int64_t out_length, int32_t pad_left, float* grad_x) {
    for (int64_t i = thread_index(); i < batch * length * in_channels; i += thread_stride()) {
        const int64_t c = i % in_channels, source = (i / in_channels) % length, b = i / (in_channels * length);
        float d_in = 0.0f;
        for (int64_t t = 0; t < out_length; ++t) {
            const int64_t k = source + pad_left - t;
            if (k < 0 || k >= window) continue;
            const float* dy = grad_y + (b * out_length + t) * out_channels;
            const float* w_row = kernel + (k * in_channels + c) * out_channels;
            float dot = 0.0f;
            for (int64_t o = 0; o < out_channels; ++o) dot += w_row[o] * dy[o];
            d_in += dot;
        }
        grad_x[i] = d_in;
    }
}

// One kernel gradient grad_kernel[k, c, o] per thread, summed over (b, t) in the reference's order.
__global__ void conv1d_backward_filter_kernel(const float* x, const float* grad_y, int64_t batch, int64_t length,
                                              int64_t in_channels, int64_t window, int64_t out_channels,
                                              int64_t out_length, int32_t pad_left, float* grad_kernel) {
    for (int64_t i = thread_index(); i < window * in_channels * out_channels; i += thread_stride()) {
        const int64_t o = i % out_channels, c = (i / out_channels) % in_channels, k = i / (out_channels * in_channels);
        float dw = 0.0f;
        for (int64_t b = 0; b < batch; ++b) {
            for (int64_t t = 0; t < out_length; ++t) {
                const int64_t source = t + k - pad_left;
                if (source < 0 || source >= length) continue;
                dw += x[(b * length + source) * in_channels + c] * grad_y[(b * out_length + t) * out_channels + o];
            }
        }
        grad_kernel[i] = dw;
    }
}

__global__ void kernel_to_filter_kernel(const float* kernel, int64_t window, int64_t in_channels, int64_t out_channels,
                                        float* filter) {
    for (int64_t i = thread_index(); i < window * in_channels * out_channels; i += thread_stride()) {
        const int64_t c = i % in_channels, k = (i / in_channels) % window, o = i / (in_channels * window);
        filter[i] = kernel[(k * in_channels + c) * out_channels + o];
    }
}

__global__ void filter_to_kernel_kernel(const float* filter, int64_t window, int64_t in_channels, int64_t out_channels,
                                        float* kernel) {
    for (int64_t i = thread_index(); i < window * in_channels * out_channels; i += thread_stride()) {
        const int64_t o = i % out_channels, c = (i / out_channels) % in_channels, k = i / (out_channels * in_channels);
        kernel[i] = filter[(o * window + k) * in_channels + c];
    }
}

__global__ void pad_rows_kernel(const float* x, int64_t batch, int64_t length, int64_t channels, int64_t pad_left,
                                int64_t padded_length, float* padded) {
    for (int64_t i = thread_index(); i < batch * padded_length * channels; i += thread_stride()) {
        const int64_t c = i % channels, p = (i / channels) % padded_length, b = i / (channels * padded_length);
        const int64_t source = p - pad_left;
        padded[i] = source >= 0 && source < length ? x[(b * length + source) * channels + c] : 0.0f;
    }
}

__global__ void crop_rows_kernel(const float* padded, int64_t batch, int64_t padded_length, int64_t channels,
                                 int64_t pad_left, int64_t length, float* x) {
    for (int64_t i = thread_index(); i < batch * length * channels; i += thread_stride()) {
        const int64_t c = i % channels, s = (i / channels) % length, b = i / (channels * length);
        x[i] = padded[(b * padded_length + s + pad_left) * channels + c];
    }
}

__global__ void add_bias_kernel(float* y, int64_t rows, int64_t cols, const float* bias) {
    for (int64_t i = thread_index(); i < rows * cols; i += thread_stride()) y[i] += bias[i % cols];
}

// Pass 1: block (chunk, column group); each thread sums one column over kColumnSumRows rows.
__global__ void column_partials_kernel(const float* x, int64_t rows, int64_t cols, float* partials) {
    const int64_t col = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    const int64_t chunk = blockIdx.x;
    const int64_t begin = chunk * kColumnSumRows;
    const int64_t end = begin + kColumnSumRows < rows ? begin + kColumnSumRows : rows;
    float sum = 0.0f;
    for (int64_t r = begin; r < end; ++r) sum += x[r * cols + col];
    partials[chunk * cols + col] = sum;
}

// Pass 2: one thread per column adds the chunks in order.
__global__ void column_totals_kernel(const float* partials, int64_t chunks, int64_t cols, float* sums) {
    for (int64_t col = thread_index(); col < cols; col += thread_stride()) {
        float sum = 0.0f;
        for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += partials[chunk * cols + col];
        sums[col] = sum;
    }
}

__global__ void maxpool1d_forward_kernel(const float* x, int64_t batch, int64_t length, int64_t channels, float* y,
                                         int32_t* argmax, int64_t out_length, int32_t pool_size, int32_t stride,
                                         int32_t pad_left) {
    for (int64_t i = thread_index(); i < batch * out_length * channels; i += thread_stride()) {
        const int64_t c = i % channels, t = (i / channels) % out_length, b = i / (channels * out_length);
        float out = -INFINITY;
        int32_t arg = -1;
        const int64_t start = t * stride - pad_left;  // the window's rows inside the input only
        const int64_t k_end = pool_size < length - start ? pool_size : length - start;
        for (int64_t k = start < 0 ? -start : 0; k < k_end; ++k) {
            const int64_t source = start + k;
            const float in = x[(b * length + source) * channels + c];
            // Strictly greater: the first maximum wins; a NaN is taken so that it propagates.
            const bool first = arg < 0;
            const bool nan_first = isnan(in) && !isnan(out);
            if (first || in > out || nan_first) {
                out = in;
                arg = static_cast<int32_t>(source);
            }
        }
        y[i] = out;
        argmax[i] = arg;
    }
}

__global__ void maxpool1d_backward_kernel(const float* grad_y, const int32_t* argmax, int64_t batch,
                                          int64_t out_length, int64_t channels, int64_t length, float* grad_x) {
    for (int64_t i = thread_index(); i < batch * out_length * channels; i += thread_stride()) {
        const int64_t c = i % channels, b = i / (channels * out_length);
        const int32_t arg = argmax[i];
        // Overlapping windows (stride < pool size) may route several outputs to one input.
        if (arg >= 0) atomicAdd(grad_x + (b * length + arg) * channels + c, grad_y[i]);
    }
}

__global__ void activation_forward_kernel(ActivationKind kind, const float* in, float* out, int64_t count) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        switch (kind) {
            case ActivationKind::ReLU: out[i] = in[i] < 0.0f ? 0.0f : in[i]; break;  // std::max(x, 0): NaN stays
            case ActivationKind::Tanh: out[i] = tanhf(in[i]); break;
            case ActivationKind::Sigmoid: out[i] = 1.0f / (1.0f + expf(-in[i])); break;
            default: break;
        }
    }
}

__global__ void activation_backward_kernel(ActivationKind kind, const float* out, const float* dy, float* dx,
                                           int64_t count) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        switch (kind) {
            case ActivationKind::ReLU: dx[i] = out[i] > 0.0f ? dy[i] : 0.0f; break;
            case ActivationKind::Tanh: dx[i] = dy[i] * (1.0f - out[i] * out[i]); break;
            case ActivationKind::Sigmoid: dx[i] = dy[i] * out[i] * (1.0f - out[i]); break;
            default: break;
        }
    }
}

__global__ void dropout_forward_kernel(const float* x, float* y, float* mask, int64_t count, float rate,
                                       float keep_scale, const std::uint64_t* seed_on_device) {
    const std::uint64_t seed = *seed_on_device;
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        const float scale = counter_uniform(seed, static_cast<std::uint64_t>(i)) >= rate ? keep_scale : 0.0f;
        mask[i] = scale;
        y[i] = x[i] * scale;
    }
}

__global__ void dropout_backward_kernel(const float* grad_y, const float* mask, float* grad_x, int64_t count) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) grad_x[i] = grad_y[i] * mask[i];
}

// One sample per thread: the reference's row loop verbatim (double for the normaliser). A sample
// whose loss is not finite sets *loss_marker (zeroed by the caller; null: not wanted) to NaN.
__global__ void softmax_cross_entropy_kernel(const float* logits, const int32_t* labels, int64_t batch, int64_t classes,
                                             float* probs, float* grad_logits, float grad_scale, int32_t top_k,
                                             RowLoss* rows, float* loss_marker) {
    for (int64_t b = thread_index(); b < batch; b += thread_stride()) {
        const float* z = logits + b * classes;
        float* p = probs + b * classes;
        const int32_t label = labels[b];
        RowLoss row;
        if (label < 0 || label >= classes) {
            row.bad_label = 1;
            rows[b] = row;
            if (loss_marker != nullptr) *loss_marker = nanf("");
            continue;
        }
        float max_logit = z[0];
        int64_t arg = 0;
        for (int64_t c = 1; c < classes; ++c) {
            if (z[c] > max_logit) {
                max_logit = z[c];
                arg = c;
            }
        }
        double total = 0.0;
        for (int64_t c = 0; c < classes; ++c) total += exp(static_cast<double>(z[c] - max_logit));
        const double log_total = log(total);
        for (int64_t c = 0; c < classes; ++c) p[c] = static_cast<float>(exp(static_cast<double>(z[c] - max_logit) - log_total));
        row.loss = log_total - static_cast<double>(z[label] - max_logit);
        row.correct = arg == label ? 1 : 0;
        int64_t higher = 0;
        for (int64_t c = 0; c < classes; ++c) higher += z[c] > z[label] ? 1 : 0;
        row.top_k_correct = higher < top_k && isfinite(z[label]) ? 1 : 0;
        if (grad_logits != nullptr) {
            float* g = grad_logits + b * classes;
            for (int64_t c = 0; c < classes; ++c) g[c] = (p[c] - (c == label ? 1.0f : 0.0f)) * grad_scale;
        }
        if (loss_marker != nullptr && !isfinite(row.loss)) *loss_marker = nanf("");
        rows[b] = row;
    }
}

// reference_apply_update (core/optim/optimizer.cpp), one element per thread, same operation order.
// An Embedding table's IndexedSlicesStats change it exactly where reference_apply_update's do.
// The statistics' pointers travel as arguments of their own, not inside IndexedSlicesStats: every
// pointer a kernel gets is then a visible argument (the host emulator checks and maps each one).
// `non_finite` (null: always update) is the step's verdict (all_finite_kernel): when set, the
// update does not happen, so the host need not know the verdict before queueing it.
__global__ void apply_update_kernel(const OptimizerStep* step_on_device, float* weights, const float* grads,
                                    float* slot0, float* slot1, int64_t count, const float* grad_squares,
                                    const float* row_counts, int64_t row_width, const int32_t* non_finite) {
    if (non_finite != nullptr && *non_finite != 0) return;
    const OptimizerStep s = *step_on_device;
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        const bool in_batch = row_counts == nullptr || row_counts[i / row_width] != 0.0f;
        switch (s.kind) {
            case OptimizerKind::SGD:
                if (!s.use_momentum) {
                    weights[i] -= grads[i] * s.learning_rate;
                } else if (in_batch) {
                    float& m = slot0[i];
                    m = m * s.momentum - grads[i] * s.learning_rate;
                    if (s.nesterov)
                        weights[i] += m * s.momentum - grads[i] * s.learning_rate;
                    else
                        weights[i] += m;
                }
                break;
            case OptimizerKind::Adam: {
                const float g = grads[i];
                float& m = slot0[i];
                float& v = slot1[i];
                m += (g - m) * s.one_minus_beta_1;
                const float g2 = grad_squares != nullptr ? grad_squares[i] : g * g;
                v += (g2 - v) * s.one_minus_beta_2;
                weights[i] -= m * s.adam_alpha / (sqrtf(v) + s.epsilon);
                break;
            }
            case OptimizerKind::Nadam: {
                const float g = grads[i];
                float& m = slot0[i];
                float& v = slot1[i];
                m = s.beta_1 * m + s.one_minus_beta_1 * g;
                const float g2 = grad_squares != nullptr ? grad_squares[i] : g * g;
                v = s.beta_2 * v + s.one_minus_beta_2 * g2;
                if (!in_batch) break;
                const float m_hat = s.nadam_g_coeff * g + s.nadam_m_coeff * m;
                const float v_hat = v * s.nadam_v_scale;
                weights[i] -= s.learning_rate * m_hat / (sqrtf(v_hat) + s.epsilon);
                break;
            }
            case OptimizerKind::RMSprop: {
                if (s.use_momentum && !in_batch) break;
                const float g = grads[i];
                const float g2 = grad_squares != nullptr ? grad_squares[i] : g * g;
                float& v = slot0[i];
                v = s.rho * v + s.one_minus_rho * g2;
                const float increment = s.learning_rate * g / sqrtf(v + s.epsilon);
                if (s.use_momentum) {
                    float& mom = slot1[i];
                    mom = s.momentum * mom + increment;
                    weights[i] -= mom;
                } else {
                    weights[i] -= increment;
                }
                break;
            }
            case OptimizerKind::Invalid: break;
        }
    }
}

__global__ void add_inplace_kernel(float* dst, const float* src, int64_t count) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) dst[i] += src[i];
}

// Pass 1: each thread's grid-stride sum, stored thread-major ([thread][block]) so that pass 2's
// neighbouring threads read neighbouring words. Pass 2: block b's threads added in thread order. Two
// launches instead of a shared-memory tree: a fixed order, and no block-level synchronisation, so
// every kernel here also runs one thread at a time on the host emulator (tests/cuda_emulation).
__global__ void thread_sums_of_squares_kernel(const float* x, int64_t count, double* thread_sums) {
    double total = 0.0;
    for (int64_t i = thread_index(); i < count; i += thread_stride()) total += static_cast<double>(x[i]) * x[i];
    thread_sums[static_cast<int64_t>(threadIdx.x) * gridDim.x + blockIdx.x] = total;
}

__global__ void block_sums_kernel(const double* thread_sums, int64_t blocks, int64_t threads_per_block,
                                  double* partials) {
    for (int64_t b = thread_index(); b < blocks; b += thread_stride()) {
        double total = 0.0;
        for (int64_t t = 0; t < threads_per_block; ++t) total += thread_sums[t * blocks + b];
        partials[b] = total;
    }
}

__global__ void all_finite_kernel(const float* x, int64_t count, int32_t* flag) {
    for (int64_t i = thread_index(); i < count; i += thread_stride()) {
        if (!isfinite(x[i])) *flag = 1;
    }
}

}  // namespace

void fill_f32(cudaStream_t stream, float* dst, int64_t count, float value) {
    MIRRORLAB_LAUNCH(fill_f32_kernel, blocks_for(count), kThreads, stream)(dst, count, value);
}

void fill_i32(cudaStream_t stream, int32_t* dst, int64_t count, int32_t value) {
    MIRRORLAB_LAUNCH(fill_i32_kernel, blocks_for(count), kThreads, stream)(dst, count, value);
}

void embedding_forward(cudaStream_t stream, const int32_t* ids, int64_t count, const float* table, int64_t vocabulary,
                       int64_t width, float* out) {
    MIRRORLAB_LAUNCH(embedding_forward_kernel, blocks_for(count * width), kThreads, stream)(
        ids, count, table, vocabulary, width, out);
}

void embedding_backward(cudaStream_t stream, const int32_t* ids, int64_t count, const float* grad_out,
                        int64_t vocabulary, int64_t width, float* grad_table) {
    MIRRORLAB_LAUNCH(embedding_backward_kernel, blocks_for(count * width), kThreads, stream)(
        ids, count, grad_out, vocabulary, width, grad_table);
}

void embedding_gradient_stats(cudaStream_t stream, const int32_t* ids, int64_t count, const float* grad_out,
                              int64_t vocabulary, int64_t width, float* grad_squares, float* row_counts) {
    MIRRORLAB_LAUNCH(embedding_gradient_stats_kernel, blocks_for(count * width), kThreads, stream)(
        ids, count, grad_out, vocabulary, width, grad_squares, row_counts);
}

void embedding_sort_positions(cudaStream_t stream, const int32_t* ids, int64_t count, int64_t vocabulary,
                              int32_t* scratch) {
    int32_t* counts = scratch;
    int32_t* starts = counts + vocabulary;
    int32_t* cursors = starts + vocabulary + 1;
    int32_t* order = cursors + vocabulary;
    MIRRORLAB_LAUNCH(fill_i32_kernel, blocks_for(vocabulary), kThreads, stream)(counts, vocabulary, 0);
    MIRRORLAB_LAUNCH(embedding_count_kernel, blocks_for(count), kThreads, stream)(ids, count, vocabulary, counts);
    MIRRORLAB_LAUNCH(embedding_bucket_starts_kernel, 1, 1, stream)(counts, vocabulary, starts, cursors);
    MIRRORLAB_LAUNCH(embedding_bucket_kernel, blocks_for(count), kThreads, stream)(ids, count, vocabulary, cursors,
                                                                                    order);
    MIRRORLAB_LAUNCH(embedding_sort_buckets_kernel, blocks_for(vocabulary), kThreads, stream)(starts, vocabulary,
                                                                                              order);
}

void embedding_segment_sums(cudaStream_t stream, const int32_t* scratch, int64_t vocabulary, int64_t width,
                            const float* grad_out, float* grad_table, float* grad_squares, float* row_counts) {
    const int32_t* starts = scratch + vocabulary;
    const int32_t* order = starts + 2 * vocabulary + 1;
    MIRRORLAB_LAUNCH(embedding_segment_sums_kernel, blocks_for(vocabulary * width), kThreads, stream)(
        starts, order, vocabulary, width, grad_out, grad_table, grad_squares, row_counts);
}

void conv1d_forward(cudaStream_t stream, const float* x, int64_t batch, int64_t length, int64_t in_channels,
                    const float* kernel, int64_t window, int64_t out_channels, const float* bias, float* y,
                    int64_t out_length, int32_t pad_left) {
    MIRRORLAB_LAUNCH(conv1d_forward_kernel, blocks_for(batch * out_length * out_channels), kThreads, stream)(
        x, batch, length, in_channels, kernel, window, out_channels, bias, y, out_length, pad_left);
}

void conv1d_backward_data(cudaStream_t stream, const float* kernel, const float* grad_y, int64_t batch, int64_t length,
                          int64_t in_channels, int64_t window, int64_t out_channels, int64_t out_length,
                          int32_t pad_left, float* grad_x) {
    MIRRORLAB_LAUNCH(conv1d_backward_data_kernel, blocks_for(batch * length * in_channels), kThreads, stream)(
        kernel, grad_y, batch, length, in_channels, window, out_channels, out_length, pad_left, grad_x);
}

void conv1d_backward_filter(cudaStream_t stream, const float* x, const float* grad_y, int64_t batch, int64_t length,
                            int64_t in_channels, int64_t window, int64_t out_channels, int64_t out_length,
                            int32_t pad_left, float* grad_kernel) {
    MIRRORLAB_LAUNCH(conv1d_backward_filter_kernel, blocks_for(window * in_channels * out_channels), kThreads, stream)(
        x, grad_y, batch, length, in_channels, window, out_channels, out_length, pad_left, grad_kernel);
}

void kernel_to_filter(cudaStream_t stream, const float* kernel, int64_t window, int64_t in_channels,
                      int64_t out_channels, float* filter) {
    MIRRORLAB_LAUNCH(kernel_to_filter_kernel, blocks_for(window * in_channels * out_channels), kThreads, stream)(
        kernel, window, in_channels, out_channels, filter);
}

void filter_to_kernel(cudaStream_t stream, const float* filter, int64_t window, int64_t in_channels,
                      int64_t out_channels, float* kernel) {
    MIRRORLAB_LAUNCH(filter_to_kernel_kernel, blocks_for(window * in_channels * out_channels), kThreads, stream)(
        filter, window, in_channels, out_channels, kernel);
}

void pad_rows(cudaStream_t stream, const float* x, int64_t batch, int64_t length, int64_t channels, int64_t pad_left,
              int64_t padded_length, float* padded) {
    MIRRORLAB_LAUNCH(pad_rows_kernel, blocks_for(batch * padded_length * channels), kThreads, stream)(
        x, batch, length, channels, pad_left, padded_length, padded);
}

void crop_rows(cudaStream_t stream, const float* padded, int64_t batch, int64_t padded_length, int64_t channels,
               int64_t pad_left, int64_t length, float* x) {
    MIRRORLAB_LAUNCH(crop_rows_kernel, blocks_for(batch * length * channels), kThreads, stream)(
        padded, batch, padded_length, channels, pad_left, length, x);
}

void add_bias(cudaStream_t stream, float* y, int64_t rows, int64_t cols, const float* bias) {
    MIRRORLAB_LAUNCH(add_bias_kernel, blocks_for(rows * cols), kThreads, stream)(y, rows, cols, bias);
}

int64_t column_sums_partials(int64_t rows, int64_t cols) {
    const int64_t chunks = (rows + kColumnSumRows - 1) / kColumnSumRows;
    return (chunks < 1 ? 1 : chunks) * cols;
}

void column_sums(cudaStream_t stream, const float* x, int64_t rows, int64_t cols, float* partials, float* sums) {
    const int64_t chunks = (rows + kColumnSumRows - 1) / kColumnSumRows;
    if (chunks == 0) {
        fill_f32(stream, sums, cols, 0.0f);
        return;
    }
    const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>((cols + kThreads - 1) / kThreads));
    MIRRORLAB_LAUNCH(column_partials_kernel, grid, kThreads, stream)(x, rows, cols, partials);
    MIRRORLAB_LAUNCH(column_totals_kernel, blocks_for(cols), kThreads, stream)(partials, chunks, cols, sums);
}

void maxpool1d_forward(cudaStream_t stream, const float* x, int64_t batch, int64_t length, int64_t channels, float* y,
                       int32_t* argmax, int64_t out_length, int32_t pool_size, int32_t stride, int32_t pad_left) {
    MIRRORLAB_LAUNCH(maxpool1d_forward_kernel, blocks_for(batch * out_length * channels), kThreads, stream)(
        x, batch, length, channels, y, argmax, out_length, pool_size, stride, pad_left);
}

void maxpool1d_backward(cudaStream_t stream, const float* grad_y, const int32_t* argmax, int64_t batch,
                        int64_t out_length, int64_t channels, int64_t length, float* grad_x) {
    MIRRORLAB_LAUNCH(maxpool1d_backward_kernel, blocks_for(batch * out_length * channels), kThreads, stream)(
        grad_y, argmax, batch, out_length, channels, length, grad_x);
}

void activation_forward(cudaStream_t stream, ActivationKind kind, const float* x, float* y, int64_t count) {
    MIRRORLAB_LAUNCH(activation_forward_kernel, blocks_for(count), kThreads, stream)(kind, x, y, count);
}

void activation_backward(cudaStream_t stream, ActivationKind kind, const float* y, const float* grad_y, float* grad_x,
                         int64_t count) {
    MIRRORLAB_LAUNCH(activation_backward_kernel, blocks_for(count), kThreads, stream)(kind, y, grad_y, grad_x, count);
}

void dropout_forward(cudaStream_t stream, const float* x, float* y, float* mask, int64_t count, float rate,
                     float keep_scale, const std::uint64_t* seed_on_device) {
    MIRRORLAB_LAUNCH(dropout_forward_kernel, blocks_for(count), kThreads, stream)(
        x, y, mask, count, rate, keep_scale, seed_on_device);
}

void dropout_backward(cudaStream_t stream, const float* grad_y, const float* mask, float* grad_x, int64_t count) {
    MIRRORLAB_LAUNCH(dropout_backward_kernel, blocks_for(count), kThreads, stream)(grad_y, mask, grad_x, count);
}

void softmax_cross_entropy(cudaStream_t stream, const float* logits, const int32_t* labels, int64_t batch,
                           int64_t classes, float* probs, float* grad_logits, float grad_scale, int32_t top_k,
                           RowLoss* rows, float* loss_marker) {
    // Few samples per replica and ~50 classes: a warp of serial rows beats any reduction tree here.
    constexpr int kRowThreads = 32;
    const int64_t blocks = (batch + kRowThreads - 1) / kRowThreads;
    MIRRORLAB_LAUNCH(softmax_cross_entropy_kernel, static_cast<unsigned>(blocks < 1 ? 1 : blocks), kRowThreads, stream)(
        logits, labels, batch, classes, probs, grad_logits, grad_scale, top_k, rows, loss_marker);
}

void apply_update(cudaStream_t stream, const OptimizerStep* step_on_device, float* weights, const float* grads,
                  float* slot0, float* slot1, int64_t count, const IndexedSlicesStats& sparse,
                  const int32_t* non_finite) {
    MIRRORLAB_LAUNCH(apply_update_kernel, blocks_for(count), kThreads, stream)(
        step_on_device, weights, grads, slot0, slot1, count, sparse.grad_squares, sparse.row_counts, sparse.row_width,
        non_finite);
}

void add_inplace(cudaStream_t stream, float* dst, const float* src, int64_t count) {
    MIRRORLAB_LAUNCH(add_inplace_kernel, blocks_for(count), kThreads, stream)(dst, src, count);
}

void sum_of_squares(cudaStream_t stream, const float* x, int64_t count, double* thread_sums, double* partials) {
    static_assert(kSumOfSquaresThreadSums == int64_t{kSumOfSquaresBlocks} * kThreads);
    MIRRORLAB_LAUNCH(thread_sums_of_squares_kernel, kSumOfSquaresBlocks, kThreads, stream)(x, count, thread_sums);
    MIRRORLAB_LAUNCH(block_sums_kernel, 1, kThreads, stream)(thread_sums, kSumOfSquaresBlocks, kThreads, partials);
}

void all_finite(cudaStream_t stream, const float* x, int64_t count, int32_t* flag) {
    MIRRORLAB_LAUNCH(all_finite_kernel, blocks_for(count), kThreads, stream)(x, count, flag);
}

}  // namespace mirrorlab::cuda
