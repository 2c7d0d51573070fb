// The emulated cuDNN (see include/cudnn.h): reference loops over the descriptors' own indexing.
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emulator.h"

namespace mirrorlab_emulation {

struct DnnHandle {
    int device = 0;
    cudaStream_t stream = nullptr;
};

struct DnnTensor {
    bool set = false;
    int n = 0, c = 0, h = 0, w = 0;
    std::int64_t sn = 0, sc = 0, sh = 0, sw = 0;
    std::int64_t at(int in, int ic, int ih, int iw) const { return in * sn + ic * sc + ih * sh + iw * sw; }
    std::int64_t elements() const { return std::int64_t{n} * c * h * w; }
};

struct DnnFilter {
    bool set = false;
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    int k = 0, c = 0, r = 0, s = 0;
    std::int64_t at(int ik, int ic, int ir, int is) const {
        return format == CUDNN_TENSOR_NCHW ? ((std::int64_t{ik} * c + ic) * r + ir) * s + is
                                           : ((std::int64_t{ik} * r + ir) * s + is) * c + ic;
    }
    std::int64_t elements() const { return std::int64_t{k} * c * r * s; }
};

struct DnnConvolution {
    bool set = false;
    int pad_h = 0, pad_w = 0, u = 1, v = 1, dilation_h = 1, dilation_w = 1;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

namespace {

// The output height/width of a convolution; <= 0 when the window does not fit.
int output_extent(int input, int pad, int filter, int stride, int dilation) {
    const int room = input + 2 * pad - ((filter - 1) * dilation + 1);
    return room < 0 ? 0 : 1 + room / stride;
}

// Shapes agree as cuDNN requires; otherwise BAD_PARAM (what cuDNN answers for mismatched descriptors).
bool shapes_agree(const DnnTensor* x, const DnnFilter* w, const DnnConvolution* conv, const DnnTensor* y) {
    if (x == nullptr || w == nullptr || conv == nullptr || y == nullptr) return false;
    if (!x->set || !w->set || !conv->set || !y->set) return false;
    return x->c == w->c && y->n == x->n && y->c == w->k &&
           y->h == output_extent(x->h, conv->pad_h, w->r, conv->u, conv->dilation_h) &&
           y->w == output_extent(x->w, conv->pad_w, w->s, conv->v, conv->dilation_w);
}

// The workspace the emulated "GEMM" algorithms ask for: an im2col buffer, as a real one would.
std::size_t gemm_workspace_bytes(const DnnTensor* y, const DnnFilter* w) {
    return static_cast<std::size_t>(y->elements() / y->c) * static_cast<std::size_t>(w->c * w->r * w->s) * sizeof(float);
}

template <typename Perf, typename Algo>
void list_algorithms(Perf* results, int requested, int* returned, Algo tensor_op, Algo with_workspace,
                     bool with_workspace_deterministic, Algo without_workspace, bool without_deterministic,
                     std::size_t workspace_bytes) {
    const Perf all[] = {
        {tensor_op, CUDNN_STATUS_SUCCESS, 0.1f, workspace_bytes / 4, CUDNN_DETERMINISTIC, CUDNN_TENSOR_OP_MATH, {}},
        {with_workspace, CUDNN_STATUS_SUCCESS, 0.2f, workspace_bytes,
         with_workspace_deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC, CUDNN_FMA_MATH, {}},
        {without_workspace, CUDNN_STATUS_SUCCESS, 0.3f, 0,
         without_deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC, CUDNN_DEFAULT_MATH, {}},
    };
    const int count = std::min<int>(requested, 3);
    for (int i = 0; i < count; ++i) results[i] = all[i];
    *returned = count;
}

float tf32(float value) {  // what a tensor-core algorithm does to its float inputs
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    bits = (bits + 0x1000u) & ~0x1fffu;
    std::memcpy(&value, &bits, sizeof bits);
    return value;
}

// Which of the pass's algorithms needs a workspace, and which runs only on tensor cores.
struct AlgorithmRoles {
    int with_workspace = -1;
    int tensor_op = -1;
};

// The workspace `algo` needs, or why cuDNN would not run it (shapes, an unknown algorithm, the
// tensor-core one under FMA math).
cudnnStatus_t workspace_size(const DnnHandle* handle, const DnnTensor* x, const DnnFilter* w, const DnnConvolution* conv,
                             const DnnTensor* y, int algo, AlgorithmRoles roles, std::size_t* bytes) {
    if (handle == nullptr || bytes == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!shapes_agree(x, w, conv, y)) return CUDNN_STATUS_BAD_PARAM;
    if (algo < 0 || algo > 2) return CUDNN_STATUS_NOT_SUPPORTED;
    if (algo == roles.tensor_op && conv->math == CUDNN_FMA_MATH) return CUDNN_STATUS_NOT_SUPPORTED;
    *bytes = algo == roles.with_workspace ? gemm_workspace_bytes(y, w) : 0;
    return CUDNN_STATUS_SUCCESS;
}

// Everything a pass needs checked before it is queued: the handle's device, what
// workspace_size() checks, the data in this device's memory, and a large enough workspace.
cudnnStatus_t check_pass(const DnnHandle* handle, const DnnTensor* x, const DnnFilter* w, const DnnConvolution* conv,
                         const DnnTensor* y, const void* x_data, const void* w_data, const void* y_data, int algo,
                         AlgorithmRoles roles, const void* workspace, std::size_t workspace_bytes, const char* what) {
    if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
    // A handle belongs to the device that was current when it was created, and so must its stream.
    if (current_device() != handle->device || stream_device(handle->stream) != handle->device) {
        report("handle-of-other-device", "%s with a handle of GPU:%d while GPU:%d is current", what, handle->device,
               current_device());
        return CUDNN_STATUS_EXECUTION_FAILED;
    }
    std::size_t needed = 0;
    if (const cudnnStatus_t status = workspace_size(handle, x, w, conv, y, algo, roles, &needed);
        status != CUDNN_STATUS_SUCCESS) {
        return status;
    }
    if (needed > 0 && (workspace == nullptr || workspace_bytes < needed ||
                       device_of_range(workspace, needed) != handle->device)) {
        report("workspace-too-small", "%s with algorithm %d needs %zu workspace bytes, got %zu at %p", what, algo,
               needed, workspace_bytes, workspace);
        return CUDNN_STATUS_BAD_PARAM;
    }
    auto in_device = [&](const void* data, std::int64_t elements) {
        return data != nullptr && device_of_range(data, static_cast<std::size_t>(elements) * sizeof(float)) == handle->device;
    };
    if (!in_device(x_data, x->elements()) || !in_device(w_data, w->elements()) || !in_device(y_data, y->elements())) {
        report("library-outside-allocation", "%s got data outside an allocation of GPU:%d", what, handle->device);
        return CUDNN_STATUS_EXECUTION_FAILED;
    }
    return CUDNN_STATUS_SUCCESS;
}

// Calls visit(x index, w index, y index) for every term of the convolution sum.
template <typename Visit>
void for_each_term(const DnnTensor& x, const DnnFilter& w, const DnnConvolution& conv, const DnnTensor& y, Visit visit) {
    for (int n = 0; n < y.n; ++n) {
        for (int k = 0; k < y.c; ++k) {
            for (int p = 0; p < y.h; ++p) {
                for (int q = 0; q < y.w; ++q) {
                    for (int c = 0; c < x.c; ++c) {
                        for (int r = 0; r < w.r; ++r) {
                            const int rr = conv.mode == CUDNN_CROSS_CORRELATION ? r : w.r - 1 - r;
                            const int ih = p * conv.u - conv.pad_h + rr * conv.dilation_h;
                            if (ih < 0 || ih >= x.h) continue;
                            for (int s = 0; s < w.s; ++s) {
                                const int ss = conv.mode == CUDNN_CROSS_CORRELATION ? s : w.s - 1 - s;
                                const int iw = q * conv.v - conv.pad_w + ss * conv.dilation_w;
                                if (iw < 0 || iw >= x.w) continue;
                                visit(x.at(n, c, ih, iw), w.at(k, c, r, s), y.at(n, k, p, q));
                            }
                        }
                    }
                }
            }
        }
    }
}

void scribble(void* workspace, std::size_t bytes) {
    if (workspace != nullptr && bytes > 0) std::memset(workspace, 0xff, bytes);
}

enum class Pass { Forward, BackwardData, BackwardFilter };


// One pass: the output is y (forward), x (backward data: dx from dy) or w (backward filter: dw
// from x and dy); the other two are its inputs. out = alpha * sum + beta * out, and beta == 0 does
// not read out (whatever it held, NaN included, does not leak in).
cudnnStatus_t convolve(Pass pass, const DnnHandle* handle, const void* alpha, const void* beta, const DnnTensor* x_desc,
                       const void* x, const DnnFilter* w_desc, const void* w, const DnnConvolution* conv,
                       const DnnTensor* y_desc, const void* y, void* out_data, int algo, AlgorithmRoles roles,
                       void* workspace, std::size_t workspace_bytes) {
    static const char* const names[] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                        "cudnnConvolutionBackwardFilter"};
    const cudnnStatus_t status = check_pass(handle, x_desc, w_desc, conv, y_desc, x, w, y, algo, roles, workspace,
                                            workspace_bytes, names[static_cast<int>(pass)]);
    if (status != CUDNN_STATUS_SUCCESS) return status;
    const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
    const bool rounds = conv->math != CUDNN_FMA_MATH;
    const DnnTensor xd = *x_desc, yd = *y_desc;
    const DnnFilter wd = *w_desc;
    const DnnConvolution cd = *conv;
    const auto* xs = static_cast<const float*>(device_to_host(x));
    const auto* ws = static_cast<const float*>(device_to_host(w));
    const auto* ys = static_cast<const float*>(device_to_host(y));
    auto* out = static_cast<float*>(device_to_host(out_data));
    void* scratch = device_to_host(workspace);
    // The pass reads two of x, w and y and writes the third (out_data), and the workspace.
    auto bytes_of = [](std::int64_t elements) { return static_cast<std::size_t>(elements) * sizeof(float); };
    const std::size_t out_bytes = bytes_of(pass == Pass::Forward        ? yd.elements()
                                           : pass == Pass::BackwardData ? xd.elements()
                                                                        : wd.elements());
    std::vector<Access> accesses{Access{out_data, true, out_bytes}, Access{workspace, true, workspace_bytes}};
    if (pass != Pass::Forward) accesses.push_back(Access{y, false, bytes_of(yd.elements())});
    if (pass != Pass::BackwardData) accesses.push_back(Access{x, false, bytes_of(xd.elements())});
    if (pass != Pass::BackwardFilter) accesses.push_back(Access{w, false, bytes_of(wd.elements())});
    const Issued issued = enqueue(handle->stream, [=] {
        scribble(scratch, workspace_bytes);
        const std::int64_t out_elements = pass == Pass::Forward        ? yd.n * yd.sn
                                          : pass == Pass::BackwardData ? xd.n * xd.sn
                                                                       : wd.elements();
        std::vector<float> sums(static_cast<std::size_t>(out_elements), 0.0f);
        auto product = [rounds](float p, float q) { return rounds ? tf32(p) * tf32(q) : p * q; };
        for_each_term(xd, wd, cd, yd, [&](std::int64_t xi, std::int64_t wi, std::int64_t yi) {
            switch (pass) {
                case Pass::Forward: sums[static_cast<std::size_t>(yi)] += product(xs[xi], ws[wi]); break;
                case Pass::BackwardData: sums[static_cast<std::size_t>(xi)] += product(ys[yi], ws[wi]); break;
                case Pass::BackwardFilter: sums[static_cast<std::size_t>(wi)] += product(xs[xi], ys[yi]); break;
            }
        });
        for (std::size_t i = 0; i < sums.size(); ++i) out[i] = b == 0.0f ? a * sums[i] : a * sums[i] + b * out[i];
    }, std::move(accesses));
    return count_issued(issued, Counted::LibraryLaunch) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}


template <typename Descriptor>
cudnnStatus_t create(Descriptor** descriptor) {
    if (descriptor == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    *descriptor = new Descriptor();
    return CUDNN_STATUS_SUCCESS;
}

template <typename Descriptor>
cudnnStatus_t destroy(Descriptor* descriptor) {
    delete descriptor;
    return CUDNN_STATUS_SUCCESS;
}

constexpr AlgorithmRoles kForwardRoles{CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM};
constexpr AlgorithmRoles kDataRoles{CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1};
constexpr AlgorithmRoles kFilterRoles{CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};

}  // namespace

}  // namespace mirrorlab_emulation

using namespace mirrorlab_emulation;

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                      cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                                      cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
                                                      std::size_t* bytes) {
    return workspace_size(handle, x, w, conv, y, algo, kForwardRoles, bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, cudnnFilterDescriptor_t w,
                                                           cudnnTensorDescriptor_t dy,
                                                           cudnnConvolutionDescriptor_t conv,
                                                           cudnnTensorDescriptor_t dx,
                                                           cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
    return workspace_size(handle, dx, w, conv, dy, algo, kDataRoles, bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                             cudnnTensorDescriptor_t dy,
                                                             cudnnConvolutionDescriptor_t conv,
                                                             cudnnFilterDescriptor_t dw,
                                                             cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
    return workspace_size(handle, x, dw, conv, dy, algo, kFilterRoles, bytes);
}

std::size_t cudnnGetVersion() {
    const char* version = std::getenv("MIRRORLAB_CUDA_EMULATION_CUDNN");
    return version != nullptr ? std::strtoull(version, nullptr, 10) : CUDNN_VERSION;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
    switch (status) {
        case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
        case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
        case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
        case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
        case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
        case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    }
    return "CUDNN_STATUS_UNKNOWN";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
    if (!valid_device(current_device()) || injected_failure("cudnnCreate")) return CUDNN_STATUS_NOT_INITIALIZED;
    *handle = new DnnHandle{current_device(), nullptr};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
    if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    handle->stream = stream;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* descriptor) { return create(descriptor); }

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t descriptor) { return destroy(descriptor); }

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,
                                         int n, int c, int h, int w) {
    if (d == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (type != CUDNN_DATA_FLOAT || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
    d->set = true;
    d->n = n, d->c = c, d->h = h, d->w = w;
    if (format == CUDNN_TENSOR_NCHW) {
        d->sw = 1, d->sh = w, d->sc = std::int64_t{h} * w, d->sn = std::int64_t{c} * h * w;
    } else {
        d->sc = 1, d->sw = c, d->sh = std::int64_t{w} * c, d->sn = std::int64_t{h} * w * c;
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* descriptor) { return create(descriptor); }

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t descriptor) { return destroy(descriptor); }

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
    if (d == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (type != CUDNN_DATA_FLOAT || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
    d->set = true;
    d->format = format;
    d->k = k, d->c = c, d->r = h, d->s = w;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* descriptor) { return create(descriptor); }

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t descriptor) { return destroy(descriptor); }

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute_type) {
    if (d == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 || dilation_w <= 0 || compute_type != CUDNN_DATA_FLOAT)
        return CUDNN_STATUS_BAD_PARAM;
    d->set = true;
    d->pad_h = pad_h, d->pad_w = pad_w, d->u = u, d->v = v, d->dilation_h = dilation_h, d->dilation_w = dilation_w;
    d->mode = mode;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
    if (d == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    d->math = math;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t x,
                                                    cudnnFilterDescriptor_t w, int* n, int* c, int* h, int* width) {
    if (conv == nullptr || x == nullptr || w == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!conv->set || !x->set || !w->set || x->c != w->c) return CUDNN_STATUS_BAD_PARAM;
    const int out_h = output_extent(x->h, conv->pad_h, w->r, conv->u, conv->dilation_h);
    const int out_w = output_extent(x->w, conv->pad_w, w->s, conv->v, conv->dilation_w);
    if (out_h <= 0 || out_w <= 0) return CUDNN_STATUS_BAD_PARAM;
    *n = x->n, *c = w->k, *h = out_h, *width = out_w;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                     cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                                     cudnnTensorDescriptor_t y, int requested, int* returned,
                                                     cudnnConvolutionFwdAlgoPerf_t* results) {
    if (handle == nullptr || returned == nullptr || results == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!shapes_agree(x, w, conv, y) || requested <= 0) return CUDNN_STATUS_BAD_PARAM;
    list_algorithms(results, requested, returned, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, true, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, true,
                    gemm_workspace_bytes(y, w));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, cudnnFilterDescriptor_t w,
                                                          cudnnTensorDescriptor_t dy, cudnnConvolutionDescriptor_t conv,
                                                          cudnnTensorDescriptor_t dx, int requested, int* returned,
                                                          cudnnConvolutionBwdDataAlgoPerf_t* results) {
    if (handle == nullptr || returned == nullptr || results == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!shapes_agree(dx, w, conv, dy) || requested <= 0) return CUDNN_STATUS_BAD_PARAM;
    // As cuDNN: the algorithm without workspace (ALGO_0) adds with atomics, so it is not deterministic.
    list_algorithms(results, requested, returned, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
                    true, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, false, gemm_workspace_bytes(dy, w));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                            cudnnTensorDescriptor_t dy,
                                                            cudnnConvolutionDescriptor_t conv,
                                                            cudnnFilterDescriptor_t dw, int requested, int* returned,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t* results) {
    if (handle == nullptr || returned == nullptr || results == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!shapes_agree(x, dw, conv, dy) || requested <= 0) return CUDNN_STATUS_BAD_PARAM;
    list_algorithms(results, requested, returned, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, true, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, false,
                    gemm_workspace_bytes(dy, dw));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, cudnnTensorDescriptor_t x_desc,
                                      const void* x, cudnnFilterDescriptor_t w_desc, const void* w,
                                      cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,
                                      void* workspace, std::size_t workspace_bytes, const void* beta,
                                      cudnnTensorDescriptor_t y_desc, void* y) {
    return convolve(Pass::Forward, handle, alpha, beta, x_desc, x, w_desc, w, conv, y_desc, y, y, algo,
                    kForwardRoles, workspace,
                    workspace_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha, cudnnFilterDescriptor_t w_desc,
                                           const void* w, cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdDataAlgo_t algo,
                                           void* workspace, std::size_t workspace_bytes, const void* beta,
                                           cudnnTensorDescriptor_t dx_desc, void* dx) {
    return convolve(Pass::BackwardData, handle, alpha, beta, dx_desc, dx, w_desc, w, conv, dy_desc, dy, dx, algo,
                    kDataRoles, workspace,
                    workspace_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha, cudnnTensorDescriptor_t x_desc,
                                             const void* x, cudnnTensorDescriptor_t dy_desc, const void* dy,
                                             cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdFilterAlgo_t algo,
                                             void* workspace, std::size_t workspace_bytes, const void* beta,
                                             cudnnFilterDescriptor_t dw_desc, void* dw) {
    return convolve(Pass::BackwardFilter, handle, alpha, beta, x_desc, x, dw_desc, dw, conv, dy_desc, dy, dw, algo,
                    kFilterRoles, workspace,
                    workspace_bytes);
}
