#pragma once
// WorkerCommunicator over MPI (Open MPI from Debian: libopenmpi-dev, openmpi-bin), for processes
// started together by `mpirun -np K ...`. Its own library (mirrorlab_mpi), built where MPI is
// found; core itself never includes mpi.h.
//
// Errors: MPI_COMM_WORLD returns errors here (MPI_ERRORS_RETURN), so a failed collective becomes a
// ClusterError whose text the program prints; a worker that dies is noticed by mpirun, which ends
// the others and names the lost rank. A worker that fails alone calls abort_all(), so that the
// others, waiting for it in a collective, end too instead of hanging.
#include <memory>
#include <string>

#include "core/distribute/worker_communicator.h"

namespace mirrorlab {

class MpiCommunicator final : public WorkerCommunicator {
public:
    // MPI_Init_thread (MPI_THREAD_SERIALIZED: the trainer's and the replicas' threads call it, one
    // at a time). Throws ClusterError when MPI cannot start.
    MpiCommunicator();
    ~MpiCommunicator() override;  // MPI_Finalize
    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    std::string library() const override { return library_; }
    void all_gather_in_place(void* gathered, std::int64_t bytes_per_worker) override;
    void broadcast(void* buffer, std::int64_t bytes, int root) override;
    bool all_arrive_within(std::chrono::milliseconds timeout) override;
    [[noreturn]] void abort_all(int exit_code) override;

private:
    int rank_ = 0;
    int size_ = 1;
    std::string library_;
    struct Handles;
    std::unique_ptr<Handles> handles_;
};

}  // namespace mirrorlab
