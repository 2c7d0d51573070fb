#pragma once
// One process-wide pool of CPU worker threads, sized to the machine, shared by every CPU replica.
//
// `parallel_for` is a fork-join in which the calling thread always works too, and helpers only
// join while they are idle: two replicas that each ask for the whole machine at the same time
// simply end up running most of their own chunks, so replicas never oversubscribe the cores.
// Chunks are claimed one at a time, so a helper that wakes late costs nothing; results never
// depend on which thread ran a chunk. No allocation per call (the job lives on the caller's
// stack). Chunks run under the caller's floating-point mode (MXCSR: denormal flushing,
// rounding), so a helper computes exactly what the caller would; workers flush denormals to
// zero between jobs, as the replica threads do. An idle worker spins for a few tens of
// microseconds before it sleeps: a replica's ops follow each other that closely, and waking a
// sleeping thread costs about as long as a small op.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace mirrorlab {

class ThreadPool {
  public:
    // The pool of this process: limit() = MIRRORLAB_CPU_THREADS when set, else the core count.
    static ThreadPool& instance();

    explicit ThreadPool(int limit);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads a fork-join may use in all, the caller included (at least 1).
    int limit() const;
    // Changes the limit (benchmarks compare 1 and 2 threads in one process). Workers start on
    // first use; at most limit() - 1 of them help any one job.
    void set_limit(int threads);

    // Runs fn(i) for every i in [0, count) on at most max_threads threads (the caller included)
    // and returns when all calls have returned. The first exception is rethrown after all chunks
    // finished. Safe to call from several threads at once.
    template <class F>
    void parallel_for(std::int64_t count, int max_threads, F&& fn) {
        using Fn = std::remove_reference_t<F>;
        Job job;
        job.count = count;
        job.context = const_cast<void*>(static_cast<const void*>(&fn));
        job.run = [](void* context, std::int64_t i) { (*static_cast<Fn*>(context))(i); };
        run_job(job, max_threads);
    }

  private:
    struct Job {
        std::int64_t count = 0;
        void* context = nullptr;
        void (*run)(void*, std::int64_t) = nullptr;
        std::int64_t next = 0;      // next unclaimed chunk (guarded by the pool's mutex)
        std::int64_t finished = 0;  // chunks done
        int helper_slots = 0;       // helpers that may still join
        int helpers_inside = 0;     // helpers currently working on it
        unsigned fp_mode = 0;       // the caller's MXCSR
        std::exception_ptr error;
        bool listed = false;  // in the pool's list of jobs open to helpers
        Job* next_job = nullptr;
    };

    void run_job(Job& job, int max_threads);
    void work_on(Job& job, std::unique_lock<std::mutex>& lock);
    void worker_loop();
    void unlist(Job& job);       // with mutex_ held
    Job* open_job() const;       // with mutex_ held: a job that wants helpers, or null
    void spin_for_work() const;  // without the mutex: returns when a job is open or time is up

    mutable std::mutex mutex_;
    std::condition_variable work_cv_;  // a job wants helpers, or quit
    std::condition_variable done_cv_;  // a job's last chunk or helper finished
    std::vector<std::thread> workers_;
    Job* jobs_ = nullptr;
    std::atomic<int> open_jobs_{0};  // jobs in the list, read without the mutex while spinning
    int limit_ = 1;
    bool quit_ = false;
};

}  // namespace mirrorlab
