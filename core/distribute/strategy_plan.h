#pragma once
// The strategy plan: what training on a device configuration will run, decided before anything
// exists. The logical devices (names, memory limits, the physical device under each), the
// replicas, the all-reduce and the sentence that says why it was chosen, and the lines the
// engine logs to announce it. This is the one place those rules live: MirroredStrategy builds
// from a plan, so what the devices panel shows from the same plan is what the engine does.
// Pure: it allocates no device and starts no thread.
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/distribute/cross_device_ops.h"
#include "core/util/log_level.h"

namespace mirrorlab {

struct PlanLogLine {
    LogLevel level = LogLevel::Info;
    std::string text;
    bool operator==(const PlanLogLine&) const = default;
};

struct StrategyPlan {
    // One per replica, in replica order; there for an invalid configuration too.
    std::vector<LogicalDevicePlan> devices;
    // Why the engine would refuse to start, in its words (the DeviceConfigError message,
    // "device configuration: ..."); empty when the plan can run.
    std::string error;
    AllReduceAlgorithm requested = AllReduceAlgorithm::Auto;
    // What will run: Invalid for one replica (no all-reduce) and for a plan that cannot run.
    AllReduceAlgorithm all_reduce = AllReduceAlgorithm::Invalid;
    std::string all_reduce_reason;      // "chosen explicitly", "each replica has its own device; ..."
    std::vector<std::string> warnings;  // logged first ("NCCL is not supported when using virtual GPUs, ...")
    // Multi-worker runs (plan_across_workers): how many workers train together, each with these
    // devices, and which one this is. `all_reduce` is then the order the workers reproduce.
    int workers = 1;
    int worker_rank = 0;
    std::string worker_library;  // what carries the messages ("Open MPI v4.1.4")

    bool ok() const { return error.empty(); }
    int replica_count() const { return static_cast<int>(devices.size()); }  // on this worker
    int global_replica_count() const { return replica_count() * workers; }  // on all workers
    // "OneDeviceStrategy" / "MirroredStrategy" / "MultiWorkerMirroredStrategy"
    std::string strategy_name() const;
    std::vector<std::string> device_names() const;
    // Every worker's replicas in global replica order, as TensorFlow names a cluster's devices:
    // "/job:worker/task:1/device:CPU:0"; device_names() with one worker.
    std::vector<std::string> global_device_names() const;

    // The engine's log lines, exactly:
    // "Using MirroredStrategy with devices (/device:CPU:0, /device:CPU:1)", "Using OneDeviceStrategy on /device:CPU:0",
    // "Using MultiWorkerMirroredStrategy with 2 workers × 1 device (/job:worker/task:0/device:CPU:0, ...)"
    std::string strategy_line() const;
    // "All-reduce: ring (chosen explicitly)"; empty without an all-reduce.
    std::string all_reduce_line() const;
    // The warnings, the strategy line and the all-reduce line, in the order the engine logs them
    // (nothing when the plan cannot run).
    std::vector<PlanLogLine> log_lines() const;
    // What the all-reduce then says of itself: "Reduce to /device:CPU:0 then broadcast to (...)."
    // or the ring's route; empty for NCCL (the CUDA backend names its NCCL version) and without an
    // all-reduce.
    std::string exchange_line() const;

    // Throws DeviceConfigError(error) when the plan cannot run.
    void check() const;
    // This plan after NCCL would not start (`why`): under Auto, a ring and a warning that says
    // so; when NCCL was asked for by name, throws DeviceConfigError.
    StrategyPlan without_nccl(const std::string& why) const;
};

// The plan for `config` on this machine with the all-reduce `requested` (Auto: reduce to one
// device when replicas share a physical device, as TensorFlow does for virtual GPUs; NCCL when
// each replica has its own GPU and the GPU provider has collectives; otherwise a ring).
// Never throws for a configuration the engine would refuse: `error` says why.
StrategyPlan plan_strategy(const DeviceConfig& config, const DeviceRegistry& registry, AllReduceAlgorithm requested);
// The same rules for logical devices that exist already (built by hand, as tests do).
StrategyPlan plan_strategy(const std::vector<std::unique_ptr<LogicalDevice>>& devices, AllReduceAlgorithm requested);
// `local` (this worker's devices) as one of `workers` workers (rank `rank`): the all-reduce is the
// one a single process with all workers' replicas would run (reduce to one device for CPU
// replicas under Auto, or the ring asked for), reproduced across the workers. CPU devices only
// for now: `error` says so for GPUs (NCCL across workers is not built yet).
StrategyPlan plan_across_workers(StrategyPlan local, int workers, int rank, std::string library);

}  // namespace mirrorlab
