#include "core/store/store_cost.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/store/recorded_run.h"
#include "core/util/median.h"

namespace mirrorlab {

namespace {

// One epoch of `steps` steps without validation; returns the training pass's ms per step.
double timed_epoch(const Model& model, const TrainData& data, const DeviceConfig& devices, std::int64_t steps, RunStore* store) {
    TrainConfig config;
    config.epochs = 1;
    config.max_steps_per_epoch = steps;
    config.overfitting_monitor = false;
    Trainer trainer(model, devices, config, data);
    double ms_per_step = 0.0;
    auto measure = [&ms_per_step](const Event& event) {
        if (const auto* end = std::get_if<EpochEndEvent>(&event)) ms_per_step = end->ms_per_step;
    };
    std::unique_ptr<RecordedRun> recorded;
    if (store) {
        RunDescription description;
        description.name = "store cost";
        description.model_json = model.to_json_text();
        description.config = config;
        description.devices = devices;
        description.data = fingerprint_of(data);
        recorded = std::make_unique<RecordedRun>(*store, trainer, std::move(description), measure);
    } else {
        trainer.set_event_sink(measure);
    }
    const FitResult result = trainer.run();
    if (!result.ok) throw Error("measuring the run store's cost: training failed: " + result.failed->reason);
    return ms_per_step;
}

}  // namespace

StoreCost measure_store_cost(const Model& model, const TrainData& data, const std::string& devices_spec, std::int64_t steps, int rounds,
                             const std::string& scratch_folder) {
    const DeviceConfig devices = DeviceConfig::parse(devices_spec);
    TrainData train_only = data;
    train_only.validation_ids.reset();
    train_only.validation_labels.reset();
    StoreCost cost;
    cost.rounds = rounds;
    cost.steps = steps;
    std::vector<double> plain, recorded, ratios, checkpoint_ms;
    {
        RunStore store(scratch_folder);
        timed_epoch(model, train_only, devices, std::min<std::int64_t>(steps, 20), nullptr);  // warm caches and the thread pool
        for (int round = 0; round < rounds; ++round) {
            // Alternating which goes first cancels a drift within the round.
            const bool recorded_first = round % 2 == 1;
            const double a = timed_epoch(model, train_only, devices, steps, recorded_first ? &store : nullptr);
            const double b = timed_epoch(model, train_only, devices, steps, recorded_first ? nullptr : &store);
            const double plain_ms = recorded_first ? b : a, recorded_ms = recorded_first ? a : b;
            plain.push_back(plain_ms);
            recorded.push_back(recorded_ms);
            ratios.push_back(recorded_ms / plain_ms - 1.0);
        }
        // The checkpoint is written once per epoch, after the training pass: timed on its own.
        const RunInfo last = store.list().front();
        const Checkpoint checkpoint = load_checkpoint(checkpoint_path_of(last));
        for (int i = 0; i < std::max(rounds, 3); ++i) {
            const auto start = std::chrono::steady_clock::now();
            save_checkpoint(scratch_folder + "/timed.mlckpt", checkpoint);
            checkpoint_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        cost.checkpoint_bytes = static_cast<std::int64_t>(std::filesystem::file_size(scratch_folder + "/timed.mlckpt"));
    }
    std::filesystem::remove_all(scratch_folder);
    cost.plain_ms_per_step = median(plain);
    cost.recorded_ms_per_step = median(recorded);
    cost.overhead_percent = 100.0 * median(ratios);
    cost.checkpoint_ms = median(checkpoint_ms);
    return cost;
}

}  // namespace mirrorlab
