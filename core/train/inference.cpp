#include "core/train/inference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/distribute/mirrored.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/util/error.h"

namespace mirrorlab {

Predictions run_inference(const Model& model, const std::vector<float>& weights, const PaddedSequences& ids,
                          const std::vector<std::int32_t>* labels, DeviceRegistry& registry, const DeviceConfig& devices,
                          std::int32_t batch_size) {
    if (static_cast<std::int64_t>(weights.size()) != model.total_params()) {
        throw ModelError("the weights hold " + std::to_string(weights.size()) + " numbers but the model has " +
                         std::to_string(model.total_params()) + " parameters");
    }
    if (ids.length != model.input_length()) {
        throw DataError("the sequences are padded to " + std::to_string(ids.length) + " tokens but the model expects " +
                        std::to_string(model.input_length()));
    }
    if (batch_size <= 0) throw ModelError("the batch size must be at least 1");
    // No buffer larger than the data: a batch beyond it takes all samples in one step (as Keras).
    batch_size = static_cast<std::int32_t>(std::min<std::int64_t>(batch_size, std::max<std::int64_t>(ids.count, 1)));
    const auto start = std::chrono::steady_clock::now();
    MirroredStrategy strategy(plan_strategy(devices, registry, AllReduceAlgorithm::Auto), registry, [](LogLevel, const std::string&) {});
    // Every replica is built (the configuration allocates them), but one runs: inference needs no
    // mirroring, and one replica keeps the probabilities in sample order.
    const std::int32_t global_batch = batch_size * strategy.replica_count();
    const OptimizerConfig no_slots = OptimizerConfig::defaults(OptimizerKind::SGD);
    strategy.check_memory(model, global_batch, no_slots, 1);
    strategy.build(model, global_batch, no_slots, weights);
    ModelReplica& replica = strategy.replica(0);

    Predictions predictions;
    predictions.num_classes = model.num_classes();
    predictions.samples = ids.count;
    predictions.probabilities.resize(static_cast<std::size_t>(ids.count) * static_cast<std::size_t>(model.num_classes()));
    const std::vector<std::int32_t> no_labels(static_cast<std::size_t>(batch_size), 0);
    LossCounts total;
    std::vector<float> batch_probabilities;
    for (std::int64_t first = 0; first < ids.count; first += batch_size) {
        const auto batch = static_cast<std::int32_t>(std::min<std::int64_t>(batch_size, ids.count - first));
        const std::int32_t* batch_ids = ids.ids.data() + first * ids.length;
        const std::int32_t* batch_labels = labels ? labels->data() + first : no_labels.data();
        const LossCounts counts = replica.evaluate(batch_ids, batch_labels, batch, &batch_probabilities);
        if (labels) total += counts;
        std::copy(batch_probabilities.begin(), batch_probabilities.end(),
                  predictions.probabilities.begin() + first * model.num_classes());
        ++predictions.steps;
    }
    if (labels && total.samples > 0) {
        const double n = static_cast<double>(total.samples);
        predictions.metrics = Metrics{total.loss_sum / n, static_cast<double>(total.correct) / n,
                                      static_cast<double>(total.top_k_correct) / n};
    }
    predictions.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return predictions;
}

std::vector<std::pair<std::int32_t, float>> top_classes(const Predictions& predictions, std::int64_t sample, int k) {
    const float* row = predictions.probabilities.data() + sample * predictions.num_classes;
    std::vector<std::pair<std::int32_t, float>> classes;
    for (std::int32_t c = 0; c < predictions.num_classes; ++c) classes.emplace_back(c, row[c]);
    const auto count = std::min<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), classes.size());
    std::partial_sort(classes.begin(), classes.begin() + static_cast<std::ptrdiff_t>(count), classes.end(),
                      [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
    classes.resize(count);
    return classes;
}

ClassReport class_report(const Predictions& predictions, const std::vector<std::int32_t>& labels) {
    ClassReport report;
    const std::int32_t classes = predictions.num_classes;
    report.num_classes = classes;
    report.confusion.assign(static_cast<std::size_t>(classes) * static_cast<std::size_t>(classes), 0);
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < predictions.samples && i < static_cast<std::int64_t>(labels.size()); ++i) {
        const float* row = predictions.probabilities.data() + i * classes;
        const auto predicted = static_cast<std::int32_t>(std::max_element(row, row + classes) - row);  // first max wins
        const std::int32_t truth = labels[static_cast<std::size_t>(i)];
        if (truth < 0 || truth >= classes) continue;
        ++report.confusion[static_cast<std::size_t>(truth) * static_cast<std::size_t>(classes) + static_cast<std::size_t>(predicted)];
        if (truth == predicted) ++correct;
    }
    std::int64_t total = 0;
    double f1_sum = 0.0;
    int f1_classes = 0;
    for (std::int32_t c = 0; c < classes; ++c) {
        ClassRow row;
        row.label = c;
        for (std::int32_t other = 0; other < classes; ++other) {
            row.support += report.at(c, other);
            row.predicted += report.at(other, c);
        }
        const double hits = static_cast<double>(report.at(c, c));
        row.precision = row.predicted > 0 ? hits / static_cast<double>(row.predicted) : std::nan("");
        row.recall = row.support > 0 ? hits / static_cast<double>(row.support) : std::nan("");
        const double p = std::isnan(row.precision) ? 0.0 : row.precision;
        const double r = std::isnan(row.recall) ? 0.0 : row.recall;
        row.f1 = p + r > 0 ? 2 * p * r / (p + r) : 0.0;
        if (row.support > 0) {
            f1_sum += row.f1;
            ++f1_classes;
        }
        total += row.support;
        report.rows.push_back(row);
    }
    report.accuracy = total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : std::nan("");
    report.macro_f1 = f1_classes > 0 ? f1_sum / f1_classes : std::nan("");
    return report;
}

std::string format_class_report(const ClassReport& report, const std::vector<std::string>& class_names, int max_rows) {
    auto name_of = [&](std::int32_t c) {
        return c < static_cast<std::int32_t>(class_names.size()) && !class_names[static_cast<std::size_t>(c)].empty()
                   ? class_names[static_cast<std::size_t>(c)]
                   : std::to_string(c);
    };
    auto number = [](double value) {
        char text[16];
        if (std::isnan(value)) return std::string("    -");
        std::snprintf(text, sizeof text, "%5.2f", value);
        return std::string(text);
    };
    std::vector<ClassRow> rows = report.rows;
    // The classes with the most samples first: where a person looks to see what the accuracy misses.
    std::stable_sort(rows.begin(), rows.end(), [](const ClassRow& a, const ClassRow& b) { return a.support > b.support; });
    if (max_rows > 0 && static_cast<int>(rows.size()) > max_rows) rows.resize(static_cast<std::size_t>(max_rows));
    std::string out = "class               precision  recall  f1-score  support\n";
    char line[160];
    for (const ClassRow& row : rows) {
        std::snprintf(line, sizeof line, "%-4d %-16.16s     %s   %s     %s  %7lld\n", row.label, name_of(row.label).c_str(),
                      number(row.precision).c_str(), number(row.recall).c_str(), number(row.f1).c_str(),
                      static_cast<long long>(row.support));
        out += line;
    }
    std::snprintf(line, sizeof line, "accuracy %.4f, macro f1 %.4f over %d classes with samples\n", report.accuracy, report.macro_f1,
                  static_cast<int>(std::count_if(report.rows.begin(), report.rows.end(), [](const ClassRow& r) { return r.support > 0; })));
    return out + line;
}

}  // namespace mirrorlab
