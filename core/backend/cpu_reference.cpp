#include "core/backend/cpu_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/optim/optimizer.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// The device views of an Embedding update's statistics as the reference kernel's host pointers
// (a CPU device's memory is host memory).
IndexedSlicesStats host_slices_stats(const TensorView& weights, const IndexedSlicesViews& sparse) {
    check_indexed_slices(weights, sparse);
    IndexedSlicesStats stats;
    if (sparse.grad_squares) stats.grad_squares = sparse.grad_squares.f32();
    if (sparse.row_counts) {
        stats.row_counts = sparse.row_counts.f32();
        stats.row_width = weights.shape[1];
    }
    if (sparse.moment_decays) stats.moment_decays = reinterpret_cast<std::uint32_t*>(sparse.moment_decays.i32());
    return stats;
}

}  // namespace

std::int64_t conv_output_length(std::int64_t input_length, std::int32_t window, std::int32_t stride,
                                bool same_padding) {
    if (same_padding) return (input_length + stride - 1) / stride;
    if (input_length < window) return 0;
    return (input_length - window) / stride + 1;
}

std::int32_t same_pad_left(std::int64_t input_length, std::int32_t window, std::int32_t stride) {
    const std::int64_t out = (input_length + stride - 1) / stride;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + window - input_length, 0);
    return static_cast<std::int32_t>(total / 2);
}

