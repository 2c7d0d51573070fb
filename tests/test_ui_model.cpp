// The model form: presets, live shape inference and errors naming the layer, layer editing and
// reordering, model files, compile options and their lints, settings.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/export/keras_file.h"
#include "core/optim/optimizer.h"
#include "ui/common/background_job.h"
#include "ui/model/model_panel.h"

using mirrorlab::EmbeddingUpdate;
using mirrorlab::ActivationKind;
using mirrorlab::Model;
using mirrorlab::OptimizerKind;
using mirrorlab::ui::ModelPanel;

namespace {

template <typename T>
T* child(const QWidget& parent, const char* name) {
    T* widget = parent.findChild<T*>(QString::fromLatin1(name));
    if (widget == nullptr) qFatal("no child named %s", name);
    return widget;
}

QString summary(const ModelPanel& panel) {
    return child<QPlainTextEdit>(panel, "summaryText")->toPlainText();
}

int row_named(const ModelPanel& panel, const QString& name) {
    auto* table = child<QTableWidget>(panel, "layerTable");
    for (int r = 0; r < table->rowCount(); ++r) {
        if (table->item(r, 0)->text() == name) return r;
    }
    return -1;
}

QStringList row_names(const ModelPanel& panel) {
    auto* table = child<QTableWidget>(panel, "layerTable");
    QStringList names;
    for (int r = 0; r < table->rowCount(); ++r) names << table->item(r, 0)->text();
    return names;
}

void select_row(ModelPanel& panel, int row) {
    child<QTableWidget>(panel, "layerTable")->selectRow(row);
}

void set_combo_data(QComboBox* combo, const QVariant& data) {
    const int index = combo->findData(data);
    QVERIFY2(index >= 0, qPrintable(data.toString()));
    combo->setCurrentIndex(index);
}

bool write_bytes(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

bool write_bytes(const QString& path, const std::vector<std::uint8_t>& bytes) {
    return write_bytes(path, QByteArray(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size())));
}

}  // namespace

class TestUiModel : public QObject {
    Q_OBJECT
  private slots:
    void tutorialPresetSummary();
    void presetsAreValidForReuters();
    void editingDenseUnitsUpdatesParams();
    void impossibleShapeNamesTheLayer();
    void everyLayerTypeCanBeAdded();
    void globalAveragePoolingFromTheMenu();
    void spatialDropoutFromTheMenu();
    void moveUpAndDownReorders();
    void saveLoadRoundTrip();
    void malformedFileKeepsTheModel();
    void kerasFileLoadsWithItsWeights();
    void kerasWeightsFileLoadsIntoTheFormsModel();
    void loadReadsTheFileOffTheWindowsThread();
    void optimizerChangeResetsLearningRate();
    void trainConfigCarriesTheForm();
    void settingsTheFormDoesNotShowAreNamed();
    void aSettingsFilesNadamScheduleIsKept();
    void fromLogitsLint();
    void unevenBatchLint();
    void highLearningRateLint();
    void settingsRoundTrip();
    void modelFolderFollowsXdg();
    void screenshot();
};

void TestUiModel::tutorialPresetSummary() {
    ModelPanel panel;
    QVERIFY(panel.presetCount() >= 3);
    QCOMPARE(panel.presetName(0), QStringLiteral("Keras tutorial (Reuters, 332,856 params)"));
    panel.selectPreset(0);
    QVERIFY(panel.model() != nullptr);
    QVERIFY(panel.modelError().isEmpty());
    QVERIFY(summary(panel).contains(QStringLiteral("Total params: 332,856")));
    QCOMPARE(summary(panel), QString::fromStdString(Model::reference().summary()));
    const int embedding = row_named(panel, QStringLiteral("embedding"));
    QCOMPARE(embedding, 0);
    auto* table = child<QTableWidget>(panel, "layerTable");
    QCOMPARE(table->rowCount(), 7);
    QCOMPARE(table->item(embedding, 4)->text(), QStringLiteral("216874"));
    QCOMPARE(table->item(embedding, 3)->text(), QStringLiteral("(None, 300, 7)"));
    QCOMPARE(child<QLabel>(panel, "totalParams")->text(), QStringLiteral("Total params: 332,856"));
    QCOMPARE(child<QSpinBox>(panel, "sequenceLength")->value(), 300);
}

