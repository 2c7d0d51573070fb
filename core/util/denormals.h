#pragma once
// Flush denormals to zero on the calling thread (TensorFlow does this on its worker threads):
// tiny gradients otherwise make float math many times slower. Every thread that runs the engine's
// float math calls it: the replicas' threads, the thread pool's workers and the trainer's thread.

namespace mirrorlab {

void enable_flush_denormals();

// The engine's threads' mode (enable_flush_denormals) for a scope on any thread, the caller's back
// after it: for host code that must compute what those threads would (settling deferred decays).
class ScopedFlushDenormals {
  public:
    ScopedFlushDenormals();
    ~ScopedFlushDenormals();
    ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
    ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

  private:
    unsigned saved_mode_ = 0;
};

}  // namespace mirrorlab
