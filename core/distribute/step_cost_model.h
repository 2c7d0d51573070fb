#pragma once
// What-if scaling: the time of one mirrored training step on a cluster that is not here — N
// workers × G devices per worker, on chosen links, at a chosen global batch — predicted from what
// was measured here. It is the textbook cost model of data-parallel training (Thakur, Rabenseifner
// and Gropp, "Optimization of Collective Communication Operations in MPICH", 2005):
//
//   step = compute(per-device batch) × core sharing + all-reduce inside each worker
//          + all-reduce across workers + update × core sharing + the rest (data, hand-offs)
//
// where each all-reduce costs, for p participants and n bytes on a link of latency α and bandwidth
// 1/β, and γ seconds per byte to add:
//   ring (reduce-scatter + all-gather)    2(p-1)α + 2((p-1)/p) n β + ((p-1)/p) n γ
//   tree (binomial reduce + broadcast)    2⌈log2 p⌉ (α + n β) + ⌈log2 p⌉ n γ
//   reduce to one device (+ broadcast)    2(p-1) (α + n β) + (p-1) n γ     (the root's link serialises)
//   gather, then fold in replica order    (p-1) (α + R n β) + (p+1) n γ   (MirrorLab's bit-identical
//                                          CPU workers: every worker gathers all p × R replicas'
//                                          gradients, its R threads add them; core/distribute/cross_worker.h)
// Communication is not overlapped with the backward pass (MirrorLab does not overlap it yet).
// Workers on one host share its cores for compute, update and all-reduce alike (core_sharing_slowdown).
//
// Calibration: compute = fixed + per-sample × batch, fitted from one-replica runs at two or more
// per-replica batch sizes (one size: proportional); the update and the rest as measured; a link's
// α and β fitted from timed all-gathers of several sizes between the workers (the bench's link
// probe under mpirun); CPU replicas and workers on one host share its cores by the measured
// parallel capacity. The standard links carry nominal figures from their specifications.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab {

class WorkerCommunicator;

// A link between participants of an all-reduce, by its α-β figures.
struct LinkModel {
    std::string name;                  // "10 GbE", "shared memory (measured)"
    double latency_us = 0.0;           // α: the cost of a message of any size
    double gbytes_per_second = 0.0;    // 1/β: how fast a long message streams (10^9 bytes/s)
    std::string source;                // where the figures come from ("nominal", "probe: 2 workers, ...")
};

// The links the what-if offers, fastest first; nominal figures (see the .cpp for each one's source).
const std::vector<LinkModel>& standard_links();
// By name, case-insensitive ("10 GbE", "10gbe", "infiniband-hdr", ...); nullptr when none matches.
const LinkModel* find_standard_link(std::string_view name);

// One timed collective of the link probe: every worker contributed `bytes_per_worker` to an
// all-gather among `participants` workers, which took `seconds` (median of repeats).
struct LinkSample {
    double bytes_per_worker = 0.0;
    int participants = 2;
    double seconds = 0.0;
};
// α and β by least squares of t / (p - 1) = α + m β over the samples (a ring all-gather sends
// p - 1 messages of m bytes). Throws mirrorlab::Error without two different sizes, or when the
// fit gives no positive bandwidth.
LinkModel fit_link(const std::vector<LinkSample>& samples, std::string name);

// The link probe: every worker calls it at the same point (it is a collective). Times all-gathers
// of 8 B to 2 MiB per worker, every size in turn in each of `repeats` rounds (after two untimed
// rounds), and returns this worker's medians.
// Throws ClusterError as the collectives do.
std::vector<LinkSample> probe_worker_link(WorkerCommunicator& workers, int repeats = 15);

enum class CollectiveAlgorithm { Ring, Tree, ReduceToOne, GatherThenFold };
std::string_view collective_algorithm_name(CollectiveAlgorithm algorithm);  // "ring", "tree", "reduce", "gather-fold"
// Throws mirrorlab::Error naming the choices for an unknown name.
CollectiveAlgorithm collective_algorithm_from_name(std::string_view name);

