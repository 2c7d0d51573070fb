#include "ui/model/compile_options.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/distribute/mirrored.h"
#include "core/model/model.h"

namespace mirrorlab::ui {

namespace {

// Learning rates span decades (1e-5 … 0.1), so the box shows them as Python prints them
// ("0.001", "1e-05") instead of with a fixed number of decimals, and the arrows walk the
// 1-2-5 series (0.001 → 0.002 → 0.005 → 0.01).
class LearningRateSpinBox : public QDoubleSpinBox {
  public:
    explicit LearningRateSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
        setDecimals(12);
        setRange(1e-8, 10.0);
        setKeyboardTracking(false);
    }

    QString textFromValue(double value) const override { return QString::number(value, 'g', 6); }

    double valueFromText(const QString& text) const override {
        bool ok = false;
        const double value = parse(text, &ok);
        return ok ? value : this->value();
    }

    QValidator::State validate(QString& text, int& /*pos*/) const override {
        if (text.isEmpty()) return QValidator::Intermediate;
        for (const QChar c : text) {
            if (!c.isDigit() && !QStringLiteral(".,eE+-").contains(c)) return QValidator::Invalid;
        }
        bool ok = false;
        const double value = parse(text, &ok);
        return ok && value >= minimum() && value <= maximum() ? QValidator::Acceptable
                                                              : QValidator::Intermediate;
    }

    void stepBy(int steps) override {
        double value = this->value();
        for (; steps > 0; --steps) value = step125(value, true);
        for (; steps < 0; ++steps) value = step125(value, false);
        setValue(std::clamp(value, minimum(), maximum()));
        selectAll();
    }

  private:
    static double parse(const QString& text, bool* ok) {
        double value = QLocale().toDouble(text, ok);
        if (!*ok) value = text.toDouble(ok);
        return value;
    }

    static double step125(double value, bool up) {
        const double decade = std::pow(10.0, std::floor(std::log10(value)));
        const double mantissas[] = {0.5, 1.0, 2.0, 5.0, 10.0, 20.0};
        if (up) {
            for (double m : mantissas) {
                if (m * decade > value * (1 + 1e-9)) return m * decade;
            }
        } else {
            for (auto it = std::rbegin(mantissas); it != std::rend(mantissas); ++it) {
                if (*it * decade < value * (1 - 1e-9)) return *it * decade;
            }
        }
        return value;
    }
};

QLabel* make_lint_label(QWidget* parent, const char* object_name) {
    auto* label = new QLabel(parent);
    label->setObjectName(QString::fromLatin1(object_name));
    label->setWordWrap(true);
    label->setTextFormat(Qt::PlainText);
    label->setStyleSheet(
        QStringLiteral("QLabel { color: #7a4a00; background: #fff4e0; border-left: 3px solid "
                       "#e0a030; padding: 3px 6px; }"));
    label->setVisible(false);
    return label;
}

QString replicas_text(int replicas) {
    return replicas == 1 ? CompileOptions::tr("1 replica")
                         : CompileOptions::tr("%1 replicas").arg(replicas);
}

struct Monitor {
    const char* key;
    const char* description;
};
constexpr Monitor kMonitors[] = {
    {"val_loss", QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "validation loss")},
    {"val_accuracy", QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "validation accuracy")},
    {"val_top5", QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "validation top-5 accuracy")},
    {"loss", QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "training loss")},
    {"accuracy", QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "training accuracy")},
    {"top5", QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "training top-5 accuracy")},
};

struct KerasSemantics {
    EmbeddingUpdate generation;
    const char* label;
};
constexpr KerasSemantics kKerasSemantics[] = {
    {EmbeddingUpdate::TF2, QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "tf.keras 2 (the tutorial's)")},
    {EmbeddingUpdate::Keras3, QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "Keras 3 on TensorFlow")},
    {EmbeddingUpdate::Dense, QT_TRANSLATE_NOOP("mirrorlab::ui::CompileOptions", "Keras 3 on JAX or PyTorch")},
};

constexpr OptimizerKind kOptimizers[] = {OptimizerKind::Nadam, OptimizerKind::Adam,
                                         OptimizerKind::SGD, OptimizerKind::RMSprop};

