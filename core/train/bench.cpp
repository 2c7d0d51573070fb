#include "core/train/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "core/backend/cpu_fast.h"
#include "core/data/source.h"
#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/model/model.h"
#include "core/train/step_parts.h"
#include "core/train/trainer.h"
#include "core/util/error.h"
#include "core/util/json.h"
#include "core/util/thread_pool.h"
#include "core/util/median.h"

namespace mirrorlab {

namespace {

// Steps at the start of a run that warm caches, page in buffers and start threads.
constexpr std::int64_t kWarmupSteps = 5;
constexpr std::int64_t kScalingWarmupSteps = 10;
constexpr int kScalingRounds = 5;

// Peak resident set: VmHWM of /proc/self/status, which writing "5" to /proc/self/clear_refs
// resets (Linux >= 4.0), so that each run reports its own peak. Elsewhere: the process's peak.
void reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (clear) clear << "5";
}

// A "Vm...:  N kB" line of /proc/self/status in MiB; negative where there is none.
double proc_status_mib(std::string_view field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0 && line.size() > field.size()) return std::stod(line.substr(field.size())) / 1024.0;
    }
    return -1.0;
}

double peak_rss_mib() {
    if (const double peak = proc_status_mib("VmHWM:"); peak >= 0) return peak;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Resident memory now (0 where it cannot be read).
double current_rss_mib() { return std::max(0.0, proc_status_mib("VmRSS:")); }

double process_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

int core_count() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string device_spec(int replicas) {
    return replicas == 1 ? "cpu" : "cpu:" + std::to_string(replicas);
}

TrainData load_bench_data(const std::string& spec, const Model& model, std::string& name,
                          std::int64_t& train_count, std::int64_t& validation_count) {
    const DatasetSplit split = load_dataset(spec);
    name = split.train.name;
    train_count = static_cast<std::int64_t>(split.train.size());
    validation_count = static_cast<std::int64_t>(split.validation.size());
    return make_train_data(split, model.input_length(), model.vocabulary_size());
}

struct RunSettings {
    std::string devices;
    int threads = 1;  // the thread pool's limit for this run; 0 leaves it as it is
    int epochs = 1;
    std::int64_t steps = 0;
    std::int32_t batch_size = 32;
    std::int64_t warmup_steps = kWarmupSteps;
    EmbeddingUpdate keras_semantics = EmbeddingUpdate::TF2;
    WorkerCommunicator* workers = nullptr;
};

// Times, at each epoch's end, what every checkpoint a user's run keeps starts with: the snapshot of
// the weights and the optimizer's slots, the Embedding's deferred moment decays paid first. The
// replicas wait for it (a pause the epoch's seconds do not show), so the bench measures it though
// it keeps no checkpoint itself.
class SnapshotTimer final : public Callback {
public:
    explicit SnapshotTimer(std::vector<double>& milliseconds) : milliseconds_(milliseconds) {}
    std::string name() const override { return "bench_snapshot_timer"; }
    void on_epoch_end(FitContext& context, const EpochRecord& /*record*/) override {
        const auto start = std::chrono::steady_clock::now();
        const TrainingState state = context.snapshot();
        milliseconds_.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }

private:
    std::vector<double>& milliseconds_;
};

BenchRun run_once(const Model& model, const TrainData& data, const RunSettings& settings) {
    if (settings.threads > 0) ThreadPool::instance().set_limit(settings.threads);
    auto registry = std::make_shared<DeviceRegistry>();
    load_gpu_plugin(*registry);  // as `train` does, so that the process pays what a user's does
    const DeviceConfig devices = DeviceConfig::parse(settings.devices);
    devices.validate(*registry);
    TrainConfig config;
    config.epochs = settings.epochs;
    config.batch_size = settings.batch_size;
    config.max_steps_per_epoch = settings.steps;
    config.overfitting_monitor = false;
    config.optimizer.follow_keras(settings.keras_semantics);

    BenchRun run;
    run.devices = settings.devices;
    run.threads = settings.threads;
    std::vector<double> step_ms, data_ms, forward_ms, backward_ms, allreduce_ms, update_ms,
        other_ms;
    std::vector<double> train_seconds, validation_seconds, snapshot_ms;
    std::int64_t seen_steps = 0;
    std::int64_t warmup_steps = settings.warmup_steps;
    reset_peak_rss();  // where it cannot, the run reports the process's peak so far
    Trainer trainer(model, devices, config, data, registry);
    if (settings.workers != nullptr) trainer.set_cluster(ClusterOptions{settings.workers, 0, false});
    trainer.add_callback(std::make_shared<SnapshotTimer>(snapshot_ms));
    trainer.set_event_sink([&](const Event& event) {
        if (const auto* begin = std::get_if<TrainBeginEvent>(&event)) {
            run.replicas = begin->replicas;
            run.steps_per_epoch = begin->steps_per_epoch;
            run.validation_steps = begin->validation_steps;
            // Short runs (smoke tests) still time their second half.
            warmup_steps = std::min(warmup_steps, begin->steps_per_epoch * settings.epochs / 2);
        } else if (const auto* step = std::get_if<StepEndEvent>(&event)) {
            if (++seen_steps <= warmup_steps) return;
            PhaseTimes slowest;
            for (const auto& replica : step->replicas) {
                slowest.data_wait_ms = std::max(slowest.data_wait_ms, replica.data_wait_ms);
                slowest.forward_ms = std::max(slowest.forward_ms, replica.forward_ms);
                slowest.backward_ms = std::max(slowest.backward_ms, replica.backward_ms);
                slowest.allreduce_ms = std::max(slowest.allreduce_ms, replica.allreduce_ms);
                slowest.update_ms = std::max(slowest.update_ms, replica.update_ms);
            }
            run.allreduce_buffer_bytes = step->allreduce_buffer_bytes;
            step_ms.push_back(step->step_time_ms);
            data_ms.push_back(slowest.data_wait_ms);
            forward_ms.push_back(slowest.forward_ms);
            backward_ms.push_back(slowest.backward_ms);
            allreduce_ms.push_back(slowest.allreduce_ms);
            update_ms.push_back(slowest.update_ms);
            other_ms.push_back(step->step_time_ms - slowest.data_wait_ms - slowest.forward_ms -
                               slowest.backward_ms - slowest.allreduce_ms - slowest.update_ms);
        } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
            const double train = end->ms_per_step * static_cast<double>(end->steps) / 1000.0;
            run.epoch_seconds_each.push_back(end->epoch_seconds);
            train_seconds.push_back(train);
            validation_seconds.push_back(end->epoch_seconds - train);
            run.final_loss = end->train.loss;
        }
    });
    const double cpu_start = process_cpu_seconds();
    const FitResult result = trainer.run();
    run.cpu_seconds_per_epoch = (process_cpu_seconds() - cpu_start) / settings.epochs;
    if (result.failed)
        throw Error("bench: training on " + settings.devices + " failed: " + result.failed->reason);
    run.peak_rss_mib = peak_rss_mib();
    run.ms_per_step = median(step_ms);
    run.samples_per_second =
        run.ms_per_step > 0 ? settings.batch_size * 1000.0 / run.ms_per_step : 0.0;
    run.epoch_seconds = median(run.epoch_seconds_each);
    run.train_seconds = median(train_seconds);
    run.validation_seconds = median(validation_seconds);
    run.epoch_end_snapshot_ms = median(snapshot_ms);
    run.phases = {median(data_ms),      median(forward_ms), median(backward_ms),
                  median(allreduce_ms), median(update_ms),  median(other_ms)};
    return run;
}

