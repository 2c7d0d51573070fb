#pragma once
// The scaling experiment behind the GUI's Scaling panel: the same model, global batch, seed and
// steps trained on 1, 2, ... N replicas of the current device configuration, each run measured
// for throughput, time per step split into compute and communication, and scaling efficiency
// (throughput_n / (n x throughput_1)). Runs the real fit loop (Trainer) without validation, so
// what is measured is what a training run pays. Experiments are kept and exported as CSV so a
// person can compare configurations.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/model/model.h"
#include "core/train/trainer.h"

namespace mirrorlab {

// `replicas` replicas of the kind `current` uses: its first `replicas` logical devices in order
// (cpu:4 -> cpu:2, gpu:0,gpu:1 -> gpu:0); beyond its own replicas the last device takes more of
// the same kind (cpu:2x512MB -> cpu:3x512MB, gpu:0:2x1024MB -> gpu:0:3x1024MB). Throws
// DeviceConfigError for an empty configuration or a count below 1.
DeviceConfig scaled_device_config(const DeviceConfig& current, int replicas);

struct ScalingSetup {
    Model model = Model::reference();
    TrainData data;          // the validation split is not used
    DeviceConfig devices;    // the configuration whose kind every row uses
    int max_replicas = 2;    // rows 1..max_replicas
    std::int64_t steps = 20;        // timed steps per row
    std::int64_t warmup_steps = 3;  // steps before those, not timed (threads start, first touches)
    // Global batch, seed, optimizer and all-reduce come from here; the runner sets epochs,
    // validation, step limits and events itself.
    TrainConfig config;
    std::string label;  // how comparisons name this experiment ("cpu:2x512MB, batch 32")
};

struct ScalingPoint {
    int replicas = 0;
    std::string devices;                // the DeviceConfig spec of this row
    std::vector<std::int32_t> shards;   // per-replica shard sizes of the global batch
    std::string all_reduce;             // "none", "ring", "reduce_to_one_device", "nccl"
    std::int64_t timed_steps = 0;
    double ms_per_step = 0.0;           // median over the timed steps
    double samples_per_second = 0.0;    // global batch / ms_per_step
    double compute_ms = 0.0;            // median of the slowest replica's forward + backward
    double communication_ms = 0.0;      // median of the slowest replica's all-reduce (incl. its barriers)
    double other_ms = 0.0;              // the rest: data wait, update, waiting, hand-offs
    double speedup = 0.0;               // samples/s over the 1-replica row's
    double efficiency = 0.0;            // speedup / replicas (1.0 = ideal linear scaling)
    double final_loss = 0.0;            // running training loss after the last step (a sanity check)
};

struct ScalingExperiment {
    int id = 0;
    std::string label;
    std::string devices;  // the configuration it scaled
    std::string model_name;
    std::int32_t global_batch = 0;
    std::uint64_t seed = 0;
    std::int64_t steps = 0;
    double learning_rate = 0.0;
    std::vector<ScalingPoint> points;
    std::int64_t allreduce_buffer_bytes = 0;  // what one replica's all-reduce sums (the what-if model's n)
    bool completed = false;  // false: cancelled or failed part-way (the rows so far are kept)
    std::string error;       // why it stopped early; empty when completed or cancelled
};

class ScalingRunner {
public:
    // Called on the running thread after each row.
    using Progress = std::function<void(const ScalingPoint& point, int done, int total)>;

    explicit ScalingRunner(std::shared_ptr<DeviceRegistry> registry = nullptr);

    // Runs every row on the calling thread; never throws for bad input (the error is in the
    // result). `id` numbers the experiment.
    ScalingExperiment run(const ScalingSetup& setup, int id = 1, const Progress& progress = {});
    // Thread-safe: stops the row in flight at its next step and skips the rest; a cancelled
    // runner stays cancelled (even if run() has not started yet).
    void cancel();
    bool cancelled() const { return cancelled_.load(); }

private:
    std::shared_ptr<DeviceRegistry> registry_;
    std::atomic<bool> cancelled_{false};
    std::mutex mutex_;
    Trainer* current_ = nullptr;  // the row in flight, for cancel()
};

// One CSV table of every experiment's rows, with a header line; fields quoted where needed.
std::string scaling_csv(const std::vector<ScalingExperiment>& experiments);
extern const char* const kScalingCsvHeader;

}  // namespace mirrorlab
