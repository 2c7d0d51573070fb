// `mirrorlab-cli bench`: its options, then core/train/bench.h's result as a table or JSON.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "app/cli_cluster.h"
#include "app/cli_commands.h"
#include "core/data/source.h"
#include "core/model/model.h"
#include "core/store/store_cost.h"
#include "core/train/bench.h"
#include "core/util/error.h"
#include "core/util/json.h"

namespace mirrorlab::cli {

namespace {

// One replica's step layer by layer (core/train/step_parts.h), each GEMM-shaped layer's rate
// beside the one-thread FMA peak: the rows far from it are where the epoch loses to the floor.
void print_step_parts(const BenchResult& r) {
    const StepParts& s = r.step_parts;
    if (s.parts.empty()) return;
    std::printf("Where a step goes (one replica on one thread, batch %d; medians of %d steps):\n", s.batch, s.steps);
    std::printf("  %-34s %10s %11s %8s %9s\n", "part", "forward ms", "backward ms", "GFLOP/s", "of peak");
    for (const StepPart& part : s.parts) {
        const double ms = part.forward_ms + part.backward_ms;
        const double gflops = part.gflop > 0 && ms > 0 ? part.gflop / ms * 1e3 : 0.0;
        std::printf("  %-34s %10.3f %11.3f", part.name.c_str(), part.forward_ms, part.backward_ms);
        if (gflops > 0 && r.fma_peak.one_core_gflops > 0) {
            std::printf(" %8.1f %8.0f%%", gflops, 100.0 * gflops / r.fma_peak.one_core_gflops);
        }
        std::printf("\n");
    }
    std::printf("  %-34s %22.3f ms  (the all-reduce and the hand-offs between replicas come on top)\n", "one step",
                s.total_ms());
}

// The scaling experiment's rows, and what the machine allowed in parallel meanwhile.
void print_scaling(const BenchResult& r) {
    if (r.scaling.empty()) return;
    std::printf("Scaling (%lld steps per row in %d interleaved rounds, medians; validation off):\n",
                static_cast<long long>(r.config.scaling_steps), r.scaling_rounds);
    if (r.parallel_capacity_threads > 0) {
        // Replicas cannot scale past what the machine gives parallel work at the moment.
        std::printf(
            "  parallel capacity (median of the rounds): %.2fx on %d threads (idle cores: %d.00x), so N replicas can "
            "reach at\n"
            "  most capacity / N efficiency\n",
            r.parallel_capacity, r.parallel_capacity_threads, r.parallel_capacity_threads);
    }
    std::printf("  replicas  threads  samples/s  ms/step  efficiency\n");
    const ScalingRow* copies = nullptr;
    for (const ScalingRow& row : r.scaling) {
        if (row.independent_copies) {
            copies = &row;
            continue;
        }
        std::printf("  %8d  %7d  %9.0f  %7.2f  %9.0f%%%s\n", row.replicas, row.threads,
                    row.samples_per_second, row.ms_per_step, 100.0 * row.efficiency,
                    row.replicas == 1 && row.threads > 1 ? "  (vs 1 thread)" : "");
    }
    if (copies != nullptr) {
        // The same per-replica work with no synchronisation: what this machine allows right now.
        std::printf("  %d independent 1-thread trainings on one shard each: %.0f samples/s, %.0f%% of ideal\n",
                    copies->replicas, copies->samples_per_second, 100.0 * copies->efficiency);
        for (const ScalingRow& row : r.scaling) {
            if (row.replicas == copies->replicas && !row.independent_copies && copies->samples_per_second > 0) {
                std::printf("  %d mirrored replicas reach %.0f%% of the independent trainings' throughput\n",
                            row.replicas, 100.0 * row.samples_per_second / copies->samples_per_second);
            }
        }
    }
}

void print_text(const BenchResult& r) {
    const BenchRun& run = r.run;
    std::printf("MirrorLab bench: reference workload (332,856 parameters, batch %d, Nadam, %s semantics)\n",
                r.config.batch_size, std::string(embedding_update_name(r.config.keras_semantics)).c_str());
    const std::string caches = r.cpu_caches.empty() ? std::string() : " (" + r.cpu_caches + ")";
    std::printf("CPU: %s, %d cores%s; backend %s\n", r.cpu.c_str(), r.cores, caches.c_str(), r.backend.c_str());
    std::printf("Data: %s - %lld training and %lld validation samples\n", r.data.c_str(),
                static_cast<long long>(r.train_samples),
                static_cast<long long>(r.validation_samples));
    const std::string workers = r.workers > 1 ? std::to_string(r.workers) + " workers x " : std::string();
    std::printf(
        "Run: %s%s - %d replica(s), %d thread(s)%s, %lld steps + %lld validation steps per epoch, %zu "
        "epoch(s)\n",
        workers.c_str(), run.devices.c_str(), run.replicas, run.threads, r.workers > 1 ? " per worker" : "",
        static_cast<long long>(run.steps_per_epoch),
        static_cast<long long>(run.validation_steps), run.epoch_seconds_each.size());
    std::printf("  ms/step         %8.2f\n", run.ms_per_step);
    std::printf("  samples/s       %8.0f\n", run.samples_per_second);
    std::printf("  epoch seconds   %8.3f  (training %.3f + validation %.3f; each:",
                run.epoch_seconds, run.train_seconds, run.validation_seconds);
    for (double seconds : run.epoch_seconds_each) std::printf(" %.3f", seconds);
    std::printf(")\n");
    std::printf("  CPU s/epoch     %8.3f  (all threads)\n", run.cpu_seconds_per_epoch);
    // The epoch against what the FMA units allow (bench.h: model_flops, measure_fma_peak).
    std::printf("  epoch work      %8.2f GFLOP  (Conv1D and Dense GEMMs: forward + backward of the trained samples,\n"
                "                                 forward of the validated ones)\n",
                r.epoch_flops / 1e9);
    std::printf("  achieved        %8.1f GFLOP/s  (work / epoch seconds; kernels %s)\n", r.achieved_gflops,
                r.kernel_isa.empty() ? "reference" : r.kernel_isa.c_str());
    std::printf("  FMA peak        %8.1f GFLOP/s on %d thread(s), %.1f on one  (measured, %s)\n",
                r.fma_peak.all_core_gflops, r.fma_peak.threads, r.fma_peak.one_core_gflops, r.fma_peak.isa.c_str());
    std::printf("  floor           %8.3f s  (work / all-thread peak): the epoch is %.2fx the floor\n", r.floor_seconds,
                r.floor_ratio);
    std::printf("  CPU floor       %8.3f s  (work / one thread's peak): CPU s/epoch is %.2fx it\n", r.cpu_floor_seconds,
                r.cpu_floor_ratio);
    const PhaseTimes& p = run.phases;
    std::printf(
        "  phases ms/step  data %.3f, forward %.3f, backward %.3f, all-reduce %.3f, update %.3f, "
        "other %.3f\n",
        p.data_wait_ms, p.forward_ms, p.backward_ms, p.allreduce_ms, p.update_ms, p.other_ms);
    std::printf("  epoch-end pause %8.1f ms  (the snapshot each kept checkpoint starts with: weights, optimizer slots)\n",
                run.epoch_end_snapshot_ms);
    std::printf("  peak RSS        %8.1f MiB  (this run's own, the high-water mark reset before it)\n", run.peak_rss_mib);
    std::printf("  process RSS     %8.1f MiB  (whole process, peak through this run; %.1f at start, data set +%.1f)\n",
                r.process_peak_rss_mib, r.startup_rss_mib, r.data_rss_mib);
    std::printf("  final loss      %8.4f\n", run.final_loss);
    if (!r.link.name.empty()) {
        // What `mirrorlab-cli whatif` calibrates the link between workers from (--json keeps the samples).
        std::printf("  link probe      %8.1f us + bytes / %.2f GB/s between the workers (all-gathers of 8 B to 2 MiB each)\n",
                    r.link.latency_us, r.link.gbytes_per_second);
    }
    print_step_parts(r);
    print_scaling(r);
}

// The run store's cost on the bench's devices and data (core/store/store_cost.h).
void print_store_cost(const BenchConfig& config, std::int64_t steps, bool json) {
    const Model model = Model::reference();
    const DatasetSplit split = load_dataset(config.data);
    const TrainData data = make_train_data(split, model.input_length(), model.vocabulary_size());
    char scratch[] = "/tmp/mirrorlab_store_cost_XXXXXX";
    if (::mkdtemp(scratch) == nullptr) throw Error("bench: cannot create a scratch folder in /tmp for the run store");
    std::fprintf(stderr, "bench: the run store's cost, 5 rounds of %lld steps plain and recorded...\n", static_cast<long long>(steps));
    const StoreCost cost = measure_store_cost(model, data, config.devices, steps, 5, scratch);
    if (json) {
        json::Value o = json::Value::object();
        o.set("type", "run_store_cost");
        o.set("rounds", cost.rounds);
        o.set("steps", cost.steps);
        o.set("plain_ms_per_step", cost.plain_ms_per_step);
        o.set("recorded_ms_per_step", cost.recorded_ms_per_step);
        o.set("overhead_percent", cost.overhead_percent);
        o.set("checkpoint_ms", cost.checkpoint_ms);
        o.set("checkpoint_bytes", cost.checkpoint_bytes);
        std::printf("%s\n", json::dump(o, -1, json::InvalidUtf8::Replace).c_str());
        return;
    }
    std::printf("\nRun store (%s, %lld steps x %d rounds): %.3f ms/step recorded vs %.3f plain: %+.2f %% (median of the rounds' ratios)\n",
                config.devices.c_str(), static_cast<long long>(cost.steps), cost.rounds, cost.recorded_ms_per_step, cost.plain_ms_per_step,
                cost.overhead_percent);
    std::printf("  a checkpoint (%.1f MiB) takes %.1f ms to write (fsync included), once per epoch\n",
                static_cast<double>(cost.checkpoint_bytes) / (1024.0 * 1024.0), cost.checkpoint_ms);
}

void add_bench_options(CLI::App& command, BenchConfig& config) {
    add_device_spec(command, config.devices, "cpu | cpu:2 | ... as for train (default cpu:2)");
    add_data_spec(command, config.data, "as for train (default synthetic): e.g. reuters21578:DIR for real text");
    add_integer(command, "--epochs", config.epochs, 1, 1'000'000, "measured epochs (default 3)");
    add_integer(command, "--steps", config.steps, 1, 1'000'000, "training steps per epoch (default: the whole epoch)");
    add_integer(command, "--threads", config.threads, 1, 4096, "CPU threads in all (default: one per core)");
    add_integer(command, "--batch-size", config.batch_size, 1, 1 << 24, "global batch (default 32)");
    command.add_option("--keras-semantics", "tf2 (default) | keras3 | dense: the Nadam update as which Keras")
        ->type_name("X")
        ->each([&config](const std::string& text) {
            check_value("--keras-semantics", [&] { config.keras_semantics = embedding_update_from_name(text); });
        });
    add_integer(command, "--scaling", config.scaling_replicas, 0, 64,
                "scaling table rows 1..N replicas (default: the core count; 0: none)");
    add_integer(command, "--scaling-steps", config.scaling_steps, 2, 1'000'000,
                "timed steps per scaling row, spread over 5 interleaved rounds (default 400)");
    add_integer(command, "--parts-steps", config.step_parts_steps, 0, 1'000'000,
                "timed steps of the layer-by-layer breakdown (default 60; 0: none)");
}

}  // namespace

Command add_bench_command(CLI::App& app) {
    CLI::App* command = add_command(app, "bench", "time the reference workload");
    command->footer(
        "Trains the reference workload (the tutorial model, batch 32, Nadam) and prints ms/step,\n"
        "samples/s, epoch seconds (training + validation, median over epochs), per-phase times, peak RSS,\n"
        "where one replica's step goes layer by layer and a scaling table of 1..N replicas with one thread\n"
        "each.");
    struct Options {
        BenchConfig config;
        bool json = false;
        bool run_store = false;
        std::int64_t store_steps = 200;
    };
    auto options = std::make_shared<Options>();
    add_bench_options(*command, options->config);
    command->add_flag("--json", options->json, "print the result as one JSON object");
    command->add_flag("--run-store", options->run_store,
                      "also measure what keeping the run costs: the same steps plain and\n"
                      "recorded in the run store, 5 interleaved rounds");
    add_integer(*command, "--run-store-steps", options->store_steps, 10, 1'000'000, "steps per round and variant (default 200)");
    return {command, [options] {
                // Under mpirun: every worker trains its share, rank 0 prints the job's numbers.
                ClusterSession cluster = ClusterSession::join_if_launched();
                auto bench = [&] {
                    if (cluster.active() && options->run_store) {
                        throw UsageError("--run-store measures one process; run it without mpirun");
                    }
                    options->config.workers = cluster.communicator();
                    const bool speak = cluster.leader();
                    const BenchResult result = run_bench(options->config, [speak](const std::string& line) {
                        if (speak) std::fprintf(stderr, "%s\n", line.c_str());
                    });
                    if (!speak) return 0;
                    if (options->json) {
                        std::printf("%s\n", bench_to_json(result).c_str());
                    } else {
                        print_text(result);
                    }
                    if (options->run_store) print_store_cost(options->config, options->store_steps, options->json);
                    return 0;
                };
                return cluster.active() ? cluster.run_to_end(bench) : bench();
            }};
}

}  // namespace mirrorlab::cli
