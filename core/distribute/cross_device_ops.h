#pragma once
// The all-reduces that work on any devices: reduce to one device then broadcast, and the ring.
// Each states its algorithm and why it was chosen in the log, as TensorFlow does ("Reduce to ...
// then broadcast to ..."). The interface itself (CrossDeviceOps) is core/device/collectives.h, so
// that a device provider (the CUDA plugin's NCCL) can offer one too.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/device/collectives.h"
#include "core/util/step_barrier.h"

namespace mirrorlab {

// What ReduceToOneDevice and RingAllReduce log about themselves for replicas on `devices`
// (logical device names in replica order), so that a plan can say it before they exist:
// "Reduce to /device:CPU:0 then broadcast to (/device:CPU:0, /device:CPU:1)."
std::string describe_reduce_to_one_device(const std::vector<std::string>& devices);
// "Ring all-reduce (reduce-scatter then all-gather in 2 chunks) over /device:CPU:0 -> /device:CPU:1 -> /device:CPU:0."
std::string describe_ring(const std::vector<std::string>& devices);

// The element range [begin, end) of chunk `chunk` when `count` elements are split in `parts`.
std::pair<std::int64_t, std::int64_t> chunk_range(std::int64_t count, int parts, int chunk);

// The sum lands in replica 0's buffer, then every other replica copies it back; on GPUs each
// ordered after the work it reads by the backends' events (mark_ready / wait_for), so one chip's
// virtual GPUs hand the gradients over without the host waiting. When the replicas
// share host memory (CPU devices), each replica's thread sums its own slice of the buffers into
// replica 0's and copies that slice of the sum out to the others, so the work is spread evenly
// over all cores and needs one barrier; the additions per element keep the order b0 + b1 + ...
// either way, so the result is bit for bit the same. Split so, each replica also checks its slice
// of the sum as it adds it (sum_all_finite) when it knows the replicas' number from the start.
class ReduceToOneDevice final : public CrossDeviceOps {
public:
    explicit ReduceToOneDevice(bool split_across_replicas = false, int replicas = 0)
        : split_across_replicas_(split_across_replicas),
          slice_finite_(split_across_replicas ? static_cast<std::size_t>(std::max(replicas, 0)) : 0) {}
    bool split_across_replicas() const { return split_across_replicas_; }
    std::optional<bool> sum_all_finite() const override;
    AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::ReduceToOneDevice; }
    bool waits_on_host() const override { return false; }  // events order the devices; host memory needs none
    std::string describe(const std::vector<LogicalDevice*>& devices) const override;
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    StepBarrier& barrier) override;
    std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const override;

private:
    bool split_across_replicas_;
    // Each replica's verdict on its slice of the last sum, written before the all-reduce's barrier
    // and read after it; empty where the sum is not checked (not split, replicas not known).
    std::vector<char> slice_finite_;
};

// Reduce-scatter then all-gather around a ring of replicas: each replica sends 2 (N-1)/N of the
// buffer, so the traffic per replica stays flat as replicas are added. Each of its 2 (N-1) steps
// waits for the device (Backend::synchronize) before the barrier: the ring is the fallback where
// neither NCCL nor one shared chip is there, and is not on issue #21's one-wait path.
class RingAllReduce final : public CrossDeviceOps {
public:
    AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::Ring; }
    std::string describe(const std::vector<LogicalDevice*>& devices) const override;
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    StepBarrier& barrier) override;
    std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const override;
};

}  // namespace mirrorlab
