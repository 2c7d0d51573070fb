#include "ui/training/training_controller.h"

#include <QEventLoop>
#include <QFileInfo>

#include <algorithm>

#include "core/data/source.h"
#include "core/device/plugin_loader.h"
#include "core/optim/optimizer.h"
#include "core/store/model_checkpoint.h"
#include "core/train/train_config_json.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab::ui {

TrainingController::TrainingController(QObject* parent)
    : QObject(parent), registry_(std::make_shared<DeviceRegistry>()) {
    load_gpu_plugin(*registry_);
    drain_timer_.setInterval(50);
    connect(&drain_timer_, &QTimer::timeout, this, &TrainingController::drainEvents);
    follow_timer_.setInterval(100);
    connect(&follow_timer_, &QTimer::timeout, this, &TrainingController::readFollowed);
    openStore();
}

TrainingController::~TrainingController() {
    if (job_) {  // the workers end with this window: after their step, or at once when they hang
        job_->disconnect(this);
        job_->terminate();
        if (!job_->waitForFinished(15000)) job_->kill();
        job_->waitForFinished(5000);
    }
    if (trainer_) {
        trainer_->request_stop();
        trainer_->wait();
    }
    endRecording();
}

namespace {

// The most recent runs shown from earlier sessions (each with its epochs and steps).
constexpr std::size_t kStoredRunsShown = 200;

QString titleOf(int id, const QString& devices, const TrainConfig& config) {
    return TrainingController::tr("Run %1 - %2 - %3 %4 - batch %5")
        .arg(id)
        .arg(devices)
        .arg(QString::fromUtf8(optimizer_name(config.optimizer.kind).data()))
        .arg(config.optimizer.learning_rate)
        .arg(config.batch_size);
}

}  // namespace

int TrainingController::storedRunsListed() { return static_cast<int>(kStoredRunsShown); }

void TrainingController::openStore() {
    try {
        store_ = std::make_unique<RunStore>(RunStore::default_folder());
        loadStoredRuns();
    } catch (const std::exception& error) {
        store_.reset();
        store_problem_ = tr("Runs are not kept: %1").arg(QString::fromStdString(error.what()));
    }
}

void TrainingController::loadStoredRuns() {
    std::vector<RunInfo> stored = store_->list();
    stored_runs_total_ = static_cast<int>(stored.size());
    if (stored.size() > kStoredRunsShown) stored.resize(kStoredRunsShown);
    for (auto it = stored.rbegin(); it != stored.rend(); ++it) {  // oldest first, as runs_ is ordered
        const RunInfo& info = *it;
        RunRecord record;
        record.id = static_cast<int>(info.id);
        record.stored = record.from_earlier = true;
        record.stored_status = info.status;
        record.status_text = QString::fromStdString(info.status_text);
        record.name = QString::fromStdString(info.name);
        record.note = QString::fromStdString(info.note);
        record.devices_spec = QString::fromStdString(info.devices);
        record.data_name = QString::fromStdString(info.data_name);
        try {
            const json::Value settings = json::parse(info.settings_json, "settings");
            if (const json::Value* config = settings.find("train_config")) record.config = train_config_from_json(*config);
        } catch (const std::exception&) {
            // A row another version wrote: shown without its settings.
        }
        record.config.epochs = info.epochs_planned;
        record.title = titleOf(record.id, record.devices_spec, record.config);
        for (const EpochRow& row : store_->epochs(info.id)) {
            record.epochs.push_back(EpochRecord{row.epoch, row.train, row.validation, row.has_validation, row.seconds});
        }
        for (const StepRow& row : store_->steps(info.id)) record.steps.push_back({row.global_step, row.epoch, row.running});
        record.has_checkpoint = !store_->checkpoints(info.id).empty();
        runs_.push_back(std::move(record));
    }
}

QString TrainingController::liveTensorBoardFolder(int id) const {
    if (!store_) return {};
    const QString folder = QString::fromStdString(store_->folder()) + QStringLiteral("/runs/%1/tensorboard").arg(id);
    return QFileInfo::exists(folder + QStringLiteral("/train")) ? folder : QString();
}

