#pragma once
// The bridge between the GUI thread and the training engine. The trainer runs on its own thread
// and hands events to a locked queue; a timer on the GUI thread drains the queue every 50 ms and
// re-emits the events as typed signals (steps in batches), so charts update in batches and no
// widget is touched from the training thread. Every run is kept as a RunRecord after it ends.
#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QProcess>
#include <QTemporaryDir>
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
#include "core/store/checkpoint.h"
#include "core/store/recorded_run.h"
#include "core/store/run_store.h"
#include "core/export/tensorboard.h"
#include "core/train/event_reader.h"
#include "core/train/events.h"
#include "core/train/trainer.h"
#include "ui/training/refresh_pacer.h"

namespace mirrorlab::ui {

// The step view shows a few steps a second: the replicas compute its gradient norms and checksums
// for at most one step in this many ms (and the steps it is asked to show one at a time).
inline constexpr double kDetailedStepStatsIntervalMs = 200.0;

struct RunSettings {
    std::shared_ptr<const Model> model;
    DeviceConfig devices;
    TrainConfig config;
    std::shared_ptr<const DatasetSplit> data;
    QString data_name;
    QString data_spec;  // the data panel's spec ("keras:/path", ...): kept so the run can be trained again
    // Weights to start from instead of the seeded initialisation (a model imported from Keras, to
    // fine-tune); empty for a fresh start. Model::variables() in order.
    std::vector<float> initial_weights;
};

// A kept run's settings, to put back into the forms ("Train again").
struct StoredSettings {
    std::shared_ptr<const Model> model;
    TrainConfig config;
    DeviceConfig devices;
    QString data_spec;
};

// One point of the streamed training curves: running means within the epoch, as Keras shows them.
struct StepPoint {
    std::int64_t global_step = 0;
    int epoch = 0;
    Metrics running;
};

struct RunRecord {
    int id = 0;  // the run store's id (kept across restarts), else numbered in this session
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
    // From the run store: runs of earlier sessions carry their stored status (interrupted ones
    // included) instead of finished/failed events.
    bool stored = false;      // recorded in the run store
    bool from_earlier = false;  // loaded from the store at start-up
    RunStatus stored_status = RunStatus::Invalid;
    QString status_text;
    QString name;
    QString note;
    bool has_checkpoint = false;
};

class TrainingController : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Running, Paused, Stopping };
    Q_ENUM(State)

    explicit TrainingController(QObject* parent = nullptr);
    ~TrainingController() override;

    std::shared_ptr<DeviceRegistry> registry() const { return registry_; }

    // How often the training views should redraw now (refresh_pacer.h): 500 ms, stretched up to
    // 2 s while a run on CPU devices keeps the cores busy and the GUI thread's share is over budget.
    int refreshIntervalMs() const { return pacer_.intervalMs(); }
    const RefreshPacer& refreshPacer() const { return pacer_; }

    // Starts a run; returns its id. Errors (bad devices, out of memory, ...) arrive as runFailed.
    int start(const RunSettings& settings);
    // Continues stored run `id` from its last checkpoint up to `total_epochs` on `devices`, with
    // `data` (which must be the data it was trained on). Returns the run id, or 0 with *error saying
    // why it cannot (no checkpoint, another model or data set, a damaged file).
    int resumeStored(int id, int total_epochs, const DeviceConfig& devices, std::shared_ptr<const DatasetSplit> data,
                     const QString& data_name, QString* error);

    // The run store (runs survive restarts): null when it could not be opened (storeProblem()
    // says why; training still works, unrecorded).
    RunStore* store() const { return store_.get(); }
    // Kept runs also write TensorBoard event files while they train, to <run folder>/tensorboard
    // (Keras' TensorBoard callback; on by default), so TensorBoard can watch a run live.
    void setLiveTensorBoard(bool enabled) { live_tensorboard_ = enabled; }
    bool liveTensorBoard() const { return live_tensorboard_; }
    // Where a kept run's live event files are ("" when the run writes none).
    QString liveTensorBoardFolder(int id) const;
    QString storeProblem() const { return store_problem_; }
    std::optional<StoredSettings> storedSettings(int id, QString* error) const;
    bool renameRun(int id, const QString& name, QString* error);
    bool annotateRun(int id, const QString& note, QString* error);
    bool deleteRun(int id, QString* error);
    // Follows a run in another process through the events it prints as `mirrorlab-cli train --json`
    // lines, from the file its output goes to (`mpirun -np 2 mirrorlab-cli train --json ... >
    // job.jsonl`: rank 0's events; or a single process's), read as it grows, and shows it like a run
    // of its own (training_controller_follow.cpp). It cannot be paused from here; stop() stops
    // following and leaves the job running. Returns the run id, or 0 with *error saying why.
    int follow(const QString& path, QString* error);
    bool following() const { return followed_ != nullptr; }
    // Trains `settings` on `workers` processes started by mpirun (MultiWorkerMirroredStrategy; each
    // worker uses `settings.devices`): on this host, or on `hosts` (mpirun's --host list,
    // "localhost:2,node2:2", this host first: rank 0 runs there). The model and every training
    // setting are handed to `mirrorlab-cli train --json` in files that rank 0 reads and sends to the
    // others; rank 0's events are followed as follow() does, the run kept in this store by rank 0.
    // stop() ends the job (mpirun sends every worker SIGTERM). Returns the run id, or 0 with *error
    // (no mpirun, no mirrorlab-cli, data the workers cannot load by name, weights imported into this
    // window, a host list mpirun cannot take or that does not start with this host).
    int launchWorkers(const RunSettings& settings, int workers, QString* error, const QString& hosts = QString());
    bool jobRunning() const { return job_ != nullptr; }
    // The mirrorlab-cli the workers run (default: next to this program, else on PATH).
    void setCliPath(const QString& path) { cli_path_ = path; }

    void pause();
    void resume();
    void stop();
    // Pause between steps after each step (slow motion); the step view steps through one at a time.
    void stepOnce();
    // Runs started from now on hold after their first step, as stepOnce makes them (the step
    // view's slow motion). Set before the run's thread starts, so a fast engine cannot run ahead
    // of the GUI thread's runStarted handlers.
    void setStartHeld(bool held) { start_held_ = held; }
    bool startHeld() const { return start_held_; }

    State state() const { return state_; }
    const std::vector<RunRecord>& runs() const { return runs_; }
    const RunRecord* run(int id) const;
    const RunRecord* currentRun() const;
    std::vector<float> lastWeights() const;
    // The model and data of the latest run (null before the first): with lastWeights(), what the
    // Try it panel and the per-class report use.
    std::shared_ptr<const Model> lastModel() const { return last_settings_.model; }
    // The runs the store held at start-up, and how many of the most recent of them are listed.
    int storedRunsTotal() const { return stored_runs_total_; }
    static int storedRunsListed();
    std::shared_ptr<const DatasetSplit> lastData() const { return last_settings_.data; }

    // Drains pending events now (tests call this instead of waiting for the timer).
    void drainEvents();
    // Runs the event loop until the current run ends (true) or timeout_ms passes (false; -1: no
    // limit), as the application would meanwhile (tests, --screenshot).
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
    void runsChanged();  // renamed, annotated or deleted
    // The last run (whose weights Try it and the per-class report answer with) was deleted: they
    // are gone too.
    void lastRunDeleted();
    void stateChanged(mirrorlab::ui::TrainingController::State state);

