#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/data/pipeline.h"
#include "core/distribute/mirrored.h"
#include "core/model/replica.h"
#include "core/train/progress.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
}

Metrics to_metrics(const LossCounts& counts) {
    Metrics metrics;
    if (counts.samples == 0) return metrics;
    const auto samples = static_cast<double>(counts.samples);
    metrics.loss = counts.loss_sum / samples;
    metrics.accuracy = static_cast<double>(counts.correct) / samples;
    metrics.top5 = static_cast<double>(counts.top_k_correct) / samples;
    return metrics;
}

// The loss became NaN or infinite: the step's update did not run.
class NanLossError : public Error {
public:
    using Error::Error;
};

// The message of a captured exception. Handlers only capture (std::current_exception()); the
// work of describing a failure happens after them, where a second exception cannot escape one.
const char* message_of(const std::exception_ptr& error) noexcept {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();  // valid while `error` owns the exception
    } catch (...) {
        return "unknown error";
    }
}

// The FailedEvent kind of a captured exception.
const char* failure_kind(const std::exception_ptr& error) noexcept {
    try {
        std::rethrow_exception(error);
    } catch (const OutOfMemoryError&) {
        return "out_of_memory";
    } catch (const DeviceConfigError&) {
        return "device_config";
    } catch (const ModelError&) {
        return "model";
    } catch (const DataError&) {
        return "data";
    } catch (const NanLossError&) {
        return "nan_loss";
    } catch (const ClusterError&) {
        return "cluster";
    } catch (...) {
        return "internal";
    }
}

void check_data(const TrainData& data, const Model& model) {
    if (!data.train_ids || !data.train_labels || data.train_ids->count == 0) {
        throw DataError("the training data is empty; choose a data set with at least one sample");
    }
    auto check_split = [&](const PaddedSequences& ids, const std::vector<std::int32_t>& labels, const char* split) {
        if (static_cast<std::int64_t>(labels.size()) != ids.count) {
            throw DataError(std::string("the ") + split + " data has " + std::to_string(ids.count) + " sequences but " +
                            std::to_string(labels.size()) + " labels");
        }
        if (ids.length != model.input_length()) {
            throw DataError(std::string("the ") + split + " sequences are padded to " + std::to_string(ids.length) +
                            " tokens but the model expects " + std::to_string(model.input_length()) +
                            "; set the sequence length to " + std::to_string(ids.length));
        }
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (labels[i] < 0 || labels[i] >= model.num_classes()) {
                throw DataError(std::string("the ") + split + " data's sample " + std::to_string(i) + " has label " +
                                std::to_string(labels[i]) + ", but the model's last layer has " +
                                std::to_string(model.num_classes()) + " units (classes 0.." +
                                std::to_string(model.num_classes() - 1) + "); set its units to the number of classes" +
                                (data.num_classes > 0 ? " (" + std::to_string(data.num_classes) + ")" : std::string()));
            }
        }
        const std::int64_t vocabulary = model.vocabulary_size();
        for (std::size_t i = 0; i < ids.ids.size(); ++i) {
            if (ids.ids[i] < 0 || ids.ids[i] >= vocabulary) {
                throw DataError(std::string("the ") + split + " data holds token id " + std::to_string(ids.ids[i]) +
                                " (sample " + std::to_string(static_cast<std::int64_t>(i) / ids.length) +
                                "), outside the Embedding's input_dim of " + std::to_string(vocabulary) +
                                "; raise input_dim above the largest id or map rare words to the OOV id");
            }
        }
    };
    check_split(*data.train_ids, *data.train_labels, "training");
    if (data.validation_ids) check_split(*data.validation_ids, *data.validation_labels, "validation");
}

}  // namespace

Trainer::Trainer(Model model, DeviceConfig devices, TrainConfig config, TrainData data,
                 std::shared_ptr<DeviceRegistry> registry)
    : model_(std::move(model)),
      device_config_(std::move(devices)),
      config_(std::move(config)),
      data_(std::move(data)),
      registry_(registry ? std::move(registry) : std::make_shared<DeviceRegistry>()) {}

Trainer::~Trainer() {
    request_stop();
    wait();
}

void Trainer::publish(const Event& event) {
    if (sink_) sink_(event);
}

void Trainer::report(const Event& event) noexcept {
    try {
        publish(event);
    } catch (...) {
        // Nowhere left to report to; the FitResult still holds the outcome.
    }
}

void Trainer::log(LogLevel level, const std::string& text) { publish(LogEvent{level, text}); }

