#include "core/train/what_if.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab {

namespace {

double number_or(const json::Value& object, std::string_view key, double fallback) {
    const json::Value* value = object.find(key);
    return value != nullptr && value->is_number() ? value->as_double() : fallback;
}

// A number of a bench result, checked against what bench can print: an edited or damaged file (a
// negative time, 1e308, no cores) gave negative or infinite predictions and "-nan%" in the table.
// `fallback` where the key is missing.
double checked_number(const json::Value& object, std::string_view key, double fallback, double lowest, double highest,
                      const std::string& where) {
    const json::Value* value = object.find(key);
    if (value == nullptr || !value->is_number()) return fallback;
    const double number = value->as_double();
    if (!(number >= lowest && number <= highest)) {
        char text[160];
        std::snprintf(text, sizeof text, " is %g, outside the %g to %g a bench result can hold", number, lowest, highest);
        throw Error(where + std::string(key) + text + ": the file was edited or damaged, run `mirrorlab-cli bench --json` again");
    }
    return number;
}

// The host's figures, from whichever run measured them (the first that did wins).
void take_host(ComputeProfile& profile, const std::string& device, int cores, double parallel_capacity,
               double add_gbytes_per_second, double gradient_bytes, bool& have_host) {
    if (gradient_bytes > 0.0 && !(profile.gradient_bytes > 0.0)) profile.gradient_bytes = gradient_bytes;
    if (add_gbytes_per_second > 0.0 && !have_host) profile.add_gbytes_per_second = add_gbytes_per_second;
    if (have_host) return;
    profile.device = device;
    profile.cores_per_host = std::max(1, cores);
    // Not measured (a bench without its scaling table): assume every core is a whole core.
    profile.parallel_capacity = parallel_capacity > 0.0 ? parallel_capacity : profile.cores_per_host;
    have_host = true;
}

// The bench's independent one-thread trainings on every core at once (its scaling table's last
// row): each trained a shard of the global batch, together at this many samples/s.
std::optional<WhatIfCalibration::IndependentRun> independent_run(const json::Value& root) {
    if (const json::Value* rows = root.find("scaling"); rows != nullptr && rows->is_array()) {
        for (const json::Value& row : rows->as_array()) {
            const json::Value* independent = row.find("independent_copies");
            const int copies = static_cast<int>(number_or(row, "replicas", 0));
            if (independent != nullptr && independent->is_bool() && independent->as_bool() && copies > 1 &&
                copies == static_cast<int>(number_or(root, "cores", -1))) {
                const double shard = std::max(1.0, std::floor(number_or(root, "batch_size", 32) / copies));
                return WhatIfCalibration::IndependentRun{copies, shard, number_or(row, "samples_per_second", 0)};
            }
        }
    }
    return std::nullopt;
}

// The bandwidth that makes `algorithm` over `participants` take `seconds` for `bytes`, with the
// latency and add speed given; 0 when the latency alone already explains the time.
double bandwidth_from(CollectiveAlgorithm algorithm, int participants, double bytes, double seconds,
                      double latency_us, double add_gbytes_per_second) {
    LinkModel instant{"", latency_us, 1e12, ""};
    const double fixed = all_reduce_seconds(algorithm, participants, bytes, instant, add_gbytes_per_second);
    LinkModel unit{"", 0.0, 1.0, ""};  // 1 GB/s, no latency, no adding: the bandwidth term's weight
    const double per_gbps = all_reduce_seconds(algorithm, participants, bytes, unit, 1e12);
    return seconds > fixed ? per_gbps / (seconds - fixed) : 0.0;
}

}  // namespace

void add_bench_result(WhatIfCalibration& calibration, const BenchResult& result, const std::string& name) {
    add_bench_json(calibration, bench_to_json(result), name);
}

