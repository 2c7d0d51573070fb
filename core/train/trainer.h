#pragma once
// Trainer::fit: the Keras fit loop over a mirrored strategy, on its own thread, with pause, resume
// and stop, streaming events. Errors (bad devices, out of memory, NaN loss, bad data) end the run
// with a FailedEvent whose text says what is wrong and how to fix it; the history of the epochs
// already trained and the last good weights are kept.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/data/sequence.h"
#include "core/data/train_data.h"
#include "core/device/device.h"
#include "core/distribute/cross_device_ops.h"
#include "core/distribute/worker_communicator.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "core/train/callbacks.h"
#include "core/train/events.h"
#include "core/train/fit_state.h"
#include "core/train/history.h"

namespace mirrorlab {

class MirroredStrategy;

struct TrainConfig {
    int epochs = 10;
    std::int32_t batch_size = 32;  // global batch
    std::uint64_t seed = 0;
    OptimizerConfig optimizer = OptimizerConfig::defaults(OptimizerKind::Nadam);
    bool from_logits = false;
    EarlyStoppingConfig early_stopping;
    bool overfitting_monitor = true;
    AllReduceAlgorithm all_reduce = AllReduceAlgorithm::Auto;
    bool shuffle = true;
    std::int32_t prefetch_batches = 2;
    std::int64_t max_steps_per_epoch = 0;  // 0: the whole data set (benchmarks use fewer)
    bool emit_step_events = true;
    // Per-replica gradient norms before/after the all-reduce and variable checksums in the
    // StepEndEvents (the GUI's step view); off for the CLI and benchmarks, whose steps pay nothing.
    bool detailed_step_stats = false;
    // With detailed_step_stats: at most one detailed step per this many ms (0: every step), and
    // always the first step, an epoch's last and the first after a pause (the step view's "next
    // step"). The norms and checksum pass read every gradient and weight twice more; on every step
    // they cost the GUI's replicas ~60 % more CPU than the CLI's, while a person reads a few a second.
    double detailed_step_stats_interval_ms = 0.0;
};


// A multi-worker run (MultiWorkerMirroredStrategy): this process is one of several workers that
// train one model together, each with the same data, settings and --devices.
struct ClusterOptions {
    WorkerCommunicator* workers = nullptr;  // null or one worker: a single-process run
    // The workers compare their variables' checksums every this many steps (and before every
    // epoch's callbacks, so no checkpoint keeps variables that drifted apart); 0: only then.
    std::int64_t consistency_check_every_steps = 100;
    // Fault injection for tests only: this worker changes one of its weights after building its
    // replicas, so the first consistency check must stop the run.
    bool perturb_weights_for_test = false;
};

// A checkpoint's state can continue under `config` with a model of `parameters`: more epochs are
// asked for than it has trained, and its weights fit. Throws ModelError saying what to change.
// Checked before a stored run is reopened for a resume, and again by the trainer.
void check_resume_fits(const TrainingState& resume, const TrainConfig& config, std::int64_t parameters);

struct FitResult {
    bool ok = false;
    std::optional<FinishedEvent> finished;
    std::optional<FailedEvent> failed;
};

class Trainer {
public:
    using EventSink = std::function<void(const Event&)>;

    Trainer(Model model, DeviceConfig devices, TrainConfig config, TrainData data,
            std::shared_ptr<DeviceRegistry> registry = nullptr);
    ~Trainer();  // asks a running fit to stop and waits for it
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    // Called on the training thread; set before start()/run().
    void set_event_sink(EventSink sink) { sink_ = std::move(sink); }
    // Start from these weights instead of the seeded initialisation (fine-tuning).
    void set_initial_weights(std::vector<float> weights) { initial_weights_ = std::move(weights); }
    // Continue a checkpointed run (weights, optimizer, history, callbacks' state).
    void set_resume_state(TrainingState state) { resume_ = std::move(state); }
    // Run after the built-in callbacks (the overfitting monitor, early stopping) at each epoch's
    // end, in the order added: checkpoints, recorders.
    void add_callback(std::shared_ptr<Callback> callback) { extra_callbacks_.push_back(std::move(callback)); }
    // Train as one worker of several (before start()/run()).
    void set_cluster(ClusterOptions cluster) { cluster_ = cluster; }

    // Fit on the calling thread. Never throws: every failure, including one while reporting a
    // failure, ends as FitResult::failed.
    FitResult run();
    void start();  // fit on a background thread
    void wait();
    bool running() const { return running_.load(); }

    // Thread-safe controls, honoured between steps (a step in flight always completes, so the
    // mirrored variables never diverge). A stop is also honoured between the batches of a
    // validation pass; the epoch it interrupts is not kept (FinishedEvent::stop says where it landed).
    void pause();
    void resume();
    void request_stop();
    bool paused() const;

    // Copies, safe from any thread during or after the run.
    History history() const;
    std::vector<float> weights() const;  // the weights the run ended with (last good ones)
    FitResult result() const;

private:
    struct FitRun;
    struct EpochPass;
    FitResult fit();
    void check_config();
    void prepare(FitRun& run);
    void add_callbacks(FitRun& run);
    void announce(FitRun& run);
    // The epoch's training steps; throws on a NaN loss. `stopped` when a stop was asked for.
    EpochPass train_epoch(FitRun& run, int epoch);
    std::int64_t continue_checkpointed_epoch(FitRun& run, EpochPass& pass);
    // Validation and callbacks after a complete training pass; false when the run ends here.
    bool end_epoch(FitRun& run, int epoch, const EpochPass& pass, FinishedEvent& finished);
    FinishedEvent finish(FitRun& run, FinishedEvent finished);
    FitResult fail(FitRun& run, std::string kind, std::string reason);
    FitContext context_for(FitRun& run);
    void keep_weights(const MirroredStrategy* strategy);
    void publish(const Event& event);
    // publish() for reporting a failure or the run's end: never throws (a sink that fails here is
    // ignored; the result is still recorded).
    void report(const Event& event) noexcept;
    void log(LogLevel level, const std::string& text);
    bool wait_if_paused(bool* was_paused = nullptr);  // false when asked to stop
    // The validation metrics, or nothing when a stop was asked for; `steps_done` counts the batches run.
    std::optional<Metrics> evaluate(MirroredStrategy& strategy, std::int64_t& steps_done);
    std::unique_ptr<MirroredStrategy> make_strategy();
    // Across workers: compares their variables every ClusterOptions::consistency_check_every_steps.
    void check_workers_due(FitRun& run);
    // After a step, what every worker does next, agreed in one gather: stop when a stop was asked
    // of any worker; a memory event when any worker's clock says one is due (`memory_due`).
    struct AfterStep {
        bool stop = false;
        bool memory = false;
    };
    AfterStep after_step_agreed(FitRun& run, bool memory_due);

    Model model_;
    DeviceConfig device_config_;
    TrainConfig config_;
    TrainData data_;
    std::shared_ptr<DeviceRegistry> registry_;
    EventSink sink_;
    std::vector<float> initial_weights_;
    std::optional<TrainingState> resume_;
    std::vector<std::shared_ptr<Callback>> extra_callbacks_;
    ClusterOptions cluster_;

    std::thread thread_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_requested_{false};
    mutable std::mutex mutex_;
    std::condition_variable pause_cv_;
    bool paused_ = false;
    // A pause asked for since the last step began, even when resume() came before the loop got to
    // wait for it: the next step is still "the first after a pause" (its detailed statistics are
    // taken), however quickly the caller resumed.
    bool paused_since_last_step_ = false;
    History history_;
    std::vector<float> weights_;
    FitResult result_;
};

}  // namespace mirrorlab