float counter_uniform(std::uint64_t seed, std::uint64_t index) {
    // splitmix64 finaliser over (seed, index): a well-mixed 64-bit hash per element.
    std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

void CpuReferenceBackend::upload(const TensorView& dst, const void* host) {
    std::memcpy(dst.data, host, static_cast<std::size_t>(dst.bytes()));
}

void CpuReferenceBackend::download(void* host, const TensorView& src) {
    std::memcpy(host, src.data, static_cast<std::size_t>(src.bytes()));
}

void CpuReferenceBackend::copy(const TensorView& dst, const TensorView& src) {
    if (dst.numel() != src.numel() || dst.dtype != src.dtype) {
        throw OpError("[copy] destination " + dst.shape.to_string() + " does not match source " +
                      src.shape.to_string());
    }
    if (dst.data != src.data) std::memcpy(dst.data, src.data, static_cast<std::size_t>(src.bytes()));
}

void CpuReferenceBackend::fill(const TensorView& dst, float value) {
    if (dst.dtype == DType::I32) {
        std::fill_n(dst.i32(), dst.numel(), static_cast<std::int32_t>(value));
    } else {
        std::fill_n(dst.f32(), dst.numel(), value);
    }
}

void CpuReferenceBackend::embedding_forward(const TensorView& ids, const TensorView& table,
                                            const TensorView& out) {
    check_rank(ids, 2, "embedding", "ids");
    check_rank(table, 2, "embedding", "table");
    const std::int64_t vocabulary = table.shape[0], width = table.shape[1];
    const std::int64_t count = ids.numel();
    if (out.numel() != count * width) {
        throw OpError("[embedding] output " + out.shape.to_string() + " does not hold " +
                      ids.shape.to_string() + " ids of width " + std::to_string(width));
    }
    for (std::int64_t i = 0; i < count; ++i) {
        const std::int32_t id = ids.i32()[i];
        if (id < 0 || id >= vocabulary) {
            throw OpError("[embedding] token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(vocabulary) + " (input_dim); enlarge input_dim or map such ids to OOV");
        }
        std::memcpy(out.f32() + i * width, table.f32() + id * width,
                    static_cast<std::size_t>(width) * sizeof(float));
    }
}

void CpuReferenceBackend::embedding_backward(const TensorView& ids, const TensorView& grad_out,
                                             const TensorView& grad_table) {
    const std::int64_t vocabulary = grad_table.shape[0], width = grad_table.shape[1];
    std::fill_n(grad_table.f32(), grad_table.numel(), 0.0f);
    for (std::int64_t i = 0; i < ids.numel(); ++i) {
        const std::int32_t id = ids.i32()[i];
        if (id < 0 || id >= vocabulary) {
            throw OpError("[embedding] token id " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(vocabulary) + " (input_dim) in the backward pass");
        }
        float* row = grad_table.f32() + id * width;
        const float* g = grad_out.f32() + i * width;
        for (std::int64_t d = 0; d < width; ++d) row[d] += g[d];
    }
}

void CpuReferenceBackend::embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out,
                                                   const TensorView& grad_squares, const TensorView& row_counts) {
    if (grad_squares) std::fill_n(grad_squares.f32(), grad_squares.numel(), 0.0f);
    if (row_counts) std::fill_n(row_counts.f32(), row_counts.numel(), 0.0f);
    const std::int64_t width = grad_out.numel() / std::max<std::int64_t>(ids.numel(), 1);
    for (std::int64_t i = 0; i < ids.numel(); ++i) {
        const std::int32_t id = ids.i32()[i];  // checked by embedding_backward
        if (row_counts) row_counts.f32()[id] += 1.0f;
        if (!grad_squares) continue;
        float* row = grad_squares.f32() + id * width;
        const float* g = grad_out.f32() + i * width;
        for (std::int64_t d = 0; d < width; ++d) row[d] += g[d] * g[d];
    }
}

void CpuReferenceBackend::conv1d_forward(const TensorView& x, const TensorView& kernel,
                                         const TensorView& bias, const TensorView& y,
                                         const Conv1DParams& params) {
    check_conv1d_shapes(x, kernel, y);
    const std::int64_t batch = x.shape[0], length = x.shape[1], in_channels = x.shape[2];
    const std::int64_t window = kernel.shape[0], out_channels = kernel.shape[2];
    const std::int64_t out_length = y.shape[1];
    const float* w = kernel.f32();
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < out_length; ++t) {
            float* out = y.f32() + (b * out_length + t) * out_channels;
            for (std::int64_t o = 0; o < out_channels; ++o) out[o] = bias ? bias.f32()[o] : 0.0f;
            for (std::int64_t k = 0; k < window; ++k) {
                const std::int64_t source = t + k - params.pad_left;
                if (source < 0 || source >= length) continue;  // zero padding
                const float* in = x.f32() + (b * length + source) * in_channels;
                for (std::int64_t c = 0; c < in_channels; ++c) {
                    const float value = in[c];
                    const float* w_row = w + (k * in_channels + c) * out_channels;
                    for (std::int64_t o = 0; o < out_channels; ++o) out[o] += value * w_row[o];
                }
            }
        }
    }
}

void CpuReferenceBackend::conv1d_backward(const TensorView& x, const TensorView& kernel,
                                          const TensorView& grad_y, const TensorView& grad_x,
                                          const TensorView& grad_kernel, const TensorView& grad_bias,
                                          const Conv1DParams& params) {
    const std::int64_t batch = x.shape[0], length = x.shape[1], in_channels = x.shape[2];
    const std::int64_t window = kernel.shape[0], out_channels = kernel.shape[2];
    const std::int64_t out_length = grad_y.shape[1];
    if (grad_x) std::fill_n(grad_x.f32(), grad_x.numel(), 0.0f);
    std::fill_n(grad_kernel.f32(), grad_kernel.numel(), 0.0f);
    if (grad_bias) std::fill_n(grad_bias.f32(), grad_bias.numel(), 0.0f);
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < out_length; ++t) {
            const float* dy = grad_y.f32() + (b * out_length + t) * out_channels;
            if (grad_bias) {
                for (std::int64_t o = 0; o < out_channels; ++o) grad_bias.f32()[o] += dy[o];
            }
            for (std::int64_t k = 0; k < window; ++k) {
                const std::int64_t source = t + k - params.pad_left;
                if (source < 0 || source >= length) continue;
                const float* in = x.f32() + (b * length + source) * in_channels;
                float* d_in = grad_x ? grad_x.f32() + (b * length + source) * in_channels : nullptr;
                for (std::int64_t c = 0; c < in_channels; ++c) {
                    const float* w_row = kernel.f32() + (k * in_channels + c) * out_channels;
                    float* dw_row = grad_kernel.f32() + (k * in_channels + c) * out_channels;
                    const float value = in[c];
                    float dot = 0.0f;
                    for (std::int64_t o = 0; o < out_channels; ++o) {
                        dw_row[o] += value * dy[o];
                        dot += w_row[o] * dy[o];
                    }
                    if (d_in != nullptr) d_in[c] += dot;
                }
            }
        }
    }
}

