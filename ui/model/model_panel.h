#pragma once
// The model form: the Sequential model's layers (add, remove, reorder, edit arguments), presets,
// model JSON files, the live Keras-style summary, and the compile/fit options. Every edit rebuilds
// the core Model, so shapes and parameter counts are always what the engine will build; an
// impossible model names the offending layer, highlights it, and blocks Start (modelError()).
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "core/model/model.h"
#include "core/train/trainer.h"

class QComboBox;
class QGroupBox;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QPushButton;
class QSettings;
class QSpinBox;
class QTableWidget;
class QVBoxLayout;

namespace mirrorlab::ui {

class BackgroundJob;
class CompileOptions;
class LayerEditor;

class ModelPanel : public QWidget {
    Q_OBJECT
  public:
    explicit ModelPanel(QWidget* parent = nullptr);
    ~ModelPanel() override;

    // The built model; null while the layers do not form a valid model (see modelError()).
    std::shared_ptr<const Model> model() const { return model_; }
    // Why the model cannot be built (names the layer); empty when model() is valid.
    QString modelError() const { return error_; }
    TrainConfig trainConfig() const;
    void setTrainConfig(const TrainConfig& config);  // the compile form's fields
    // Amber warnings: settings that train, but probably not as intended.
    QStringList lints() const;

    void setReplicaCount(int replicas);
    void setTrainingSamples(std::int64_t samples);

    // Replaces the layers (and sequence length and name) with `model`'s.
    void setModel(const Model& model);
    // Model JSON (ours or Keras' model.to_json()) or a Keras .keras file (layers and weights); on
    // failure *error says why and nothing changes.
    bool loadFile(const QString& path, QString* error);
    // The same with the file read off the GUI thread (Load…): the panel says it is loading, then
    // shows the model or why it could not (the current one kept). False when another file is still
    // being read, or the file cannot be started on (a weights file with no valid model in the form).
    bool startLoadFile(const QString& path);
    BackgroundJob* fileJob() const { return file_job_; }
    QString fileStatus() const;
    // The weights of the last .keras file loaded, while the layers are still that file's (the next
    // run starts from them: fine-tuning); empty otherwise.
    std::vector<float> initialWeights() const;
    bool saveFile(const QString& path, QString* error);
    // Where Load and Save open until a file was chosen: the user's saved models
    // ($XDG_DATA_HOME/mirrorlab/models) once they exist, else the installed presets
    // (mirrorlab/presets under $XDG_DATA_DIRS, e.g. /usr/share), else the home folder.
    static QString modelFolder();

    void selectPreset(int index);
    int presetCount() const { return static_cast<int>(presets_.size()); }
    QString presetName(int index) const;

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

  signals:
    void modelChanged();
    void trainConfigChanged();

  private:
    struct Preset {
        QString label;
        std::shared_ptr<const Model> model;
    };
    // What is known about one row even when the whole model is invalid.
    struct RowInfo {
        bool known = false;
        Shape output_shape;
        std::int64_t params = 0;
    };

    void buildFileRows(QWidget* content, QVBoxLayout* layout);
    QGroupBox* buildLayersBox(QWidget* parent);
    QGroupBox* buildSummaryBox(QWidget* parent);
    void connectControls();
    void buildPresets();
    void buildMenu();
    void applyPreset(int index);
    void markCustom();
    void addLayer(LayerKind kind);
    void removeLayer();
    void moveLayer(int delta);
    void onLayerEdited(const LayerConfig& config);
    void onSelectionChanged();
    void rebuild();
    std::vector<RowInfo> inferRows() const;
    void refreshTable(const std::vector<RowInfo>& rows);
    void refreshSummary(const std::vector<RowInfo>& rows);
    void updateButtons();
    void selectRow(int row);
    int currentRow() const;
    std::string uniqueName(LayerKind kind) const;
    void showFileStatus(const QString& text, bool error);
    struct FileContents;
    std::shared_ptr<FileContents> prepareRead(const QString& path) const;  // on the GUI thread
    static void readFile(FileContents& contents);                         // on any thread
    void applyFile(FileContents& contents);                                // on the GUI thread
    static bool isWeightsFile(const QString& path);
    QString showLoadFailure(const std::exception& failure);
    void browseLoad();
    void browseSave();

    std::vector<Preset> presets_;
    std::string name_ = "sequential";
    std::int32_t input_length_ = 300;
    std::vector<LayerConfig> configs_;
    std::shared_ptr<const Model> model_;
    std::shared_ptr<const Model> last_valid_;
    QString error_;
    int error_row_ = -1;
    std::size_t probe_count_ = 0;  // leading layers that inferRows() can still build
    bool updating_ = false;
    QString last_dir_;
    std::vector<float> keras_weights_;  // from a .keras file, for the model whose JSON is keras_model_json_
    std::string keras_model_json_;

    QComboBox* preset_ = nullptr;
    QPushButton* load_ = nullptr;
    QPushButton* save_ = nullptr;
    QLabel* file_status_ = nullptr;
    BackgroundJob* file_job_ = nullptr;  // a model file being read
    std::uint64_t form_revision_ = 0;     // counts the form's changes (modelChanged, trainConfigChanged)
    QSpinBox* sequence_length_ = nullptr;
    QTableWidget* table_ = nullptr;
    QPushButton* add_ = nullptr;
    QMenu* add_menu_ = nullptr;
    QPushButton* remove_ = nullptr;
    QPushButton* move_up_ = nullptr;
    QPushButton* move_down_ = nullptr;
    LayerEditor* editor_ = nullptr;
    QPlainTextEdit* summary_ = nullptr;
    QLabel* total_params_ = nullptr;
    QLabel* error_label_ = nullptr;
    CompileOptions* compile_ = nullptr;
};

}  // namespace mirrorlab::ui
