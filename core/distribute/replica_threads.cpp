#include "core/distribute/replica_threads.h"

#include <chrono>

#include "core/util/step_barrier.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mirrorlab {

ReplicaThreads::ReplicaThreads(int replica_count, ReplicaZero replica_zero)
    : replica_count_(replica_count), replica_zero_(replica_zero) {
    const int first_worker_replica = replica_zero == ReplicaZero::Caller ? 1 : 0;
    for (int r = first_worker_replica; r < replica_count; ++r) workers_.emplace_back([this, r] { worker_loop(r); });
}

namespace {

// Spins for up to `limit` until `ready()` holds; true if it did.
template <typename Ready>
bool spin_until(Ready ready, std::chrono::microseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
        for (int i = 0; i < 64; ++i) {
            if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
            _mm_pause();
#endif
        }
        if (std::chrono::steady_clock::now() > deadline) return false;
    }
}

}  // namespace

ReplicaThreads::~ReplicaThreads() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    start_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ReplicaThreads::run_task(Task task) {
    {
        std::lock_guard lock(mutex_);
        task_ = task;
        error_ = nullptr;
        error_aborted_ = false;
        remaining_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
        generation_.fetch_add(1, std::memory_order_release);
    }
    start_cv_.notify_all();
    if (replica_zero_ == ReplicaZero::Caller && replica_count_ > 0) {
        // Replica 0 under the replicas' floating-point mode, the caller's own back after it.
        const ScopedFloatMode callers_mode(float_mode());
        enable_flush_denormals();
        run_replica(task, 0);
        // The partners finish with replica 0 (the same update after the same all-reduce): this core
        // is idle now, and a short spin sees them done without a sleep and a wake-up.
        spin_until([this] { return remaining_.load(std::memory_order_acquire) == 0; }, std::chrono::microseconds(50));
    }
    // Otherwise the caller sleeps at once: a run is a whole step (milliseconds), and with a replica
    // per core a caller spinning for the end takes a core from a replica, whose partners then wait
    // for it at the step's barriers (the bench's "other" time per step, 2 replicas on 2 cores, AVX2,
    // AMD EPYC Zen 4: 0.066-0.098 ms with 30 us of spinning here and in the workers, 0.026-0.062
    // without it and with the workers' 300 us).
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [this] { return remaining_.load(std::memory_order_acquire) == 0; });
    task_ = {};
    if (error_) std::rethrow_exception(error_);
}

void ReplicaThreads::run_replica(const Task& task, int replica) {
    std::exception_ptr error;
    bool aborted = false;
    try {
        task.invoke(task.callable, replica);
    } catch (const StepAborted&) {
        error = std::current_exception();
        aborted = true;
    } catch (...) {
        error = std::current_exception();
    }
    if (!error) return;
    // The replica that failed is the news; the others only left its broken barrier.
    std::lock_guard lock(mutex_);
    if (!error_ || (error_aborted_ && !aborted)) {
        error_ = error;
        error_aborted_ = aborted;
    }
}

void ReplicaThreads::worker_loop(int replica) {
    enable_flush_denormals();
    long seen = 0;
    while (true) {
        auto has_work = [&] { return quit_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
        // Long enough to bridge the trainer's work between two steps (the step's result, its
        // events, the next batch), so that a step starts without a wake-up; an idle replica
        // thread then sleeps.
        if (!spin_until(has_work, std::chrono::microseconds(300))) {
            std::unique_lock lock(mutex_);
            start_cv_.wait(lock, has_work);
        }
        if (quit_.load(std::memory_order_acquire)) return;
        seen = generation_.load(std::memory_order_acquire);
        // task_ was written before the generation was published (release), so it is visible.
        const Task task = task_;
        run_replica(task, replica);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            // Under the lock, so run() cannot check the count and then miss this notification.
            std::lock_guard lock(mutex_);
            done_cv_.notify_one();
        }
    }
}

}  // namespace mirrorlab
