#pragma once
// The all-reduce of MultiWorkerMirroredStrategy on CPU replicas: K workers with R replicas each
// sum their K×R gradients so that every variable ends bit-identical to one process with K×R
// replicas (`mpirun -np 2 ... --devices cpu` trains exactly as `--devices cpu:2`).
//
// Why not "reduce inside each worker, then MPI_Allreduce the workers' sums"? Float addition is not
// associative: one process with 4 replicas computes ((b0 + b1) + b2) + b3, while two workers that
// first sum their own pair give (b0 + b1) + (b2 + b3), and MPI_Allreduce picks its own order. So
// every worker gathers all K×R replicas' gradients (MPI_Allgather, in rank order) and adds them in
// the single process's order: reduce-to-one-device folds b0 + b1 + ... for every element; the ring
// starts chunk c's fold at replica c (c, c+1, ..., wrapping round). Each worker's replica threads
// split the elements between them, as the single process's do. The cost is traffic: a worker
// receives (K-1)·R gradients per step instead of about two, fine for a few workers on one host or
// a fast link; a reduce-scatter in the same order is the next step for more.
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/device/collectives.h"
#include "core/distribute/replica_stats.h"
#include "core/distribute/worker_communicator.h"
#include "core/util/step_barrier.h"

namespace mirrorlab {

// "Gather every replica's gradient from 2 workers over Open MPI v4.1.4, then reduce to
// /job:worker/task:0/device:CPU:0's order (... + ...), as one process with 2 replicas would."
std::string describe_cross_worker(AllReduceAlgorithm order, const std::vector<std::string>& global_devices,
                                  const std::string& library, int workers);

class CrossWorkerAllReduce {
public:
    // `order`: ReduceToOneDevice or Ring, the single process's algorithm to reproduce.
    CrossWorkerAllReduce(WorkerCommunicator& communicator, AllReduceAlgorithm order, int local_replicas);

    int workers() const { return communicator_.size(); }
    int global_replicas() const { return workers() * local_replicas_; }
    int first_replica() const { return communicator_.rank() * local_replicas_; }
    AllReduceAlgorithm order() const { return order_; }
    WorkerCommunicator& communicator() { return communicator_; }

    // Sizes the gathering buffer for `elements` floats per replica (before the first step).
    void prepare(std::int64_t elements);
    // From every local replica's thread at once, once every local gradient is queued and marked
    // ready: `buffers[r]` (local replica r) ends as the sum over all workers' replicas (the loss
    // markers included, so every worker reaches the same finiteness verdict). Returns with no
    // replica reading another's buffer. Throws ClusterError.
    void all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                    StepBarrier& barrier);
    // Fills every worker's entries of `counts` (one per global replica) from their owners.
    void gather_counts(std::vector<LossCounts>& counts);
    // The same for a step's phase times (one per global replica), so rank 0's events show the job.
    void gather_timings(std::vector<PhaseTimings>& timings);
    // The same for each replica's device memory, so rank 0's memory events show every worker's.
    void gather_memory(std::vector<DeviceMemoryCounts>& memory);
    // True on every worker when `mine` is true on any.
    bool any(bool mine);
    // Every worker's `mine` ORed together, on every worker: several yes/no questions in one gather.
    std::uint64_t any_bits(std::uint64_t mine);
    // Every worker's `value` in rank order.
    std::vector<std::uint64_t> gather(std::uint64_t value);

private:
    // Every worker's entries of `entries` (one per global replica, this worker's R at
    // first_replica()) filled from their owners; T travels as bytes.
    template <typename T>
    void gather_entries(std::vector<T>& entries);
    // Sums elements [begin, end) of every global replica's gradient (in gathered_) into `sum`.
    void fold(std::int64_t begin, std::int64_t end, const TensorView& sum, Backend& backend) const;
    TensorView gathered_view(int global_replica, std::int64_t begin, std::int64_t end) const;

    WorkerCommunicator& communicator_;
    AllReduceAlgorithm order_;
    int local_replicas_;
    std::int64_t elements_ = 0;
    std::vector<float> gathered_;  // global replica g's gradient at g * elements_
};

}  // namespace mirrorlab
