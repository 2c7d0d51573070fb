#include "core/distribute/step_cost_model.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/distribute/worker_communicator.h"
#include "core/util/error.h"
#include "core/util/median.h"

namespace mirrorlab {

const std::vector<LinkModel>& standard_links() {
    // Bandwidth: the specification's line rate in one direction (what a ring streams; NCCL and MPI
    // reach roughly 80-90 % of it on long messages). Latency: a typical small-message figure for
    // the software that drives it (MPI over the interconnect, NCCL's per-step latency on NVLink,
    // kernel TCP on Ethernet). The probe's measured link replaces these where it ran.
    static const std::vector<LinkModel> links = {
        {"NVLink 4", 2.0, 450.0, "nominal: H100/H200 SXM, 900 GB/s both directions (NVIDIA datasheet)"},
        {"PCIe 5.0 x16", 5.0, 63.0, "nominal: 32 GT/s x 16 lanes, 128b/130b, one direction"},
        {"PCIe 4.0 x16", 5.0, 31.5, "nominal: 16 GT/s x 16 lanes, 128b/130b, one direction"},
        {"InfiniBand NDR", 1.0, 50.0, "nominal: 400 Gb/s, MPI latency ~1 us"},
        {"InfiniBand HDR", 1.0, 25.0, "nominal: 200 Gb/s, MPI latency ~1 us"},
        {"100 GbE", 3.0, 12.5, "nominal: 100 Gb/s with RDMA (RoCE), ~3 us"},
        {"25 GbE", 20.0, 3.125, "nominal: 25 Gb/s, kernel TCP ~20 us"},
        {"10 GbE", 25.0, 1.25, "nominal: 10 Gb/s, kernel TCP ~25 us"},
        {"1 GbE", 50.0, 0.125, "nominal: 1 Gb/s, kernel TCP ~50 us"},
        {"shared memory", 0.5, 10.0, "nominal: MPI between processes of one host (single-copy); the probe measures it"},
    };
    return links;
}

namespace {

std::string squeeze(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

// Weighted least squares y = a + b x (weights 1 when none are given); false without two different x.
bool fit_line(const std::vector<double>& x, const std::vector<double>& y, double& a, double& b,
              const std::vector<double>& weights = {}) {
    auto weight = [&](std::size_t i) { return weights.empty() ? 1.0 : weights[i]; };
    double total = 0.0, mean_x = 0.0, mean_y = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) total += weight(i);
    if (x.size() < 2 || !(total > 0.0)) return false;
    for (std::size_t i = 0; i < x.size(); ++i) mean_x += weight(i) * x[i] / total, mean_y += weight(i) * y[i] / total;
    double covariance = 0.0, variance = 0.0, spread = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        covariance += weight(i) * (x[i] - mean_x) * (y[i] - mean_y);
        variance += weight(i) * (x[i] - mean_x) * (x[i] - mean_x);
        spread = std::max(spread, std::abs(x[i] - x.front()));
    }
    if (!(spread > 1e-9 * std::max(1.0, std::abs(mean_x))) || !(variance > 0.0)) return false;
    b = covariance / variance;
    a = mean_y - b * mean_x;
    return true;
}

// y = b x through the origin.
double fit_proportional(const std::vector<double>& x, const std::vector<double>& y) {
    double xy = 0.0, xx = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) xy += x[i] * y[i], xx += x[i] * x[i];
    return xx > 0.0 ? xy / xx : 0.0;
}

int ceil_log2(int p) {
    int steps = 0;
    while ((1 << steps) < p) ++steps;
    return steps;
}

}  // namespace

const LinkModel* find_standard_link(std::string_view name) {
    const std::string wanted = squeeze(name);
    for (const LinkModel& link : standard_links()) {
        if (squeeze(link.name) == wanted) return &link;
    }
    return nullptr;
}

LinkModel fit_link(const std::vector<LinkSample>& samples, std::string name) {
    std::vector<double> bytes, seconds_per_message;
    for (const LinkSample& sample : samples) {
        if (sample.participants < 2 || !(sample.seconds > 0.0) || sample.bytes_per_worker < 0.0) continue;
        bytes.push_back(sample.bytes_per_worker);
        seconds_per_message.push_back(sample.seconds / (sample.participants - 1));
    }
    // Relative errors count (weights 1/t²): the 8-byte all-gather, a thousand times faster than the
    // 2 MiB one, then decides the latency as the large ones decide the bandwidth.
    std::vector<double> weights;
    for (double t : seconds_per_message) weights.push_back(1.0 / (t * t));
    double alpha = 0.0, beta = 0.0;
    if (!fit_line(bytes, seconds_per_message, alpha, beta, weights))
        throw Error("the link probe needs all-gathers of at least two different sizes between two or more workers");
    if (alpha < 0.0) {  // noise on the small messages: keep the bandwidth honest, latency 0
        alpha = 0.0;
        beta = fit_proportional(bytes, seconds_per_message);
    }
    if (!(beta > 0.0))
        throw Error("the link probe's timings do not grow with the message size; measure again on idle cores");
    LinkModel link;
    link.name = std::move(name);
    link.latency_us = alpha * 1e6;
    link.gbytes_per_second = 1e-9 / beta;
    link.source = "probe: " + std::to_string(samples.size()) + " all-gathers of " +
                  std::to_string(static_cast<long long>(bytes.front())) + " to " +
                  std::to_string(static_cast<long long>(*std::max_element(bytes.begin(), bytes.end()))) +
                  " bytes per worker";
    return link;
}