void add_bench_json(WhatIfCalibration& calibration, const std::string& json_text, const std::string& name) {
    const json::Value root = json::parse(json_text, name);
    if (!root.is_object() || !root.contains("run") || !root.contains("workers"))
        throw Error(name + ": not a bench result (run `mirrorlab-cli bench --json` and save what it prints)");
    const json::Value& run = root.at("run");
    constexpr double kMillisecondsMost = 1e9, kCountMost = 1 << 24, kBytesMost = 1e15;
    const auto top = [&](std::string_view key, double fallback, double lowest, double highest) {
        return checked_number(root, key, fallback, lowest, highest, name + ": ");
    };
    const auto of_run = [&](std::string_view key, double fallback, double lowest, double highest) {
        return checked_number(run, key, fallback, lowest, highest, name + ": run.");
    };
    const int workers = static_cast<int>(top("workers", 1, 1, kCountMost));
    const int replicas = static_cast<int>(of_run("replicas", 0, 0, kCountMost));
    bool used = false;
    if (workers == 1 && replicas == 1) {
        // The model's devices are one-thread CPU replicas (a worker or replica gets one core): a
        // replica timed on several threads would predict every cluster too fast.
        const json::Value* devices = run.find("devices");
        const bool on_cpu = devices != nullptr && devices->is_string() && devices->as_string().rfind("cpu", 0) == 0;
        if (on_cpu && of_run("threads", 1, 1, kCountMost) > 1)
            throw Error(name + ": this one-replica run used " + std::to_string(static_cast<int>(of_run("threads", 1, 1, kCountMost))) +
                        " threads, but the model's CPU replicas have one core each: run it with `bench --devices cpu --threads 1`");
        const json::Value& phases = run.at("phases");
        const auto phase = [&](std::string_view key) { return checked_number(phases, key, 0, 0, kMillisecondsMost, name + ": run.phases."); };
        ComputeSample sample;
        sample.per_replica_batch = top("batch_size", 32, 1, kCountMost);
        sample.compute_ms = phase("forward_ms") + phase("backward_ms");
        sample.update_ms = phase("update_ms");
        sample.other_ms = phase("data_wait_ms") + phase("other_ms") + phase("allreduce_ms");
        if (!(sample.compute_ms > 0.0)) throw Error(name + ": the bench result has no forward and backward times");
        sample.samples_per_second = of_run("samples_per_second", 0, 0, 1e12);
        calibration.compute_samples.push_back(sample);
        std::string device = "CPU";
        if (const json::Value* cpu = root.find("cpu"); cpu != nullptr && cpu->is_string()) device = cpu->as_string();
        if (const json::Value* isa = root.find("kernel_isa"); isa != nullptr && isa->is_string() && !isa->as_string().empty())
            device += " (" + isa->as_string() + ")";
        if (auto independent = independent_run(root)) calibration.independent = independent;
        const double cores = top("cores", 1, 1, kCountMost);
        take_host(calibration.profile, device, static_cast<int>(cores), top("parallel_capacity", 0, 0, 2 * cores),
                  top("add_gbytes_per_second", 0, 0, 1e6), of_run("allreduce_buffer_bytes", 0, 0, kBytesMost), calibration.host_known);
        used = true;
    }
    if (const json::Value* probe = root.find("link_probe"); probe != nullptr && probe->is_object()) {
        const json::Value* listed = probe->find("samples");
        if (listed == nullptr || !listed->is_array()) throw Error(name + ": its link probe lists no samples");
        std::vector<LinkSample> samples;
        for (const json::Value& entry : listed->as_array()) {
            const std::string where = name + ": link_probe.samples[].";
            samples.push_back({checked_number(entry, "bytes_per_worker", 0, 0, kBytesMost, where),
                               static_cast<int>(checked_number(entry, "participants", 2, 2, kCountMost, where)),
                               checked_number(entry, "seconds", 0, 0, 1e6, where)});
        }
        try {
            calibration.measured_link = fit_link(samples, "shared memory (measured)");
        } catch (const Error& error) {
            throw Error(name + ": " + error.what());
        }
        calibration.measured_link->source = "probe of " + std::to_string(workers) + " workers in " + name;
        if (!(calibration.profile.gradient_bytes > 0.0)) calibration.profile.gradient_bytes = of_run("allreduce_buffer_bytes", 0, 0, kBytesMost);
        used = true;
    }
    if (!used)
        throw Error(name + ": a bench of " + std::to_string(workers) + " worker(s) x " + std::to_string(replicas) +
                    " replica(s) without a link probe calibrates nothing: give a one-replica run "
                    "(`bench --devices cpu --threads 1`) or a multi-worker one (`mpirun -np 2 ... bench`)");
    calibration.sources.push_back(name);
}

