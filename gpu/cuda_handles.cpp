#include "gpu/cuda_handles.h"

#include <algorithm>

#include "core/backend/arena.h"
#include "core/util/error.h"

namespace mirrorlab::cuda {

namespace {

[[noreturn]] void fail(std::string_view op, std::string_view call, int device, const std::string& error) {
    const std::string where = device >= 0 ? " on GPU:" + std::to_string(device) : std::string();
    throw OpError("[" + std::string(op) + "] " + std::string(call) + " failed" + where + ": " + error);
}

}  // namespace

std::string error_text(cublasStatus_t status) { return cublasGetStatusString(status); }

std::string error_text(cudnnStatus_t status) { return cudnnGetErrorString(status); }

void check(cudaError_t status, std::string_view op, std::string_view call, int device) {
    // A failed runtime call is also left as the thread's last error, which the next
    // check_launch() would report against an innocent op: take it back here.
    if (status != cudaSuccess) {
        cudaGetLastError();
        fail(op, call, device, error_text(status));
    }
}

void check(cublasStatus_t status, std::string_view op, std::string_view call, int device) {
    if (status != CUBLAS_STATUS_SUCCESS) fail(op, call, device, error_text(status));
}

void check(cudnnStatus_t status, std::string_view op, std::string_view call, int device) {
    if (status != CUDNN_STATUS_SUCCESS) fail(op, call, device, error_text(status));
}

void check_launch(std::string_view op, int device) { check(cudaGetLastError(), op, "kernel launch", device); }

void use_device(int device, std::string_view op) { check(cudaSetDevice(device), op, "cudaSetDevice", device); }

Stream::Stream(int device) : device_(device) {
    use_device(device, "stream");
    // Non-blocking: the legacy default stream, which other libraries may use, never serialises ours.
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream", "cudaStreamCreateWithFlags", device);
}

Stream::~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void Stream::synchronize(std::string_view op) const {
    check(cudaStreamSynchronize(stream_), op, "cudaStreamSynchronize", device_);
}

CublasHandle::CublasHandle(int device, cudaStream_t stream) {
    use_device(device, "cublas");
    check(cublasCreate(&handle_), "cublas", "cublasCreate", device);
    try {
        check(cublasSetStream(handle_, stream), "cublas", "cublasSetStream", device);
        // Full float precision: no TF32 tensor cores unless NVIDIA_TF32_OVERRIDE asks for them.
        check(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublas", "cublasSetMathMode", device);
    } catch (...) {
        cublasDestroy(handle_);  // a throwing constructor runs no destructor
        throw;
    }
}

CublasHandle::~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
}

CudnnHandle::CudnnHandle(int device, cudaStream_t stream) {
    use_device(device, "cudnn");
    check(cudnnCreate(&handle_), "cudnn", "cudnnCreate", device);
    if (const cudnnStatus_t status = cudnnSetStream(handle_, stream); status != CUDNN_STATUS_SUCCESS) {
        cudnnDestroy(handle_);  // a throwing constructor runs no destructor
        check(status, "cudnn", "cudnnSetStream", device);
    }
}

CudnnHandle::~CudnnHandle() {
    if (handle_ != nullptr) cudnnDestroy(handle_);
}

TensorDescriptor::TensorDescriptor() {
    check(cudnnCreateTensorDescriptor(&descriptor_), "conv1d", "cudnnCreateTensorDescriptor", -1);
}

TensorDescriptor::~TensorDescriptor() {
    if (descriptor_ != nullptr) cudnnDestroyTensorDescriptor(descriptor_);
}

void TensorDescriptor::set_nhwc(int n, int h, int w, int c) {
    check(cudnnSetTensor4dDescriptor(descriptor_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w), "conv1d",
          "cudnnSetTensor4dDescriptor", -1);
}

FilterDescriptor::FilterDescriptor() {
    check(cudnnCreateFilterDescriptor(&descriptor_), "conv1d", "cudnnCreateFilterDescriptor", -1);
}

FilterDescriptor::~FilterDescriptor() {
    if (descriptor_ != nullptr) cudnnDestroyFilterDescriptor(descriptor_);
}

void FilterDescriptor::set_nhwc(int out_channels, int h, int w, int in_channels) {
    check(cudnnSetFilter4dDescriptor(descriptor_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, out_channels, in_channels, h, w),
          "conv1d", "cudnnSetFilter4dDescriptor", -1);
}

ConvolutionDescriptor::ConvolutionDescriptor() {
    check(cudnnCreateConvolutionDescriptor(&descriptor_), "conv1d", "cudnnCreateConvolutionDescriptor", -1);
}

ConvolutionDescriptor::~ConvolutionDescriptor() {
    if (descriptor_ != nullptr) cudnnDestroyConvolutionDescriptor(descriptor_);
}

void ConvolutionDescriptor::set_1d(int pad_width) {
    check(cudnnSetConvolution2dDescriptor(descriptor_, 0, pad_width, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT),
          "conv1d", "cudnnSetConvolution2dDescriptor", -1);
    check(cudnnSetConvolutionMathType(descriptor_, CUDNN_FMA_MATH), "conv1d", "cudnnSetConvolutionMathType", -1);
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::attach(MemoryArena* arena) {
    release();
    arena_ = arena;
}

void DeviceBuffer::release() {
    if (data_ == nullptr) return;
    if (arena_ != nullptr) {
        // The arena keeps the block for reuse without freeing it. The stream may still be reading
        // the old buffer, so wait for it first: the next user of the block may run on any stream.
        cudaSetDevice(device_);
        cudaDeviceSynchronize();
        arena_->deallocate(data_);
    } else {
        cudaSetDevice(device_);
        cudaFree(data_);  // synchronises the device: nothing in flight still reads the old buffer
    }
    data_ = nullptr;
    bytes_ = 0;
}

void* DeviceBuffer::reserve(std::size_t bytes, std::string_view op) {
    if (bytes <= bytes_ && data_ != nullptr) return data_;
    use_device(device_, op);
    release();
    const std::size_t rounded = (std::max<std::size_t>(bytes, 256) + 255) / 256 * 256;
    if (arena_ != nullptr) {
        // Throws OutOfMemoryError naming the device, its limit and the request.
        data_ = arena_->allocate(static_cast<std::int64_t>(rounded), std::string(op) + " scratch");
    } else {
        check(cudaMalloc(&data_, rounded), op, "cudaMalloc of " + std::to_string(rounded) + " scratch bytes", device_);
    }
    bytes_ = rounded;
    ++generation_;
    return data_;
}

Event::Event(int device) : device_(device) {
    use_device(device, "event");
    check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "event", "cudaEventCreateWithFlags", device);
}

Event::~Event() {
    cudaSetDevice(device_);
    if (event_ != nullptr) cudaEventDestroy(event_);
}

StepEvents::StepEvents(int device) : device_(device) {
    use_device(device, "step timing");
    for (auto& event : events_) {
        check(cudaEventCreateWithFlags(&event, cudaEventDefault), "step timing", "cudaEventCreateWithFlags", device);
    }
}

StepEvents::~StepEvents() {
    cudaSetDevice(device_);
    for (auto event : events_) {
        if (event != nullptr) cudaEventDestroy(event);
    }
}

void StepEvents::record(int slot, cudaStream_t stream, Record how) {
    if (slot < 0 || slot >= kCount) return;
    // A new step starts at slot 0: marks from the previous step no longer pair with this one's.
    if (slot == 0) recorded_.fill(false);
    const cudaEvent_t event = events_[static_cast<std::size_t>(slot)];
    if (how == Record::ByGraph) {
        recorded_[static_cast<std::size_t>(slot)] = true;
        return;
    }
    // Without the external flag a capture would use the event for ordering only, never record it.
    recorded_[static_cast<std::size_t>(slot)] =
        cudaEventRecordWithFlags(event, stream, how == Record::Captured ? cudaEventRecordExternal : 0) == cudaSuccess;
    // Timing is optional: a failed record only costs this step's device times, and must not
    // linger as the last error for the next op's launch check.
    if (!recorded_[static_cast<std::size_t>(slot)]) cudaGetLastError();
}

double StepEvents::elapsed_ms(int from, int to) const {
    if (from < 0 || to < 0 || from >= kCount || to >= kCount) return -1.0;
    if (!recorded_[static_cast<std::size_t>(from)] || !recorded_[static_cast<std::size_t>(to)]) return -1.0;
    float milliseconds = 0.0f;
    if (cudaEventElapsedTime(&milliseconds, events_[static_cast<std::size_t>(from)],
                             events_[static_cast<std::size_t>(to)]) != cudaSuccess) {
        cudaGetLastError();  // not completed yet: clear the error and report "unknown"
        return -1.0;
    }
    return milliseconds;
}

}  // namespace mirrorlab::cuda
