// Every op but Conv1D (cuda_backend_conv.cpp). Each op starts with the checks of the CPU reference,
// word for word, so both backends reject a misuse with the same message.
#include "gpu/cuda_backend.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/optim/optimizer.h"
#include "core/util/error.h"
#include "gpu/kernels.h"

namespace mirrorlab::cuda {

namespace {

int as_int(std::int64_t value, std::string_view op, std::string_view what) {
    if (value < 0 || value > INT_MAX) {
        throw OpError("[" + std::string(op) + "] " + std::string(what) + " of " + std::to_string(value) +
                      " exceeds what cuBLAS takes (2^31 - 1)");
    }
    return static_cast<int>(value);
}

bool env_is(const char* name, std::string_view value) {
    const char* text = std::getenv(name);
    return text != nullptr && std::string_view(text) == value;
}

}  // namespace

CudaBackend::CudaBackend(int device)
    : device_(device),
      name_("cuda:" + std::to_string(device)),
      stream_(device),
      cublas_(device, stream_.get()),
      cudnn_(device, stream_.get()),
      conv_path_(env_is("MIRRORLAB_CUDA_CONV", "direct") ? ConvPath::Direct : ConvPath::Cudnn),
      deterministic_(env_is("MIRRORLAB_CUDA_DETERMINISTIC", "1")),
      embedding_sort_(device),
      workspace_(device),
      filter_(device),
      filter_grad_(device),
      padded_(device),
      padded_grad_(device),
      staging_(device),
      partials_(device),
      results_(device),
      step_results_(device),
      step_events_(device),
      ready_(device),
      uploads_(device),
      step_readback_(device),
      graph_fork_(device),
      graph_join_(device),
      step_values_(device),
      cublas_workspace_(device) {}

void CudaBackend::attach_arena(MemoryArena* arena) {
    arena_ = arena;
    for (DeviceBuffer* buffer : {&workspace_, &filter_, &filter_grad_, &padded_, &padded_grad_, &staging_, &partials_,
                                 &results_, &step_results_, &step_values_, &cublas_workspace_, &embedding_sort_}) {
        buffer->attach(arena);
    }
}

void CudaBackend::use_arena_for_cublas() {
    // 4 MiB: NVIDIA's default before Hopper, ample for these GEMMs (a few hundred columns).
    constexpr std::size_t kCublasWorkspaceBytes = std::size_t{4} << 20;
    if (cublas_workspace_tried_ || arena_ == nullptr) return;
    cublas_workspace_tried_ = true;
    try {
        void* workspace = cublas_workspace_.reserve(kCublasWorkspaceBytes, "dense");
        check(cublasSetWorkspace(cublas_.get(), workspace, kCublasWorkspaceBytes), "dense", "cublasSetWorkspace",
              device_);
    } catch (const OutOfMemoryError&) {
        // No room under the device's limit: cuBLAS keeps its own workspace (kernel_choices says so).
    }
}

void CudaBackend::mark(StepMark point) {
    const DeferredOp deferred = graph_op(op_fingerprint("mark", static_cast<int>(point)), "step timing");
    use_device(device_, "step timing");
    const auto how = deferred.skip                          ? StepEvents::Record::ByGraph
                     : graph_mode_ == GraphMode::Capture ? StepEvents::Record::Captured
                                                          : StepEvents::Record::Queued;
    step_events_.record(static_cast<int>(point), stream(), how);
}

double CudaBackend::mark_elapsed_ms(StepMark from, StepMark to) {
    return step_events_.elapsed_ms(static_cast<int>(from), static_cast<int>(to));
}

CudaBackend::~CudaBackend() {
    // Nothing may still run on the stream when the buffers and handles go away.
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_.get());
}

void CudaBackend::wait_for_stream(std::string_view op) {
    if (collective_ != nullptr) return wait_watching_collective(op);
    stream_.synchronize(op);
    uploads_.stream_drained();
}

namespace {
// How long a step may wait for a collective (MIRRORLAB_NCCL_TIMEOUT_S, default 5 minutes: a
// step of the tutorial takes milliseconds, and the first steps' NCCL set-up well under a minute).
double collective_timeout_seconds() {
    const char* text = std::getenv("MIRRORLAB_NCCL_TIMEOUT_S");
    const double seconds = text != nullptr ? std::atof(text) : 0.0;
    return seconds > 0.0 ? seconds : 300.0;
}
}  // namespace