// What `config` sets differently from the defaults among the fields the form has none for (a run
// trained again from mirrorlab-cli's options or a --config file brings them).
QStringList settings_not_shown(const TrainConfig& config) {
    const TrainConfig defaults;
    QStringList named;
    if (config.max_steps_per_epoch > 0) named << CompileOptions::tr("%1 steps per epoch at most").arg(config.max_steps_per_epoch);
    if (config.shuffle != defaults.shuffle) named << CompileOptions::tr("no shuffling");
    if (config.overfitting_monitor != defaults.overfitting_monitor) named << CompileOptions::tr("no overfitting warnings");
    if (config.early_stopping.start_from_epoch != defaults.early_stopping.start_from_epoch) {
        named << QStringLiteral("start_from_epoch=%1").arg(config.early_stopping.start_from_epoch);
    }
    const OptimizerConfig& optimizer = config.optimizer;
    const OptimizerConfig keras = OptimizerConfig::defaults(optimizer.kind);
    auto number = [](double value) { return QString::number(value, 'g', 10); };
    if (optimizer.beta_1 != keras.beta_1) named << QStringLiteral("beta_1=%1").arg(number(optimizer.beta_1));
    if (optimizer.beta_2 != keras.beta_2) named << QStringLiteral("beta_2=%1").arg(number(optimizer.beta_2));
    if (optimizer.epsilon != keras.epsilon) named << QStringLiteral("epsilon=%1").arg(number(optimizer.epsilon));
    if (optimizer.rho != keras.rho) named << QStringLiteral("rho=%1").arg(number(optimizer.rho));
    if (optimizer.kind == OptimizerKind::Nadam) {
        OptimizerConfig generation = optimizer;
        generation.follow_keras(optimizer.embedding_update);
        if (optimizer.nadam_schedule_decay != generation.nadam_schedule_decay) {
            named << QStringLiteral("schedule_decay=%1").arg(number(optimizer.nadam_schedule_decay));
        }
    }
    if (optimizer.nesterov != keras.nesterov) named << QStringLiteral("nesterov=%1").arg(QLatin1String(optimizer.nesterov ? "True" : "False"));
    return named;
}

}  // namespace

CompileOptions::CompileOptions(QWidget* parent) : QGroupBox(tr("Compile and fit"), parent) {
    setObjectName(QStringLiteral("compileOptions"));
    form_ = new QFormLayout(this);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

    addOptimizerRows();
    addLossRows();
    addFitRows();
    addEarlyStoppingRows();
    connectControls();
    setTrainConfig(TrainConfig{});
}

// The optimizer, its learning rate and momentum, the Keras semantics and what the optimizer does.
void CompileOptions::addOptimizerRows() {
    optimizer_ = new QComboBox(this);
    optimizer_->setObjectName(QStringLiteral("optimizer"));
    for (OptimizerKind kind : kOptimizers) {
        optimizer_->addItem(QString::fromStdString(std::string(optimizer_name(kind))),
                            static_cast<int>(kind));
    }
    optimizer_->setToolTip(tr("How the gradients change the weights (compile(optimizer=...))"));
    form_->addRow(tr("Optimizer:"), optimizer_);

    learning_rate_ = new LearningRateSpinBox(this);
    learning_rate_->setObjectName(QStringLiteral("learningRate"));
    learning_rate_->setToolTip(
        tr("Resets to the optimizer's Keras default when the optimizer changes"));
    form_->addRow(tr("Learning rate:"), learning_rate_);
    learning_rate_lint_ = make_lint_label(this, "learningRateLint");
    form_->addRow(learning_rate_lint_);

    momentum_ = new QDoubleSpinBox(this);
    momentum_->setObjectName(QStringLiteral("momentum"));
    momentum_->setRange(0.0, 0.999);
    momentum_->setDecimals(3);
    momentum_->setSingleStep(0.1);
    momentum_->setKeyboardTracking(false);
    momentum_->setToolTip(tr("SGD's momentum; 0 is plain gradient descent"));
    form_->addRow(tr("Momentum:"), momentum_);

    keras_semantics_ = new QComboBox(this);
    keras_semantics_->setObjectName(QStringLiteral("kerasSemantics"));
    for (const KerasSemantics& semantics : kKerasSemantics) {
        keras_semantics_->addItem(tr(semantics.label), static_cast<int>(semantics.generation));
    }
    keras_semantics_->setToolTip(
        tr("Where Keras generations differ, which one the optimizer reproduces: how the Embedding's "
           "sparse gradient updates its rows, and Nadam's momentum schedule"));
    form_->addRow(tr("Keras semantics:"), keras_semantics_);

    optimizer_description_ = new QLabel(this);
    optimizer_description_->setObjectName(QStringLiteral("optimizerDescription"));
    optimizer_description_->setWordWrap(true);
    optimizer_description_->setTextFormat(Qt::PlainText);
    optimizer_description_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    optimizer_description_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    optimizer_description_->setStyleSheet(QStringLiteral("color: palette(dark);"));
    form_->addRow(optimizer_description_);
}