// Copies of the model's conv2 forward GEMM (one sample), one per thread, each counting how many
// it finishes in `seconds`; returns their total rate over the rate of one copy alone.
double measure_parallel_capacity(int threads, double seconds) {
    const fast::KernelTable& kernels = fast::best_kernels();
    auto rate = [&](int copies) {
        std::vector<std::int64_t> done(static_cast<std::size_t>(copies), 0);
        std::vector<std::thread> workers;
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        for (int i = 0; i < copies; ++i) {
            workers.emplace_back([&, i] {
                std::vector<float> x(148 * 64, 0.5f), w(3 * 64 * 32, 0.25f), y(146 * 32);
                fast::GemmArgs gemm;
                gemm.rows = 146;
                gemm.cols = 32;
                gemm.depth = 3 * 64;
                gemm.a = x.data();
                gemm.a_row = 64;
                gemm.a_depth = 1;
                gemm.b = w.data();
                gemm.ldb = 32;
                gemm.c = y.data();
                gemm.ldc = 32;
                while (std::chrono::steady_clock::now() < deadline) {
                    for (int repeat = 0; repeat < 16; ++repeat) kernels.gemm(gemm);
                    ++done[static_cast<std::size_t>(i)];
                }
            });
        }
        for (auto& worker : workers) worker.join();
        std::int64_t total = 0;
        for (std::int64_t d : done) total += d;
        return static_cast<double>(total);
    };
    const double one = rate(1);
    return one > 0 ? rate(threads) / one : 0.0;
}