void CpuReferenceBackend::maxpool1d_forward(const TensorView& x, const TensorView& y,
                                            const TensorView& argmax, const Pool1DParams& params) {
    check_rank(x, 3, "max_pooling1d", "input");
    const std::int64_t batch = x.shape[0], length = x.shape[1], channels = x.shape[2];
    const std::int64_t out_length = y.shape[1];
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < out_length; ++t) {
            float* out = y.f32() + (b * out_length + t) * channels;
            std::int32_t* arg = argmax.i32() + (b * out_length + t) * channels;
            for (std::int64_t c = 0; c < channels; ++c) {
                out[c] = -std::numeric_limits<float>::infinity();
                arg[c] = -1;
            }
            // Only the window's rows inside the input: a pool_size of 2e9 with padding 'same' looped
            // over them all for each output.
            const std::int64_t start = t * params.stride - params.pad_left;
            const std::int64_t k_end = std::min<std::int64_t>(params.pool_size, length - start);
            for (std::int64_t k = std::max<std::int64_t>(0, -start); k < k_end; ++k) {
                const std::int64_t source = start + k;
                const float* in = x.f32() + (b * length + source) * channels;
                for (std::int64_t c = 0; c < channels; ++c) {
                    // Strictly greater: the first maximum wins, as TensorFlow's MaxPoolGrad routes it.
                    // A NaN input is taken so that it propagates instead of vanishing.
                    const bool first = arg[c] < 0;
                    const bool nan_first = std::isnan(in[c]) && !std::isnan(out[c]);
                    if (first || in[c] > out[c] || nan_first) {
                        out[c] = in[c];
                        arg[c] = static_cast<std::int32_t>(source);
                    }
                }
            }
        }
    }
}

void CpuReferenceBackend::maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax,
                                             const TensorView& grad_x) {
    const std::int64_t batch = grad_x.shape[0], length = grad_x.shape[1], channels = grad_x.shape[2];
    const std::int64_t out_length = grad_y.shape[1];
    std::fill_n(grad_x.f32(), grad_x.numel(), 0.0f);
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < out_length; ++t) {
            const float* dy = grad_y.f32() + (b * out_length + t) * channels;
            const std::int32_t* arg = argmax.i32() + (b * out_length + t) * channels;
            for (std::int64_t c = 0; c < channels; ++c) {
                if (arg[c] >= 0) grad_x.f32()[(b * length + arg[c]) * channels + c] += dy[c];
            }
        }
    }
}

void CpuReferenceBackend::dense_forward(const TensorView& x, const TensorView& kernel,
                                        const TensorView& bias, const TensorView& y) {
    check_dense_shapes(x, kernel);
    const std::int64_t batch = x.shape[0], inputs = x.shape[1], units = kernel.shape[1];
    for (std::int64_t b = 0; b < batch; ++b) {
        float* out = y.f32() + b * units;
        for (std::int64_t o = 0; o < units; ++o) out[o] = bias ? bias.f32()[o] : 0.0f;
        const float* in = x.f32() + b * inputs;
        for (std::int64_t i = 0; i < inputs; ++i) {
            const float value = in[i];
            const float* w_row = kernel.f32() + i * units;
            for (std::int64_t o = 0; o < units; ++o) out[o] += value * w_row[o];
        }
    }
}

