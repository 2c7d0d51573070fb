#pragma once
// What the training engine tells the world. The trainer emits these on its own thread; the CLI
// prints them, the GUI forwards them to its thread queued. Value types only, so they can be
// copied across threads freely.
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

namespace mirrorlab {

namespace json {
class Value;
}

struct Metrics {
    double loss = std::numeric_limits<double>::quiet_NaN();
    double accuracy = std::numeric_limits<double>::quiet_NaN();
    double top5 = std::numeric_limits<double>::quiet_NaN();
};

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

enum class LogLevel { Invalid = 0, Info, Warning, Error };

struct LogEvent {
    LogLevel level = LogLevel::Info;
    std::string text;
};

struct TrainBeginEvent {
    int epochs = 0;
    int initial_epoch = 0;  // epochs already trained by the checkpoint a resumed run started from
    std::int64_t steps_per_epoch = 0;
    std::int64_t validation_steps = 0;
    int replicas = 0;
    std::int32_t global_batch = 0;
    std::vector<std::string> devices;
    std::string strategy;    // "MirroredStrategy" / "OneDeviceStrategy"
    std::string all_reduce;  // "reduce_to_one_device", "ring", "nccl", "none"
    std::int64_t parameters = 0;
};

struct EpochBeginEvent {
    int epoch = 0;  // 1-based
    int epochs = 0;
    std::int64_t steps = 0;
};

struct StepEndEvent {
    int epoch = 0;
    std::int64_t step = 0;  // 1-based within the epoch
    std::int64_t steps = 0;
    std::int64_t global_step = 0;
    Metrics running;        // running means over the epoch so far, as Keras shows them
    double step_time_ms = 0.0;
    double samples_per_second = 0.0;
    std::int64_t allreduce_bytes_per_replica = 0;
    std::string all_reduce;                  // "reduce_to_one_device", "ring", "nccl", "none"
    std::int64_t allreduce_bytes_total = 0;  // sent by all replicas together in this step's all-reduce
    std::int64_t gradient_bytes = 0;         // one replica's gradient buffer
    std::vector<PhaseTimings> replicas;
};

// The epoch's training steps are done; its validation pass (`steps` batches) starts.
struct ValidationBeginEvent {
    int epoch = 0;
    std::int64_t steps = 0;
};

struct EpochEndEvent {
    int epoch = 0;
    int epochs = 0;
    std::int64_t steps = 0;
    Metrics train;
    Metrics validation;
    bool has_validation = false;
    double epoch_seconds = 0.0;  // training pass and validation
    double ms_per_step = 0.0;    // training pass only
};

struct MemoryEvent {
    std::vector<DeviceMemory> devices;
};

struct WarningEvent {
    std::string code;  // "overfitting", "early_stopping", "uneven_batch", ...
    std::string text;
    int epoch = 0;
    int best_epoch = 0;  // overfitting / early stopping: the best epoch so far
};

enum class FinishReason { Invalid = 0, Completed, EarlyStopping, StoppedByUser };
std::string_view finish_reason_name(FinishReason reason);

// Where a stop asked for by the person landed. A stop inside an epoch (its training steps or its
// validation pass) leaves that epoch unfinished: it is not in the history.
enum class StopPhase { Invalid = 0, Training, Validation, BetweenEpochs };
std::string_view stop_phase_name(StopPhase phase);  // "training", "validation", "between_epochs"

struct StopPoint {
    StopPhase phase = StopPhase::Invalid;
    int epoch = 0;                     // the epoch cut short; BetweenEpochs: the last complete one
    std::int64_t step = 0;             // training steps that ran in that epoch
    std::int64_t steps = 0;
    std::int64_t validation_step = 0;  // Validation: validation batches that ran
    std::int64_t validation_steps = 0;
};

struct FinishedEvent {
    FinishReason reason = FinishReason::Completed;
    int epochs_completed = 0;
    int best_epoch = 0;      // by the early-stopping monitor (val_loss by default); 0 if none
    int restored_epoch = 0;  // weights restored from this epoch; 0 if not restored
    StopPoint stop;          // reason StoppedByUser only
    std::string text;
};

struct FailedEvent {
    std::string kind;  // "out_of_memory", "nan_loss", "device_config", "model", "data", "internal"
    std::string reason;
    int epoch = 0;
    std::int64_t step = 0;
};

using Event = std::variant<LogEvent, TrainBeginEvent, EpochBeginEvent, StepEndEvent, ValidationBeginEvent, EpochEndEvent,
                           MemoryEvent, WarningEvent, FinishedEvent, FailedEvent>;

// One JSON object per event, with a "type" field ("epoch_end", ...), for `--json`.
std::string event_to_json(const Event& event);
// A stop point's fields ("phase", "epoch", "step", "steps", and "validation_step",
// "validation_steps" for the validation phase) added to a JSON object: the finished event's, the
// CLI's "interrupted" event's.
void put_stop_point(json::Value& object, const StopPoint& stop);

}  // namespace mirrorlab