// `copies` independent one-replica trainings at once, one thread each, every one on a shard of
// the global batch (what one replica of a `copies`-replica run computes, including its own full
// optimizer update) but with no all-reduce and no barrier. Their summed samples/s over one
// 1 x 1 run is what the machine gives this work in parallel; mirrored replicas can at best match it.
BenchRun run_independent_copies(const Model& model, const TrainData& data, RunSettings settings, int copies) {
    ThreadPool::instance().set_limit(copies);  // every copy's backend then runs on one thread
    settings.threads = 0;
    settings.devices = "cpu";
    const std::int32_t global_batch = settings.batch_size;
    settings.batch_size = std::max(1, global_batch / copies);
    std::vector<BenchRun> runs(static_cast<std::size_t>(copies));
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(copies));
    std::vector<std::thread> workers;
    for (int c = 0; c < copies; ++c) {
        workers.emplace_back([&, c] {
            try {
                runs[static_cast<std::size_t>(c)] = run_once(model, data, settings);
            } catch (...) {
                errors[static_cast<std::size_t>(c)] = std::current_exception();
            }
        });
    }
    for (auto& worker : workers) worker.join();
    for (const auto& error : errors) {
        if (error) std::rethrow_exception(error);
    }
    BenchRun total = runs.front();
    total.samples_per_second = 0.0;
    for (const BenchRun& run : runs) total.samples_per_second += run.samples_per_second;
    // The time the copies together take for one global batch.
    total.ms_per_step = total.samples_per_second > 0 ? global_batch * 1000.0 / total.samples_per_second : 0.0;
    return total;
}

// Rounds of the probe that take about `target_seconds` on this thread.
std::int64_t calibrate_fma_probe(const fast::KernelTable& kernels, double target_seconds, float& sink) {
    std::int64_t iterations = 1024;
    for (;;) {
        const auto start = std::chrono::steady_clock::now();
        sink += kernels.fma_probe(iterations);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (seconds >= target_seconds / 4 || iterations >= (std::int64_t{1} << 40)) {
            return std::max<std::int64_t>(
                1, static_cast<std::int64_t>(static_cast<double>(iterations) * target_seconds /
                                             std::max(seconds, 1e-9)));
        }
        iterations *= 4;
    }
}

// Runs slices of the probe for `seconds`; the best slice's FLOP/s.
double best_fma_rate(const fast::KernelTable& kernels, std::int64_t iterations, double seconds_in_all,
                     float& sink) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(seconds_in_all));
    double best = 0.0;
    do {
        const auto start = std::chrono::steady_clock::now();
        sink += kernels.fma_probe(iterations);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (seconds > 0) {
            best = std::max(best, static_cast<double>(iterations) *
                                      static_cast<double>(kernels.fma_probe_flops) / seconds);
        }
    } while (std::chrono::steady_clock::now() < deadline);
    return best;
}

std::string backend_description() {
    const std::unique_ptr<Backend> backend = make_cpu_backend();
    std::string text(backend->name());
    if (const auto* fast_backend = dynamic_cast<const CpuFastBackend*>(backend.get())) {
        text += " (" + std::string(fast_backend->isa()) +
                (fast_backend->fuses_conv_relu_pool() ? ", Conv1D+ReLU+MaxPooling1D fused" : ", unfused") + ")";
    }
    return text;
}

}  // namespace

