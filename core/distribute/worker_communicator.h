#pragma once
// The workers of a multi-worker run — one process each, started together by `mpirun` — and the
// few collectives that MultiWorkerMirroredStrategy needs between them. core/mpi implements it with
// MPI in its own library, so that core builds and tests without MPI; core itself only sees this.
//
// Every worker calls each collective in the same order (they are collectives: a worker that skips
// one leaves the others waiting). They are called from one thread at a time per worker.
#include <chrono>
#include <cstdint>
#include <string>

#include "core/util/error.h"

namespace mirrorlab {

// Something between the workers went wrong: a collective failed, or the workers disagree (their
// variables differ, they were started with different settings). The text names the ranks.
class ClusterError : public Error {
public:
    using Error::Error;
};

class WorkerCommunicator {
public:
    virtual ~WorkerCommunicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // The library that carries the messages, for the log: "Open MPI v4.1.4".
    virtual std::string library() const = 0;

    // Every worker passes `bytes_per_worker` bytes at `gathered + rank() * bytes_per_worker` (in
    // place); on return `gathered` holds every worker's bytes in rank order. Throws ClusterError.
    virtual void all_gather_in_place(void* gathered, std::int64_t bytes_per_worker) = 0;
    // `bytes` of `root`'s buffer land in every worker's. Throws ClusterError.
    virtual void broadcast(void* buffer, std::int64_t bytes, int root) = 0;
    // Waits until every worker has called it, at most `timeout`; false when some did not come in
    // time (they failed alone, or hang). Runs apart from the other collectives, so a worker may
    // call it while others still wait in one of those.
    virtual bool all_arrive_within(std::chrono::milliseconds timeout) = 0;
    // Ends every worker's process with `exit_code` (what went wrong was said before).
    [[noreturn]] virtual void abort_all(int exit_code) = 0;
};

}  // namespace mirrorlab