void TrainingController::endRecording() {
    tensorboard_.reset();  // closes the event files (the trainer's sink no longer calls it)
    if (!recorded_) return;
    const std::int64_t id = recorded_->info().id;
    recorded_.reset();  // commits the rows left
    if (!store_) return;
    bool has_checkpoint = false;
    try {
        has_checkpoint = !store_->checkpoints(id).empty();
    } catch (const std::exception&) {
        // A store that cannot be read now (an I/O error, recovery under way) must not end the
        // program from a timer: the run is offered without Resume, the store's rows stay.
    }
    for (RunRecord& record : runs_) {
        if (record.id == id) record.has_checkpoint = has_checkpoint;
    }
}

int TrainingController::start(const RunSettings& settings) {
    if (followed_) stopFollowing(tr("Stopped following the other process's run to train here."));
    endLingeringJob();
    if (trainer_) {
        trainer_->request_stop();
        trainer_->wait();
        drainEvents();
    }
    endRecording();
    RunRecord record;
    record.id = nextRunId();
    record.devices_spec = QString::fromStdString(settings.devices.to_spec());
    record.data_name = settings.data_name;
    record.model_name = QString::fromStdString(settings.model->name());
    record.config = settings.config;
    record.running = true;

    TrainData data;
    try {
        // As mirrorlab-cli does by default: ids beyond the Embedding's input_dim (a validation split
        // may hold words the training split never had, as Keras' load_data allows) become the OOV
        // id, and the trainer shows the warning that says how many.
        data = make_train_data(*settings.data, settings.model->input_length(), settings.model->vocabulary_size(),
                               OovPolicy::MapToOov);
    } catch (const std::exception& error) {  // also bad_alloc: padding a data set too large for memory
        // Nothing ran: the run is listed as failed with the reason, as the engine's own failures are.
        setIdAside(record.id);
        record.title = titleOf(record.id, record.devices_spec, record.config);
        runs_.push_back(record);
        last_settings_ = settings;
        trainer_.reset();  // the previous run's trainer must not stand for this one
        job_weights_.clear();
        emit runStarted(record.id);
        std::vector<StepEndEvent> no_steps;
        onEvent(FailedEvent{"data", error.what(), 0, 0}, no_steps);
        return record.id;
    }
    launch(std::move(record), settings, std::move(data), std::nullopt, 0);
    return runs_.back().id;
}

int TrainingController::resumeStored(int id, int total_epochs, const DeviceConfig& devices, std::shared_ptr<const DatasetSplit> data,
                                     const QString& data_name, QString* error) {
    if (state_ != State::Idle) {
        if (error) *error = tr("Stop the current run before resuming another.");
        return 0;
    }
    endLingeringJob();
    try {
        if (!store_) throw StoreError(store_problem_.toStdString());
        const RunInfo info = store_->get(id);
        Checkpoint checkpoint = load_checkpoint(checkpoint_path_of(info));
        auto model = std::make_shared<const Model>(Model::from_json_text(checkpoint.model_json, "checkpoint"));
        TrainData train_data = make_train_data(*data, model->input_length(), model->vocabulary_size(), OovPolicy::MapToOov);
        DataFingerprint fingerprint = fingerprint_of(train_data);
        check_checkpoint_fits(checkpoint, *model, fingerprint, "run " + std::to_string(id) + "'s checkpoint");
        RunSettings settings;
        settings.model = model;
        settings.devices = devices;
        settings.config = checkpoint.config;
        settings.config.epochs = total_epochs;
        settings.config.detailed_step_stats = true;
        settings.config.detailed_step_stats_interval_ms = kDetailedStepStatsIntervalMs;
        settings.data = std::move(data);
        settings.data_name = data_name;
        if (const json::Value* spec = checkpoint.settings.find("data"); spec && spec->is_string()) {
            settings.data_spec = QString::fromStdString(spec->as_string());
        }
        if (trainer_) trainer_->wait();
        endRecording();
        // The stored run continues in place: its record goes to the end, as the current run, once
        // the store has let it be resumed (until then the list, the last trainer and its weights
        // stay as they were).
        const auto listed = std::find_if(runs_.begin(), runs_.end(), [id](const RunRecord& r) { return r.id == id; });
        RunRecord record = listed != runs_.end() ? *listed : RunRecord{};
        const std::optional<std::size_t> listed_at =
            listed != runs_.end() ? std::optional<std::size_t>(static_cast<std::size_t>(listed - runs_.begin())) : std::nullopt;
        record.id = id;
        record.devices_spec = QString::fromStdString(devices.to_spec());
        record.config = settings.config;
        record.running = true;
        record.finished.reset();
        record.failed.reset();
        record.stored_status = RunStatus::Running;
        record.epochs.resize(static_cast<std::size_t>(checkpoint.state.epochs_done));
        std::erase_if(record.steps, [&](const StepPoint& step) { return step.global_step > checkpoint.state.global_step; });
        launch(std::move(record), settings, std::move(train_data), std::move(checkpoint), id, std::move(fingerprint), listed_at);
        return id;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return 0;
    }
}

