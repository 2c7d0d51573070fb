#pragma once
// The state of a fit between two epochs: what a checkpoint keeps and a resumed run starts from.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/optim/optimizer.h"
#include "core/train/history.h"

namespace mirrorlab {

// A callback's own state: named numbers and, for restore_best_weights, weights.
struct CallbackState {
    std::map<std::string, double> numbers;
    std::vector<float> weights;
};

// The next epoch is epochs_done + 1 (TrainConfig::epochs stays the total, as Keras'
// initial_epoch). The data order of every epoch is a function of (seed, epoch) and dropout's of
// (seed, global step), so on the same devices a resumed run continues bit for bit.
struct TrainingState {
    int epochs_done = 0;
    std::int64_t global_step = 0;
    // A checkpoint taken inside an epoch (ModelCheckpoint's every_steps): the steps of epoch
    // epochs_done + 1 already trained and their running sums, so the epoch goes on from there with
    // the same batches and the same running means.
    std::int64_t steps_into_epoch = 0;
    LossCounts running;
    History history;
    std::vector<float> weights;
    OptimizerSchedule::State optimizer_state;
    std::vector<float> optimizer_slots;
    std::map<std::string, CallbackState> callbacks;  // by Callback::name()
    int replicas = 0;                                // the replica count it was trained on
};

}  // namespace mirrorlab