ModelFlops model_flops(const Model& model) {
    ModelFlops flops;
    for (std::size_t i = 0; i < model.layers().size(); ++i) {
        const LayerFlops layer = layer_flops(model.layers()[i], i == 0);
        flops.forward_per_sample += layer.forward;
        flops.training_per_sample += layer.forward + layer.backward;
    }
    return flops;
}

double epoch_flops(const Model& model, std::int64_t trained_samples, std::int64_t validated_samples) {
    const ModelFlops flops = model_flops(model);
    return flops.training_per_sample * static_cast<double>(trained_samples) +
           flops.forward_per_sample * static_cast<double>(validated_samples);
}

FmaPeak measure_fma_peak(int threads, double seconds) {
    const fast::KernelTable& kernels = fast::best_kernels();
    FmaPeak peak;
    peak.isa = std::string(kernels.isa);
    peak.threads = std::max(1, threads);
    float sink = 0.0f;
    const std::int64_t iterations = calibrate_fma_probe(kernels, 0.002, sink);
    peak.one_core_gflops = best_fma_rate(kernels, iterations, seconds / 3, sink) / 1e9;

    // Every thread starts together and runs until the same deadline.
    std::vector<double> rates(static_cast<std::size_t>(peak.threads), 0.0);
    std::vector<float> sinks(static_cast<std::size_t>(peak.threads), 0.0f);
    std::atomic<int> ready{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < peak.threads; ++t) {
        workers.emplace_back([&, t] {
            ++ready;
            while (ready.load() < peak.threads) std::this_thread::yield();
            rates[static_cast<std::size_t>(t)] =
                best_fma_rate(kernels, iterations, seconds * 2 / 3, sinks[static_cast<std::size_t>(t)]);
        });
    }
    for (auto& worker : workers) worker.join();
    for (double rate : rates) peak.all_core_gflops += rate / 1e9;
    for (float s : sinks) sink += s;
    // The chains converge to 0.1 each: anything else means the probe did not run as written.
    if (!(sink > 0.0f)) throw Error("bench: the FMA probe returned " + std::to_string(sink));
    return peak;
}