// Starts the trainer for `record` (recorded in the store when there is one) and adds the record.
// A resume the store refuses throws before anything here changes: the listed runs, the last run's
// trainer (its weights) and settings stay as they were. `replaces`: the resumed run's place in the
// list, left for the end once it runs.
// Warnings from the recorder's and the TensorBoard writer's threads, queued for the GUI thread. The
// store's also go above the charts, where a run that stops being kept (or waits for another
// MirrorLab's lock) does not go unnoticed; its recovery is good news, not an error.
std::function<void(const std::string&)> TrainingController::warningSink(bool from_store) {
    return [this, from_store](const std::string& text) {
        std::lock_guard lock(queue_mutex_);
        queue_.push_back(LogEvent{LogLevel::Warning, text});
        if (!from_store) return;
        const bool recovered = text.rfind(RunRecorder::kRecoveredText, 0) == 0;
        queue_.push_back(WarningEvent{recovered ? "run_store_recovered" : "run_store", text, 0, 0});
    };
}

void TrainingController::launch(RunRecord record, const RunSettings& settings, TrainData data, std::optional<Checkpoint> resume,
                                std::int64_t resume_run_id, std::optional<DataFingerprint> known_fingerprint,
                                std::optional<std::size_t> replaces) {
    // Only a kept run needs the data's fingerprint (a hash of every training id): taken once.
    const DataFingerprint fingerprint = known_fingerprint ? std::move(*known_fingerprint)
                                        : store_          ? fingerprint_of(data)
                                                          : DataFingerprint{};
    auto trainer = std::make_unique<Trainer>(*settings.model, settings.devices, settings.config, std::move(data), registry_);
    if (!settings.initial_weights.empty() && !resume) trainer->set_initial_weights(settings.initial_weights);
    Trainer::EventSink queue = [this](const Event& event) {
        if (tensorboard_) tensorboard_->consume(event);  // never throws; a failed write is one warning
        {
            std::lock_guard lock(queue_mutex_);
            queue_.push_back(event);
        }
        // Slow motion: hold the engine after every step until the person asks for the next one.
        if (std::holds_alternative<StepEndEvent>(event) && step_once_) trainer_->pause();
    };
    std::optional<LogEvent> not_recorded;
    if (store_) {
        RunDescription description;
        description.model_json = settings.model->to_json_text();
        description.config = settings.config;
        description.devices = settings.devices;
        description.data = fingerprint;
        description.settings.set("data", absolute_data_spec(settings.data_spec.toStdString()));
        description.parameters = settings.model->total_params();
        description.resume = std::move(resume);
        description.resume_run_id = resume_run_id;
        auto warn = warningSink(false);
        auto warn_store = warningSink(true);
        try {
            recorded_ = std::make_unique<RecordedRun>(*store_, *trainer, std::move(description), queue, warn_store);
            record.id = static_cast<int>(recorded_->info().id);
            record.stored = true;
            record.stored_status = RunStatus::Running;
            record.name = QString::fromStdString(recorded_->info().name);
            if (live_tensorboard_) {
                TensorBoardOptions options;
                options.log_dir = recorded_->info().folder + "/tensorboard";
                options.learning_rate = settings.config.optimizer.learning_rate;
                tensorboard_ = std::make_unique<TensorBoardLogger>(options, warn);
                tensorboard_run_ = record.id;
            }
        } catch (const std::exception& error) {
            if (resume_run_id > 0) throw;
            not_recorded = LogEvent{LogLevel::Warning, tr("This run is not kept: %1").arg(QString::fromStdString(error.what())).toStdString()};
        }
    }
    trainer_ = std::move(trainer);
    job_weights_.clear();
    last_settings_ = settings;
    if (!recorded_) {
        trainer_->set_event_sink(queue);
        setIdAside(record.id);
    }
    record.title = titleOf(record.id, record.devices_spec, record.config);
    if (replaces && *replaces < runs_.size()) runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(*replaces));
    runs_.push_back(std::move(record));
    if (not_recorded) {
        std::lock_guard lock(queue_mutex_);
        queue_.push_back(*not_recorded);
        queue_.push_back(WarningEvent{"run_store", not_recorded->text, 0, 0});
    }
    // Slow motion from the first step: the sink holds the engine after it (as stepOnce).
    step_once_ = start_held_;
    trainer_->start();
    drain_timer_.start();
    // A run on CPU devices uses every core (the replicas share the thread pool), so the GUI
    // thread's time comes out of the training's.
    pacer_.setCoresBusy(std::any_of(settings.devices.devices.begin(), settings.devices.devices.end(),
                                    [](const DeviceChoice& choice) { return choice.type == DeviceType::CPU; }));
    pacer_clock_.start();
    setState(start_held_ ? State::Paused : State::Running);
    emit runStarted(runs_.back().id);
}

