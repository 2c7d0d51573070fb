#pragma once
// All-reduce of one gradient buffer per replica. Each implementation states its algorithm and why
// it was chosen in the log, as TensorFlow does ("Reduce to ... then broadcast to ...").
#include <barrier>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

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
    // Called from every replica's thread at once with that replica's index; returns when
    // buffers[replica] holds the element-wise sum of all buffers (bit-identical on every replica).
    virtual void all_reduce(int replica, const std::vector<TensorView>& buffers,
                            const std::vector<Backend*>& backends, std::barrier<>& barrier) = 0;
    // Bytes one replica sends per all-reduce of `bytes` (for the step view and the benchmark).
    virtual std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const = 0;
};

// Replica 0 sums everyone's buffer, then every other replica copies the result back.
class ReduceToOneDevice final : public CrossDeviceOps {
public:
    AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::ReduceToOneDevice; }
    std::string describe(const std::vector<LogicalDevice*>& devices) const override;
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    std::barrier<>& barrier) override;
    std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const override;
};

// Reduce-scatter then all-gather around a ring of replicas: each replica sends 2 (N-1)/N of the
// buffer, so the traffic per replica stays flat as replicas are added.
class RingAllReduce final : public CrossDeviceOps {
public:
    AllReduceAlgorithm algorithm() const override { return AllReduceAlgorithm::Ring; }
    std::string describe(const std::vector<LogicalDevice*>& devices) const override;
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    std::barrier<>& barrier) override;
    std::int64_t bytes_sent_per_replica(std::int64_t bytes, int replicas) const override;

    // The element range [begin, end) of chunk `chunk` when `count` elements are split in `parts`.
    static std::pair<std::int64_t, std::int64_t> chunk_range(std::int64_t count, int parts, int chunk);
};

}  // namespace mirrorlab