void CpuReferenceBackend::dense_backward(const TensorView& x, const TensorView& kernel,
                                         const TensorView& grad_y, const TensorView& grad_x,
                                         const TensorView& grad_kernel, const TensorView& grad_bias) {
    const std::int64_t batch = x.shape[0], inputs = x.shape[1], units = kernel.shape[1];
    std::fill_n(grad_kernel.f32(), grad_kernel.numel(), 0.0f);
    if (grad_bias) std::fill_n(grad_bias.f32(), grad_bias.numel(), 0.0f);
    for (std::int64_t b = 0; b < batch; ++b) {
        const float* dy = grad_y.f32() + b * units;
        const float* in = x.f32() + b * inputs;
        float* d_in = grad_x ? grad_x.f32() + b * inputs : nullptr;
        if (grad_bias) {
            for (std::int64_t o = 0; o < units; ++o) grad_bias.f32()[o] += dy[o];
        }
        for (std::int64_t i = 0; i < inputs; ++i) {
            const float* w_row = kernel.f32() + i * units;
            float* dw_row = grad_kernel.f32() + i * units;
            float dot = 0.0f;
            for (std::int64_t o = 0; o < units; ++o) {
                dw_row[o] += in[i] * dy[o];
                dot += w_row[o] * dy[o];
            }
            if (d_in != nullptr) d_in[i] = dot;
        }
    }
}

void CpuReferenceBackend::activation_forward(ActivationKind kind, const TensorView& x,
                                             const TensorView& y) {
    const std::int64_t count = x.numel();
    const float* in = x.f32();
    float* out = y.f32();
    switch (kind) {
        case ActivationKind::Linear:
            if (in != out) std::memcpy(out, in, static_cast<std::size_t>(count) * sizeof(float));
            return;
        case ActivationKind::ReLU:
            for (std::int64_t i = 0; i < count; ++i) out[i] = std::isnan(in[i]) ? in[i] : std::max(in[i], 0.0f);
            return;
        case ActivationKind::Tanh:
            for (std::int64_t i = 0; i < count; ++i) out[i] = std::tanh(in[i]);
            return;
        case ActivationKind::Sigmoid:
            for (std::int64_t i = 0; i < count; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
            return;
        case ActivationKind::Softmax:
        case ActivationKind::Invalid:
            break;
    }
    throw OpError("[activation] " + std::string(activation_name(kind)) +
                  " is not an elementwise activation (softmax is fused into the loss)");
}

void CpuReferenceBackend::activation_backward(ActivationKind kind, const TensorView& y,
                                              const TensorView& grad_y, const TensorView& grad_x) {
    const std::int64_t count = y.numel();
    const float* out = y.f32();
    const float* dy = grad_y.f32();
    float* dx = grad_x.f32();
    switch (kind) {
        case ActivationKind::Linear:
            if (dx != dy) std::memcpy(dx, dy, static_cast<std::size_t>(count) * sizeof(float));
            return;
        case ActivationKind::ReLU:
            for (std::int64_t i = 0; i < count; ++i) dx[i] = out[i] > 0.0f ? dy[i] : 0.0f;
            return;
        case ActivationKind::Tanh:
            for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * (1.0f - out[i] * out[i]);
            return;
        case ActivationKind::Sigmoid:
            for (std::int64_t i = 0; i < count; ++i) dx[i] = dy[i] * out[i] * (1.0f - out[i]);
            return;
        case ActivationKind::Softmax:
        case ActivationKind::Invalid:
            break;
    }
    throw OpError("[activation] no elementwise gradient for " + std::string(activation_name(kind)));
}

void CpuReferenceBackend::dropout_forward(const TensorView& x, const TensorView& y,
                                          const TensorView& mask, float rate, std::uint64_t seed) {
    const float keep_scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
        const float scale = counter_uniform(seed, static_cast<std::uint64_t>(i)) >= rate ? keep_scale : 0.0f;
        mask.f32()[i] = scale;
        y.f32()[i] = x.f32()[i] * scale;
    }
}

