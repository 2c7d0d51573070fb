// The emulated NCCL (see include/nccl.h).
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <memory>
#include <set>
#include <vector>

#include "emulator.h"

namespace mirrorlab_emulation {

struct Clique {
    int ranks = 0;
    std::atomic<int> async_error{ncclSuccess};  // what ncclCommGetAsyncError reports
    std::atomic<bool> aborted{false};            // a rank was aborted: no more collectives
    std::mutex mutex;
    std::vector<std::shared_ptr<std::atomic<bool>>> stalls;  // collectives that wait for a peer
};

struct Communicator {
    std::shared_ptr<Clique> clique;
    int rank = 0;
    int device = 0;
};

namespace {

struct PendingAllReduce {
    const float* send = nullptr;
    float* receive = nullptr;
    std::size_t count = 0;
    Communicator* comm = nullptr;
    cudaStream_t stream = nullptr;
};

// A peer that never arrives: each rank's collective waits on its stream until ncclCommAbort.
void queue_stalled(Clique& clique, const std::vector<PendingAllReduce>& ranks, bool remote_error) {
    if (remote_error) clique.async_error = ncclRemoteError;
    std::lock_guard lock(clique.mutex);
    for (const auto& call : ranks) {
        auto stalled = std::make_shared<std::atomic<bool>>(true);
        clique.stalls.push_back(stalled);
        // Released by an abort, it writes nothing: the receive buffer keeps what it held.
        enqueue_stalled(call.stream, [] {}, {Access{call.receive, true, call.count * sizeof(float)}}, stalled);
        count(Counted::LibraryLaunch);
    }
}

thread_local int tls_group_depth = 0;
thread_local std::vector<PendingAllReduce> tls_pending;

ncclResult_t run_collectives(std::vector<PendingAllReduce> calls) {
    // Every clique in the group needs exactly one call per rank, all of the same size.
    std::set<Clique*> cliques;
    for (const auto& call : calls) cliques.insert(call.comm->clique.get());
    for (Clique* clique : cliques) {
        std::vector<PendingAllReduce> ranks(static_cast<std::size_t>(clique->ranks));
        int seen = 0;
        for (const auto& call : calls) {
            if (call.comm->clique.get() != clique) continue;
            auto& slot = ranks[static_cast<std::size_t>(call.comm->rank)];
            if (slot.comm != nullptr) return ncclInvalidUsage;  // two calls for one rank
            slot = call;
            ++seen;
        }
        if (seen != clique->ranks) {
            report("all-reduce-missing-ranks", "an all-reduce over %d ranks got %d of them from one thread; NCCL "
                   "would wait for the rest for ever", clique->ranks, seen);
            return ncclInvalidUsage;
        }
        for (const auto& call : ranks) {
            if (call.count != ranks.front().count) return ncclInvalidUsage;
        }
        if (clique->aborted) return ncclInvalidUsage;
        if (injected_failure("ncclStall") || injected_failure("ncclRemoteError")) {
            queue_stalled(*clique, ranks, injected_failure("ncclRemoteError"));
            continue;
        }
        // The collective reads its inputs after the work queued before it on each rank's stream,
        // and nothing else: an input still being written on another stream is a mistake.
        for (const auto& call : ranks) drain(call.stream);
        for (const auto& call : ranks) check_host_read(call.send, call.count * sizeof(float), "ncclAllReduce");
        auto sum = std::make_shared<std::vector<float>>(ranks.front().count, 0.0f);
        for (const auto& call : ranks) {
            const auto* send = static_cast<const float*>(device_to_host(call.send));
            for (std::size_t i = 0; i < sum->size(); ++i) (*sum)[i] += send[i];
        }
        // Each rank's result lands as work on its stream: visible only once that stream is waited for.
        for (const auto& call : ranks) {
            enqueue(
                call.stream,
                [sum, receive = static_cast<float*>(device_to_host(call.receive))] {
                    std::copy(sum->begin(), sum->end(), receive);
                },
                {Access{call.receive, true, call.count * sizeof(float)}});
            count(Counted::LibraryLaunch);  // one kernel per rank on a GPU
        }
    }
    return ncclSuccess;
}

}  // namespace

}  // namespace mirrorlab_emulation

using namespace mirrorlab_emulation;

ncclResult_t ncclGetVersion(int* version) {
    *version = 22800;
    return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
    switch (result) {
        case ncclSuccess: return "no error";
        case ncclUnhandledCudaError: return "unhandled cuda error";
        case ncclSystemError: return "unhandled system error";
        case ncclInternalError: return "internal error";
        case ncclInvalidArgument: return "invalid argument";
        case ncclInvalidUsage: return "invalid usage";
        case ncclRemoteError: return "remote process exited or there was a network error";
        case ncclInProgress: return "NCCL operation in progress";
    }
    return "unknown result code";
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int count, const int* devices) {
    if (comms == nullptr || count <= 0) return ncclInvalidArgument;
    if (injected_failure("ncclCommInitAll")) return ncclSystemError;
    std::set<int> distinct;
    for (int i = 0; i < count; ++i) {
        const int device = devices != nullptr ? devices[i] : i;
        if (!valid_device(device) || !distinct.insert(device).second) return ncclInvalidArgument;
    }
    auto clique = std::make_shared<Clique>();
    clique->ranks = count;
    for (int i = 0; i < count; ++i) comms[i] = new Communicator{clique, i, devices != nullptr ? devices[i] : i};
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
    if (comm == nullptr) return ncclInvalidArgument;
    Clique& clique = *comm->clique;
    clique.aborted = true;
    {
        std::lock_guard lock(clique.mutex);
        for (const auto& stalled : clique.stalls) *stalled = false;
        clique.stalls.clear();
    }
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
    if (comm == nullptr || async_error == nullptr) return ncclInvalidArgument;
    *async_error = static_cast<ncclResult_t>(comm->clique->async_error.load());
    return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
    ++tls_group_depth;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
    if (tls_group_depth == 0) return ncclInvalidUsage;
    if (--tls_group_depth > 0) return ncclSuccess;
    std::vector<PendingAllReduce> calls;
    calls.swap(tls_pending);
    return calls.empty() ? ncclSuccess : run_collectives(std::move(calls));
}

ncclResult_t ncclAllReduce(const void* send, void* receive, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
    if (comm == nullptr || type != ncclFloat || op != ncclSum) return ncclInvalidArgument;
    const std::size_t bytes = count * sizeof(float);
    if (device_of_range(send, bytes) != comm->device || device_of_range(receive, bytes) != comm->device ||
        stream_device(stream) != comm->device) {
        report("all-reduce-other-device", "ncclAllReduce on rank %d (GPU:%d) got buffers or a stream of another device",
               comm->rank, comm->device);
        return ncclInvalidArgument;
    }
    if (refuse_if_capturing(stream, "ncclAllReduce", "NCCL calls are not emulated in a capture") != cudaSuccess) {
        return ncclInvalidUsage;
    }
    // The stream as it is now: null means the default stream of the device current at this call.
    PendingAllReduce call{static_cast<const float*>(send), static_cast<float*>(receive), count, comm, resolve(stream)};
    if (tls_group_depth > 0) {
        tls_pending.push_back(call);
        return ncclSuccess;
    }
    return run_collectives({call});
}