void CudaBackend::wait_watching_collective(std::string_view op) {
    CollectiveWatch& collective = *collective_;
    collective_ = nullptr;
    const double timeout_s = collective_timeout_seconds();
    const auto start = std::chrono::steady_clock::now();
    const auto give_up = [&](const std::string& why) {
        collective.abort(why);
        throw OpError("[all-reduce] " + why + ": its communicators were aborted so that no GPU waits for ever. The "
                      "step's update may have used incomplete gradients, so this run cannot go on: start it again (the "
                      "epochs already finished are kept). MIRRORLAB_NCCL_TIMEOUT_S sets how long a step may wait "
                      "(now " + std::to_string(static_cast<long>(timeout_s)) + " s)");
    };
    // Poll instead of cudaStreamSynchronize, which would never return if a peer never comes.
    for (int polls = 0;; ++polls) {
        const cudaError_t state = cudaStreamQuery(stream());
        if (state == cudaSuccess) break;
        if (state != cudaErrorNotReady) check(state, op, "cudaStreamQuery", device_);
        if (const std::string why = collective.failure(); !why.empty()) give_up(why);
        const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited_s > timeout_s) {
            give_up(collective.name() + " made no progress for " + std::to_string(static_cast<long>(timeout_s)) +
                    " s on GPU:" + std::to_string(device_) + " (a GPU or another replica stalled)");
        }
        if (polls < 1000) {
            std::this_thread::yield();  // a healthy step completes within microseconds of the first polls
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
    uploads_.stream_drained();
    // Another replica may have given up on it while this stream's part completed: the sum is partial.
    if (const std::string why = collective.failure(); !why.empty()) give_up(why);
}

void CudaBackend::synchronize() {
    graph_cannot_defer("synchronize");
    use_device(device_, "synchronize");
    wait_for_stream("synchronize");
}

void CudaBackend::upload(const TensorView& dst, const void* host) {
    if (dst.bytes() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("upload", dst), "upload");
    // A replay skips the op an upload is made inside, leaving its pinned slot unfilled: not deferrable.
    if (graph_op_depth_ > 1) graph_cannot_defer("an upload inside another op");
    const auto bytes = static_cast<std::size_t>(dst.bytes());
    if (graph_mode_ == GraphMode::Capture || graph_mode_ == GraphMode::Replay) {
        // From the graph's own pinned slot, which each replay refills before the launch.
        void* pinned = graph_pinned(bytes);
        std::memcpy(pinned, host, bytes);
        if (deferred.skip) return;
        use_device(device_, "upload");
        check(cudaMemcpyAsync(dst.data, pinned, bytes, cudaMemcpyHostToDevice, stream()), "upload", "cudaMemcpyAsync",
              device_);
        return;
    }
    use_device(device_, "upload");
    if (graph_mode_ == GraphMode::Record) graph_record_->pinned_bytes += pinned_slot_bytes(bytes);
    // A batch goes through pinned memory, queued without a wait; the caller may reuse `host` at once.
    if (uploads_.upload(dst.data, host, bytes, stream(), "upload")) return;
    graph_cannot_defer("upload");
    check(cudaMemcpyAsync(dst.data, host, bytes, cudaMemcpyHostToDevice, stream()), "upload", "cudaMemcpyAsync",
          device_);
    wait_for_stream("upload");  // pageable: the driver's staging may still read `host`
}

void CudaBackend::download(void* host, const TensorView& src) {
    if (src.bytes() == 0) return;
    graph_cannot_defer("download");
    use_device(device_, "download");
    // Into pageable memory: complete when the call returns, so it is the wait; the stream has
    // run everything queued before it.
    check(cudaMemcpyAsync(host, src.data, static_cast<std::size_t>(src.bytes()), cudaMemcpyDeviceToHost, stream()),
          "download", "cudaMemcpyAsync", device_);
    uploads_.stream_drained();
}

void CudaBackend::copy(const TensorView& dst, const TensorView& src) {
    if (dst.numel() != src.numel() || dst.dtype != src.dtype) {
        throw OpError("[copy] destination " + dst.shape.to_string() + " does not match source " +
                      src.shape.to_string());
    }
    if (dst.data == src.data || src.bytes() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("copy", dst, src), "copy");
    if (deferred.skip) return;
    use_device(device_, "copy");
    // cudaMemcpyDefault follows unified addressing: the source may be on another logical device
    // of this GPU, on another GPU (peer copy) or in host memory.
    check(cudaMemcpyAsync(dst.data, src.data, static_cast<std::size_t>(src.bytes()), cudaMemcpyDefault, stream()),
          "copy", "cudaMemcpyAsync", device_);
}

void CudaBackend::fill(const TensorView& dst, float value) {
    if (dst.numel() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("fill", dst, value), "fill");
    if (deferred.skip) return;
    use_device(device_, "fill");
    if (dst.dtype == DType::I32) {
        fill_i32(stream(), dst.i32(), dst.numel(), static_cast<std::int32_t>(value));
    } else if (std::bit_cast<std::uint32_t>(value) == 0) {
        check(cudaMemsetAsync(dst.data, 0, static_cast<std::size_t>(dst.bytes()), stream()), "fill", "cudaMemsetAsync",
              device_);
    } else {
        fill_f32(stream(), dst.f32(), dst.numel(), value);
    }
    check_launch("fill", device_);
}

void CudaBackend::embedding_forward(const TensorView& ids, const TensorView& table, const TensorView& out) {
    check_rank(ids, 2, "embedding", "ids");
    check_rank(table, 2, "embedding", "table");
    const std::int64_t vocabulary = table.shape[0], width = table.shape[1];
    const std::int64_t count = ids.numel();
    if (out.numel() != count * width) {
        throw OpError("[embedding] output " + out.shape.to_string() + " does not hold " + ids.shape.to_string() +
                      " ids of width " + std::to_string(width));
    }
    if (out.numel() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("embedding_forward", ids, table, out), "embedding");
    if (deferred.skip) return;
    use_device(device_, "embedding");
    // The ids were checked on the host before upload (check_batch): no device check, no read-back.
    cuda::embedding_forward(stream(), ids.i32(), count, table.f32(), vocabulary, width, out.f32());
    check_launch("embedding", device_);
}

void CudaBackend::embedding_backward(const TensorView& ids, const TensorView& grad_out, const TensorView& grad_table) {
    const std::int64_t vocabulary = grad_table.shape[0], width = grad_table.shape[1];
    const DeferredOp deferred = graph_op(op_fingerprint("embedding_backward", ids, grad_out, grad_table), "embedding");
    if (deferred.skip) return;
    use_device(device_, "embedding");
    if (deterministic_ && ids.numel() > 0 && width > 0) {
        // The segment sums write every row, the zero ones included: no memset first.
        embedding_gradient_ran_ = true;
        const std::int32_t* sorted = sort_embedding_positions(ids, vocabulary);
        cuda::embedding_segment_sums(stream(), sorted, vocabulary, width, grad_out.f32(), grad_table.f32(), nullptr,
                                     nullptr);
        check_launch("embedding", device_);
        return;
    }
    if (grad_table.bytes() > 0) {
        check(cudaMemsetAsync(grad_table.data, 0, static_cast<std::size_t>(grad_table.bytes()), stream()), "embedding",
              "cudaMemsetAsync", device_);
    }
    if (ids.numel() == 0 || width == 0) return;
    embedding_gradient_ran_ = true;
    cuda::embedding_backward(stream(), ids.i32(), ids.numel(), grad_out.f32(), vocabulary, width, grad_table.f32());
    check_launch("embedding", device_);
}

std::int32_t* CudaBackend::sort_embedding_positions(const TensorView& ids, std::int64_t vocabulary) {
    const std::int64_t ints = embedding_sort_scratch(ids.numel(), vocabulary);
    auto* scratch = static_cast<std::int32_t*>(
        embedding_sort_.reserve(static_cast<std::size_t>(ints) * sizeof(std::int32_t), "embedding"));
    cuda::embedding_sort_positions(stream(), ids.i32(), ids.numel(), vocabulary, scratch);
    return scratch;
}

void CudaBackend::embedding_gradient_stats(const TensorView& ids, const TensorView& grad_out,
                                           const TensorView& grad_squares, const TensorView& row_counts) {
    const DeferredOp deferred =
        graph_op(op_fingerprint("embedding_gradient_stats", ids, grad_out, grad_squares, row_counts), "embedding");
    if (deferred.skip) return;
    use_device(device_, "embedding");
    const std::int64_t width = ids.numel() > 0 ? grad_out.numel() / ids.numel() : 0;
    const bool wanted = width > 0 && (grad_squares || row_counts);
    const std::int64_t vocabulary = !wanted ? 0 : grad_squares ? grad_squares.shape[0] : row_counts.shape[0];
    if (deterministic_ && wanted) {
        // Sorted again (a few small launches in this reproducibility mode) rather than remembered
        // from embedding_backward, whose ids might have changed since. Every row is written.
        const std::int32_t* sorted = sort_embedding_positions(ids, vocabulary);
        cuda::embedding_segment_sums(stream(), sorted, vocabulary, width, grad_out.f32(), nullptr,
                                     grad_squares ? grad_squares.f32() : nullptr,
                                     row_counts ? row_counts.f32() : nullptr);
        check_launch("embedding", device_);
        return;
    }
    for (const TensorView* zeroed : {&grad_squares, &row_counts}) {
        if (zeroed->bytes() > 0) {
            check(cudaMemsetAsync(zeroed->data, 0, static_cast<std::size_t>(zeroed->bytes()), stream()), "embedding",
                  "cudaMemsetAsync", device_);
        }
    }
    if (!wanted) return;
    cuda::embedding_gradient_stats(stream(), ids.i32(), ids.numel(), grad_out.f32(), vocabulary, width,
                                   grad_squares ? grad_squares.f32() : nullptr, row_counts ? row_counts.f32() : nullptr);
    check_launch("embedding", device_);
}

void CudaBackend::maxpool1d_forward(const TensorView& x, const TensorView& y, const TensorView& argmax,
                                    const Pool1DParams& params) {
    check_rank(x, 3, "max_pooling1d", "input");
    const std::int64_t batch = x.shape[0], length = x.shape[1], channels = x.shape[2];
    const std::int64_t out_length = y.shape[1];
    if (batch * out_length * channels == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("maxpool1d_forward", x, y, argmax, params.pool_size,
                                                        params.stride, params.pad_left),
                                         "max_pooling1d");
    if (deferred.skip) return;
    use_device(device_, "max_pooling1d");
    cuda::maxpool1d_forward(stream(), x.f32(), batch, length, channels, y.f32(), argmax.i32(), out_length,
                            params.pool_size, params.stride, params.pad_left);
    check_launch("max_pooling1d", device_);
}

void CudaBackend::maxpool1d_backward(const TensorView& grad_y, const TensorView& argmax, const TensorView& grad_x) {
    const std::int64_t batch = grad_x.shape[0], length = grad_x.shape[1], channels = grad_x.shape[2];
    const std::int64_t out_length = grad_y.shape[1];
    if (grad_x.bytes() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("maxpool1d_backward", grad_y, argmax, grad_x), "max_pooling1d");
    if (deferred.skip) return;
    use_device(device_, "max_pooling1d");
    check(cudaMemsetAsync(grad_x.data, 0, static_cast<std::size_t>(grad_x.bytes()), stream()), "max_pooling1d",
          "cudaMemsetAsync", device_);
    if (batch * out_length * channels == 0) return;
    cuda::maxpool1d_backward(stream(), grad_y.f32(), argmax.i32(), batch, out_length, channels, length, grad_x.f32());
    check_launch("max_pooling1d", device_);
}

void CudaBackend::bias_gradient(const TensorView& grad_y, std::int64_t rows, std::int64_t cols,
                                const TensorView& grad_bias) {
    auto* partials = static_cast<float*>(
        partials_.reserve(static_cast<std::size_t>(column_sums_partials(rows, cols)) * sizeof(float), "bias gradient"));
    column_sums(stream(), grad_y.f32(), rows, cols, partials, grad_bias.f32());
    check_launch("bias gradient", device_);
}

void CudaBackend::dense_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                const TensorView& y) {
    check_dense_shapes(x, kernel);
    const std::int64_t batch = x.shape[0], inputs = x.shape[1], units = kernel.shape[1];
    if (batch * units == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("dense_forward", x, kernel, bias, y), "dense");
    if (deferred.skip) return;
    use_device(device_, "dense");
    use_arena_for_cublas();
    const float one = 1.0f, zero = 0.0f;
    if (inputs == 0) {
        fill_f32(stream(), y.f32(), batch * units, 0.0f);
    } else {
        // Row-major y [B, Out] = x [B, In] W [In, Out] is column-major y^T = W^T x^T: no transposes.
        check(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, as_int(units, "dense", "units"),
                          as_int(batch, "dense", "batch"), as_int(inputs, "dense", "inputs"), &one, kernel.f32(),
                          as_int(units, "dense", "units"), x.f32(), as_int(inputs, "dense", "inputs"), &zero, y.f32(),
                          as_int(units, "dense", "units")),
              "dense", "cublasSgemm", device_);
    }
    if (bias) cuda::add_bias(stream(), y.f32(), batch, units, bias.f32());
    check_launch("dense", device_);
}

