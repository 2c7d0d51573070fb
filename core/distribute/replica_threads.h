#pragma once
// One persistent worker thread per replica. `run` is a fork-join: it hands the same function to
// every replica's thread and returns when all have finished, so a synchronous mirrored step is a
// run; the replicas meet at a StepBarrier inside it where they must wait for each other.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

#include "core/util/denormals.h"  // the replicas' threads (and the trainer's) flush denormals

namespace mirrorlab {

class ReplicaThreads {
public:
    explicit ReplicaThreads(int replica_count);
    ~ReplicaThreads();
    ReplicaThreads(const ReplicaThreads&) = delete;
    ReplicaThreads& operator=(const ReplicaThreads&) = delete;

    int size() const { return static_cast<int>(workers_.size()); }
    // Runs fn(replica) on every replica's thread; rethrows the first exception after all finished
    // (a replica's own error before the StepAborted of the replicas it left at a barrier).
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

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_, done_cv_;
    Task task_;
    // Atomics so that the workers can spin on them briefly before sleeping: a condition-variable
    // wake-up costs tens of microseconds at every step. Writes still happen under mutex_, so the
    // sleeping path is unchanged.
    std::atomic<long> generation_{0};
    std::atomic<int> remaining_{0};
    std::atomic<bool> quit_{false};
    std::exception_ptr error_;
    bool error_aborted_ = false;  // error_ is a StepAborted
};

}  // namespace mirrorlab
