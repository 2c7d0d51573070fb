#pragma once
// What a fit keeps of each finished epoch: Keras' History.
#include <string>
#include <vector>

#include "core/train/events.h"

namespace mirrorlab {

struct EpochRecord {
    int epoch = 0;
    Metrics train;
    Metrics validation;
    bool has_validation = false;
    double epoch_seconds = 0.0;
};

struct History {
    std::vector<EpochRecord> epochs;
    // Keras' history.history keys: "loss", "accuracy", "top5", "val_loss", ...
    std::vector<double> series(const std::string& key) const;
};

}  // namespace mirrorlab