void CudaBackend::dense_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                                 const TensorView& grad_x, const TensorView& grad_kernel,
                                 const TensorView& grad_bias) {
    const std::int64_t batch = x.shape[0], inputs = x.shape[1], units = kernel.shape[1];
    const DeferredOp deferred =
        graph_op(op_fingerprint("dense_backward", x, kernel, grad_y, grad_x, grad_kernel, grad_bias), "dense");
    if (deferred.skip) return;
    use_device(device_, "dense");
    use_arena_for_cublas();
    if (batch == 0 || inputs == 0 || units == 0) {
        if (grad_kernel.bytes() > 0) fill(grad_kernel, 0.0f);
        if (grad_bias) fill(grad_bias, 0.0f);
        if (grad_x) fill(grad_x, 0.0f);
        return;
    }
    const int b = as_int(batch, "dense", "batch"), in = as_int(inputs, "dense", "inputs");
    const int out = as_int(units, "dense", "units");
    const float one = 1.0f, zero = 0.0f;
    // grad_kernel [In, Out] = x^T grad_y: column-major grad_kernel^T = grad_y^T x.
    check(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, out, in, b, &one, grad_y.f32(), out, x.f32(), in, &zero,
                      grad_kernel.f32(), out),
          "dense", "cublasSgemm (kernel gradient)", device_);
    if (grad_x) {
        // grad_x [B, In] = grad_y W^T: column-major grad_x^T = W grad_y^T.
        check(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, in, b, out, &one, kernel.f32(), out, grad_y.f32(),
                          out, &zero, grad_x.f32(), in),
              "dense", "cublasSgemm (input gradient)", device_);
    }
    if (grad_bias) bias_gradient(grad_y, batch, units, grad_bias);
}

