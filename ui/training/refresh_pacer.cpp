#include "ui/training/refresh_pacer.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace mirrorlab::ui {

void RefreshPacer::setCoresBusy(bool busy) {
    busy_ = busy;
    started_ = false;
    last_share_ = -1.0;
    if (!busy_) interval_ms_ = kFastestMs;
}

void RefreshPacer::sample(double now_s, double thread_cpu_s) {
    if (!started_) {
        started_ = true;
        window_start_s_ = now_s;
        window_start_cpu_s_ = thread_cpu_s;
        return;
    }
    const double elapsed_s = now_s - window_start_s_;
    if (elapsed_s < kWindowSeconds) return;
    last_share_ = std::max(0.0, thread_cpu_s - window_start_cpu_s_) / elapsed_s;
    window_start_s_ = now_s;
    window_start_cpu_s_ = thread_cpu_s;
    if (!busy_) return;
    // Most of the thread's work comes with each refresh, so its share falls about as the interval
    // grows; the factor is bounded so that one busy window (a resize, a menu) does not swing it.
    const double factor = std::clamp(last_share_ / kBudget, 0.5, 2.0);
    const double next = std::round(interval_ms_ * factor);
    interval_ms_ = static_cast<int>(std::clamp(next, double{kFastestMs}, double{kSlowestMs}));
}

double threadCpuSeconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
    timespec now{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0) return static_cast<double>(now.tv_sec) + now.tv_nsec * 1e-9;
#endif
    return 0.0;
}

}  // namespace mirrorlab::ui
