// The CUDA host emulator's self-test (tests/cuda_emulation; issue #20). The emulator claims to be
// strict where a GPU would fail or lie; here each rule it claims meets a deliberately wrong program
// that must be reported: by the error CUDA would return plus a "CUDA emulation: [rule]" line, or,
// where a GPU would say nothing (an overrun inside a kernel, a read before a stream was waited
// for), by the program dying with that line. Beside each wrong program runs the same program done
// right, which must run clean, so that no case can pass by accident. Mistakes a GPU shows only in
// the results (fresh memory, an order between blocks) must give a detectably wrong result.
//
// Every program runs in a child process: this binary with `--case NAME wrong|right`.
#include <QtTest/QtTest>

#include <QProcess>
#include <QProcessEnvironment>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "mirrorlab_emulation_counters.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/resource.h>

namespace {

// ---------------------------------------------------------------------------------------------
// The child side: small CUDA programs, each with one mistake that `right` leaves out.

// A step the program needs before its mistake: failing here is not the outcome under test.
void require(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "test program: %s failed\n", what);
    std::exit(3);
}

void print_result(const char* text) { std::printf("result: %s\n", text); }
void print_result(cudaError_t error) { print_result(cudaGetErrorName(error)); }
void print_result(float value) {
    if (std::isnan(value)) {
        print_result("NaN");  // whatever its sign bit
    } else {
        std::printf("result: %g\n", static_cast<double>(value));
    }
}

template <typename T>
T* device_buffer(std::size_t count) {
    void* pointer = nullptr;
    require(cudaMalloc(&pointer, count * sizeof(T)) == cudaSuccess, "cudaMalloc");
    return static_cast<T*>(pointer);
}

cudaStream_t new_stream() {
    cudaStream_t stream = nullptr;
    require(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreateWithFlags");
    return stream;
}

template <typename T>
std::vector<T> download(const T* device, std::size_t count, cudaStream_t stream = nullptr) {
    std::vector<T> host(count);
    require(cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream) == cudaSuccess,
            "cudaMemcpyAsync to the host");
    return host;
}

__global__ void fill_kernel(float* out, int count, float value) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < count) out[i] = value;
}

// No bounds check: every thread of the grid writes.
__global__ void fill_every_thread_kernel(float* out, float value) { out[blockIdx.x * blockDim.x + threadIdx.x] = value; }

// out[i] = in[i + shift] for i < count: a stencil that reaches `shift` elements beyond i.
__global__ void shifted_copy_kernel(const float* in, float* out, int count, int shift) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < count) out[i] = in[i + shift];
}

__global__ void copy_kernel(const float* in, float* out, int count) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < count) out[i] = in[i];
}

__global__ void accumulate_kernel(float* out, int count, float value) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < count) out[i] += value;
}

__global__ void add_kernel(const float* x, const float* y, float* out, int count) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < count) out[i] = x[i] + y[i];
}

struct DeviceSpan {
    float* data;
    int count;
};

// A device pointer inside a struct: fine on a GPU; the emulator translates pointer arguments only.
__global__ void fill_span_kernel(DeviceSpan span, float value) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < span.count) span.data[i] = value;
}

// values[b] = values[b - 1] + 1 (values[0] = 1): needs block b - 1 to have run first, which
// nothing on a GPU promises.
__global__ void chain_from_previous_block_kernel(int* values) {
    const unsigned b = blockIdx.x;
    values[b] = b == 0 ? 1 : values[b - 1] + 1;
}

// The mirror image (values[last] = 1, values[b] = values[b + 1] + 1): the order that running
// blocks backwards, as the emulator once did, would have hidden.
__global__ void chain_from_next_block_kernel(int* values) {
    const unsigned b = blockIdx.x, last = gridDim.x - 1;
    values[b] = b == last ? 1 : values[b + 1] + 1;
}

// The same dependency between the threads of one block, without __syncthreads.
__global__ void chain_from_previous_thread_kernel(int* values) {
    const unsigned t = threadIdx.x;
    values[t] = t == 0 ? 1 : values[t - 1] + 1;
}

// What the chains compute, without depending on any order.
__global__ void number_blocks_kernel(int* values) { values[blockIdx.x] = static_cast<int>(blockIdx.x) + 1; }
__global__ void number_blocks_from_end_kernel(int* values) {
    values[blockIdx.x] = static_cast<int>(gridDim.x - blockIdx.x);
}
__global__ void number_threads_kernel(int* values) { values[threadIdx.x] = static_cast<int>(threadIdx.x) + 1; }

// Which host thread ran each block (slowly, so that other workers get blocks), and a count of all threads.
__global__ void note_worker_kernel(unsigned long long* worker_of_block, float* threads_run) {
    if (threadIdx.x == 0) {
        worker_of_block[blockIdx.x] = std::hash<std::thread::id>{}(std::this_thread::get_id());
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    atomicAdd(threads_run, 1.0f);
}

constexpr int kFloats = 64;  // 256 bytes: the granule device memory comes in

void launch_fill(float* out, int count, cudaStream_t stream = nullptr) {
    MIRRORLAB_LAUNCH(fill_kernel, 1, 256, stream)(out, count, 2.0f);
    require(cudaGetLastError() == cudaSuccess, "the fill launch");
}

// --- mistakes CUDA reports with an error -----------------------------------------------------

void copy_past_end(bool right) {
    float* device = device_buffer<float>(kFloats);
    std::vector<float> host(kFloats + 1, 1.0f);
    const std::size_t floats = right ? kFloats : kFloats + 1;
    print_result(cudaMemcpyAsync(device, host.data(), floats * sizeof(float), cudaMemcpyHostToDevice, nullptr));
}

void copy_to_host_past_end(bool right) {
    float* device = device_buffer<float>(kFloats);
    std::vector<float> host(kFloats + 1);
    const std::size_t floats = right ? kFloats : kFloats + 1;
    print_result(cudaMemcpyAsync(host.data(), device, floats * sizeof(float), cudaMemcpyDeviceToHost, nullptr));
}

void memset_past_end(bool right) {
    float* device = device_buffer<float>(kFloats);
    print_result(cudaMemsetAsync(device, 0, (right ? kFloats : kFloats + 1) * sizeof(float), nullptr));
}

void peer_copy_past_end(bool right) {
    float* on_gpu0 = device_buffer<float>(kFloats);
    require(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    float* on_gpu1 = device_buffer<float>(kFloats);
    const std::size_t floats = right ? kFloats : kFloats + 1;
    print_result(cudaMemcpyPeerAsync(on_gpu1, 1, on_gpu0, 0, floats * sizeof(float), nullptr));
}

// "Host to device" into host memory.
void copy_of_wrong_kind(bool right) {
    float* device = device_buffer<float>(kFloats);
    std::vector<float> source(kFloats, 1.0f), destination(kFloats);
    void* target = right ? static_cast<void*>(device) : static_cast<void*>(destination.data());
    print_result(cudaMemcpyAsync(target, source.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice, nullptr));
}

void overlapping_copy(bool right) {
    float* device = device_buffer<float>(4 * kFloats);
    // From the first quarter to the second: one quarter fits, two overlap the source.
    const std::size_t floats = right ? kFloats : 2 * kFloats;
    print_result(cudaMemcpyAsync(device + kFloats, device, floats * sizeof(float), cudaMemcpyDeviceToDevice, nullptr));
}

void free_inside_allocation(bool right) {
    float* device = device_buffer<float>(4 * kFloats);
    print_result(cudaFree(right ? device : device + kFloats));
}

void free_twice(bool right) {
    float* device = device_buffer<float>(kFloats);
    cudaError_t result = cudaFree(device);
    if (!right) result = cudaFree(device);
    print_result(result);
}

void kernel_gets_host_pointer(bool right) {
    std::vector<float> host(kFloats);
    float* device = device_buffer<float>(kFloats);
    MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats, nullptr)(right ? device : host.data(), kFloats, 1.0f);
    print_result(cudaGetLastError());
}

void kernel_gets_freed_pointer(bool right) {
    float* device = device_buffer<float>(kFloats);
    if (!right) require(cudaFree(device) == cudaSuccess, "cudaFree");
    MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats, nullptr)(device, kFloats, 1.0f);
    print_result(cudaGetLastError());
}

