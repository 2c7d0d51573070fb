#include "core/train/callbacks.h"

#include <cmath>
#include <cstdio>

#include "core/distribute/mirrored.h"
#include "core/train/progress.h"

namespace mirrorlab {

namespace {

double number_or(const CallbackState& state, const std::string& key, double fallback) {
    auto found = state.numbers.find(key);
    return found == state.numbers.end() ? fallback : found->second;
}

}  // namespace

bool higher_is_better(const std::string& monitor) { return monitor.find("loss") == std::string::npos; }

std::string canonical_monitor(std::string_view monitor) {
    const bool validation = monitor.starts_with("val_");
    const std::string_view key = validation ? monitor.substr(4) : monitor;
    // Keras' own names, as its progress lines (and ours) print them.
    std::string_view ours;
    if (key == "loss") ours = "loss";
    if (key == "accuracy" || key == "sparse_categorical_accuracy") ours = "accuracy";
    if (key == "top5" || key == "sparse_top_k_categorical_accuracy") ours = "top5";
    if (ours.empty()) return {};
    return (validation ? "val_" : "") + std::string(ours);
}

double monitored_value(const EpochRecord& record, const std::string& name) {
    const std::string monitor = canonical_monitor(name);
    const bool validation = monitor.rfind("val_", 0) == 0;
    const Metrics& m = validation ? record.validation : record.train;
    const std::string key = validation ? monitor.substr(4) : monitor;
    if (key == "loss") return m.loss;
    if (key == "accuracy") return m.accuracy;
    if (key == "top5") return m.top5;
    return std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> History::series(const std::string& key) const {
    std::vector<double> values;
    for (const auto& record : epochs) values.push_back(monitored_value(record, key));
    return values;
}

void OverfittingMonitor::on_epoch_end(FitContext& context, const EpochRecord& record) {
    if (!record.has_validation) return;
    if (record.validation.loss < best_val_loss_) {
        best_val_loss_ = record.validation.loss;
        best_val_epoch_ = record.epoch;
    }
    const auto& all = context.history.epochs;
    if (!warn_ || all.size() < 2) return;
    const EpochRecord& previous = all[all.size() - 2];
    if (record.validation.loss > previous.validation.loss && record.train.loss < previous.train.loss) {
        std::string text = "Epoch " + std::to_string(record.epoch) + ": validation loss rose to " + fixed_text(record.validation.loss) +
                           " (from " + fixed_text(previous.validation.loss) + ") while training loss fell to " +
                           fixed_text(record.train.loss) + ": the model is starting to overfit. Best epoch so far: " +
                           std::to_string(best_val_epoch_) + " (val_loss " + fixed_text(best_val_loss_) + ").";
        if (!early_stopping_enabled_)
            text += " Early stopping with restore_best_weights would keep epoch " + std::to_string(best_val_epoch_) + ".";
        context.publish(WarningEvent{"overfitting", text, record.epoch, best_val_epoch_});
        context.log(LogLevel::Warning, text);
    }
}

void OverfittingMonitor::on_train_end(FitContext&, FinishedEvent& finished) {
    if (!early_stopping_enabled_) finished.best_epoch = best_val_epoch_;
}

CallbackState OverfittingMonitor::state() const {
    CallbackState state;
    state.numbers["best_val_loss"] = best_val_loss_;
    state.numbers["best_val_epoch"] = best_val_epoch_;
    return state;
}

void OverfittingMonitor::restore(const CallbackState& state) {
    best_val_loss_ = number_or(state, "best_val_loss", std::numeric_limits<double>::infinity());
    best_val_epoch_ = static_cast<int>(number_or(state, "best_val_epoch", 0));
}

EarlyStopping::EarlyStopping(EarlyStoppingConfig config)
    : config_(std::move(config)),
      maximize_(higher_is_better(config_.monitor)),
      best_value_(maximize_ ? -INFINITY : INFINITY) {}

void EarlyStopping::on_epoch_end(FitContext& context, const EpochRecord& record) {
    if (record.epoch <= config_.start_from_epoch) return;
    const double value = monitored_value(record, config_.monitor);
    if (std::isnan(value)) {
        if (!said_missing_) {  // once, not at every epoch
            said_missing_ = true;
            const std::string text =
                canonical_monitor(config_.monitor).starts_with("val_") && !record.has_validation
                    ? "early stopping monitors '" + config_.monitor +
                          "', and this run has no validation data: it will not stop early; give data with a validation split, or "
                          "monitor 'loss'"
                    : "early stopping monitors '" + config_.monitor + "', which this run does not have; it will not stop early";
            context.publish(WarningEvent{"early_stopping_monitor", text, record.epoch, 0});
            context.log(LogLevel::Warning, text);
        }
        return;
    }
    const bool improved = maximize_ ? value - config_.min_delta > best_value_ : value + config_.min_delta < best_value_;
    if (improved || best_epoch_ == 0) {
        best_value_ = value;
        best_epoch_ = record.epoch;
        wait_ = 0;
        if (config_.restore_best_weights) best_weights_ = context.strategy.weights();
        return;
    }
    if (++wait_ < config_.patience) return;  // Keras: patience 0 and 1 both stop at the first miss
    context.stop_training = true;
    context.stop_reason = FinishReason::EarlyStopping;
    const std::string text = "Epoch " + std::to_string(record.epoch) + ": early stopping (" + config_.monitor +
                             " has not improved for " + std::to_string(wait_) + " epoch" + (wait_ == 1 ? "" : "s") + "; best " +
                             fixed_text(best_value_) + " at epoch " + std::to_string(best_epoch_) + ")";
    context.publish(WarningEvent{"early_stopping", text, record.epoch, best_epoch_});
    context.log(LogLevel::Info, text);
}

void EarlyStopping::on_train_end(FitContext& context, FinishedEvent& finished) {
    finished.best_epoch = best_epoch_;
    if (finished.reason == FinishReason::EarlyStopping && config_.restore_best_weights && !best_weights_.empty()) {
        context.strategy.set_weights(best_weights_);
        finished.restored_epoch = best_epoch_;
        context.log(LogLevel::Info, "Restoring model weights from the end of the best epoch: " + std::to_string(best_epoch_) + ".");
    }
}

CallbackState EarlyStopping::state() const {
    CallbackState state;
    state.numbers["best_value"] = best_value_;
    state.numbers["best_epoch"] = best_epoch_;
    state.numbers["wait"] = wait_;
    state.weights = best_weights_;
    return state;
}

void EarlyStopping::restore(const CallbackState& state) {
    best_value_ = number_or(state, "best_value", maximize_ ? -INFINITY : INFINITY);
    best_epoch_ = static_cast<int>(number_or(state, "best_epoch", 0));
    wait_ = static_cast<int>(number_or(state, "wait", 0));
    best_weights_ = state.weights;
}

}  // namespace mirrorlab