namespace {

// Scaling: the same steps with 1..N replicas of one thread each, without validation, into
// result.scaling (and the machine's parallel capacity beside it).
void measure_scaling(BenchResult& result, const BenchConfig& config, const Model& model, const TrainData& data,
                     const std::function<void(const std::string&)>& say) {
    const int rows = config.scaling_replicas < 0 ? result.cores : config.scaling_replicas;
    TrainData train_only = data;
    train_only.validation_ids.reset();
    train_only.validation_labels.reset();
    // The machine's speed drifts over seconds when it is shared (other VMs on the host), and rows
    // measured one after the other would compare different machines. So the rows run in rounds,
    // each round measuring every row once, back to back; a row's throughput is its median over
    // the rounds and its efficiency the median of the per-round ratios to that round's 1 x 1 row.
    struct RowSpec {
        int replicas = 1, threads = 1;
        bool independent = false;
    };
    std::vector<RowSpec> specs;
    for (int replicas = 1; replicas <= rows; ++replicas) {
        specs.push_back({replicas, replicas, false});
        if (replicas == 1 && result.cores > 1) specs.push_back({1, result.cores, false});  // one replica on every thread
    }
    // What the machine gives the same work without any synchronisation: as many independent
    // one-thread trainings as the largest row has replicas, each on one replica's shard.
    if (rows > 1) specs.push_back({rows, rows, true});
    const int rounds = rows > 0 ? static_cast<int>(std::clamp<std::int64_t>(config.scaling_steps, 1, kScalingRounds)) : 0;
    const std::int64_t steps_per_round = std::max<std::int64_t>(1, config.scaling_steps / std::max(rounds, 1));
    std::vector<std::vector<double>> rates(specs.size()), ratios(specs.size()), step_ms(specs.size());
    std::vector<double> capacities;
    for (int round = 1; round <= rounds; ++round) {
        say("bench: scaling, round " + std::to_string(round) + " of " + std::to_string(rounds) + "...");
        if (rows > 1) capacities.push_back(measure_parallel_capacity(rows, 0.1));
        double single_rate = 0.0;
        for (std::size_t i = 0; i < specs.size(); ++i) {
            RunSettings row_run;
            row_run.devices = device_spec(specs[i].replicas);
            row_run.threads = specs[i].threads;
            row_run.steps = steps_per_round;
            row_run.batch_size = config.batch_size;
            row_run.keras_semantics = config.keras_semantics;
            row_run.warmup_steps = kScalingWarmupSteps;
            const BenchRun measured = specs[i].independent
                                          ? run_independent_copies(model, train_only, row_run, specs[i].replicas)
                                          : run_once(model, train_only, row_run);
            if (i == 0) single_rate = measured.samples_per_second;
            rates[i].push_back(measured.samples_per_second);
            step_ms[i].push_back(measured.ms_per_step);
            // Efficiency against ideal scaling of this round's 1 x 1 row; the 1 x N row is the
            // speed-up of more threads for one replica.
            const int ideal = specs[i].replicas > 1 ? specs[i].replicas : 1;
            ratios[i].push_back(single_rate > 0 ? measured.samples_per_second / (ideal * single_rate) : 0.0);
        }
    }
    if (!capacities.empty()) {
        result.parallel_capacity = median(capacities);
        result.parallel_capacity_threads = rows;
    }
    result.scaling_rounds = rounds;
    for (std::size_t i = 0; i < specs.size() && rounds > 0; ++i) {
        result.scaling.push_back({specs[i].replicas, specs[i].threads, median(rates[i]), median(step_ms[i]),
                                  median(ratios[i]), specs[i].independent});
    }
}

// The epoch's work, the rate it reached and the floors it is measured against (bench.h). An
// epoch trains steps_per_epoch batches (the last one may be short) and validates every
// validation sample.
void compare_with_floor(BenchResult& result, const Model& model) {
    const BenchConfig& config = result.config;
    const std::int64_t trained = std::min<std::int64_t>(
        result.train_samples, result.run.steps_per_epoch * std::int64_t{config.batch_size});
    const std::int64_t validated = result.run.validation_steps > 0 ? result.validation_samples : 0;
    result.epoch_flops = epoch_flops(model, trained, validated);
    if (result.run.epoch_seconds > 0) result.achieved_gflops = result.epoch_flops / result.run.epoch_seconds / 1e9;
    if (result.fma_peak.all_core_gflops > 0) {
        result.floor_seconds = result.epoch_flops / (result.fma_peak.all_core_gflops * 1e9);
        result.floor_ratio = result.floor_seconds > 0 ? result.run.epoch_seconds / result.floor_seconds : 0.0;
    }
    if (result.fma_peak.one_core_gflops > 0) {
        result.cpu_floor_seconds = result.epoch_flops / (result.fma_peak.one_core_gflops * 1e9);
        result.cpu_floor_ratio =
            result.cpu_floor_seconds > 0 ? result.run.cpu_seconds_per_epoch / result.cpu_floor_seconds : 0.0;
    }
}

}  // namespace

