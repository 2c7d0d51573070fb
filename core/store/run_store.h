#pragma once
// The run store: every training run recorded as it happens, so that runs survive the window
// closing, a crash or `kill -9`. One SQLite database (WAL mode) indexes the runs — settings,
// model, devices, data, start and end, status, best epoch — and holds every step's and epoch's
// metrics; each run has a folder beside it for its checkpoints and exports:
//
//   <folder>/runs.sqlite
//   <folder>/runs/<id>/last.mlckpt, best.mlckpt, ...
//
// A run being recorded holds an advisory lock on <folder>/runs/<id>/.running; opening the store
// marks every run still "running" whose lock nobody holds as "interrupted" (its process died).
// Several MirrorLab processes may share a store; a write that finds the database locked waits up
// to `busy_timeout_ms` and then throws StoreError saying another MirrorLab holds it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/train/events.h"
#include "core/util/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mirrorlab {

class StoreError : public Error {
public:
    using Error::Error;
};

// Another MirrorLab holds the store's write lock past the wait: the store itself is fine.
class StoreLockedError : public StoreError {
public:
    using StoreError::StoreError;
};

enum class RunStatus { Invalid = 0, Running, Finished, Stopped, Failed, Interrupted };
std::string_view run_status_name(RunStatus status);   // "running", "finished", ...
RunStatus run_status_from_name(std::string_view name);  // Invalid for anything else

struct RunInfo {
    std::int64_t id = 0;
    std::string name;  // "Run 12" unless renamed
    std::string note;
    RunStatus status = RunStatus::Invalid;
    std::string status_text;  // the finish or failure text
    std::string started_at;   // ISO 8601 UTC, "2026-12-02T03:04:05Z"
    std::string ended_at;     // empty while running
    std::string settings_json;  // TrainConfig and the program's settings (data, devices)
    std::string model_json;
    std::string devices;  // "/device:CPU:0, /device:CPU:1"
    std::string data_name;
    std::int64_t parameters = 0;
    int replicas = 0;
    int epochs_planned = 0;
    int epochs_completed = 0;
    int best_epoch = 0;
    std::int64_t steps_recorded = 0;
    std::string folder;  // absolute path of the run's folder
};

struct StepRow {
    std::int64_t global_step = 0;
    int epoch = 0;
    std::int64_t step = 0;
    Metrics running;
    double step_time_ms = 0.0;
};

struct EpochRow {
    int epoch = 0;
    Metrics train;
    Metrics validation;
    bool has_validation = false;
    double seconds = 0.0;
};

struct CheckpointRow {
    std::string kind;  // "last", "best"
    std::string path;
    int epoch = 0;
    std::int64_t global_step = 0;
    double monitor_value = 0.0;
};

struct RunFilter {
    std::string text;  // matched against name, note, data and devices (case-insensitive)
    std::optional<RunStatus> status;
};

class RunStore {
public:
    // Opens (creating it and its folder when missing) the store in `folder`, and marks runs whose
    // process is gone as interrupted. Throws StoreError naming the file and what is wrong.
    explicit RunStore(std::string folder, int busy_timeout_ms = 5000);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    // $MIRRORLAB_DATA_DIR, else $XDG_DATA_HOME/MirrorLab, else ~/.local/share/MirrorLab: the
    // folder Qt's QStandardPaths::AppDataLocation names for the app.
    static std::string default_folder();

    const std::string& folder() const { return folder_; }

    // A new run, status running, with its folder created and locked by this process until
    // finish_run() or release_run(). Fills id, name, started_at and folder.
    RunInfo begin_run(RunInfo run);
    // Marks a stored run (a resumed one) as running again by this process; drops its steps and
    // epochs after `keep_epochs` / `keep_global_step` (those the checkpoint does not have); the run
    // now plans `epochs_planned` epochs in all.
    // `devices` and `replicas`: what the resumed run trains on now (it may be other devices).
    void reopen_run(std::int64_t id, int keep_epochs, std::int64_t keep_global_step, int epochs_planned, const std::string& devices,
                    int replicas);
    // The devices a run is listed with (a refused resume puts back the ones it had).
    void set_devices(std::int64_t id, const std::string& devices, int replicas);
    // Rows are written in one transaction per call.
    void append_steps(std::int64_t id, const std::vector<StepRow>& steps);
    void append_epoch(std::int64_t id, const EpochRow& epoch);
    void append_epochs(std::int64_t id, const std::vector<EpochRow>& epochs);
    void record_checkpoint(std::int64_t id, const CheckpointRow& checkpoint);
    // `epochs_planned` > 0 also sets the epochs planned (a refused resume puts the run's back);
    // `best_epoch` < 0 keeps the best epoch its checkpoints recorded (a failed run).
    void finish_run(std::int64_t id, RunStatus status, const std::string& text, int epochs_completed, int best_epoch,
                    int epochs_planned = 0);

    std::vector<RunInfo> list(const RunFilter& filter = {}) const;
    std::optional<RunInfo> find(std::int64_t id) const;
    RunInfo get(std::int64_t id) const;  // throws StoreError "there is no run 12 in <folder>"
    std::vector<EpochRow> epochs(std::int64_t id) const;
    std::vector<StepRow> steps(std::int64_t id) const;
    std::vector<CheckpointRow> checkpoints(std::int64_t id) const;

    // The highest id this store has given or set aside (0 for a new store).
    std::int64_t last_id() const;
    // Sets ids up to `id` aside: no run begun later gets one. A window numbers the runs it shows
    // but does not keep (one followed from another process's events, one the store refused) from
    // the store's ids, so that no kept run is ever numbered as one of them.
    void set_ids_aside_through(std::int64_t id);

    void rename(std::int64_t id, const std::string& name);  // a blank name restores the default "Run <id>"
    void annotate(std::int64_t id, const std::string& note);
    // Deletes the run, its rows and its folder. A run that is running cannot be deleted.
    void remove(std::int64_t id);

private:
    class Statement;
    // `doing` names the step in a failure's message ("locked ... (waited while writing the run's rows)").
    void execute(const char* sql, const char* doing = "setting up") const;
    // `work` in one write transaction (BEGIN IMMEDIATE), rolled back when it throws.
    void in_transaction(const std::function<void()>& work);
    void mark_interrupted_runs();
    // Run folders on disk that the database does not know of (runs.sqlite emptied, deleted or
    // replaced by an older copy) keep their ids: a new run must not write into one.
    void set_ids_aside_for_run_folders();
    void lock_run(std::int64_t id, const std::string& run_folder);
    void unlock_run(std::int64_t id);
    [[noreturn]] void fail(const std::string& doing) const;

    std::string folder_;
    int busy_timeout_ms_ = 5000;
    std::string database_path_;
    sqlite3* db_ = nullptr;
    std::vector<std::pair<std::int64_t, int>> held_locks_;  // run id, file descriptor
};

}  // namespace mirrorlab