private:
    void setState(State state);
    int nextRunId() const;
    void setIdAside(int id);
    void openStore();
    void loadStoredRuns();
    // `known_fingerprint`: the data's fingerprint when the caller has taken it already (resume).
    std::function<void(const std::string&)> warningSink(bool from_store);
    void launch(RunRecord record, const RunSettings& settings, TrainData data, std::optional<Checkpoint> resume,
                std::int64_t resume_run_id, std::optional<DataFingerprint> known_fingerprint = std::nullopt,
                std::optional<std::size_t> replaces = std::nullopt);
    void endRecording();
    bool editRun(int id, const QString& text, bool is_name, QString* error);
    void onEvent(const Event& event, std::vector<StepEndEvent>& steps);
    void readFollowed();
    void stopFollowing(const QString& why);
    void jobEnded(int exit_code);
    void endLingeringJob();
    void takeJobWeights(int id);

    std::shared_ptr<DeviceRegistry> registry_;
    std::unique_ptr<Trainer> trainer_;
    std::unique_ptr<RunStore> store_;
    QString store_problem_;
    // Declared after trainer_ and reset before it: the trainer's sink calls into it until its run ends.
    std::unique_ptr<RecordedRun> recorded_;
    bool live_tensorboard_ = true;
    std::unique_ptr<TensorBoardLogger> tensorboard_;  // the current run's live event files
    int tensorboard_run_ = 0;
    QTimer drain_timer_;
    RefreshPacer pacer_;            // sampled on every drain while a run goes
    QElapsedTimer pacer_clock_;     // the pacer's wall clock
    std::mutex queue_mutex_;
    std::vector<Event> queue_;
    std::vector<RunRecord> runs_;
    RunSettings last_settings_;
    int stored_runs_total_ = 0;
    std::vector<float> job_weights_;  // a job's run, from the checkpoint rank 0 kept (takeJobWeights)
    State state_ = State::Idle;
    // Written on the GUI thread, read by the training thread's event sink after every step.
    std::atomic<bool> step_once_{false};
    bool start_held_ = false;
    // The followed run's event file, its reader and the timer that reads what it has grown by.
    std::unique_ptr<QFile> followed_;
    EventLineReader follow_reader_;
    QTimer follow_timer_;
    QElapsedTimer follow_quiet_;  // since the file last grew
    bool follow_quiet_warned_ = false;
    // launchWorkers(): mpirun, the folder of the files it was handed, whether Stop ended it.
    std::unique_ptr<QProcess> job_;
    std::unique_ptr<QTemporaryDir> job_dir_;
    bool job_stopped_ = false;
    int job_run_id_ = 0;  // the job's run in runs_ (and, once rank 0 keeps it, in the store)
    bool launching_job_ = false;  // follow() called by launchWorkers()
    QString cli_path_;
};

}  // namespace mirrorlab::ui
