#include "core/mpi/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>

namespace mirrorlab {

namespace {

// "MPI_Allgather failed between the workers: MPI_ERR_TRUNCATE: message truncated"
void check(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw ClusterError(std::string(what) + " failed between the workers: " + std::string(text, static_cast<std::size_t>(length)));
}

// MPI counts are ints: larger buffers go in pieces of at most this many bytes.
constexpr std::int64_t kMaxBytesPerCall = std::numeric_limits<int>::max() / 2;

}  // namespace

struct MpiCommunicator::Handles {
    // A duplicate of MPI_COMM_WORLD for all_arrive_within(): its barrier cannot be confused with a
    // collective that other workers are still waiting in on the world communicator.
    MPI_Comm arrival = MPI_COMM_NULL;
};

MpiCommunicator::MpiCommunicator() : handles_(std::make_unique<Handles>()) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        throw ClusterError("MPI could not start (MPI_Init_thread failed); run the workers with mpirun");
    }
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw ClusterError("this MPI library offers no MPI_THREAD_SERIALIZED (the trainer's threads take turns calling it); "
                           "use Open MPI from Debian (libopenmpi-dev)");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_dup(MPI_COMM_WORLD, &handles_->arrival);
    MPI_Comm_set_errhandler(handles_->arrival, MPI_ERRORS_RETURN);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    library_ = std::string(version, static_cast<std::size_t>(length));
    // "Open MPI v4.1.4, package: Debian OpenMPI, ..." -> "Open MPI v4.1.4"
    if (const auto comma = library_.find(','); comma != std::string::npos) library_.resize(comma);
    while (!library_.empty() && (library_.back() == '\n' || library_.back() == ' ')) library_.pop_back();
}

MpiCommunicator::~MpiCommunicator() {
    if (handles_->arrival != MPI_COMM_NULL) MPI_Comm_free(&handles_->arrival);
    MPI_Finalize();
}

void MpiCommunicator::all_gather_in_place(void* gathered, std::int64_t bytes_per_worker) {
    if (bytes_per_worker <= kMaxBytesPerCall) {
        check(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, static_cast<int>(bytes_per_worker), MPI_BYTE,
                            MPI_COMM_WORLD),
              "MPI_Allgather");
        return;
    }
    // Larger than an int counts: each worker's block in turn, broadcast from its owner.
    auto* bytes = static_cast<char*>(gathered);
    for (int owner = 0; owner < size_; ++owner) broadcast(bytes + owner * bytes_per_worker, bytes_per_worker, owner);
}

void MpiCommunicator::broadcast(void* buffer, std::int64_t bytes, int root) {
    auto* at = static_cast<char*>(buffer);
    for (std::int64_t done = 0; done < bytes;) {
        const std::int64_t piece = std::min(bytes - done, kMaxBytesPerCall);
        check(MPI_Bcast(at + done, static_cast<int>(piece), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
        done += piece;
    }
}

bool MpiCommunicator::all_arrive_within(std::chrono::milliseconds timeout) {
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Ibarrier(handles_->arrival, &request) != MPI_SUCCESS) return false;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        int done = 0;
        if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
        if (done != 0) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

void MpiCommunicator::abort_all(int exit_code) {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; should it, this process still ends
}

}  // namespace mirrorlab
