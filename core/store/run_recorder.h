#pragma once
// Records a training run's events into the run store without slowing its steps: consume() (on
// the training thread) only appends to a queue; a writer thread commits the queue in one
// transaction every `flush_interval` and at each epoch's end, so after `kill -9` the store holds
// every step up to the last commit. The run's status and end are written when the FinishedEvent
// or FailedEvent arrives; the destructor flushes what is left and joins.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "core/store/model_checkpoint.h"
#include "core/store/run_store.h"

namespace mirrorlab {

class RunRecorder {
public:
    using WarningSink = std::function<void(const std::string&)>;

    // `store` must outlive the recorder. `warn` hears (from the writer thread) of the first write
    // that failed; recording then stops and training goes on. A store locked by another MirrorLab
    // is no failure: the rows wait in memory and are written once it is free (warned when it
    // begins and when it ends); a run ending while it is still locked tries once more, then says
    // what was not written.
    RunRecorder(RunStore& store, std::int64_t run_id, WarningSink warn = {},
                std::chrono::milliseconds flush_interval = std::chrono::milliseconds(250));
    ~RunRecorder();
    RunRecorder(const RunRecorder&) = delete;
    RunRecorder& operator=(const RunRecorder&) = delete;

    std::int64_t run_id() const { return run_id_; }
    void consume(const Event& event);
    void checkpoint_saved(const SavedCheckpoint& saved);
    // Ends the run as `before` had ended: a resume refused before its first step leaves the run as
    // it was (its status, its epochs and best epoch, the epochs it planned), not "failed, 0 epochs".
    void end_as_before(const RunInfo& before);
    // Waits until everything consumed so far is committed (tests, the end of a run).
    void flush();

private:
    struct Finish {
        RunStatus status;
        std::string text;
        int epochs_completed;
        int best_epoch;
        int epochs_planned = 0;  // 0: as reopen_run left it
        std::optional<std::pair<std::string, int>> devices;  // set again: a refused resume's run as it was
    };
    using Item = std::variant<StepRow, EpochRow, CheckpointRow, Finish>;
    void write_loop();
    std::size_t write(std::vector<Item>& items);

public:
    // How the warning that the store is free again begins (a reader may tell it from a failure).
    static constexpr const char* kRecoveredText = "The run store is free again";

private:

    RunStore& store_;
    std::int64_t run_id_;
    WarningSink warn_;
    std::chrono::milliseconds flush_interval_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable flushed_;
    std::vector<Item> queue_;
    std::uint64_t queued_ = 0, written_ = 0;
    bool urgent_ = false;
    bool closing_ = false;
    bool failed_ = false;
    bool locked_out_ = false;  // the last write found the store locked by another MirrorLab
    std::thread writer_;
};

}  // namespace mirrorlab
