#pragma once
// The CUDA host emulator's NCCL (tests only; see cuda_runtime.h): communicators over the emulated
// GPUs and a float sum all-reduce. One thread driving several GPUs must group its calls, as with
// NCCL (where it would otherwise hang); the emulator answers ncclInvalidUsage instead of hanging.
// At ncclGroupEnd the collective waits for the work already queued on each rank's stream, adds
// the ranks' buffers in rank order and writes the sum to every rank.
//
// What a failing or stalled peer does, on request (MIRRORLAB_CUDA_EMULATION_FAIL, as for failing
// calls): "ncclStall" queues collectives that never complete (a host wait that reaches one dies with
// [hang]: on a GPU it would never return), "ncclRemoteError" the same plus ncclRemoteError from
// ncclCommGetAsyncError. ncclCommAbort releases them (they write nothing) and frees the communicator;
// a clique with an aborted rank refuses further collectives.
#include <cuda_runtime.h>

#include <cstddef>

enum ncclResult_t {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
};
enum ncclDataType_t { ncclFloat = 7 };
enum ncclRedOp_t { ncclSum = 0 };

namespace mirrorlab_emulation {
struct Communicator;
}
using ncclComm_t = mirrorlab_emulation::Communicator*;

#pragma GCC visibility push(default)  // the emulator's shared library exports its API (see cuda_runtime.h)

ncclResult_t ncclGetVersion(int* version);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int count, const int* devices);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclAllReduce(const void* send, void* receive, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);

#pragma GCC visibility pop
