#pragma once
// Stopping a long read from another thread. A load of a 2 GiB CSV tokenizes for a minute and
// holds gigabytes while it does: the GUI's Cancel has to end it, not leave it running to its end
// (and a second Load then running beside it). The readers poll at points where stopping is cheap
// and leaves nothing half-written that anybody keeps: between rows, files and texts.
//
// The flag reaches those points through the thread that runs the load (ScopedCancellation), as
// boost::thread's interruption points do, so that the readers, the tokenizer and whatever a data
// spec's loader calls need no extra parameter to be stoppable.
#include <atomic>
#include <stdexcept>

#include "core/util/error.h"

namespace mirrorlab {

// Thrown at a cancellation point once the flag is set. Not a DataError: nothing is wrong with
// the data, and nobody shows it as a failure.
class Cancelled : public Error {
public:
    Cancelled() : Error("the load was cancelled") {}
};

// While it lives, throw_if_cancelled() on this thread throws Cancelled once `*flag` is true.
// Scopes nest; the inner flag is the one polled. A null flag makes the scope uncancellable.
class ScopedCancellation {
public:
    explicit ScopedCancellation(const std::atomic<bool>* flag);
    ~ScopedCancellation();
    ScopedCancellation(const ScopedCancellation&) = delete;
    ScopedCancellation& operator=(const ScopedCancellation&) = delete;

private:
    const std::atomic<bool>* outer_;
};

// A cancellation point: one relaxed load when a scope is installed, nothing otherwise.
void throw_if_cancelled();

}  // namespace mirrorlab
