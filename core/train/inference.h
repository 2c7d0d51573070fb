#pragma once
// Using a trained model: Keras' evaluate (loss and metrics over a labelled split), predict (the
// class probabilities of each sample), and what a person asks next — which classes it gets wrong:
// per-class precision, recall and support, and the confusion matrix.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/data/sequence.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/train/events.h"

namespace mirrorlab {

struct Predictions {
    Metrics metrics;  // NaN without labels
    std::int32_t num_classes = 0;
    std::int64_t samples = 0;
    std::vector<float> probabilities;  // samples x num_classes, softmax outputs
    double seconds = 0.0;
    std::int64_t steps = 0;  // batches run
};

// Runs the model with `weights` over `ids` on the first device of `devices` (inference needs no
// mirroring), `batch_size` samples at a time. `labels` may be null (predict only). Throws what
// training would (out of memory, bad device) and ModelError when the weights do not fit the model.
Predictions run_inference(const Model& model, const std::vector<float>& weights, const PaddedSequences& ids,
                          const std::vector<std::int32_t>* labels, DeviceRegistry& registry, const DeviceConfig& devices,
                          std::int32_t batch_size = 32);

// The k most probable classes of one sample, most probable first (ties: the lower class first).
std::vector<std::pair<std::int32_t, float>> top_classes(const Predictions& predictions, std::int64_t sample, int k = 5);

struct ClassRow {
    std::int32_t label = 0;
    double precision = 0.0;  // NaN when nothing was predicted as this class
    double recall = 0.0;     // NaN when the class has no samples
    double f1 = 0.0;
    std::int64_t support = 0;  // samples of this class
    std::int64_t predicted = 0;
};

struct ClassReport {
    std::int32_t num_classes = 0;
    std::vector<ClassRow> rows;          // one per class
    std::vector<std::int64_t> confusion;  // num_classes x num_classes, row = true class, column = predicted
    double accuracy = 0.0;
    double macro_f1 = 0.0;  // over classes with samples
    std::int64_t at(std::int32_t truth, std::int32_t predicted) const {
        return confusion[static_cast<std::size_t>(truth) * static_cast<std::size_t>(num_classes) + static_cast<std::size_t>(predicted)];
    }
};

// The argmax prediction (first max wins, as tf.argmax) against the labels.
ClassReport class_report(const Predictions& predictions, const std::vector<std::int32_t>& labels);

// scikit-learn's classification_report layout, with class names where given.
std::string format_class_report(const ClassReport& report, const std::vector<std::string>& class_names, int max_rows = 0);

}  // namespace mirrorlab
