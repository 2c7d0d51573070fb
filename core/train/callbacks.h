#pragma once
// Keras' callbacks for the fit loop: what happens at the end of an epoch besides training —
// watching for overfitting, early stopping, checkpoints — lives here, one class each, so that the
// loop in trainer.cpp only trains and validates. Each keeps its own state; a checkpoint saves that
// state (CallbackState) so that a resumed run decides exactly as the uninterrupted one would.
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/train/events.h"
#include "core/train/fit_state.h"
#include "core/train/history.h"

namespace mirrorlab {

class MirroredStrategy;

struct EarlyStoppingConfig {
    bool enabled = false;
    std::string monitor = "val_loss";  // val_loss, val_accuracy, val_top5, loss, accuracy, top5
    double min_delta = 0.0;
    int patience = 0;
    bool restore_best_weights = false;
    int start_from_epoch = 0;
};

// True for accuracies, false for losses (Keras' mode="auto").
bool higher_is_better(const std::string& monitor);
// Our name of a monitored metric ("val_accuracy" for Keras' "val_sparse_categorical_accuracy"),
// or "" when it names none: loss, accuracy, top5, each with or without "val_".
std::string canonical_monitor(std::string_view monitor);
// The epoch's value of a monitored metric ("val_loss", "accuracy", Keras' names too); NaN when the
// run has none.
double monitored_value(const EpochRecord& record, const std::string& monitor);

// What callbacks see at the end of an epoch, and how they end the run.
struct FitContext {
    MirroredStrategy& strategy;
    const History& history;  // the epochs kept so far, the one that just ended included
    std::function<void(const Event&)> publish;
    std::function<void(LogLevel, const std::string&)> log;
    // The whole state of the run after this epoch, as a checkpoint keeps it (copies the weights
    // and slots from the devices: call only when saving).
    std::function<TrainingState()> snapshot;
    // Set by a callback: the loop ends after this epoch with this reason.
    bool stop_training = false;
    FinishReason stop_reason = FinishReason::Completed;
};

class Callback {
public:
    virtual ~Callback() = default;
    // The key under which a checkpoint keeps this callback's state ("early_stopping", ...).
    virtual std::string name() const = 0;
    virtual void on_epoch_end(FitContext& context, const EpochRecord& record) = 0;
    // After each training step, only for callbacks that want it (the call is on the step's path).
    virtual bool wants_steps() const { return false; }
    virtual void on_step_end(FitContext& /*context*/, int /*epoch*/, std::int64_t /*global_step*/) {}
    // Before the FinishedEvent is published: may restore weights and name the best epoch.
    virtual void on_train_end(FitContext& /*context*/, FinishedEvent& /*finished*/) {}
    virtual CallbackState state() const { return {}; }
    virtual void restore(const CallbackState& /*state*/) {}
};

// Validation loss turning up while training loss keeps falling: a warning naming the best epoch.
// Always tracks the best val_loss epoch (the FinishedEvent's best epoch without early stopping);
// warns only when `warn` is set.
class OverfittingMonitor final : public Callback {
public:
    OverfittingMonitor(bool warn, bool early_stopping_enabled) : warn_(warn), early_stopping_enabled_(early_stopping_enabled) {}
    std::string name() const override { return "overfitting_monitor"; }
    void on_epoch_end(FitContext& context, const EpochRecord& record) override;
    void on_train_end(FitContext& context, FinishedEvent& finished) override;
    CallbackState state() const override;
    void restore(const CallbackState& state) override;

private:
    bool warn_;
    bool early_stopping_enabled_;
    double best_val_loss_ = std::numeric_limits<double>::infinity();
    int best_val_epoch_ = 0;
};

// Keras' EarlyStopping: stop when `monitor` has not improved by min_delta for `patience` epochs
// (from start_from_epoch on), optionally restoring the best epoch's weights.
class EarlyStopping final : public Callback {
public:
    explicit EarlyStopping(EarlyStoppingConfig config);
    std::string name() const override { return "early_stopping"; }
    void on_epoch_end(FitContext& context, const EpochRecord& record) override;
    void on_train_end(FitContext& context, FinishedEvent& finished) override;
    CallbackState state() const override;
    void restore(const CallbackState& state) override;

private:
    EarlyStoppingConfig config_;
    bool said_missing_ = false;  // the monitored value is not there: said once
    bool maximize_;
    double best_value_;
    int best_epoch_ = 0;
    int wait_ = 0;
    std::vector<float> best_weights_;
};

}  // namespace mirrorlab
