// `mirrorlab-cli train`: its options, the run, and how Ctrl-C / SIGTERM end it.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <unistd.h>

#include "app/cli_cluster.h"
#include "app/cli_commands.h"
#include "app/cli_store.h"
#include "core/data/source.h"
#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/export/tensorboard.h"
#include "core/model/model.h"
#include "core/store/recorded_run.h"
#include "core/train/events.h"
#include "core/train/progress.h"
#include "core/train/train_config_json.h"
#include "core/train/trainer.h"
#include "core/util/json.h"

namespace mirrorlab::cli {

namespace {

// Ctrl-C (SIGINT) and SIGTERM. The first asks the trainer to stop after the step in flight (the
// main loop below notices it); a second one, while that is still under way, ends the program at
// once. Only async-signal-safe work here: a lock-free atomic, write() and _exit().
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

// Under mpirun a SIGTERM comes from mpirun ending the job (a worker was lost, or the job was
// interrupted): the step in flight cannot finish without the other workers, so a worker leaves at
// once, saying why. Written before the handlers are installed; empty outside a cluster.
char g_cluster_term_text[160] = {};
std::size_t g_cluster_term_length = 0;

void on_stop_signal(int signal_number) {
    if (signal_number == SIGTERM && g_cluster_term_length > 0) {
        const ssize_t written = ::write(STDERR_FILENO, g_cluster_term_text, g_cluster_term_length);
        (void)written;
        ::_exit(128 + SIGTERM);
    }
    int none = 0;
    if (g_stop_signal.compare_exchange_strong(none, signal_number)) return;
    static const char kAgainInt[] = "mirrorlab-cli: Ctrl-C again: exiting at once\n";
    static const char kAgainTerm[] = "mirrorlab-cli: a second stop signal: exiting at once\n";
    const char* text = signal_number == SIGINT ? kAgainInt : kAgainTerm;
    const std::size_t length = signal_number == SIGINT ? sizeof kAgainInt - 1 : sizeof kAgainTerm - 1;
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    (void)written;  // nothing to do about a failed write on the way out
    ::_exit(128 + signal_number);
}

void prepare_cluster_stop_text(const ClusterSession& cluster) {
    if (!cluster.active()) return;
    const int length = std::snprintf(g_cluster_term_text, sizeof g_cluster_term_text,
                                     "mirrorlab-cli: worker %d: SIGTERM from mpirun, which ends the job (it names the lost "
                                     "worker, if one was lost); leaving now\n",
                                     cluster.rank());
    g_cluster_term_length = length > 0 ? std::min(static_cast<std::size_t>(length), sizeof g_cluster_term_text - 1) : 0;
}

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // the training threads' reads and writes carry on undisturbed
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    // The terminal closed (an ssh session dropped): the run stops as for SIGTERM, its checkpoints
    // and rows kept and its status "stopped", where the default action killed it mid-step. Under
    // nohup (SIGHUP ignored) it keeps ignoring it: the run was asked to outlive the terminal.
    struct sigaction hangup {};
    if (sigaction(SIGHUP, nullptr, &hangup) == 0 && hangup.sa_handler != SIG_IGN) sigaction(SIGHUP, &action, nullptr);
}

const char* signal_label(int signal_number) {
    return signal_number == SIGINT ? "Ctrl-C" : signal_number == SIGHUP ? "SIGHUP (the terminal closed)" : "SIGTERM";
}
const char* signal_name(int signal_number) {
    return signal_number == SIGINT ? "SIGINT" : signal_number == SIGHUP ? "SIGHUP" : "SIGTERM";
}

// "in epoch 4 after step 120/281; 3 complete epochs kept" (in the run store), or with --no-store
// "...; 3 complete epochs trained, none kept (--no-store)": nothing outlives the process then.
std::string describe_stop(const FinishedEvent& finished, bool recorded, const std::optional<SavedCheckpoint>& last_saved,
                          std::int64_t run_id) {
    const StopPoint& stop = finished.stop;
    std::string where;
    switch (stop.phase) {
        case StopPhase::Training:
            where = "in epoch " + std::to_string(stop.epoch) + " after step " + std::to_string(stop.step) + "/" +
                    std::to_string(stop.steps);
            break;
        case StopPhase::Validation:
            where = "in epoch " + std::to_string(stop.epoch) + ", validation step " + std::to_string(stop.validation_step) +
                    "/" + std::to_string(stop.validation_steps) + " (after all " + std::to_string(stop.steps) +
                    " training steps)";
            break;
        case StopPhase::BetweenEpochs:
        case StopPhase::Invalid: where = "after epoch " + std::to_string(stop.epoch); break;
    }
    const int kept = finished.epochs_completed;
    if (!recorded) {
        return where + "; " + std::to_string(kept) + (kept == 1 ? " complete epoch" : " complete epochs") +
               " trained, none kept (the run was not recorded)";
    }
    std::string text = where + "; " + std::to_string(kept) + (kept == 1 ? " complete epoch kept" : " complete epochs kept");
    // --checkpoint-every kept a step inside the epoch after them: "0 complete epochs kept" alone
    // hid that a resume continues from it.
    if (last_saved && last_saved->steps_into_epoch > 0 && last_saved->epoch == kept) {
        text += ", and a checkpoint after step " + std::to_string(last_saved->steps_into_epoch) + " of epoch " + std::to_string(kept + 1) +
                ": `mirrorlab-cli train --resume " + std::to_string(run_id) + "` continues from it";
    }
    return text;
}

// Tests only: once a stop signal has arrived, the trainer's next event is held this long before it
// is printed, standing in for a slow last step, so that a test can send the second Ctrl-C while
// the first one is still being honoured.
long long test_slow_stop_ms() {
    const char* text = std::getenv("MIRRORLAB_CLI_TEST_SLOW_STOP_MS");
    return text != nullptr ? std::atoll(text) : 0;
}

// What the command line asked for. The optimizer's settings are applied after parsing, in this
// order, because --optimizer resets the learning rate and the Keras semantics.
struct TrainOptions {
    std::optional<ModelOption> model;
    std::string data = "default";
    std::string devices;  // empty: every GPU, else cpu
    TrainConfig config;
    std::string optimizer;
    std::optional<double> learning_rate;
    std::string keras_semantics;
    OovPolicy oov = OovPolicy::MapToOov;
    bool json = false;
    // Keeping the run (core/store): where, under which name, whether at all, and what to resume.
    std::string store;
    std::string name;
    bool no_store = false;
    bool save_best_only = false;
    std::int64_t checkpoint_every = 0;
    std::string resume;
    // --config: every training setting from a file (train_config_to_json's, as a kept run holds them).
    std::string config_file;
    // Keras' TensorBoard callback: event files in DIR/train and DIR/validation.
    std::string tensorboard;
    bool tensorboard_batches = false;
    // Under mpirun: the workers compare their variables every this many steps (0: at epochs' ends).
    std::int64_t consistency_check_every = 100;
    // Options a resumed run takes from its checkpoint instead; naming one with --resume is a mistake.
    std::vector<const CLI::Option*> fixed_by_checkpoint;
    const CLI::Option* epochs_option = nullptr;
    const CLI::Option* data_option = nullptr;
};

void apply_optimizer(TrainOptions& options) {
    OptimizerConfig& optimizer = options.config.optimizer;
    if (!options.optimizer.empty()) optimizer = OptimizerConfig::defaults(optimizer_kind_from_name(options.optimizer));
    if (options.learning_rate) optimizer.learning_rate = *options.learning_rate;
    if (!options.keras_semantics.empty()) optimizer.follow_keras(embedding_update_from_name(options.keras_semantics));
    optimizer.validate();
}

void print_event(const Event& event, bool json) {
    if (json) {
        std::printf("%s\n", event_to_json(event).c_str());
    } else if (const auto* log = std::get_if<LogEvent>(&event)) {
        // The trainer's one error line is its failure's reason, which the command prints as its
        // last line ("mirrorlab-cli: error: ..."); once is enough.
        if (log->level != LogLevel::Error) std::fprintf(stderr, "%s\n", log_line(*log).c_str());
    } else if (const auto* begin = std::get_if<EpochBeginEvent>(&event)) {
        std::printf("Epoch %d/%d\n", begin->epoch, begin->epochs);
    } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
        std::printf("%s\n", keras_progress_line(*end).c_str());
    }
    std::fflush(stdout);
}

