#pragma once
// How often the training views redraw while a run goes. Their refreshes, and the paints those
// cause, run on the GUI thread; while a run on CPU devices keeps every core busy, each millisecond
// of that thread is taken from the replicas, and the faster the kernels, the larger the share of
// an epoch it is (issue #17: the GUI must train at >= 90 % of the CLI's speed). The pacer reads
// the GUI thread's own CPU clock and stretches the views' refresh interval, from 500 ms up to 2 s,
// so that the thread stays near a budget of a core; when the cores are not the training's (a run
// on GPUs, or none) the views refresh every 500 ms.
namespace mirrorlab::ui {

class RefreshPacer {
public:
    static constexpr int kFastestMs = 500;
    static constexpr int kSlowestMs = 2000;
    static constexpr double kBudget = 0.04;      // of one core
    static constexpr double kWindowSeconds = 1.0;  // the share is measured over windows this long

    // Whether a run now keeps every core busy; also starts a new measurement.
    void setCoresBusy(bool busy);
    bool coresBusy() const { return busy_; }
    // The GUI thread's CPU seconds so far (threadCpuSeconds) at wall time `now_s`: call it
    // regularly while a run goes. At the end of each window the interval moves toward the one
    // that keeps the thread's share at the budget, by at most a factor of two per window.
    void sample(double now_s, double thread_cpu_s);
    int intervalMs() const { return interval_ms_; }
    double lastShare() const { return last_share_; }  // of the last full window; -1 before one

private:
    bool busy_ = false;
    bool started_ = false;
    double window_start_s_ = 0.0, window_start_cpu_s_ = 0.0;
    double last_share_ = -1.0;
    int interval_ms_ = kFastestMs;
};

// The calling thread's CPU time in seconds (user + system); 0 where the platform has no such clock.
double threadCpuSeconds();

}  // namespace mirrorlab::ui