void add_scaling_experiment(WhatIfCalibration& calibration, const ScalingExperiment& experiment, int cores,
                            double parallel_capacity) {
    const std::int64_t gradient_bytes = experiment.allreduce_buffer_bytes;
    const ScalingPoint* single = nullptr;
    for (const ScalingPoint& point : experiment.points) {
        if (point.replicas == 1) single = &point;
    }
    if (single == nullptr || !(single->compute_ms > 0.0))
        throw Error("the scaling experiment has no measured one-replica row to calibrate from");
    const bool cpu = experiment.devices.rfind("cpu", 0) == 0;
    take_host(calibration.profile, cpu ? "CPU" : "GPU", cores, parallel_capacity, measure_add_gbytes_per_second(),
              static_cast<double>(gradient_bytes), calibration.host_known);
    calibration.profile.shares_host_cores = cpu;
    calibration.profile.intra_link = *find_standard_link("shared memory");
    for (const ScalingPoint& point : experiment.points) {
        if (point.shards.empty() || !(point.compute_ms > 0.0)) continue;
        const double slowdown = cpu ? core_sharing_slowdown(point.replicas, calibration.profile.cores_per_host,
                                                            calibration.profile.parallel_capacity)
                                    : 1.0;
        ComputeSample sample;
        sample.per_replica_batch = *std::max_element(point.shards.begin(), point.shards.end());
        sample.compute_ms = point.compute_ms / slowdown;
        sample.other_ms = single->other_ms;  // the update is in `other` here
        calibration.compute_samples.push_back(sample);
        if (point.replicas > 1 && point.communication_ms > 0.0 && gradient_bytes > 0) {
            const CollectiveAlgorithm algorithm =
                point.all_reduce == "ring" ? CollectiveAlgorithm::Ring : CollectiveAlgorithm::ReduceToOne;
            const double gbps = bandwidth_from(algorithm, point.replicas, static_cast<double>(gradient_bytes),
                                               point.communication_ms * 1e-3, calibration.profile.intra_link.latency_us,
                                               calibration.profile.add_gbytes_per_second);
            if (gbps > 0.0) {
                calibration.profile.intra_link.name = "one process's replicas (measured)";
                calibration.profile.intra_link.gbytes_per_second = gbps;
                calibration.profile.intra_link.source =
                    "the " + std::to_string(point.replicas) + "-replica row's all-reduce of experiment " +
                    std::to_string(experiment.id);
            }
        }
    }
    calibration.sources.push_back("scaling experiment " + std::to_string(experiment.id));
}

void finish_calibration(WhatIfCalibration& calibration) {
    if (calibration.profile.intra_link.name.empty()) calibration.profile.intra_link = *find_standard_link("shared memory");
    fit_compute(calibration.profile, calibration.compute_samples);
    // The host's capacity for this very work, where a run measured it: the independent trainings'
    // throughput over one training alone at the same shard size. Better than the kernel probe's,
    // which runs in cache and misses the memory traffic parallel trainings share.
    if (calibration.independent && calibration.independent->copies == calibration.profile.cores_per_host) {
        for (const ComputeSample& sample : calibration.compute_samples) {
            if (sample.per_replica_batch == calibration.independent->shard && sample.samples_per_second > 0.0) {
                // Above the core count is noise between the two runs (a core cannot do more than one).
                calibration.profile.parallel_capacity =
                    std::clamp(calibration.independent->samples_per_second / sample.samples_per_second, 1.0,
                               static_cast<double>(calibration.profile.cores_per_host));
                calibration.capacity_source = "independent trainings at batch " +
                                              std::to_string(static_cast<int>(sample.per_replica_batch));
            }
        }
    }
    if (!(calibration.profile.gradient_bytes > 0.0))
        throw Error("the calibration does not say how many bytes a gradient has: use a bench result of this version");
}

std::vector<StepPrediction> predict_range(const ComputeProfile& profile, ClusterShape shape,
                                          const std::vector<int>& worker_counts,
                                          const std::vector<std::int64_t>& global_batches, bool all_on_one_host,
                                          std::vector<std::string>* left_out) {
    std::vector<StepPrediction> rows;
    for (int workers : worker_counts) {
        for (std::int64_t batch : global_batches) {
            if (batch < static_cast<std::int64_t>(workers) * shape.devices_per_worker) {
                if (left_out != nullptr)
                    left_out->push_back(std::to_string(workers) + " workers x " + std::to_string(shape.devices_per_worker) +
                                        " at global batch " + std::to_string(batch));
                continue;
            }
            shape.workers = workers;
            shape.global_batch = batch;
            shape.workers_per_host = all_on_one_host ? workers : 1;
            rows.push_back(predict_step(profile, shape));
        }
    }
    return rows;
}

}  // namespace mirrorlab