void CudaBackend::activation_forward(ActivationKind kind, const TensorView& x, const TensorView& y) {
    const std::int64_t count = x.numel();
    const DeferredOp deferred = graph_op(op_fingerprint("activation_forward", kind, x, y), "activation");
    if (deferred.skip) return;
    switch (kind) {
        case ActivationKind::Linear:
            if (x.data != y.data && count > 0) {
                use_device(device_, "activation");
                check(cudaMemcpyAsync(y.data, x.data, static_cast<std::size_t>(count) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream()),
                      "activation", "cudaMemcpyAsync", device_);
            }
            return;
        case ActivationKind::ReLU:
        case ActivationKind::Tanh:
        case ActivationKind::Sigmoid:
            if (count == 0) return;
            use_device(device_, "activation");
            cuda::activation_forward(stream(), kind, x.f32(), y.f32(), count);
            check_launch("activation", device_);
            return;
        case ActivationKind::Softmax:
        case ActivationKind::Invalid: break;
    }
    throw OpError("[activation] " + std::string(activation_name(kind)) +
                  " is not an elementwise activation (softmax is fused into the loss)");
}

void CudaBackend::activation_backward(ActivationKind kind, const TensorView& y, const TensorView& grad_y,
                                      const TensorView& grad_x) {
    const std::int64_t count = y.numel();
    const DeferredOp deferred = graph_op(op_fingerprint("activation_backward", kind, y, grad_y, grad_x), "activation");
    if (deferred.skip) return;
    switch (kind) {
        case ActivationKind::Linear:
            if (grad_x.data != grad_y.data && count > 0) {
                use_device(device_, "activation");
                check(cudaMemcpyAsync(grad_x.data, grad_y.data, static_cast<std::size_t>(count) * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream()),
                      "activation", "cudaMemcpyAsync", device_);
            }
            return;
        case ActivationKind::ReLU:
        case ActivationKind::Tanh:
        case ActivationKind::Sigmoid:
            if (count == 0) return;
            use_device(device_, "activation");
            cuda::activation_backward(stream(), kind, y.f32(), grad_y.f32(), grad_x.f32(), count);
            check_launch("activation", device_);
            return;
        case ActivationKind::Softmax:
        case ActivationKind::Invalid: break;
    }
    throw OpError("[activation] no elementwise gradient for " + std::string(activation_name(kind)));
}

