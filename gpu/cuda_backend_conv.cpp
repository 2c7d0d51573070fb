// Conv1D on the GPU: cuDNN's 2-D convolution with height 1 on channels-last data, one plan
// (descriptors and algorithms) per shape, chosen the first time the shape is seen. Keras keeps
// kernels as [K, Cin, Cout] and cuDNN wants [Cout, 1, K, Cin], so the kernel is transposed into
// scratch for each call (a few thousand floats). TensorFlow's 'same' padding is asymmetric for
// even kernels; cuDNN pads symmetrically, so such inputs are padded explicitly. A pass cuDNN has
// no algorithm for runs the direct kernels, which follow the reference loop for loop.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "core/backend/arena.h"
#include "core/util/error.h"
#include "gpu/cuda_backend.h"
#include "gpu/kernels.h"

namespace mirrorlab::cuda {

namespace {

// A bound on cuDNN's workspace (it comes from the device's arena, under its memory limit): an
// algorithm that needs more is passed over for a leaner one.
constexpr std::size_t kMaxWorkspaceBytes = std::size_t{64} << 20;

bool not_supported(cudnnStatus_t status) { return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED; }

std::string runtime_fallback_note(bool no_workspace) {
    return no_workspace ? "the device's arena had no room left for the algorithm's workspace"
                        : "cuDNN refused the chosen algorithm when it ran";
}

// The first usable algorithm in cuDNN's heuristic order, preferring deterministic ones (so that a
// run repeats) and never tensor-core math (which would round inputs to TF32). The heuristic rates
// algorithms under DEFAULT math too, which on Ampere and later would allow TF32; the descriptor
// stays at FMA math, so each candidate's workspace is asked again for the descriptor as set
// (`workspace_for(algo, bytes)`), and one cuDNN will not run that way is passed over. The larger of
// that and the heuristic's figure is reserved (never too little). Returns the index, -1 for none,
// and the workspace it needs in `workspace_bytes`.
template <typename Perf, typename WorkspaceFor>
int choose_algorithm(const Perf* perf, int count, std::size_t max_workspace_bytes, WorkspaceFor workspace_for,
                     std::size_t& workspace_bytes) {
    int fallback = -1;
    std::size_t fallback_bytes = 0;
    for (int i = 0; i < count; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        if (perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
        std::size_t needed = 0;
        if (workspace_for(perf[i].algo, needed) != CUDNN_STATUS_SUCCESS) continue;
        needed = std::max(needed, perf[i].memory);
        if (needed > max_workspace_bytes) continue;
        if (perf[i].determinism == CUDNN_DETERMINISTIC) {
            workspace_bytes = needed;
            return i;
        }
        if (fallback < 0) {
            fallback = i;
            fallback_bytes = needed;
        }
    }
    workspace_bytes = fallback_bytes;
    return fallback;
}

// cuDNN's legacy algorithm enumerators by number (the emulator's header names only some).
std::string forward_algorithm_name(int algorithm) {
    static constexpr const char* kNames[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                             "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return algorithm >= 0 && algorithm < 8 ? kNames[algorithm] : "algorithm " + std::to_string(algorithm);
}

std::string data_algorithm_name(int algorithm) {
    static constexpr const char* kNames[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return algorithm >= 0 && algorithm < 6 ? kNames[algorithm] : "algorithm " + std::to_string(algorithm);
}

std::string filter_algorithm_name(int algorithm) {
    static constexpr const char* kNames[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                             "FFT_TILING"};
    return algorithm >= 0 && algorithm < 7 ? kNames[algorithm] : "algorithm " + std::to_string(algorithm);
}

// "cuDNN IMPLICIT_PRECOMP_GEMM (workspace 1.5 MiB)", or "direct kernel: <why>".
std::string pass_choice(bool cudnn, const std::string& algorithm, std::size_t workspace, const std::string& note) {
    if (!cudnn) return "direct kernel: " + note;
    return "cuDNN " + algorithm + " (workspace " + format_bytes(static_cast<std::int64_t>(workspace)) + ")";
}

}  // namespace

std::vector<std::string> CudaBackend::kernel_choices() const {
    std::vector<std::string> lines;
    for (const auto& [shape, plan] : conv_plans_) {
        lines.push_back(
            "conv1d " + std::to_string(shape.batch) + "x" + std::to_string(shape.length) + "x" +
            std::to_string(shape.in_channels) + " * window " + std::to_string(shape.window) + " -> " +
            std::to_string(shape.out_channels) + " channels: forward " +
            pass_choice(plan->forward_cudnn, forward_algorithm_name(plan->forward_algorithm), plan->forward_workspace,
                        plan->forward_note) +
            "; backward data " +
            pass_choice(plan->data_cudnn, data_algorithm_name(plan->data_algorithm), plan->data_workspace,
                        plan->data_note) +
            "; backward filter " +
            pass_choice(plan->filter_cudnn, filter_algorithm_name(plan->filter_algorithm), plan->filter_workspace,
                        plan->filter_note));
    }
    if (embedding_gradient_ran_) {
        lines.push_back(deterministic_ ? "embedding gradient: sorted segment sums, the same bits on every run "
                                         "(MIRRORLAB_CUDA_DETERMINISTIC=1)"
                                       : "embedding gradient: atomic adds, whose order (and last bits) vary from run "
                                         "to run (MIRRORLAB_CUDA_DETERMINISTIC=1 sums in position order)");
    }
    if (cublas_workspace_tried_) {
        lines.push_back(cublas_workspace_.get() != nullptr
                            ? "cuBLAS workspace: " + format_bytes(static_cast<std::int64_t>(cublas_workspace_.size())) +
                                  " from the device's arena"
                            : "cuBLAS workspace: cuBLAS' own, outside the device's arena (its limit left no room)");
    }
    add_step_graph_choices(lines);
    return lines;
}

std::size_t CudaBackend::workspace_budget_bytes() const {
    std::size_t budget = kMaxWorkspaceBytes;
    if (arena_ != nullptr && arena_->limit_bytes() > 0) {
        // What the arena has left, plus the workspace it already holds (a larger one replaces it).
        const MemoryStats stats = arena_->stats();
        const std::int64_t left = arena_->limit_bytes() - stats.bytes_in_use + static_cast<std::int64_t>(workspace_.size());
        budget = std::min(budget, static_cast<std::size_t>(std::max<std::int64_t>(left, 0)));
    }
    return budget;
}

bool CudaBackend::try_workspace(std::size_t bytes, void*& workspace) {
    workspace = nullptr;
    if (bytes == 0) return true;
    try {
        workspace = workspace_.reserve(bytes, "conv1d");
        return true;
    } catch (const OutOfMemoryError&) {
        // The budget was judged when the plan was made; scratch reserved since (kernel transposes,
        // padded inputs) may have used the room. A leaner path beats failing the step.
        return false;
    }
}

CudaBackend::ConvShape CudaBackend::conv_shape(const TensorView& x, const TensorView& kernel, std::int64_t out_length,
                                               const Conv1DParams& params) const {
    check_conv1d_shapes(x, kernel, TensorView{});
    ConvShape shape;
    shape.batch = x.shape[0];
    shape.length = x.shape[1];
    shape.in_channels = x.shape[2];
    shape.window = kernel.shape[0];
    shape.out_channels = kernel.shape[2];
    shape.out_length = out_length;
    shape.pad_left = params.pad_left;
    return shape;
}

// cuDNN's algorithm for each pass of a plan whose descriptors are set (see choose_algorithm).
void CudaBackend::choose_algorithms(ConvPlan& plan) {
    use_device(device_, "conv1d");
    const std::size_t budget = workspace_budget_bytes();
    int returned = 0;
    cudnnConvolutionFwdAlgoPerf_t forward[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_.get(), plan.x.get(), plan.w.get(),
                                                 plan.conv.get(), plan.y.get(),
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, forward),
          "conv1d", "cudnnGetConvolutionForwardAlgorithm_v7", device_);
    const auto forward_workspace = [&](cudnnConvolutionFwdAlgo_t algo, std::size_t& bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(cudnn_.get(), plan.x.get(), plan.w.get(),
                                                       plan.conv.get(), plan.y.get(), algo, &bytes);
    };
    if (const int i = choose_algorithm(forward, returned, budget, forward_workspace, plan.forward_workspace);
        i >= 0) {
        plan.forward_cudnn = true;
        plan.forward_algorithm = forward[i].algo;
        plan.forward_note.clear();
    }
    cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_.get(), plan.w.get(), plan.y.get(),
                                                      plan.conv.get(), plan.x.get(),
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, data),
          "conv1d", "cudnnGetConvolutionBackwardDataAlgorithm_v7", device_);
    const auto data_workspace = [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t& bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_.get(), plan.w.get(), plan.y.get(),
                                                            plan.conv.get(), plan.x.get(), algo, &bytes);
    };
    if (const int i = choose_algorithm(data, returned, budget, data_workspace, plan.data_workspace); i >= 0) {
        plan.data_cudnn = true;
        plan.data_algorithm = data[i].algo;
        plan.data_note.clear();
    }
    cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_.get(), plan.x.get(), plan.y.get(),
                                                        plan.conv.get(), plan.w.get(),
                                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                                                        filter),
          "conv1d", "cudnnGetConvolutionBackwardFilterAlgorithm_v7", device_);
    const auto filter_workspace = [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t& bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_.get(), plan.x.get(), plan.y.get(),
                                                              plan.conv.get(), plan.w.get(), algo, &bytes);
    };
    if (const int i = choose_algorithm(filter, returned, budget, filter_workspace, plan.filter_workspace);
        i >= 0) {
        plan.filter_cudnn = true;
        plan.filter_algorithm = filter[i].algo;
        plan.filter_note.clear();
    }
}

