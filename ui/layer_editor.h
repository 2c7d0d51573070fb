#pragma once
// The argument editor for one layer of the Sequential model. One set of widgets serves every layer
// type (only the rows the type uses are shown), so each argument has one stable objectName
// ("units", "kernelSize", ...). Edits are reported as a whole new LayerConfig; the owner rebuilds
// the Model, which is what validates the arguments against the rest of the stack.
#include <QString>
#include <QWidget>

#include <cstdint>
#include <string>

#include "core/model/model.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mirrorlab::ui {

// LayerConfig helpers shared by the model form and its presets.
std::string layer_name_stem(LayerKind kind);  // Keras' automatic name stem: "max_pooling1d"
// Sensible arguments for a freshly added layer (the person edits them next).
LayerConfig default_layer(LayerKind kind, std::string name = {});
LayerConfig embedding_layer(std::string name, std::int64_t vocabulary, std::int64_t dims);
LayerConfig conv1d_layer(std::string name, int filters, int kernel_size, Padding padding,
                         ActivationKind activation = ActivationKind::ReLU);
LayerConfig max_pooling1d_layer(std::string name, int pool_size);
LayerConfig dense_layer(std::string name, int units, ActivationKind activation);
LayerConfig dropout_layer(std::string name, double rate);
QString layer_arguments_text(const LayerConfig& config);  // "64 filters, kernel 5, valid, relu"
std::string output_shape_text(const Shape& shape);        // "(None, 300, 7)", as model.summary()

class LayerEditor : public QWidget {
    Q_OBJECT
  public:
    explicit LayerEditor(QWidget* parent = nullptr);

    // Shows `config` (a copy is kept); null shows a hint to select a layer.
    void setLayer(const LayerConfig* config);
    bool hasLayer() const { return has_layer_; }

  signals:
    void layerEdited(const mirrorlab::LayerConfig& config);

  private:
    void showRowsFor(LayerKind kind);
    void showTitle();
    void commit();  // reads the widgets into config_ and emits layerEdited

    LayerConfig config_;
    bool has_layer_ = false;
    bool loading_ = false;

    QFormLayout* form_ = nullptr;
    QLabel* title_ = nullptr;
    QLineEdit* name_ = nullptr;
    QSpinBox* input_dim_ = nullptr;
    QSpinBox* output_dim_ = nullptr;
    QSpinBox* filters_ = nullptr;
    QSpinBox* kernel_size_ = nullptr;
    QSpinBox* pool_size_ = nullptr;
    QSpinBox* strides_ = nullptr;
    QComboBox* padding_ = nullptr;
    QSpinBox* units_ = nullptr;
    QComboBox* activation_ = nullptr;
    QCheckBox* use_bias_ = nullptr;
    QDoubleSpinBox* rate_ = nullptr;
};

}  // namespace mirrorlab::ui
