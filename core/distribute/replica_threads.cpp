#include "core/distribute/replica_threads.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mirrorlab {

void enable_flush_denormals() {
#if defined(__x86_64__) || defined(__i386__)
    // FTZ (bit 15) and DAZ (bit 6) of MXCSR.
    _mm_setcsr(_mm_getcsr() | 0x8040u);
#endif
}

ReplicaThreads::ReplicaThreads(int replica_count) {
    for (int r = 0; r < replica_count; ++r) workers_.emplace_back([this, r] { worker_loop(r); });
}

ReplicaThreads::~ReplicaThreads() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    start_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ReplicaThreads::run(const std::function<void(int)>& fn) {
    std::unique_lock lock(mutex_);
    task_ = &fn;
    remaining_ = size();
    error_ = nullptr;
    ++generation_;
    start_cv_.notify_all();
    done_cv_.wait(lock, [this] { return remaining_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
}

void ReplicaThreads::worker_loop(int replica) {
    enable_flush_denormals();
    long seen = 0;
    while (true) {
        const std::function<void(int)>* task = nullptr;
        {
            std::unique_lock lock(mutex_);
            start_cv_.wait(lock, [&] { return quit_ || generation_ != seen; });
            if (quit_) return;
            seen = generation_;
            task = task_;
        }
        std::exception_ptr error;
        try {
            (*task)(replica);
        } catch (...) {
            error = std::current_exception();
        }
        std::lock_guard lock(mutex_);
        if (error && !error_) error_ = error;
        if (--remaining_ == 0) done_cv_.notify_one();
    }
}

}  // namespace mirrorlab
