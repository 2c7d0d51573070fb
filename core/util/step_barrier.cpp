#include "core/util/step_barrier.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mirrorlab {

void StepBarrier::arrive_and_wait() {
    // The phase first, then the flag: abort() sets the flag before it moves the phase, so either
    // this load sees the moved phase and the flag check below throws, or the wait ends when the
    // phase moves. The other order could read the flag before an abort and the phase after it,
    // and wait forever for a phase that has already moved.
    const std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if (broken_.load(std::memory_order_acquire)) throw StepAborted();
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
        // The last to arrive opens the next phase; nobody can arrive for it before phase_ moves.
        arrived_.store(0, std::memory_order_relaxed);
        phase_.fetch_add(1, std::memory_order_release);
        phase_.notify_all();
        return;
    }
    // Spin ~30 µs (the others are usually that close), then sleep on the phase word (a futex).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(30);
    bool spinning = true;
    while (phase_.load(std::memory_order_acquire) == phase) {
        if (spinning) {
            for (int i = 0; i < 64 && phase_.load(std::memory_order_acquire) == phase; ++i) {
#if defined(__x86_64__) || defined(__i386__)
                _mm_pause();
#endif
            }
            spinning = std::chrono::steady_clock::now() < deadline;
        } else {
            phase_.wait(phase, std::memory_order_acquire);
        }
    }
    if (broken_.load(std::memory_order_acquire)) throw StepAborted();
}

void StepBarrier::abort() {
    broken_.store(true, std::memory_order_release);
    // Moving the phase wakes every waiter; they see broken_ and throw.
    phase_.fetch_add(1, std::memory_order_release);
    phase_.notify_all();
}

void StepBarrier::reset() {
    arrived_.store(0, std::memory_order_relaxed);
    broken_.store(false, std::memory_order_release);
}

}  // namespace mirrorlab
