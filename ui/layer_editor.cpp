#include "ui/layer_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

namespace mirrorlab::ui {

namespace {

constexpr ActivationKind kActivations[] = {ActivationKind::Linear, ActivationKind::ReLU,
                                           ActivationKind::Tanh, ActivationKind::Sigmoid,
                                           ActivationKind::Softmax};

QSpinBox* make_spin(QWidget* parent, const char* object_name, int minimum, int maximum) {
    auto* spin = new QSpinBox(parent);
    spin->setObjectName(QString::fromLatin1(object_name));
    spin->setRange(minimum, maximum);
    spin->setGroupSeparatorShown(true);
    // Commit on Enter, focus loss or the arrows: typing "128" should not build models for 1 and 12.
    spin->setKeyboardTracking(false);
    return spin;
}

QString qstr(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

}  // namespace

std::string output_shape_text(const Shape& shape) {
    std::string text = "(None";
    for (auto dim : shape.dims()) text += ", " + std::to_string(dim);
    return text + ")";
}

std::string layer_name_stem(LayerKind kind) {
    switch (kind) {
        case LayerKind::Embedding:
            return "embedding";
        case LayerKind::Conv1D:
            return "conv1d";
        case LayerKind::MaxPooling1D:
            return "max_pooling1d";
        case LayerKind::GlobalMaxPooling1D:
            return "global_max_pooling1d";
        case LayerKind::Flatten:
            return "flatten";
        case LayerKind::Dense:
            return "dense";
        case LayerKind::Dropout:
            return "dropout";
        case LayerKind::Activation:
            return "activation";
        case LayerKind::Invalid:
            break;
    }
    return "layer";
}

LayerConfig default_layer(LayerKind kind, std::string name) {
    LayerConfig config;
    config.kind = kind;
    config.name = std::move(name);
    switch (kind) {
        case LayerKind::Embedding:
            config.input_dim = 30'982;  // the Reuters vocabulary
            config.output_dim = 16;
            break;
        case LayerKind::Conv1D:
            config.filters = 32;
            config.kernel_size = 3;
            config.activation = ActivationKind::ReLU;
            break;
        case LayerKind::MaxPooling1D:
            config.pool_size = 2;
            break;
        case LayerKind::Dense:
            config.units = 64;
            config.activation = ActivationKind::ReLU;
            break;
        case LayerKind::Dropout:
            config.rate = 0.5;
            break;
        case LayerKind::Activation:
            config.activation = ActivationKind::ReLU;
            break;
        case LayerKind::GlobalMaxPooling1D:
        case LayerKind::Flatten:
        case LayerKind::Invalid:
            break;
    }
    return config;
}

LayerConfig embedding_layer(std::string name, std::int64_t vocabulary, std::int64_t dims) {
    LayerConfig c = default_layer(LayerKind::Embedding, std::move(name));
    c.input_dim = vocabulary;
    c.output_dim = dims;
    return c;
}
LayerConfig conv1d_layer(std::string name, int filters, int kernel_size, Padding padding,
                         ActivationKind activation) {
    LayerConfig c = default_layer(LayerKind::Conv1D, std::move(name));
    c.filters = filters;
    c.kernel_size = kernel_size;
    c.padding = padding;
    c.activation = activation;
    return c;
}
LayerConfig max_pooling1d_layer(std::string name, int pool_size) {
    LayerConfig c = default_layer(LayerKind::MaxPooling1D, std::move(name));
    c.pool_size = pool_size;
    return c;
}
LayerConfig dense_layer(std::string name, int units, ActivationKind activation) {
    LayerConfig c = default_layer(LayerKind::Dense, std::move(name));
    c.units = units;
    c.activation = activation;
    return c;
}
LayerConfig dropout_layer(std::string name, double rate) {
    LayerConfig c = default_layer(LayerKind::Dropout, std::move(name));
    c.rate = rate;
    return c;
}

QString layer_arguments_text(const LayerConfig& c) {
    const QString activation = qstr(activation_name(c.activation));
    const QString padding =
        c.padding == Padding::Same ? QStringLiteral("same") : QStringLiteral("valid");
    const QString no_bias = c.use_bias ? QString() : LayerEditor::tr(", no bias");
    switch (c.kind) {
        case LayerKind::Embedding:
            return LayerEditor::tr("%1 tokens → %2 dims").arg(c.input_dim).arg(c.output_dim);
        case LayerKind::Conv1D:
            return LayerEditor::tr("%1 filters, kernel %2, %3, %4")
                       .arg(c.filters)
                       .arg(c.kernel_size)
                       .arg(padding, activation) +
                   no_bias;
        case LayerKind::MaxPooling1D:
            return LayerEditor::tr("pool %1, stride %2, %3")
                .arg(c.pool_size)
                .arg(c.strides > 0 ? c.strides : c.pool_size)
                .arg(padding);
        case LayerKind::Dense:
            return LayerEditor::tr("%1 units, %2").arg(c.units).arg(activation) + no_bias;
        case LayerKind::Dropout:
            return LayerEditor::tr("rate %1").arg(c.rate);
        case LayerKind::Activation:
            return activation;
        case LayerKind::GlobalMaxPooling1D:
        case LayerKind::Flatten:
        case LayerKind::Invalid:
            break;
    }
    return {};
}

LayerEditor::LayerEditor(QWidget* parent) : QWidget(parent) {
    form_ = new QFormLayout(this);
    form_->setContentsMargins(0, 0, 0, 0);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

    title_ = new QLabel(this);
    title_->setObjectName(QStringLiteral("editorTitle"));
    title_->setWordWrap(true);
    form_->addRow(title_);

    name_ = new QLineEdit(this);
    name_->setObjectName(QStringLiteral("layerName"));
    name_->setToolTip(tr("Keras layer name; leave empty for an automatic one"));
    form_->addRow(tr("Name:"), name_);

    input_dim_ = make_spin(this, "inputDim", 1, 100'000'000);
    input_dim_->setToolTip(
        tr("Vocabulary size: token ids must be smaller than this (30,982 for Reuters)"));
    form_->addRow(tr("Vocabulary (input_dim):"), input_dim_);
    output_dim_ = make_spin(this, "outputDim", 1, 65'536);
    output_dim_->setToolTip(tr("Length of the vector each token becomes"));
    form_->addRow(tr("Vector size (output_dim):"), output_dim_);

    filters_ = make_spin(this, "filters", 1, 65'536);
    form_->addRow(tr("Filters:"), filters_);
    kernel_size_ = make_spin(this, "kernelSize", 1, 100'000);
    kernel_size_->setToolTip(
        tr("Window length in tokens; with padding 'valid' the output is kernel_size - 1 steps "
           "shorter"));
    form_->addRow(tr("Kernel size:"), kernel_size_);

    pool_size_ = make_spin(this, "poolSize", 1, 100'000);
    form_->addRow(tr("Pool size:"), pool_size_);
    strides_ = make_spin(this, "strides", 0, 100'000);
    strides_->setSpecialValueText(tr("same as pool size"));
    form_->addRow(tr("Strides:"), strides_);

    padding_ = new QComboBox(this);
    padding_->setObjectName(QStringLiteral("padding"));
    padding_->addItem(tr("valid (no padding)"), static_cast<int>(Padding::Valid));
    padding_->addItem(tr("same (keeps the length)"), static_cast<int>(Padding::Same));
    form_->addRow(tr("Padding:"), padding_);

    units_ = make_spin(this, "units", 1, 1'000'000);
    units_->setToolTip(
        tr("Output size; the last Dense layer needs one unit per class (46 for Reuters)"));
    form_->addRow(tr("Units:"), units_);

    activation_ = new QComboBox(this);
    activation_->setObjectName(QStringLiteral("activation"));
    for (ActivationKind kind : kActivations) {
        activation_->addItem(QString::fromStdString(std::string(activation_name(kind))),
                             static_cast<int>(kind));
    }
    form_->addRow(tr("Activation:"), activation_);

    use_bias_ = new QCheckBox(tr("Use bias"), this);
    use_bias_->setObjectName(QStringLiteral("useBias"));
    form_->addRow(QString(), use_bias_);

    rate_ = new QDoubleSpinBox(this);
    rate_->setObjectName(QStringLiteral("rate"));
    rate_->setRange(0.0, 0.95);
    rate_->setDecimals(2);
    rate_->setSingleStep(0.05);
    rate_->setKeyboardTracking(false);
    rate_->setToolTip(tr("Fraction of inputs set to zero during training (none at evaluation)"));
    form_->addRow(tr("Rate:"), rate_);

    for (QSpinBox* spin :
         {input_dim_, output_dim_, filters_, kernel_size_, pool_size_, strides_, units_}) {
        connect(spin, &QSpinBox::valueChanged, this, &LayerEditor::commit);
    }
    connect(rate_, &QDoubleSpinBox::valueChanged, this, &LayerEditor::commit);
    connect(padding_, &QComboBox::currentIndexChanged, this, &LayerEditor::commit);
    connect(activation_, &QComboBox::currentIndexChanged, this, &LayerEditor::commit);
    connect(use_bias_, &QCheckBox::toggled, this, &LayerEditor::commit);
    connect(name_, &QLineEdit::editingFinished, this, [this] {
        if (name_->text().toStdString() != config_.name) commit();
    });

    setLayer(nullptr);
}

void LayerEditor::setLayer(const LayerConfig* config) {
    loading_ = true;
    has_layer_ = config != nullptr;
    if (config == nullptr) {
        config_ = LayerConfig{};
        title_->setText(tr("Select a layer to edit its arguments."));
        showRowsFor(LayerKind::Invalid);
        loading_ = false;
        return;
    }
    config_ = *config;
    showTitle();
    name_->setText(QString::fromStdString(config_.name));
    input_dim_->setValue(static_cast<int>(config_.input_dim));
    output_dim_->setValue(static_cast<int>(config_.output_dim));
    filters_->setValue(config_.filters);
    kernel_size_->setValue(config_.kernel_size);
    pool_size_->setValue(config_.pool_size);
    strides_->setValue(config_.strides == config_.pool_size ? 0 : config_.strides);
    padding_->setCurrentIndex(std::max(0, padding_->findData(static_cast<int>(config_.padding))));
    units_->setValue(config_.units);
    activation_->setCurrentIndex(
        std::max(0, activation_->findData(static_cast<int>(config_.activation))));
    use_bias_->setChecked(config_.use_bias);
    rate_->setValue(config_.rate);
    showRowsFor(config_.kind);
    loading_ = false;
}

void LayerEditor::showTitle() {
    title_->setText(tr("<b>%1</b> layer “%2”")
                        .arg(QString::fromStdString(std::string(layer_class_name(config_.kind))),
                             QString::fromStdString(config_.name).toHtmlEscaped()));
}

void LayerEditor::showRowsFor(LayerKind kind) {
    const bool any = kind != LayerKind::Invalid;
    const bool embedding = kind == LayerKind::Embedding;
    const bool conv = kind == LayerKind::Conv1D;
    const bool pool = kind == LayerKind::MaxPooling1D;
    const bool dense = kind == LayerKind::Dense;
    form_->setRowVisible(name_, any);
    form_->setRowVisible(input_dim_, embedding);
    form_->setRowVisible(output_dim_, embedding);
    form_->setRowVisible(filters_, conv);
    form_->setRowVisible(kernel_size_, conv);
    form_->setRowVisible(pool_size_, pool);
    form_->setRowVisible(strides_, pool);
    form_->setRowVisible(padding_, conv || pool);
    form_->setRowVisible(units_, dense);
    form_->setRowVisible(activation_, conv || dense || kind == LayerKind::Activation);
    form_->setRowVisible(use_bias_, conv || dense);
    form_->setRowVisible(rate_, kind == LayerKind::Dropout);
}

void LayerEditor::commit() {
    if (loading_ || !has_layer_) return;
    config_.name = name_->text().trimmed().toStdString();
    switch (config_.kind) {
        case LayerKind::Embedding:
            config_.input_dim = input_dim_->value();
            config_.output_dim = output_dim_->value();
            break;
        case LayerKind::Conv1D:
            config_.filters = filters_->value();
            config_.kernel_size = kernel_size_->value();
            config_.padding = static_cast<Padding>(padding_->currentData().toInt());
            config_.activation = static_cast<ActivationKind>(activation_->currentData().toInt());
            config_.use_bias = use_bias_->isChecked();
            break;
        case LayerKind::MaxPooling1D:
            config_.pool_size = pool_size_->value();
            config_.strides = strides_->value();  // 0: Keras' default, the pool size
            config_.padding = static_cast<Padding>(padding_->currentData().toInt());
            break;
        case LayerKind::Dense:
            config_.units = units_->value();
            config_.activation = static_cast<ActivationKind>(activation_->currentData().toInt());
            config_.use_bias = use_bias_->isChecked();
            break;
        case LayerKind::Dropout:
            config_.rate = rate_->value();
            break;
        case LayerKind::Activation:
            config_.activation = static_cast<ActivationKind>(activation_->currentData().toInt());
            break;
        case LayerKind::GlobalMaxPooling1D:
        case LayerKind::Flatten:
        case LayerKind::Invalid:
            break;
    }
    showTitle();
    emit layerEdited(config_);
}

}  // namespace mirrorlab::ui
