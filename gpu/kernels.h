#pragma once
// The CUDA kernels, behind plain launch functions so that only kernels.cu goes through nvcc. Each
// launcher keeps the name and argument order of the CPU reference op it mirrors
// (core/backend/cpu_reference.cpp) and the same loop body, so the two read side by side. Launchers
// only enqueue work on `stream`; the caller checks the launch and synchronises.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/backend/backend.h"
#include "core/optim/optimizer.h"

namespace mirrorlab::cuda {

using std::int32_t;
using std::int64_t;

void fill_f32(cudaStream_t stream, float* dst, int64_t count, float value);
void fill_i32(cudaStream_t stream, int32_t* dst, int64_t count, int32_t value);

// out[i, :] = table[ids[i], :]. Ids were checked on the host (check_batch, core/model/batch_check.h):
// one outside [0, vocabulary) all the same writes zeros, never reading outside the table.
void embedding_forward(cudaStream_t stream, const int32_t* ids, int64_t count, const float* table, int64_t vocabulary,
                       int64_t width, float* out);
// grad_table (zeroed by the caller) += grad_out rows at ids: a scatter-add with atomics. An id
// outside the table adds nothing (as in the other embedding kernels).
void embedding_backward(cudaStream_t stream, const int32_t* ids, int64_t count, const float* grad_out,
                        int64_t vocabulary, int64_t width, float* grad_table);
// The deterministic embedding gradient (MIRRORLAB_CUDA_DETERMINISTIC=1): the positions of every
// id sorted into buckets in ascending order, in `scratch` (embedding_sort_scratch ints), then each
// row of grad_table, grad_squares and row_counts (any may be null) written whole as the sum over
// its bucket in that order: the reference's summation order, the same bits on every run.
inline int64_t embedding_sort_scratch(int64_t count, int64_t vocabulary) { return 3 * vocabulary + 1 + count; }
void embedding_sort_positions(cudaStream_t stream, const int32_t* ids, int64_t count, int64_t vocabulary,
                              int32_t* scratch);
void embedding_segment_sums(cudaStream_t stream, const int32_t* scratch, int64_t vocabulary, int64_t width,
                            const float* grad_out, float* grad_table, float* grad_squares, float* row_counts);
// The IndexedSlices statistics (zeroed by the caller; either may be null): grad_squares += the
// squared grad_out rows at ids, row_counts[id] += 1 per occurrence.
void embedding_gradient_stats(cudaStream_t stream, const int32_t* ids, int64_t count, const float* grad_out,
                              int64_t vocabulary, int64_t width, float* grad_squares, float* row_counts);

// Direct 1-D convolution, the reference's loops one output element per thread (same summation
// order, so the same float result). Used where cuDNN has no algorithm for a shape, or on request.
void conv1d_forward(cudaStream_t stream, const float* x, int64_t batch, int64_t length, int64_t in_channels,
                    const float* kernel, int64_t window, int64_t out_channels, const float* bias, float* y,
                    int64_t out_length, int32_t pad_left);
void conv1d_backward_data(cudaStream_t stream, const float* kernel, const float* grad_y, int64_t batch, int64_t length,
                          int64_t in_channels, int64_t window, int64_t out_channels, int64_t out_length,
                          int32_t pad_left, float* grad_x);
void conv1d_backward_filter(cudaStream_t stream, const float* x, const float* grad_y, int64_t batch, int64_t length,
                            int64_t in_channels, int64_t window, int64_t out_channels, int64_t out_length,
                            int32_t pad_left, float* grad_kernel);

// Layout helpers for cuDNN: Keras kernels are [K, Cin, Cout], cuDNN's channels-last filters
// [Cout, 1, K, Cin]; inputs with asymmetric 'same' padding are padded explicitly.
void kernel_to_filter(cudaStream_t stream, const float* kernel, int64_t window, int64_t in_channels,
                      int64_t out_channels, float* filter);
void filter_to_kernel(cudaStream_t stream, const float* filter, int64_t window, int64_t in_channels,
                      int64_t out_channels, float* kernel);
void pad_rows(cudaStream_t stream, const float* x, int64_t batch, int64_t length, int64_t channels, int64_t pad_left,
              int64_t padded_length, float* padded);
void crop_rows(cudaStream_t stream, const float* padded, int64_t batch, int64_t padded_length, int64_t channels,
               int64_t pad_left, int64_t length, float* x);

// y[r, c] += bias[c] for a row-major [rows, cols] y.
void add_bias(cudaStream_t stream, float* y, int64_t rows, int64_t cols, const float* bias);
// sums[c] = sum over r of x[r, c], in a fixed order (deterministic); `partials` holds
// column_sums_partials(rows, cols) floats.
int64_t column_sums_partials(int64_t rows, int64_t cols);
void column_sums(cudaStream_t stream, const float* x, int64_t rows, int64_t cols, float* partials, float* sums);

void maxpool1d_forward(cudaStream_t stream, const float* x, int64_t batch, int64_t length, int64_t channels, float* y,
                       int32_t* argmax, int64_t out_length, int32_t pool_size, int32_t stride, int32_t pad_left);
// grad_x (zeroed by the caller) += grad_y at the recorded positions.
void maxpool1d_backward(cudaStream_t stream, const float* grad_y, const int32_t* argmax, int64_t batch,
                        int64_t out_length, int64_t channels, int64_t length, float* grad_x);

// ReLU, Tanh, Sigmoid (Linear is a copy and Softmax is fused into the loss: the caller handles them).
void activation_forward(cudaStream_t stream, ActivationKind kind, const float* x, float* y, int64_t count);
void activation_backward(cudaStream_t stream, ActivationKind kind, const float* y, const float* grad_y, float* grad_x,
                         int64_t count);

// The seed is read from device memory (CudaBackend::step_value), so a replayed graph takes each
// step's own.
void dropout_forward(cudaStream_t stream, const float* x, float* y, float* mask, int64_t count, float rate,
                     float keep_scale, const std::uint64_t* seed_on_device);
void dropout_backward(cudaStream_t stream, const float* grad_y, const float* mask, float* grad_x, int64_t count);

// Per-sample results of the fused loss; the host adds them up in sample order, as the reference.
struct RowLoss {
    double loss = 0.0;
    int32_t correct = 0;
    int32_t top_k_correct = 0;
    int32_t bad_label = 0;  // 1: the label is outside [0, classes); nothing else was computed
    int32_t unused = 0;
};
// *loss_marker (zeroed by the caller; may be null) becomes NaN when a sample's loss is not finite
// or its label is outside the classes: the training step's all-reduced verdict (Backend::step_loss).
void softmax_cross_entropy(cudaStream_t stream, const float* logits, const int32_t* labels, int64_t batch,
                           int64_t classes, float* probs, float* grad_logits, float grad_scale, int32_t top_k,
                           RowLoss* rows, float* loss_marker);

// `sparse` holds device pointers (IndexedSlicesStats, core/optim/optimizer.h). Nothing changes
// when *non_finite (the step's all_finite flag; null: always update) is set. The step's scalars
// are read from device memory (CudaBackend::step_value): a replayed graph takes each step's own.
void apply_update(cudaStream_t stream, const OptimizerStep* step_on_device, float* weights, const float* grads,
                  float* slot0, float* slot1, int64_t count, const IndexedSlicesStats& sparse,
                  const int32_t* non_finite);

void add_inplace(cudaStream_t stream, float* dst, const float* src, int64_t count);
// Per-block partial sums of squares in double; the host adds the kSumOfSquaresBlocks partials.
// `thread_sums` is scratch for kSumOfSquaresThreadSums doubles.
inline constexpr int kSumOfSquaresBlocks = 256;
inline constexpr int64_t kSumOfSquaresThreadSums = int64_t{kSumOfSquaresBlocks} * 256;
void sum_of_squares(cudaStream_t stream, const float* x, int64_t count, double* thread_sums, double* partials);
// *flag (zeroed by the caller) becomes 1 when an element is NaN or infinite.
void all_finite(cudaStream_t stream, const float* x, int64_t count, int32_t* flag);

}  // namespace mirrorlab::cuda
