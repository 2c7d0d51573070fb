#include "core/util/cancellation.h"

namespace mirrorlab {
namespace {
thread_local const std::atomic<bool>* current_flag = nullptr;
}  // namespace

ScopedCancellation::ScopedCancellation(const std::atomic<bool>* flag) : outer_(current_flag) { current_flag = flag; }

ScopedCancellation::~ScopedCancellation() { current_flag = outer_; }

void throw_if_cancelled() {
    // Relaxed: the flag orders nothing; the thread that set it waits for the join.
    if (current_flag != nullptr && current_flag->load(std::memory_order_relaxed)) throw Cancelled();
}

}  // namespace mirrorlab
