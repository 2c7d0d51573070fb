#include "core/backend/cpu_fast.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/backend/cpu_fast_common.h"
#include "core/optim/optimizer.h"
#include "core/util/error.h"
#include "core/util/thread_pool.h"

namespace mirrorlab {

namespace {

using fast::GemmArgs;
using fast_detail::ceil_div;
using fast_detail::kCacheLineFloats;
using fast_detail::kUpdateChunk;

std::atomic<int> g_live_backends{0};

}  // namespace

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
    constexpr auto kLine = static_cast<std::size_t>(kCacheLineFloats);
    if (scratch_.size() < count + kLine) scratch_.resize(count + kLine);
    const std::size_t floats_into_line = reinterpret_cast<std::uintptr_t>(scratch_.data()) / sizeof(float) % kLine;
    return scratch_.data() + (kLine - floats_into_line) % kLine;
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
        kernels_.transpose(grad_y.f32(), batch, units, units, grad_y_t, batch);
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
            kernels_.transpose(grad_x_t + i0 * batch, i1 - i0, batch, batch, grad_x.f32() + i0, inputs);
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

namespace {

// Whether every id lies in [0, rows). check_batch has checked them on the host already; the fast
// ops check again so that an id outside still reaches the reference, which names it.
bool ids_inside(const TensorView& ids, std::int64_t rows) {
    const std::int32_t* id = ids.i32();
    return std::all_of(id, id + ids.numel(), [rows](std::int32_t i) { return i >= 0 && i < rows; });
}

// Whether the ids index rows of `table` (rank 2) and `rows_out` holds one row of it per id.
bool embedding_fits(const TensorView& ids, const TensorView& table, const TensorView& rows_out) {
    if (ids.shape.rank() != 2 || table.shape.rank() != 2 || ids.dtype != DType::I32) return false;
    return rows_out.numel() == ids.numel() * table.shape[1] && ids_inside(ids, table.shape[0]);
}

}  // namespace

void CpuFastBackend::embedding_forward(const TensorView& ids, const TensorView& table, const TensorView& out) {
    if (!embedding_fits(ids, table, out)) {
        CpuReferenceBackend::embedding_forward(ids, table, out);  // it says what is wrong
        return;
    }
    kernels_.embedding_gather(table.f32(), table.shape[0], table.shape[1], ids.i32(), ids.numel(), out.f32());
}

void CpuFastBackend::embedding_backward(const TensorView& ids, const TensorView& grad_out,
                                        const TensorView& grad_table) {
    if (!embedding_fits(ids, grad_table, grad_out)) {
        CpuReferenceBackend::embedding_backward(ids, grad_out, grad_table);
        return;
    }
    std::fill_n(grad_table.f32(), grad_table.numel(), 0.0f);
    kernels_.embedding_scatter_add(grad_table.f32(), grad_table.shape[0], grad_table.shape[1], ids.i32(), ids.numel(),
                                   grad_out.f32());
}

void CpuFastBackend::embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out,
                                              const TensorView& grad_squares, const TensorView& row_counts) {
    const std::int64_t positions = ids.numel();
    constexpr std::int64_t kExactCounts = std::int64_t{1} << 24;  // floats hold every whole number below
    const std::int32_t* id = ids.i32();
    const std::int64_t rows = row_counts.numel();
    if (grad_squares || !row_counts || positions >= kExactCounts || !ids_inside(ids, rows)) {
        CpuReferenceBackend::embedding_gradient_stats(ids, grad_out, grad_squares, row_counts);
        return;
    }
    float* counts = row_counts.f32();
    std::fill_n(counts, rows, 0.0f);
    for (std::int64_t i = 0; i < positions;) {
        std::int64_t run = 1;
        while (i + run < positions && id[i + run] == id[i]) ++run;
        counts[id[i]] += static_cast<float>(run);
        i += run;
    }
}

// TF2's sparse Nadam on an Embedding table (reference_apply_update with row counts): the rows in
// the batch through the vectorised kernel, the others only decay their moments (or, with deferred
// decays, wait for their next batch), in the reference's operation order, so the result is the
// reference's bit for bit.
void CpuFastBackend::apply_nadam_to_batch_rows(const OptimizerStep& step, const TensorView& weights,
                                               const TensorView& grads, const TensorView& m, const TensorView& v,
                                               const IndexedSlicesViews& sparse) {
    check_same_shape(weights, grads, "optimizer");
    check_indexed_slices(weights, sparse);
    const std::int64_t rows = weights.shape[0], width = weights.shape[1];
    const float* counts = sparse.row_counts.f32();
    const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, kUpdateChunk / std::max<std::int64_t>(width, 1));
    // Deferred decays: only the batch's rows are touched (a few long stretches and scattered rare words).
    auto* decay_marks = sparse.moment_decays ? reinterpret_cast<std::uint32_t*>(sparse.moment_decays.i32()) : nullptr;
    const std::uint32_t clock = decay_marks != nullptr ? ++decay_marks[rows] : 0u;
    ThreadPool::instance().parallel_for(ceil_div(rows, rows_per_chunk), threads(), [&](std::int64_t chunk) {
        const std::int64_t first_row = chunk * rows_per_chunk, chunk_rows = std::min(rows - first_row, rows_per_chunk);
        const std::int64_t begin = first_row * width;
        if (decay_marks != nullptr) {
            kernels_.nadam_rows_deferred(step, weights.f32() + begin, grads.f32() + begin, m.f32() + begin,
                                         v.f32() + begin, counts + first_row, decay_marks + first_row, clock,
                                         chunk_rows, width);
        } else {
            kernels_.nadam_rows(step, weights.f32() + begin, grads.f32() + begin, m.f32() + begin, v.f32() + begin,
                                counts + first_row, chunk_rows, width);
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
    const bool vectorised = adam_family && !sparse.grad_squares && !sparse.row_counts && !sparse.moment_decays;
    if (!vectorised) {  // SGD, RMSprop, embedding statistics and misuse (the reference names what is wrong)
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

bool CpuFastBackend::add_inplace_all_finite(const TensorView& dst, const TensorView& src) {
    if (dst.numel() != src.numel()) check_same_shape(dst, src, "add");
    return kernels_.add_all_finite(dst.f32(), src.f32(), dst.numel());
}

bool CpuFastBackend::add_into_both_all_finite(const TensorView& a, const TensorView& b) {
    if (a.numel() != b.numel()) check_same_shape(a, b, "add");
    return kernels_.add_into_both_all_finite(a.f32(), b.f32(), a.numel());
}

bool CpuFastBackend::all_finite(const TensorView& x) {
    return kernels_.all_finite(x.f32(), x.numel());
}

double CpuFastBackend::sum_of_squares(const TensorView& x) {
    return kernels_.sum_of_squares(x.f32(), x.numel());
}

}  // namespace mirrorlab
