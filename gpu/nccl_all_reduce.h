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
#include <string>
#include <vector>

#include "core/distribute/cross_device_ops.h"

namespace mirrorlab::cuda {

class NcclCommunicators;
class Stream;

class NcclAllReduce final : public CrossDeviceOps {
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

private:
    void reduce_all(const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends);

    std::vector<int> devices_;
    std::unique_ptr<NcclCommunicators> communicators_;
};

// "2.28.9", or why NCCL is unavailable.
std::string nccl_version();

}  // namespace mirrorlab::cuda