void Trainer::start() {
    wait();
    stop_requested_ = false;
    running_ = true;
    thread_ = std::thread([this] {
        // run() reports its own failures; this only keeps an exception from terminating the process
        // (e.g. memory running out while the result is copied).
        try {
            run();
        } catch (...) {
            running_ = false;
        }
    });
}

void Trainer::wait() {
    if (thread_.joinable()) thread_.join();
}

void Trainer::pause() {
    std::lock_guard lock(mutex_);
    paused_ = true;
    paused_since_last_step_ = true;
}

void Trainer::resume() {
    {
        std::lock_guard lock(mutex_);
        paused_ = false;
    }
    pause_cv_.notify_all();
}

void Trainer::request_stop() {
    stop_requested_ = true;
    resume();
}

bool Trainer::paused() const {
    std::lock_guard lock(mutex_);
    return paused_;
}

History Trainer::history() const {
    std::lock_guard lock(mutex_);
    return history_;
}

std::vector<float> Trainer::weights() const {
    std::lock_guard lock(mutex_);
    return weights_;
}

FitResult Trainer::result() const {
    std::lock_guard lock(mutex_);
    return result_;
}

bool Trainer::wait_if_paused(bool* was_paused) {
    std::unique_lock lock(mutex_);
    if (was_paused != nullptr) *was_paused = paused_since_last_step_;  // set by every pause(), so also while paused_
    paused_since_last_step_ = false;
    pause_cv_.wait(lock, [this] { return !paused_ || stop_requested_; });
    return !stop_requested_;
}

FitResult Trainer::run() {
    running_ = true;
    enable_flush_denormals();
    FitResult result;
    // fit() turns every failure into a FailedEvent; what still escapes it (memory running out while
    // it builds that report) is only captured here and described outside the handler.
    std::exception_ptr escaped;
    try {
        result = fit();
    } catch (...) {
        escaped = std::current_exception();
    }
    if (escaped) {
        result = FitResult{};
        result.failed = FailedEvent{};
        try {
            result.failed->kind = "internal";
            result.failed->reason = std::string("training failed: ") + message_of(escaped);
        } catch (...) {
            // Out of memory: the failure stands without its text.
        }
    }
    {
        std::lock_guard lock(mutex_);
        result_ = result;
    }
    if (result.finished) report(*result.finished);
    if (result.failed) report(*result.failed);
    running_ = false;
    return result;
}

std::optional<Metrics> Trainer::evaluate(MirroredStrategy& strategy, std::int64_t& steps_done) {
    PipelineOptions options;
    options.batch_size = config_.batch_size;
    options.shuffle = false;
    options.prefetch_batches = config_.prefetch_batches;
    Pipeline pipeline(data_.validation_ids, data_.validation_labels, options);
    pipeline.start_epoch(0);
    LossCounts total;
    steps_done = 0;
    // A stop is honoured between batches: a large validation set can take minutes, and a person who
    // asks to stop should not wait for it. The epoch then has no validation metrics and is not kept.
    // Across workers every one runs every batch (they meet in each): a stop waits for the epoch's end.
    while (strategy.workers() > 1 || !stop_requested_) {
        std::optional<Batch> batch = pipeline.next();
        if (!batch) return to_metrics(total);
        total += strategy.evaluate(batch->ids.data(), batch->labels.data(), batch->size);
        ++steps_done;
        pipeline.recycle(std::move(*batch));
    }
    return std::nullopt;
}

struct Trainer::FitRun {
    std::unique_ptr<MirroredStrategy> strategy;
    std::unique_ptr<Pipeline> pipeline;
    std::int64_t steps = 0;  // training steps per epoch
    std::int64_t validation_steps = 0;
    bool has_validation = false;
    std::string all_reduce;  // as the step events name it
    std::vector<std::shared_ptr<Callback>> callbacks;
    int first_epoch = 1;
    int epoch = 0;               // in progress, for failure reports
    std::int64_t step = 0;       // within it
    std::int64_t global_step = 0;
    Clock::time_point last_memory_event;
    std::optional<Clock::time_point> last_detailed_step;  // see TrainConfig::detailed_step_stats_interval_ms
    // Mid-epoch state for checkpoints taken between steps (empty between epochs).
    std::int64_t steps_into_epoch = 0;
    LossCounts running;
    // The epoch's training broke the weights (its validation loss is not finite): a failure keeps
    // the weights of the epoch before, not these.
    bool weights_broken = false;
    std::vector<Callback*> step_callbacks;  // those that want on_step_end
    std::optional<FitContext> step_context;  // built once: the step path allocates nothing
};

