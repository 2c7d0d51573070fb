#pragma once
// What the training engine tells the world. The trainer emits these on its own thread; the CLI
// prints them, the GUI forwards them to its thread queued. Value types only, so they can be
// copied across threads freely.
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "core/distribute/replica_stats.h"
#include "core/util/log_level.h"

namespace mirrorlab {

namespace json {
class Value;
}

struct Metrics {
    double loss = std::numeric_limits<double>::quiet_NaN();
    double accuracy = std::numeric_limits<double>::quiet_NaN();
    double top5 = std::numeric_limits<double>::quiet_NaN();
};

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
    std::int64_t gradient_bytes = 0;         // one replica's gradients (4 bytes per parameter)
    std::int64_t allreduce_buffer_bytes = 0;  // what the all-reduce sums per replica: + Embedding row statistics, loss marker
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
    std::string code;  // "overfitting", "early_stopping", "uneven_batch", "run_store", ...
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
