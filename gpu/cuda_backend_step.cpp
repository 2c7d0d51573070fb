// The training step with one host synchronisation (issue #21): the ops a replica's step calls
// between its upload and its end, none of which waits for the device, and finish_step(), which
// does, once, reading everything the host must know in one copy to pinned memory:
//   step_loss          the fused loss; its rows stay in step_results_, and the replica's loss
//                      marker (an element of the all-reduced buffer) turns NaN on a non-finite loss
//   mark_ready/wait_for  cross-replica order by events, not by the host waiting
//   step_check_finite  the verdict on the summed gradients, computed on the device
//   step_apply_update  the optimizer kernels, which read the verdict and skip the update themselves
//   finish_step        one pinned read of the verdict and the rows, one cudaStreamSynchronize
#include <cstring>
#include <string>

#include "core/util/error.h"
#include "gpu/cuda_backend.h"

namespace mirrorlab::cuda {

CudaBackend::StepHeader* CudaBackend::step_header(std::string_view op) {
    static_assert(sizeof(StepHeader) <= kStepHeaderBytes);
    const std::size_t bytes = kStepHeaderBytes + static_cast<std::size_t>(step_rows_) * sizeof(RowLoss);
    return static_cast<StepHeader*>(step_results_.reserve(bytes, op));
}

void CudaBackend::mark_ready() {
    const DeferredOp deferred = graph_op(op_fingerprint("mark_ready"), "all-reduce");
    if (deferred.skip) return;
    use_device(device_, "all-reduce");
    check(cudaEventRecord(ready_.get(), stream()), "all-reduce", "cudaEventRecord", device_);
}

void CudaBackend::wait_for(Backend& producer) {
    if (&producer == this) return;
    const DeferredOp deferred = graph_op(op_fingerprint("wait_for", static_cast<const void*>(&producer)), "all-reduce");
    if (deferred.skip) return;
    use_device(device_, "all-reduce");
    auto* gpu = dynamic_cast<CudaBackend*>(&producer);
    if (gpu == nullptr) {
        producer.synchronize();  // not a GPU of this plugin: its work is done when it says so
        return;
    }
    check(cudaStreamWaitEvent(stream(), gpu->ready_.get(), 0), "all-reduce", "cudaStreamWaitEvent", device_);
}

void CudaBackend::step_loss(const TensorView& logits, const TensorView& labels, const TensorView& probs,
                            const TensorView& grad_logits, float grad_scale, std::int32_t top_k,
                            const TensorView& loss_marker) {
    check_rank(logits, 2, "sparse_categorical_crossentropy", "logits");
    const std::int64_t batch = logits.shape[0], classes = logits.shape[1];
    const DeferredOp deferred =
        graph_op(op_fingerprint("step_loss", logits, labels, probs, grad_logits, grad_scale, top_k, loss_marker),
                 "sparse_categorical_crossentropy");
    if (deferred.skip) {
        if (batch > 0) step_rows_ = batch;
        return;
    }
    use_device(device_, "sparse_categorical_crossentropy");
    check(cudaMemsetAsync(loss_marker.data, 0, sizeof(float), stream()), "sparse_categorical_crossentropy",
          "cudaMemsetAsync", device_);
    if (batch == 0) return;
    step_rows_ = batch;
    auto* rows = reinterpret_cast<RowLoss*>(
        reinterpret_cast<unsigned char*>(step_header("sparse_categorical_crossentropy")) + kStepHeaderBytes);
    cuda::softmax_cross_entropy(stream(), logits.f32(), labels.i32(), batch, classes, probs.f32(),
                                grad_logits ? grad_logits.f32() : nullptr, grad_scale, top_k, rows, loss_marker.f32());
    check_launch("sparse_categorical_crossentropy", device_);
}

// The verdict lives on the device, next to the summed buffer; a host-made one would need the host
// to wait for the sum, which the one-wait step (issue #21) exists to avoid. Only an all-reduce
// through host memory makes one, and it never runs on GPUs.
void CudaBackend::step_set_finite(bool) {
    throw OpError("[optimizer] " + name_ +
                  " decides on the summed gradients on the device (step_check_finite), not from the host");
}

void CudaBackend::step_check_finite(const TensorView& summed) {
    const DeferredOp deferred = graph_op(op_fingerprint("step_check_finite", summed), "all_finite");
    step_checked_ = true;
    if (deferred.skip) return;
    use_device(device_, "all_finite");
    auto* header = step_header("all_finite");
    check(cudaMemsetAsync(header, 0, sizeof(StepHeader), stream()), "all_finite", "cudaMemsetAsync", device_);
    if (summed.numel() > 0) {
        cuda::all_finite(stream(), summed.f32(), summed.numel(), &header->non_finite);
        check_launch("all_finite", device_);
    }
}

void CudaBackend::step_apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                                    const TensorView& slot0, const TensorView& slot1,
                                    const IndexedSlicesViews& sparse) {
    if (!step_checked_) {
        throw OpError("[optimizer] step_apply_update before step_check_finite: the update has no verdict to follow");
    }
    const DeferredOp deferred = graph_op(
        op_fingerprint("step_apply_update", weights, grads, slot0, slot1, sparse.grad_squares, sparse.row_counts),
        "optimizer");
    // One copy of the step's scalars per step: every variable's update reads the same.
    if (!optimizer_step_queued_) step_value(0, &step, sizeof step, "optimizer");
    optimizer_step_queued_ = true;
    if (deferred.skip) return;
    launch_update(step, static_cast<const OptimizerStep*>(step_values_.get()), weights, grads, slot0, slot1, sparse,
                  &step_header("optimizer")->non_finite);
}