struct Trainer::EpochPass {
    bool stopped = false;
    std::int64_t steps_done = 0;  // counted, not derived from the step index: a stop can come before or after one
    LossCounts running;
    Clock::time_point start;
    double train_seconds = 0.0;
};

void Trainer::keep_weights(const MirroredStrategy* strategy) {
    if (strategy && strategy->built()) {
        auto weights = strategy->weights();
        std::lock_guard lock(mutex_);
        weights_ = std::move(weights);
    }
}

namespace {

// "0.001", "1e+30": the learning rate as the advice to lower it names it.
std::string learning_rate_text(const OptimizerConfig& optimizer) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%g", optimizer.learning_rate);
    return rate;
}

// A step's loss was NaN or infinite: where, what is kept, and what to change. Keras allows epsilon
// = 0, but then a weight whose gradient and moments are 0 is updated by 0/0: epsilon comes first.
std::string non_finite_loss_text(bool nan, int epoch, std::int64_t step, const Metrics& so_far, const OptimizerConfig& optimizer) {
    std::string text = "the loss became " + std::string(nan ? "NaN" : "infinite") + " at epoch " + std::to_string(epoch) +
                       ", step " + std::to_string(step) + "; training stopped and the weights from before this step are kept";
    if (std::isfinite(so_far.loss)) text += " (running loss was " + fixed_text(so_far.loss) + ")";
    const bool no_epsilon = optimizer.kind != OptimizerKind::SGD && optimizer.epsilon == 0.0;
    return text +
           (no_epsilon ? ". The optimizer's epsilon is 0, so a weight whose gradient is 0 is updated by 0/0: set epsilon > 0 "
                         "(Keras' default is 1e-07); else lower"
                       : ". Lower") +
           " the learning rate (now " + learning_rate_text(optimizer) + ") or check the data for extreme values.";
}

// The validation loss of an epoch whose training losses were all finite is not: the weights the
// epoch left overflow. Its epoch is not kept.
std::string non_finite_validation_text(const Metrics& validation, const Metrics& train, int epoch, const OptimizerConfig& optimizer) {
    return "the validation loss became " + std::string(std::isnan(validation.loss) ? "NaN" : "infinite") + " at epoch " +
           std::to_string(epoch) + " (training loss " + fixed_text(train.loss) +
           "): the weights this epoch's training left overflow; training stopped and epoch " + std::to_string(epoch) +
           " is not kept" +
           (epoch > 1 ? " (epochs 1 to " + std::to_string(epoch - 1) + " are, with their checkpoints)" : std::string()) +
           ". Lower the learning rate (now " + learning_rate_text(optimizer) + ") and train again.";
}

}  // namespace

void check_resume_fits(const TrainingState& resume, const TrainConfig& config, std::int64_t parameters) {
    if (resume.epochs_done >= config.epochs) {
        throw ModelError("the checkpoint has already trained " + std::to_string(resume.epochs_done) + " epoch" +
                         (resume.epochs_done == 1 ? "" : "s") + "; ask for more than " + std::to_string(resume.epochs_done) +
                         " epochs in all to continue it");
    }
    if (static_cast<std::int64_t>(resume.weights.size()) != parameters) {
        throw ModelError("the checkpoint holds " + std::to_string(resume.weights.size()) + " weights but this model has " +
                         std::to_string(parameters) + " parameters; resume with the model it was trained with");
    }
}