// Seconds of one all-reduce of `bytes` over `participants` (1: free) on `link`, adding at
// `add_gbytes_per_second`. `replicas_per_participant` only matters for GatherThenFold (each
// worker's R replicas' gradients travel, its R threads fold).
double all_reduce_seconds(CollectiveAlgorithm algorithm, int participants, double bytes, const LinkModel& link,
                          double add_gbytes_per_second, int replicas_per_participant = 1);

// One measured step of one replica at `per_replica_batch` samples (a one-replica bench run).
struct ComputeSample {
    double per_replica_batch = 0.0;
    double compute_ms = 0.0;  // forward + backward
    double update_ms = 0.0;   // the optimizer step
    double other_ms = 0.0;    // the rest of the step: data wait, hand-offs
    double samples_per_second = 0.0;  // the run's throughput (0: not known)
};

// What one device of the kind measured here costs, and what the host around it gives.
struct ComputeProfile {
    std::string device = "CPU";  // what was measured ("CPU (Intel Xeon, avx512)")
    bool shares_host_cores = true;  // CPU replicas: each takes a core; GPUs do not
    double fixed_ms = 0.0;          // compute = fixed_ms + per_sample_ms × per-replica batch
    double per_sample_ms = 0.0;
    double update_ms = 0.0;
    double other_ms = 0.0;
    double gradient_bytes = 0.0;           // one replica's gradient (the all-reduced bytes)
    double add_gbytes_per_second = 10.0;   // γ: adding gradients (memory bound)
    int cores_per_host = 1;
    // Throughput of `cores_per_host` copies of the work at once over one copy alone (≤ cores):
    // what the host gives parallel replicas (BenchResult::parallel_capacity).
    double parallel_capacity = 1.0;
    LinkModel intra_link;  // between the devices of one worker (CPU: memory, measured or nominal)
};
// Fills fixed/per-sample by least squares over the samples (one batch size: proportional, fixed 0)
// and the update and rest as their means. Throws mirrorlab::Error without a usable sample.
void fit_compute(ComputeProfile& profile, const std::vector<ComputeSample>& samples);

// How much longer a lock-step phase takes when `busy_threads` threads share a host of `cores` with
// the measured `parallel_capacity` at `cores` threads: w / capacity(w) up to the core count (2 on
// 2 cores of capacity 1.9: 1.05), then ceil(w / c) turns at the all-core speed (3 on 2: 2.1).
double core_sharing_slowdown(int busy_threads, int cores, double parallel_capacity);

struct ClusterShape {
    int workers = 1;
    int devices_per_worker = 1;
    int workers_per_host = 1;  // > 1: workers share a host (loopback, or a node running several)
    std::int64_t global_batch = 32;
    LinkModel inter_link;      // between workers
    CollectiveAlgorithm intra_algorithm = CollectiveAlgorithm::ReduceToOne;
    CollectiveAlgorithm inter_algorithm = CollectiveAlgorithm::GatherThenFold;
};

struct StepPrediction {
    ClusterShape shape;
    std::int64_t per_device_batch = 0;  // the largest shard (the slowest replica's)
    double slowdown = 1.0;              // core sharing
    double compute_ms = 0.0;
    double intra_all_reduce_ms = 0.0;   // inside each worker
    double inter_all_reduce_ms = 0.0;   // across workers
    double update_ms = 0.0;
    double other_ms = 0.0;
    double step_ms = 0.0;
    double samples_per_second = 0.0;
    // Speed-up over one device with the same global batch, per device (1.0: linear), as the
    // scaling panel measures it.
    double efficiency = 0.0;
};

// Throws mirrorlab::Error for a shape that cannot run (no workers, no devices, a global batch
// smaller than the devices) or an uncalibrated profile.
StepPrediction predict_step(const ComputeProfile& profile, const ClusterShape& shape);

// Adding two float buffers of `bytes` each into a third, timed on this thread: γ for the profile
// (GB/s of one operand), best of a few repeats.
double measure_add_gbytes_per_second(double bytes = 4.0 * 1024 * 1024);

}  // namespace mirrorlab