CudaBackend::ConvPlan& CudaBackend::conv_plan(const ConvShape& shape) {
    if (auto it = conv_plans_.find(shape); it != conv_plans_.end()) return *it->second;
    auto plan = std::make_unique<ConvPlan>();
    // Stride 1: the right padding that makes the output exactly out_length long.
    const std::int64_t pad_right = shape.out_length - 1 + shape.window - shape.length - shape.pad_left;
    const std::int64_t padded_length = shape.length + shape.pad_left + std::max<std::int64_t>(pad_right, 0);
    const bool fits_int = std::max({shape.batch, padded_length, shape.in_channels, shape.out_channels, shape.window,
                                    shape.out_length}) < INT_MAX;
    const bool cudnn_shape = conv_path_ == ConvPath::Cudnn && pad_right >= 0 && shape.batch > 0 &&
                             shape.out_length > 0 && shape.in_channels > 0 && fits_int;
    const std::string why_not = conv_path_ == ConvPath::Direct ? "asked for (MIRRORLAB_CUDA_CONV=direct)"
                                : cudnn_shape                  ? "cuDNN's heuristics offered no FMA-math algorithm "
                                                                 "whose workspace fits"
                                                               : "a shape cuDNN is not given (empty, or over 2^31)";
    plan->forward_note = plan->data_note = plan->filter_note = why_not;
    if (cudnn_shape) {
        try {
            plan->explicit_padding = pad_right != shape.pad_left;
            plan->padded_length = plan->explicit_padding ? padded_length : shape.length;
            plan->x.set_nhwc(static_cast<int>(shape.batch), 1, static_cast<int>(plan->padded_length),
                             static_cast<int>(shape.in_channels));
            plan->w.set_nhwc(static_cast<int>(shape.out_channels), 1, static_cast<int>(shape.window),
                             static_cast<int>(shape.in_channels));
            plan->conv.set_1d(plan->explicit_padding ? 0 : shape.pad_left);
            plan->y.set_nhwc(static_cast<int>(shape.batch), 1, static_cast<int>(shape.out_length),
                             static_cast<int>(shape.out_channels));
            int n = 0, c = 0, h = 0, w = 0;
            check(cudnnGetConvolution2dForwardOutputDim(plan->conv.get(), plan->x.get(), plan->w.get(), &n, &c, &h, &w),
                  "conv1d", "cudnnGetConvolution2dForwardOutputDim", device_);
            if (n != shape.batch || c != shape.out_channels || h != 1 || w != shape.out_length) {
                plan->forward_note = plan->data_note = plan->filter_note = "cuDNN computes another output shape for it";
            } else {
                choose_algorithms(*plan);
            }
        } catch (const OpError& error) {
            // cuDNN refused the shape: this shape runs the direct kernels.
            plan->forward_cudnn = plan->data_cudnn = plan->filter_cudnn = false;
            plan->forward_note = plan->data_note = plan->filter_note = std::string("cuDNN refused it: ") + error.what();
        }
    }
    return *conv_plans_.emplace(shape, std::move(plan)).first->second;
}