// The loss, from_logits and the metrics.
void CompileOptions::addLossRows() {
    auto* loss = new QLabel(tr("Sparse categorical cross-entropy"), this);
    loss->setObjectName(QStringLiteral("loss"));
    form_->addRow(tr("Loss:"), loss);
    from_logits_ =
        new QCheckBox(tr("from_logits (the model outputs logits, not probabilities)"), this);
    from_logits_->setObjectName(QStringLiteral("fromLogits"));
    from_logits_->setToolTip(tr("Tick only when the last layer has no softmax: the tutorial's softmax output wants it unticked"));
    form_->addRow(QString(), from_logits_);
    loss_lint_ = make_lint_label(this, "lossLint");
    form_->addRow(loss_lint_);

    auto* metrics = new QWidget(this);
    auto* metrics_layout = new QHBoxLayout(metrics);
    metrics_layout->setContentsMargins(0, 0, 0, 0);
    metrics_layout->addWidget(new QLabel(tr("accuracy, top-k accuracy with k ="), metrics));
    top_k_ = new QSpinBox(metrics);
    top_k_->setObjectName(QStringLiteral("topK"));
    top_k_->setRange(5, 5);
    top_k_->setValue(5);
    top_k_->setEnabled(false);
    const QString top_k_tip =
        tr("The engine computes top-5 accuracy only (as the tutorial does), so k is fixed at 5.");
    top_k_->setToolTip(top_k_tip);
    top_k_->setAccessibleName(tr("Top-k accuracy: k"));
    metrics->setToolTip(top_k_tip);
    metrics_layout->addWidget(top_k_);
    metrics_layout->addStretch(1);
    form_->addRow(tr("Metrics:"), metrics);
}