std::vector<LinkSample> probe_worker_link(WorkerCommunicator& workers, int repeats) {
    const int participants = workers.size();
    std::vector<LinkSample> samples;
    if (participants < 2) return samples;
    constexpr std::int64_t kSizes[] = {8, 16 << 10, 128 << 10, 512 << 10, 1 << 20, 2 << 20};
    constexpr std::size_t kSizeCount = std::size(kSizes);
    std::vector<char> buffer(static_cast<std::size_t>(kSizes[kSizeCount - 1]) * participants, 1);
    // The sizes in turn within each round, so that what slows the job for a while (a worker still
    // settling in after start-up, a neighbour on the host) slows every size alike: size by size,
    // the first size took all of it, and the largest all-gather once read faster than the smallest
    // (under AddressSanitizer, 2 workers on 2 cores).
    std::vector<std::vector<double>> seconds(kSizeCount);
    for (int repeat = -2; repeat < repeats; ++repeat) {
        for (std::size_t size = 0; size < kSizeCount; ++size) {
            const auto start = std::chrono::steady_clock::now();
            workers.all_gather_in_place(buffer.data(), kSizes[size]);
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (repeat >= 0) seconds[size].push_back(elapsed);
        }
    }
    for (std::size_t size = 0; size < kSizeCount; ++size) {
        samples.push_back({static_cast<double>(kSizes[size]), participants, median(seconds[size])});
    }
    return samples;
}

std::string_view collective_algorithm_name(CollectiveAlgorithm algorithm) {
    switch (algorithm) {
        case CollectiveAlgorithm::Ring: return "ring";
        case CollectiveAlgorithm::Tree: return "tree";
        case CollectiveAlgorithm::ReduceToOne: return "reduce";
        case CollectiveAlgorithm::GatherThenFold: return "gather-fold";
    }
    return "?";
}

CollectiveAlgorithm collective_algorithm_from_name(std::string_view name) {
    for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
                                          CollectiveAlgorithm::ReduceToOne, CollectiveAlgorithm::GatherThenFold}) {
        if (collective_algorithm_name(algorithm) == name) return algorithm;
    }
    throw Error("unknown all-reduce algorithm '" + std::string(name) +
                "': choose ring, tree, reduce (to one device, then broadcast) or gather-fold (MirrorLab's "
                "bit-identical CPU workers)");
}

double all_reduce_seconds(CollectiveAlgorithm algorithm, int participants, double bytes, const LinkModel& link,
                          double add_gbytes_per_second, int replicas_per_participant) {
    if (participants <= 1) return 0.0;
    const double p = participants;
    const double alpha = link.latency_us * 1e-6;
    const double beta = 1.0 / (link.gbytes_per_second * 1e9);
    const double gamma = 1.0 / (add_gbytes_per_second * 1e9);
    switch (algorithm) {
        case CollectiveAlgorithm::Ring:
            return 2.0 * (p - 1.0) * alpha + 2.0 * ((p - 1.0) / p) * bytes * beta + ((p - 1.0) / p) * bytes * gamma;
        case CollectiveAlgorithm::Tree: {
            const double steps = ceil_log2(participants);
            return 2.0 * steps * (alpha + bytes * beta) + steps * bytes * gamma;
        }
        case CollectiveAlgorithm::ReduceToOne:
            return 2.0 * (p - 1.0) * (alpha + bytes * beta) + (p - 1.0) * bytes * gamma;
        case CollectiveAlgorithm::GatherThenFold:
            // Each replica's copy into the gathering buffer, the all-gather, then p buffers folded
            // (a copy and p - 1 adds) by the worker's R threads, each over its 1/R of the elements.
            return (p - 1.0) * (alpha + replicas_per_participant * bytes * beta) + (p + 1.0) * bytes * gamma;
    }
    return 0.0;
}

void fit_compute(ComputeProfile& profile, const std::vector<ComputeSample>& samples) {
    std::vector<double> batch, compute;
    double update = 0.0, other = 0.0;
    for (const ComputeSample& sample : samples) {
        if (!(sample.per_replica_batch > 0.0) || !(sample.compute_ms > 0.0)) continue;
        batch.push_back(sample.per_replica_batch);
        compute.push_back(sample.compute_ms);
        update += sample.update_ms;
        other += sample.other_ms;
    }
    if (batch.empty())
        throw Error("no measured step to calibrate the compute from: run a one-replica bench first "
                    "(mirrorlab-cli bench --devices cpu --threads 1 --json)");
    double fixed = 0.0, per_sample = 0.0;
    if (!fit_line(batch, compute, fixed, per_sample) || fixed < 0.0 || per_sample <= 0.0) {
        fixed = 0.0;
        per_sample = fit_proportional(batch, compute);
    }
    profile.fixed_ms = fixed;
    profile.per_sample_ms = per_sample;
    profile.update_ms = update / static_cast<double>(batch.size());
    profile.other_ms = other / static_cast<double>(batch.size());
}