void CudaBackend::conv1d_forward(const TensorView& x, const TensorView& kernel, const TensorView& bias,
                                 const TensorView& y, const Conv1DParams& params) {
    check_rank(y, 3, "conv1d", "output");
    const ConvShape shape = conv_shape(x, kernel, y.shape[1], params);
    if (y.shape[0] != shape.batch || y.shape[2] != shape.out_channels) {
        throw OpError("[conv1d] output " + y.shape.to_string() + " does not match input " + x.shape.to_string() +
                      " and kernel " + kernel.shape.to_string());
    }
    if (y.numel() == 0) return;
    const DeferredOp deferred =
        graph_op(op_fingerprint("conv1d_forward", x, kernel, bias, y, params.pad_left), "conv1d");
    if (deferred.skip) return;
    use_device(device_, "conv1d");
    ConvPlan& plan = conv_plan(shape);
    if (plan.forward_cudnn) {
        auto* filter = static_cast<float*>(filter_.reserve(static_cast<std::size_t>(kernel.bytes()), "conv1d"));
        kernel_to_filter(stream(), kernel.f32(), shape.window, shape.in_channels, shape.out_channels, filter);
        const float* input = x.f32();
        if (plan.explicit_padding) {
            auto* padded = static_cast<float*>(padded_.reserve(
                static_cast<std::size_t>(shape.batch * plan.padded_length * shape.in_channels) * sizeof(float), "conv1d"));
            pad_rows(stream(), x.f32(), shape.batch, shape.length, shape.in_channels, shape.pad_left,
                     plan.padded_length, padded);
            input = padded;
        }
        check_launch("conv1d", device_);
        void* workspace = nullptr;
        const float one = 1.0f, zero = 0.0f;
        const cudnnStatus_t status =
            !try_workspace(plan.forward_workspace, workspace) ? CUDNN_STATUS_NOT_SUPPORTED :
            cudnnConvolutionForward(cudnn_.get(), &one, plan.x.get(), input, plan.w.get(), filter, plan.conv.get(),
                                    plan.forward_algorithm, workspace, plan.forward_workspace, &zero, plan.y.get(),
                                    y.f32());
        if (!not_supported(status)) {
            check(status, "conv1d", "cudnnConvolutionForward", device_);
            if (bias) cuda::add_bias(stream(), y.f32(), shape.batch * shape.out_length, shape.out_channels, bias.f32());
            check_launch("conv1d", device_);
            return;
        }
        // cuDNN changed its mind at run time, or the device has no room for its workspace: the
        // direct kernel from now on.
        plan.forward_cudnn = false;
        plan.forward_note = runtime_fallback_note(workspace == nullptr && plan.forward_workspace > 0);
    }
    cuda::conv1d_forward(stream(), x.f32(), shape.batch, shape.length, shape.in_channels, kernel.f32(), shape.window,
                         shape.out_channels, bias ? bias.f32() : nullptr, y.f32(), shape.out_length, shape.pad_left);
    check_launch("conv1d", device_);
}

