#pragma once
// All-reduce of one gradient buffer per replica: the interface. core/distribute implements it for
// any devices (reduce to one device, ring); a DeviceProvider may offer its own over its devices
// (the CUDA plugin's NCCL), which is why it lives here, below distribute.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/util/step_barrier.h"

namespace mirrorlab {

class LogicalDevice;

enum class AllReduceAlgorithm { Invalid = 0, Auto, ReduceToOneDevice, Ring, Nccl };
AllReduceAlgorithm all_reduce_from_name(std::string_view name);  // "auto", "reduce", "ring", "nccl"; Invalid otherwise
std::string_view all_reduce_name(AllReduceAlgorithm algorithm);

class CrossDeviceOps {
public:
    virtual ~CrossDeviceOps() = default;
    virtual AllReduceAlgorithm algorithm() const = 0;
    // The log line that names what runs: "Reduce to /device:CPU:0 then broadcast to (...)".
    virtual std::string describe(const std::vector<LogicalDevice*>& devices) const = 0;
    // Called from every replica's thread at once with that replica's index, once every replica
    // has queued the work that writes its buffer and marked it (Backend::mark_ready) and all have
    // met at the caller's barrier; the buffers may still be being computed on their devices.
    // Returns when the element-wise sum of all buffers (bit-identical on every replica) is queued
    // into buffers[replica] on backends[replica], ahead of whatever the caller queues there next,
    // after everything it reads (ordered by Backend::wait_for, not by the host waiting), and once
    // no replica will queue anything more that reads another's buffer in this step. Another
    // replica's later work may still read this replica's buffer until the step's end, so a caller
    // writes its buffer again only after every replica's Backend::finish_step.
    virtual void all_reduce(int replica, const std::vector<TensorView>& buffers,
                            const std::vector<Backend*>& backends, StepBarrier& barrier) = 0;
    // Whether every element of the sum is finite, where all_reduce() checked it as it summed (host
    // memory): the same verdict on every replica, read by each after its all_reduce() returned and
    // before its step ends (the caller waits for every replica between steps, so the next step's
    // all_reduce() cannot overwrite it while it is read), so that no replica reads the summed buffer
    // again for it. nullopt where the all-reduce did not check (each replica's backend then does:
    // Backend::step_check_finite).
    virtual std::optional<bool> sum_all_finite() const { return std::nullopt; }
    // Whether all_reduce() makes the host wait for a device (a synchronisation between phases):
    // such a step cannot be deferred to one launch (StepGroup::host_waits_mid_step).
    virtual bool waits_on_host() const { return true; }
    // Bytes one replica sends per all-reduce of `bytes` (for the step view and the benchmark).
    virtual std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const = 0;
};

}  // namespace mirrorlab
