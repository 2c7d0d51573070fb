#include "core/train/progress.h"

#include <cmath>
#include <cstdio>

namespace mirrorlab {

namespace {
std::string metric(const char* name, double value) {
    char text[96];
    std::snprintf(text, sizeof text, " - %s: %.4f", name, value);
    return text;
}
}  // namespace

std::array<std::pair<const char*, double>, 3> keras_named_metrics(const Metrics& metrics) {
    return {{{"loss", metrics.loss},
             {"sparse_categorical_accuracy", metrics.accuracy},
             {"sparse_top_k_categorical_accuracy", metrics.top5}}};
}

std::string keras_metrics_text(const Metrics& metrics, const std::string& prefix) {
    std::string text;
    for (const auto& [name, value] : keras_named_metrics(metrics)) text += metric((prefix + name).c_str(), value);
    return text;
}

std::string keras_progress_line(const EpochEndEvent& event) {
    char head[96];
    std::snprintf(head, sizeof head, "%lld/%lld - %.0fs %.0fms/step", static_cast<long long>(event.steps),
                  static_cast<long long>(event.steps), std::floor(event.epoch_seconds), event.ms_per_step);
    std::string line = head + keras_metrics_text(event.train, "");
    if (event.has_validation) line += keras_metrics_text(event.validation, "val_");
    return line;
}

std::string fixed_text(double value, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

std::string log_line(const LogEvent& event) {
    const char* level = event.level == LogLevel::Warning ? "WARNING" : event.level == LogLevel::Error ? "ERROR" : "INFO";
    return std::string(level) + ": " + event.text;
}

}  // namespace mirrorlab
