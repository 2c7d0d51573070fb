#pragma once
// NCCL as the CUDA plugin offers it (algorithm() Nccl, its own describe line), run as a ring on
// host memory: for fake GPU providers whose replicas the strategy must build with collectives.
#include <cstdint>
#include <string>
#include <vector>

#include "core/distribute/cross_device_ops.h"

namespace mirrorlab::testsupport {

class FakeNccl final : public CrossDeviceOps {
public:
    AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::Nccl; }
    std::string describe(const std::vector<LogicalDevice*>& devices) const override {
        return "fake NCCL all-reduce over " + std::to_string(devices.size()) + " GPUs";
    }
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    StepBarrier& barrier) override {
        ring_.all_reduce(replica, buffers, backends, barrier);
    }
    std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const override {
        return ring_.bytes_sent_per_replica(bytes, replicas);
    }

private:
    RingAllReduce ring_;
};

}  // namespace mirrorlab::testsupport