// Everything that can be said about the configuration before a device is touched.
void Trainer::check_config() {
    if (config_.epochs <= 0) throw ModelError("epochs must be at least 1");
    if (config_.batch_size <= 0) throw ModelError("the batch size must be at least 1");
    config_.optimizer.validate();
    check_data(data_, model_);
    if (resume_) check_resume_fits(*resume_, config_, model_.total_params());
    // A batch larger than the data takes all of it in every step, as in Keras; the buffers were
    // sized for the batch asked (--batch-size 1000000 on 5 samples: "needs 325 GiB").
    const std::int64_t samples = std::max<std::int64_t>(data_.train_ids->count, data_.validation_ids ? data_.validation_ids->count : 0);
    if (config_.batch_size > samples) {
        log(LogLevel::Info, "The batch size of " + std::to_string(config_.batch_size) + " is more than the " + std::to_string(samples) +
                                " samples: every step takes them all (as in Keras), with buffers for " + std::to_string(samples) + ".");
        config_.batch_size = static_cast<std::int32_t>(samples);
    }

    const ActivationKind output = model_.output_activation();
    if (output == ActivationKind::Softmax && config_.from_logits) {
        log(LogLevel::Warning,
            "from_logits=True on a softmax output: Keras would apply softmax twice and train worse. "
            "MirrorLab uses the layer's logits once; set from_logits=False to silence this.");
    } else if (output != ActivationKind::Softmax && output != ActivationKind::Linear) {
        throw ModelError("the last layer's activation is " + std::string(activation_name(output)) +
                         "; sparse categorical cross-entropy needs softmax (or linear with from_logits=True)");
    } else if (output == ActivationKind::Linear && !config_.from_logits) {
        log(LogLevel::Warning,
            "the last layer has no softmax but from_logits=False: its outputs are logits, so they are treated as "
            "such; set from_logits=True (or add activation='softmax') to say so.");
    }
    for (const std::string& warning : data_.warnings) {
        publish(WarningEvent{"data", warning, 0, 0});
        log(LogLevel::Warning, warning);
    }
    // The tutorial's 46 units on a 3-topic CSV train, but the 43 outputs no label names still take
    // part of every softmax, and a prediction can name one of them as a topic.
    if (data_.num_classes > 0 && model_.num_classes() > data_.num_classes) {
        const std::string text = "the model's last layer has " + std::to_string(model_.num_classes()) + " units but the data has " +
                                 std::to_string(data_.num_classes) + " classes: " +
                                 std::to_string(model_.num_classes() - data_.num_classes) +
                                 " outputs name no class and can still be predicted; set the last layer's units to " +
                                 std::to_string(data_.num_classes);
        publish(WarningEvent{"classes", text, 0, 0});
        log(LogLevel::Warning, text);
    }
}

// The strategy built with the starting weights (and optimizer state when resuming), the input
// pipeline, the callbacks; announces the run.
std::unique_ptr<MirroredStrategy> Trainer::make_strategy() {
    const MirroredStrategy::LogSink sink = [this](LogLevel level, const std::string& text) { log(level, text); };
    StrategyPlan plan = plan_strategy(device_config_, *registry_, config_.all_reduce);
    WorkerCommunicator* workers = cluster_.workers;
    if (workers == nullptr || workers->size() <= 1) return std::make_unique<MirroredStrategy>(plan, *registry_, sink);
    plan = plan_across_workers(std::move(plan), workers->size(), workers->rank(), workers->library());
    return std::make_unique<MirroredStrategy>(plan, *registry_, sink, *workers);
}

void Trainer::prepare(FitRun& run) {
    run.strategy = make_strategy();
    MirroredStrategy& strategy = *run.strategy;
    const int replicas = strategy.global_replica_count();
    if (replicas > 1 && config_.batch_size % replicas != 0) {
        const auto shards = shard_sizes(config_.batch_size, replicas);
        std::string split;
        for (std::size_t i = 0; i < shards.size(); ++i) split += (i > 0 ? " + " : "") + std::to_string(shards[i]);
        const std::string text = "the global batch of " + std::to_string(config_.batch_size) + " does not divide evenly over " +
                                 std::to_string(replicas) + " replicas (" + split +
                                 "); replicas with the larger shard set the pace. Use a multiple of " + std::to_string(replicas) +
                                 " for balanced steps.";
        publish(WarningEvent{"uneven_batch", text, 0, 0});
        log(LogLevel::Warning, text);
    }

    // Said before the first byte is allocated. The host holds the initial weights, the copy kept for
    // the UI and a transient one while it is taken, plus the best epoch's with early stopping.
    const int host_copies = 3 + (config_.early_stopping.enabled && config_.early_stopping.restore_best_weights ? 1 : 0);
    strategy.check_memory(model_, config_.batch_size, config_.optimizer, host_copies);
    if (resume_) {
        strategy.build(model_, config_.batch_size, config_.optimizer, resume_->weights);
        strategy.restore_optimizer(resume_->optimizer_state, resume_->optimizer_slots);
        run.first_epoch = resume_->epochs_done + 1;
        run.global_step = resume_->global_step;
        std::lock_guard lock(mutex_);
        history_ = resume_->history;
    } else {
        strategy.build(model_, config_.batch_size, config_.optimizer,
                       initial_weights_.empty() ? initial_weights(model_, config_.seed) : initial_weights_);
    }
    strategy.set_detailed_stats(config_.detailed_step_stats);
    if (cluster_.perturb_weights_for_test && strategy.workers() > 1) {
        strategy.perturb_weights_for_test();
        log(LogLevel::Warning, "fault injection: worker " + std::to_string(cluster_.workers->rank()) +
                                   " changed one of its weights (MIRRORLAB_FAULT_INJECTION_PERTURB_RANK); the "
                                   "consistency check must stop this run");
    }
    log(LogLevel::Info, "Optimizer: " + config_.optimizer.describe());

    add_callbacks(run);

    PipelineOptions options;
    options.batch_size = config_.batch_size;
    options.shuffle = config_.shuffle;
    options.seed = config_.seed;
    options.prefetch_batches = config_.prefetch_batches;
    run.pipeline = std::make_unique<Pipeline>(data_.train_ids, data_.train_labels, options);
    run.steps = run.pipeline->steps_per_epoch();
    if (config_.max_steps_per_epoch > 0) run.steps = std::min(run.steps, config_.max_steps_per_epoch);
    run.has_validation = data_.validation_ids && data_.validation_ids->count > 0;
    run.validation_steps = run.has_validation ? (data_.validation_ids->count + config_.batch_size - 1) / config_.batch_size : 0;
    run.all_reduce = replicas > 1 ? std::string(all_reduce_name(strategy.all_reduce_algorithm())) : "none";
    // A checkpoint from inside an epoch longer than this run's (other data, batch size or steps per
    // epoch): skipping its steps would run out of batches and end the epoch on its numbers untrained.
    if (resume_ && resume_->steps_into_epoch > run.steps) {
        throw ModelError("the checkpoint was taken after step " + std::to_string(resume_->steps_into_epoch) + " of epoch " +
                         std::to_string(resume_->epochs_done + 1) + ", but an epoch here has " + std::to_string(run.steps) +
                         " steps: the data, the batch size or the steps per epoch differ from the interrupted run's; "
                         "resume with the run's own settings");
    }

    announce(run);
    publish(MemoryEvent{strategy.job_memory()});
    run.last_memory_event = Clock::now();
}

