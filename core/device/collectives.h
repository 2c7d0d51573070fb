#pragma once
// All-reduce of one gradient buffer per replica: the interface. core/distribute implements it for
// any devices (reduce to one device, ring); a DeviceProvider may offer its own over its devices
// (the CUDA plugin's NCCL), which is why it lives here, below distribute.
#include <cstdint>
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
    // Called from every replica's thread at once with that replica's index, once every buffer is
    // complete (the caller's barrier); returns when buffers[replica] holds the element-wise sum of
    // all buffers (bit-identical on every replica) and no replica reads another's buffer any more.
    virtual void all_reduce(int replica, const std::vector<TensorView>& buffers,
                            const std::vector<Backend*>& backends, StepBarrier& barrier) = 0;
    // Bytes one replica sends per all-reduce of `bytes` (for the step view and the benchmark).
    virtual std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const = 0;
};

}  // namespace mirrorlab
