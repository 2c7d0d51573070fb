#pragma once
// The plain reference implementation of every op: straightforward loops, written to be read and
// trusted. Faster CPU kernels and the CUDA backend are tested against this class, so it stays
// simple even where that costs speed; loop orders only keep the innermost loop contiguous.
#include "core/backend/backend.h"

namespace mirrorlab {

class CpuReferenceBackend : public Backend {
public:
    std::string_view name() const override { return "cpu-reference"; }
    // Host memory: the layer types' ops (OpDef) run their reference in place here.
    bool host_memory() const override { return true; }

    void upload(const TensorView& dst, const void* host) override;
    void download(void* host, const TensorView& src) override;
    void copy(const TensorView& dst, const TensorView& src) override;
    void fill(const TensorView& dst, float value) override;

    void embedding_forward(const TensorView& ids, const TensorView& table, const TensorView& out) override;
    void embedding_backward(const TensorView& ids, const TensorView& grad_out,
                            const TensorView& grad_table) override;
    void embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out, const TensorView& grad_squares,
                                  const TensorView& row_counts) override;
    void conv1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                        const TensorView& y, const Conv1DParams& params) override;
    void conv1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                         const TensorView& grad_x, const TensorView& grad_kernel,
                         const TensorView& grad_bias, const Conv1DParams& params) override;
    void maxpool1d_forward(const TensorView& x, const TensorView& y, const TensorView& argmax,
                           const Pool1DParams& params) override;
    void maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax,
                            const TensorView& grad_x) override;
    void dense_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                       const TensorView& y) override;
    void dense_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                        const TensorView& grad_x, const TensorView& grad_kernel,
                        const TensorView& grad_bias) override;
    void activation_forward(ActivationKind kind, const TensorView& x, const TensorView& y) override;
    void activation_backward(ActivationKind kind, const TensorView& y, const TensorView& grad_y,
                             const TensorView& grad_x) override;
    void dropout_forward(const TensorView& x, const TensorView& y, const TensorView& mask, float rate,
                         std::uint64_t seed) override;
    void dropout_backward(const TensorView& grad_y, const TensorView& mask,
                          const TensorView& grad_x) override;
    LossCounts softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                     const TensorView& probs, const TensorView& grad_logits,
                                     float grad_scale, std::int32_t top_k) override;
    void apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                      const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) override;
    bool defers_moment_decays() const override { return true; }  // reference_apply_update takes them
    void add_inplace(const TensorView& dst, const TensorView& src) override;
    double sum_of_squares(const TensorView& x) override;
    bool all_finite(const TensorView& x) override;
};

// Output length of a 1-D convolution or pooling window, TensorFlow's rule for 'valid' / 'same'.
std::int64_t conv_output_length(std::int64_t input_length, std::int32_t window, std::int32_t stride,
                                bool same_padding);
// TensorFlow's left padding for 'same': half of the total, rounded down.
std::int32_t same_pad_left(std::int64_t input_length, std::int32_t window, std::int32_t stride);

// A counter-based random number in [0, 1) for element `index` of a stream: reproducible on any
// backend and in any thread order (dropout masks, synthetic data).
float counter_uniform(std::uint64_t seed, std::uint64_t index);

}  // namespace mirrorlab
