#pragma once
// Keras' ModelCheckpoint for MirrorLab checkpoints: at the end of each epoch the run's whole
// state goes to `last.mlckpt` in the run's folder (what resume starts from), and to `best.mlckpt`
// when the monitored metric improved (save_best_only writes only that one). A write that fails
// — a full disk, a folder that went away — is a warning in the log: training continues and the
// previous checkpoint stays in place, whole.
#include <functional>
#include <limits>
#include <string>

#include "core/store/checkpoint.h"
#include "core/train/callbacks.h"

namespace mirrorlab {

struct CheckpointOptions {
    std::string folder;  // must exist
    std::string monitor = "val_loss";
    bool save_best_only = false;
};

struct SavedCheckpoint {
    std::string path;
    std::string kind;  // "last", "best"
    int epoch = 0;
    std::int64_t global_step = 0;
    double monitor_value = 0.0;
};

class ModelCheckpoint final : public Callback {
public:
    // `base` holds what stays the same for the whole run (model, settings, devices, data, run id);
    // each save adds the state of the moment. `on_saved` (optional) hears of every file written.
    ModelCheckpoint(CheckpointOptions options, Checkpoint base, std::function<void(const SavedCheckpoint&)> on_saved = {});
    std::string name() const override { return "model_checkpoint"; }
    void on_epoch_end(FitContext& context, const EpochRecord& record) override;
    CallbackState state() const override;
    void restore(const CallbackState& state) override;

    static std::string last_path(const std::string& folder) { return folder + "/last.mlckpt"; }
    static std::string best_path(const std::string& folder) { return folder + "/best.mlckpt"; }

private:
    bool save(FitContext& context, const std::string& path, const std::string& kind, const TrainingState& state, double value);

    CheckpointOptions options_;
    Checkpoint base_;
    std::function<void(const SavedCheckpoint&)> on_saved_;
    bool maximize_;
    double best_value_;
};

}  // namespace mirrorlab
