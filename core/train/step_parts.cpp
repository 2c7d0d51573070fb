#include "core/train/step_parts.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "core/data/train_data.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/util/denormals.h"
#include "core/util/error.h"
#include "core/util/median.h"
#include "core/util/thread_pool.h"

namespace mirrorlab {

namespace {

constexpr int kWarmupSteps = 5;

std::string part_name(const Model& model, std::size_t layer, const ModelReplica& replica) {
    std::string name = model.layers()[layer].config.name;
    if (replica.runs_with_next(layer)) name += " + " + model.layers()[layer + 1].config.name;
    return name;
}

StepParts time_step_parts(const Model& model, const TrainData& data, std::int32_t shard,
                          const OptimizerConfig& optimizer, int steps) {
    const std::int64_t samples = data.train_ids ? data.train_ids->count : 0;
    if (shard < 1 || samples < 1) throw Error("bench: no training samples to time a step on");
    shard = static_cast<std::int32_t>(std::min<std::int64_t>(shard, samples));
    ThreadPool& pool = ThreadPool::instance();
    const int saved_limit = pool.limit();
    pool.set_limit(1);
    struct RestoreLimit {
        ThreadPool& pool;
        int limit;
        ~RestoreLimit() { pool.set_limit(limit); }
    } restore{pool, saved_limit};

    DeviceRegistry registry;
    const auto devices = create_logical_devices(DeviceConfig::parse("cpu"), registry);
    OptimizerSchedule schedule(optimizer);
    ModelReplica replica(model, *devices.front(), shard, schedule.update_layout());
    replica.set_weights(initial_weights(model, 0));

    const std::size_t layers = model.layers().size();
    std::vector<std::vector<double>> forward(layers), backward(layers);
    std::vector<double> loss, update;
    const std::int32_t length = data.train_ids->length;
    const std::int64_t batches = std::max<std::int64_t>(1, samples / shard);
    for (int step = 0; step < kWarmupSteps + steps; ++step) {
        const std::int64_t first = step % batches * shard;
        const std::int32_t* ids = data.train_ids->ids.data() + first * length;
        const StepPartTimes times = replica.time_step_parts(ids, data.train_labels->data() + first, shard,
                                                            static_cast<std::uint64_t>(step), schedule.next_step());
        if (step < kWarmupSteps) continue;
        for (std::size_t i = 0; i < layers; ++i) {
            forward[i].push_back(times.forward_ms[i]);
            backward[i].push_back(times.backward_ms[i]);
        }
        loss.push_back(times.loss_ms);
        update.push_back(times.update_ms);
    }

    StepParts result;
    result.batch = shard;
    result.steps = steps;
    for (std::size_t i = 0; i < layers; ++i) {
        StepPart part;
        part.name = part_name(model, i, replica);
        const std::size_t last = replica.runs_with_next(i) ? i + 1 : i;
        for (std::size_t j = i; j <= last; ++j) {
            const LayerFlops flops = layer_flops(model.layers()[j], j == 0);
            part.gflop += (flops.forward + flops.backward) * shard / 1e9;
        }
        part.forward_ms = median(forward[i]);
        part.backward_ms = median(backward[i]);
        result.parts.push_back(part);
        i = last;
    }
    result.parts.push_back(StepPart{"loss (softmax cross-entropy)", median(loss), 0.0, 0.0});
    result.parts.push_back(StepPart{"update (finite check, optimizer)", median(update), 0.0, 0.0});
    return result;
}

}  // namespace

LayerFlops layer_flops(const LayerInfo& layer, bool first_layer) {
    double positions = 1.0, depth = 0.0, outputs = 0.0;
    if (layer.config.kind == LayerKind::Conv1D) {
        positions = static_cast<double>(layer.output_shape[0]);
        depth = static_cast<double>(layer.config.kernel_size) *
                static_cast<double>(layer.input_shape[layer.input_shape.rank() - 1]);
        outputs = static_cast<double>(layer.config.filters);
    } else if (layer.config.kind == LayerKind::Dense) {
        for (int axis = 0; axis + 1 < layer.input_shape.rank(); ++axis)
            positions *= static_cast<double>(layer.input_shape[axis]);
        depth = static_cast<double>(layer.input_shape[layer.input_shape.rank() - 1]);
        outputs = static_cast<double>(layer.config.units);
    }
    LayerFlops flops;
    flops.forward = 2.0 * positions * depth * outputs;
    // The weight gradient, and the input gradient unless the input is the token ids.
    flops.backward = flops.forward + (first_layer ? 0.0 : flops.forward);
    return flops;
}

double StepParts::total_ms() const {
    double total = 0.0;
    for (const StepPart& part : parts) total += part.forward_ms + part.backward_ms;
    return total;
}

StepParts measure_step_parts(const Model& model, const TrainData& data, std::int32_t shard,
                             const OptimizerConfig& optimizer, int steps) {
    // On a thread of its own that flushes denormals, as a replica's thread does (tiny gradients
    // would otherwise slow the float math many times), leaving the caller's floating-point mode as it was.
    StepParts result;
    std::exception_ptr error;
    std::thread worker([&] {
        try {
            enable_flush_denormals();
            result = time_step_parts(model, data, shard, optimizer, steps);
        } catch (...) {
            error = std::current_exception();
        }
    });
    worker.join();
    if (error) std::rethrow_exception(error);
    return result;
}

}  // namespace mirrorlab