// fit()'s batch, epochs and seed.
void CompileOptions::addFitRows() {
    auto* batch = new QWidget(this);
    auto* batch_layout = new QHBoxLayout(batch);
    batch_layout->setContentsMargins(0, 0, 0, 0);
    batch_size_ = new QSpinBox(batch);
    batch_size_->setObjectName(QStringLiteral("batchSize"));
    batch_size_->setRange(1, 65'536);
    batch_size_->setKeyboardTracking(false);
    batch_size_->setAccessibleName(tr("Global batch size"));
    batch_size_->setToolTip(
        tr("Samples per training step over all replicas; each replica gets a shard"));
    batch_layout->addWidget(batch_size_);
    batch_split_ = new QLabel(batch);
    batch_split_->setObjectName(QStringLiteral("batchSplit"));
    batch_split_->setWordWrap(true);
    batch_layout->addWidget(batch_split_, 1);
    form_->addRow(tr("Global batch:"), batch);
    batch_lint_ = make_lint_label(this, "batchLint");
    form_->addRow(batch_lint_);

    epochs_ = new QSpinBox(this);
    epochs_->setObjectName(QStringLiteral("epochs"));
    epochs_->setRange(1, 100'000);
    epochs_->setKeyboardTracking(false);
    epochs_->setToolTip(tr("Passes over the training data (fit(epochs=...))"));
    form_->addRow(tr("Epochs:"), epochs_);

    seed_ = new QSpinBox(this);
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setRange(0, INT_MAX);
    seed_->setKeyboardTracking(false);
    seed_->setToolTip(
        tr("Initial weights, shuffling and dropout follow this seed: the same seed repeats a run"));
    form_->addRow(tr("Seed:"), seed_);
}

// Keras' EarlyStopping callback.
void CompileOptions::addEarlyStoppingRows() {
    early_stopping_ =
        new QCheckBox(tr("Stop early when the monitored value stops improving"), this);
    early_stopping_->setObjectName(QStringLiteral("earlyStopping"));
    early_stopping_->setToolTip(tr("Keras' EarlyStopping callback: ends training when the monitored value has not improved for "
                                   "'patience' epochs"));
    form_->addRow(tr("Early stopping:"), early_stopping_);
    monitor_ = new QComboBox(this);
    monitor_->setObjectName(QStringLiteral("monitor"));
    for (const Monitor& monitor : kMonitors) {
        monitor_->addItem(
            tr("%1 (%2)").arg(QString::fromLatin1(monitor.key), tr(monitor.description)),
            QString::fromLatin1(monitor.key));
    }
    monitor_->setToolTip(tr("The value early stopping watches"));
    form_->addRow(tr("Monitor:"), monitor_);
    patience_ = new QSpinBox(this);
    patience_->setObjectName(QStringLiteral("patience"));
    patience_->setRange(0, 10'000);
    patience_->setKeyboardTracking(false);
    patience_->setSuffix(tr(" epochs"));
    patience_->setToolTip(tr("Epochs without improvement before training stops"));
    form_->addRow(tr("Patience:"), patience_);
    min_delta_ = new QDoubleSpinBox(this);
    min_delta_->setObjectName(QStringLiteral("minDelta"));
    min_delta_->setRange(0.0, 100.0);
    min_delta_->setDecimals(4);
    min_delta_->setSingleStep(0.001);
    min_delta_->setKeyboardTracking(false);
    min_delta_->setToolTip(tr("Smaller changes than this do not count as an improvement"));
    form_->addRow(tr("Min delta:"), min_delta_);
    restore_best_ = new QCheckBox(tr("Restore the best epoch's weights at the end"), this);
    restore_best_->setObjectName(QStringLiteral("restoreBestWeights"));
    restore_best_->setToolTip(tr("restore_best_weights: end with the weights of the best epoch instead of the last"));
    form_->addRow(QString(), restore_best_);

    // Settings a run trained again brought that this form has no field for.
    not_shown_row_ = new QWidget(this);
    auto* not_shown_layout = new QHBoxLayout(not_shown_row_);
    not_shown_layout->setContentsMargins(0, 0, 0, 0);
    not_shown_ = make_lint_label(not_shown_row_, "settingsNotShown");
    not_shown_->setVisible(true);
    not_shown_layout->addWidget(not_shown_, 1);
    auto* use_defaults = new QPushButton(tr("Use the defaults"), not_shown_row_);
    use_defaults->setObjectName(QStringLiteral("useDefaultsForSettingsNotShown"));
    use_defaults->setToolTip(tr("Train with Keras' defaults for the settings this form does not show"));
    connect(use_defaults, &QPushButton::clicked, this, &CompileOptions::useDefaultsForSettingsNotShown);
    not_shown_layout->addWidget(use_defaults, 0, Qt::AlignTop);
    form_->addRow(not_shown_row_);
    form_->setRowVisible(not_shown_row_, false);
}

void CompileOptions::connectControls() {
    connect(optimizer_, &QComboBox::currentIndexChanged, this, &CompileOptions::onOptimizerChanged);
    connect(learning_rate_, &QDoubleSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(momentum_, &QDoubleSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(keras_semantics_, &QComboBox::currentIndexChanged, this, &CompileOptions::onChanged);
    connect(from_logits_, &QCheckBox::toggled, this, &CompileOptions::onChanged);
    connect(batch_size_, &QSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(epochs_, &QSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(seed_, &QSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(early_stopping_, &QCheckBox::toggled, this, &CompileOptions::onChanged);
    connect(monitor_, &QComboBox::currentIndexChanged, this, &CompileOptions::onChanged);
    connect(patience_, &QSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(min_delta_, &QDoubleSpinBox::valueChanged, this, &CompileOptions::onChanged);
    connect(restore_best_, &QCheckBox::toggled, this, &CompileOptions::onChanged);
}

OptimizerKind CompileOptions::optimizerKind() const {
    return static_cast<OptimizerKind>(optimizer_->currentData().toInt());
}

TrainConfig CompileOptions::trainConfig() const {
    TrainConfig config = base_;
    config.epochs = epochs_->value();
    config.batch_size = batch_size_->value();
    config.seed = static_cast<std::uint64_t>(seed_->value());
    const OptimizerKind kind = optimizerKind();
    if (config.optimizer.kind != kind) config.optimizer = OptimizerConfig::defaults(kind);
    config.optimizer.learning_rate = learning_rate_->value();
    if (kind == OptimizerKind::SGD || kind == OptimizerKind::RMSprop)
        config.optimizer.momentum = momentum_->value();
    // Only a change of generation sets Nadam's schedule: a settings file's own schedule_decay stays
    // while the form shows the generation it came with (it is named under the form).
    const auto semantics = static_cast<EmbeddingUpdate>(keras_semantics_->currentData().toInt());
    if (config.optimizer.embedding_update != semantics) config.optimizer.follow_keras(semantics);
    config.from_logits = from_logits_->isChecked();
    config.early_stopping.enabled = early_stopping_->isChecked();
    config.early_stopping.monitor = monitor_->currentData().toString().toStdString();
    config.early_stopping.patience = patience_->value();
    config.early_stopping.min_delta = min_delta_->value();
    config.early_stopping.restore_best_weights = restore_best_->isChecked();
    return config;
}

void CompileOptions::setTrainConfig(const TrainConfig& config) {
    loading_ = true;
    base_ = config;
    // The GUI's own: the charts need every step's event, and prefetching changes no number.
    base_.emit_step_events = TrainConfig{}.emit_step_events;
    base_.prefetch_batches = TrainConfig{}.prefetch_batches;
    const int optimizer_index = optimizer_->findData(static_cast<int>(config.optimizer.kind));
    optimizer_->setCurrentIndex(std::max(0, optimizer_index));
    if (optimizer_index < 0) base_.optimizer = OptimizerConfig::defaults(optimizerKind());
    learning_rate_->setValue(base_.optimizer.learning_rate);
    momentum_->setValue(base_.optimizer.momentum);
    keras_semantics_->setCurrentIndex(
        std::max(0, keras_semantics_->findData(static_cast<int>(base_.optimizer.embedding_update))));
    from_logits_->setChecked(config.from_logits);
    batch_size_->setValue(config.batch_size);
    epochs_->setValue(config.epochs);
    seed_->setValue(static_cast<int>(std::min<std::uint64_t>(config.seed, INT_MAX)));
    early_stopping_->setChecked(config.early_stopping.enabled);
    monitor_->setCurrentIndex(
        std::max(0, monitor_->findData(QString::fromStdString(config.early_stopping.monitor))));
    patience_->setValue(config.early_stopping.patience);
    min_delta_->setValue(config.early_stopping.min_delta);
    restore_best_->setChecked(config.early_stopping.restore_best_weights);
    loading_ = false;
    onChanged();
}

void CompileOptions::setReplicaCount(int replicas) {
    replicas = std::max(replicas, 1);
    if (replicas == replicas_) return;
    replicas_ = replicas;
    refresh();
}

void CompileOptions::setTrainingSamples(std::int64_t samples) {
    samples = std::max<std::int64_t>(samples, 0);
    if (samples == training_samples_) return;
    training_samples_ = samples;
    refresh();
}

void CompileOptions::setOutputActivation(std::optional<ActivationKind> activation) {
    if (activation == output_activation_) return;
    output_activation_ = activation;
    refresh();
}

void CompileOptions::onOptimizerChanged() {
    if (loading_) return;
    // A learning rate tuned for one optimizer means little for another: start from Keras' default.
    const OptimizerConfig defaults = OptimizerConfig::defaults(optimizerKind());
    loading_ = true;
    learning_rate_->setValue(defaults.learning_rate);
    momentum_->setValue(defaults.momentum);
    loading_ = false;
    onChanged();
}

void CompileOptions::onChanged() {
    if (loading_) return;
    refresh();
    emit trainConfigChanged();
}

void CompileOptions::refresh() {
    const TrainConfig config = trainConfig();
    const OptimizerKind kind = config.optimizer.kind;
    form_->setRowVisible(momentum_, kind == OptimizerKind::SGD || kind == OptimizerKind::RMSprop);
    optimizer_description_->setText(QString::fromStdString(config.optimizer.describe()));
    for (QWidget* widget :
         std::initializer_list<QWidget*>{monitor_, patience_, min_delta_, restore_best_}) {
        widget->setEnabled(config.early_stopping.enabled);
    }

    showBatch(config);
    showLearningRateLint(config);
    showLossLint(config);
    showSettingsNotShown(config);
}

QStringList CompileOptions::settingsNotShown() const { return settings_not_shown(trainConfig()); }

void CompileOptions::showSettingsNotShown(const TrainConfig& config) {
    const QStringList named = settings_not_shown(config);
    if (!named.isEmpty()) {
        not_shown_->setText(tr("Also trained with settings this form does not show: %1.").arg(named.join(QStringLiteral(", "))));
    }
    form_->setRowVisible(not_shown_row_, !named.isEmpty());
}

void CompileOptions::useDefaultsForSettingsNotShown() {
    const TrainConfig defaults;
    base_.max_steps_per_epoch = defaults.max_steps_per_epoch;
    base_.shuffle = defaults.shuffle;
    base_.overfitting_monitor = defaults.overfitting_monitor;
    base_.early_stopping.start_from_epoch = defaults.early_stopping.start_from_epoch;
    const OptimizerConfig keras = OptimizerConfig::defaults(base_.optimizer.kind);
    base_.optimizer.beta_1 = keras.beta_1;
    base_.optimizer.beta_2 = keras.beta_2;
    base_.optimizer.epsilon = keras.epsilon;
    base_.optimizer.rho = keras.rho;
    base_.optimizer.nesterov = keras.nesterov;
    base_.optimizer.follow_keras(base_.optimizer.embedding_update);  // its generation's Nadam schedule
    onChanged();
}

// The global batch, its shards and the steps an epoch takes; a warning when the shards are uneven.
void CompileOptions::showBatch(const TrainConfig& config) {
    const int batch = config.batch_size;
    const auto shards = shard_sizes(batch, replicas_);
    const bool even = batch % replicas_ == 0;
    QString split;
    if (even) {
        split = tr("%1 global = %2 per replica × %3")
                    .arg(batch)
                    .arg(batch / replicas_)
                    .arg(replicas_text(replicas_));
    } else {
        QStringList parts;
        for (std::int32_t shard : shards) parts << QString::number(shard);
        split = tr("%1 global = %2 over %3")
                    .arg(batch)
                    .arg(parts.join(QStringLiteral(" + ")), replicas_text(replicas_));
    }
    if (training_samples_ > 0) {
        const std::int64_t steps = (training_samples_ + batch - 1) / batch;
        split += tr(" · %1 steps per epoch").arg(QString::fromStdString(format_thousands(steps)));
    }
    batch_split_->setText(split);

    QString batch_lint;
    if (!even) {
        QStringList parts;
        for (std::int32_t shard : shards) parts << QString::number(shard);
        const int lower = batch - batch % replicas_;
        const QString multiples = lower > 0 ? tr("%1 or %2").arg(lower).arg(lower + replicas_)
                                            : QString::number(replicas_);
        batch_lint = tr("⚠ %1 over %2 replicas: %3 — the replicas with the larger shard set the "
                        "pace of every step. "
                        "Use a multiple of %2 (%4) for balanced replicas.")
                         .arg(batch)
                         .arg(replicas_)
                         .arg(parts.join(QStringLiteral(" + ")), multiples);
    }
    batch_lint_->setText(batch_lint);
    form_->setRowVisible(batch_lint_, !batch_lint.isEmpty());
}

void CompileOptions::showLearningRateLint(const TrainConfig& config) {
    const OptimizerKind kind = config.optimizer.kind;
    QString lr_lint;
    const double lr = config.optimizer.learning_rate;
    const double default_lr = OptimizerConfig::defaults(kind).learning_rate;
    const double high = kind == OptimizerKind::SGD ? 1.0 : 0.1;
    if (lr > high) {
        lr_lint = tr("⚠ A learning rate of %1 is unusually high for %2 (Keras default %3); the "
                     "loss will likely "
                     "diverge to NaN.")
                      .arg(QString::number(lr, 'g', 6),
                           QString::fromStdString(std::string(optimizer_name(kind))),
                           QString::number(default_lr, 'g', 6));
    }
    learning_rate_lint_->setText(lr_lint);
    form_->setRowVisible(learning_rate_lint_, !lr_lint.isEmpty());
}

// The loss against the last layer's activation: softmax twice, logits without from_logits, or an
// activation the loss cannot take.
void CompileOptions::showLossLint(const TrainConfig& config) {
    QString loss_lint;
    if (output_activation_) {
        const ActivationKind output = *output_activation_;
        if (output == ActivationKind::Softmax && config.from_logits) {
            loss_lint = tr(
                "⚠ The last layer already applies softmax; from_logits=True would apply it twice "
                "(Keras trains worse that way; MirrorLab uses the logits once). Clear "
                "from_logits.");
        } else if (output == ActivationKind::Linear && !config.from_logits) {
            loss_lint =
                tr("⚠ The last layer has no softmax, so its outputs are logits; tick from_logits "
                   "so the "
                   "loss treats them as such.");
        } else if (output != ActivationKind::Softmax && output != ActivationKind::Linear) {
            loss_lint = tr("⚠ The last layer's activation is %1; sparse categorical cross-entropy "
                           "needs softmax "
                           "(or linear with from_logits), so training will refuse to start.")
                            .arg(QString::fromStdString(std::string(activation_name(output))));
        }
    }
    loss_lint_->setText(loss_lint);
    form_->setRowVisible(loss_lint_, !loss_lint.isEmpty());
}

QStringList CompileOptions::lints() const {
    QStringList lints;
    for (const QLabel* label : {learning_rate_lint_, loss_lint_, batch_lint_}) {
        if (!label->text().isEmpty()) lints << label->text();
    }
    return lints;
}

void CompileOptions::saveSettings(QSettings& settings, const QString& prefix) const {
    const TrainConfig config = trainConfig();
    settings.setValue(prefix + QStringLiteral("optimizer"),
                      QString::fromStdString(std::string(optimizer_name(config.optimizer.kind))));
    settings.setValue(prefix + QStringLiteral("learningRate"), config.optimizer.learning_rate);
    settings.setValue(prefix + QStringLiteral("momentum"), config.optimizer.momentum);
    settings.setValue(prefix + QStringLiteral("kerasSemantics"),
                      QString::fromStdString(std::string(embedding_update_name(config.optimizer.embedding_update))));
    settings.setValue(prefix + QStringLiteral("fromLogits"), config.from_logits);
    settings.setValue(prefix + QStringLiteral("batchSize"), config.batch_size);
    settings.setValue(prefix + QStringLiteral("epochs"), config.epochs);
    settings.setValue(prefix + QStringLiteral("seed"), static_cast<qulonglong>(config.seed));
    settings.setValue(prefix + QStringLiteral("earlyStopping"), config.early_stopping.enabled);
    settings.setValue(prefix + QStringLiteral("monitor"),
                      QString::fromStdString(config.early_stopping.monitor));
    settings.setValue(prefix + QStringLiteral("patience"), config.early_stopping.patience);
    settings.setValue(prefix + QStringLiteral("minDelta"), config.early_stopping.min_delta);
    settings.setValue(prefix + QStringLiteral("restoreBestWeights"),
                      config.early_stopping.restore_best_weights);
}

void CompileOptions::restoreSettings(const QSettings& settings, const QString& prefix) {
    TrainConfig config = trainConfig();
    auto value = [&](const char* key, const QVariant& fallback) {
        return settings.value(prefix + QString::fromLatin1(key), fallback);
    };
    const QString optimizer = value("optimizer", QString()).toString();
    if (!optimizer.isEmpty()) {
        try {
            config.optimizer =
                OptimizerConfig::defaults(optimizer_kind_from_name(optimizer.toStdString()));
        } catch (const std::exception&) {
            // An unknown name from another version: keep the current optimizer.
        }
    }
    config.optimizer.learning_rate =
        value("learningRate", config.optimizer.learning_rate).toDouble();
    config.optimizer.momentum = value("momentum", config.optimizer.momentum).toDouble();
    const QString semantics = value("kerasSemantics", QString()).toString();
    if (!semantics.isEmpty()) {
        try {
            config.optimizer.follow_keras(embedding_update_from_name(semantics.toStdString()));
        } catch (const std::exception&) {
            // An unknown name from another version: keep the current semantics.
        }
    }
    config.from_logits = value("fromLogits", config.from_logits).toBool();
    config.batch_size = value("batchSize", config.batch_size).toInt();
    config.epochs = value("epochs", config.epochs).toInt();
    config.seed = value("seed", static_cast<qulonglong>(config.seed)).toULongLong();
    config.early_stopping.enabled = value("earlyStopping", config.early_stopping.enabled).toBool();
    config.early_stopping.monitor =
        value("monitor", QString::fromStdString(config.early_stopping.monitor))
            .toString()
            .toStdString();
    config.early_stopping.patience = value("patience", config.early_stopping.patience).toInt();
    config.early_stopping.min_delta = value("minDelta", config.early_stopping.min_delta).toDouble();
    config.early_stopping.restore_best_weights =
        value("restoreBestWeights", config.early_stopping.restore_best_weights).toBool();
    setTrainConfig(config);
}

}  // namespace mirrorlab::ui
