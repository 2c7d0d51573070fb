#pragma once
// Where one training step's time goes, layer by layer: the bench's breakdown under its phases
// (issue #17: find which op keeps an epoch from the FMA floor). One replica of the model on one
// CPU thread trains on its shard of the global batch (what every replica of a mirrored run
// computes), and the host clock times each layer's forward and backward op, the loss and the
// optimizer update; beside each layer, its GEMM work and the rate it reached.
#include <cstdint>
#include <string>
#include <vector>

#include "core/optim/optimizer.h"

namespace mirrorlab {

class Model;
struct LayerInfo;
struct TrainData;

// The floating-point work of one layer per sample (bench.h, model_flops: 2 P D U forward for a
// Conv1D or Dense layer, the weight and, except for the first layer, the input gradient backward;
// 0 for the others).
struct LayerFlops {
    double forward = 0.0;
    double backward = 0.0;
};
LayerFlops layer_flops(const LayerInfo& layer, bool first_layer);

// A layer (or two that run as one op: "conv1d + max_pooling1d"), or the loss, or the update.
struct StepPart {
    std::string name;
    double forward_ms = 0.0;   // medians over the timed steps; the loss and the update: here
    double backward_ms = 0.0;
    double gflop = 0.0;  // its GEMM work in one step of the shard (forward + backward), 0 where none
};

struct StepParts {
    std::int32_t batch = 0;  // the shard one replica trains on
    int steps = 0;           // timed steps (after a few that warm up)
    std::vector<StepPart> parts;
    double total_ms() const;  // the parts' sum: one step of one replica, without the all-reduce
};

// `steps` timed training steps of one replica on batches of `shard` training samples (from the
// first on, cycling), on one thread of the process's pool, with `optimizer`. Throws
// mirrorlab::Error where the model or the data do not fit a CPU device.
StepParts measure_step_parts(const Model& model, const TrainData& data, std::int32_t shard,
                             const OptimizerConfig& optimizer, int steps);

}  // namespace mirrorlab