StepReadback CudaBackend::finish_step() {
    use_device(device_, "step");
    const std::int64_t rows = step_rows_;
    const bool checked = step_checked_;
    step_rows_ = 0;
    step_checked_ = false;
    optimizer_step_queued_ = false;
    if (graph_mode_ == GraphMode::Capture || graph_mode_ == GraphMode::Replay) {
        return finish_deferred_step(rows, checked);
    }
    const GraphMode mode = graph_mode_;
    graph_mode_ = GraphMode::Off;
    if (rows == 0 && !checked) {
        wait_for_stream("step");
        return StepReadback{};
    }
    // Everything the host must know of the step, in one copy to pinned memory and one wait.
    const std::size_t bytes = kStepHeaderBytes + static_cast<std::size_t>(rows) * sizeof(RowLoss);
    if (mode == GraphMode::Record) graph_record_->pinned_bytes += pinned_slot_bytes(bytes);
    const void* device = step_results_.get();
    void* host = step_readback_.reserve(bytes, "step");
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream()), "step", "cudaMemcpyAsync", device_);
    wait_for_stream("step");
    return read_step_results(host, rows, checked);
}

StepReadback CudaBackend::read_step_results(const void* host, std::int64_t rows, bool checked) {
    StepReadback results;
    StepHeader header;
    std::memcpy(&header, host, sizeof header);
    results.update_applied = checked && header.non_finite == 0;
    results.counts.samples = rows;
    const auto* row_bytes = static_cast<const unsigned char*>(host) + kStepHeaderBytes;
    // The host adds the samples up in order, exactly as the reference's loop does.
    for (std::int64_t b = 0; b < rows; ++b) {
        RowLoss row;
        std::memcpy(&row, row_bytes + static_cast<std::size_t>(b) * sizeof(RowLoss), sizeof row);
        if (row.bad_label != 0) {
            // check_batch let it through: a caller that skipped it. The update did not run (the
            // loss marker was NaN), so nothing is lost.
            throw OpError("[sparse_categorical_crossentropy] label of sample " + std::to_string(b) +
                          " is outside the model's classes (the batch was not checked before upload)");
        }
        results.counts.loss_sum += row.loss;
        results.counts.correct += row.correct;
        results.counts.top_k_correct += row.top_k_correct;
    }
    return results;
}

}  // namespace mirrorlab::cuda