void CudaBackend::dropout_forward(const TensorView& x, const TensorView& y, const TensorView& mask, float rate,
                                  std::uint64_t seed) {
    const float keep_scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
    if (x.numel() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("dropout_forward", x, y, mask, rate), "dropout");
    // The seed changes every step: the kernel reads it from device memory, which a replay refills.
    const auto* seed_on_device = static_cast<const std::uint64_t*>(step_value(1, &seed, sizeof seed, "dropout"));
    if (deferred.skip) return;
    use_device(device_, "dropout");
    cuda::dropout_forward(stream(), x.f32(), y.f32(), mask.f32(), x.numel(), rate, keep_scale, seed_on_device);
    check_launch("dropout", device_);
}

void CudaBackend::dropout_backward(const TensorView& grad_y, const TensorView& mask, const TensorView& grad_x) {
    if (grad_y.numel() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("dropout_backward", grad_y, mask, grad_x), "dropout");
    if (deferred.skip) return;
    use_device(device_, "dropout");
    cuda::dropout_backward(stream(), grad_y.f32(), mask.f32(), grad_x.f32(), grad_y.numel());
    check_launch("dropout", device_);
}

LossCounts CudaBackend::softmax_cross_entropy(const TensorView& logits, const TensorView& labels,
                                              const TensorView& probs, const TensorView& grad_logits, float grad_scale,
                                              std::int32_t top_k) {
    check_rank(logits, 2, "sparse_categorical_crossentropy", "logits");
    const std::int64_t batch = logits.shape[0], classes = logits.shape[1];
    LossCounts counts;
    counts.samples = batch;
    if (batch == 0) return counts;
    graph_cannot_defer("sparse_categorical_crossentropy");
    use_device(device_, "sparse_categorical_crossentropy");
    auto* rows = results<RowLoss>(static_cast<std::size_t>(batch), "sparse_categorical_crossentropy");
    cuda::softmax_cross_entropy(stream(), logits.f32(), labels.i32(), batch, classes, probs.f32(),
                                grad_logits ? grad_logits.f32() : nullptr, grad_scale, top_k, rows, nullptr);
    check_launch("sparse_categorical_crossentropy", device_);
    std::vector<RowLoss>& host = host_row_losses_;  // grows to the largest batch once, then reused
    host.resize(static_cast<std::size_t>(batch));
    // Into pageable memory (a std::vector): the copy returns once complete, so it is the wait for
    // the forward pass; no stream synchronisation on top. (A training step uses step_loss.)
    check(cudaMemcpyAsync(host.data(), rows, host.size() * sizeof(RowLoss), cudaMemcpyDeviceToHost, stream()),
          "sparse_categorical_crossentropy", "cudaMemcpyAsync", device_);
    uploads_.stream_drained();
    // The host adds the samples up in order, exactly as the reference's loop does.
    for (std::int64_t b = 0; b < batch; ++b) {
        const RowLoss& row = host[static_cast<std::size_t>(b)];
        if (row.bad_label != 0) {
            std::int32_t label = 0;
            download(&label, labels.slice(b, Shape{1}));
            throw OpError("[sparse_categorical_crossentropy] label " + std::to_string(label) + " of sample " +
                          std::to_string(b) + " is outside [0, " + std::to_string(classes) +
                          "): the model's last layer has " + std::to_string(classes) + " units; it needs one per class");
        }
        counts.loss_sum += row.loss;
        counts.correct += row.correct;
        counts.top_k_correct += row.top_k_correct;
    }
    return counts;
}

