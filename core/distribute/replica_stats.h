#pragma once
// What MirroredStrategy reports of its replicas: each one's share of every step, and its device's
// memory. The trainer passes them on in its events (core/train/events.h).
#include <cstdint>
#include <limits>
#include <string>

namespace mirrorlab {

// One replica's share of one synchronous step.
struct PhaseTimings {
    std::int32_t shard_size = 0;
    double data_wait_ms = 0.0;  // waiting for the input pipeline's batch
    double forward_ms = 0.0;    // forward pass and loss
    double backward_ms = 0.0;
    double allreduce_ms = 0.0;  // includes waiting at the barrier for slower replicas
    double update_ms = 0.0;
    double local_loss = 0.0;    // mean loss over this replica's shard
    // Where the phases sit in the synchronous step, in ms from its start (after the data wait), so
    // that a timeline can draw the waits between them. Forward starts at split_ms.
    double split_ms = 0.0;            // until this replica starts on its shard (slicing, hand-off)
    double barrier_wait_ms = 0.0;     // own gradients done -> the all-reduce starts (waiting for the slowest)
    double allreduce_begin_ms = 0.0;  // 0 with one replica (no all-reduce)
    double update_begin_ms = 0.0;
    double finish_wait_ms = 0.0;      // own update done -> every replica's update done (incl. the checksum pass)
    // Copying the variables onto this replica: reported by the first step after they were set
    // (build, restore), 0 afterwards because mirrored variables stay in place.
    double copy_model_ms = 0.0;
    // Only with TrainConfig::detailed_step_stats (NaN / 0 otherwise): the norm of this replica's
    // local gradient, of the all-reduced one (the global gradient: the same on every replica), and
    // an FNV-1a checksum of its variables after the update (identical replicas, identical sums).
    double grad_norm_before = std::numeric_limits<double>::quiet_NaN();
    double grad_norm_after = std::numeric_limits<double>::quiet_NaN();
    std::uint64_t weights_checksum = 0;
    // forward/backward/all-reduce/update are the device's own times (CUDA events), not the host's
    // wall clock around them; the begin offsets and waits stay on the host clock.
    bool device_timed = false;
};

struct DeviceMemory {
    std::string device;  // "/device:CPU:0"
    std::int64_t bytes_in_use = 0;
    std::int64_t peak_bytes = 0;
    std::int64_t limit_bytes = 0;  // 0: no limit
    std::int64_t physical_free_bytes = 0;  // free memory of the physical GPU now; 0: unknown (CPU)
};

// A DeviceMemory's numbers without its name: what the workers of a multi-worker run send each other
// (every worker knows every device's name from the plan they share).
struct DeviceMemoryCounts {
    std::int64_t bytes_in_use = 0;
    std::int64_t peak_bytes = 0;
    std::int64_t limit_bytes = 0;
    std::int64_t physical_free_bytes = 0;
};

}  // namespace mirrorlab
