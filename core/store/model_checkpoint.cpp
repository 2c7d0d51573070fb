#include "core/store/model_checkpoint.h"

#include <cmath>
#include <filesystem>

namespace mirrorlab {

ModelCheckpoint::ModelCheckpoint(CheckpointOptions options, Checkpoint base, std::function<void(const SavedCheckpoint&)> on_saved)
    : options_(std::move(options)),
      base_(std::move(base)),
      on_saved_(std::move(on_saved)),
      maximize_(higher_is_better(options_.monitor)),
      best_value_(maximize_ ? -INFINITY : INFINITY) {}

bool ModelCheckpoint::save(FitContext& context, const std::string& path, const std::string& kind, const TrainingState& state,
                           double value) {
    if (before_save_) before_save_();
    std::error_code error;  // a name that cannot be looked at counts as none; the save says why it fails
    const bool had_one = std::filesystem::exists(path, error);
    try {
        save_checkpoint(path, base_, state);  // base_ holds no state of its own: nothing is copied
    } catch (const Error& e) {
        const std::string where = state.steps_into_epoch > 0 ? "Epoch " + std::to_string(state.epochs_done + 1) + ", step " +
                                                                   std::to_string(state.steps_into_epoch)
                                                             : "Epoch " + std::to_string(state.epochs_done);
        const std::string text = where + ": " + e.what() +
                                 (had_one ? ". Training continues; the previous checkpoint is kept as it was."
                                          : ". Training continues, but no checkpoint is kept yet: until one is written the run "
                                            "cannot be resumed or exported; free some space.");
        context.publish(WarningEvent{"checkpoint", text, state.epochs_done, 0});
        context.log(LogLevel::Warning, text);
        return false;
    }
    if (on_saved_) on_saved_(SavedCheckpoint{path, kind, state.epochs_done, state.global_step, value, state.steps_into_epoch});
    return true;
}

void ModelCheckpoint::on_step_end(FitContext& context, int /*epoch*/, std::int64_t global_step) {
    if (global_step % options_.every_steps != 0) return;
    save(context, last_path(options_.folder), "last", context.snapshot(), std::nan(""));
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
        save(context, last_path(options_.folder), "last", context.snapshot(), value);
        return;
    }
    if (options_.save_best_only && !improved) return;
    // The state with this callback's own best value already updated, so a resumed run compares
    // against the same best.
    const double previous_best = best_value_;
    if (improved) best_value_ = value;
    const TrainingState state = context.snapshot();
    if (!options_.save_best_only) save(context, last_path(options_.folder), "last", state, value);
    if (improved && !save(context, best_path(options_.folder), "best", state, value)) best_value_ = previous_best;
}

CallbackState ModelCheckpoint::state() const {
    CallbackState state;
    state.numbers["best_value"] = best_value_;
    return state;
}

void ModelCheckpoint::restore(const CallbackState& state) {
    auto found = state.numbers.find("best_value");
    best_value_ = found != state.numbers.end() ? found->second : (maximize_ ? -INFINITY : INFINITY);
}

}  // namespace mirrorlab
