#pragma once
// The model.compile() / model.fit() half of the model form: optimizer and learning rate, loss,
// metrics, the global batch and how it splits over the replicas, epochs, seed and early stopping.
// Lints (things that train, but not as the person probably expects) are shown in amber next to
// the setting they concern.
#include <QGroupBox>
#include <QStringList>

#include <cstdint>
#include <optional>

#include "core/train/trainer.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSettings;
class QSpinBox;

namespace mirrorlab::ui {

class CompileOptions : public QGroupBox {
    Q_OBJECT
  public:
    explicit CompileOptions(QWidget* parent = nullptr);

    // Fields the form does not show keep their values from the last setTrainConfig() (TrainConfig's
    // defaults until then): those that change what is trained (steps per epoch, shuffling, the
    // optimizer's betas, ...) are named in a note with a button that puts the defaults back; the
    // GUI's own (step events, prefetch) are its defaults whatever the config said.
    TrainConfig trainConfig() const;
    void setTrainConfig(const TrainConfig& config);
    // "5 steps per epoch, no shuffling": what the note names; empty when the note is hidden.
    QStringList settingsNotShown() const;
    void useDefaultsForSettingsNotShown();

    void setReplicaCount(int replicas);
    int replicaCount() const { return replicas_; }
    void setTrainingSamples(std::int64_t samples);  // 0: unknown (no data loaded)
    // The model's output activation, for the from_logits lint; nullopt while the model is invalid.
    void setOutputActivation(std::optional<ActivationKind> activation);

    QStringList lints() const;

    void saveSettings(QSettings& settings, const QString& prefix) const;
    void restoreSettings(const QSettings& settings, const QString& prefix);

  signals:
    void trainConfigChanged();

  private:
    void addOptimizerRows();
    void addLossRows();
    void addFitRows();
    void addEarlyStoppingRows();
    void connectControls();
    void onOptimizerChanged();
    void onChanged();  // any edit: refresh the derived texts and lints, then emit
    void refresh();
    void showBatch(const TrainConfig& config);
    void showLearningRateLint(const TrainConfig& config);
    void showLossLint(const TrainConfig& config);
    void showSettingsNotShown(const TrainConfig& config);
    OptimizerKind optimizerKind() const;

    TrainConfig base_;
    int replicas_ = 1;
    std::int64_t training_samples_ = 0;
    std::optional<ActivationKind> output_activation_;
    bool loading_ = false;

    QFormLayout* form_ = nullptr;
    QComboBox* optimizer_ = nullptr;
    QDoubleSpinBox* learning_rate_ = nullptr;
    QLabel* optimizer_description_ = nullptr;
    QDoubleSpinBox* momentum_ = nullptr;
    QComboBox* keras_semantics_ = nullptr;  // EmbeddingUpdate: which Keras generation to follow
    QCheckBox* from_logits_ = nullptr;
    QSpinBox* top_k_ = nullptr;
    QSpinBox* batch_size_ = nullptr;
    QLabel* batch_split_ = nullptr;
    QSpinBox* epochs_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QCheckBox* early_stopping_ = nullptr;
    QComboBox* monitor_ = nullptr;
    QSpinBox* patience_ = nullptr;
    QDoubleSpinBox* min_delta_ = nullptr;
    QCheckBox* restore_best_ = nullptr;
    QLabel* learning_rate_lint_ = nullptr;
    QLabel* loss_lint_ = nullptr;
    QLabel* batch_lint_ = nullptr;
    QWidget* not_shown_row_ = nullptr;
    QLabel* not_shown_ = nullptr;
};

}  // namespace mirrorlab::ui