void CpuReferenceBackend::dropout_backward(const TensorView& grad_y, const TensorView& mask,
                                           const TensorView& grad_x) {
    for (std::int64_t i = 0; i < grad_y.numel(); ++i) grad_x.f32()[i] = grad_y.f32()[i] * mask.f32()[i];
}

LossCounts CpuReferenceBackend::softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                                      const TensorView& probs,
                                                      const TensorView& grad_logits, float grad_scale,
                                                      std::int32_t top_k) {
    check_rank(logits, 2, "sparse_categorical_crossentropy", "logits");
    const std::int64_t batch = logits.shape[0], classes = logits.shape[1];
    LossCounts counts;
    counts.samples = batch;
    for (std::int64_t b = 0; b < batch; ++b) {
        const float* z = logits.f32() + b * classes;
        float* p = probs.f32() + b * classes;
        const std::int32_t label = labels.i32()[b];
        if (label < 0 || label >= classes) {
            throw OpError("[sparse_categorical_crossentropy] label " + std::to_string(label) +
                          " of sample " + std::to_string(b) + " is outside [0, " +
                          std::to_string(classes) + "): the model's last layer has " +
                          std::to_string(classes) + " units; it needs one per class");
        }
        float max_logit = z[0];
        std::int64_t arg = 0;
        for (std::int64_t c = 1; c < classes; ++c) {
            if (z[c] > max_logit) {
                max_logit = z[c];
                arg = c;
            }
        }
        double total = 0.0;
        for (std::int64_t c = 0; c < classes; ++c) total += std::exp(static_cast<double>(z[c] - max_logit));
        const double log_total = std::log(total);
        for (std::int64_t c = 0; c < classes; ++c) {
            p[c] = static_cast<float>(std::exp(static_cast<double>(z[c] - max_logit) - log_total));
        }
        counts.loss_sum += log_total - static_cast<double>(z[label] - max_logit);
        if (arg == label) ++counts.correct;
        // in_top_k: the label is in the top k when fewer than k classes score strictly higher.
        std::int64_t higher = 0;
        for (std::int64_t c = 0; c < classes; ++c) higher += z[c] > z[label] ? 1 : 0;
        if (higher < top_k && std::isfinite(z[label])) ++counts.top_k_correct;
        if (grad_logits) {
            float* g = grad_logits.f32() + b * classes;
            for (std::int64_t c = 0; c < classes; ++c) {
                g[c] = (p[c] - (c == label ? 1.0f : 0.0f)) * grad_scale;
            }
        }
    }
    return counts;
}

void CpuReferenceBackend::apply_update(const OptimizerStep& step, const TensorView& weights,
                                       const TensorView& grads, const TensorView& slot0,
                                       const TensorView& slot1, const IndexedSlicesViews& sparse) {
    check_same_shape(weights, grads, "optimizer");
    reference_apply_update(step, weights.f32(), grads.f32(), slot0 ? slot0.f32() : nullptr,
                           slot1 ? slot1.f32() : nullptr, static_cast<std::size_t>(weights.numel()),
                           host_slices_stats(weights, sparse));
}

void CpuReferenceBackend::add_inplace(const TensorView& dst, const TensorView& src) {
    if (dst.numel() != src.numel()) check_same_shape(dst, src, "add");
    for (std::int64_t i = 0; i < dst.numel(); ++i) dst.f32()[i] += src.f32()[i];
}

double CpuReferenceBackend::sum_of_squares(const TensorView& x) {
    double total = 0.0;
    for (std::int64_t i = 0; i < x.numel(); ++i) total += static_cast<double>(x.f32()[i]) * x.f32()[i];
    return total;
}

bool CpuReferenceBackend::all_finite(const TensorView& x) {
    for (std::int64_t i = 0; i < x.numel(); ++i) {
        if (!std::isfinite(x.f32()[i])) return false;
    }
    return true;
}

}  // namespace mirrorlab
