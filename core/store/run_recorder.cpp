#include "core/store/run_recorder.h"

namespace mirrorlab {

RunRecorder::RunRecorder(RunStore& store, std::int64_t run_id, WarningSink warn, std::chrono::milliseconds flush_interval)
    : store_(store), run_id_(run_id), warn_(std::move(warn)), flush_interval_(flush_interval) {
    writer_ = std::thread([this] { write_loop(); });
}

RunRecorder::~RunRecorder() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    wake_.notify_all();
    writer_.join();
}

void RunRecorder::consume(const Event& event) {
    std::optional<Item> item;
    bool urgent = false;
    if (const auto* step = std::get_if<StepEndEvent>(&event)) {
        item = StepRow{step->global_step, step->epoch, step->step, step->running, step->step_time_ms};
    } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
        item = EpochRow{end->epoch, end->train, end->validation, end->has_validation, end->epoch_seconds};
        urgent = true;
    } else if (const auto* finished = std::get_if<FinishedEvent>(&event)) {
        const RunStatus status = finished->reason == FinishReason::StoppedByUser ? RunStatus::Stopped : RunStatus::Finished;
        item = Finish{status, finished->text, finished->epochs_completed, finished->best_epoch};
        urgent = true;
    } else if (const auto* failed = std::get_if<FailedEvent>(&event)) {
        item = Finish{RunStatus::Failed, failed->reason, failed->epoch > 0 ? failed->epoch - 1 : 0, -1};  // best: as recorded
        urgent = true;
    }
    if (!item) return;
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(*item));
        ++queued_;
        urgent_ = urgent_ || urgent;
    }
    if (urgent) wake_.notify_all();
}

void RunRecorder::end_as_before(const RunInfo& before) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(Finish{before.status, before.status_text, before.epochs_completed, before.best_epoch, before.epochs_planned});
        ++queued_;
        urgent_ = true;
    }
    wake_.notify_all();
}

void RunRecorder::checkpoint_saved(const SavedCheckpoint& saved) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(CheckpointRow{saved.kind, saved.path, saved.epoch, saved.global_step, saved.monitor_value});
        ++queued_;
    }
}

void RunRecorder::flush() {
    std::unique_lock lock(mutex_);
    urgent_ = true;
    wake_.notify_all();
    const std::uint64_t target = queued_;
    flushed_.wait(lock, [&] { return written_ >= target || failed_; });
}

void RunRecorder::write_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait_for(lock, flush_interval_, [this] { return urgent_ || closing_; });
        std::vector<Item> items;
        items.swap(queue_);
        const bool closing = closing_;
        const bool failed = failed_;
        urgent_ = false;
        lock.unlock();
        const std::size_t count = items.size();
        if (!failed) write(items);
        lock.lock();
        written_ += count;
        flushed_.notify_all();
        if (closing && queue_.empty()) return;
    }
}

// On the writer thread, without the lock. Steps go in one transaction; an epoch's row and the run's
// end each commit at once.
void RunRecorder::write(std::vector<Item>& items) {
    try {
        std::vector<StepRow> steps;
        for (Item& item : items) {
            if (auto* step = std::get_if<StepRow>(&item)) {
                steps.push_back(*step);
                continue;
            }
            store_.append_steps(run_id_, steps);
            steps.clear();
            if (auto* epoch = std::get_if<EpochRow>(&item)) store_.append_epoch(run_id_, *epoch);
            if (auto* checkpoint = std::get_if<CheckpointRow>(&item)) store_.record_checkpoint(run_id_, *checkpoint);
            if (auto* finish = std::get_if<Finish>(&item)) {
                store_.finish_run(run_id_, finish->status, finish->text, finish->epochs_completed, finish->best_epoch,
                                  finish->epochs_planned);
            }
        }
        store_.append_steps(run_id_, steps);
    } catch (const std::exception& e) {
        {
            std::lock_guard lock(mutex_);
            failed_ = true;
        }
        if (warn_) warn_(std::string("Recording the run stopped: ") + e.what() + ". Training goes on; the run is kept up to here.");
    }
}

}  // namespace mirrorlab