std::optional<StoredSettings> TrainingController::storedSettings(int id, QString* error) const {
    try {
        if (!store_) throw StoreError(store_problem_.toStdString());
        const RunInfo info = store_->get(id);
        StoredSettings stored;
        stored.model = std::make_shared<const Model>(Model::from_json_text(info.model_json, "run " + std::to_string(id)));
        const json::Value settings = json::parse(info.settings_json, "run settings");
        stored.config = train_config_from_json(settings.at("train_config"));
        stored.devices = DeviceConfig::parse(settings.at("devices").as_string());
        if (const json::Value* spec = settings.find("data"); spec && spec->is_string()) {
            stored.data_spec = QString::fromStdString(spec->as_string());
        }
        return stored;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
}

// A stored run's name or note: written to the store, then to the run's record.
bool TrainingController::editRun(int id, const QString& text, bool is_name, QString* error) {
    try {
        if (!store_) throw StoreError(store_problem_.toStdString());
        if (is_name) store_->rename(id, text.toStdString());
        else store_->annotate(id, text.toStdString());
        for (RunRecord& record : runs_) {
            if (record.id == id) (is_name ? record.name : record.note) = text;
        }
        emit runsChanged();
        return true;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

bool TrainingController::renameRun(int id, const QString& name, QString* error) { return editRun(id, name, true, error); }

bool TrainingController::annotateRun(int id, const QString& note, QString* error) { return editRun(id, note, false, error); }

bool TrainingController::deleteRun(int id, QString* error) {
    const RunRecord* current = currentRun();
    if (current && current->id == id && state_ != State::Idle) {
        if (error) *error = tr("Run %1 is training; stop it before deleting it.").arg(id);
        return false;
    }
    try {
        const RunRecord* record = run(id);
        if (record && record->stored) {
            if (!store_) throw StoreError(store_problem_.toStdString());
            store_->remove(id);
        }
        const bool last = current != nullptr && current->id == id;
        std::erase_if(runs_, [id](const RunRecord& r) { return r.id == id; });
        if (last) {
            // Its weights answered in Try it and the per-class report, and File > Export took it:
            // a deleted run leaves nothing behind that still stands for it.
            if (trainer_) trainer_->wait();
            trainer_.reset();
            job_weights_.clear();
            last_settings_ = RunSettings{};
        }
        emit runsChanged();
        if (last) emit lastRunDeleted();
        return true;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

void TrainingController::pause() {
    if (followed_) return;  // another process's run
    if (!trainer_ || state_ != State::Running) return;
    trainer_->pause();
    setState(State::Paused);
}

void TrainingController::resume() {
    if (followed_) return;  // another process's run
    if (!trainer_ || state_ != State::Paused) return;
    step_once_ = false;
    trainer_->resume();
    setState(State::Running);
}

void TrainingController::stepOnce() {
    if (followed_) return;  // another process's run
    if (!trainer_ || (state_ != State::Paused && state_ != State::Running)) return;
    step_once_ = true;
    trainer_->resume();
    setState(State::Paused);
}

void TrainingController::stop() {
    // The job's run is the one in progress while it is followed; once rank 0 has said the run ended,
    // a job still exiting is not what Stop is for.
    if (job_ && followed_) {  // mpirun passes SIGTERM to every worker: each ends after its step, rank 0 says so
        job_stopped_ = true;
        job_->terminate();
        setState(State::Stopping);
        return;
    }
    if (followed_) {
        stopFollowing(tr("Stopped following this run; it goes on in its own process."));
        return;
    }
    if (!trainer_ || state_ == State::Idle) return;
    step_once_ = false;
    trainer_->request_stop();
    setState(State::Stopping);
}

// After the last run listed and the last the store has numbered: a run rank 0 of a job started
// here keeps gets the store's next id, the one its record here is given.
int TrainingController::nextRunId() const {
    std::int64_t last = runs_.empty() ? 0 : runs_.back().id;
    if (store_) {
        try {
            last = std::max(last, store_->last_id());
        } catch (const std::exception&) {
            // A store another process holds locked: the list's numbers go on.
        }
    }
    return static_cast<int>(last + 1);
}

// A run shown here but not kept takes its number out of the store's, so that no kept run is later
// numbered as it (both would answer to one id in the Runs panel: selection, overlays, delete).
void TrainingController::setIdAside(int id) {
    if (!store_) return;
    try {
        store_->set_ids_aside_through(id);
    } catch (const std::exception&) {
        // The worst outcome is two runs with one number in this window's list.
    }
}

const RunRecord* TrainingController::run(int id) const {
    for (const auto& record : runs_) {
        if (record.id == id) return &record;
    }
    return nullptr;
}

std::vector<float> TrainingController::lastWeights() const { return trainer_ ? trainer_->weights() : job_weights_; }

// A job started here trains in its workers; rank 0 keeps the run in the store under the id shown
// here, with a checkpoint of its last epoch: its weights answer in Try it and the per-class report
// as a run here would. A followed run of another process has no model here, and nothing is taken.
void TrainingController::takeJobWeights(int id) {
    job_weights_.clear();
    if (!store_ || !last_settings_.model) return;
    try {
        Checkpoint checkpoint = load_checkpoint(checkpoint_path_of(store_->get(id)));
        if (Model::from_json_text(checkpoint.model_json, "the job's checkpoint").to_json_text() != last_settings_.model->to_json_text() ||
            static_cast<std::int64_t>(checkpoint.state.weights.size()) != last_settings_.model->total_params()) {
            return;  // another run took the id: not this job's weights
        }
        job_weights_ = std::move(checkpoint.state.weights);
    } catch (const std::exception&) {
        // No checkpoint (stopped in its first epoch) or none readable: Try it says to train first.
    }
}

const RunRecord* TrainingController::currentRun() const { return runs_.empty() ? nullptr : &runs_.back(); }

void TrainingController::setState(State state) {
    if (state_ == state) return;
    state_ = state;
    emit stateChanged(state);
}

void TrainingController::onEvent(const Event& event, std::vector<StepEndEvent>& steps) {
    RunRecord& record = runs_.back();
    // Steps are batched: flush them before any other event so the order is kept.
    if (!std::holds_alternative<StepEndEvent>(event) && !steps.empty()) {
        emit stepsEnded(steps);
        steps.clear();
    }
    std::visit(
        [&](const auto& e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, StepEndEvent>) {
                record.steps.push_back({e.global_step, e.epoch, e.running});
                steps.push_back(e);
            } else if constexpr (std::is_same_v<T, TrainBeginEvent>) {
                record.steps_per_epoch = e.steps_per_epoch;
                emit trainBegan(e);
            } else if constexpr (std::is_same_v<T, EpochBeginEvent>) {
                emit epochBegan(e);
            } else if constexpr (std::is_same_v<T, EpochEndEvent>) {
                EpochRecord epoch;
                epoch.epoch = e.epoch;
                epoch.train = e.train;
                epoch.validation = e.validation;
                epoch.has_validation = e.has_validation;
                epoch.epoch_seconds = e.epoch_seconds;
                record.epochs.push_back(epoch);
                emit epochEnded(e);
            } else if constexpr (std::is_same_v<T, MemoryEvent>) {
                emit memoryUpdated(e);
            } else if constexpr (std::is_same_v<T, WarningEvent>) {
                record.warnings.push_back(e);
                if (e.code == "overfitting" && record.overfitting_epoch == 0) record.overfitting_epoch = e.epoch;
                emit warningRaised(e);
            } else if constexpr (std::is_same_v<T, LogEvent>) {
                emit logLine(e);
            } else if constexpr (std::is_same_v<T, FinishedEvent>) {
                record.finished = e;
                record.running = false;
                if (record.stored) record.stored_status = e.reason == FinishReason::StoppedByUser ? RunStatus::Stopped : RunStatus::Finished;
                if (followed_) takeJobWeights(record.id);  // before Try it and the report ask for them
                setState(State::Idle);
                emit runFinished(e);
            } else if constexpr (std::is_same_v<T, FailedEvent>) {
                record.failed = e;
                record.running = false;
                if (record.stored) record.stored_status = RunStatus::Failed;
                setState(State::Idle);
                emit runFailed(e);
            }
        },
        event);
}

void TrainingController::drainEvents() {
    if (state_ != State::Idle) {
        pacer_.sample(static_cast<double>(pacer_clock_.nsecsElapsed()) * 1e-9, threadCpuSeconds());
    }
    std::vector<Event> pending;
    {
        std::lock_guard lock(queue_mutex_);
        pending.swap(queue_);
    }
    if (pending.empty() || runs_.empty()) return;
    std::vector<StepEndEvent> steps;
    for (const Event& event : pending) onEvent(event, steps);
    if (!steps.empty()) emit stepsEnded(steps);
    if (state_ == State::Idle) {
        drain_timer_.stop();
        pacer_.setCoresBusy(false);
        // The run has reported its end: its thread is finishing; once joined, its last rows are
        // committed and its checkpoints known.
        if (recorded_) {
            if (trainer_) trainer_->wait();
            endRecording();
            emit runsChanged();
        }
    }
}

bool TrainingController::waitForFinished(int timeout_ms) {
    if (state_ == State::Idle) return true;
    // An event loop that sleeps until something happens, as the application's own does: the run's
    // events arrive through the drain timer, the views refresh at their paced interval. (Polling
    // here every 5 ms woke the GUI thread 200 times a second; on a machine whose cores the replicas
    // hold, each wake-up takes one from a replica, so --screenshot, which gui_vs_cli.sh times,
    // trained slower than a person's window does.)
    QEventLoop loop;
    const QMetaObject::Connection ended = connect(this, &TrainingController::stateChanged, &loop, [&loop](State state) {
        if (state == State::Idle) loop.quit();
    });
    QTimer deadline;
    deadline.setSingleShot(true);
    deadline.setTimerType(Qt::PreciseTimer);  // a coarse timer may end the wait 5 % early
    connect(&deadline, &QTimer::timeout, &loop, &QEventLoop::quit);
    if (timeout_ms >= 0) deadline.start(timeout_ms);
    loop.exec();
    disconnect(ended);
    return state_ == State::Idle;
}

}  // namespace mirrorlab::ui
