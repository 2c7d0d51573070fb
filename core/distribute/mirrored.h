#pragma once
// Synchronous data parallelism: a copy of the variables on every logical device, the global batch
// split into per-replica shards, local forward/backward with the loss scaled by the global batch
// size, an all-reduce of the gradients, and the same optimizer update on every replica. With one
// device it is TensorFlow's OneDeviceStrategy.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/distribute/cross_device_ops.h"
#include "core/distribute/cross_worker.h"
#include "core/distribute/replica_stats.h"
#include "core/distribute/replica_threads.h"
#include "core/distribute/strategy_plan.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/util/log_level.h"
#include "core/util/step_barrier.h"

namespace mirrorlab {

// Shard sizes for a global batch: as even as possible, the first replicas take the remainder
// (32 over 3 replicas: 11 + 11 + 10; 22 over 2: 11 + 11; 1 over 2: 1 + 0).
std::vector<std::int32_t> shard_sizes(std::int32_t global_batch, int replicas);

// FNV-1a (64-bit) over a replica's variables' 32-bit words: bit-identical replicas, equal sums.
std::uint64_t fnv1a_checksum(Backend& backend, const TensorView& weights);

struct TrainStepResult {
    LossCounts counts;                  // summed over replicas
    std::vector<PhaseTimings> replicas;
    bool finite = true;                 // loss and all-reduced gradients are finite (else no update ran)
};

class MirroredStrategy {
public:
    using LogSink = std::function<void(LogLevel, const std::string&)>;

    // Builds the plan's logical devices and the all-reduce it names, and logs the plan's lines
    // (the all-reduce chosen and why). Throws DeviceConfigError when the plan cannot run, or when
    // NCCL asked for by name will not start; NCCL chosen by Auto that will not start falls back to
    // a ring with a warning (StrategyPlan::without_nccl).
    MirroredStrategy(const StrategyPlan& plan, DeviceRegistry& registry, const LogSink& log);
    // One of plan.workers workers (plan_across_workers): the global batch is split over every
    // worker's replicas, and CrossWorkerAllReduce sums them through `workers`.
    MirroredStrategy(const StrategyPlan& plan, DeviceRegistry& registry, const LogSink& log, WorkerCommunicator& workers);
    // Devices built by the caller (tests), planned by the same rules (plan_strategy(devices, ..)).
    MirroredStrategy(std::vector<std::unique_ptr<LogicalDevice>> devices, AllReduceAlgorithm algorithm,
                     const LogSink& log);

    int replica_count() const { return static_cast<int>(devices_.size()); }  // on this worker
    int global_replica_count() const { return cross_worker_ ? cross_worker_->global_replicas() : replica_count(); }
    int first_global_replica() const { return cross_worker_ ? cross_worker_->first_replica() : 0; }
    int workers() const { return cross_worker_ ? cross_worker_->workers() : 1; }
    std::string name() const { return plan_.strategy_name(); }
    // The plan the strategy runs (after any NCCL fallback).
    const StrategyPlan& plan() const { return plan_; }
    AllReduceAlgorithm all_reduce_algorithm() const;
    std::vector<std::string> device_names() const;
    LogicalDevice& device(int replica) { return *devices_[static_cast<std::size_t>(replica)]; }

    // Before anything is allocated: throws OutOfMemoryError ("the model needs X on each replica
    // ..., /device:CPU:0 has Y") when a device's limit (or a GPU's free memory) cannot hold a
    // replica, or when the host cannot hold `host_weight_copies` flat copies of the weights plus
    // the replicas that live in host memory (CPU devices).
    void check_memory(const Model& model, std::int32_t global_batch, const OptimizerConfig& optimizer,
                      int host_weight_copies) const;
    // Creates the replicas (mirrored variables set to `weights`) after check_memory(.., 1); throws
    // OutOfMemoryError when a device's limit cannot hold its replica.
    void build(const Model& model, std::int32_t global_batch, const OptimizerConfig& optimizer,
               const std::vector<float>& weights);
    bool built() const { return !replicas_.empty(); }

    // Per-replica gradient norms and variable checksums in every step's PhaseTimings (costs a
    // reduction over the gradients twice and a pass over the variables per replica and step).
    void set_detailed_stats(bool enabled) { detailed_stats_ = enabled; }

    // One synchronous step. The result lives in the strategy until the next step; steady-state
    // steps allocate nothing. Throws what a replica threw (out of memory, an op error) after every
    // replica has stopped. A failure before the update leaves the variables and the optimizer as
    // before the step; one during the update (a GPU fault) may leave the replicas' variables and
    // optimizer slots apart, with no copy known to be right, so every later step throws OpError:
    // the run is over (the trainer reports the first error and keeps the finished epochs).
    const TrainStepResult& train_step(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                      std::uint64_t step_seed);
    LossCounts evaluate(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch);