// The built-in callbacks, then the added ones, each with its state from the checkpoint when resuming.
void Trainer::add_callbacks(FitRun& run) {
    run.callbacks.push_back(std::make_shared<OverfittingMonitor>(config_.overfitting_monitor, config_.early_stopping.enabled));
    if (config_.early_stopping.enabled) run.callbacks.push_back(std::make_shared<EarlyStopping>(config_.early_stopping));
    run.callbacks.insert(run.callbacks.end(), extra_callbacks_.begin(), extra_callbacks_.end());
    if (resume_) {
        for (auto& callback : run.callbacks) {
            auto saved = resume_->callbacks.find(callback->name());
            if (saved != resume_->callbacks.end()) callback->restore(saved->second);
        }
    }
    for (auto& callback : run.callbacks) {
        if (callback->wants_steps()) run.step_callbacks.push_back(callback.get());
    }
    if (!run.step_callbacks.empty()) run.step_context.emplace(context_for(run));
}

// The run's start as Keras' log says it, and where a resumed run picks up.
void Trainer::announce(FitRun& run) {
    const MirroredStrategy& strategy = *run.strategy;
    const int replicas = strategy.global_replica_count();
    TrainBeginEvent begin;
    begin.epochs = config_.epochs;
    begin.initial_epoch = run.first_epoch - 1;
    begin.steps_per_epoch = run.steps;
    begin.validation_steps = run.validation_steps;
    begin.replicas = replicas;
    begin.global_batch = config_.batch_size;
    begin.devices = strategy.plan().global_device_names();
    begin.strategy = strategy.name();
    begin.all_reduce = run.all_reduce;
    begin.parameters = model_.total_params();
    publish(begin);
    if (resume_) {
        std::string text = resume_->steps_into_epoch > 0
                               ? "Resuming in epoch " + std::to_string(resume_->epochs_done + 1) + " after its step " +
                                     std::to_string(resume_->steps_into_epoch) + " (step " + std::to_string(resume_->global_step) + ")"
                               : "Resuming after epoch " + std::to_string(resume_->epochs_done) + " (step " +
                                     std::to_string(resume_->global_step) + ")";
        if (resume_->replicas > 0 && resume_->replicas != replicas) {
            text += "; it was trained on " + std::to_string(resume_->replicas) + " replica" + (resume_->replicas == 1 ? "" : "s") +
                    " and continues on " + std::to_string(replicas) +
                    ", so its numbers will differ slightly from an uninterrupted run (sums in another order)";
        }
        log(LogLevel::Info, text + ".");
    }
    log(LogLevel::Info, "Train for " + std::to_string(run.steps) + " steps" +
                            (run.has_validation ? ", validate for " + std::to_string(run.validation_steps) + " steps" : ""));
}

