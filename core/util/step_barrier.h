#pragma once
// The barrier the replicas of one synchronous step meet at (gradients ready, all-reduce phases).
// Unlike std::barrier it can be broken: when one replica fails (out of memory, a backend error,
// a NaN guard that throws), the others must not wait forever for it, so the failing replica
// calls abort() and every waiter leaves with StepAborted. Waiting spins briefly before sleeping,
// because the replicas of a step usually arrive within microseconds of each other.
#include <atomic>
#include <cstdint>
#include <stdexcept>

namespace mirrorlab {

// Thrown from arrive_and_wait() on the replicas that did not fail; ReplicaThreads reports the
// failing replica's own error instead of this one.
class StepAborted : public std::runtime_error {
public:
    StepAborted() : std::runtime_error("another replica failed during this step") {}
};

class StepBarrier {
public:
    explicit StepBarrier(int parties) : parties_(parties) {}
    StepBarrier(const StepBarrier&) = delete;
    StepBarrier& operator=(const StepBarrier&) = delete;

    int parties() const { return parties_; }
    // Returns once all parties have arrived in this phase; throws StepAborted if the barrier is
    // or becomes broken.
    void arrive_and_wait();
    // Breaks the barrier: current and later waiters throw StepAborted until reset().
    void abort();
    // Makes a broken barrier usable again. Only while nobody waits (between steps).
    void reset();

private:
    const int parties_;
    std::atomic<int> arrived_{0};
    std::atomic<std::uint32_t> phase_{0};
    std::atomic<bool> broken_{false};
};

}  // namespace mirrorlab
