#pragma once
// The bridge between the GUI thread and the training engine. The trainer runs on its own thread
// and hands events to a locked queue; a timer on the GUI thread drains the queue every 50 ms and
// re-emits the events as typed signals (steps in batches), so charts update in batches and no
// widget is touched from the training thread. Every run is kept as a RunRecord after it ends.
#include <QObject>
#include <QString>
#include <QTimer>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/data/dataset.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/train/events.h"
#include "core/train/trainer.h"

namespace mirrorlab::ui {

struct RunSettings {
    std::shared_ptr<const Model> model;
    DeviceConfig devices;
    TrainConfig config;
    std::shared_ptr<const DatasetSplit> data;
    QString data_name;
};

// One point of the streamed training curves: running means within the epoch, as Keras shows them.
struct StepPoint {
    std::int64_t global_step = 0;
    int epoch = 0;
    Metrics running;
};

struct RunRecord {
    int id = 0;
    QString title;  // "Run 3 - cpu:2x512MB - Nadam 0.001 - batch 32"
    QString devices_spec;
    QString data_name;
    QString model_name;
    TrainConfig config;
    std::int64_t steps_per_epoch = 0;
    std::vector<StepPoint> steps;
    std::vector<EpochRecord> epochs;
    std::vector<WarningEvent> warnings;
    int overfitting_epoch = 0;  // first epoch flagged by the overfitting monitor; 0 if none
    std::optional<FinishedEvent> finished;
    std::optional<FailedEvent> failed;
    bool running = false;
};

class TrainingController : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Running, Paused, Stopping };
    Q_ENUM(State)

    explicit TrainingController(QObject* parent = nullptr);
    ~TrainingController() override;

    std::shared_ptr<DeviceRegistry> registry() const { return registry_; }

    // Starts a run; returns its id. Errors (bad devices, out of memory, ...) arrive as runFailed.
    int start(const RunSettings& settings);
    void pause();
    void resume();
    void stop();
    // Pause between steps after each step (slow motion); the step view steps through one at a time.
    void stepOnce();

    State state() const { return state_; }
    const std::vector<RunRecord>& runs() const { return runs_; }
    const RunRecord* run(int id) const;
    const RunRecord* currentRun() const;

    // Drains pending events now (tests call this instead of waiting for the timer).
    void drainEvents();
    // Blocks until the current run ends, draining events meanwhile (tests, --screenshot).
    bool waitForFinished(int timeout_ms);

signals:
    void runStarted(int run_id);
    void trainBegan(const mirrorlab::TrainBeginEvent& event);
    void epochBegan(const mirrorlab::EpochBeginEvent& event);
    void stepsEnded(const std::vector<mirrorlab::StepEndEvent>& steps);
    void epochEnded(const mirrorlab::EpochEndEvent& event);
    void memoryUpdated(const mirrorlab::MemoryEvent& event);
    void warningRaised(const mirrorlab::WarningEvent& event);
    void logLine(const mirrorlab::LogEvent& event);
    void runFinished(const mirrorlab::FinishedEvent& event);
    void runFailed(const mirrorlab::FailedEvent& event);
    void stateChanged(mirrorlab::ui::TrainingController::State state);

private:
    void setState(State state);
    void onEvent(const Event& event, std::vector<StepEndEvent>& steps);

    std::shared_ptr<DeviceRegistry> registry_;
    std::unique_ptr<Trainer> trainer_;
    QTimer drain_timer_;
    std::mutex queue_mutex_;
    std::vector<Event> queue_;
    std::vector<RunRecord> runs_;
    State state_ = State::Idle;
    // Written on the GUI thread, read by the training thread's event sink after every step.
    std::atomic<bool> step_once_{false};
};

}  // namespace mirrorlab::ui
