#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/data/pipeline.h"
#include "core/distribute/mirrored.h"
#include "core/model/replica.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string fixed(double value, int digits = 4) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
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

double monitored_value(const EpochRecord& record, const std::string& monitor) {
    const bool validation = monitor.rfind("val_", 0) == 0;
    const Metrics& m = validation ? record.validation : record.train;
    const std::string key = validation ? monitor.substr(4) : monitor;
    if (key == "loss") return m.loss;
    if (key == "accuracy") return m.accuracy;
    if (key == "top5") return m.top5;
    return std::numeric_limits<double>::quiet_NaN();
}

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
    } catch (...) {
        return "internal";
    }
}

bool higher_is_better(const std::string& monitor) { return monitor.find("loss") == std::string::npos; }

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

std::vector<double> History::series(const std::string& key) const {
    std::vector<double> values;
    for (const auto& record : epochs) values.push_back(monitored_value(record, key));
    return values;
}

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

bool Trainer::wait_if_paused() {
    std::unique_lock lock(mutex_);
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
    while (!stop_requested_) {
        std::optional<Batch> batch = pipeline.next();
        if (!batch) return to_metrics(total);
        total += strategy.evaluate(batch->ids.data(), batch->labels.data(), batch->size);
        ++steps_done;
        pipeline.recycle(std::move(*batch));
    }
    return std::nullopt;
}

