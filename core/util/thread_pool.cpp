#include "core/util/thread_pool.h"

#include <algorithm>
#include <cstdlib>

#include "core/util/denormals.h"

namespace mirrorlab {

namespace {

int default_thread_limit() {
    if (const char* text = std::getenv("MIRRORLAB_CPU_THREADS")) {
        const int value = std::atoi(text);
        if (value > 0) return value;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

ThreadPool& ThreadPool::instance() {
    static ThreadPool pool(default_thread_limit());
    return pool;
}

ThreadPool::ThreadPool(int limit) : limit_(std::max(1, limit)) {}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    work_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
}

int ThreadPool::limit() const {
    std::lock_guard lock(mutex_);
    return limit_;
}

void ThreadPool::set_limit(int threads) {
    std::lock_guard lock(mutex_);
    limit_ = std::max(1, threads);
}

void ThreadPool::run_job(Job& job, int max_threads) {
    std::unique_lock lock(mutex_);
    const std::int64_t helpers =
        std::min<std::int64_t>(std::min(max_threads, limit_) - 1, job.count - 1);
    if (helpers <= 0) {
        lock.unlock();
        for (std::int64_t i = 0; i < job.count; ++i) job.run(job.context, i);
        return;
    }
    while (static_cast<std::int64_t>(workers_.size()) < helpers)
        workers_.emplace_back([this] { worker_loop(); });
    job.helper_slots = static_cast<int>(helpers);
    job.fp_mode = float_mode();
    job.listed = true;
    job.next_job = jobs_;
    jobs_ = &job;
    ++open_jobs_;
    work_cv_.notify_all();
    work_on(job, lock);
    // The job lives on this stack frame: wait until no helper can touch it any more.
    done_cv_.wait(lock, [&] { return job.finished == job.count && job.helpers_inside == 0; });
    lock.unlock();
    if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::work_on(Job& job, std::unique_lock<std::mutex>& lock) {
    while (job.next < job.count) {
        const std::int64_t i = job.next++;
        if (job.next == job.count) unlist(job);
        lock.unlock();
        std::exception_ptr error;
        try {
            job.run(job.context, i);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !job.error) job.error = error;
        ++job.finished;
    }
    unlist(job);
}

void ThreadPool::unlist(Job& job) {
    if (!job.listed) return;
    for (Job** link = &jobs_; *link != nullptr; link = &(*link)->next_job) {
        if (*link == &job) {
            *link = job.next_job;
            break;
        }
    }
    job.listed = false;
    --open_jobs_;
}

ThreadPool::Job* ThreadPool::open_job() const {
    Job* job = jobs_;
    while (job != nullptr && job->helper_slots == 0) job = job->next_job;
    return job;
}

void ThreadPool::spin_for_work() const {
    constexpr auto kSpin = std::chrono::microseconds(50);
    const auto until = std::chrono::steady_clock::now() + kSpin;
    // Yielding rather than pausing: on a machine shared with other work the core goes to them.
    while (open_jobs_.load(std::memory_order_relaxed) == 0 &&
           std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
    }
}

void ThreadPool::worker_loop() {
    enable_flush_denormals();
    std::unique_lock lock(mutex_);
    while (true) {
        Job* job = open_job();
        if (job == nullptr && !quit_) {
            lock.unlock();
            spin_for_work();
            lock.lock();
            work_cv_.wait(lock, [&] { return quit_ || (job = open_job()) != nullptr; });
        }
        if (quit_) return;
        --job->helper_slots;
        ++job->helpers_inside;
        const unsigned own_mode = float_mode();
        set_float_mode(job->fp_mode);
        work_on(*job, lock);
        set_float_mode(own_mode);
        --job->helpers_inside;
        if (job->finished == job->count && job->helpers_inside == 0) done_cv_.notify_all();
    }
}

}  // namespace mirrorlab