BenchResult run_bench(const BenchConfig& config,
                      const std::function<void(const std::string&)>& progress) {
    auto say = [&](const std::string& line) {
        if (progress) progress(line);
    };
    if (config.epochs < 1) throw Error("bench: --epochs must be at least 1");
    BenchResult result;
    result.config = config;
    result.cores = core_count();
    result.cpu = detect_cpu().name;
    result.cpu_caches = describe_cpu_caches();
    result.backend = backend_description();
    {
        const std::unique_ptr<Backend> backend = make_cpu_backend();
        if (const auto* fast_backend = dynamic_cast<const CpuFastBackend*>(backend.get()))
            result.kernel_isa = std::string(fast_backend->isa());
    }
    const Model model = Model::reference();
    {
        DeviceRegistry registry;  // the CUDA probe (and plugin, where a GPU is) belong to the start
        load_gpu_plugin(registry);
    }
    result.startup_rss_mib = current_rss_mib();
    const TrainData data = load_bench_data(config.data, model, result.data, result.train_samples,
                                           result.validation_samples);
    result.data_rss_mib = current_rss_mib() - result.startup_rss_mib;
    // Several workers on this host share its cores (the CLI sets each one's pool to its share).
    const int threads = config.threads > 0 ? config.threads : config.workers != nullptr ? ThreadPool::instance().limit() : result.cores;
    if (config.workers != nullptr) result.workers = config.workers->size();
    const int saved_limit = ThreadPool::instance().limit();

    // The what-if model's calibration: before training, while every worker is at the same point.
    result.add_gbytes_per_second = measure_add_gbytes_per_second();
    if (config.workers != nullptr && config.workers->size() > 1) {
        say("bench: timing the link between the workers...");
        result.link_samples = probe_worker_link(*config.workers);
        try {  // a probe spoilt by a neighbour's load is reported; the benchmark itself goes on
            result.link = fit_link(result.link_samples, "between these " + std::to_string(config.workers->size()) +
                                                            " workers (measured)");
        } catch (const Error& error) {
            say(std::string("bench: the link probe gave no usable line: ") + error.what());
        }
    }

    RunSettings main_run;
    main_run.devices = config.devices;
    main_run.threads = threads;
    main_run.epochs = config.epochs;
    main_run.steps = config.steps;
    main_run.batch_size = config.batch_size;
    main_run.keras_semantics = config.keras_semantics;
    main_run.workers = config.workers;
    say("bench: " + config.devices + " on " + std::to_string(threads) + " thread(s), " +
        std::to_string(config.epochs) + " epoch(s)...");
    const double peak_before_run_mib = peak_rss_mib();  // run_once resets the high-water mark
    result.run = run_once(model, data, main_run);
    result.process_peak_rss_mib = std::max(peak_before_run_mib, result.run.peak_rss_mib);

    say("bench: the FMA units' peak...");
    result.fma_peak = measure_fma_peak(threads);
    compare_with_floor(result, model);
    if (config.workers == nullptr && config.step_parts_steps > 0) {
        say("bench: where a step goes, layer by layer...");
        OptimizerConfig optimizer = OptimizerConfig::defaults(OptimizerKind::Nadam);
        optimizer.follow_keras(config.keras_semantics);
        const std::int32_t shard = std::max(1, config.batch_size / std::max(1, result.run.replicas));
        result.step_parts = measure_step_parts(model, data, shard, optimizer, config.step_parts_steps);
    }
    if (config.workers == nullptr) measure_scaling(result, config, model, data, say);
    ThreadPool::instance().set_limit(saved_limit);
    return result;
}

namespace {


// Where one replica's step goes (step_parts.h), a row per part.
json::Value step_parts_json(const StepParts& step_parts) {
    using json::Value;
    Value parts = Value::object();
    parts["batch"] = static_cast<double>(step_parts.batch);
    parts["steps"] = static_cast<double>(step_parts.steps);
    Value rows = Value::array();
    for (const StepPart& part : step_parts.parts) {
        Value row = Value::object();
        row["name"] = part.name;
        row["forward_ms"] = part.forward_ms;
        row["backward_ms"] = part.backward_ms;
        row["gflop"] = part.gflop;
        rows.push_back(std::move(row));
    }
    parts["parts"] = std::move(rows);
    return parts;
}

// The link probe's timed all-gathers and the α-β line fitted to them (mirrorlab-cli whatif reads it).
json::Value link_probe_json(const BenchResult& result) {
    json::Value probe = json::Value::object();
    json::Value samples = json::Value::array();
    for (const LinkSample& sample : result.link_samples) {
        json::Value entry = json::Value::object();
        entry["bytes_per_worker"] = sample.bytes_per_worker;
        entry["participants"] = sample.participants;
        entry["seconds"] = sample.seconds;
        samples.push_back(std::move(entry));
    }
    probe["samples"] = std::move(samples);
    probe["latency_us"] = result.link.latency_us;
    probe["gbytes_per_second"] = result.link.gbytes_per_second;
    return probe;
}

}  // namespace

