#pragma once
// One persistent worker thread per replica, or per replica but the first where the caller runs
// that one itself. `run` is a fork-join: it hands the same function to every replica's thread and
// returns when all have finished, so a synchronous mirrored step is a run; the replicas meet at a
// StepBarrier inside it where they must wait for each other.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

#include "core/util/denormals.h"  // the replicas' threads (and the trainer's) flush denormals

namespace mirrorlab {

// Who runs replica 0. On a machine with a core per replica (CPU devices), a caller that waits
// while every replica has a thread of its own must still wake up between two steps (the trainer's
// bookkeeping, the next batch), and the scheduler then takes a core from a spinning replica, which
// starts the next step late while its partners wait for it at the all-reduce. A caller that runs
// replica 0 needs no core beyond the replicas' (2 replicas on 2 cores, AVX2, AMD EPYC Zen 4: 2.08
// -> 2.02 ms per step, docs/PERFORMANCE.md). GPU replicas keep a thread each: their host code
// only queues work, and each thread keeps its device current.
enum class ReplicaZero { OwnThread, Caller };

class ReplicaThreads {
public:
    explicit ReplicaThreads(int replica_count, ReplicaZero replica_zero = ReplicaZero::OwnThread);
    ~ReplicaThreads();
    ReplicaThreads(const ReplicaThreads&) = delete;
    ReplicaThreads& operator=(const ReplicaThreads&) = delete;

    int size() const { return replica_count_; }
    // Runs fn(replica) on every replica's thread (replica 0's on the calling thread with
    // ReplicaZero::Caller, under the replicas' floating-point mode: denormals flushed); rethrows
    // the first exception after all finished (a replica's own error before the StepAborted of the
    // replicas it left at a barrier).
    // Takes any callable by reference (no std::function: a step must not allocate).
    template <typename Fn>
    void run(Fn&& fn) {
        using Callable = std::remove_reference_t<Fn>;
        run_task({const_cast<void*>(static_cast<const void*>(&fn)),
                  [](void* callable, int replica) { (*static_cast<Callable*>(callable))(replica); }});
    }

private:
    struct Task {
        void* callable = nullptr;
        void (*invoke)(void* callable, int replica) = nullptr;
    };
    void run_task(Task task);
    void worker_loop(int replica);
    // Runs one replica's part of `task`, keeping its exception as the run's error where it is the news.
    void run_replica(const Task& task, int replica);

    int replica_count_ = 0;
    ReplicaZero replica_zero_ = ReplicaZero::OwnThread;
    std::vector<std::thread> workers_;  // replica r runs on workers_[r], or workers_[r - 1] where the caller runs replica 0
    std::mutex mutex_;
    std::condition_variable start_cv_, done_cv_;
    Task task_;
    // Atomics so that the workers can spin on them briefly before sleeping: a condition-variable
    // wake-up costs tens of microseconds at every step. Writes still happen under mutex_, so the
    // sleeping path is unchanged.
    std::atomic<long> generation_{0};
    std::atomic<int> remaining_{0};  // worker threads still running the current task
    std::atomic<bool> quit_{false};
    std::exception_ptr error_;
    bool error_aborted_ = false;  // error_ is a StepAborted
};

}  // namespace mirrorlab