void TestUiModel::presetsAreValidForReuters() {
    ModelPanel panel;
    QSet<QString> summaries;
    for (int i = 0; i < panel.presetCount(); ++i) {
        panel.selectPreset(i);
        const auto model = panel.model();
        QVERIFY2(model != nullptr, qPrintable(panel.modelError()));
        QCOMPARE(model->input_length(), 300);
        QCOMPARE(model->num_classes(), 46);
        QCOMPARE(model->vocabulary_size(), std::int64_t{30'982});
        QCOMPARE(model->output_activation(), ActivationKind::Softmax);
        // The label states the real count.
        QVERIFY2(panel.presetName(i).contains(
                     QString::fromStdString(mirrorlab::format_thousands(model->total_params()))),
                 qPrintable(panel.presetName(i)));
        summaries.insert(summary(panel));
    }
    QCOMPARE(summaries.size(), panel.presetCount());
}

void TestUiModel::editingDenseUnitsUpdatesParams() {
    ModelPanel panel;
    QSignalSpy changed(&panel, &ModelPanel::modelChanged);
    select_row(panel, row_named(panel, QStringLiteral("dense")));
    auto* units = child<QSpinBox>(panel, "units");
    QCOMPARE(units->value(), 46);
    units->setValue(10);
    QVERIFY(changed.count() >= 1);
    // Flatten gives 2336 features: 2336 * 10 + 10 instead of 2336 * 46 + 46.
    const std::int64_t expected = 332'856 - 107'502 + 23'370;
    QVERIFY(panel.model() != nullptr);
    QCOMPARE(panel.model()->total_params(), expected);
    QVERIFY(summary(panel).contains(QStringLiteral("Total params: 248,724")));
    auto* table = child<QTableWidget>(panel, "layerTable");
    QCOMPARE(table->item(6, 4)->text(), QStringLiteral("23370"));
    QCOMPARE(table->item(6, 3)->text(), QStringLiteral("(None, 10)"));
    QCOMPARE(child<QComboBox>(panel, "preset")->currentText(), QStringLiteral("Custom model"));
}

void TestUiModel::impossibleShapeNamesTheLayer() {
    ModelPanel panel;
    panel.show();
    select_row(panel, row_named(panel, QStringLiteral("max_pooling1d_1")));  // (None, 73, 32)
    auto* add = panel.findChild<QAction*>(QStringLiteral("addConv1D"));
    QVERIFY(add != nullptr);
    add->trigger();
    QCOMPARE(row_named(panel, QStringLiteral("conv1d_2")), 5);  // inserted after the selection
    QVERIFY(panel.model() != nullptr);
    child<QSpinBox>(panel, "kernelSize")->setValue(100);

    QVERIFY(panel.model() == nullptr);
    QVERIFY(panel.modelError().contains(QStringLiteral("conv1d_2")));
    QVERIFY(panel.modelError().contains(QStringLiteral("kernel_size 100")));
    QVERIFY(panel.modelError().contains(QStringLiteral("73 steps")));
    auto* error = child<QLabel>(panel, "modelError");
    QVERIFY(error->isVisible());
    QVERIFY(error->text().contains(QStringLiteral("conv1d_2")));
    QVERIFY(!child<QLabel>(panel, "totalParams")->isVisible());
    QVERIFY(!summary(panel).contains(QStringLiteral("Total params")));
    QVERIFY(summary(panel).contains(QStringLiteral("kernel_size 100")));
    auto* table = child<QTableWidget>(panel, "layerTable");
    QVERIFY(table->item(5, 0)->data(Qt::BackgroundRole).isValid());  // highlighted
    QVERIFY(!table->item(4, 0)->data(Qt::BackgroundRole).isValid());
    QCOMPARE(table->item(4, 3)->text(),
             QStringLiteral("(None, 73, 32)"));  // layers before it still infer
    QCOMPARE(table->item(6, 3)->text(), QStringLiteral("?"));
    QVERIFY(!child<QPushButton>(panel, "saveModel")->isEnabled());

    QTest::mouseClick(child<QPushButton>(panel, "removeLayer"), Qt::LeftButton);
    QVERIFY(panel.model() != nullptr);
    QVERIFY(panel.modelError().isEmpty());
    QVERIFY(!error->isVisible());
    QVERIFY(summary(panel).contains(QStringLiteral("Total params: 332,856")));
    QVERIFY(!table->item(5, 0)->data(Qt::BackgroundRole).isValid());
}

// The add menu is the layer registry: one action per type, each adding a layer the form names
// and shows (the arguments editor shows exactly the type's arguments).
void TestUiModel::everyLayerTypeCanBeAdded() {
    ModelPanel panel;
    panel.show();
    auto* menu = panel.findChild<QMenu*>(QStringLiteral("addLayerMenu"));
    QVERIFY(menu != nullptr);
    QStringList actions;
    for (QAction* action : menu->actions()) actions << action->objectName();
    QStringList expected;
    for (const mirrorlab::LayerType* type : mirrorlab::layer_types()) {
        expected << QStringLiteral("add") + QString::fromLatin1(type->class_name.data(), static_cast<int>(type->class_name.size()));
    }
    QCOMPARE(actions, expected);
    for (const mirrorlab::LayerType* type : mirrorlab::layer_types()) {
        select_row(panel, 0);
        const int rows = child<QTableWidget>(panel, "layerTable")->rowCount();
        panel.findChild<QAction*>(expected[static_cast<int>(type->kind) - 1])->trigger();
        auto* table = child<QTableWidget>(panel, "layerTable");
        QCOMPARE(table->rowCount(), rows + 1);
        QCOMPARE(table->item(1, 1)->text(), QString::fromLatin1(type->class_name.data(), static_cast<int>(type->class_name.size())));
        for (const mirrorlab::ArgumentSpec* spec : mirrorlab::argument_specs()) {
            bool used = false;
            for (const mirrorlab::LayerArgument& argument : type->arguments) used = used || argument.spec == spec;
            auto* widget = panel.findChild<QWidget*>(QString::fromLatin1(spec->widget.data(), static_cast<int>(spec->widget.size())));
            QVERIFY(widget != nullptr);
            QVERIFY2(widget->isVisible() == used, spec->widget.data());
        }
        QTest::mouseClick(child<QPushButton>(panel, "removeLayer"), Qt::LeftButton);
    }
    QVERIFY(panel.model() != nullptr);
    QCOMPARE(panel.model()->total_params(), std::int64_t{332'856});
}

// GlobalAveragePooling1D in place of the tutorial's last pooling: the mean of each of conv1d_1's
// 32 channels over its 146 steps, no parameters, and the summary row Keras 2 prints.
void TestUiModel::globalAveragePoolingFromTheMenu() {
    ModelPanel panel;
    panel.show();
    select_row(panel, row_named(panel, QStringLiteral("max_pooling1d_1")));
    QTest::mouseClick(child<QPushButton>(panel, "removeLayer"), Qt::LeftButton);
    select_row(panel, row_named(panel, QStringLiteral("conv1d_1")));
    panel.findChild<QAction*>(QStringLiteral("addGlobalAveragePooling1D"))->trigger();
    const int row = row_named(panel, QStringLiteral("global_average_pooling1d"));
    QCOMPARE(row, 4);
    QVERIFY2(panel.model() != nullptr, qPrintable(panel.modelError()));
    auto* table = child<QTableWidget>(panel, "layerTable");
    QCOMPARE(table->item(row, 3)->text(), QStringLiteral("(None, 32)"));
    QCOMPARE(table->item(row, 4)->text(), QStringLiteral("0"));
    QCOMPARE(table->item(row + 1, 3)->text(), QStringLiteral("(None, 32)"));  // Flatten of a vector
    // Embedding, the two convolutions and Dense(46) on 32 features: 216874 + 2304 + 6176 + 1518.
    QCOMPARE(panel.model()->total_params(), std::int64_t{226'872});
    QVERIFY2(summary(panel).contains(QStringLiteral("global_average_pooling1d (Gl (None, 32)")), qPrintable(summary(panel)));
    QVERIFY(!child<QSpinBox>(panel, "poolSize")->isVisible());
    QVERIFY(child<QLineEdit>(panel, "layerName")->isVisible());
}

// SpatialDropout1D after the Embedding: its rate (Keras' examples' 0.2) in the shared rate
// widget, the arguments column, and the file it saves.
void TestUiModel::spatialDropoutFromTheMenu() {
    ModelPanel panel;
    panel.show();
    select_row(panel, row_named(panel, QStringLiteral("embedding")));
    panel.findChild<QAction*>(QStringLiteral("addSpatialDropout1D"))->trigger();
    const int row = row_named(panel, QStringLiteral("spatial_dropout1d"));
    QCOMPARE(row, 1);
    QVERIFY2(panel.model() != nullptr, qPrintable(panel.modelError()));
    QCOMPARE(panel.model()->total_params(), std::int64_t{332'856});
    auto* table = child<QTableWidget>(panel, "layerTable");
    QCOMPARE(table->item(row, 2)->text(), QStringLiteral("rate 0.2"));
    QCOMPARE(table->item(row, 3)->text(), QStringLiteral("(None, 300, 7)"));
    auto* rate = child<QDoubleSpinBox>(panel, "rate");
    QVERIFY(rate->isVisible());
    QCOMPARE(rate->value(), 0.2);
    // The shared rate widget says what this layer drops (channels); Dropout's says elements.
    QVERIFY2(rate->toolTip().contains(QStringLiteral("channels")), qPrintable(rate->toolTip()));
    rate->setValue(0.35);
    QCOMPARE(panel.model()->layers()[1].config.rate, 0.35);
    QCOMPARE(table->item(row, 2)->text(), QStringLiteral("rate 0.35"));
    QVERIFY(panel.model()->to_json_text().find("\"class_name\": \"SpatialDropout1D\"") != std::string::npos);
    panel.findChild<QAction*>(QStringLiteral("addDropout"))->trigger();
    QVERIFY2(rate->isVisible() && rate->toolTip().contains(QStringLiteral("inputs")) && !rate->toolTip().contains(QStringLiteral("channels")),
             qPrintable(rate->toolTip()));
}

void TestUiModel::moveUpAndDownReorders() {
    ModelPanel panel;
    const QStringList original = row_names(panel);
    select_row(panel, row_named(panel, QStringLiteral("flatten")));
    QTest::mouseClick(child<QPushButton>(panel, "moveUp"), Qt::LeftButton);
    QStringList moved = original;
    moved.swapItemsAt(4, 5);
    QCOMPARE(row_names(panel), moved);
    // Flatten before a pooling layer: the pooling layer now gets a vector and says so.
    QVERIFY(panel.model() == nullptr);
    QVERIFY(panel.modelError().contains(QStringLiteral("max_pooling1d_1")));
    QTest::mouseClick(child<QPushButton>(panel, "moveDown"), Qt::LeftButton);
    QCOMPARE(row_names(panel), original);
    QVERIFY(panel.model() != nullptr);
    QCOMPARE(panel.model()->total_params(), std::int64_t{332'856});

    select_row(panel, 0);
    QVERIFY(!child<QPushButton>(panel, "moveUp")->isEnabled());
    QVERIFY(child<QPushButton>(panel, "moveDown")->isEnabled());
    select_row(panel, 6);
    QVERIFY(!child<QPushButton>(panel, "moveDown")->isEnabled());
}

void TestUiModel::saveLoadRoundTrip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("model.json"));
    ModelPanel panel;
    select_row(panel, row_named(panel, QStringLiteral("conv1d")));
    child<QSpinBox>(panel, "filters")->setValue(48);
    child<QComboBox>(panel, "padding")->setCurrentIndex(1);  // same
    child<QSpinBox>(panel, "sequenceLength")->setValue(200);
    QVERIFY(panel.model() != nullptr);
    const QString saved = summary(panel);
    QString error;
    QVERIFY2(panel.saveFile(path, &error), qPrintable(error));
    QVERIFY(error.isEmpty());

    panel.selectPreset(1);
    QVERIFY(summary(panel) != saved);
    QVERIFY2(panel.loadFile(path, &error), qPrintable(error));
    QCOMPARE(summary(panel), saved);
    QCOMPARE(child<QSpinBox>(panel, "sequenceLength")->value(), 200);
    QCOMPARE(panel.model()->layers()[1].config.filters, 48);

    ModelPanel other;
    QVERIFY(other.loadFile(path, &error));
    QCOMPARE(summary(other), saved);
}

void TestUiModel::malformedFileKeepsTheModel() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("broken.json"));
    QVERIFY(write_bytes(path, "{\"input_length\": 300, \"layers\": [ {\"class_name\": \"Dense\", "));
    ModelPanel panel;
    panel.show();
    const QString before = summary(panel);
    QString error;
    QVERIFY(!panel.loadFile(path, &error));
    QVERIFY(!error.isEmpty());
    QVERIFY2(error.contains(QStringLiteral("broken.json")), qPrintable(error));
    QCOMPARE(summary(panel), before);
    QVERIFY(panel.model() != nullptr);
    auto* status = child<QLabel>(panel, "fileStatus");
    QVERIFY(status->isVisible());
    QCOMPARE(status->text(), error);

    // A well-formed file with an impossible model is refused the same way.
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QVERIFY(write_bytes(
        bad,
        R"({"input_length": 10, "layers": [{"class_name": "Embedding", "config": {"input_dim": 5, "output_dim": 2}},)"
        R"( {"class_name": "Conv1D", "config": {"filters": 4, "kernel_size": 20}}]})"));
    QVERIFY(!panel.loadFile(bad, &error));
    QVERIFY2(error.contains(QStringLiteral("kernel_size 20")), qPrintable(error));
    QCOMPARE(summary(panel), before);
    QVERIFY(!panel.loadFile(dir.filePath(QStringLiteral("missing.json")), &error));
    QCOMPARE(summary(panel), before);
}

// A .keras file brings its layers and, for the next run, its weights; they are dropped once the
// layers change, and a file that is not a .keras archive is refused with the model kept.
void TestUiModel::kerasFileLoadsWithItsWeights() {
    ModelPanel panel;
    panel.show();
    QString error;
    child<QComboBox>(panel, "optimizer")->setCurrentText(QStringLiteral("SGD"));
    QCOMPARE(panel.trainConfig().optimizer.kind, mirrorlab::OptimizerKind::SGD);
    QVERIFY2(panel.loadFile(QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/keras/small.keras"), &error), qPrintable(error));
    // The optimizer it was compiled with comes along (Nadam, Keras 3's semantics).
    QCOMPARE(panel.trainConfig().optimizer.kind, mirrorlab::OptimizerKind::Nadam);
    QCOMPARE(panel.trainConfig().optimizer.learning_rate, 0.001);
    QCOMPARE(panel.trainConfig().optimizer.embedding_update, mirrorlab::EmbeddingUpdate::Keras3);
    QVERIFY2(child<QLabel>(panel, "fileStatus")->text().contains(QStringLiteral("Optimizer from the file: Nadam")),
             qPrintable(child<QLabel>(panel, "fileStatus")->text()));
    QVERIFY(panel.model() != nullptr);
    QCOMPARE(panel.model()->layers().size(), std::size_t{8});
    QCOMPARE(panel.initialWeights().size(), static_cast<std::size_t>(panel.model()->total_params()));
    QVERIFY(child<QLabel>(panel, "fileStatus")->text().contains(QStringLiteral("weights")));
    panel.selectPreset(0);
    QVERIFY(panel.initialWeights().empty());

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fake.keras"));
    QVERIFY(write_bytes(path, "{\"class_name\": \"Sequential\"}"));
    const QString before = summary(panel);
    QVERIFY(!panel.loadFile(path, &error));
    QVERIFY2(error.contains(QStringLiteral("fake.keras")) && error.contains(QStringLiteral("not a .keras archive")),
             qPrintable(error));
    QCOMPARE(summary(panel), before);
    QVERIFY(panel.initialWeights().empty());
}

// A Keras .weights.h5 (model.save_weights()) fills the weights of the model in the form; one
// written for another model is refused by name, with nothing of it taken.
void TestUiModel::kerasWeightsFileLoadsIntoTheFormsModel() {
    ModelPanel panel;
    panel.show();
    QString error;
    QVERIFY2(panel.loadFile(QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/keras/small.keras"), &error), qPrintable(error));
    const mirrorlab::Model small = *panel.model();
    std::vector<float> weights(static_cast<std::size_t>(small.total_params()));
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = 0.001f * static_cast<float>(i % 997) - 0.4f;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("small.weights.h5"));
    QVERIFY(write_bytes(path, keras_weights_h5(small, weights, mirrorlab::OptimizerConfig::defaults(mirrorlab::OptimizerKind::Nadam))));
    const QString layers = summary(panel);
    QVERIFY2(panel.loadFile(path, &error), qPrintable(error));
    QCOMPARE(panel.initialWeights(), weights);
    QCOMPARE(summary(panel), layers);  // weights only: the form's layers stay
    QVERIFY(child<QLabel>(panel, "fileStatus")->text().contains(QStringLiteral("small.weights.h5")));

    // The tutorial's model in the form: the small model's weights do not fit it.
    panel.selectPreset(0);
    QVERIFY(!panel.loadFile(path, &error));
    QVERIFY2(error.contains(QStringLiteral("small.weights.h5")), qPrintable(error));
    QVERIFY(panel.initialWeights().empty());
}

// Load… reads the file on a thread of its own (a large model's .keras archive takes seconds, and
// the window froze for them): the panel says it is loading and Load waits; then the model is in
// the form with its weights, or the failure is said with the model kept. Weights read for a model
// the form no longer holds are not taken.
void TestUiModel::loadReadsTheFileOffTheWindowsThread() {
    ModelPanel panel;
    panel.show();
    const QString keras = QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/keras/small.keras");
    QVERIFY(panel.startLoadFile(keras));
    QVERIFY(panel.fileJob()->isRunning());  // the call returned before the file was taken in
    QVERIFY2(panel.fileStatus().startsWith(QStringLiteral("Loading ")), qPrintable(panel.fileStatus()));
    QVERIFY(!child<QPushButton>(panel, "loadModel")->isEnabled());
    QVERIFY(!panel.startLoadFile(keras));  // one file at a time
    QVERIFY(panel.fileJob()->waitForFinished(60000));
    QVERIFY(child<QPushButton>(panel, "loadModel")->isEnabled());
    QVERIFY2(panel.fileStatus().contains(QStringLiteral("with its weights")), qPrintable(panel.fileStatus()));
    QCOMPARE(panel.model()->layers().size(), std::size_t{8});
    QCOMPARE(panel.initialWeights().size(), static_cast<std::size_t>(panel.model()->total_params()));

    // A damaged file: said, and the model stays.
    QTemporaryDir dir;
    const QString fake = dir.filePath(QStringLiteral("fake.keras"));
    QVERIFY(write_bytes(fake, "not a zip archive"));
    const QString before = summary(panel);
    QVERIFY(panel.startLoadFile(fake));
    QVERIFY(panel.fileJob()->waitForFinished(60000));
    QVERIFY2(panel.fileStatus().contains(QStringLiteral("Could not load the model (the current one is kept)")) &&
                 panel.fileStatus().contains(QStringLiteral("fake.keras")),
             qPrintable(panel.fileStatus()));
    QCOMPARE(summary(panel), before);

    // A preset chosen while the file is read (or Train again, or an edit): it stays.
    QVERIFY(panel.startLoadFile(keras));
    panel.selectPreset(0);
    const QString chosen = summary(panel);
    QVERIFY(panel.fileJob()->waitForFinished(60000));
    QVERIFY2(panel.fileStatus().contains(QStringLiteral("the form changed while")), qPrintable(panel.fileStatus()));
    QCOMPARE(summary(panel), chosen);
    QVERIFY(panel.initialWeights().empty());
    QVERIFY(panel.startLoadFile(keras));
    QVERIFY(panel.fileJob()->waitForFinished(60000));

    // Weights for the form's model, and the form changed before they arrived: not taken.
    const mirrorlab::Model small = *panel.model();
    const std::vector<float> weights(static_cast<std::size_t>(small.total_params()), 0.25f);
    const QString h5 = dir.filePath(QStringLiteral("small.weights.h5"));
    QVERIFY(write_bytes(h5, keras_weights_h5(small, weights, mirrorlab::OptimizerConfig::defaults(mirrorlab::OptimizerKind::Nadam))));
    QVERIFY(panel.startLoadFile(h5));
    panel.selectPreset(0);
    QVERIFY(panel.fileJob()->waitForFinished(60000));
    QVERIFY2(panel.fileStatus().contains(QStringLiteral("changed while its weights were read")), qPrintable(panel.fileStatus()));
    QVERIFY(panel.initialWeights().empty());
}

void TestUiModel::optimizerChangeResetsLearningRate() {
    ModelPanel panel;
    auto* optimizer = child<QComboBox>(panel, "optimizer");
    auto* learning_rate = child<QDoubleSpinBox>(panel, "learningRate");
    QCOMPARE(optimizer->currentText(), QStringLiteral("Nadam"));
    QCOMPARE(learning_rate->value(), 0.001);
    learning_rate->setValue(0.003);
    QCOMPARE(panel.trainConfig().optimizer.learning_rate, 0.003);

    set_combo_data(optimizer, static_cast<int>(OptimizerKind::SGD));
    QCOMPARE(learning_rate->value(), 0.01);
    QCOMPARE(panel.trainConfig().optimizer.kind, OptimizerKind::SGD);
    QCOMPARE(panel.trainConfig().optimizer.learning_rate, 0.01);
    auto* momentum = child<QDoubleSpinBox>(panel, "momentum");
    momentum->setValue(0.9);
    QCOMPARE(panel.trainConfig().optimizer.momentum, 0.9);

    set_combo_data(optimizer, static_cast<int>(OptimizerKind::Adam));
    QCOMPARE(learning_rate->value(), 0.001);
    QCOMPARE(panel.trainConfig().optimizer.kind, OptimizerKind::Adam);
    QCOMPARE(panel.trainConfig().optimizer.momentum, 0.0);
    learning_rate->setValue(0.0002);
    QCOMPARE(learning_rate->text(), QStringLiteral("0.0002"));
    learning_rate->stepBy(1);
    QCOMPARE(learning_rate->value(), 0.0005);
    set_combo_data(optimizer, static_cast<int>(OptimizerKind::RMSprop));
    QCOMPARE(learning_rate->value(), 0.001);

    // Keras semantics: the tutorial's tf.keras 2 by default; Keras 3 changes the Embedding update
    // and Nadam's schedule together, and the description under the optimizer says so.
    set_combo_data(optimizer, static_cast<int>(OptimizerKind::Nadam));
    auto* semantics = child<QComboBox>(panel, "kerasSemantics");
    QCOMPARE(panel.trainConfig().optimizer.embedding_update, EmbeddingUpdate::TF2);
    QCOMPARE(panel.trainConfig().optimizer.nadam_schedule_decay, 0.004);
    set_combo_data(semantics, static_cast<int>(EmbeddingUpdate::Keras3));
    QCOMPARE(panel.trainConfig().optimizer.embedding_update, EmbeddingUpdate::Keras3);
    QCOMPARE(panel.trainConfig().optimizer.nadam_schedule_decay, 1.0);
    QVERIFY2(child<QLabel>(panel, "optimizerDescription")->text().contains(QStringLiteral("embedding_update='keras3'")),
             qPrintable(child<QLabel>(panel, "optimizerDescription")->text()));
    set_combo_data(optimizer, static_cast<int>(OptimizerKind::Adam));  // survives an optimizer change
    QCOMPARE(panel.trainConfig().optimizer.embedding_update, EmbeddingUpdate::Keras3);
}

void TestUiModel::trainConfigCarriesTheForm() {
    ModelPanel panel;
    QSignalSpy changed(&panel, &ModelPanel::trainConfigChanged);
    child<QSpinBox>(panel, "batchSize")->setValue(64);
    child<QSpinBox>(panel, "epochs")->setValue(3);
    child<QSpinBox>(panel, "seed")->setValue(1234);
    child<QCheckBox>(panel, "earlyStopping")->setChecked(true);
    set_combo_data(child<QComboBox>(panel, "monitor"), QStringLiteral("val_accuracy"));
    child<QSpinBox>(panel, "patience")->setValue(2);
    child<QDoubleSpinBox>(panel, "minDelta")->setValue(0.01);
    child<QCheckBox>(panel, "restoreBestWeights")->setChecked(true);
    QVERIFY(changed.count() >= 8);
    const mirrorlab::TrainConfig config = panel.trainConfig();
    QCOMPARE(config.batch_size, 64);
    QCOMPARE(config.epochs, 3);
    QCOMPARE(config.seed, std::uint64_t{1234});
    QVERIFY(config.early_stopping.enabled);
    QCOMPARE(config.early_stopping.monitor, std::string("val_accuracy"));
    QCOMPARE(config.early_stopping.patience, 2);
    QCOMPARE(config.early_stopping.min_delta, 0.01);
    QVERIFY(config.early_stopping.restore_best_weights);
    QCOMPARE(config.optimizer.kind, OptimizerKind::Nadam);
    QVERIFY(!config.from_logits);
    // Top-k is fixed at 5 (the engine's metric) and says so.
    auto* top_k = child<QSpinBox>(panel, "topK");
    QCOMPARE(top_k->value(), 5);
    QVERIFY(!top_k->isEnabled());
    QVERIFY(top_k->toolTip().contains(QStringLiteral("top-5")));
}

// A run trained again from mirrorlab-cli brings settings the form has no field for: they are named
// under the form, with a button that puts the defaults back. Before, "5 steps per epoch" stayed on
// unseen for every later run of the session; and a config without step events left the charts bare.
void TestUiModel::settingsTheFormDoesNotShowAreNamed() {
    ModelPanel panel;
    panel.show();
    auto* note = child<QLabel>(panel, "settingsNotShown");
    QVERIFY(!note->isVisible());
    mirrorlab::TrainConfig cli;
    cli.max_steps_per_epoch = 5;
    cli.shuffle = false;
    cli.optimizer.epsilon = 1e-4;
    cli.optimizer.learning_rate = 0.002;
    cli.emit_step_events = false;
    cli.prefetch_batches = 7;
    cli.early_stopping.start_from_epoch = 3;
    panel.setTrainConfig(cli);
    mirrorlab::TrainConfig config = panel.trainConfig();
    QCOMPARE(config.max_steps_per_epoch, std::int64_t{5});
    QVERIFY(!config.shuffle);
    QCOMPARE(config.optimizer.epsilon, 1e-4);
    QVERIFY(config.emit_step_events);  // the charts' own
    QCOMPARE(config.prefetch_batches, mirrorlab::TrainConfig{}.prefetch_batches);
    QVERIFY(note->isVisible());
    for (const char* named : {"5 steps per epoch at most", "no shuffling", "epsilon=0.0001", "start_from_epoch=3"}) {
        QVERIFY2(note->text().contains(QLatin1String(named)), qPrintable(note->text()));
    }
    QTest::mouseClick(child<QPushButton>(panel, "useDefaultsForSettingsNotShown"), Qt::LeftButton);
    config = panel.trainConfig();
    QCOMPARE(config.max_steps_per_epoch, std::int64_t{0});
    QCOMPARE(config.early_stopping.start_from_epoch, 0);
    QVERIFY(config.shuffle);
    QCOMPARE(config.optimizer.epsilon, 1e-7);
    QCOMPARE(config.optimizer.learning_rate, 0.002);  // what the form shows stays
    QVERIFY(!note->isVisible());
    // Another optimizer starts from its defaults: the note follows what will train.
    cli.optimizer.epsilon = 1e-4;
    panel.setTrainConfig(cli);
    QVERIFY(note->text().contains(QStringLiteral("epsilon")));
    set_combo_data(child<QComboBox>(panel, "optimizer"), static_cast<int>(OptimizerKind::SGD));
    QVERIFY2(!note->text().contains(QStringLiteral("epsilon")), qPrintable(note->text()));
    QVERIFY(note->text().contains(QStringLiteral("no shuffling")));
}

// A --config file's Nadam schedule_decay (neither tf.keras 2's 0.004 nor Keras 3's 1.0) was replaced
// by the form's Keras semantics when the run was trained again: another optimizer trained, unseen.
void TestUiModel::aSettingsFilesNadamScheduleIsKept() {
    ModelPanel panel;
    panel.show();
    auto* note = child<QLabel>(panel, "settingsNotShown");
    mirrorlab::TrainConfig file;
    file.optimizer.nadam_schedule_decay = 0.01;
    panel.setTrainConfig(file);
    QCOMPARE(panel.trainConfig().optimizer.nadam_schedule_decay, 0.01);
    QVERIFY2(note->isVisible() && note->text().contains(QStringLiteral("schedule_decay=0.01")), qPrintable(note->text()));
    // Choosing another generation takes its schedule, and the note has nothing more to say.
    auto* semantics = child<QComboBox>(panel, "kerasSemantics");
    set_combo_data(semantics, static_cast<int>(EmbeddingUpdate::Keras3));
    QCOMPARE(panel.trainConfig().optimizer.nadam_schedule_decay, 1.0);
    QVERIFY(!note->isVisible());
    set_combo_data(semantics, static_cast<int>(EmbeddingUpdate::TF2));
    QCOMPARE(panel.trainConfig().optimizer.nadam_schedule_decay, 0.01);  // the file's, with its generation
    QTest::mouseClick(child<QPushButton>(panel, "useDefaultsForSettingsNotShown"), Qt::LeftButton);
    QCOMPARE(panel.trainConfig().optimizer.nadam_schedule_decay, 0.004);
    QVERIFY(!note->isVisible());
}

void TestUiModel::fromLogitsLint() {
    ModelPanel panel;
    panel.show();
    QVERIFY(panel.lints().isEmpty());
    child<QCheckBox>(panel, "fromLogits")->setChecked(true);
    QVERIFY(panel.trainConfig().from_logits);
    QCOMPARE(panel.lints().size(), 1);
    QVERIFY(panel.lints().front().contains(QStringLiteral("already applies softmax")));
    QVERIFY(
        panel.lints().front().contains(QStringLiteral("from_logits=True would apply it twice")));
    QVERIFY(child<QLabel>(panel, "lossLint")->isVisible());
    // A linear output is what from_logits is for.
    select_row(panel, row_named(panel, QStringLiteral("dense")));
    set_combo_data(child<QComboBox>(panel, "activation"), static_cast<int>(ActivationKind::Linear));
    QVERIFY(panel.lints().isEmpty());
    QVERIFY(!child<QLabel>(panel, "lossLint")->isVisible());
    child<QCheckBox>(panel, "fromLogits")->setChecked(false);
    QCOMPARE(panel.lints().size(), 1);
    QVERIFY(panel.lints().front().contains(QStringLiteral("logits")));
}

void TestUiModel::unevenBatchLint() {
    ModelPanel panel;
    panel.show();
    panel.setTrainingSamples(8'982);
    panel.setReplicaCount(2);
    auto* split = child<QLabel>(panel, "batchSplit");
    QCOMPARE(split->text(),
             QStringLiteral("32 global = 16 per replica × 2 replicas · 281 steps per epoch"));
    QVERIFY(panel.lints().isEmpty());
    child<QSpinBox>(panel, "batchSize")->setValue(33);
    QVERIFY(split->text().contains(QStringLiteral("17 + 16")));
    QVERIFY(split->text().contains(QStringLiteral("273 steps per epoch")));
    QCOMPARE(panel.lints().size(), 1);
    QVERIFY2(panel.lints().front().contains(QStringLiteral("33 over 2 replicas: 17 + 16")),
             qPrintable(panel.lints().front()));
    QVERIFY(panel.lints().front().contains(QStringLiteral("32 or 34")));
    QVERIFY(child<QLabel>(panel, "batchLint")->isVisible());
    panel.setReplicaCount(1);
    QVERIFY(panel.lints().isEmpty());
    QCOMPARE(split->text(),
             QStringLiteral("33 global = 33 per replica × 1 replica · 273 steps per epoch"));
}

void TestUiModel::highLearningRateLint() {
    ModelPanel panel;
    auto* learning_rate = child<QDoubleSpinBox>(panel, "learningRate");
    learning_rate->setValue(0.1);
    QVERIFY(panel.lints().isEmpty());
    learning_rate->setValue(0.5);
    QCOMPARE(panel.lints().size(), 1);
    QVERIFY(panel.lints().front().contains(QStringLiteral("unusually high for Nadam")));
    set_combo_data(child<QComboBox>(panel, "optimizer"), static_cast<int>(OptimizerKind::SGD));
    QVERIFY(panel.lints().isEmpty());  // reset to 0.01
}

void TestUiModel::settingsRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("settings.ini"));
    QString saved_summary;
    {
        ModelPanel panel;
        select_row(panel, row_named(panel, QStringLiteral("dense")));
        child<QSpinBox>(panel, "units")->setValue(46);
        select_row(panel, row_named(panel, QStringLiteral("conv1d_1")));
        child<QSpinBox>(panel, "kernelSize")->setValue(7);
        set_combo_data(child<QComboBox>(panel, "optimizer"), static_cast<int>(OptimizerKind::Adam));
        child<QDoubleSpinBox>(panel, "learningRate")->setValue(0.0005);
        child<QSpinBox>(panel, "batchSize")->setValue(48);
        child<QCheckBox>(panel, "earlyStopping")->setChecked(true);
        child<QSpinBox>(panel, "patience")->setValue(3);
        set_combo_data(child<QComboBox>(panel, "kerasSemantics"), static_cast<int>(EmbeddingUpdate::Dense));
        saved_summary = summary(panel);
        QSettings settings(path, QSettings::IniFormat);
        panel.saveSettings(settings);
    }
    const QSettings settings(path, QSettings::IniFormat);
    ModelPanel restored;
    restored.restoreSettings(settings);
    QCOMPARE(summary(restored), saved_summary);
    const auto config = restored.trainConfig();
    QCOMPARE(config.optimizer.kind, OptimizerKind::Adam);
    QCOMPARE(config.optimizer.learning_rate, 0.0005);
    QCOMPARE(config.optimizer.embedding_update, EmbeddingUpdate::Dense);
    QCOMPARE(config.batch_size, 48);
    QVERIFY(config.early_stopping.enabled);
    QCOMPARE(config.early_stopping.patience, 3);

    ModelPanel preset;
    QSettings preset_settings(dir.filePath(QStringLiteral("preset.ini")), QSettings::IniFormat);
    preset.selectPreset(2);
    preset.saveSettings(preset_settings);
    ModelPanel preset_restored;
    preset_restored.restoreSettings(preset_settings);
    QCOMPARE(child<QComboBox>(preset_restored, "preset")->currentIndex(), 2);
    QCOMPARE(summary(preset_restored), summary(preset));
}

// An installed MirrorLab opens Load on its presets (/usr/share/mirrorlab/presets) until the user
// has saved models of their own under $XDG_DATA_HOME; nothing points into a source tree.
void TestUiModel::modelFolderFollowsXdg() {
    QTemporaryDir user;
    QTemporaryDir system;
    QVERIFY(user.isValid() && system.isValid());
    const QByteArray old_home = qgetenv("XDG_DATA_HOME");
    const QByteArray old_dirs = qgetenv("XDG_DATA_DIRS");
    qputenv("XDG_DATA_HOME", user.path().toUtf8());
    qputenv("XDG_DATA_DIRS", system.path().toUtf8());
    const QString presets = system.filePath(QStringLiteral("mirrorlab/presets"));
    const QString models = user.filePath(QStringLiteral("mirrorlab/models"));
    const QString with_nothing = ModelPanel::modelFolder();
    QVERIFY(QDir().mkpath(presets));
    const QString with_presets = ModelPanel::modelFolder();
    QVERIFY(QDir().mkpath(models));
    const QString with_models = ModelPanel::modelFolder();
    qputenv("XDG_DATA_HOME", old_home);
    qputenv("XDG_DATA_DIRS", old_dirs);
    QCOMPARE(with_nothing, QDir::homePath());
    QCOMPARE(QDir::cleanPath(with_presets), QDir::cleanPath(presets));
    QCOMPARE(with_models, models);
}

void TestUiModel::screenshot() {
    ModelPanel panel;
    panel.setTrainingSamples(8'982);
    panel.setReplicaCount(2);
    select_row(panel, row_named(panel, QStringLiteral("conv1d")));
    child<QCheckBox>(panel, "fromLogits")->setChecked(true);
    child<QSpinBox>(panel, "batchSize")->setValue(33);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    // The whole form at its natural height, as a tall dock shows it.
    auto* content = panel.findChild<QScrollArea*>()->widget();
    QCoreApplication::processEvents();
    panel.resize(760, content->sizeHint().height() + 8);
    QCoreApplication::processEvents();
    QVERIFY(panel.grab().save(QStringLiteral("/tmp/model_panel.png")));

    select_row(panel, row_named(panel, QStringLiteral("max_pooling1d_1")));
    panel.findChild<QAction*>(QStringLiteral("addConv1D"))->trigger();
    child<QSpinBox>(panel, "kernelSize")->setValue(100);
    QVERIFY(!panel.modelError().isEmpty());
    QCoreApplication::processEvents();
    panel.resize(760, content->sizeHint().height() + 8);
    QCoreApplication::processEvents();
    QVERIFY(panel.grab().save(QStringLiteral("/tmp/model_panel_error.png")));
}

QTEST_MAIN(TestUiModel)
#include "test_ui_model.moc"
