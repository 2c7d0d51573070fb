#pragma once
// One persistent worker thread per replica. `run` is a fork-join: it hands the same function to
// every replica's thread and returns when all have finished, so a synchronous mirrored step is a
// sequence of runs (compute, all-reduce, update) with the "wait for everyone" between them.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mirrorlab {

// Flush denormals to zero on the calling thread (TensorFlow does this on its worker threads):
// tiny gradients otherwise make float math many times slower.
void enable_flush_denormals();

class ReplicaThreads {
public:
    explicit ReplicaThreads(int replica_count);
    ~ReplicaThreads();
    ReplicaThreads(const ReplicaThreads&) = delete;
    ReplicaThreads& operator=(const ReplicaThreads&) = delete;

    int size() const { return static_cast<int>(workers_.size()); }
    // Runs fn(replica) on every replica's thread; rethrows the first exception after all finished.
    void run(const std::function<void(int replica)>& fn);

private:
    void worker_loop(int replica);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_, done_cv_;
    const std::function<void(int)>* task_ = nullptr;
    // Atomics so that threads can spin on them briefly before sleeping: a synchronous step hands
    // work to the replicas three times, and a condition-variable wake-up costs tens of
    // microseconds each time. Writes still happen under mutex_, so the sleeping path is unchanged.
    std::atomic<long> generation_{0};
    std::atomic<int> remaining_{0};
    std::atomic<bool> quit_{false};
    std::exception_ptr error_;
};

}  // namespace mirrorlab
