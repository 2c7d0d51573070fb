#pragma once
// A Trainer whose run is kept: recorded in the run store as it happens and checkpointed into the
// run's folder each epoch. The CLI and the GUI both train through this, so a run started in one is
// listed, resumed, evaluated and exported the same way in the other.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/store/checkpoint.h"
#include "core/store/model_checkpoint.h"
#include "core/store/run_recorder.h"
#include "core/store/run_store.h"
#include "core/train/trainer.h"

namespace mirrorlab {

struct RunDescription {
    std::string name;  // empty: "Run <id>"
    std::string model_json;
    TrainConfig config;
    DeviceConfig devices;
    DataFingerprint data;
    // The program's own settings (the data spec and its options): kept in the store's row and in
    // every checkpoint, so "train again" and resume can rebuild them. An object.
    json::Value settings = json::Value::object();
    std::string monitor = "val_loss";  // for best.mlckpt
    bool save_best_only = false;
    std::int64_t checkpoint_every_steps = 0;  // also checkpoint inside epochs (0: at epochs' ends only)
    std::int64_t parameters = 0;
    int workers = 1;  // processes training together (mpirun -np K), each with `devices`
    // Resuming: the checkpoint to continue from, and the stored run it belongs to (0: a new run
    // that starts with the checkpoint's history).
    std::optional<Checkpoint> resume;
    std::int64_t resume_run_id = 0;
};

class RecordedRun {
public:
    // Creates (or reopens) the run in `store`, adds the checkpoint callback and the resume state to
    // `trainer`, and routes its events through the recorder to `downstream`. `warn` hears of a
    // store write that failed (training goes on). Throws StoreError / CheckpointError.
    RecordedRun(RunStore& store, Trainer& trainer, RunDescription description, Trainer::EventSink downstream,
                RunRecorder::WarningSink warn = {});
    ~RecordedRun();  // commits what is left
    RecordedRun(const RecordedRun&) = delete;
    RecordedRun& operator=(const RecordedRun&) = delete;

    const RunInfo& info() const { return info_; }
    void flush() { recorder_->flush(); }
    // The newest last.mlckpt written so far (inside an epoch with --checkpoint-every): what a
    // resume continues from, for the words said when the run is stopped.
    std::optional<SavedCheckpoint> last_saved() const;

private:
    struct LastSaved {
        mutable std::mutex mutex;
        std::optional<SavedCheckpoint> saved;
    };
    RunStore& store_;
    RunInfo info_;
    std::unique_ptr<RunRecorder> recorder_;
    std::shared_ptr<LastSaved> last_saved_ = std::make_shared<LastSaved>();  // written on the training thread
};

// The settings object a run stores: TrainConfig under "train_config" beside the program's own.
json::Value run_settings_json(const TrainConfig& config, const std::string& device_spec, const json::Value& program_settings);

// The checkpoint to continue a stored run from: its last.mlckpt, or best.mlckpt for a run that kept
// only that (save_best_only). Throws CheckpointError saying the run has none yet (it ended before
// its first epoch did), or that last.mlckpt is missing and best.mlckpt is there.
std::string checkpoint_path_of(const RunInfo& run, const std::string& which = "last");

}  // namespace mirrorlab
