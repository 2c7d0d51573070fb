#pragma once
// What keeping a run costs the training: the same steps trained plain and recorded (the run store's
// recorder and a checkpoint each epoch), in interleaved rounds so that a shared machine's drift
// hits both alike. `mirrorlab-cli bench --run-store` prints it.
#include <cstdint>
#include <string>

#include "core/model/model.h"
#include "core/train/trainer.h"

namespace mirrorlab {

struct StoreCost {
    int rounds = 0;
    std::int64_t steps = 0;              // timed training steps per round and variant
    double plain_ms_per_step = 0.0;      // median over rounds: the training pass's wall time / steps
    double recorded_ms_per_step = 0.0;
    double overhead_percent = 0.0;       // median over rounds of recorded / plain - 1
    double checkpoint_ms = 0.0;          // median: writing one checkpoint (once per epoch, not per step)
    std::int64_t checkpoint_bytes = 0;
};

// `scratch_folder` receives a throw-away store (removed afterwards). Throws what training throws.
StoreCost measure_store_cost(const Model& model, const TrainData& data, const std::string& devices, std::int64_t steps, int rounds,
                             const std::string& scratch_folder);

}  // namespace mirrorlab
