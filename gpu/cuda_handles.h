#pragma once
// RAII for every foreign handle the CUDA backend holds (streams, events, cuBLAS and cuDNN handles
// and descriptors, device buffers), and the error checks that turn a failed call into an OpError
// naming the operation: "[conv1d] cudnnConvolutionForward failed on GPU:0: CUDNN_STATUS_...".
// Handles are neither copyable nor movable; owners hold them by value or by unique_ptr.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpu/cuda_errors.h"

namespace mirrorlab {
class MemoryArena;
}

namespace mirrorlab::cuda {

// error_text(cudaError_t) is in gpu/cuda_errors.h, which the plugin shares.
std::string error_text(cublasStatus_t status);  // "CUBLAS_STATUS_NOT_INITIALIZED"
std::string error_text(cudnnStatus_t status);   // "CUDNN_STATUS_BAD_PARAM: ..."

// Throw OpError("[op] <call> failed on GPU:<device>: <error>") unless the call succeeded.
void check(cudaError_t status, std::string_view op, std::string_view call, int device);
void check(cublasStatus_t status, std::string_view op, std::string_view call, int device);
void check(cudnnStatus_t status, std::string_view op, std::string_view call, int device);
// After a kernel launch: a bad launch configuration shows up here, not at the launch.
void check_launch(std::string_view op, int device);

// Makes `device` current on the calling thread (replica threads share one backend per device).
void use_device(int device, std::string_view op);

class NonCopyable {
public:
    NonCopyable() = default;
    NonCopyable(const NonCopyable&) = delete;
    NonCopyable& operator=(const NonCopyable&) = delete;
};

class Stream : NonCopyable {
public:
    explicit Stream(int device);
    ~Stream();
    cudaStream_t get() const { return stream_; }
    void synchronize(std::string_view op) const;

private:
    int device_ = 0;
    cudaStream_t stream_ = nullptr;
};

// A CUDA event without timing: a point in a stream that another stream can wait for
// (cudaStreamWaitEvent) without the host waiting for either.
class Event : NonCopyable {
public:
    explicit Event(int device);
    ~Event();
    cudaEvent_t get() const { return event_; }

private:
    int device_ = 0;
    cudaEvent_t event_ = nullptr;
};

class CublasHandle : NonCopyable {
public:
    CublasHandle(int device, cudaStream_t stream);
    ~CublasHandle();
    cublasHandle_t get() const { return handle_; }

private:
    cublasHandle_t handle_ = nullptr;
};

class CudnnHandle : NonCopyable {
public:
    CudnnHandle(int device, cudaStream_t stream);
    ~CudnnHandle();
    cudnnHandle_t get() const { return handle_; }

private:
    cudnnHandle_t handle_ = nullptr;
};

class TensorDescriptor : NonCopyable {
public:
    TensorDescriptor();
    ~TensorDescriptor();
    // Channels-last float tensor [n, h, w, c].
    void set_nhwc(int n, int h, int w, int c);
    cudnnTensorDescriptor_t get() const { return descriptor_; }

private:
    cudnnTensorDescriptor_t descriptor_ = nullptr;
};

class FilterDescriptor : NonCopyable {
public:
    FilterDescriptor();
    ~FilterDescriptor();
    // Channels-last float filter [out_channels, h, w, in_channels].
    void set_nhwc(int out_channels, int h, int w, int in_channels);
    cudnnFilterDescriptor_t get() const { return descriptor_; }

private:
    cudnnFilterDescriptor_t descriptor_ = nullptr;
};

class ConvolutionDescriptor : NonCopyable {
public:
    ConvolutionDescriptor();
    ~ConvolutionDescriptor();
    // Cross-correlation (no kernel flip, as Keras), stride 1, symmetric width padding, float
    // accumulation without TF32 tensor cores, so results stay close to the CPU reference.
    void set_1d(int pad_width);
    cudnnConvolutionDescriptor_t get() const { return descriptor_; }

private:
    cudnnConvolutionDescriptor_t descriptor_ = nullptr;
};

// Device memory the backend keeps for itself (scratch, workspaces): grows, never shrinks. Once
// attached to the logical device's arena it allocates there, so the device's memory limit covers
// it and running out names the virtual device, its limit and the request; before that (a backend
// used on its own, as in the op tests) it calls cudaMalloc.
class DeviceBuffer : NonCopyable {
public:
    explicit DeviceBuffer(int device) : device_(device) {}
    ~DeviceBuffer();
    // Only while empty (the backend attaches its arena before any op runs).
    void attach(MemoryArena* arena);
    void* reserve(std::size_t bytes, std::string_view op);  // contents are not kept when it grows
    void* get() const { return data_; }
    std::size_t size() const { return bytes_; }
    // How often the buffer moved (grew): a graph captured before a move reads freed memory.
    std::uint64_t generation() const { return generation_; }

private:
    void release();

    int device_ = 0;
    MemoryArena* arena_ = nullptr;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
    std::uint64_t generation_ = 0;
};

// One CUDA event per StepMark on one stream: the device-side clock for a step's phases.
class StepEvents : NonCopyable {
public:
    static constexpr int kCount = 8;
    explicit StepEvents(int device);
    ~StepEvents();
    // Queued: recorded on the stream now. Captured: the stream is capturing a graph, which
    // records the event each time it runs (an external event record node). ByGraph: a graph
    // launch records it (the step was captured with Captured marks); nothing is queued now.
    enum class Record { Queued, Captured, ByGraph };
    void record(int slot, cudaStream_t stream, Record how = Record::Queued);
    // Milliseconds between two recorded events once both completed; negative if either was not
    // recorded in this step or has not completed.
    double elapsed_ms(int from, int to) const;

private:
    int device_ = 0;
    std::array<cudaEvent_t, kCount> events_{};
    std::array<bool, kCount> recorded_{};
};

}  // namespace mirrorlab::cuda
