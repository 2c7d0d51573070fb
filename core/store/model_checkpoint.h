#pragma once
// Keras' ModelCheckpoint for MirrorLab checkpoints: at the end of each epoch the run's whole
// state goes to `last.mlckpt` in the run's folder (what resume starts from), and to `best.mlckpt`
// when the monitored metric improved (save_best_only writes only that one). A write that fails
// — a full disk, a folder that went away — is a warning in the log: training continues and the
// previous checkpoint stays in place, whole.
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "core/store/checkpoint.h"
#include "core/train/callbacks.h"

namespace mirrorlab {

struct CheckpointOptions {
    std::string folder;  // must exist
    std::string monitor = "val_loss";
    bool save_best_only = false;
    // Also write last.mlckpt every this many training steps (0: only at epochs' ends), so that a
    // killed run loses at most these steps; Keras' save_freq as an integer.
    std::int64_t every_steps = 0;
};

struct SavedCheckpoint {
    std::string path;
    std::string kind;  // "last", "best"
    int epoch = 0;
    std::int64_t global_step = 0;
    double monitor_value = 0.0;
    std::int64_t steps_into_epoch = 0;  // > 0: taken inside epoch `epoch + 1`
};

class ModelCheckpoint final : public Callback {
public:
    // In the callback's state of a checkpoint whose weights are an earlier epoch's than its last.
    static constexpr const char* kWeightsOfEpochKey = "weights_of_epoch";
    // "epoch 4", or "epoch 3's weights (restored by early stopping after epoch 4)": what a command
    // reading the checkpoint says it took.
    static std::string weights_text(const TrainingState& state);
    // `base` holds what stays the same for the whole run (model, settings, devices, data, run id);
    // each save adds the state of the moment. `on_saved` (optional) hears of every file written.
    ModelCheckpoint(CheckpointOptions options, Checkpoint base, std::function<void(const SavedCheckpoint&)> on_saved = {});
    std::string name() const override { return "model_checkpoint"; }
    void on_epoch_end(FitContext& context, const EpochRecord& record) override;
    bool wants_steps() const override { return options_.every_steps > 0; }
    void on_step_end(FitContext& context, int epoch, std::int64_t global_step) override;
    // Early stopping restored the best epoch's weights: last.mlckpt is written again with them, as
    // Keras' model holds them after fit(), so that evaluate, predict, export and a resume take them
    // (the history keeps every epoch). Not with save_best_only, which keeps best.mlckpt alone.
    void on_train_end(FitContext& context, FinishedEvent& finished) override;
    CallbackState state() const override;
    void restore(const CallbackState& state) override;

    // Called before each file is written (the run recorder commits the steps the checkpoint
    // covers, so the store never lacks a step that a resume would not train again).
    void set_before_save(std::function<void()> before_save) { before_save_ = std::move(before_save); }

    static std::string last_path(const std::string& folder) { return folder + "/last.mlckpt"; }
    static std::string best_path(const std::string& folder) { return folder + "/best.mlckpt"; }

private:
    bool save(FitContext& context, const std::string& path, const std::string& kind, const TrainingState& state, double value);
    // The state to keep, or nothing (said) when there is no memory left to copy it.
    std::optional<TrainingState> snapshot(FitContext& context, int epoch) const;
    void warn_not_saved(FitContext& context, const std::string& where, int epoch, const std::string& reason, bool had_one) const;

    CheckpointOptions options_;
    int weights_of_epoch_ = 0;  // > 0: the weights saved are that epoch's (restored by early stopping)
    Checkpoint base_;
    std::function<void(const SavedCheckpoint&)> on_saved_;
    std::function<void()> before_save_;
    bool maximize_;
    double best_value_;
    bool said_no_monitor_ = false;  // save_best_only without the monitored metric: said once
};

}  // namespace mirrorlab