std::string bench_to_json(const BenchResult& result) {
    using json::Value;
    Value root = Value::object();
    root["cpu"] = result.cpu;
    root["cpu_caches"] = result.cpu_caches;
    root["cores"] = result.cores;
    root["workers"] = result.workers;
    root["parallel_capacity"] = result.parallel_capacity;
    root["parallel_capacity_threads"] = result.parallel_capacity_threads;
    root["backend"] = result.backend;
    root["kernel_isa"] = result.kernel_isa;
    Value fma = Value::object();
    fma["isa"] = result.fma_peak.isa;
    fma["threads"] = result.fma_peak.threads;
    fma["one_core_gflops"] = result.fma_peak.one_core_gflops;
    fma["all_core_gflops"] = result.fma_peak.all_core_gflops;
    root["fma_peak"] = std::move(fma);
    root["epoch_flops"] = result.epoch_flops;
    root["achieved_gflops"] = result.achieved_gflops;
    root["floor_seconds"] = result.floor_seconds;
    root["floor_ratio"] = result.floor_ratio;
    root["cpu_floor_seconds"] = result.cpu_floor_seconds;
    root["cpu_floor_ratio"] = result.cpu_floor_ratio;
    root["data"] = result.data;
    root["train_samples"] = result.train_samples;
    root["validation_samples"] = result.validation_samples;
    root["startup_rss_mib"] = result.startup_rss_mib;
    root["data_rss_mib"] = result.data_rss_mib;
    root["process_peak_rss_mib"] = result.process_peak_rss_mib;
    root["batch_size"] = result.config.batch_size;
    root["keras_semantics"] = std::string(embedding_update_name(result.config.keras_semantics));
    const BenchRun& r = result.run;
    Value run = Value::object();
    run["devices"] = r.devices;
    run["replicas"] = r.replicas;
    run["threads"] = r.threads;
    run["steps_per_epoch"] = r.steps_per_epoch;
    run["validation_steps"] = r.validation_steps;
    run["ms_per_step"] = r.ms_per_step;
    run["samples_per_second"] = r.samples_per_second;
    run["epoch_seconds"] = r.epoch_seconds;
    run["train_seconds"] = r.train_seconds;
    run["validation_seconds"] = r.validation_seconds;
    run["cpu_seconds_per_epoch"] = r.cpu_seconds_per_epoch;
    Value each = Value::array();
    for (double seconds : r.epoch_seconds_each) each.push_back(seconds);
    run["epoch_seconds_each"] = std::move(each);
    Value phases = Value::object();
    phases["data_wait_ms"] = r.phases.data_wait_ms;
    phases["forward_ms"] = r.phases.forward_ms;
    phases["backward_ms"] = r.phases.backward_ms;
    phases["allreduce_ms"] = r.phases.allreduce_ms;
    phases["update_ms"] = r.phases.update_ms;
    phases["other_ms"] = r.phases.other_ms;
    run["phases"] = std::move(phases);
    run["epoch_end_snapshot_ms"] = r.epoch_end_snapshot_ms;
    run["peak_rss_mib"] = r.peak_rss_mib;
    run["allreduce_buffer_bytes"] = r.allreduce_buffer_bytes;
    run["final_loss"] = r.final_loss;
    root["run"] = std::move(run);
    if (!result.step_parts.parts.empty()) root["step_parts"] = step_parts_json(result.step_parts);
    Value scaling = Value::array();
    for (const ScalingRow& row : result.scaling) {
        Value entry = Value::object();
        entry["replicas"] = row.replicas;
        entry["threads"] = row.threads;
        entry["samples_per_second"] = row.samples_per_second;
        entry["ms_per_step"] = row.ms_per_step;
        entry["efficiency"] = row.efficiency;
        entry["independent_copies"] = row.independent_copies;
        scaling.push_back(std::move(entry));
    }
    root["scaling"] = std::move(scaling);
    root["scaling_rounds"] = result.scaling_rounds;
    root["add_gbytes_per_second"] = result.add_gbytes_per_second;
    if (!result.link_samples.empty()) root["link_probe"] = link_probe_json(result);
    return json::dump(root, 2, json::InvalidUtf8::Replace);  // the data's path, as found
}

}  // namespace mirrorlab