Trainer::EventSink printing_sink(bool json) {
    return [json, slow_stop_ms = test_slow_stop_ms(), held = false](const Event& event) mutable {
        if (slow_stop_ms > 0 && !held && g_stop_signal.load() != 0) {
            held = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(slow_stop_ms));
        }
        print_event(event, json);
    };
}

// The TensorBoard callback when --tensorboard asked for one. A folder it cannot write is a warning
// (at the start of training, naming the folder) and the run trains on without event files.
std::unique_ptr<TensorBoardLogger> tensorboard_logger(const TrainOptions& options) {
    if (options.tensorboard.empty()) return nullptr;
    TensorBoardOptions tensorboard;
    tensorboard.log_dir = options.tensorboard;
    tensorboard.batches = options.tensorboard_batches;
    tensorboard.learning_rate = options.config.optimizer.learning_rate;
    return std::make_unique<TensorBoardLogger>(
        tensorboard, [](const std::string& text) { std::fprintf(stderr, "WARNING: %s\n", text.c_str()); });
}

// What the trainer's events go to besides the store: the TensorBoard files, then the terminal.
Trainer::EventSink output_sink(const TrainOptions& options, TensorBoardLogger* tensorboard) {
    Trainer::EventSink print = printing_sink(options.json);
    if (!tensorboard) return print;
    return [print = std::move(print), tensorboard](const Event& event) {
        tensorboard->consume(event);
        print(event);
    };
}