// A checkpoint from inside this epoch: its batches up to there are drawn and dropped (the order is
// the same, so the next batch is the one the interrupted run would have taken) and its running sums
// carried on. Returns the steps already done (0 without such a checkpoint).
std::int64_t Trainer::continue_checkpointed_epoch(FitRun& run, EpochPass& pass) {
    if (!resume_ || resume_->steps_into_epoch <= 0) return 0;
    for (std::int64_t skipped = 0; skipped < resume_->steps_into_epoch; ++skipped) {
        std::optional<Batch> batch = run.pipeline->next();
        if (!batch) break;
        run.pipeline->recycle(std::move(*batch));
    }
    pass.steps_done = resume_->steps_into_epoch;
    pass.running = resume_->running;
    return resume_->steps_into_epoch;
}

namespace {

// A step event's exchange: the bytes the all-reduce moved and every replica's phase times (across
// workers `job_timings`, else this process's, each with the step's data wait).
void add_exchange(StepEndEvent& event, const MirroredStrategy& strategy, const TrainStepResult& step_result,
                  const std::vector<PhaseTimings>* job_timings, double data_wait_ms) {
    event.allreduce_bytes_per_replica = strategy.allreduce_bytes_per_replica();
    event.allreduce_bytes_total = strategy.allreduce_bytes_total();
    event.gradient_bytes = strategy.gradient_bytes();
    event.allreduce_buffer_bytes = strategy.allreduce_buffer_bytes();
    if (job_timings != nullptr) {
        event.replicas = *job_timings;
        return;
    }
    event.replicas = step_result.replicas;
    for (auto& phase : event.replicas) phase.data_wait_ms = data_wait_ms;
}

}  // namespace

Trainer::EpochPass Trainer::train_epoch(FitRun& run, int epoch) {
    MirroredStrategy& strategy = *run.strategy;
    EpochPass pass;
    pass.start = Clock::now();
    const std::int64_t first_step = epoch == run.first_epoch ? continue_checkpointed_epoch(run, pass) + 1 : 1;
    for (run.step = first_step; run.step <= run.steps; ++run.step) {
        bool was_paused = false;
        // Across workers a stop is agreed on after each step (after_step_agreed), never here alone.
        if (!wait_if_paused(&was_paused) && strategy.workers() == 1) {
            pass.stopped = true;
            break;
        }
        const auto step_start = Clock::now();
        if (config_.detailed_step_stats && config_.detailed_step_stats_interval_ms > 0.0) {
            const bool due = was_paused || run.step == run.steps || !run.last_detailed_step ||
                             std::chrono::duration<double, std::milli>(step_start - *run.last_detailed_step).count() >=
                                 config_.detailed_step_stats_interval_ms;
            if (due) run.last_detailed_step = step_start;
            strategy.set_detailed_stats(due);
        }
        std::optional<Batch> batch = run.pipeline->next();
        if (!batch) break;
        const double data_wait_ms = seconds_since(step_start) * 1000.0;
        const TrainStepResult& step_result =
            strategy.train_step(batch->ids.data(), batch->labels.data(), batch->size,
                                config_.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(run.global_step));
        if (!step_result.finite) {
            throw NanLossError(non_finite_loss_text(std::isnan(step_result.counts.loss_sum), epoch, run.step,
                                                    to_metrics(pass.running), config_.optimizer));
        }
        ++run.global_step;
        check_workers_due(run);  // before a step's checkpoint can keep variables that drifted apart
        ++pass.steps_done;
        pass.running += step_result.counts;
        // Under mpirun every worker's replicas, so that rank 0's events (the GUI following a job)
        // show the whole job: a collective, so every worker gathers after every step (the workers
        // run one configuration, so all of them emit step events or none does).
        const std::vector<PhaseTimings>* job_timings = strategy.workers() > 1 && config_.emit_step_events
                                                           ? &strategy.gather_job_timings(data_wait_ms)
                                                           : nullptr;
        if (config_.emit_step_events) {
            StepEndEvent event;
            event.epoch = epoch;
            event.step = run.step;
            event.steps = run.steps;
            event.global_step = run.global_step;
            event.running = to_metrics(pass.running);
            event.step_time_ms = seconds_since(step_start) * 1000.0;
            event.samples_per_second = event.step_time_ms > 0 ? batch->size * 1000.0 / event.step_time_ms : 0.0;
            event.all_reduce = run.all_reduce;
            add_exchange(event, strategy, step_result, job_timings, data_wait_ms);
            publish(event);
        }
        run.pipeline->recycle(std::move(*batch));
        // After the step's event, so that a checkpoint's recorder has the step it checkpoints.
        if (!run.step_callbacks.empty()) {
            run.steps_into_epoch = pass.steps_done;
            run.running = pass.running;
            for (Callback* callback : run.step_callbacks) callback->on_step_end(*run.step_context, epoch, run.global_step);
        }
        // Across workers the memory is gathered (a collective), so they agree on when.
        const AfterStep next = after_step_agreed(run, seconds_since(run.last_memory_event) > 0.5);
        if (next.memory) {
            publish(MemoryEvent{strategy.job_memory()});
            run.last_memory_event = Clock::now();
        }
        if (next.stop) {
            pass.stopped = true;
            break;
        }
    }
    pass.train_seconds = seconds_since(pass.start);
    run.steps_into_epoch = 0;  // the epoch's end: checkpoints from here on are between epochs
    run.running = {};
    return pass;
}

