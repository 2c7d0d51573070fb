#include "core/store/model_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <new>
#include <optional>

namespace mirrorlab {

ModelCheckpoint::ModelCheckpoint(CheckpointOptions options, Checkpoint base, std::function<void(const SavedCheckpoint&)> on_saved)
    : options_(std::move(options)),
      base_(std::move(base)),
      on_saved_(std::move(on_saved)),
      maximize_(higher_is_better(options_.monitor)),
      best_value_(maximize_ ? -INFINITY : INFINITY) {}

namespace {

std::string where_in_run(const TrainingState& state) {
    return state.steps_into_epoch > 0 ? "Epoch " + std::to_string(state.epochs_done + 1) + ", step " + std::to_string(state.steps_into_epoch)
                                      : "Epoch " + std::to_string(state.epochs_done);
}

}  // namespace

void ModelCheckpoint::warn_not_saved(FitContext& context, const std::string& where, int epoch, const std::string& reason,
                                     bool had_one) const {
    const std::string text =
        where + ": " + reason +
        (had_one ? ". Training continues; the previous checkpoint is kept as it was."
                 : ". Training continues, but no checkpoint is kept yet: until one is written the run cannot be resumed or "
                   "exported; check that '" +
                       options_.folder + "' is there, writable and has free space.");
    context.publish(WarningEvent{"checkpoint", text, epoch, 0});
    context.log(LogLevel::Warning, text);
}

std::optional<TrainingState> ModelCheckpoint::snapshot(FitContext& context, int epoch) const {
    try {
        return context.snapshot();
    } catch (const std::bad_alloc&) {
        // The epoch was trained and validated: losing its run to the copy a checkpoint needs would
        // throw that away.
        std::error_code error;
        warn_not_saved(context, "Epoch " + std::to_string(epoch), epoch,
                       "not enough memory to copy the weights and optimizer state for a checkpoint",
                       std::filesystem::exists(last_path(options_.folder), error));
        return std::nullopt;
    }
}

bool ModelCheckpoint::save(FitContext& context, const std::string& path, const std::string& kind, const TrainingState& state,
                           double value) {
    if (before_save_) before_save_();
    std::error_code error;  // a name that cannot be looked at counts as none; the save says why it fails
    const bool had_one = std::filesystem::exists(path, error);
    try {
        save_checkpoint(path, base_, state);  // base_ holds no state of its own: nothing is copied
    } catch (const Error& e) {
        warn_not_saved(context, where_in_run(state), state.epochs_done, e.what(), had_one);
        return false;
    } catch (const std::bad_alloc&) {
        warn_not_saved(context, where_in_run(state), state.epochs_done, "not enough memory to write the checkpoint '" + path + "'",
                       had_one);
        return false;
    }
    if (on_saved_) on_saved_(SavedCheckpoint{path, kind, state.epochs_done, state.global_step, value, state.steps_into_epoch});
    return true;
}

void ModelCheckpoint::on_step_end(FitContext& context, int epoch, std::int64_t global_step) {
    if (global_step % options_.every_steps != 0) return;
    if (const std::optional<TrainingState> state = snapshot(context, epoch)) save(context, last_path(options_.folder), "last", *state, std::nan(""));
}

void ModelCheckpoint::on_epoch_end(FitContext& context, const EpochRecord& record) {
    const double value = monitored_value(record, options_.monitor);
    const bool improved = !std::isnan(value) && (maximize_ ? value > best_value_ : value < best_value_);
    // Keras skips every save when save_best_only has no val_loss to compare (no validation data);
    // a run would then end with nothing to resume or export. Every epoch is kept instead, said once.
    const bool monitor_missing = options_.monitor.starts_with("val_") && !record.has_validation;
    if (options_.save_best_only && monitor_missing) {
        if (!said_no_monitor_) {
            said_no_monitor_ = true;
            const std::string text = "save_best_only compares " + options_.monitor +
                                     ", and this run has no validation data: every epoch's checkpoint is kept instead "
                                     "(give data with a validation split to keep only the best)";
            context.publish(WarningEvent{"checkpoint", text, record.epoch, 0});
            context.log(LogLevel::Warning, text);
        }
        if (const std::optional<TrainingState> state = snapshot(context, record.epoch)) save(context, last_path(options_.folder), "last", *state, value);
        return;
    }
    if (options_.save_best_only && !improved) return;
    // The state with this callback's own best value already updated, so a resumed run compares
    // against the same best.
    const double previous_best = best_value_;
    if (improved) best_value_ = value;
    const std::optional<TrainingState> state = snapshot(context, record.epoch);
    if (!state) {
        best_value_ = previous_best;
        return;
    }
    if (!options_.save_best_only) save(context, last_path(options_.folder), "last", *state, value);
    if (improved && !save(context, best_path(options_.folder), "best", *state, value)) best_value_ = previous_best;
}

std::string ModelCheckpoint::weights_text(const TrainingState& state) {
    const std::string last = "epoch " + std::to_string(state.epochs_done);
    const auto callback = state.callbacks.find("model_checkpoint");
    if (callback == state.callbacks.end()) return last;
    const auto weights = callback->second.numbers.find(kWeightsOfEpochKey);
    if (weights == callback->second.numbers.end() || weights->second <= 0) return last;
    return "epoch " + std::to_string(static_cast<int>(weights->second)) + "'s weights (restored by early stopping after " + last + ")";
}

void ModelCheckpoint::on_train_end(FitContext& context, FinishedEvent& finished) {
    if (finished.restored_epoch <= 0 || options_.save_best_only) return;
    weights_of_epoch_ = finished.restored_epoch;
    if (const std::optional<TrainingState> state = snapshot(context, finished.epochs_completed))
        save(context, last_path(options_.folder), "last", *state, std::nan(""));
    weights_of_epoch_ = 0;
}

CallbackState ModelCheckpoint::state() const {
    CallbackState state;
    state.numbers["best_value"] = best_value_;
    if (weights_of_epoch_ > 0) state.numbers[kWeightsOfEpochKey] = weights_of_epoch_;
    return state;
}

void ModelCheckpoint::restore(const CallbackState& state) {
    auto found = state.numbers.find("best_value");
    best_value_ = found != state.numbers.end() ? found->second : (maximize_ ? -INFINITY : INFINITY);
}

}  // namespace mirrorlab
