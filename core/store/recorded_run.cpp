#include "core/store/recorded_run.h"

#include <filesystem>

#include "core/train/train_config_json.h"

namespace mirrorlab {

json::Value run_settings_json(const TrainConfig& config, const std::string& device_spec, const json::Value& program_settings) {
    json::Value settings = program_settings.is_object() ? program_settings : json::Value::object();
    settings.set("train_config", train_config_to_json(config));
    settings.set("devices", device_spec);
    return settings;
}

namespace {

// Whether a checkpoint is at `path`; a name that cannot be looked at (a loop of symbolic links, a
// folder that may not be read) is said with its reason instead of reading as "no checkpoint".
bool checkpoint_exists(const std::string& path) {
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(path, error);
    if (error && error != std::errc::no_such_file_or_directory) {
        throw CheckpointError("cannot look at the checkpoint '" + path + "': " + error.message());
    }
    return std::filesystem::exists(status);
}

// Whether the run may have kept best.mlckpt only (Keras' save_best_only): its settings say so; a
// run recorded before they did (no such key) may have, and answers with best.mlckpt as it did.
bool keeps_best_only(const RunInfo& run) {
    try {
        const json::Value settings = json::parse(run.settings_json, "settings");
        const json::Value* best_only = settings.is_object() ? settings.find("save_best_only") : nullptr;
        return !best_only || !best_only->is_bool() || best_only->as_bool();
    } catch (const Error&) {
        return true;
    }
}

}  // namespace

std::string checkpoint_path_of(const RunInfo& run, const std::string& which) {
    const std::string wanted = which == "best" ? ModelCheckpoint::best_path(run.folder) : ModelCheckpoint::last_path(run.folder);
    if (checkpoint_exists(wanted)) return wanted;
    const std::string other = which == "best" ? ModelCheckpoint::last_path(run.folder) : ModelCheckpoint::best_path(run.folder);
    if (which != "best" && checkpoint_exists(other)) {
        if (keeps_best_only(run)) return other;
        // A last.mlckpt moved or deleted: the best one answered in its place, and resume retrained
        // (and rewrote) the epochs after it, without a word.
        throw CheckpointError("run " + std::to_string(run.id) + "'s last checkpoint '" + wanted +
                              "' is missing (moved or deleted); its best checkpoint is there: evaluate, predict and export "
                              "take --checkpoint best, and train --resume takes that file ('" + other +
                              "'), training again the epochs after it");
    }
    if (which == "best" && checkpoint_exists(other)) {
        throw CheckpointError("run " + std::to_string(run.id) + " has no best checkpoint in '" + run.folder +
                              "': no epoch had a validation loss to call best (a run without validation data has none); use its last "
                              "checkpoint");
    }
    if (run.status == RunStatus::Running) {
        // It has not ended: "train it again" was the wrong advice for a run in its first epoch.
        throw CheckpointError("run " + std::to_string(run.id) + " is training now and has no " + (which == "best" ? "best " : "") +
                              "checkpoint yet: its first is written when its first epoch ends; try again then");
    }
    throw CheckpointError("run " + std::to_string(run.id) + " has no " + (which == "best" ? "best " : "") +
                          "checkpoint in '" + run.folder + "' (it ended before its first epoch finished, or no checkpoint could be "
                          "written: its warnings say why); train it again instead");
}

std::optional<SavedCheckpoint> RecordedRun::last_saved() const {
    std::lock_guard lock(last_saved_->mutex);
    return last_saved_->saved;
}

RecordedRun::RecordedRun(RunStore& store, Trainer& trainer, RunDescription description, Trainer::EventSink downstream,
                         RunRecorder::WarningSink warn)
    : store_(store) {
    const std::string device_spec = description.devices.to_spec();
    std::shared_ptr<const RunInfo> before_resume;  // how the resumed run had ended
    if (description.resume_run_id > 0) {
        const Checkpoint& resume = *description.resume;
        // Refused here, before reopen_run drops the rows after the checkpoint: the run stays whole.
        check_resume_fits(resume.state, description.config, description.parameters);
        before_resume = std::make_shared<const RunInfo>(store.get(description.resume_run_id));
        store.reopen_run(description.resume_run_id, resume.state.epochs_done, resume.state.global_step, description.config.epochs,
                         device_spec, description.devices.replica_count() * description.workers);
        info_ = store.get(description.resume_run_id);
    } else {
        RunInfo run;
        run.name = description.name;
        // A data path that is not UTF-8 is kept with U+FFFD for its bad bytes: the run is still recorded
        // (Train again then names the path it cannot find).
        json::Value settings = run_settings_json(description.config, device_spec, description.settings);
        settings.set("save_best_only", description.save_best_only);  // true: only best.mlckpt is kept
        run.settings_json = json::dump(settings, 1, json::InvalidUtf8::Replace);
        run.model_json = description.model_json;
        run.devices = device_spec;
        run.data_name = description.data.name;
        run.parameters = description.parameters;
        run.replicas = description.devices.replica_count() * description.workers;
        run.epochs_planned = description.config.epochs;
        info_ = store.begin_run(run);
        if (description.resume) {
            std::vector<EpochRow> rows;
            for (const EpochRecord& record : description.resume->state.history.epochs) {
                rows.push_back(EpochRow{record.epoch, record.train, record.validation, record.has_validation, record.epoch_seconds});
            }
            store.append_epochs(info_.id, rows);
        }
    }
    recorder_ = std::make_unique<RunRecorder>(store, info_.id, std::move(warn));

    Checkpoint base;
    base.model_json = description.model_json;
    base.config = description.config;
    base.device_spec = device_spec;
    base.data = description.data;
    base.settings = description.settings;
    base.run_id = info_.id;
    RunRecorder* recorder = recorder_.get();
    auto checkpoint = std::make_shared<ModelCheckpoint>(
        CheckpointOptions{info_.folder, description.monitor, description.save_best_only, description.checkpoint_every_steps},
        std::move(base), [recorder, last = last_saved_](const SavedCheckpoint& saved) {
            recorder->checkpoint_saved(saved);
            if (saved.kind != "last") return;
            std::lock_guard lock(last->mutex);
            last->saved = saved;
        });
    checkpoint->set_before_save([recorder] { recorder->flush(); });
    trainer.add_callback(std::move(checkpoint));
    if (description.resume) trainer.set_resume_state(description.resume->state);
    // A resume that fails before its first epoch begins (a device that cannot hold the model, data
    // the trainer refuses): the run is left with the status and counts it had ended with, not marked
    // failed with no epochs (the rows after its checkpoint are gone, as any resume drops them).
    trainer.set_event_sink([recorder, downstream = std::move(downstream), before_resume](const Event& event) {
        const auto* failed = std::get_if<FailedEvent>(&event);
        if (before_resume && failed != nullptr && failed->epoch == 0) {
            recorder->end_as_before(*before_resume);
        } else {
            recorder->consume(event);
        }
        if (downstream) downstream(event);
    });
}

RecordedRun::~RecordedRun() { recorder_.reset(); }

}  // namespace mirrorlab