bool Trainer::end_epoch(FitRun& run, int epoch, const EpochPass& pass, FinishedEvent& finished) {
    if (pass.stopped) {
        finished.reason = FinishReason::StoppedByUser;
        finished.stop = StopPoint{StopPhase::Training, epoch, pass.steps_done, run.steps, 0, 0};
        log(LogLevel::Info, "Stopped by the user during epoch " + std::to_string(epoch) + " after " +
                                std::to_string(pass.steps_done) + " of " + std::to_string(run.steps) +
                                " steps; the epochs before it are kept.");
        return false;
    }
    EpochRecord record;
    record.epoch = epoch;
    record.train = to_metrics(pass.running);
    if (run.has_validation) {
        publish(ValidationBeginEvent{epoch, run.validation_steps});
        std::int64_t validated = 0;
        const std::optional<Metrics> validation = evaluate(*run.strategy, validated);
        if (!validation) {
            finished.reason = FinishReason::StoppedByUser;
            finished.stop = StopPoint{StopPhase::Validation, epoch, pass.steps_done, run.steps, validated, run.validation_steps};
            log(LogLevel::Info, "Stopped by the user during the validation of epoch " + std::to_string(epoch) + " after " +
                                    std::to_string(validated) + " of " + std::to_string(run.validation_steps) +
                                    " validation steps; the epoch is incomplete and not kept, the epochs before it are.");
            return false;
        }
        record.validation = *validation;
        record.has_validation = true;
        if (!std::isfinite(validation->loss)) {
            // Every training step's loss was finite, yet the weights it left make the validation
            // loss NaN (logits that overflow): keeping this epoch, and a checkpoint of it, would
            // keep weights that answer nothing.
            run.weights_broken = true;
            throw NanLossError(non_finite_validation_text(*validation, record.train, epoch, config_.optimizer));
        }
    }
    record.epoch_seconds = seconds_since(pass.start);
    {
        std::lock_guard lock(mutex_);
        history_.epochs.push_back(record);
    }
    EpochEndEvent end;
    end.epoch = epoch;
    end.epochs = config_.epochs;
    end.steps = run.steps;
    end.train = record.train;
    end.validation = record.validation;
    end.has_validation = record.has_validation;
    end.epoch_seconds = record.epoch_seconds;
    end.ms_per_step = run.steps > 0 ? pass.train_seconds * 1000.0 / static_cast<double>(run.steps) : 0.0;
    publish(end);
    publish(MemoryEvent{run.strategy->job_memory()});
    keep_weights(run.strategy.get());

    // Before any checkpoint keeps them: every worker's variables are still the same.
    run.strategy->check_workers_agree(run.global_step);
    FitContext context = context_for(run);
    for (auto& callback : run.callbacks) callback->on_epoch_end(context, record);
    if (context.stop_training) {
        finished.reason = context.stop_reason;
        return false;
    }
    if (run.strategy->any_worker(stop_requested_)) {
        finished.reason = FinishReason::StoppedByUser;
        finished.stop = StopPoint{StopPhase::BetweenEpochs, epoch, pass.steps_done, run.steps, 0, 0};
        return false;
    }
    return true;
}