// Runs until the trainer ends, asking it to stop at the first signal; returns that signal or 0.
int run_until_done(Trainer& trainer) {
    install_stop_handlers();
    trainer.start();
    int stop_signal = 0;
    while (trainer.running()) {
        if (stop_signal == 0 && (stop_signal = g_stop_signal.load()) != 0) {
            std::fprintf(stderr, "mirrorlab-cli: %s: stopping after the current step; %s\n", signal_label(stop_signal),
                         stop_signal == SIGINT ? "press Ctrl-C again to quit at once" : "a second stop signal quits at once");
            std::fflush(stderr);
            trainer.request_stop();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    trainer.wait();
    return stop_signal;
}

// Stopped by a signal: the exit status says so (128 + the signal, as a shell reports it), so a
// script can tell a stopped run from a finished one.
int report_stopped(const FinishedEvent& finished, int stop_signal, bool json, bool recorded,
                   const std::optional<SavedCheckpoint>& last_saved, std::int64_t run_id) {
    const int exit_code = 128 + stop_signal;
    const std::string text =
        std::string("stopped by ") + signal_label(stop_signal) + " " + describe_stop(finished, recorded, last_saved, run_id);
    if (json) {
        json::Value event = json::Value::object();
        event.set("type", "interrupted");
        event.set("signal", signal_name(stop_signal));
        event.set("exit_code", exit_code);
        event.set("epochs_completed", finished.epochs_completed);
        put_stop_point(event, finished.stop);
        event.set("text", text);
        std::printf("%s\n", json::dump(event, -1, json::InvalidUtf8::Replace).c_str());
        std::fflush(stdout);
    }
    std::fprintf(stderr, "mirrorlab-cli: %s\n", text.c_str());
    return exit_code;
}

// What the run starts from: the command line, or with --resume the checkpoint (its model, settings
// and data; --epochs, --devices and --data may still be given).
struct RunStart {
    Model model;
    std::optional<CheckpointSource> resume;
};

// The checkpoint --resume names: rank 0 finds it (in its store) and sends it to the other workers,
// so that only rank 0 needs the store.
CheckpointSource resume_source(const TrainOptions& options, RunStore* store, ClusterSession& cluster) {
    std::optional<CheckpointSource> found;
    const std::string bytes = cluster.from_leader([&] {
        if (!store) throw UsageError("--resume needs the run store; drop --no-store");
        found = find_checkpoint(*store, options.resume);
        return cluster.active() ? serialize_checkpoint(found->checkpoint) : std::string();
    });
    if (found) return std::move(*found);
    CheckpointSource shared;
    shared.path = "rank 0's checkpoint of " + options.resume;
    shared.checkpoint = parse_checkpoint(bytes, shared.path);
    return shared;
}

// --config FILE: the settings of the file, then --epochs and --steps-per-epoch where given; the
// other options that set what the file holds are refused (the file would silently win or lose).
void apply_config_file(TrainOptions& options, ClusterSession& cluster) {
    static const std::set<std::string> kAllowedBeside = {"--model", "--oov", "--name", "--save-best-only"};
    for (const CLI::Option* option : options.fixed_by_checkpoint) {
        if (option->count() > 0 && kAllowedBeside.count(option->get_name()) == 0) {
            throw UsageError(option->get_name() + " cannot be given with --config: the file holds the training settings " +
                             "(--epochs and --steps-per-epoch may override it)");
        }
    }
    const int epochs = options.config.epochs;
    const std::int64_t max_steps = options.config.max_steps_per_epoch;
    // Under mpirun rank 0 reads the file and sends it: workers on other hosts need no copy of it.
    const json::Value settings =
        cluster.active()
            ? json::parse(cluster.from_leader([&] { return json::dump(json::parse_file(options.config_file)); }),
                          options.config_file)
            : json::parse_file(options.config_file);
    try {
        options.config = train_config_from_json(settings, UnknownKeys::Refuse);
        options.config.optimizer.validate();
    } catch (const json::ParseError&) {
        throw;  // names the file, line and column already
    } catch (const DataError&) {
        throw;  // a file that cannot be read: named already
    } catch (const Error& error) {
        throw ModelError(options.config_file + ": " + error.what());
    }
    if (options.epochs_option->count() > 0) options.config.epochs = epochs;
    if (max_steps > 0) options.config.max_steps_per_epoch = max_steps;
}

// --model: under mpirun rank 0 reads the file and sends the model, so that workers on other hosts
// (the GUI's jobs write it to this host's temporary folder) need no copy of it.
Model shared_model(const TrainOptions& options, ClusterSession& cluster) {
    if (!cluster.active()) return options.model->model();
    std::optional<Model> read;
    const std::string text = cluster.from_leader([&] {
        read = options.model->model();
        return read->to_json_text();
    });
    return read ? std::move(*read) : Model::from_json_text(text, "rank 0's model");
}

// Under mpirun rank 0 reads the files and sends them (shared_model, apply_config_file,
// resume_source): the workers must all have been given the same kinds of file, or they would wait
// for different messages. Throws UsageError naming the ranks that differ.
void check_workers_given_alike(const TrainOptions& options, ClusterSession& cluster) {
    const bool model = options.model->given(), config = !options.config_file.empty(), resume = !options.resume.empty();
    std::string given;
    for (const auto& [is_given, name] : {std::pair{model, "--model"}, {config, "--config"}, {resume, "--resume"}}) {
        if (is_given) given += (given.empty() ? "" : " ") + std::string(name);
    }
    cluster.check_same((model ? 1u : 0u) | (config ? 2u : 0u) | (resume ? 4u : 0u), given.empty() ? "none of them" : given,
                       "The files given (--model, --config, --resume)",
                       "start every worker with the same options (mpirun -np K mirrorlab-cli train ...)");
}

RunStart plan_start(TrainOptions& options, RunStore* store, ClusterSession& cluster) {
    check_workers_given_alike(options, cluster);
    if (options.resume.empty() && !options.config_file.empty()) {
        apply_config_file(options, cluster);
        return {shared_model(options, cluster), std::nullopt};
    }
    if (options.resume.empty()) {
        apply_optimizer(options);
        return {shared_model(options, cluster), std::nullopt};
    }
    if (!options.config_file.empty()) throw UsageError("--config cannot be given with --resume: the checkpoint keeps the settings");
    for (const CLI::Option* option : options.fixed_by_checkpoint) {
        if (option->count() > 0) {
            throw UsageError(option->get_name() + " cannot be changed when resuming: the checkpoint keeps the run's " +
                             "model and settings (only --epochs, --devices, --data and --steps-per-epoch may be given)");
        }
    }
    CheckpointSource source = resume_source(options, store, cluster);
    const int epochs = options.config.epochs;
    const std::int64_t max_steps = options.config.max_steps_per_epoch;
    options.config = source.checkpoint.config;
    if (options.epochs_option->count() > 0) options.config.epochs = epochs;
    if (max_steps > 0) options.config.max_steps_per_epoch = max_steps;
    const json::Value& settings = source.checkpoint.settings;
    if (options.data_option->count() == 0 && settings.is_object() && settings.contains("data")) options.data = settings.at("data").as_string();
    if (settings.is_object() && settings.contains("oov")) {
        options.oov = settings.at("oov").as_string() == "error" ? OovPolicy::Error : OovPolicy::MapToOov;
    }
    if (options.devices.empty()) options.devices = source.checkpoint.device_spec;
    Model model = Model::from_json_text(source.checkpoint.model_json, source.path);
    return {std::move(model), std::move(source)};
}

std::unique_ptr<RunStore> open_store(const TrainOptions& options) {
    if (options.no_store) return nullptr;
    try {
        return std::make_unique<RunStore>(store_folder(options.store));
    } catch (const StoreError& e) {
        // A store asked for by name that cannot be one (a file, a folder that may not be written)
        // is an error: the run trained unrecorded with a warning and exit status 0. The default
        // store, or one another MirrorLab holds locked, lets training go on unrecorded.
        const bool locked = dynamic_cast<const StoreLockedError*>(&e) != nullptr;
        if (!options.resume.empty() || (!options.store.empty() && !locked)) throw;
        std::fprintf(stderr, "WARNING: this run is not recorded: %s. Use --store DIR for another folder, or --no-store.\n", e.what());
        return nullptr;
    }
}

void announce_run(const RunInfo& run, bool resumed, bool json) {
    if (json) {
        json::Value event = json::Value::object();
        event.set("type", "run");
        event.set("id", run.id);
        event.set("name", run.name);
        event.set("folder", run.folder);
        event.set("resumed", resumed);
        std::printf("%s\n", json::dump(event, -1, json::InvalidUtf8::Replace).c_str());
    } else {
        std::printf("%s run %lld (\"%s\"), kept in %s\n", resumed ? "Resuming" : "Recording", static_cast<long long>(run.id),
                    run.name.c_str(), run.folder.c_str());
    }
    std::fflush(stdout);
}

// The run recorded in the store with its checkpoints, or nothing without a store. A store that
// cannot take a new run (locked by another MirrorLab past the wait, a full disk) is a warning and
// the run trains unrecorded; a resumed run must be recorded.
std::unique_ptr<RecordedRun> record_run(const TrainOptions& options, RunStore* store, Trainer& trainer, const Model& model,
                                        const DeviceConfig& devices, const DataFingerprint& fingerprint, const RunStart& start,
                                        const Trainer::EventSink& sink, int workers) {
    if (!store) {
        // Unrecorded (--no-store, or a worker other than rank 0): the checkpoint still sets the start.
        if (start.resume) trainer.set_resume_state(start.resume->checkpoint.state);
        return nullptr;
    }
    RunDescription description;
    description.name = options.name;
    description.model_json = model.to_json_text();
    description.config = options.config;
    description.devices = devices;
    description.data = fingerprint;
    description.settings.set("data", absolute_data_spec(options.data));  // found from any folder later
    description.settings.set("oov", options.oov == OovPolicy::Error ? "error" : "map");
    if (workers > 1) description.settings.set("workers", workers);
    description.workers = workers;
    description.save_best_only = options.save_best_only;
    description.checkpoint_every_steps = options.checkpoint_every;
    description.parameters = model.total_params();
    if (start.resume) {
        description.resume = start.resume->checkpoint;
        description.resume_run_id = start.resume->run_id;
    }
    try {
        return std::make_unique<RecordedRun>(*store, trainer, std::move(description), sink,
                                             [](const std::string& text) { std::fprintf(stderr, "WARNING: %s\n", text.c_str()); });
    } catch (const StoreError& e) {
        if (start.resume) throw;
        std::fprintf(stderr, "WARNING: this run is not recorded: %s\n", e.what());
        return nullptr;
    }
}

// Nothing from the workers other than rank 0: it speaks for the job.
Trainer::EventSink quiet_sink() {
    return [](const Event&) {};
}

int train_as_worker(TrainOptions& options, ClusterSession& cluster) {
    if (!cluster.leader()) {
        options.no_store = true;  // rank 0 keeps the run and its checkpoints
        options.tensorboard.clear();
    }
    std::unique_ptr<RunStore> store = open_store(options);
    RunStart start = plan_start(options, store.get(), cluster);
    const Model& model = start.model;
    auto registry = std::make_shared<DeviceRegistry>();
    load_gpu_plugin(*registry);
    const DeviceConfig devices =
        options.devices.empty() ? DeviceConfig::default_for(*registry) : DeviceConfig::parse(options.devices);
    devices.validate(*registry);

    // The split (token lists and words) is freed before training: only the padded ids train.
    TrainData data = [&] {
        const DatasetSplit split = load_dataset(options.data);
        TrainData padded = make_train_data(split, model.input_length(), model.vocabulary_size(), options.oov);
        if (!options.json && cluster.leader()) {
            std::printf("Data: %s - %zu training and %zu validation samples, %d classes%s\n", split.train.name.c_str(),
                        split.train.size(), split.validation.size(), split.train.num_classes,
                        split.train.synthetic ? " (synthetic)" : "");
            std::fflush(stdout);
        }
        return padded;
    }();
    const DataFingerprint fingerprint = fingerprint_of(data);
    if (start.resume) check_checkpoint_fits(start.resume->checkpoint, model, fingerprint, start.resume->path);
    if (cluster.active()) {
        check_workers_train_alike(cluster, static_cast<int>(plan_logical_devices(devices).size()), devices.to_spec(), fingerprint,
                                  model, options.config);
    }

    Trainer trainer(model, devices, options.config, std::move(data), registry);
    if (cluster.active()) {
        ClusterOptions cluster_options;
        cluster_options.workers = cluster.communicator();
        cluster_options.consistency_check_every_steps = options.consistency_check_every;
        cluster_options.perturb_weights_for_test = fault_injection_perturbs_weights(cluster.rank());
        trainer.set_cluster(cluster_options);
    }
    std::unique_ptr<TensorBoardLogger> tensorboard = tensorboard_logger(options);
    const Trainer::EventSink sink = cluster.leader() ? output_sink(options, tensorboard.get()) : quiet_sink();
    std::unique_ptr<RecordedRun> recorded =
        record_run(options, store.get(), trainer, model, devices, fingerprint, start, sink, cluster.size());
    if (recorded) {
        announce_run(recorded->info(), start.resume.has_value(), options.json);
    } else {
        trainer.set_event_sink(sink);
    }
    prepare_cluster_stop_text(cluster);
    const int stop_signal = run_until_done(trainer);
    const bool was_recorded = recorded != nullptr;
    const std::optional<SavedCheckpoint> last_saved = recorded ? recorded->last_saved() : std::nullopt;
    const std::int64_t run_id = recorded ? recorded->info().id : 0;
    recorded.reset();  // every row committed before the process reports its end
    tensorboard.reset();  // the event files closed
    const FitResult result = trainer.result();
    if (result.failed) {
        cluster.report_failure(result.failed->reason);
        return 1;
    }
    if (!result.finished) {
        cluster.report_failure("training ended without a result");
        return 1;
    }
    // A signal that came after the last epoch was done stopped nothing: that run finished.
    if (stop_signal != 0 && result.finished->reason == FinishReason::StoppedByUser) {
        if (!cluster.leader()) return 128 + stop_signal;
        return report_stopped(*result.finished, stop_signal, options.json, was_recorded, last_saved, run_id);
    }
    if (!options.json && cluster.leader()) std::fprintf(stderr, "INFO: %s\n", result.finished->text.c_str());
    return 0;
}

int command_train(TrainOptions& options) {
    ClusterSession cluster = ClusterSession::join_if_launched();
    if (!cluster.active()) return train_as_worker(options, cluster);
    return cluster.run_to_end([&] { return train_as_worker(options, cluster); });
}

// A decimal number ("0.001", "1e-3") a float32 holds: strtod alone also reads hex ("0x10" is 16),
// "inf" and "nan", none of which anyone means as a learning rate.
double learning_rate_from_text(const std::string& text) {
    const bool decimal = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos;
    char* end = nullptr;
    const double value = decimal ? std::strtod(text.c_str(), &end) : 0.0;  // under- and overflow: out of range below
    if (!decimal || end == text.c_str() || *end != '\0') {
        throw UsageError("--learning-rate must be a decimal number > 0, e.g. 0.001 or 1e-3, got '" + text + "'");
    }
    if (const std::string problem = OptimizerConfig::learning_rate_problem(value); !problem.empty()) {
        throw UsageError("--learning-rate " + problem + ", e.g. 0.001 or 1e-3, got '" + text + "'");
    }
    return value;
}

void add_optimizer_options(CLI::App& command, TrainOptions& options) {
    add_checked_option(
        command, "--optimizer", options.optimizer, [](const std::string& text) { (void)optimizer_kind_from_name(text); },
        "nadam | adam | sgd | rmsprop (default nadam)")
        ->type_name("NAME");
    command.add_option("--learning-rate", "(default: the optimizer's Keras default)")
        ->type_name("X")
        ->each([&options](const std::string& text) {
            options.learning_rate = learning_rate_from_text(text);
        });
    add_checked_option(command, "--keras-semantics", options.keras_semantics,
                       [](const std::string& text) { (void)embedding_update_from_name(text); },
                       "tf2 | keras3 | dense: which Keras the optimizer follows where they\n"
                       "differ (the Embedding's sparse update, Nadam's schedule): tf.keras 2\n"
                       "as in the tutorial (default), Keras 3 on TensorFlow, or Keras 3 on\n"
                       "JAX/PyTorch (dense gradients)")
        ->type_name("NAME");
    command.add_option("--all-reduce", "auto | reduce | ring (default auto)")
        ->type_name("NAME")
        ->each([&options](const std::string& text) {
            options.config.all_reduce = all_reduce_from_name(text);
            if (options.config.all_reduce == AllReduceAlgorithm::Invalid) {
                throw UsageError("--all-reduce must be auto, reduce or ring");
            }
        });
}

void add_run_options(CLI::App& command, TrainOptions& options) {
    TrainConfig& config = options.config;
    add_integer(command, "--epochs", config.epochs, 1, 1'000'000, "(default 10)");
    add_integer(command, "--batch-size", config.batch_size, 1, 1 << 24, "global batch (default 32)");
    add_integer(command, "--seed", config.seed, 0, std::numeric_limits<long long>::max(), "(default 0)");
    add_integer(
        command, "--early-stopping", 0, 1'000'000,
        [&config](long long patience) {
            config.early_stopping.enabled = true;
            config.early_stopping.patience = static_cast<int>(patience);
            config.early_stopping.restore_best_weights = true;
        },
        "stop when val_loss has not improved for PATIENCE epochs and\nrestore the best epoch's weights")
        ->type_name("PATIENCE");
    add_integer(command, "--consistency-check-every", options.consistency_check_every, 0, std::numeric_limits<long long>::max(),
                "under mpirun: the workers compare their variables every N steps\n"
                "and at each epoch's end; 0: only at epochs' ends (default 100)");
    add_integer(command, "--steps-per-epoch", config.max_steps_per_epoch, 1, std::numeric_limits<long long>::max(),
                "train on at most N batches per epoch (quick runs)");
}

void add_store_options(CLI::App& command, TrainOptions& options) {
    command.add_option("--store", options.store,
                       "the run store's folder (default: $MIRRORLAB_DATA_DIR, else\n"
                       "$XDG_DATA_HOME/MirrorLab, else ~/.local/share/MirrorLab): runs,\n"
                       "metrics and checkpoints")
        ->type_name("DIR");
    command.add_option("--name", options.name, "the run's name in the store (default: Run <id>)")->type_name("TEXT");
    command.add_flag("--no-store", options.no_store, "do not record the run or write checkpoints");
    command.add_flag("--save-best-only", options.save_best_only,
                     "checkpoint only epochs that improve val_loss (Keras' save_best_only)");
    add_integer(command, "--checkpoint-every", options.checkpoint_every, 1, std::numeric_limits<long long>::max(),
                "also checkpoint every N training steps inside epochs, so a killed\n"
                "run loses at most N steps (default: at each epoch's end only)");
    command.add_option("--config", options.config_file,
                       "every training setting from a JSON file (as the GUI and the run store keep\n"
                       "them: optimizer and its hyper-parameters, batch, seed, callbacks, ...);\n"
                       "--epochs and --steps-per-epoch may override it")
        ->type_name("FILE");
    command.add_option("--resume", options.resume,
                       "continue a stored run (its id) or a checkpoint file from its last\n"
                       "finished epoch; --epochs is the total, as Keras' initial_epoch")
        ->type_name("RUN|FILE");
    CLI::Option* tensorboard =
        command.add_option("--tensorboard", options.tensorboard,
                           "write TensorBoard event files as Keras' TensorBoard callback does:\n"
                           "DIR/train and DIR/validation, epoch_* scalars each epoch\n"
                           "(view them with `tensorboard --logdir DIR`)")
            ->type_name("DIR");
    command.add_flag("--tensorboard-batches", options.tensorboard_batches,
                     "also every step's batch_* scalars (Keras' update_freq=\"batch\")")
        ->needs(tensorboard);
}

}  // namespace

Command add_train_command(CLI::App& app) {
    CLI::App* command = add_command(app, "train", "train and print Keras progress lines");
    auto options = std::make_shared<TrainOptions>();
    options->model.emplace(*command);
    options->data_option = add_data_spec(*command, options->data,
                                         "default | synthetic | synthetic:TRAIN[:VALIDATION] | keras[:PATH]\n"
                                         "| reuters21578:DIR | folder:DIR | csv:FILE | tsv:FILE\n"
                                         "(default: Reuters when found locally, else synthetic)");
    command->add_option("--oov", "token ids beyond the Embedding's input_dim: map them to the\n"
                                 "out-of-vocabulary id with a warning (default), or stop")
        ->type_name("map|error")
        ->each([&oov = options->oov](const std::string& text) {
            if (text != "map" && text != "error") throw UsageError("--oov must be map or error");
            oov = text == "error" ? OovPolicy::Error : OovPolicy::MapToOov;
        });
    add_device_spec(*command, options->devices,
                    "cpu | cpu:2 | cpu:2x512MB | gpu:0 | gpu:0,gpu:1 | gpu:0:2x1024MB\n"
                    "| gpu:0:1024MB+2048MB | gpu:0:growth (default: every GPU, else cpu)");
    add_run_options(*command, *options);
    add_optimizer_options(*command, *options);
    command->add_flag("--json", options->json, "print every event as one JSON object per line instead");
    add_store_options(*command, *options);
    options->epochs_option = command->get_option("--epochs");
    for (const char* name : {"--model", "--batch-size", "--seed", "--early-stopping", "--oov", "--optimizer", "--learning-rate",
                             "--keras-semantics", "--all-reduce", "--name", "--save-best-only"}) {
        options->fixed_by_checkpoint.push_back(command->get_option(name));
    }
    return {command, [options] { return command_train(*options); }};
}

}  // namespace mirrorlab::cli
