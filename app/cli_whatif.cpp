// `mirrorlab-cli whatif`: the what-if scaling model (core/distribute/step_cost_model.h), calibrated
// from saved `bench --json` results, predicting step time and efficiency for clusters not here.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "core/train/what_if.h"
#include "core/util/error.h"
#include "core/util/file.h"
#include "core/util/json.h"

namespace mirrorlab::cli {

namespace {

// "1,2,4" -> {1, 2, 4}, every entry within [min_value, max_value].
template <typename T>
std::vector<T> parse_list(const std::string& option, const std::string& text, long long min_value, long long max_value) {
    std::vector<T> values;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        std::size_t used = 0;
        long long value = 0;
        try {
            value = std::stoll(item, &used, 10);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || value < min_value || value > max_value)
            throw UsageError(option + " takes a comma-separated list of integers from " + std::to_string(min_value) +
                             " to " + std::to_string(max_value) + ", got '" + text + "'");
        values.push_back(static_cast<T>(value));
    }
    if (values.empty()) throw UsageError(option + " needs at least one value");
    return values;
}

void print_links() {
    std::printf("%-16s %12s %12s  %s\n", "link", "latency us", "GB/s", "source");
    for (const LinkModel& link : standard_links())
        std::printf("%-16s %12.1f %12.3f  %s\n", link.name.c_str(), link.latency_us, link.gbytes_per_second,
                    link.source.c_str());
    std::printf("%-16s %12s %12s  %s\n", "measured", "", "", "the link probe of a multi-worker bench given with --calibration");
}

json::Value prediction_json(const StepPrediction& p) {
    json::Value row = json::Value::object();
    row["workers"] = p.shape.workers;
    row["devices_per_worker"] = p.shape.devices_per_worker;
    row["workers_per_host"] = p.shape.workers_per_host;
    row["global_batch"] = p.shape.global_batch;
    row["per_device_batch"] = p.per_device_batch;
    row["core_sharing_slowdown"] = p.slowdown;
    row["compute_ms"] = p.compute_ms;
    row["intra_all_reduce_ms"] = p.intra_all_reduce_ms;
    row["inter_all_reduce_ms"] = p.inter_all_reduce_ms;
    row["update_ms"] = p.update_ms;
    row["other_ms"] = p.other_ms;
    row["ms_per_step"] = p.step_ms;
    row["samples_per_second"] = p.samples_per_second;
    row["efficiency"] = p.efficiency;
    return row;
}

json::Value link_json(const LinkModel& link) {
    json::Value out = json::Value::object();
    out["name"] = link.name;
    out["latency_us"] = link.latency_us;
    out["gbytes_per_second"] = link.gbytes_per_second;
    out["source"] = link.source;
    return out;
}

void print_table(const WhatIfCalibration& calibration, const ClusterShape& shape,
                 const std::vector<StepPrediction>& rows) {
    const ComputeProfile& p = calibration.profile;
    std::printf("What-if: calibrated from");
    for (const std::string& source : calibration.sources) std::printf(" %s", source.c_str());
    std::printf("\n  compute per replica  %.3f ms + %.4f ms/sample  (%s)\n", p.fixed_ms, p.per_sample_ms, p.device.c_str());
    std::printf("  update %.3f ms, rest of the step %.3f ms; gradient %.0f bytes, added at %.1f GB/s\n", p.update_ms,
                p.other_ms, p.gradient_bytes, p.add_gbytes_per_second);
    std::printf("  host: %d core(s), parallel capacity %.2f (%s)%s\n", p.cores_per_host, p.parallel_capacity,
                calibration.capacity_source.c_str(),
                p.shares_host_cores ? "; replicas and workers on one host share its cores" : "");
    std::printf("  inside a worker: %s, %s at %.1f us + bytes / %.2f GB/s\n",
                std::string(collective_algorithm_name(shape.intra_algorithm)).c_str(), p.intra_link.name.c_str(),
                p.intra_link.latency_us, p.intra_link.gbytes_per_second);
    std::printf("  across workers:   %s, %s at %.1f us + bytes / %.2f GB/s (%s)\n",
                std::string(collective_algorithm_name(shape.inter_algorithm)).c_str(), shape.inter_link.name.c_str(),
                shape.inter_link.latency_us, shape.inter_link.gbytes_per_second, shape.inter_link.source.c_str());
    std::printf("%-12s %6s %6s %8s %8s %8s %8s %8s %8s %10s %10s\n", "workers x dev", "batch", "/dev", "compute",
                "intra", "inter", "update", "rest", "step ms", "samples/s", "efficiency");
    for (const StepPrediction& r : rows) {
        const std::string cluster = std::to_string(r.shape.workers) + " x " + std::to_string(r.shape.devices_per_worker);
        std::printf("%-12s %6lld %6lld %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %10.0f %9.1f%%\n", cluster.c_str(),
                    static_cast<long long>(r.shape.global_batch), static_cast<long long>(r.per_device_batch),
                    r.compute_ms, r.intra_all_reduce_ms, r.inter_all_reduce_ms, r.update_ms, r.other_ms, r.step_ms,
                    r.samples_per_second, 100.0 * r.efficiency);
    }
}

struct WhatIfOptions {
    std::vector<std::string> calibration_files;
    std::string link;
    std::string workers = "1,2,3,4,8";
    std::string batches = "32";
    int devices_per_worker = 1;
    std::string one_host = "auto";
    std::string intra = "reduce";
    std::string inter = "gather-fold";
    bool list_links = false;
    bool json = false;
};

void add_whatif_options(CLI::App& command, WhatIfOptions& options) {
    command.add_option("--calibration", options.calibration_files,
                       "a `bench --json` result (repeat: one-replica runs at several batch sizes, a multi-worker run)")
        ->type_name("FILE");
    command.add_option("--link", options.link,
                       "between workers: measured (the probe's; default where given), or a standard link (--links)")
        ->type_name("NAME");
    command.add_option("--workers", options.workers, "worker counts (default 1,2,3,4,8)")->type_name("LIST");
    command.add_option("--global-batch", options.batches, "global batch sizes (default 32)")->type_name("LIST");
    add_integer(command, "--devices-per-worker", options.devices_per_worker, 1, 1024, "devices (replicas) per worker (default 1)");
    command.add_option("--one-host", options.one_host,
                       "yes: all workers share one host's cores (loopback); no: a host each; auto (default): yes\n"
                       "for a shared-memory link")
        ->type_name("yes|no|auto");
    command.add_option("--intra", options.intra, "all-reduce inside a worker: reduce (default), ring, tree")->type_name("ALG");
    command.add_option("--inter", options.inter,
                       "across workers: gather-fold (MirrorLab's bit-identical CPU workers, default), ring, tree, reduce")
        ->type_name("ALG");
    command.add_flag("--links", options.list_links, "list the standard links and their figures, then exit");
    command.add_flag("--json", options.json, "print the calibration and the predictions as one JSON object");
}

// The cluster the options describe, less the worker count and batch (the table's rows).
ClusterShape cluster_shape(const WhatIfOptions& options, const WhatIfCalibration& calibration, bool& one_host) {
    ClusterShape shape;
    shape.devices_per_worker = options.devices_per_worker;
    try {
        shape.intra_algorithm = collective_algorithm_from_name(options.intra);
        shape.inter_algorithm = collective_algorithm_from_name(options.inter);
    } catch (const Error& error) {
        throw UsageError(error.what());
    }
    const std::string link =
        options.link.empty() ? (calibration.measured_link ? "measured" : "shared memory") : options.link;
    if (link == "measured") {
        if (!calibration.measured_link)
            throw UsageError("--link measured needs a multi-worker bench result (mpirun -np 2 mirrorlab-cli "
                             "bench --json) among the --calibration files");
        shape.inter_link = *calibration.measured_link;
    } else if (const LinkModel* standard = find_standard_link(link)) {
        shape.inter_link = *standard;
    } else {
        throw UsageError("unknown link '" + link + "': `mirrorlab-cli whatif --links` lists them");
    }
    if (options.one_host != "auto" && options.one_host != "yes" && options.one_host != "no")
        throw UsageError("--one-host takes yes, no or auto, got '" + options.one_host + "'");
    const bool shared_memory = shape.inter_link.name.find("shared memory") != std::string::npos;
    one_host = options.one_host == "yes" || (options.one_host == "auto" && shared_memory);
    return shape;
}

json::Value whatif_json(const WhatIfCalibration& calibration, const ClusterShape& shape,
                        const std::vector<StepPrediction>& rows) {
    json::Value root = json::Value::object();
    json::Value sources = json::Value::array();
    for (const std::string& source : calibration.sources) sources.push_back(source);
    root["calibration"] = std::move(sources);
    const ComputeProfile& p = calibration.profile;
    root["compute_fixed_ms"] = p.fixed_ms;
    root["compute_per_sample_ms"] = p.per_sample_ms;
    root["update_ms"] = p.update_ms;
    root["other_ms"] = p.other_ms;
    root["gradient_bytes"] = p.gradient_bytes;
    root["add_gbytes_per_second"] = p.add_gbytes_per_second;
    root["cores_per_host"] = p.cores_per_host;
    root["parallel_capacity"] = p.parallel_capacity;
    root["intra_link"] = link_json(p.intra_link);
    root["inter_link"] = link_json(shape.inter_link);
    root["intra_algorithm"] = std::string(collective_algorithm_name(shape.intra_algorithm));
    root["inter_algorithm"] = std::string(collective_algorithm_name(shape.inter_algorithm));
    json::Value predictions = json::Value::array();
    for (const StepPrediction& row : rows) predictions.push_back(prediction_json(row));
    root["predictions"] = std::move(predictions);
    return root;
}

int run_whatif(const WhatIfOptions& options) {
    if (options.list_links) {
        print_links();
        return 0;
    }
    if (options.calibration_files.empty())
        throw UsageError("whatif needs --calibration FILE: save `mirrorlab-cli bench --devices cpu --threads 1 --json` first");
    WhatIfCalibration calibration;
    for (const std::string& path : options.calibration_files) {
        add_bench_json(calibration, read_file_text(path, 64u << 20, "bench result '" + path + "'", "bench results"), path);
    }
    finish_calibration(calibration);
    bool one_host = false;
    const ClusterShape shape = cluster_shape(options, calibration, one_host);
    const auto workers = parse_list<int>("--workers", options.workers, 1, 1 << 16);
    const auto batches = parse_list<std::int64_t>("--global-batch", options.batches, 1, 1LL << 30);
    std::vector<std::string> left_out;
    const std::vector<StepPrediction> rows =
        predict_range(calibration.profile, shape, workers, batches, one_host, &left_out);
    for (const std::string& combination : left_out)
        std::fprintf(stderr, "whatif: %s left out: fewer samples than devices\n", combination.c_str());
    if (rows.empty()) throw UsageError("no combination of --workers and --global-batch gives every device a sample");
    if (options.json) {
        std::printf("%s\n", json::dump(whatif_json(calibration, shape, rows), 2, json::InvalidUtf8::Replace).c_str());
    } else {
        print_table(calibration, shape, rows);
    }
    return 0;
}

}  // namespace

Command add_whatif_command(CLI::App& app) {
    CLI::App* command = add_command(app, "whatif", "predict step time and scaling on clusters not here");
    command->footer(
        "Calibrates a cost model of the mirrored step from saved bench results and predicts the step\n"
        "time, throughput and scaling efficiency of N workers x G devices on a chosen link:\n"
        "  mirrorlab-cli bench --devices cpu --threads 1 --json > one.json  # compute (one replica)\n"
        "  mpirun -np 2 mirrorlab-cli bench --devices cpu --json > two.json  # the link between workers\n"
        "  mirrorlab-cli whatif --calibration one.json --calibration two.json --workers 1,2,3,8 --link 10gbe\n"
        "Step = compute x core sharing + all-reduce inside each worker + across workers + update + rest;\n"
        "each all-reduce by the alpha-beta model of its algorithm (docs/PERFORMANCE.md, What-if).");
    auto options = std::make_shared<WhatIfOptions>();
    add_whatif_options(*command, *options);
    return {command, [options] { return run_whatif(*options); }};
}

}  // namespace mirrorlab::cli
