#include "core/train/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <thread>

#include "core/backend/cpu_fast.h"
#include "core/data/source.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/train/trainer.h"
#include "core/util/error.h"
#include "core/util/json.h"
#include "core/util/thread_pool.h"

namespace mirrorlab {

namespace {

// Steps at the start of a run that warm caches, page in buffers and start threads.
constexpr std::int64_t kWarmupSteps = 5;
constexpr std::int64_t kScalingWarmupSteps = 10;

double median(std::vector<double> values) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// Peak resident set: VmHWM of /proc/self/status, which writing "5" to /proc/self/clear_refs
// resets (Linux >= 4.0), so that each run reports its own peak. Elsewhere: the process's peak.
void reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (clear) clear << "5";
}

double peak_rss_mib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

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
    int threads = 1;
    int epochs = 1;
    std::int64_t steps = 0;
    std::int32_t batch_size = 32;
    std::int64_t warmup_steps = kWarmupSteps;
};

BenchRun run_once(const Model& model, const TrainData& data, const RunSettings& settings) {
    ThreadPool::instance().set_limit(settings.threads);
    auto registry = std::make_shared<DeviceRegistry>();
    const DeviceConfig devices = DeviceConfig::parse(settings.devices);
    devices.validate(*registry);
    TrainConfig config;
    config.epochs = settings.epochs;
    config.batch_size = settings.batch_size;
    config.max_steps_per_epoch = settings.steps;
    config.overfitting_monitor = false;

    BenchRun run;
    run.devices = settings.devices;
    run.threads = settings.threads;
    std::vector<double> step_ms, data_ms, forward_ms, backward_ms, allreduce_ms, update_ms,
        other_ms;
    std::vector<double> train_seconds, validation_seconds;
    std::int64_t seen_steps = 0;
    std::int64_t warmup_steps = settings.warmup_steps;
    reset_peak_rss();  // where it cannot, the run reports the process's peak so far
    Trainer trainer(model, devices, config, data, registry);
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

std::string backend_description() {
    const std::unique_ptr<Backend> backend = make_cpu_backend();
    std::string text(backend->name());
    if (const auto* fast_backend = dynamic_cast<const CpuFastBackend*>(backend.get())) {
        text += " (" + std::string(fast_backend->isa()) + ")";
    }
    return text;
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
    result.backend = backend_description();
    const Model model = Model::reference();
    const TrainData data = load_bench_data(config.data, model, result.data, result.train_samples,
                                           result.validation_samples);
    const int threads = config.threads > 0 ? config.threads : result.cores;
    const int saved_limit = ThreadPool::instance().limit();

    RunSettings main_run;
    main_run.devices = config.devices;
    main_run.threads = threads;
    main_run.epochs = config.epochs;
    main_run.steps = config.steps;
    main_run.batch_size = config.batch_size;
    say("bench: " + config.devices + " on " + std::to_string(threads) + " thread(s), " +
        std::to_string(config.epochs) + " epoch(s)...");
    result.run = run_once(model, data, main_run);

    // Scaling: the same steps with 1..N replicas of one thread each, without validation.
    const int rows = config.scaling_replicas < 0 ? result.cores : config.scaling_replicas;
    TrainData train_only = data;
    train_only.validation_ids.reset();
    train_only.validation_labels.reset();
    if (rows > 1) {
        say("bench: measuring the machine's parallel capacity...");
        result.parallel_capacity = measure_parallel_capacity(rows, 0.3);
        result.parallel_capacity_threads = rows;
    }
    double single_rate = 0.0;
    for (int replicas = 1; replicas <= rows; ++replicas) {
        RunSettings row_run;
        row_run.devices = device_spec(replicas);
        row_run.threads = replicas;
        row_run.steps = config.scaling_steps;
        row_run.batch_size = config.batch_size;
        row_run.warmup_steps = kScalingWarmupSteps;
        say("bench: scaling, " + std::to_string(replicas) + " replica(s) x 1 thread...");
        const BenchRun measured = run_once(model, train_only, row_run);
        if (replicas == 1) single_rate = measured.samples_per_second;
        ScalingRow row{
            replicas, replicas, measured.samples_per_second, measured.ms_per_step,
            single_rate > 0 ? measured.samples_per_second / (replicas * single_rate) : 0.0};
        result.scaling.push_back(row);
        if (replicas == 1 && result.cores > 1) {  // one replica on every thread, for comparison
            row_run.threads = result.cores;
            say("bench: scaling, 1 replica x " + std::to_string(result.cores) + " threads...");
            const BenchRun wide = run_once(model, train_only, row_run);
            result.scaling.push_back(
                {1, result.cores, wide.samples_per_second, wide.ms_per_step,
                 single_rate > 0 ? wide.samples_per_second / single_rate : 0.0});
        }
    }
    ThreadPool::instance().set_limit(saved_limit);
    return result;
}

std::string bench_to_json(const BenchResult& result) {
    using json::Value;
    Value root = Value::object();
    root["cpu"] = result.cpu;
    root["cores"] = result.cores;
    root["parallel_capacity"] = result.parallel_capacity;
    root["parallel_capacity_threads"] = result.parallel_capacity_threads;
    root["backend"] = result.backend;
    root["data"] = result.data;
    root["train_samples"] = result.train_samples;
    root["validation_samples"] = result.validation_samples;
    root["batch_size"] = result.config.batch_size;
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
    run["peak_rss_mib"] = r.peak_rss_mib;
    run["final_loss"] = r.final_loss;
    root["run"] = std::move(run);
    Value scaling = Value::array();
    for (const ScalingRow& row : result.scaling) {
        Value entry = Value::object();
        entry["replicas"] = row.replicas;
        entry["threads"] = row.threads;
        entry["samples_per_second"] = row.samples_per_second;
        entry["ms_per_step"] = row.ms_per_step;
        entry["efficiency"] = row.efficiency;
        scaling.push_back(std::move(entry));
    }
    root["scaling"] = std::move(scaling);
    return json::dump(root, 2);
}

}  // namespace mirrorlab