FitContext Trainer::context_for(FitRun& run) {
    // history_ is only written by this thread, so the callbacks may read it without the lock.
    FitContext context{*run.strategy, history_, [this](const Event& event) { publish(event); },
                       [this](LogLevel level, const std::string& text) { log(level, text); }, {}};
    context.snapshot = [this, &run] {
        TrainingState state;
        state.history = history();
        state.epochs_done = static_cast<int>(state.history.epochs.size());
        state.global_step = run.global_step;
        state.steps_into_epoch = run.steps_into_epoch;
        state.running = run.running;
        state.weights = run.strategy->weights();
        state.optimizer_state = run.strategy->optimizer_state();
        state.optimizer_slots = run.strategy->optimizer_slots();
        for (const auto& callback : run.callbacks) state.callbacks[callback->name()] = callback->state();
        state.replicas = run.strategy->global_replica_count();
        return state;
    };
    return context;
}

FinishedEvent Trainer::finish(FitRun& run, FinishedEvent finished) {
    finished.epochs_completed = static_cast<int>(history().epochs.size());
    if (finished.reason != FinishReason::StoppedByUser) finished.stop = StopPoint{};
    FitContext context = context_for(run);
    for (auto& callback : run.callbacks) callback->on_train_end(context, finished);
    keep_weights(run.strategy.get());
    const int done = finished.epochs_completed;
    const std::string epochs_text = std::to_string(done) + (done == 1 ? " epoch." : " epochs.");
    finished.text = finished.reason == FinishReason::Completed       ? "Training finished after " + epochs_text
                    : finished.reason == FinishReason::EarlyStopping ? "Training stopped early after " + epochs_text
                                                                     : "Training stopped by the user after " + std::to_string(done) +
                                                                           (done == 1 ? " complete epoch." : " complete epochs.");
    return finished;
}

FitResult Trainer::fit() {
    FitRun run;
    std::exception_ptr failure;
    try {
        {
            std::lock_guard lock(mutex_);
            history_ = {};
        }
        check_config();
        prepare(run);
        FinishedEvent finished;
        finished.reason = FinishReason::Completed;
        for (run.epoch = run.first_epoch; run.epoch <= config_.epochs; ++run.epoch) {
            publish(EpochBeginEvent{run.epoch, config_.epochs, run.steps});
            run.pipeline->start_epoch(run.epoch - 1);
            const EpochPass pass = train_epoch(run, run.epoch);
            if (!end_epoch(run, run.epoch, pass, finished)) break;
        }
        FitResult result;
        result.finished = finish(run, std::move(finished));
        result.ok = true;
        return result;
    } catch (...) {
        failure = std::current_exception();
    }
    // Described and reported here, outside the handler (see fail()).
    const std::string kind = failure_kind(failure);
    const char* what = message_of(failure);
    return fail(run, kind, kind == "internal" ? std::string("training failed: ") + what : std::string(what));
}

// Ends the run with `reason`. Called outside every catch block, and its reporting never throws:
// the device that just failed may fail again when its weights are fetched, and that second error
// must neither replace the first one nor escape. The weights kept are then those of the last
// finished epoch.
FitResult Trainer::fail(FitRun& run, std::string kind, std::string reason) {
    std::exception_ptr keep_error;
    try {
        if (!run.weights_broken) keep_weights(run.strategy.get());
    } catch (...) {
        keep_error = std::current_exception();
    }
    try {
        if (keep_error) {
            std::size_t kept_epochs = 0;
            {
                std::lock_guard lock(mutex_);
                kept_epochs = history_.epochs.size();
            }
            report(LogEvent{LogLevel::Warning,
                            std::string("The weights could not be fetched after this failure (") + message_of(keep_error) + "); " +
                                (kept_epochs > 0 ? "the weights kept are those from the end of epoch " + std::to_string(kept_epochs)
                                                 : std::string("no weights are kept")) +
                                "."});
        }
        report(LogEvent{LogLevel::Error, reason});
    } catch (...) {
        // Only the texts' memory can fail here; the FailedEvent below is what counts.
    }
    FitResult result;
    result.failed = FailedEvent{std::move(kind), std::move(reason), run.epoch, run.step};
    return result;
}

void Trainer::check_workers_due(FitRun& run) {
    const std::int64_t every = cluster_.consistency_check_every_steps;
    if (run.strategy->workers() > 1 && every > 0 && run.global_step % every == 0) {
        run.strategy->check_workers_agree(run.global_step);
    }
}

Trainer::AfterStep Trainer::after_step_agreed(FitRun& run, bool memory_due) {
    constexpr std::uint64_t kStop = 1, kMemory = 2;
    const std::uint64_t agreed =
        run.strategy->any_worker_bits((stop_requested_ ? kStop : 0) | (memory_due ? kMemory : 0));
    return {(agreed & kStop) != 0, (agreed & kMemory) != 0};
}

}  // namespace mirrorlab