void CudaBackend::apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                               const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) {
    const DeferredOp deferred = graph_op(
        op_fingerprint("apply_update", weights, grads, slot0, slot1, sparse.grad_squares, sparse.row_counts),
        "optimizer");
    const auto* on_device = static_cast<const OptimizerStep*>(step_value(0, &step, sizeof step, "optimizer"));
    if (deferred.skip) return;
    launch_update(step, on_device, weights, grads, slot0, slot1, sparse, nullptr);
}

void CudaBackend::launch_update(const OptimizerStep& step, const OptimizerStep* on_device, const TensorView& weights,
                                const TensorView& grads, const TensorView& slot0, const TensorView& slot1,
                                const IndexedSlicesViews& sparse, const std::int32_t* non_finite) {
    check_same_shape(weights, grads, "optimizer");
    check_indexed_slices(weights, sparse);
    // The checks of reference_apply_update, in its order and words.
    if (weights.numel() == 0) return;
    check_update_buffers(step, weights.data != nullptr && grads.data != nullptr, static_cast<bool>(slot0),
                         static_cast<bool>(slot1));
    use_device(device_, "optimizer");
    IndexedSlicesStats stats;  // device pointers
    if (sparse.grad_squares) stats.grad_squares = sparse.grad_squares.f32();
    if (sparse.row_counts) {
        stats.row_counts = sparse.row_counts.f32();
        stats.row_width = weights.shape[1];
    }
    cuda::apply_update(stream(), on_device, weights.f32(), grads.f32(), slot0 ? slot0.f32() : nullptr,
                       slot1 ? slot1.f32() : nullptr, weights.numel(), stats, non_finite);
    check_launch("optimizer", device_);
}

