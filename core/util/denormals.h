#pragma once
// Flush denormals to zero on the calling thread (TensorFlow does this on its worker threads):
// tiny gradients otherwise make float math many times slower. Every thread that runs the engine's
// float math calls it: the replicas' threads, the thread pool's workers and the trainer's thread.

namespace mirrorlab {

void enable_flush_denormals();

// The calling thread's floating-point mode (MXCSR on x86: denormal flushing, rounding; 0 elsewhere),
// and setting it: the thread pool runs each chunk under its caller's mode, and host code that must
// compute what an op computed (settling deferred decays) takes that op's.
unsigned float_mode();
void set_float_mode(unsigned mode);

// `mode` for a scope, the thread's own back after it.
class ScopedFloatMode {
  public:
    explicit ScopedFloatMode(unsigned mode);
    ~ScopedFloatMode();
    ScopedFloatMode(const ScopedFloatMode&) = delete;
    ScopedFloatMode& operator=(const ScopedFloatMode&) = delete;

  private:
    unsigned saved_mode_ = 0;
};

}  // namespace mirrorlab
