#include "ui/training/training_controller.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QThread>

#include "core/data/source.h"
#include "core/device/plugin_loader.h"
#include "core/optim/optimizer.h"
#include "core/util/error.h"

namespace mirrorlab::ui {

TrainingController::TrainingController(QObject* parent)
    : QObject(parent), registry_(std::make_shared<DeviceRegistry>()) {
    load_gpu_plugin(*registry_);
    drain_timer_.setInterval(50);
    connect(&drain_timer_, &QTimer::timeout, this, &TrainingController::drainEvents);
}

TrainingController::~TrainingController() {
    if (trainer_) {
        trainer_->request_stop();
        trainer_->wait();
    }
}

int TrainingController::start(const RunSettings& settings) {
    if (trainer_) {
        trainer_->request_stop();
        trainer_->wait();
        drainEvents();
    }
    RunRecord record;
    record.id = runs_.empty() ? 1 : runs_.back().id + 1;
    record.devices_spec = QString::fromStdString(settings.devices.to_spec());
    record.data_name = settings.data_name;
    record.model_name = QString::fromStdString(settings.model->name());
    record.config = settings.config;
    record.title = tr("Run %1 - %2 - %3 %4 - batch %5")
                       .arg(record.id)
                       .arg(record.devices_spec)
                       .arg(QString::fromUtf8(optimizer_name(settings.config.optimizer.kind).data()))
                       .arg(settings.config.optimizer.learning_rate)
                       .arg(settings.config.batch_size);
    record.running = true;
    runs_.push_back(record);

    TrainData data;
    try {
        // As mirrorlab-cli does by default: ids beyond the Embedding's input_dim (a validation split
        // may hold words the training split never had, as Keras' load_data allows) become the OOV
        // id, and the trainer shows the warning that says how many.
        data = make_train_data(*settings.data, settings.model->input_length(), settings.model->vocabulary_size(),
                               OovPolicy::MapToOov);
    } catch (const Error& error) {
        // Nothing ran: the run is recorded as failed with the reason, as the engine's own failures are.
        trainer_.reset();  // the previous run's trainer must not stand for this one
        emit runStarted(record.id);
        std::vector<StepEndEvent> no_steps;
        onEvent(FailedEvent{"data", error.what(), 0, 0}, no_steps);
        return record.id;
    }
    trainer_ = std::make_unique<Trainer>(*settings.model, settings.devices, settings.config, std::move(data), registry_);
    trainer_->set_event_sink([this](const Event& event) {
        {
            std::lock_guard lock(queue_mutex_);
            queue_.push_back(event);
        }
        // Slow motion: hold the engine after every step until the person asks for the next one.
        if (std::holds_alternative<StepEndEvent>(event) && step_once_) trainer_->pause();
    });
    trainer_->start();
    drain_timer_.start();
    setState(State::Running);
    emit runStarted(record.id);
    return record.id;
}

void TrainingController::pause() {
    if (!trainer_ || state_ != State::Running) return;
    trainer_->pause();
    setState(State::Paused);
}

void TrainingController::resume() {
    if (!trainer_ || state_ != State::Paused) return;
    step_once_ = false;
    trainer_->resume();
    setState(State::Running);
}

void TrainingController::stepOnce() {
    if (!trainer_ || (state_ != State::Paused && state_ != State::Running)) return;
    step_once_ = true;
    trainer_->resume();
    setState(State::Paused);
}

void TrainingController::stop() {
    if (!trainer_ || state_ == State::Idle) return;
    step_once_ = false;
    trainer_->request_stop();
    setState(State::Stopping);
}

const RunRecord* TrainingController::run(int id) const {
    for (const auto& record : runs_) {
        if (record.id == id) return &record;
    }
    return nullptr;
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
                setState(State::Idle);
                emit runFinished(e);
            } else if constexpr (std::is_same_v<T, FailedEvent>) {
                record.failed = e;
                record.running = false;
                setState(State::Idle);
                emit runFailed(e);
            }
        },
        event);
}

void TrainingController::drainEvents() {
    std::vector<Event> pending;
    {
        std::lock_guard lock(queue_mutex_);
        pending.swap(queue_);
    }
    if (pending.empty() || runs_.empty()) return;
    std::vector<StepEndEvent> steps;
    for (const Event& event : pending) onEvent(event, steps);
    if (!steps.empty()) emit stepsEnded(steps);
    if (state_ == State::Idle) drain_timer_.stop();
}

bool TrainingController::waitForFinished(int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (state_ != State::Idle) {
        if (timeout_ms >= 0 && timer.elapsed() > timeout_ms) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        drainEvents();
        QThread::msleep(5);
    }
    return true;
}

}  // namespace mirrorlab::ui
