#pragma once
// The CPU backend that training uses: the hot ops of the reference workload (Conv1D forward and
// both backward passes, Conv1D + ReLU + MaxPooling1D fused, Dense, ReLU, max pooling, Adam/Nadam,
// the all-reduce's add and the NaN guard) run vectorised kernels chosen for the CPU at run time
// (AVX-512, AVX2+FMA or plain code, see cpu_fast_kernels.h) and split into chunks for the
// process-wide thread pool; every other op is the reference's. tests/test_kernels.cpp compares each override with
// CpuReferenceBackend on random shapes.
//
// Threads: each backend uses pool.limit() / (number of live CpuFastBackends) threads, so one
// replica on a 2-core machine runs its ops on 2 threads and two replicas run on 1 each, never
// more threads than cores in all.
//
// Numerics: convolutions and Dense sum in the same order as the reference, with fused
// multiply-adds (differences of a few ulps per sum); the optimizer updates are bit-identical.
#include <string>
#include <vector>

#include "core/backend/cpu_fast_kernels.h"
#include "core/backend/cpu_reference.h"

namespace mirrorlab {

struct ConvGeometry;

class CpuFastBackend : public CpuReferenceBackend {
  public:
    CpuFastBackend();  // the best kernels this CPU runs
    explicit CpuFastBackend(
        const fast::KernelTable& kernels);  // a given set (tests compare them all)
    ~CpuFastBackend() override;
    CpuFastBackend(const CpuFastBackend&) = delete;
    CpuFastBackend& operator=(const CpuFastBackend&) = delete;

    std::string_view name() const override { return "cpu-fast"; }
    // The instruction set of the kernels in use: "avx512", "avx2" or "generic".
    std::string_view isa() const;
    // Threads this backend's ops use now (its share of the pool).
    int threads() const;
    // Whether conv1d_relu_maxpool1d_* run fused (MIRRORLAB_CPU_FUSION=0: as the three ops).
    bool fuses_conv_relu_pool() const;
    std::vector<std::string> kernel_choices() const override;

    void conv1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                        const TensorView& y, const Conv1DParams& params) override;
    void conv1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                         const TensorView& grad_x, const TensorView& grad_kernel,
                         const TensorView& grad_bias, const Conv1DParams& params) override;
    void maxpool1d_forward(const TensorView& x, const TensorView& y, const TensorView& argmax,
                           const Pool1DParams& params) override;
    void maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax,
                            const TensorView& grad_x) override;
    // Sample by sample while the convolution's output is in cache (cpu_fast_conv.cpp), bit for bit
    // what the three unfused ops write. MIRRORLAB_CPU_FUSION=0 runs the three ops instead.
    void conv1d_relu_maxpool1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                       const TensorView& conv_y, const TensorView& y, const TensorView& argmax,
                                       const Conv1DParams& conv, const Pool1DParams& pool) override;
    void conv1d_relu_maxpool1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& conv_y,
                                        const TensorView& y, const TensorView& argmax, const TensorView& grad_y,
                                        const TensorView& grad_conv_y, const TensorView& grad_x,
                                        const TensorView& grad_kernel, const TensorView& grad_bias,
                                        const Conv1DParams& conv) override;
    void dense_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                       const TensorView& y) override;
    void dense_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                        const TensorView& grad_x, const TensorView& grad_kernel,
                        const TensorView& grad_bias) override;
    void activation_forward(ActivationKind kind, const TensorView& x, const TensorView& y) override;
    void activation_backward(ActivationKind kind, const TensorView& y, const TensorView& grad_y,
                             const TensorView& grad_x) override;
    // The reference's gather and scatter-add a vector per row (KernelTable::embedding_gather); ids
    // outside the table, or shapes that do not fit, go to the reference, which names them.
    void embedding_forward(const TensorView& ids, const TensorView& table, const TensorView& out) override;
    void embedding_backward(const TensorView& ids, const TensorView& grad_out, const TensorView& grad_table) override;
    // Row counts alone (TF2's IndexedSlices): a run of equal ids (a sequence's padding) adds its
    // length at once; counts are whole numbers below 2^24, which a float holds exactly, so that is
    // the reference's one-by-one sum bit for bit. Squared slices go to the reference.
    void embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out, const TensorView& grad_squares,
                                  const TensorView& row_counts) override;
    void apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                      const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) override;
    void add_inplace(const TensorView& dst, const TensorView& src) override;
    bool add_inplace_all_finite(const TensorView& dst, const TensorView& src) override;
    bool add_into_both_all_finite(const TensorView& a, const TensorView& b) override;
    bool all_finite(const TensorView& x) override;
    double sum_of_squares(const TensorView& x) override;

  private:
    void apply_nadam_to_batch_rows(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                                   const TensorView& m, const TensorView& v, const IndexedSlicesViews& sparse);
    // Pooling geometry of recent forward calls, keyed by their argmax buffer: the backward op
    // gets no parameters, and with windows that do not overlap it can write grad_x once instead
    // of zero-filling and scattering.
    struct PoolRecord {
        const void* argmax = nullptr;
        fast::PoolArgs geometry;
        // Written by the fused Conv1D + ReLU + MaxPooling1D forward on one thread: only the pooled
        // rows and argmax stored (no convolution output), inactive windows marked -1 in argmax.
        // Only the fused backward can follow it.
        bool pooled_only = false;
    };

    void remember_pool(const void* argmax, const fast::PoolArgs& geometry, bool pooled_only = false);
    // The record of the forward call that wrote `argmax`, when its windows do not overlap and it
    // matches these shapes; else null.
    const PoolRecord* disjoint_pool(const TensorView& argmax, const TensorView& grad_y,
                                    const TensorView& grad_x) const;
    // A convolution of every sample (conv1d_forward, and the direct input gradient as one).
    void convolve(const ConvGeometry& g, const float* x, const float* kernel, const float* bias, float* y);
    void conv1d_grad_x_direct(const ConvGeometry& g, const TensorView& kernel,
                              const TensorView& grad_y, const TensorView& grad_x);
    void conv1d_grad_x_folded(const ConvGeometry& g, const TensorView& kernel,
                              const TensorView& grad_y, const TensorView& grad_x);
    // Room for `count` floats, starting on a 64-byte cache line as the arena's tensors do: where a
    // GEMM's operands sit in their lines decides how fast its loads go. Conv1's fused backward,
    // whose transposed z and grad_y live here, took 0.488 -> 0.481 and 0.487 -> 0.477 ms with AVX2
    // and 0.485 -> 0.472 with AVX-512 against malloc's 16-byte alignment; one of its GEMMs ran
    // anywhere between 65 and 113 GFLOP/s for different offsets of its operands (AMD EPYC Zen 4).
    // Grows, never shrinks: no allocation once warm.
    float* scratch(std::size_t count);

    const fast::KernelTable& kernels_;
    std::vector<float> scratch_;
    // A few records to start with; a new buffer takes the oldest record that no backward needs
    // (pooled_only false: the geometry only spares a zero fill there), and the list grows where every
    // record holds a pooled-only forward, so a model's every fused pooling layer keeps its record
    // until its backward (allocations only in a model's first step).
    std::vector<PoolRecord> pools_ = std::vector<PoolRecord>(4);
    std::size_t next_pool_ = 0;
};

}  // namespace mirrorlab
