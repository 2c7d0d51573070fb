#pragma once
// Flush denormals to zero on the calling thread (TensorFlow does this on its worker threads):
// tiny gradients otherwise make float math many times slower. Every thread that runs the engine's
// float math calls it: the replicas' threads, the thread pool's workers and the trainer's thread.

namespace mirrorlab {

void enable_flush_denormals();

}  // namespace mirrorlab
