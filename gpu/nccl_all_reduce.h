#pragma once
// All-reduce with NCCL when every replica has a GPU of its own: one communicator per GPU (created
// together with ncclCommInitAll), and one thread that issues the calls for all GPUs inside
// ncclGroupStart/End, each on its replica's own stream: the collective follows the backward pass
// and precedes the update in stream order, with no host wait and no event (issue #21). NCCL cannot
// run between virtual devices of one GPU; the strategy falls back to reduce-to-one-device there
// and logs it as TensorFlow does.
#include <cuda_runtime.h>

#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/distribute/cross_device_ops.h"
#include "gpu/cuda_backend.h"

namespace mirrorlab::cuda {

class NcclCommunicators;
class Stream;

// The NCCL all-reduce is also the CollectiveWatch of the steps it is queued in: a peer's
// asynchronous error or a stall ends the step with an error (and aborts the communicators)
// instead of hanging it.
class NcclAllReduce final : public CrossDeviceOps, public CollectiveWatch {
public:
    // `devices`: the CUDA ordinal of each replica's GPU, all distinct. Throws DeviceConfigError
    // naming the GPUs and NCCL's reason when the communicators cannot be created.
    explicit NcclAllReduce(std::vector<int> devices);
    ~NcclAllReduce() override;

    AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::Nccl; }
    bool waits_on_host() const override { return false; }  // queued on the replicas' streams
    std::string describe(const std::vector<LogicalDevice*>& devices) const override;
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    StepBarrier& barrier) override;
    std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const override;

    std::string name() const override;
    std::string failure() override;
    void abort(const std::string& why) override;

private:
    void reduce_all(const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends);

    std::vector<int> devices_;
    std::unique_ptr<NcclCommunicators> communicators_;
    std::mutex mutex_;         // the replicas' waits ask failure() and may abort() at once
    std::string aborted_why_;  // set once the communicators were aborted
};

// "2.28.9", or why NCCL is unavailable.
std::string nccl_version();

}  // namespace mirrorlab::cuda