const void* CudaBackend::readable_source(const TensorView& src, std::string_view op) {
    cudaPointerAttributes attributes{};
    check(cudaPointerGetAttributes(&attributes, src.data), op, "cudaPointerGetAttributes", device_);
    if (attributes.type == cudaMemoryTypeManaged) return src.data;
    if (attributes.type == cudaMemoryTypeDevice && attributes.device == device_) return src.data;
    void* staging = staging_.reserve(static_cast<std::size_t>(src.bytes()), op);
    if (attributes.type == cudaMemoryTypeDevice) {
        // Another GPU: peer-to-peer when the provider enabled it, else through the host (driver's choice).
        check(cudaMemcpyPeerAsync(staging, device_, src.data, attributes.device, static_cast<std::size_t>(src.bytes()),
                                  stream()),
              op, "cudaMemcpyPeerAsync", device_);
    } else {
        check(cudaMemcpyAsync(staging, src.data, static_cast<std::size_t>(src.bytes()), cudaMemcpyHostToDevice, stream()),
              op, "cudaMemcpyAsync", device_);
    }
    return staging;
}

void CudaBackend::add_inplace(const TensorView& dst, const TensorView& src) {
    if (dst.numel() != src.numel()) check_same_shape(dst, src, "add");
    if (dst.numel() == 0) return;
    const DeferredOp deferred = graph_op(op_fingerprint("add_inplace", dst, src), "add");
    if (deferred.skip) return;
    use_device(device_, "add");
    const auto* source = static_cast<const float*>(readable_source(src, "add"));
    cuda::add_inplace(stream(), dst.f32(), source, dst.numel());
    check_launch("add", device_);
}

double CudaBackend::sum_of_squares(const TensorView& x) {
    if (x.numel() == 0) return 0.0;
    graph_cannot_defer("sum_of_squares");
    use_device(device_, "sum_of_squares");
    auto* thread_sums = results<double>(kSumOfSquaresThreadSums + kSumOfSquaresBlocks, "sum_of_squares");
    double* partials = thread_sums + kSumOfSquaresThreadSums;
    cuda::sum_of_squares(stream(), x.f32(), x.numel(), thread_sums, partials);
    check_launch("sum_of_squares", device_);
    std::vector<double>& host = host_partials_;
    host.resize(kSumOfSquaresBlocks);
    // Pageable memory: complete when the copy returns.
    check(cudaMemcpyAsync(host.data(), partials, host.size() * sizeof(double), cudaMemcpyDeviceToHost, stream()),
          "sum_of_squares", "cudaMemcpyAsync", device_);
    uploads_.stream_drained();
    double total = 0.0;
    for (double partial : host) total += partial;
    return total;
}

bool CudaBackend::all_finite(const TensorView& x) {
    if (x.numel() == 0) return true;
    graph_cannot_defer("all_finite");
    use_device(device_, "all_finite");
    auto* flag = results<std::int32_t>(1, "all_finite");
    check(cudaMemsetAsync(flag, 0, sizeof(std::int32_t), stream()), "all_finite", "cudaMemsetAsync", device_);
    cuda::all_finite(stream(), x.f32(), x.numel(), flag);
    check_launch("all_finite", device_);
    std::int32_t host = 0;
    // Pageable memory: complete when the copy returns.
    check(cudaMemcpyAsync(&host, flag, sizeof host, cudaMemcpyDeviceToHost, stream()), "all_finite", "cudaMemcpyAsync",
          device_);
    uploads_.stream_drained();
    return host == 0;
}

}  // namespace mirrorlab::cuda