FitResult Trainer::fit() {
    FitResult result;
    int epoch = 0;
    std::int64_t step = 0;
    std::unique_ptr<MirroredStrategy> strategy;
    auto keep_weights = [&] {
        if (strategy && strategy->built()) {
            auto weights = strategy->weights();
            std::lock_guard lock(mutex_);
            weights_ = std::move(weights);
        }
    };
    // Ends the run with `reason`. Called outside every catch block, and its reporting never throws:
    // the device that just failed may fail again when its weights are fetched, and that second
    // error must neither replace the first one nor escape. The weights kept are then those of the
    // last finished epoch.
    auto fail = [&](std::string kind, std::string reason) {
        std::exception_ptr keep_error;
        try {
            keep_weights();
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
                                std::string("The weights could not be fetched after this failure (") + message_of(keep_error) +
                                    "); " +
                                    (kept_epochs > 0 ? "the weights kept are those from the end of epoch " + std::to_string(kept_epochs)
                                                     : std::string("no weights are kept")) +
                                    "."});
            }
            report(LogEvent{LogLevel::Error, reason});
        } catch (...) {
            // Only the texts' memory can fail here; the FailedEvent below is what counts.
        }
        result.ok = false;
        result.finished.reset();
        result.failed = FailedEvent{std::move(kind), std::move(reason), epoch, step};
        return result;
    };
    std::exception_ptr failure;
    try {
        {
            std::lock_guard lock(mutex_);
            history_ = {};
        }
        if (config_.epochs <= 0) throw ModelError("epochs must be at least 1");
        if (config_.batch_size <= 0) throw ModelError("the batch size must be at least 1");
        config_.optimizer.validate();
        check_data(data_, model_);

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
        strategy = std::make_unique<MirroredStrategy>(
            plan_strategy(device_config_, *registry_, config_.all_reduce), *registry_,
            [this](LogLevel level, const std::string& text) { log(level, text); });
        const int replicas = strategy->replica_count();
        if (replicas > 1 && config_.batch_size % replicas != 0) {
            const auto shards = shard_sizes(config_.batch_size, replicas);
            std::string split;
            for (std::size_t i = 0; i < shards.size(); ++i) split += (i > 0 ? " + " : "") + std::to_string(shards[i]);
            const std::string text = "the global batch of " + std::to_string(config_.batch_size) + " does not divide evenly over " +
                                     std::to_string(replicas) + " replicas (" + split +
                                     "); replicas with the larger shard set the pace. Use a multiple of " +
                                     std::to_string(replicas) + " for balanced steps.";
            publish(WarningEvent{"uneven_batch", text, 0, 0});
            log(LogLevel::Warning, text);
        }

        // Said before the first byte is allocated. The host holds the initial weights, the copy kept for
        // the UI and a transient one while it is taken, plus the best epoch's with early stopping.
        const int host_copies = 3 + (config_.early_stopping.enabled && config_.early_stopping.restore_best_weights ? 1 : 0);
        strategy->check_memory(model_, config_.batch_size, config_.optimizer, host_copies);
        std::vector<float> weights = initial_weights_.empty() ? initial_weights(model_, config_.seed) : initial_weights_;
        strategy->build(model_, config_.batch_size, config_.optimizer, weights);
        strategy->set_detailed_stats(config_.detailed_step_stats);
        log(LogLevel::Info, "Optimizer: " + config_.optimizer.describe());

        PipelineOptions options;
        options.batch_size = config_.batch_size;
        options.shuffle = config_.shuffle;
        options.seed = config_.seed;
        options.prefetch_batches = config_.prefetch_batches;
        Pipeline pipeline(data_.train_ids, data_.train_labels, options);
        std::int64_t steps = pipeline.steps_per_epoch();
        if (config_.max_steps_per_epoch > 0) steps = std::min(steps, config_.max_steps_per_epoch);
        const bool has_validation = data_.validation_ids && data_.validation_ids->count > 0;
        const std::int64_t validation_steps =
            has_validation ? (data_.validation_ids->count + config_.batch_size - 1) / config_.batch_size : 0;

        TrainBeginEvent begin;
        begin.epochs = config_.epochs;
        begin.steps_per_epoch = steps;
        begin.validation_steps = validation_steps;
        begin.replicas = replicas;
        begin.global_batch = config_.batch_size;
        begin.devices = strategy->device_names();
        begin.strategy = strategy->name();
        begin.all_reduce = replicas > 1 ? std::string(all_reduce_name(strategy->all_reduce_algorithm())) : "none";
        begin.parameters = model_.total_params();
        publish(begin);
        log(LogLevel::Info, "Train for " + std::to_string(steps) + " steps" +
                                (has_validation ? ", validate for " + std::to_string(validation_steps) + " steps" : ""));
        publish(MemoryEvent{strategy->memory()});

        EarlyStoppingConfig early = config_.early_stopping;
        const bool maximize = higher_is_better(early.monitor);
        double best_value = maximize ? -INFINITY : INFINITY;
        int best_epoch = 0, wait = 0;
        std::vector<float> best_weights;
        double best_val_loss = INFINITY;
        int best_val_epoch = 0;
        FinishReason reason = FinishReason::Completed;
        StopPoint stop;
        std::int64_t global_step = 0;
        auto last_memory_event = Clock::now();

        for (epoch = 1; epoch <= config_.epochs; ++epoch) {
            publish(EpochBeginEvent{epoch, config_.epochs, steps});
            pipeline.start_epoch(epoch - 1);
            const auto epoch_start = Clock::now();
            LossCounts running;
            bool stopped = false;
            std::int64_t steps_done = 0;  // counted, not derived from `step`: a stop can come before or after one
            for (step = 1; step <= steps; ++step) {
                if (!wait_if_paused()) {
                    stopped = true;
                    break;
                }
                const auto step_start = Clock::now();
                std::optional<Batch> batch = pipeline.next();
                if (!batch) break;
                const double data_wait_ms = seconds_since(step_start) * 1000.0;
                const TrainStepResult& step_result =
                    strategy->train_step(batch->ids.data(), batch->labels.data(), batch->size,
                                         config_.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(global_step));
                if (!step_result.finite) {
                    const Metrics so_far = to_metrics(running);
                    std::string text = "the loss became " +
                                       std::string(std::isnan(step_result.counts.loss_sum) ? "NaN" : "infinite") +
                                       " at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                                       "; training stopped and the weights from before this step are kept";
                    if (std::isfinite(so_far.loss)) text += " (running loss was " + fixed(so_far.loss) + ")";
                    char rate[32];
                    std::snprintf(rate, sizeof rate, "%g", config_.optimizer.learning_rate);
                    text += ". Lower the learning rate (now " + std::string(rate) + ") or check the data for extreme values.";
                    return fail("nan_loss", text);
                }
                ++global_step;
                ++steps_done;
                running += step_result.counts;
                if (config_.emit_step_events) {
                    StepEndEvent event;
                    event.epoch = epoch;
                    event.step = step;
                    event.steps = steps;
                    event.global_step = global_step;
                    event.running = to_metrics(running);
                    event.step_time_ms = seconds_since(step_start) * 1000.0;
                    event.samples_per_second = event.step_time_ms > 0 ? batch->size * 1000.0 / event.step_time_ms : 0.0;
                    event.allreduce_bytes_per_replica = strategy->allreduce_bytes_per_replica();
                    event.all_reduce = begin.all_reduce;
                    event.allreduce_bytes_total = strategy->allreduce_bytes_total();
                    event.gradient_bytes = strategy->gradient_bytes();
                    event.replicas = step_result.replicas;
                    for (auto& phase : event.replicas) phase.data_wait_ms = data_wait_ms;
                    publish(event);
                }
                pipeline.recycle(std::move(*batch));
                if (seconds_since(last_memory_event) > 0.5) {
                    publish(MemoryEvent{strategy->memory()});
                    last_memory_event = Clock::now();
                }
                if (stop_requested_) {
                    stopped = true;
                    break;
                }
            }
            const double train_seconds = seconds_since(epoch_start);
            if (stopped) {
                reason = FinishReason::StoppedByUser;
                stop = StopPoint{StopPhase::Training, epoch, steps_done, steps, 0, 0};
                log(LogLevel::Info, "Stopped by the user during epoch " + std::to_string(epoch) + " after " +
                                        std::to_string(steps_done) + " of " + std::to_string(steps) +
                                        " steps; the epochs before it are kept.");
                break;
            }
            EpochRecord record;
            record.epoch = epoch;
            record.train = to_metrics(running);
            if (has_validation) {
                publish(ValidationBeginEvent{epoch, validation_steps});
                std::int64_t validated = 0;
                const std::optional<Metrics> validation = evaluate(*strategy, validated);
                if (!validation) {
                    reason = FinishReason::StoppedByUser;
                    stop = StopPoint{StopPhase::Validation, epoch, steps_done, steps, validated, validation_steps};
                    log(LogLevel::Info, "Stopped by the user during the validation of epoch " + std::to_string(epoch) +
                                            " after " + std::to_string(validated) + " of " +
                                            std::to_string(validation_steps) +
                                            " validation steps; the epoch is incomplete and not kept, the epochs before it are.");
                    break;
                }
                record.validation = *validation;
                record.has_validation = true;
            }
            record.epoch_seconds = seconds_since(epoch_start);
            {
                std::lock_guard lock(mutex_);
                history_.epochs.push_back(record);
            }
            EpochEndEvent end;
            end.epoch = epoch;
            end.epochs = config_.epochs;
            end.steps = steps;
            end.train = record.train;
            end.validation = record.validation;
            end.has_validation = record.has_validation;
            end.epoch_seconds = record.epoch_seconds;
            end.ms_per_step = steps > 0 ? train_seconds * 1000.0 / static_cast<double>(steps) : 0.0;
            publish(end);
            publish(MemoryEvent{strategy->memory()});
            keep_weights();

            // Overfitting: validation loss turning up while training loss keeps falling.
            if (record.has_validation) {
                if (record.validation.loss < best_val_loss) {
                    best_val_loss = record.validation.loss;
                    best_val_epoch = epoch;
                }
                const auto& all = history_.epochs;
                if (config_.overfitting_monitor && all.size() >= 2) {
                    const EpochRecord& previous = all[all.size() - 2];
                    if (record.validation.loss > previous.validation.loss && record.train.loss < previous.train.loss) {
                        std::string text = "Epoch " + std::to_string(epoch) + ": validation loss rose to " +
                                           fixed(record.validation.loss) + " (from " + fixed(previous.validation.loss) +
                                           ") while training loss fell to " + fixed(record.train.loss) +
                                           ": the model is starting to overfit. Best epoch so far: " +
                                           std::to_string(best_val_epoch) + " (val_loss " + fixed(best_val_loss) + ").";
                        if (!early.enabled) text += " Early stopping with restore_best_weights would keep epoch " + std::to_string(best_val_epoch) + ".";
                        publish(WarningEvent{"overfitting", text, epoch, best_val_epoch});
                        log(LogLevel::Warning, text);
                    }
                }
            }

            // Keras' EarlyStopping.
            if (early.enabled && epoch > early.start_from_epoch) {
                const double value = monitored_value(record, early.monitor);
                if (std::isnan(value)) {
                    log(LogLevel::Warning, "early stopping monitors '" + early.monitor + "', which this run does not have");
                } else {
                    const bool improved = maximize ? value - early.min_delta > best_value : value + early.min_delta < best_value;
                    if (improved || best_epoch == 0) {
                        best_value = value;
                        best_epoch = epoch;
                        wait = 0;
                        if (early.restore_best_weights) best_weights = strategy->weights();
                    } else if (++wait >= early.patience) {  // Keras: patience 0 and 1 both stop at the first miss
                        reason = FinishReason::EarlyStopping;
                        std::string text = "Epoch " + std::to_string(epoch) + ": early stopping (" + early.monitor +
                                           " has not improved for " + std::to_string(wait) + " epoch" + (wait == 1 ? "" : "s") +
                                           "; best " + fixed(best_value) + " at epoch " + std::to_string(best_epoch) + ")";
                        publish(WarningEvent{"early_stopping", text, epoch, best_epoch});
                        log(LogLevel::Info, text);
                        break;
                    }
                }
            }
            if (stop_requested_) {
                reason = FinishReason::StoppedByUser;
                stop = StopPoint{StopPhase::BetweenEpochs, epoch, steps_done, steps, 0, 0};
                break;
            }
        }

        FinishedEvent finished;
        finished.reason = reason;
        if (reason == FinishReason::StoppedByUser) finished.stop = stop;
        finished.epochs_completed = static_cast<int>(history().epochs.size());
        finished.best_epoch = early.enabled ? best_epoch : best_val_epoch;
        if (reason == FinishReason::EarlyStopping && early.restore_best_weights && !best_weights.empty()) {
            strategy->set_weights(best_weights);
            finished.restored_epoch = best_epoch;
            log(LogLevel::Info, "Restoring model weights from the end of the best epoch: " + std::to_string(best_epoch) + ".");
        }
        keep_weights();
        const int done = finished.epochs_completed;
        const std::string epochs_text = std::to_string(done) + (done == 1 ? " epoch." : " epochs.");
        finished.text = reason == FinishReason::Completed       ? "Training finished after " + epochs_text
                        : reason == FinishReason::EarlyStopping ? "Training stopped early after " + epochs_text
                                                                : "Training stopped by the user after " + std::to_string(done) +
                                                                      (done == 1 ? " complete epoch." : " complete epochs.");
        result.finished = finished;
        result.ok = true;
        return result;
    } catch (...) {
        failure = std::current_exception();
    }
    // Described and reported here, outside the handler (see fail()).
    const std::string kind = failure_kind(failure);
    const char* what = message_of(failure);
    return fail(kind, kind == "internal" ? std::string("training failed: ") + what : std::string(what));
}

}  // namespace mirrorlab
