#include "gpu/nccl_all_reduce.h"

#include "core/device/device.h"
#include "core/util/error.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_handles.h"

#if MIRRORLAB_HAVE_NCCL
#include <nccl.h>
#endif

namespace mirrorlab::cuda {

namespace {

std::string gpu_list(const std::vector<int>& devices) {
    std::string text;
    for (std::size_t i = 0; i < devices.size(); ++i) text += (i > 0 ? ", GPU:" : "GPU:") + std::to_string(devices[i]);
    return text;
}

}  // namespace

#if MIRRORLAB_HAVE_NCCL

// One communicator per GPU, destroyed together.
class NcclCommunicators : NonCopyable {
public:
    explicit NcclCommunicators(const std::vector<int>& devices) : comms_(devices.size(), nullptr) {
        const ncclResult_t result = ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data());
        if (result != ncclSuccess) {
            comms_.clear();
            throw DeviceConfigError("device configuration: NCCL could not create communicators for " +
                                    gpu_list(devices) + ": " + ncclGetErrorString(result));
        }
    }
    ~NcclCommunicators() {
        for (ncclComm_t comm : comms_) {
            if (comm != nullptr) ncclCommDestroy(comm);
        }
    }
    ncclComm_t operator[](std::size_t i) const { return comms_[i]; }
    // The first communicator's asynchronous error (a peer that failed), or ncclSuccess.
    ncclResult_t async_error(std::size_t* rank) const {
        for (std::size_t i = 0; i < comms_.size(); ++i) {
            ncclResult_t result = ncclSuccess;
            if (comms_[i] == nullptr || ncclCommGetAsyncError(comms_[i], &result) != ncclSuccess) continue;
            if (result != ncclSuccess && result != ncclInProgress) {
                *rank = i;
                return result;
            }
        }
        return ncclSuccess;
    }
    // Ends every rank's queued collectives at once; the communicators are freed and unusable.
    void abort() {
        for (ncclComm_t& comm : comms_) {
            if (comm != nullptr) ncclCommAbort(comm);
            comm = nullptr;
        }
    }

private:
    std::vector<ncclComm_t> comms_;
};

std::string nccl_version() {
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess) return "unavailable";
    // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
}

NcclAllReduce::NcclAllReduce(std::vector<int> devices) : devices_(std::move(devices)) {
    communicators_ = std::make_unique<NcclCommunicators>(devices_);
}

NcclAllReduce::~NcclAllReduce() = default;

void NcclAllReduce::reduce_all(const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends) {
    if (buffers.size() != devices_.size() || backends.size() != devices_.size()) {
        throw OpError("[all-reduce] NCCL was set up for " + std::to_string(devices_.size()) + " GPUs but got " +
                      std::to_string(buffers.size()) + " buffers");
    }
    std::vector<cudaStream_t> streams;
    for (std::size_t i = 0; i < backends.size(); ++i) {
        const auto* gpu = dynamic_cast<const CudaBackend*>(backends[i]);
        if (gpu == nullptr || gpu->device() != devices_[i]) {
            throw OpError("[all-reduce] NCCL's rank " + std::to_string(i) + " is GPU:" + std::to_string(devices_[i]) +
                          ", but that replica's backend is " + std::string(backends[i]->name()));
        }
        streams.push_back(gpu->stream());
    }
    const std::int64_t count = buffers.front().numel();
    for (const auto& buffer : buffers) check_same_shape(buffer, buffers.front(), "all-reduce");
    if (count == 0) return;
    {
        std::lock_guard lock(mutex_);
        if (!aborted_why_.empty()) {
            throw OpError("[all-reduce] " + name() + " was aborted in an earlier step (" + aborted_why_ +
                          "): start the run again");
        }
    }
    // In place on every GPU; the group makes one thread's calls for all GPUs one collective.
    ncclResult_t first_error = ncclGroupStart();
    if (first_error == ncclSuccess) {
        for (std::size_t i = 0; i < buffers.size(); ++i) {
            const ncclResult_t result =
                ncclAllReduce(buffers[i].data, buffers[i].data, static_cast<std::size_t>(count), ncclFloat, ncclSum,
                              (*communicators_)[i], streams[i]);
            if (result != ncclSuccess && first_error == ncclSuccess) first_error = result;
        }
        const ncclResult_t end = ncclGroupEnd();
        if (end != ncclSuccess && first_error == ncclSuccess) first_error = end;
    }
    if (first_error != ncclSuccess) {
        throw OpError(std::string("[all-reduce] ncclAllReduce failed on ") + gpu_list(devices_) + ": " +
                      ncclGetErrorString(first_error));
    }
    // No wait: each replica's next work on its stream (the finiteness check, the update) follows
    // the collective there. Each replica's wait at the step's end watches it (CollectiveWatch).
    for (Backend* backend : backends) static_cast<CudaBackend*>(backend)->watch_collective(this);
}

std::string NcclAllReduce::failure() {
    std::lock_guard lock(mutex_);
    if (!aborted_why_.empty()) return aborted_why_;
    std::size_t rank = 0;
    const ncclResult_t error = communicators_->async_error(&rank);
    if (error == ncclSuccess) return {};
    return "NCCL reported \"" + std::string(ncclGetErrorString(error)) + "\" on GPU:" + std::to_string(devices_[rank]) +
           " during " + name();
}

void NcclAllReduce::abort(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (!aborted_why_.empty()) return;
    aborted_why_ = why;
    communicators_->abort();
}

#else  // built without NCCL: the provider never creates one

class NcclCommunicators {};

std::string NcclAllReduce::failure() { return {}; }
void NcclAllReduce::abort(const std::string&) {}

std::string nccl_version() { return "not built"; }

NcclAllReduce::NcclAllReduce(std::vector<int> devices) : devices_(std::move(devices)) {
    throw DeviceConfigError("device configuration: the CUDA backend was built without NCCL (" + gpu_list(devices_) + ")");
}

NcclAllReduce::~NcclAllReduce() = default;

void NcclAllReduce::reduce_all(const std::vector<TensorView>&, const std::vector<Backend*>&) {}

#endif

std::string NcclAllReduce::name() const { return "the NCCL all-reduce over " + gpu_list(devices_); }

std::string NcclAllReduce::describe(const std::vector<LogicalDevice*>& devices) const {
    std::string names;
    for (std::size_t i = 0; i < devices.size(); ++i) names += (i > 0 ? ", " : "") + devices[i]->name();
    return "NCCL " + nccl_version() + " all-reduce over (" + names +
           "): one communicator per GPU, on each replica's stream, grouped calls.";
}

void NcclAllReduce::all_reduce(int replica, const std::vector<TensorView>& buffers,
                               const std::vector<Backend*>& backends, StepBarrier& barrier) {
    // Every replica has queued its backward pass and waits at the barrier, so replica 0 can queue
    // the collective on every replica's stream, behind that work; after the barrier each replica
    // queues its update behind the collective. If it fails, its exception breaks the barrier (the
    // strategy aborts it) and the others leave.
    if (replica == 0) reduce_all(buffers, backends);
    barrier.arrive_and_wait();
}

std::int64_t NcclAllReduce::bytes_sent_per_replica(std::int64_t bytes, int replicas) const {
    // NCCL's ring: reduce-scatter then all-gather.
    return replicas <= 1 ? 0 : 2 * bytes * (replicas - 1) / replicas;
}

}  // namespace mirrorlab::cuda
