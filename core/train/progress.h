#pragma once
// The Keras progress line (verbose=2), so people coming from the tutorial read the same text:
// "281/281 - 4s 14ms/step - loss: 1.2345 - sparse_categorical_accuracy: ... - val_loss: ..."
#include <string>

#include "core/train/events.h"

namespace mirrorlab {

std::string keras_progress_line(const EpochEndEvent& event);
std::string keras_metrics_text(const Metrics& metrics, const std::string& prefix);
std::string log_line(const LogEvent& event);  // "INFO: ..." / "WARNING: ..." / "ERROR: ..."

}  // namespace mirrorlab
