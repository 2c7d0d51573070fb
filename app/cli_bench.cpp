#include "app/cli_bench.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/train/bench.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

const char* const kBenchUsage = R"(usage: mirrorlab-cli bench [options]

Trains the reference workload (the tutorial model, batch 32, Nadam) and prints ms/step,
samples/s, epoch seconds (training + validation, median over epochs), per-phase times, peak RSS
and a scaling table of 1..N replicas with one thread each.

options:
  --devices SPEC        cpu | cpu:2 | ... as for train (default cpu:2)
  --data SPEC           as for train (default synthetic): e.g. reuters21578:DIR for real text
  --epochs N            measured epochs (default 3)
  --steps N             training steps per epoch (default: the whole epoch)
  --threads N           CPU threads in all (default: one per core)
  --batch-size N        global batch (default 32)
  --keras-semantics X   tf2 (default) | keras3 | dense: the Nadam update as which Keras
  --scaling N           scaling table rows 1..N replicas (default: the core count; 0: none)
  --scaling-steps N     timed steps per scaling row, spread over 5 interleaved rounds (default 400)
  --json                print the result as one JSON object
)";

int usage_error(const std::string& message) {
    std::fprintf(stderr, "mirrorlab-cli: error: %s\n", message.c_str());
    std::fprintf(stderr, "Run 'mirrorlab-cli bench --help' for the options.\n");
    return 2;
}

bool parse_integer(const std::string& text, long long min_value, long long max_value, long long& value) {
    char* end = nullptr;
    errno = 0;
    value = std::strtoll(text.c_str(), &end, 10);
    return end != text.c_str() && *end == '\0' && errno == 0 && value >= min_value && value <= max_value;
}

void print_text(const BenchResult& r) {
    const BenchRun& run = r.run;
    std::printf("MirrorLab bench: reference workload (332,856 parameters, batch %d, Nadam, %s semantics)\n",
                r.config.batch_size, std::string(embedding_update_name(r.config.keras_semantics)).c_str());
    std::printf("CPU: %s, %d cores; backend %s\n", r.cpu.c_str(), r.cores, r.backend.c_str());
    std::printf("Data: %s - %lld training and %lld validation samples\n", r.data.c_str(),
                static_cast<long long>(r.train_samples),
                static_cast<long long>(r.validation_samples));
    std::printf(
        "Run: %s - %d replica(s), %d thread(s), %lld steps + %lld validation steps per epoch, %zu "
        "epoch(s)\n",
        run.devices.c_str(), run.replicas, run.threads, static_cast<long long>(run.steps_per_epoch),
        static_cast<long long>(run.validation_steps), run.epoch_seconds_each.size());
    std::printf("  ms/step         %8.2f\n", run.ms_per_step);
    std::printf("  samples/s       %8.0f\n", run.samples_per_second);
    std::printf("  epoch seconds   %8.3f  (training %.3f + validation %.3f; each:",
                run.epoch_seconds, run.train_seconds, run.validation_seconds);
    for (double seconds : run.epoch_seconds_each) std::printf(" %.3f", seconds);
    std::printf(")\n");
    std::printf("  CPU s/epoch     %8.3f  (all threads)\n", run.cpu_seconds_per_epoch);
    const PhaseTimes& p = run.phases;
    std::printf(
        "  phases ms/step  data %.3f, forward %.3f, backward %.3f, all-reduce %.3f, update %.3f, "
        "other %.3f\n",
        p.data_wait_ms, p.forward_ms, p.backward_ms, p.allreduce_ms, p.update_ms, p.other_ms);
    std::printf("  peak RSS        %8.1f MiB\n", run.peak_rss_mib);
    std::printf("  final loss      %8.4f\n", run.final_loss);
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

}  // namespace

int run_bench_command(int argc, char** argv, int first) {
    BenchConfig config;
    bool json = false;
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(kBenchUsage, stdout);
            return 0;
        }
        if (arg == "--json") {
            json = true;
            continue;
        }
        std::string value;
        if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        } else if (arg.rfind("--", 0) == 0 && i + 1 < argc) {
            value = argv[++i];
        } else {
            return usage_error(arg.rfind("--", 0) == 0 ? "option " + arg + " needs a value"
                                                       : "unexpected argument '" + arg + "'");
        }
        long long number = 0;
        // Bounded above too, so nothing wraps when it narrows to the engine's int fields.
        auto integer = [&](long long min_value, long long max_value = 1'000'000) {
            if (!parse_integer(value, min_value, max_value, number)) {
                usage_error(arg + " must be an integer from " + std::to_string(min_value) + " to " +
                            std::to_string(max_value) + ", got '" + value + "'");
                return false;
            }
            return true;
        };
        if (arg == "--devices") {
            config.devices = value;
        } else if (arg == "--data") {
            config.data = value;
        } else if (arg == "--epochs") {
            if (!integer(1)) return 2;
            config.epochs = static_cast<int>(number);
        } else if (arg == "--steps") {
            if (!integer(1)) return 2;
            config.steps = number;
        } else if (arg == "--threads") {
            if (!integer(1, 4096)) return 2;
            config.threads = static_cast<int>(number);
        } else if (arg == "--batch-size") {
            if (!integer(1, 1 << 24)) return 2;
            config.batch_size = static_cast<std::int32_t>(number);
        } else if (arg == "--keras-semantics") {
            try {
                config.keras_semantics = embedding_update_from_name(value);
            } catch (const Error& error) {
                return usage_error(error.what());
            }
        } else if (arg == "--scaling") {
            if (!integer(0, 64)) return 2;
            config.scaling_replicas = static_cast<int>(number);
        } else if (arg == "--scaling-steps") {
            if (!integer(2)) return 2;
            config.scaling_steps = number;
        } else {
            return usage_error("unknown option " + arg);
        }
    }
    try {
        const BenchResult result = run_bench(config, [json](const std::string& line) {
            std::fprintf(stderr, "%s\n", line.c_str());
        });
        if (json) {
            std::printf("%s\n", bench_to_json(result).c_str());
        } else {
            print_text(result);
        }
        return 0;
    } catch (const Error& error) {
        std::fprintf(stderr, "mirrorlab-cli: error: %s\n", error.what());
        return 1;
    }
}

}  // namespace mirrorlab