void CudaBackend::conv1d_backward(const TensorView& x, const TensorView& kernel, const TensorView& grad_y,
                                  const TensorView& grad_x, const TensorView& grad_kernel, const TensorView& grad_bias,
                                  const Conv1DParams& params) {
    const ConvShape shape = conv_shape(x, kernel, grad_y.shape[1], params);
    const DeferredOp deferred =
        graph_op(op_fingerprint("conv1d_backward", x, kernel, grad_y, grad_x, grad_kernel, grad_bias, params.pad_left),
                 "conv1d");
    if (deferred.skip) return;
    use_device(device_, "conv1d");
    if (shape.batch * shape.out_length * shape.out_channels == 0) {
        // Nothing flowed back: every gradient is zero, as the reference's zero-filled outputs.
        if (grad_x) fill(grad_x, 0.0f);
        fill(grad_kernel, 0.0f);
        if (grad_bias) fill(grad_bias, 0.0f);
        return;
    }
    ConvPlan& plan = conv_plan(shape);
    if (grad_x) conv1d_grad_x(shape, plan, kernel, grad_y, grad_x);
    conv1d_grad_kernel(shape, plan, x, grad_y, grad_kernel);
    if (grad_bias) bias_gradient(grad_y, shape.batch * shape.out_length, shape.out_channels, grad_bias);
}