double core_sharing_slowdown(int busy_threads, int cores, double parallel_capacity) {
    if (busy_threads <= 1 || cores < 1) return 1.0;
    const double capacity_at_cores = std::clamp(parallel_capacity, 1.0, static_cast<double>(cores));
    if (busy_threads <= cores) {
        const double capacity =
            cores == 1 ? 1.0 : 1.0 + (busy_threads - 1) * (capacity_at_cores - 1.0) / (cores - 1);
        return busy_threads / capacity;
    }
    // More threads than cores, in lock step: every step waits for its last thread, and a core that
    // runs two of them finishes the second only after both, so a step takes ceil(w / c) turns
    // (3 workers on 2 cores: 2 turns, not 1.5), each at the all-core speed.
    const int turns = (busy_threads + cores - 1) / cores;
    return turns * (cores / capacity_at_cores);
}

StepPrediction predict_step(const ComputeProfile& profile, const ClusterShape& shape) {
    if (shape.workers < 1 || shape.devices_per_worker < 1)
        throw Error("a cluster needs at least one worker with at least one device");
    if (shape.workers_per_host < 1 || shape.workers_per_host > shape.workers)
        throw Error("workers per host must be between 1 and the number of workers (" + std::to_string(shape.workers) + ")");
    const std::int64_t devices = static_cast<std::int64_t>(shape.workers) * shape.devices_per_worker;
    if (shape.global_batch < devices)
        throw Error("a global batch of " + std::to_string(shape.global_batch) + " cannot be split over " +
                    std::to_string(devices) + " devices: every device needs at least one sample");
    if (!(profile.per_sample_ms > 0.0))
        throw Error("the what-if has no measured compute yet: calibrate it from a bench run or a scaling experiment");
    if (shape.workers > 1 && !(shape.inter_link.gbytes_per_second > 0.0))
        throw Error("choose a link between the workers");

    StepPrediction out;
    out.shape = shape;
    out.per_device_batch = (shape.global_batch + devices - 1) / devices;
    const int busy_threads = profile.shares_host_cores ? shape.workers_per_host * shape.devices_per_worker : 1;
    out.slowdown = core_sharing_slowdown(busy_threads, profile.cores_per_host, profile.parallel_capacity);
    out.compute_ms = (profile.fixed_ms + profile.per_sample_ms * static_cast<double>(out.per_device_batch)) * out.slowdown;
    out.update_ms = profile.update_ms * out.slowdown;
    out.other_ms = profile.other_ms;
    // Workers sharing a host's cores also share them for the all-reduce: its copies and adds run
    // on the same cores, and a shared-memory transfer is a copy by the CPU.
    const double communication_slowdown = shape.workers_per_host > 1 ? out.slowdown : 1.0;

    const double bytes = profile.gradient_bytes;
    const bool one_level = shape.workers > 1 && shape.inter_algorithm == CollectiveAlgorithm::GatherThenFold;
    if (!one_level && shape.devices_per_worker > 1) {
        out.intra_all_reduce_ms = 1e3 * all_reduce_seconds(shape.intra_algorithm, shape.devices_per_worker, bytes,
                                                           profile.intra_link, profile.add_gbytes_per_second);
    }
    if (shape.workers > 1) {
        out.inter_all_reduce_ms = 1e3 * all_reduce_seconds(shape.inter_algorithm, shape.workers, bytes, shape.inter_link,
                                                           profile.add_gbytes_per_second, shape.devices_per_worker) *
                                 communication_slowdown;
    }
    out.step_ms = out.compute_ms + out.intra_all_reduce_ms + out.inter_all_reduce_ms + out.update_ms + out.other_ms;
    out.samples_per_second = static_cast<double>(shape.global_batch) * 1e3 / out.step_ms;
    const double one_device_ms = profile.fixed_ms + profile.per_sample_ms * static_cast<double>(shape.global_batch) +
                                 profile.update_ms + profile.other_ms;
    out.efficiency = one_device_ms / out.step_ms / static_cast<double>(devices);
    return out;
}

double measure_add_gbytes_per_second(double bytes) {
    const std::size_t count = std::max<std::size_t>(1024, static_cast<std::size_t>(bytes / sizeof(float)));
    std::vector<float> a(count, 1.0f), b(count, 2.0f), sum(count, 0.0f);
    double best_seconds = 1e9;
    for (int repeat = 0; repeat < 7; ++repeat) {
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < count; ++i) sum[i] = a[i] + b[i];
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best_seconds = std::min(best_seconds, seconds);
        a[repeat] = sum[count - 1 - repeat];  // a later repeat depends on this one: the loop stays
    }
    return static_cast<double>(count * sizeof(float)) / best_seconds / 1e9;
}

}  // namespace mirrorlab
