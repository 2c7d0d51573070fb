#pragma once
// The Keras progress line (verbose=2), so people coming from the tutorial read the same text:
// "281/281 - 4s 14ms/step - loss: 1.2345 - sparse_categorical_accuracy: ... - val_loss: ..."
#include <array>
#include <string>
#include <utility>

#include "core/train/events.h"

namespace mirrorlab {

// The metrics under the names Keras gives them for the tutorial's compile() (loss,
// SparseCategoricalAccuracy, SparseTopKCategoricalAccuracy), in Keras' order: the progress line,
// CSV columns and TensorBoard tags all use these.
std::array<std::pair<const char*, double>, 3> keras_named_metrics(const Metrics& metrics);

std::string keras_progress_line(const EpochEndEvent& event);
std::string keras_metrics_text(const Metrics& metrics, const std::string& prefix);
std::string log_line(const LogEvent& event);
// A number as the log's sentences print it: fixed, 4 digits by default ("1.5210").
std::string fixed_text(double value, int digits = 4);  // "INFO: ..." / "WARNING: ..." / "ERROR: ..."

}  // namespace mirrorlab