void kernel_gets_other_gpu_memory(bool right) {
    require(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    float* on_gpu1 = device_buffer<float>(kFloats);
    if (!right) require(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats, nullptr)(on_gpu1, kFloats, 1.0f);
    print_result(cudaGetLastError());
}

void launch_too_many_threads(bool right) {
    float* device = device_buffer<float>(2048);
    MIRRORLAB_LAUNCH(fill_kernel, right ? 8 : 1, right ? 256 : 2048, nullptr)(device, 2048, 1.0f);
    print_result(cudaGetLastError());
}

void launch_on_other_gpu_stream(bool right) {
    require(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    float* on_gpu1 = device_buffer<float>(kFloats);
    cudaStream_t gpu1_stream = new_stream();
    if (!right) require(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats, gpu1_stream)(on_gpu1, kFloats, 1.0f);
    print_result(cudaGetLastError());
}

void allocate_past_memory_limit(bool right) {
    std::size_t free_bytes = 0, total_bytes = 0;
    require(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess, "cudaMemGetInfo");
    void* pointer = nullptr;
    print_result(cudaMalloc(&pointer, right ? std::size_t{1} << 20 : free_bytes + 1));
}

void sgemm_past_end(bool right) {
    // C = A B with 8 x 8 matrices; C is one float short in the wrong program.
    float* a = device_buffer<float>(64);
    float* b = device_buffer<float>(64);
    float* c = device_buffer<float>(right ? 64 : 63);
    cublasHandle_t handle = nullptr;
    require(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, a, 8, b, 8, &zero, c, 8);
    print_result(cublasGetStatusString(status));
    cublasDestroy(handle);
}

void cublas_handle_of_other_gpu(bool right) {
    cublasHandle_t handle = nullptr;
    require(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasCreate");  // on GPU:0
    float* c = device_buffer<float>(64);
    require(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    if (right) require(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 0, &one, c, 8, c, 8, &zero, c, 8);
    print_result(cublasGetStatusString(status));
    cublasDestroy(handle);
}

void all_reduce_missing_rank(bool right) {
    ncclComm_t comms[2] = {nullptr, nullptr};
    const int devices[2] = {0, 1};
    require(ncclCommInitAll(comms, 2, devices) == ncclSuccess, "ncclCommInitAll");
    float* buffers[2] = {};
    for (int rank = 0; rank < 2; ++rank) {
        require(cudaSetDevice(rank) == cudaSuccess, "cudaSetDevice");
        buffers[rank] = device_buffer<float>(kFloats);
        require(cudaMemsetAsync(buffers[rank], 0, kFloats * sizeof(float), nullptr) == cudaSuccess, "cudaMemsetAsync");
        require(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    }
    // One thread drives both GPUs: it must group the ranks' calls; the wrong program calls rank 0 alone.
    ncclResult_t result = ncclSuccess;
    if (right) require(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
    for (int rank = 0; rank < (right ? 2 : 1); ++rank) {
        require(cudaSetDevice(rank) == cudaSuccess, "cudaSetDevice");
        result = ncclAllReduce(buffers[rank], buffers[rank], kFloats, ncclFloat, ncclSum, comms[rank], nullptr);
    }
    if (right) result = ncclGroupEnd();
    print_result(ncclGetErrorString(result));
    for (ncclComm_t comm : comms) ncclCommDestroy(comm);
}

// --- mistakes a GPU would not report: the program must die naming them ------------------------

// A peer that never comes (injected): waiting for the stream would hang a GPU for ever. Done right,
// the host polls, sees the collective not ready, aborts the communicators, and the stream is free.
void wait_on_stalled_all_reduce(bool right) {
    setenv("MIRRORLAB_CUDA_EMULATION_FAIL", "ncclStall", 1);
    ncclComm_t comms[2] = {nullptr, nullptr};
    const int devices[2] = {0, 1};
    require(ncclCommInitAll(comms, 2, devices) == ncclSuccess, "ncclCommInitAll");
    float* buffers[2] = {};
    require(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
    for (int rank = 0; rank < 2; ++rank) {
        require(cudaSetDevice(rank) == cudaSuccess, "cudaSetDevice");
        buffers[rank] = device_buffer<float>(kFloats);
        require(ncclAllReduce(buffers[rank], buffers[rank], kFloats, ncclFloat, ncclSum, comms[rank], nullptr) ==
                    ncclSuccess,
                "ncclAllReduce");
    }
    require(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd");
    require(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice");
    if (!right) {
        cudaStreamSynchronize(nullptr);  // never returns on a GPU
        print_result("returned");
        return;
    }
    const cudaError_t before = cudaStreamQuery(nullptr);
    ncclResult_t async = ncclInternalError;
    require(ncclCommGetAsyncError(comms[0], &async) == ncclSuccess, "ncclCommGetAsyncError");
    for (ncclComm_t comm : comms) require(ncclCommAbort(comm) == ncclSuccess, "ncclCommAbort");
    const cudaError_t after = cudaStreamQuery(nullptr);
    print_result((std::string(cudaGetErrorName(before)) + " " + ncclGetErrorString(async) + " " + cudaGetErrorName(after)).c_str());
}

void host_reads_device_pointer(bool right) {
    float* device = device_buffer<float>(kFloats);
    launch_fill(device, kFloats);
    float value = 0.0f;
    if (right) {
        value = download(device, 1).front();
    } else {
        value = *static_cast<volatile float*>(device);
    }
    print_result(value);
}

void kernel_writes_past_end(bool right) {
    float* device = device_buffer<float>(kFloats);
    // One thread more than the buffer has floats.
    if (right) {
        MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats + 1, nullptr)(device, kFloats, 2.0f);
    } else {
        MIRRORLAB_LAUNCH(fill_every_thread_kernel, 1, kFloats + 1, nullptr)(device, 2.0f);
    }
    print_result(download(device, kFloats).back());
}

void kernel_reads_past_end(bool right) {
    float* in = device_buffer<float>(kFloats);
    float* out = device_buffer<float>(kFloats);
    launch_fill(in, kFloats);
    // out[i] = in[i + 1]: the last thread reads one past the end unless the count leaves it out.
    MIRRORLAB_LAUNCH(shifted_copy_kernel, 1, kFloats, nullptr)(in, out, right ? kFloats - 1 : kFloats, 1);
    print_result(download(out, 1).front());
}

void kernel_reads_before_start(bool right) {
    constexpr int kPageFloats = 1024;  // a whole page: an underrun faults at its first byte
    float* in = device_buffer<float>(kPageFloats);
    float* out = device_buffer<float>(kPageFloats);
    launch_fill(in, 256);
    MIRRORLAB_LAUNCH(shifted_copy_kernel, 1, 256, nullptr)(right ? in + 1 : in, out, 256, -1);
    print_result(download(out, 1).front());
}

// A wild index that reaches past the page before the buffer into one freed earlier.
void kernel_reaches_freed_buffer(bool right) {
    constexpr int kPageFloats = 1024;
    require(cudaFree(device_buffer<float>(kPageFloats)) == cudaSuccess, "cudaFree");
    float* in = device_buffer<float>(kPageFloats);  // its pages follow the freed buffer's and the page between
    float* out = device_buffer<float>(kPageFloats);
    launch_fill(in, 256);
    MIRRORLAB_LAUNCH(shifted_copy_kernel, 1, 1, nullptr)(in, out, 1, right ? 0 : -(kPageFloats + 100));
    print_result(download(out, 1).front());
}

// Not a mistake on a GPU, but one the emulator cannot run: it must say why instead of crashing mutely.
void kernel_gets_struct_with_device_pointer(bool right) {
    float* device = device_buffer<float>(kFloats);
    if (right) {
        MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats, nullptr)(device, kFloats, 2.0f);
    } else {
        MIRRORLAB_LAUNCH(fill_span_kernel, 1, kFloats, nullptr)(DeviceSpan{device, kFloats}, 2.0f);
    }
    print_result(download(device, 1).front());
}

void read_before_wait(bool right) {
    cudaStream_t stream = new_stream();
    float* device = device_buffer<float>(kFloats);
    launch_fill(device, kFloats, stream);
    if (right) require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    // On the default stream, which knows nothing of `stream`'s queued fill.
    print_result(download(device, 1).front());
}

void kernel_reads_other_streams_output(bool right) {
    cudaStream_t producer = new_stream(), consumer = new_stream();
    float* a = device_buffer<float>(kFloats);
    float* b = device_buffer<float>(kFloats);
    launch_fill(a, kFloats, producer);
    if (right) require(cudaStreamSynchronize(producer) == cudaSuccess, "cudaStreamSynchronize");
    MIRRORLAB_LAUNCH(copy_kernel, 1, kFloats, consumer)(a, b, kFloats);
    require(cudaStreamSynchronize(consumer) == cudaSuccess, "cudaStreamSynchronize");
    print_result(download(b, 1).front());
}

// A write that may land before another stream has read the old contents.
void upload_over_other_streams_input(bool right) {
    cudaStream_t reader = new_stream(), writer = new_stream();
    float* a = device_buffer<float>(kFloats);
    float* b = device_buffer<float>(kFloats);
    launch_fill(a, kFloats);
    require(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    MIRRORLAB_LAUNCH(copy_kernel, 1, kFloats, reader)(a, b, kFloats);
    if (right) require(cudaStreamSynchronize(reader) == cudaSuccess, "cudaStreamSynchronize");
    const std::vector<float> zeros(kFloats, 0.0f);
    require(cudaMemcpyAsync(a, zeros.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice, writer) == cudaSuccess,
            "cudaMemcpyAsync to the device");
    require(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    print_result(download(b, 1).front());
}

// As in a ring all-reduce, one stream writes one half of a buffer while another copies a half out:
// fine for different halves (the right program), a race for the same one.
void copy_of_half_another_stream_writes(bool right) {
    cudaStream_t writer = new_stream(), reader = new_stream();
    float* buffer = device_buffer<float>(2 * kFloats);
    float* copy = device_buffer<float>(kFloats);
    launch_fill(buffer + kFloats, kFloats);
    require(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    launch_fill(buffer, kFloats, writer);  // the first half
    const float* half = right ? buffer + kFloats : buffer;
    require(cudaMemcpyAsync(copy, half, kFloats * sizeof(float), cudaMemcpyDeviceToDevice, reader) == cudaSuccess,
            "cudaMemcpyAsync on the device");
    require(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    print_result(download(copy, 1).front());
}

void free_while_peer_copy_queued(bool right) {
    float* on_gpu0 = device_buffer<float>(kFloats);
    launch_fill(on_gpu0, kFloats);
    require(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize");
    require(cudaSetDevice(1) == cudaSuccess, "cudaSetDevice(1)");
    float* on_gpu1 = device_buffer<float>(kFloats);
    cudaStream_t gpu1_stream = new_stream();
    require(cudaMemcpyPeerAsync(on_gpu1, 1, on_gpu0, 0, kFloats * sizeof(float), gpu1_stream) == cudaSuccess,
            "cudaMemcpyPeerAsync");
    if (right) require(cudaStreamSynchronize(gpu1_stream) == cudaSuccess, "cudaStreamSynchronize");
    require(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    print_result(cudaFree(on_gpu0));  // waits for GPU:0's work only
}

// Cross-stream order by an event (issue #21's all-reduce): the consumer waits for an event the
// producer records after its write. Recorded before the write, the event orders nothing.
void wait_for_event_recorded_too_early(bool right) {
    cudaStream_t producer = new_stream(), consumer = new_stream();
    cudaEvent_t written = nullptr;
    require(cudaEventCreateWithFlags(&written, cudaEventDisableTiming) == cudaSuccess, "cudaEventCreateWithFlags");
    float* a = device_buffer<float>(kFloats);
    float* b = device_buffer<float>(kFloats);
    if (!right) require(cudaEventRecord(written, producer) == cudaSuccess, "cudaEventRecord");
    launch_fill(a, kFloats, producer);
    if (right) require(cudaEventRecord(written, producer) == cudaSuccess, "cudaEventRecord");
    require(cudaStreamWaitEvent(consumer, written, 0) == cudaSuccess, "cudaStreamWaitEvent");
    MIRRORLAB_LAUNCH(copy_kernel, 1, kFloats, consumer)(a, b, kFloats);
    require(cudaStreamSynchronize(consumer) == cudaSuccess, "cudaStreamSynchronize");
    print_result(download(b, 1).front());
}

float* pinned_floats(std::size_t count) {
    void* pointer = nullptr;
    require(cudaHostAlloc(&pointer, count * sizeof(float), cudaHostAllocDefault) == cudaSuccess, "cudaHostAlloc");
    return static_cast<float*>(pointer);
}

// An upload from pinned memory is a DMA that runs later: the host must not change the bytes until
// the copy has run (the CUDA backend's upload ring waits for its stream first).
void pinned_upload_overwritten(bool right) {
    cudaStream_t stream = new_stream();
    float* host = pinned_floats(kFloats);
    float* device = device_buffer<float>(kFloats);
    std::fill(host, host + kFloats, 1.0f);
    require(cudaMemcpyAsync(device, host, kFloats * sizeof(float), cudaMemcpyHostToDevice, stream) == cudaSuccess,
            "cudaMemcpyAsync to the device");
    if (right) require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    std::fill(host, host + kFloats, 3.0f);  // the next batch
    require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    print_result(download(device, 1, stream).front());
    require(cudaFreeHost(host) == cudaSuccess, "cudaFreeHost");
}

// --- CUDA Graphs (stream capture) ---------------------------------------------------------------

cudaGraphExec_t instantiate(cudaGraph_t graph) {
    cudaGraphExec_t exec = nullptr;
    require(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "cudaGraphInstantiate");
    return exec;
}

std::size_t node_count(cudaGraph_t graph) {
    std::size_t count = 0;
    require(cudaGraphGetNodes(graph, nullptr, &count) == cudaSuccess, "cudaGraphGetNodes");
    return count;
}

void fill(float* out, float value, cudaStream_t stream) {
    MIRRORLAB_LAUNCH(fill_kernel, 1, kFloats, stream)(out, kFloats, value);
}

// A step captured once and replayed with new inputs written into the same pinned buffer: pinned
// input -> device -> a kernel (+1) -> pinned output. No mistake: the right program only.
void graph_replays_pinned_input(bool) {
    mirrorlab_emulation_reset_counters();
    cudaStream_t stream = new_stream();
    float* input = pinned_floats(kFloats);
    float* output = pinned_floats(kFloats);
    float* device = device_buffer<float>(kFloats);
    const std::size_t bytes = kFloats * sizeof(float);
    require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    require(cudaMemcpyAsync(device, input, bytes, cudaMemcpyHostToDevice, stream) == cudaSuccess, "the upload");
    MIRRORLAB_LAUNCH(accumulate_kernel, 1, kFloats, stream)(device, kFloats, 1.0f);
    require(cudaMemcpyAsync(output, device, bytes, cudaMemcpyDeviceToHost, stream) == cudaSuccess, "the download");
    cudaGraph_t graph = nullptr;
    require(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "cudaStreamEndCapture");
    const std::size_t nodes = node_count(graph);
    cudaGraphExec_t exec = instantiate(graph);
    require(cudaGraphDestroy(graph) == cudaSuccess, "cudaGraphDestroy");  // the exec keeps its own copy
    MirrorlabEmulationCounters before{};
    mirrorlab_emulation_counters(&before);
    std::string results;
    for (const float value : {10.0f, 20.0f}) {
        std::fill(input, input + kFloats, value);
        require(cudaGraphLaunch(exec, stream) == cudaSuccess, "cudaGraphLaunch");
        // The download has not run: its destination holds garbage until the stream is waited for.
        if (!std::isnan(output[0])) results += "early ";
        // Destroyed with a launch still queued: the launch runs all the same.
        if (value == 20.0f) require(cudaGraphExecDestroy(exec) == cudaSuccess, "cudaGraphExecDestroy");
        require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
        for (const float got : {output[0], output[kFloats - 1]}) results += std::to_string(static_cast<int>(got)) + " ";
    }
    MirrorlabEmulationCounters after{};
    mirrorlab_emulation_counters(&after);
    std::printf("result: %snodes=%zu captured=%llu launches=%llu launched=%llu kernels=%llu copies=%llu\n",
                results.c_str(), nodes, static_cast<unsigned long long>(after.captured_nodes),
                static_cast<unsigned long long>(after.graph_launches),
                static_cast<unsigned long long>(after.graph_nodes_launched),
                static_cast<unsigned long long>(after.kernel_launches - before.kernel_launches),
                static_cast<unsigned long long>(after.copies - before.copies));
    require(cudaFreeHost(input) == cudaSuccess && cudaFreeHost(output) == cudaSuccess, "cudaFreeHost");
}

// Two streams in one capture: B joins by waiting for an event A records, and must be joined back
// by A waiting for an event B records after its last work. The wrong program records that event
// before B's last work.
void graph_fork_join(bool right) {
    cudaStream_t a = new_stream(), b = new_stream();
    cudaEvent_t forked = nullptr, joined = nullptr;
    require(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming) == cudaSuccess, "cudaEventCreateWithFlags");
    require(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming) == cudaSuccess, "cudaEventCreateWithFlags");
    float* x = device_buffer<float>(kFloats);
    float* y = device_buffer<float>(kFloats);
    float* z = device_buffer<float>(kFloats);
    float* sum = device_buffer<float>(kFloats);
    require(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    fill(x, 2.0f, a);
    require(cudaEventRecord(forked, a) == cudaSuccess, "cudaEventRecord");
    require(cudaStreamWaitEvent(b, forked, 0) == cudaSuccess, "cudaStreamWaitEvent");
    fill(y, 3.0f, b);
    if (!right) require(cudaEventRecord(joined, b) == cudaSuccess, "cudaEventRecord");
    fill(z, 4.0f, b);
    if (right) require(cudaEventRecord(joined, b) == cudaSuccess, "cudaEventRecord");
    require(cudaStreamWaitEvent(a, joined, 0) == cudaSuccess, "cudaStreamWaitEvent");
    MIRRORLAB_LAUNCH(add_kernel, 1, kFloats, a)(x, y, sum, kFloats);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(a, &graph);
    if (ended != cudaSuccess) {
        std::printf("result: %s graph=%s\n", cudaGetErrorName(ended), graph == nullptr ? "null" : "made");
        return;
    }
    cudaGraphExec_t exec = instantiate(graph);
    require(cudaGraphLaunch(exec, a) == cudaSuccess, "cudaGraphLaunch");
    require(cudaStreamSynchronize(a) == cudaSuccess, "cudaStreamSynchronize");
    std::printf("result: cudaSuccess nodes=%zu sum=%g z=%g\n", node_count(graph),
                static_cast<double>(download(sum, 1, a).front()), static_cast<double>(download(z, 1, a).front()));
}

// Inside a capture, as outside: B's write and A's read of one buffer need an event between them.
void graph_branch_race(bool right) {
    cudaStream_t a = new_stream(), b = new_stream();
    cudaEvent_t forked = nullptr, written = nullptr;
    require(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming) == cudaSuccess, "cudaEventCreateWithFlags");
    require(cudaEventCreateWithFlags(&written, cudaEventDisableTiming) == cudaSuccess, "cudaEventCreateWithFlags");
    float* x = device_buffer<float>(kFloats);
    float* y = device_buffer<float>(kFloats);
    require(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    require(cudaEventRecord(forked, a) == cudaSuccess, "cudaEventRecord");
    require(cudaStreamWaitEvent(b, forked, 0) == cudaSuccess, "cudaStreamWaitEvent");
    fill(x, 2.0f, b);
    require(cudaEventRecord(written, b) == cudaSuccess, "cudaEventRecord");
    if (right) require(cudaStreamWaitEvent(a, written, 0) == cudaSuccess, "cudaStreamWaitEvent");
    MIRRORLAB_LAUNCH(copy_kernel, 1, kFloats, a)(x, y, kFloats);
    if (!right) require(cudaStreamWaitEvent(a, written, 0) == cudaSuccess, "cudaStreamWaitEvent");
    cudaGraph_t graph = nullptr;
    require(cudaStreamEndCapture(a, &graph) == cudaSuccess, "cudaStreamEndCapture");
    require(cudaGraphLaunch(instantiate(graph), a) == cudaSuccess, "cudaGraphLaunch");
    require(cudaStreamSynchronize(a) == cudaSuccess, "cudaStreamSynchronize");
    print_result(download(y, 1, a).front());
}

// A graph's work is timed by event record nodes (cudaEventRecordExternal), which the launch
// reaches; an event recorded plainly in a capture only orders the capture and is never reached.
void graph_event_timing(bool right) {
    cudaStream_t stream = new_stream();
    cudaEvent_t start = nullptr, end = nullptr;
    require(cudaEventCreateWithFlags(&start, cudaEventDefault) == cudaSuccess, "cudaEventCreateWithFlags");
    require(cudaEventCreateWithFlags(&end, cudaEventDefault) == cudaSuccess, "cudaEventCreateWithFlags");
    float* device = device_buffer<float>(kFloats);
    const unsigned flags = right ? cudaEventRecordExternal : cudaEventRecordDefault;
    require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    require(cudaEventRecordWithFlags(start, stream, flags) == cudaSuccess, "cudaEventRecordWithFlags");
    fill(device, 2.0f, stream);
    require(cudaEventRecordWithFlags(end, stream, flags) == cudaSuccess, "cudaEventRecordWithFlags");
    cudaGraph_t graph = nullptr;
    require(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "cudaStreamEndCapture");
    require(cudaGraphLaunch(instantiate(graph), stream) == cudaSuccess, "cudaGraphLaunch");
    require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    float milliseconds = -1.0f;
    const cudaError_t timed = cudaEventElapsedTime(&milliseconds, start, end);
    if (timed != cudaSuccess) {
        print_result(timed);
        return;
    }
    std::printf("result: cudaSuccess nodes=%zu %s\n", node_count(graph),
                milliseconds >= 0.0f ? "elapsed>=0" : "elapsed<0");
}

// Waiting for the stream inside its capture: refused, and the capture is invalidated; the stream
// works as usual once the capture has ended. The right program waits after the capture.
void synchronize_during_capture(bool right) {
    cudaStream_t stream = new_stream();
    float* device = device_buffer<float>(kFloats);
    require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    fill(device, 2.0f, stream);
    cudaError_t synchronized = cudaSuccess;
    if (!right) synchronized = cudaStreamSynchronize(stream);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    require(cudaStreamIsCapturing(stream, &status) == cudaSuccess, "cudaStreamIsCapturing");
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (right) synchronized = cudaStreamSynchronize(stream);
    float* after = device_buffer<float>(kFloats);
    (void)cudaGetLastError();  // the errors above, as CUDA keeps them
    launch_fill(after, kFloats, stream);
    require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize after the capture");
    std::printf("result: %s status=%d %s graph=%s after=%g\n", cudaGetErrorName(synchronized), static_cast<int>(status),
                cudaGetErrorName(ended), graph == nullptr ? "null" : "made",
                static_cast<double>(download(after, 1, stream).front()));
}

// A copy to pageable host memory cannot be captured (it completes before returning); pinned can.
void pageable_copy_during_capture(bool right) {
    cudaStream_t stream = new_stream();
    float* device = device_buffer<float>(kFloats);
    float* pinned = pinned_floats(kFloats);
    std::vector<float> pageable(kFloats);
    float* host = right ? pinned : pageable.data();
    require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    fill(device, 2.0f, stream);
    const cudaError_t copied = cudaMemcpyAsync(host, device, kFloats * sizeof(float), cudaMemcpyDeviceToHost, stream);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (ended == cudaSuccess) {
        require(cudaGraphLaunch(instantiate(graph), stream) == cudaSuccess, "cudaGraphLaunch");
        require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    }
    std::printf("result: %s %s host=%g\n", cudaGetErrorName(copied), cudaGetErrorName(ended),
                static_cast<double>(host[0]));
}

// cudaMalloc may wait for the device: a step captured into a graph allocates from its arenas only.
void malloc_during_capture(bool right) {
    cudaStream_t stream = new_stream();
    void* buffer = nullptr;
    if (right) require(cudaMalloc(&buffer, kFloats * sizeof(float)) == cudaSuccess, "cudaMalloc");
    require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    const cudaError_t allocated = right ? cudaSuccess : cudaMalloc(&buffer, kFloats * sizeof(float));
    if (buffer != nullptr) fill(static_cast<float*>(buffer), 2.0f, stream);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    std::printf("result: %s %s\n", cudaGetErrorName(allocated), cudaGetErrorName(ended));
}

// NCCL calls are not emulated in a capture: refused (the right program all-reduces outside it).
void all_reduce_during_capture(bool right) {
    ncclComm_t comm = nullptr;
    const int devices[1] = {0};
    require(ncclCommInitAll(&comm, 1, devices) == ncclSuccess, "ncclCommInitAll");
    cudaStream_t stream = new_stream();
    float* buffer = device_buffer<float>(kFloats);
    if (!right) require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture");
    print_result(ncclGetErrorString(ncclAllReduce(buffer, buffer, kFloats, ncclFloat, ncclSum, comm, stream)));
    ncclCommDestroy(comm);
}

// A launched graph's upload reads the pinned bytes when it runs, like any queued upload: the host
// must wait before writing the next input.
void graph_pinned_input_overwritten(bool right) {
    cudaStream_t stream = new_stream();
    float* input = pinned_floats(kFloats);
    float* device = device_buffer<float>(kFloats);
    require(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "cudaStreamBeginCapture");
    require(cudaMemcpyAsync(device, input, kFloats * sizeof(float), cudaMemcpyHostToDevice, stream) == cudaSuccess,
            "the upload");
    cudaGraph_t graph = nullptr;
    require(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "cudaStreamEndCapture");
    cudaGraphExec_t exec = instantiate(graph);
    std::fill(input, input + kFloats, 1.0f);
    require(cudaGraphLaunch(exec, stream) == cudaSuccess, "cudaGraphLaunch");
    if (right) require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    std::fill(input, input + kFloats, 3.0f);  // the next step's input
    require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    print_result(download(device, 1, stream).front());
    require(cudaFreeHost(input) == cudaSuccess, "cudaFreeHost");
}

// --- mistakes only the results show ---------------------------------------------------------------

// A copy to pinned memory returns at once; the bytes are there once the stream is waited for.
void pinned_read_before_wait(bool right) {
    cudaStream_t stream = new_stream();
    float* device = device_buffer<float>(kFloats);
    float* host = pinned_floats(kFloats);
    launch_fill(device, kFloats, stream);
    require(cudaMemcpyAsync(host, device, kFloats * sizeof(float), cudaMemcpyDeviceToHost, stream) == cudaSuccess,
            "cudaMemcpyAsync to pinned memory");
    if (right) require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    print_result(host[0]);
    require(cudaFreeHost(host) == cudaSuccess, "cudaFreeHost");
}

void event_time_before_reached(bool right) {
    cudaStream_t stream = new_stream();
    cudaEvent_t start = nullptr, end = nullptr;
    require(cudaEventCreateWithFlags(&start, cudaEventDefault) == cudaSuccess, "cudaEventCreateWithFlags");
    require(cudaEventCreateWithFlags(&end, cudaEventDefault) == cudaSuccess, "cudaEventCreateWithFlags");
    float* device = device_buffer<float>(kFloats);
    require(cudaEventRecord(start, stream) == cudaSuccess, "cudaEventRecord");
    launch_fill(device, kFloats, stream);
    require(cudaEventRecord(end, stream) == cudaSuccess, "cudaEventRecord");
    if (right) require(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
    float milliseconds = -1.0f;
    print_result(cudaEventElapsedTime(&milliseconds, start, end));
}

void accumulate_into_fresh_memory(bool right) {
    float* device = device_buffer<float>(kFloats);
    if (right) require(cudaMemsetAsync(device, 0, kFloats * sizeof(float), nullptr) == cudaSuccess, "cudaMemsetAsync");
    MIRRORLAB_LAUNCH(accumulate_kernel, 1, kFloats, nullptr)(device, kFloats, 1.0f);
    print_result(download(device, 1).front());
}

// How many entries hold what an in-order run gives (1, 2, ... or ..., 2, 1), and a checksum of all.
void print_chain(const std::vector<int>& values, bool ascending) {
    int in_order = 0;
    unsigned long long checksum = 1469598103934665603ull;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const int expected = ascending ? static_cast<int>(i) + 1 : static_cast<int>(values.size() - i);
        if (values[i] == expected) ++in_order;
        checksum = (checksum ^ static_cast<unsigned>(values[i])) * 1099511628211ull;
    }
    std::printf("result: %d of %zu in order (checksum %llx)\n", in_order, values.size(), checksum);
}

constexpr int kChainLength = 64;

void block_reads_previous_block(bool right) {
    int* values = device_buffer<int>(kChainLength);
    if (right) {
        MIRRORLAB_LAUNCH(number_blocks_kernel, kChainLength, 1, nullptr)(values);
    } else {
        MIRRORLAB_LAUNCH(chain_from_previous_block_kernel, kChainLength, 1, nullptr)(values);
    }
    print_chain(download(values, kChainLength), true);
}

void block_reads_next_block(bool right) {
    int* values = device_buffer<int>(kChainLength);
    if (right) {
        MIRRORLAB_LAUNCH(number_blocks_from_end_kernel, kChainLength, 1, nullptr)(values);
    } else {
        MIRRORLAB_LAUNCH(chain_from_next_block_kernel, kChainLength, 1, nullptr)(values);
    }
    print_chain(download(values, kChainLength), false);
}

void thread_reads_previous_thread(bool right) {
    int* values = device_buffer<int>(256);
    if (right) {
        MIRRORLAB_LAUNCH(number_threads_kernel, 1, 256, nullptr)(values);
    } else {
        MIRRORLAB_LAUNCH(chain_from_previous_thread_kernel, 1, 256, nullptr)(values);
    }
    print_chain(download(values, 256), true);
}

// --- the emulator's own machinery -------------------------------------------------------------------

// With MIRRORLAB_CUDA_EMULATION_WORKERS, how many host threads ran the blocks, and whether the
// atomics still added every thread's 1.
void blocks_on_workers(bool) {
    constexpr int kBlocks = 32, kThreads = 32;
    auto* worker_of_block = device_buffer<unsigned long long>(kBlocks);
    float* threads_run = device_buffer<float>(1);
    require(cudaMemsetAsync(threads_run, 0, sizeof(float), nullptr) == cudaSuccess, "cudaMemsetAsync");
    MIRRORLAB_LAUNCH(note_worker_kernel, kBlocks, kThreads, nullptr)(worker_of_block, threads_run);
    const std::vector<unsigned long long> workers = download(worker_of_block, kBlocks);
    const std::set<unsigned long long> distinct(workers.begin(), workers.end());
    const float threads = download(threads_run, 1).front();
    std::printf("result: %zu workers ran %g threads\n", distinct.size(), static_cast<double>(threads));
}

std::size_t mapping_count() {
    std::ifstream maps("/proc/self/maps");
    std::size_t lines = 0;
    for (std::string line; std::getline(maps, line);) ++lines;
    return lines;
}

// Freed device memory stays inaccessible; that must not cost a memory mapping per freed buffer
// (a process may hold only about 65,000).
void allocation_churn(bool) {
    float* keep = device_buffer<float>(kFloats);  // live neighbours, as in a real program
    const std::size_t before = mapping_count();
    for (int i = 0; i < 20000; ++i) {
        float* scratch = device_buffer<float>(1000);
        launch_fill(scratch, 256);
        require(cudaFree(scratch) == cudaSuccess, "cudaFree");
    }
    const std::size_t after = mapping_count();
    require(cudaFree(keep) == cudaSuccess, "cudaFree");
    std::printf("result: %zu more mappings\n", after > before ? after - before : 0);
}

// A crash that is not the emulator's: its SIGSEGV handler must leave it to the default action.
void host_null_dereference(bool right) {
    float* device = device_buffer<float>(kFloats);  // the emulator (and its handler) is running
    launch_fill(device, kFloats);
    const std::vector<float> host = download(device, 1);
    const volatile float* value = right ? host.data() : nullptr;
    print_result(*value);
}

struct Program {
    const char* name;
    void (*run)(bool right);
};

constexpr Program kPrograms[] = {
    {"copy_past_end", copy_past_end},
    {"copy_to_host_past_end", copy_to_host_past_end},
    {"memset_past_end", memset_past_end},
    {"peer_copy_past_end", peer_copy_past_end},
    {"copy_of_wrong_kind", copy_of_wrong_kind},
    {"overlapping_copy", overlapping_copy},
    {"free_inside_allocation", free_inside_allocation},
    {"free_twice", free_twice},
    {"kernel_gets_host_pointer", kernel_gets_host_pointer},
    {"kernel_gets_freed_pointer", kernel_gets_freed_pointer},
    {"kernel_gets_other_gpu_memory", kernel_gets_other_gpu_memory},
    {"launch_too_many_threads", launch_too_many_threads},
    {"launch_on_other_gpu_stream", launch_on_other_gpu_stream},
    {"allocate_past_memory_limit", allocate_past_memory_limit},
    {"sgemm_past_end", sgemm_past_end},
    {"cublas_handle_of_other_gpu", cublas_handle_of_other_gpu},
    {"all_reduce_missing_rank", all_reduce_missing_rank},
    {"host_reads_device_pointer", host_reads_device_pointer},
    {"kernel_writes_past_end", kernel_writes_past_end},
    {"kernel_reads_past_end", kernel_reads_past_end},
    {"kernel_reads_before_start", kernel_reads_before_start},
    {"kernel_reaches_freed_buffer", kernel_reaches_freed_buffer},
    {"kernel_gets_struct_with_device_pointer", kernel_gets_struct_with_device_pointer},
    {"read_before_wait", read_before_wait},
    {"kernel_reads_other_streams_output", kernel_reads_other_streams_output},
    {"upload_over_other_streams_input", upload_over_other_streams_input},
    {"copy_of_half_another_stream_writes", copy_of_half_another_stream_writes},
    {"free_while_peer_copy_queued", free_while_peer_copy_queued},
    {"wait_for_event_recorded_too_early", wait_for_event_recorded_too_early},
    {"pinned_upload_overwritten", pinned_upload_overwritten},
    {"pinned_read_before_wait", pinned_read_before_wait},
    {"event_time_before_reached", event_time_before_reached},
    {"accumulate_into_fresh_memory", accumulate_into_fresh_memory},
    {"block_reads_previous_block", block_reads_previous_block},
    {"block_reads_next_block", block_reads_next_block},
    {"thread_reads_previous_thread", thread_reads_previous_thread},
    {"blocks_on_workers", blocks_on_workers},
    {"allocation_churn", allocation_churn},
    {"host_null_dereference", host_null_dereference},
    {"graph_replays_pinned_input", graph_replays_pinned_input},
    {"graph_fork_join", graph_fork_join},
    {"graph_branch_race", graph_branch_race},
    {"graph_event_timing", graph_event_timing},
    {"synchronize_during_capture", synchronize_during_capture},
    {"pageable_copy_during_capture", pageable_copy_during_capture},
    {"all_reduce_during_capture", all_reduce_during_capture},
    {"malloc_during_capture", malloc_during_capture},
    {"graph_pinned_input_overwritten", graph_pinned_input_overwritten},
    {"wait_on_stalled_all_reduce", wait_on_stalled_all_reduce},
};

int run_program(std::string_view name, std::string_view variant) {
    // The crashes are expected: no core files for them.
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    for (const Program& program : kPrograms) {
        if (name != program.name) continue;
        program.run(variant == "right");
        return 0;
    }
    std::fprintf(stderr, "test program: no program named %.*s\n", static_cast<int>(name.size()), name.data());
    return 2;
}

// ---------------------------------------------------------------------------------------------
// The parent side.

QString self_path;

struct Run {
    bool finished = false;
    bool crashed = false;
    int exit_code = -1;
    QString out, err;

    QString result() const {  // the text after the last "result: "
        const qsizetype at = out.lastIndexOf(QStringLiteral("result: "));
        return at < 0 ? QString() : out.mid(at + 8).trimmed();
    }
    QString describe() const {
        return QStringLiteral("%1 %2\n--- stdout ---\n%3\n--- stderr ---\n%4")
            .arg(crashed ? QStringLiteral("crashed, signal") : QStringLiteral("exit"))
            .arg(exit_code)
            .arg(out.right(2000), err.right(2000));
    }
    // Any rule reported at all ("CUDA emulation: [rule] ...").
    bool reported() const { return err.contains(QStringLiteral("CUDA emulation: [")); }
    bool reported(const QString& rule) const { return err.contains(QStringLiteral("CUDA emulation: [%1]").arg(rule)); }
};

Run run_child(const QString& program, const QString& variant, const QStringList& settings = {}) {
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    // The emulator's defaults (two GPUs of 4 GiB), whatever the caller's environment says.
    for (const char* name : {"MIRRORLAB_CUDA_EMULATION_GPUS", "MIRRORLAB_CUDA_EMULATION_MEMORY_MIB",
                             "MIRRORLAB_CUDA_EMULATION_OTHER_MIB", "MIRRORLAB_CUDA_EMULATION_DRIVER",
                             "MIRRORLAB_CUDA_EMULATION_FAIL", "MIRRORLAB_CUDA_EMULATION_WORKERS"}) {
        environment.remove(QString::fromLatin1(name));
    }
    for (const QString& setting : settings) {
        environment.insert(setting.section(QLatin1Char('='), 0, 0), setting.section(QLatin1Char('='), 1));
    }
    process.setProcessEnvironment(environment);
    process.start(self_path, {QStringLiteral("--case"), program, variant});
    Run run;
    if (!process.waitForStarted(60000)) return run;
    run.finished = process.waitForFinished(120000);
    if (!run.finished) process.kill();
    run.crashed = process.exitStatus() == QProcess::CrashExit;
    run.exit_code = process.exitCode();  // the signal's number for a crash (Qt on Unix)
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err = QString::fromUtf8(process.readAllStandardError());
    return run;
}

// The same program done right: runs to the end, reports nothing, prints `expected`.
void check_right_program(const QString& program, const QString& expected) {
    const Run right = run_child(program, QStringLiteral("right"));
    QVERIFY2(right.finished && !right.crashed && right.exit_code == 0, qPrintable(right.describe()));
    QVERIFY2(!right.reported(), qPrintable(right.describe()));
    QVERIFY2(right.result().startsWith(expected), qPrintable(right.describe()));
}

}  // namespace

class TestCudaEmulator : public QObject {
    Q_OBJECT

private slots:
    // Mistakes CUDA answers with an error: the emulator returns that error and names the rule.
    void mistakeReturnsErrorAndNamesRule_data() {
        QTest::addColumn<QString>("program");
        QTest::addColumn<QString>("rule");
        QTest::addColumn<QString>("error");  // what the wrong program's call returns
        QTest::addColumn<QString>("success");
        const QString invalid = QStringLiteral("cudaErrorInvalidValue"), ok = QStringLiteral("cudaSuccess");
        const QString copy_rule = QStringLiteral("copy-outside-allocation");
        QTest::newRow("copy to the device one float past the end") << "copy_past_end" << copy_rule << invalid << ok;
        QTest::newRow("copy to the host one float past the end") << "copy_to_host_past_end" << copy_rule << invalid << ok;
        QTest::newRow("memset one float past the end") << "memset_past_end" << copy_rule << invalid << ok;
        QTest::newRow("peer copy one float past the end") << "peer_copy_past_end" << copy_rule << invalid << ok;
        QTest::newRow("host-to-device copy into host memory")
            << "copy_of_wrong_kind" << QStringLiteral("copy-kind-mismatch") << invalid << ok;
        QTest::newRow("overlapping device copy")
            << "overlapping_copy" << QStringLiteral("overlapping-copy") << invalid << ok;
        QTest::newRow("cudaFree inside an allocation")
            << "free_inside_allocation" << QStringLiteral("free-unknown-pointer") << invalid << ok;
        QTest::newRow("cudaFree twice") << "free_twice" << QStringLiteral("free-unknown-pointer") << invalid << ok;
        const QString illegal = QStringLiteral("cudaErrorIllegalAddress");
        const QString pointer_rule = QStringLiteral("kernel-pointer");
        QTest::newRow("kernel gets a host pointer") << "kernel_gets_host_pointer" << pointer_rule << illegal << ok;
        QTest::newRow("kernel gets a freed buffer") << "kernel_gets_freed_pointer" << pointer_rule << illegal << ok;
        QTest::newRow("kernel gets another GPU's memory")
            << "kernel_gets_other_gpu_memory" << pointer_rule << illegal << ok;
        QTest::newRow("launch of 2048 threads a block")
            << "launch_too_many_threads" << QStringLiteral("launch-configuration")
            << QStringLiteral("cudaErrorInvalidConfiguration") << ok;
        QTest::newRow("launch on another GPU's stream")
            << "launch_on_other_gpu_stream" << QStringLiteral("launch-on-other-device")
            << QStringLiteral("cudaErrorInvalidResourceHandle") << ok;
        QTest::newRow("cudaMalloc past the memory limit")
            << "allocate_past_memory_limit" << QStringLiteral("memory-limit")
            << QStringLiteral("cudaErrorMemoryAllocation") << ok;
        const QString blas_ok = QStringLiteral("CUBLAS_STATUS_SUCCESS");
        const QString blas_failed = QStringLiteral("CUBLAS_STATUS_EXECUTION_FAILED");
        QTest::newRow("cublasSgemm writes past C")
            << "sgemm_past_end" << QStringLiteral("library-outside-allocation") << blas_failed << blas_ok;
        QTest::newRow("cuBLAS handle used on another GPU")
            << "cublas_handle_of_other_gpu" << QStringLiteral("handle-of-other-device") << blas_failed << blas_ok;
        QTest::newRow("all-reduce with a rank missing")
            << "all_reduce_missing_rank" << QStringLiteral("all-reduce-missing-ranks") << QStringLiteral("invalid usage")
            << QStringLiteral("no error");
        // CUDA Graphs: calls that are illegal while a stream captures, and a capture not joined back.
        const QString unsupported = QStringLiteral("capture-unsupported");
        QTest::newRow("cudaStreamSynchronize during a capture")
            << "synchronize_during_capture" << unsupported
            << QStringLiteral("cudaErrorStreamCaptureUnsupported status=2 cudaErrorStreamCaptureInvalidated graph=null "
                              "after=2")
            << QStringLiteral("cudaSuccess status=1 cudaSuccess graph=made after=2");
        QTest::newRow("copy to pageable host memory during a capture")
            << "pageable_copy_during_capture" << unsupported
            << QStringLiteral("cudaErrorStreamCaptureUnsupported cudaErrorStreamCaptureInvalidated host=0")
            << QStringLiteral("cudaSuccess cudaSuccess host=2");
        QTest::newRow("cudaMalloc during a capture")
            << "malloc_during_capture" << unsupported
            << QStringLiteral("cudaErrorStreamCaptureUnsupported cudaErrorStreamCaptureInvalidated")
            << QStringLiteral("cudaSuccess cudaSuccess");
        QTest::newRow("ncclAllReduce during a capture")
            << "all_reduce_during_capture" << unsupported << QStringLiteral("invalid usage")
            << QStringLiteral("no error");
        QTest::newRow("capture ended with a stream not joined back")
            << "graph_fork_join" << QStringLiteral("capture-unjoined")
            << QStringLiteral("cudaErrorStreamCaptureUnjoined graph=null")
            << QStringLiteral("cudaSuccess nodes=4 sum=5 z=4");
        QTest::newRow("graph timed by events recorded plainly in the capture")
            << "graph_event_timing" << QStringLiteral("captured-event") << QStringLiteral("cudaErrorCapturedEvent")
            << QStringLiteral("cudaSuccess nodes=3 elapsed>=0");
    }
    void mistakeReturnsErrorAndNamesRule() {
        QFETCH(QString, program);
        QFETCH(QString, rule);
        QFETCH(QString, error);
        QFETCH(QString, success);
        const Run wrong = run_child(program, QStringLiteral("wrong"));
        QVERIFY2(wrong.finished && !wrong.crashed && wrong.exit_code == 0, qPrintable(wrong.describe()));
        QVERIFY2(wrong.result() == error, qPrintable(wrong.describe()));
        QVERIFY2(wrong.reported(rule), qPrintable(wrong.describe()));
        check_right_program(program, success);
    }

    // Mistakes a GPU would not report (or would report long after, as a failed context): the
    // program dies at the mistake, and its last words name the rule and the place.
    void mistakeKillsProgramAndNamesRule_data() {
        QTest::addColumn<QString>("program");
        QTest::addColumn<QString>("rule");
        QTest::addColumn<QString>("detail");  // more of the report
        QTest::addColumn<QString>("success");
        QTest::newRow("host code dereferences a device pointer")
            << "host_reads_device_pointer" << QStringLiteral("host-touches-device-address")
            << QStringLiteral("host code touched device address") << QStringLiteral("2");
        QTest::newRow("kernel writes one float past the end")
            << "kernel_writes_past_end" << QStringLiteral("out-of-bounds")
            << QStringLiteral("0 bytes past the end of the 256-byte allocation") << QStringLiteral("2");
        QTest::newRow("kernel reads one float past the end")
            << "kernel_reads_past_end" << QStringLiteral("out-of-bounds")
            << QStringLiteral("0 bytes past the end of the 256-byte allocation") << QStringLiteral("2");
        QTest::newRow("kernel reads one float before the start")
            << "kernel_reads_before_start" << QStringLiteral("out-of-bounds")
            << QStringLiteral("4 bytes before the start of the 4096-byte allocation") << QStringLiteral("2");
        QTest::newRow("kernel reaches into a freed buffer")
            << "kernel_reaches_freed_buffer" << QStringLiteral("use-after-free")
            << QStringLiteral("inside the 4096-byte allocation at device address") << QStringLiteral("2");
        QTest::newRow("kernel gets a device pointer inside a struct")
            << "kernel_gets_struct_with_device_pointer" << QStringLiteral("host-touches-device-address")
            << QStringLiteral("not pointers stored in structs") << QStringLiteral("2");
        QTest::newRow("host reads a buffer another stream still writes")
            << "read_before_wait" << QStringLiteral("read-before-wait")
            << QStringLiteral("cudaMemcpyAsync to the host reads 4 bytes") << QStringLiteral("2");
        QTest::newRow("kernel reads what another stream still writes")
            << "kernel_reads_other_streams_output" << QStringLiteral("cross-stream-race")
            << QStringLiteral("reads through kernel argument") << QStringLiteral("2");
        QTest::newRow("upload over what another stream still reads")
            << "upload_over_other_streams_input" << QStringLiteral("cross-stream-race")
            << QStringLiteral("writes 256 bytes at") << QStringLiteral("2");
        QTest::newRow("copy of the half of a buffer another stream writes")
            << "copy_of_half_another_stream_writes" << QStringLiteral("cross-stream-race")
            << QStringLiteral("reads 256 bytes at") << QStringLiteral("2");
        QTest::newRow("cudaFree while another GPU's peer copy reads it")
            << "free_while_peer_copy_queued" << QStringLiteral("free-while-in-use")
            << QStringLiteral("still reads it") << QStringLiteral("cudaSuccess");
        QTest::newRow("wait for an event recorded before the write it should order")
            << "wait_for_event_recorded_too_early" << QStringLiteral("cross-stream-race")
            << QStringLiteral("reads through kernel argument") << QStringLiteral("2");
        QTest::newRow("pinned memory changed before its upload ran")
            << "pinned_upload_overwritten" << QStringLiteral("pinned-overwritten-in-flight")
            << QStringLiteral("had not read yet") << QStringLiteral("1");
        QTest::newRow("pinned input changed after cudaGraphLaunch, before the wait")
            << "graph_pinned_input_overwritten" << QStringLiteral("pinned-overwritten-in-flight")
            << QStringLiteral("a launched graph's copy) had not read yet") << QStringLiteral("1");
        QTest::newRow("a captured kernel reads what another stream of the capture writes, unordered")
            << "graph_branch_race" << QStringLiteral("cross-stream-race")
            << QStringLiteral("nothing orders the two in the graph") << QStringLiteral("2");
        QTest::newRow("host waits for an all-reduce whose peer never comes")
            << "wait_on_stalled_all_reduce" << QStringLiteral("hang")
            << QStringLiteral("never completes") << QStringLiteral("cudaErrorNotReady no error cudaSuccess");
    }
    void mistakeKillsProgramAndNamesRule() {
        QFETCH(QString, program);
        QFETCH(QString, rule);
        QFETCH(QString, detail);
        QFETCH(QString, success);
        const Run wrong = run_child(program, QStringLiteral("wrong"));
        QVERIFY2(wrong.finished && wrong.crashed, qPrintable(wrong.describe()));
        QVERIFY2(wrong.reported(rule), qPrintable(wrong.describe()));
        QVERIFY2(wrong.err.contains(detail), qPrintable(wrong.describe()));
        QVERIFY2(wrong.result().isEmpty(), qPrintable(wrong.describe()));  // it died before printing one
        check_right_program(program, success);
    }

    // Mistakes only the results show: the wrong program's result differs from the right one's.
    void mistakeShowsInResult_data() {
        QTest::addColumn<QString>("program");
        QTest::addColumn<QString>("wrong_result");  // empty: anything but the right result
        QTest::addColumn<QString>("right_result");
        QTest::newRow("elapsed time of an event not yet reached")
            << "event_time_before_reached" << QStringLiteral("cudaErrorNotReady") << QStringLiteral("cudaSuccess");
        QTest::newRow("host reads pinned memory before the copy into it ran")
            << "pinned_read_before_wait" << QStringLiteral("NaN") << QStringLiteral("2");
        QTest::newRow("kernel adds to memory never written")
            << "accumulate_into_fresh_memory" << QStringLiteral("NaN") << QStringLiteral("1");
        QTest::newRow("block reads what the previous block wrote")
            << "block_reads_previous_block" << QString() << QStringLiteral("64 of 64 in order");
        QTest::newRow("block reads what the next block wrote (hidden by running blocks backwards)")
            << "block_reads_next_block" << QString() << QStringLiteral("64 of 64 in order");
        QTest::newRow("thread reads what the previous thread wrote")
            << "thread_reads_previous_thread" << QString() << QStringLiteral("256 of 256 in order");
    }
    void mistakeShowsInResult() {
        QFETCH(QString, program);
        QFETCH(QString, wrong_result);
        QFETCH(QString, right_result);
        const Run wrong = run_child(program, QStringLiteral("wrong"));
        QVERIFY2(wrong.finished && !wrong.crashed && wrong.exit_code == 0, qPrintable(wrong.describe()));
        QVERIFY2(!wrong.result().isEmpty() && !wrong.result().startsWith(right_result), qPrintable(wrong.describe()));
        if (!wrong_result.isEmpty()) QVERIFY2(wrong.result() == wrong_result, qPrintable(wrong.describe()));
        check_right_program(program, right_result);
    }

    // The order is the seed's: printed, and the same seed repeats a run exactly.
    void seedRepeatsTheOrder() {
        const QStringList seed_1 = {QStringLiteral("MIRRORLAB_CUDA_EMULATION_SEED=1")};
        const Run first = run_child(QStringLiteral("block_reads_previous_block"), QStringLiteral("wrong"), seed_1);
        const Run again = run_child(QStringLiteral("block_reads_previous_block"), QStringLiteral("wrong"), seed_1);
        const Run other = run_child(QStringLiteral("block_reads_previous_block"), QStringLiteral("wrong"),
                                    {QStringLiteral("MIRRORLAB_CUDA_EMULATION_SEED=2")});
        QVERIFY2(first.err.contains(QStringLiteral("seed 1 (MIRRORLAB_CUDA_EMULATION_SEED=1 repeats it)")),
                 qPrintable(first.describe()));
        QVERIFY2(!first.result().isEmpty() && first.result() == again.result(),
                 qPrintable(first.describe() + again.describe()));
        QVERIFY2(other.result() != first.result(), qPrintable(first.describe() + other.describe()));
    }

    void blocksRunOnSeveralWorkers() {
        const Run alone = run_child(QStringLiteral("blocks_on_workers"), QStringLiteral("right"));
        QVERIFY2(alone.result() == QStringLiteral("1 workers ran 1024 threads"), qPrintable(alone.describe()));
        const Run shared = run_child(QStringLiteral("blocks_on_workers"), QStringLiteral("right"),
                                     {QStringLiteral("MIRRORLAB_CUDA_EMULATION_WORKERS=4")});
        QVERIFY2(shared.finished && !shared.crashed && !shared.reported(), qPrintable(shared.describe()));
        QVERIFY2(shared.result().endsWith(QStringLiteral("workers ran 1024 threads")) &&
                     !shared.result().startsWith(QStringLiteral("1 ")),
                 qPrintable(shared.describe()));
    }

    void freedMemoryDoesNotPileUpMappings() {
        const Run churn = run_child(QStringLiteral("allocation_churn"), QStringLiteral("right"));
        QVERIFY2(churn.finished && !churn.crashed && churn.exit_code == 0, qPrintable(churn.describe()));
        // 20,000 buffers freed: far fewer new mappings than that (the C++ runtime's or a
        // sanitizer's allocator may add a few dozen of its own).
        const int more = churn.result().section(QLatin1Char(' '), 0, 0).toInt();
        QVERIFY2(!churn.result().isEmpty() && more < 200, qPrintable(churn.describe()));
    }

    // A captured step replayed with new inputs in the same pinned buffer: each launch reads them
    // anew; the launches count as graph launches, not as kernels or copies.
    void graphReplaysWithNewInputs() {
        const Run replay = run_child(QStringLiteral("graph_replays_pinned_input"), QStringLiteral("right"));
        QVERIFY2(replay.finished && !replay.crashed && replay.exit_code == 0, qPrintable(replay.describe()));
        QVERIFY2(!replay.reported(), qPrintable(replay.describe()));
        QCOMPARE(replay.result(), QStringLiteral("11 11 21 21 nodes=3 captured=3 launches=2 launched=6 kernels=0 "
                                                 "copies=0"));
    }

    // The emulator's SIGSEGV handler claims only its own addresses: a null pointer goes to the
    // handler before it (a sanitizer may report it and exit) or kills the program.
    void otherCrashesAreNotClaimed() {
        const Run crash = run_child(QStringLiteral("host_null_dereference"), QStringLiteral("wrong"));
        QVERIFY2(crash.finished && (crash.crashed || crash.exit_code != 0) && !crash.reported(),
                 qPrintable(crash.describe()));
        check_right_program(QStringLiteral("host_null_dereference"), QStringLiteral("2"));
    }
};

int main(int argc, char** argv) {
    if (argc == 4 && std::string_view(argv[1]) == "--case") return run_program(argv[2], argv[3]);
    QCoreApplication application(argc, argv);
    self_path = QCoreApplication::applicationFilePath();
    TestCudaEmulator test;
    return QTest::qExec(&test, argc, argv);
}

#include "test_cuda_emulator.moc"
