#pragma once
// The argument editor for one layer of the Sequential model. The widgets come from the layer
// registry: one per argument any layer type takes (core/layers/arguments.h), shared by the types
// (only the rows of the shown type's arguments are visible), so each argument has one stable
// objectName ("units", "kernelSize", ...). Edits are reported as a whole new LayerConfig; the owner
// rebuilds the Model, which is what validates the arguments against the rest of the stack.
#include <QString>
#include <QWidget>

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.h"

class QFormLayout;
class QLabel;
class QLineEdit;

namespace mirrorlab {
struct ArgumentSpec;
}

namespace mirrorlab::ui {

// LayerConfig helpers for the model form's presets (the registry's form defaults, then these).
LayerConfig embedding_layer(std::string name, std::int64_t vocabulary, std::int64_t dims);
LayerConfig conv1d_layer(std::string name, int filters, int kernel_size, Padding padding,
                         ActivationKind activation = ActivationKind::ReLU);
LayerConfig max_pooling1d_layer(std::string name, int pool_size);
LayerConfig dense_layer(std::string name, int units, ActivationKind activation);
LayerConfig dropout_layer(std::string name, double rate);
// The layer type's summary of its arguments, translated: "64 filters, kernel 5, valid, relu".
QString layer_arguments_text(const LayerConfig& config);
// A text of the layer registry (a label, a tooltip) in the current language.
QString layer_text(std::string_view text);

class LayerEditor : public QWidget {
    Q_OBJECT
  public:
    explicit LayerEditor(QWidget* parent = nullptr);

    // Shows `config` (a copy is kept); null shows a hint to select a layer.
    void setLayer(const LayerConfig* config);

  signals:
    void layerEdited(const mirrorlab::LayerConfig& config);

  private:
    struct ArgumentRow {
        const ArgumentSpec* spec = nullptr;
        QWidget* widget = nullptr;
    };

    QWidget* makeWidget(const ArgumentSpec& spec);
    void showValue(const ArgumentRow& row);
    double widgetValue(const ArgumentRow& row) const;
    void showRowsFor(LayerKind kind);
    void showTitle();
    void commit();  // reads the widgets into config_ and emits layerEdited

    LayerConfig config_;
    bool has_layer_ = false;
    bool loading_ = false;

    QFormLayout* form_ = nullptr;
    QLabel* title_ = nullptr;
    QLineEdit* name_ = nullptr;
    std::vector<ArgumentRow> rows_;  // one per argument of any layer type, in the form's order
};

}  // namespace mirrorlab::ui
