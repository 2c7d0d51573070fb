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
        queue_.push_back(Finish{before.status, before.status_text, before.epochs_completed, before.best_epoch, before.epochs_planned,
                                std::pair{before.devices, before.replicas}});
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
    // While another MirrorLab holds the store the rows wait in memory: a checkpoint (which flushes
    // first) must not wait for that process too.
    flushed_.wait(lock, [&] { return written_ >= target || failed_ || locked_out_; });
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
        std::size_t done = count;
        if (!failed) done = write(items);
        lock.lock();
        if (done < count) {
            // The store was locked: the rows not written go back before any that came since.
            queue_.insert(queue_.begin(), std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(done)),
                          std::make_move_iterator(items.end()));
        }
        written_ += done;
        flushed_.notify_all();
        if (closing && done < count) {
            // Ending with the store still locked after one more try (each waits the store's busy
            // timeout, and the GUI ends a run on its own thread): say what is lost, do not wait on.
            written_ += queue_.size();
            queue_.clear();
            failed_ = true;
            flushed_.notify_all();
            lock.unlock();
            if (warn_) warn_("The run's last rows could not be written: the run store stayed locked by another MirrorLab; it lists the run as "
                             "kept up to its last written step.");
            lock.lock();
        }
        if (closing && queue_.empty()) return;
    }
}

// On the writer thread, without the lock. Steps go in one transaction; an epoch's row and the run's
// end each commit at once. Returns how many items were written: those after them wait for the
// next try when another MirrorLab holds the store, and all count as written once recording failed.
std::size_t RunRecorder::write(std::vector<Item>& items) {
    std::size_t done = 0;
    try {
        std::vector<StepRow> steps;
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (auto* step = std::get_if<StepRow>(&items[i])) {
                steps.push_back(*step);
                continue;
            }
            store_.append_steps(run_id_, steps);
            steps.clear();
            done = i;
            if (auto* epoch = std::get_if<EpochRow>(&items[i])) store_.append_epoch(run_id_, *epoch);
            if (auto* checkpoint = std::get_if<CheckpointRow>(&items[i])) store_.record_checkpoint(run_id_, *checkpoint);
            if (auto* finish = std::get_if<Finish>(&items[i])) {
                store_.finish_run(run_id_, finish->status, finish->text, finish->epochs_completed, finish->best_epoch,
                                  finish->epochs_planned);
                if (finish->devices) store_.set_devices(run_id_, finish->devices->first, finish->devices->second);
            }
            done = i + 1;
        }
        store_.append_steps(run_id_, steps);
        done = items.size();
    } catch (const StoreLockedError& e) {
        bool first = false;
        {
            std::lock_guard lock(mutex_);
            first = !locked_out_;
            locked_out_ = true;
        }
        if (first && warn_) {
            warn_(std::string("Recording waits: ") + e.what() +
                  ". Training goes on; its rows are kept in memory and written once the store is free.");
        }
        return done;
    } catch (const std::exception& e) {
        {
            std::lock_guard lock(mutex_);
            failed_ = true;
        }
        if (warn_) warn_(std::string("Recording the run stopped: ") + e.what() + ". Training goes on; the run is kept up to here.");
        return items.size();
    }
    bool was_locked_out = false;
    {
        std::lock_guard lock(mutex_);
        was_locked_out = locked_out_;
        locked_out_ = false;
    }
    if (was_locked_out && warn_) warn_(std::string(kRecoveredText) + ": the rows that waited are written; recording goes on.");
    return done;
}

}  // namespace mirrorlab