void CudaBackend::conv1d_grad_x(const ConvShape& shape, ConvPlan& plan, const TensorView& kernel,
                                const TensorView& grad_y, const TensorView& grad_x) {
    const float one = 1.0f, zero = 0.0f;
    const std::size_t padded_bytes =
        static_cast<std::size_t>(shape.batch * plan.padded_length * shape.in_channels) * sizeof(float);
    if (plan.data_cudnn) {
        auto* filter = static_cast<float*>(filter_.reserve(static_cast<std::size_t>(kernel.bytes()), "conv1d"));
        kernel_to_filter(stream(), kernel.f32(), shape.window, shape.in_channels, shape.out_channels, filter);
        float* target = plan.explicit_padding ? static_cast<float*>(padded_grad_.reserve(padded_bytes, "conv1d"))
                                              : grad_x.f32();
        check_launch("conv1d", device_);
        void* workspace = nullptr;
        const cudnnStatus_t status =
            !try_workspace(plan.data_workspace, workspace) ? CUDNN_STATUS_NOT_SUPPORTED :
            cudnnConvolutionBackwardData(cudnn_.get(), &one, plan.w.get(), filter, plan.y.get(), grad_y.f32(),
                                         plan.conv.get(), plan.data_algorithm, workspace, plan.data_workspace, &zero,
                                         plan.x.get(), target);
        if (not_supported(status)) {
            plan.data_cudnn = false;
            plan.data_note = runtime_fallback_note(workspace == nullptr && plan.data_workspace > 0);
        } else {
            check(status, "conv1d", "cudnnConvolutionBackwardData", device_);
            if (plan.explicit_padding) {
                crop_rows(stream(), target, shape.batch, plan.padded_length, shape.in_channels, shape.pad_left,
                          shape.length, grad_x.f32());
                check_launch("conv1d", device_);
            }
        }
    }
    if (!plan.data_cudnn) {
        cuda::conv1d_backward_data(stream(), kernel.f32(), grad_y.f32(), shape.batch, shape.length, shape.in_channels,
                                   shape.window, shape.out_channels, shape.out_length, shape.pad_left, grad_x.f32());
        check_launch("conv1d", device_);
    }
}

void CudaBackend::conv1d_grad_kernel(const ConvShape& shape, ConvPlan& plan, const TensorView& x,
                                     const TensorView& grad_y, const TensorView& grad_kernel) {
    const float one = 1.0f, zero = 0.0f;
    const std::size_t padded_bytes =
        static_cast<std::size_t>(shape.batch * plan.padded_length * shape.in_channels) * sizeof(float);
    if (plan.filter_cudnn) {
        const float* input = x.f32();
        if (plan.explicit_padding) {
            auto* padded = static_cast<float*>(padded_.reserve(padded_bytes, "conv1d"));
            pad_rows(stream(), x.f32(), shape.batch, shape.length, shape.in_channels, shape.pad_left,
                     plan.padded_length, padded);
            input = padded;
        }
        auto* filter_grad =
            static_cast<float*>(filter_grad_.reserve(static_cast<std::size_t>(grad_kernel.bytes()), "conv1d"));
        check_launch("conv1d", device_);
        void* workspace = nullptr;
        const cudnnStatus_t status =
            !try_workspace(plan.filter_workspace, workspace) ? CUDNN_STATUS_NOT_SUPPORTED :
            cudnnConvolutionBackwardFilter(cudnn_.get(), &one, plan.x.get(), input, plan.y.get(), grad_y.f32(),
                                           plan.conv.get(), plan.filter_algorithm, workspace, plan.filter_workspace,
                                           &zero, plan.w.get(), filter_grad);
        if (not_supported(status)) {
            plan.filter_cudnn = false;
            plan.filter_note = runtime_fallback_note(workspace == nullptr && plan.filter_workspace > 0);
        } else {
            check(status, "conv1d", "cudnnConvolutionBackwardFilter", device_);
            filter_to_kernel(stream(), filter_grad, shape.window, shape.in_channels, shape.out_channels,
                             grad_kernel.f32());
            check_launch("conv1d", device_);
        }
    }
    if (!plan.filter_cudnn) {
        cuda::conv1d_backward_filter(stream(), x.f32(), grad_y.f32(), shape.batch, shape.length, shape.in_channels,
                                     shape.window, shape.out_channels, shape.out_length, shape.pad_left,
                                     grad_kernel.f32());
        check_launch("conv1d", device_);
    }
}

}  // namespace mirrorlab::cuda