    // Under mpirun: the phase times of the step just taken on every worker's replicas, in global
    // replica order, each with its worker's `data_wait_ms` (a collective: every worker calls it
    // after every step, so that rank 0's step events show the whole job). Sized once, no allocation.
    const std::vector<PhaseTimings>& gather_job_timings(double data_wait_ms);

    // Multi-worker runs; with one worker they return at once (`mine`, nothing to compare).
    // True on every worker when `mine` is true on any (a stop asked of one worker stops all).
    bool any_worker(bool mine);
    // Bit by bit the same: a bit is set on every worker when it is set on any.
    std::uint64_t any_worker_bits(std::uint64_t mine);
    // Compares every worker's replicas' variables (an FNV-1a checksum each); throws ClusterError
    // naming the ranks whose variables differ from rank 0's. `after_step` is for the message.
    void check_workers_agree(std::int64_t after_step);
    // Fault injection for tests only: changes one weight of this worker's replicas, so that the
    // next check_workers_agree() must find them apart.
    void perturb_weights_for_test();

    std::vector<float> weights(int replica = 0) const;
    void set_weights(const std::vector<float>& weights);
    OptimizerSchedule::State optimizer_state() const { return schedule_->state(); }
    std::vector<float> optimizer_slots() const;
    void restore_optimizer(const OptimizerSchedule::State& state, const std::vector<float>& slots);
    std::vector<DeviceMemory> memory() const;
    // Under mpirun: memory() of every worker's devices in global replica order, named as the job
    // names them ("/job:worker/task:1/device:CPU:0"); a collective, so every worker calls it at the
    // same points of the run (the trainer agrees on them after each step). With one worker: memory().
    std::vector<DeviceMemory> job_memory();
    // Every replica's Backend::kernel_choices(), each line after its device's name.
    std::vector<std::string> kernel_choices() const;
    std::int64_t allreduce_bytes_per_replica() const;
    // Bytes all replicas send together in one all-reduce: 2 (N-1) gradient buffers for the ring,
    // reduce-to-one-device (N-1 in, N-1 back out) and NCCL's ring alike.
    std::int64_t allreduce_bytes_total() const;
    std::int64_t gradient_bytes() const;
    // What the all-reduce sums per replica: the gradients, then the Embedding's row statistics and
    // the loss marker (ModelReplica::gradient_buffer()).
    std::int64_t allreduce_buffer_bytes() const;
    ModelReplica& replica(int index) { return *replicas_[static_cast<std::size_t>(index)]; }

private:
    // `devices` by reference: a caller may plan from them in the same call.
    MirroredStrategy(StrategyPlan plan, std::vector<std::unique_ptr<LogicalDevice>>&& devices, const LogSink& log,
                     WorkerCommunicator* workers = nullptr);

    // Per-step state, sized by build() so that steps allocate nothing.
    // Indexed by global replica (first_global_replica() + local index), except where named local.
    struct StepScratch {
        std::vector<std::int32_t> sizes, offsets;  // each replica's shard of the global batch
        std::vector<LossCounts> counts;
        std::vector<char> finite;  // local: each replica's verdict on its slice of the summed gradient
        std::vector<std::chrono::steady_clock::time_point> updated;  // local
        std::vector<TensorView> gradient_buffers;
        std::vector<Backend*> backends;
        TrainStepResult result;
        std::vector<PhaseTimings> job_timings;  // across workers: every global replica's
    };
    void replica_step(int replica, const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                      std::uint64_t step_seed, std::chrono::steady_clock::time_point step_start,
                      const OptimizerStep& update);

    StrategyPlan plan_;
    std::vector<std::unique_ptr<LogicalDevice>> devices_;
    std::unique_ptr<CrossDeviceOps> cross_device_ops_;  // null for one replica and across workers
    std::unique_ptr<CrossWorkerAllReduce> cross_worker_;  // only across workers
    std::unique_ptr<ReplicaThreads> threads_;
    std::vector<std::unique_ptr<ModelReplica>> replicas_;
    std::unique_ptr<OptimizerSchedule> schedule_;
    std::int32_t input_length_ = 0;
    bool detailed_stats_ = false;
    std::vector<double> pending_copy_ms_;  // set_weights time per replica, reported by the next step
    std::unique_ptr<StepBarrier> barrier_;
    StepGroup step_group_;  // what each replica's Backend::begin_step is told (set by build())
    StepScratch scratch_;
    std::atomic<bool> update_started_{false};  // some replica began this step's update
    bool replicas_may_differ_ = false;         // a step failed during the update: no more steps
};

}  // namespace mirrorlab
