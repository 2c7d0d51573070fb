#include "ui/model/layer_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

#include <cmath>

#include "core/layers/layer_type.h"

namespace mirrorlab::ui {

namespace {

constexpr ActivationKind kActivations[] = {ActivationKind::Linear, ActivationKind::ReLU,
                                           ActivationKind::Tanh, ActivationKind::Sigmoid,
                                           ActivationKind::Softmax};

QString qstr(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

// An argument's value as the arguments' summary writes it: "64", "0.25", "same", "relu".
QString value_text(const ArgumentSpec& spec, const LayerConfig& config) {
    const double value = spec.shown != nullptr ? spec.shown(config) : spec.get(config);
    switch (spec.type) {
        case ArgumentType::Integer:
            return QString::number(std::llround(value));
        case ArgumentType::Rate:
            return QString::number(value);
        case ArgumentType::Boolean:
            return value != 0.0 ? QStringLiteral("true") : QStringLiteral("false");
        case ArgumentType::Padding:
            return static_cast<Padding>(value) == Padding::Same ? QStringLiteral("same")
                                                                : QStringLiteral("valid");
        case ArgumentType::Activation:
            return qstr(activation_name(static_cast<ActivationKind>(value)));
        case ArgumentType::Invalid:
            break;
    }
    return {};
}

}  // namespace

QString layer_text(std::string_view text) {
    // Registry texts are string literals, so data() is NUL-terminated.
    return text.empty() ? QString() : QCoreApplication::translate("LayerType", text.data());
}

LayerConfig embedding_layer(std::string name, std::int64_t vocabulary, std::int64_t dims) {
    LayerConfig c = default_layer_config(LayerKind::Embedding, std::move(name));
    c.input_dim = vocabulary;
    c.output_dim = dims;
    return c;
}
LayerConfig conv1d_layer(std::string name, int filters, int kernel_size, Padding padding,
                         ActivationKind activation) {
    LayerConfig c = default_layer_config(LayerKind::Conv1D, std::move(name));
    c.filters = filters;
    c.kernel_size = kernel_size;
    c.padding = padding;
    c.activation = activation;
    return c;
}
LayerConfig max_pooling1d_layer(std::string name, int pool_size) {
    LayerConfig c = default_layer_config(LayerKind::MaxPooling1D, std::move(name));
    c.pool_size = pool_size;
    return c;
}
LayerConfig dense_layer(std::string name, int units, ActivationKind activation) {
    LayerConfig c = default_layer_config(LayerKind::Dense, std::move(name));
    c.units = units;
    c.activation = activation;
    return c;
}
LayerConfig dropout_layer(std::string name, double rate) {
    LayerConfig c = default_layer_config(LayerKind::Dropout, std::move(name));
    c.rate = rate;
    return c;
}

QString layer_arguments_text(const LayerConfig& c) {
    if (c.kind == LayerKind::Invalid) return {};
    const LayerType& type = layer_type(c.kind);
    if (type.arguments_text.empty()) return {};
    QString text = layer_text(type.arguments_text);
    for (const ArgumentSpec* spec : type.text_arguments) text = text.arg(value_text(*spec, c));
    for (const LayerArgument& argument : type.arguments) {
        const ArgumentSpec& spec = *argument.spec;
        if (spec.type == ArgumentType::Boolean && spec.get(c) == 0.0)
            text += layer_text(spec.off_text);
    }
    return text;
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
    connect(name_, &QLineEdit::editingFinished, this, [this] {
        if (name_->text().toStdString() != config_.name) commit();
    });

    for (const ArgumentSpec* spec : argument_specs()) {
        QWidget* widget = makeWidget(*spec);
        widget->setObjectName(qstr(spec->widget));
        if (!spec->tooltip.empty()) widget->setToolTip(layer_text(spec->tooltip));
        // A check box carries its own label.
        if (spec->type == ArgumentType::Boolean) {
            form_->addRow(QString(), widget);
        } else {
            form_->addRow(layer_text(spec->label), widget);
        }
        rows_.push_back({spec, widget});
    }

    setLayer(nullptr);
}

QWidget* LayerEditor::makeWidget(const ArgumentSpec& spec) {
    switch (spec.type) {
        case ArgumentType::Integer: {
            auto* spin = new QSpinBox(this);
            spin->setRange(static_cast<int>(spec.minimum), static_cast<int>(spec.maximum));
            spin->setGroupSeparatorShown(true);
            if (!spec.minimum_text.empty())
                spin->setSpecialValueText(layer_text(spec.minimum_text));
            // Commit on Enter, focus loss or the arrows: typing "128" should not build models for
            // 1 and 12.
            spin->setKeyboardTracking(false);
            connect(spin, &QSpinBox::valueChanged, this, &LayerEditor::commit);
            return spin;
        }
        case ArgumentType::Rate: {
            auto* spin = new QDoubleSpinBox(this);
            spin->setRange(spec.minimum, spec.maximum);
            spin->setDecimals(2);
            spin->setSingleStep(0.05);
            spin->setKeyboardTracking(false);
            connect(spin, &QDoubleSpinBox::valueChanged, this, &LayerEditor::commit);
            return spin;
        }
        case ArgumentType::Boolean: {
            auto* check = new QCheckBox(layer_text(spec.label), this);
            connect(check, &QCheckBox::toggled, this, &LayerEditor::commit);
            return check;
        }
        case ArgumentType::Padding: {
            auto* combo = new QComboBox(this);
            combo->addItem(tr("valid (no padding)"), static_cast<int>(Padding::Valid));
            combo->addItem(tr("same (keeps the length)"), static_cast<int>(Padding::Same));
            connect(combo, &QComboBox::currentIndexChanged, this, &LayerEditor::commit);
            return combo;
        }
        case ArgumentType::Activation: {
            auto* combo = new QComboBox(this);
            for (ActivationKind kind : kActivations) {
                combo->addItem(qstr(activation_name(kind)), static_cast<int>(kind));
            }
            connect(combo, &QComboBox::currentIndexChanged, this, &LayerEditor::commit);
            return combo;
        }
        case ArgumentType::Invalid:
            break;
    }
    return new QWidget(this);
}

void LayerEditor::showValue(const ArgumentRow& row) {
    const double value = row.spec->get(config_);
    if (auto* spin = qobject_cast<QSpinBox*>(row.widget)) {
        spin->setValue(static_cast<int>(std::llround(value)));
    } else if (auto* real = qobject_cast<QDoubleSpinBox*>(row.widget)) {
        real->setValue(value);
    } else if (auto* check = qobject_cast<QCheckBox*>(row.widget)) {
        check->setChecked(value != 0.0);
    } else if (auto* combo = qobject_cast<QComboBox*>(row.widget)) {
        combo->setCurrentIndex(std::max(0, combo->findData(static_cast<int>(value))));
    }
}

double LayerEditor::widgetValue(const ArgumentRow& row) const {
    if (auto* spin = qobject_cast<QSpinBox*>(row.widget)) return spin->value();
    if (auto* real = qobject_cast<QDoubleSpinBox*>(row.widget)) return real->value();
    if (auto* check = qobject_cast<QCheckBox*>(row.widget)) return check->isChecked() ? 1.0 : 0.0;
    if (auto* combo = qobject_cast<QComboBox*>(row.widget)) return combo->currentData().toInt();
    return 0.0;
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
    for (const ArgumentRow& row : rows_) showValue(row);
    showRowsFor(config_.kind);
    loading_ = false;
}

void LayerEditor::showTitle() {
    title_->setText(tr("<b>%1</b> layer “%2”")
                        .arg(QString::fromStdString(std::string(layer_class_name(config_.kind))),
                             QString::fromStdString(config_.name).toHtmlEscaped()));
}

void LayerEditor::showRowsFor(LayerKind kind) {
    form_->setRowVisible(name_, kind != LayerKind::Invalid);
    for (const ArgumentRow& row : rows_) {
        const LayerArgument* used = nullptr;
        if (kind != LayerKind::Invalid) {
            for (const LayerArgument& argument : layer_type(kind).arguments) {
                if (argument.spec == row.spec) used = &argument;
            }
        }
        form_->setRowVisible(row.widget, used != nullptr);
        // The type's own tooltip for the argument where it has one, else the argument's.
        if (used != nullptr) row.widget->setToolTip(layer_text(used->tooltip.empty() ? row.spec->tooltip : used->tooltip));
    }
}

void LayerEditor::commit() {
    if (loading_ || !has_layer_) return;
    config_.name = name_->text().trimmed().toStdString();
    for (const ArgumentRow& row : rows_) {
        for (const LayerArgument& argument : layer_type(config_.kind).arguments) {
            if (argument.spec == row.spec) row.spec->set(config_, widgetValue(row));
        }
    }
    showTitle();
    emit layerEdited(config_);
}

}  // namespace mirrorlab::ui
