#include "core/train/scaling.h"

#include <algorithm>
#include <cstdio>
#include <variant>

#include "core/distribute/mirrored.h"
#include "core/util/error.h"
#include "core/util/median.h"

namespace mirrorlab {

namespace {

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

std::string number(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

// The experiment's description, before any run: what it measures and with which settings.
ScalingExperiment describe_experiment(const ScalingSetup& setup, int id) {
    ScalingExperiment experiment;
    experiment.id = id;
    experiment.devices = setup.devices.to_spec();
    experiment.label = setup.label.empty() ? experiment.devices + ", batch " + std::to_string(setup.config.batch_size)
                                           : setup.label;
    experiment.model_name = setup.model.name();
    experiment.global_batch = setup.config.batch_size;
    experiment.seed = setup.config.seed;
    experiment.steps = setup.steps;
    experiment.learning_rate = setup.config.optimizer.learning_rate;
    return experiment;
}

// One epoch of warm-up plus timed steps, nothing that would stop it early or slow the hot path.
TrainConfig timed_config(const ScalingSetup& setup) {
    TrainConfig config = setup.config;
    config.epochs = 1;
    config.max_steps_per_epoch = std::max<std::int64_t>(1, setup.warmup_steps + setup.steps);
    config.early_stopping.enabled = false;
    config.overfitting_monitor = false;
    config.emit_step_events = true;
    config.detailed_step_stats = false;  // measure the hot path a training run pays
    return config;
}

}  // namespace

const char* const kScalingCsvHeader =
    "experiment,label,model,devices,replicas,shards,all_reduce,global_batch,seed,timed_steps,ms_per_step,"
    "samples_per_second,compute_ms,communication_ms,other_ms,speedup,efficiency,final_loss";

DeviceConfig scaled_device_config(const DeviceConfig& current, int replicas) {
    if (current.devices.empty()) throw DeviceConfigError("scaling: the device configuration is empty");
    if (replicas < 1) throw DeviceConfigError("scaling: the replica count must be at least 1");
    DeviceConfig scaled;
    int left = replicas;
    for (std::size_t i = 0; i < current.devices.size() && left > 0; ++i) {
        const DeviceChoice& choice = current.devices[i];
        const bool last = i + 1 == current.devices.size();
        const int take = last ? left : std::min(choice.logical_device_count(), left);
        DeviceChoice row = choice;
        if (choice.mode == MemoryMode::Virtual) {
            const std::int64_t limit = choice.memory_limits_mb.empty() ? 0 : choice.memory_limits_mb.back();
            row.memory_limits_mb.resize(static_cast<std::size_t>(take), limit);
        } else if (choice.mode == MemoryMode::Growth && take > 1) {
            row.mode = MemoryMode::Whole;  // one growing device cannot hold several replicas
            row.replicas = take;
        } else if (choice.mode != MemoryMode::Growth) {
            row.mode = MemoryMode::Whole;
            row.replicas = take;
        }
        scaled.devices.push_back(row);
        left -= take;
    }
    return scaled;
}

ScalingRunner::ScalingRunner(std::shared_ptr<DeviceRegistry> registry)
    : registry_(registry ? std::move(registry) : std::make_shared<DeviceRegistry>()) {}

void ScalingRunner::cancel() {
    cancelled_ = true;
    std::lock_guard lock(mutex_);
    if (current_ != nullptr) current_->request_stop();
}

ScalingExperiment ScalingRunner::run(const ScalingSetup& setup, int id, const Progress& progress) {
    ScalingExperiment experiment = describe_experiment(setup, id);

    // Training data only: validation would be timed as part of nothing and only cost time.
    TrainData data = setup.data;
    data.validation_ids.reset();
    data.validation_labels.reset();
    data.warnings.clear();

    const int rows = std::max(1, setup.max_replicas);
    for (int replicas = 1; replicas <= rows && !cancelled_; ++replicas) {
        DeviceConfig devices;
        try {
            devices = scaled_device_config(setup.devices, replicas);
        } catch (const std::exception& error) {
            experiment.error = error.what();
            return experiment;
        }
        const TrainConfig config = timed_config(setup);

        ScalingPoint point;
        point.replicas = replicas;
        point.devices = devices.to_spec();
        point.shards = shard_sizes(config.batch_size, replicas);
        std::vector<double> step_ms, compute_ms, communication_ms;
        std::int64_t seen = 0;
        Trainer trainer(setup.model, devices, config, data, registry_);
        trainer.set_event_sink([&](const Event& event) {
            if (const auto* begin = std::get_if<TrainBeginEvent>(&event)) {
                point.all_reduce = begin->all_reduce;
            } else if (const auto* step = std::get_if<StepEndEvent>(&event)) {
                point.final_loss = step->running.loss;
                experiment.allreduce_buffer_bytes = step->allreduce_buffer_bytes;
                // Data sets too small for warm-up plus timed steps still time their second half.
                const std::int64_t warmup = std::min(setup.warmup_steps, step->steps / 2);
                if (++seen <= warmup) return;
                double compute = 0.0, communication = 0.0;
                for (const PhaseTimings& replica : step->replicas) {
                    compute = std::max(compute, replica.forward_ms + replica.backward_ms);
                    communication = std::max(communication, replica.allreduce_ms);
                }
                step_ms.push_back(step->step_time_ms);
                compute_ms.push_back(compute);
                communication_ms.push_back(communication);
            }
        });
        {
            std::lock_guard lock(mutex_);
            current_ = &trainer;
        }
        const FitResult result = trainer.run();
        {
            std::lock_guard lock(mutex_);
            current_ = nullptr;
        }
        if (cancelled_) break;
        if (result.failed) {
            experiment.error = "scaling: " + std::to_string(replicas) + " replica(s) on " + point.devices +
                               " failed: " + result.failed->reason;
            return experiment;
        }
        point.timed_steps = static_cast<std::int64_t>(step_ms.size());
        point.ms_per_step = median(step_ms);
        point.samples_per_second = point.ms_per_step > 0 ? config.batch_size * 1000.0 / point.ms_per_step : 0.0;
        point.compute_ms = median(compute_ms);
        point.communication_ms = median(communication_ms);
        point.other_ms = std::max(0.0, point.ms_per_step - point.compute_ms - point.communication_ms);
        const double single = experiment.points.empty() ? point.samples_per_second : experiment.points.front().samples_per_second;
        point.speedup = single > 0 ? point.samples_per_second / single : 0.0;
        point.efficiency = point.speedup / replicas;
        experiment.points.push_back(point);
        if (progress) progress(point, replicas, rows);
    }
    experiment.completed = !cancelled_ && static_cast<int>(experiment.points.size()) == rows;
    return experiment;
}

std::string scaling_csv(const std::vector<ScalingExperiment>& experiments) {
    std::string csv = std::string(kScalingCsvHeader) + "\n";
    for (const ScalingExperiment& e : experiments) {
        for (const ScalingPoint& p : e.points) {
            std::string shards;
            for (std::size_t i = 0; i < p.shards.size(); ++i) shards += (i > 0 ? "+" : "") + std::to_string(p.shards[i]);
            csv += std::to_string(e.id) + "," + csv_field(e.label) + "," + csv_field(e.model_name) + "," +
                   csv_field(p.devices) + "," + std::to_string(p.replicas) + "," + shards + "," + p.all_reduce + "," +
                   std::to_string(e.global_batch) + "," + std::to_string(e.seed) + "," + std::to_string(p.timed_steps) +
                   "," + number(p.ms_per_step, 3) + "," + number(p.samples_per_second, 1) + "," +
                   number(p.compute_ms, 3) + "," + number(p.communication_ms, 3) + "," + number(p.other_ms, 3) + "," +
                   number(p.speedup, 3) + "," + number(p.efficiency, 3) + "," + number(p.final_loss, 4) + "\n";
        }
    }
    return csv;
}

}  // namespace mirrorlab
