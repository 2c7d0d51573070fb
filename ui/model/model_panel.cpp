#include "ui/model/model_panel.h"

#include "core/export/keras_file.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStyle>
#include <QStyledItemDelegate>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>
#include <set>

#include "core/layers/layer_type.h"
#include "core/util/error.h"
#include "ui/common/background_job.h"
#include "ui/common/combo_box.h"
#include "ui/model/compile_options.h"
#include "ui/model/layer_editor.h"

namespace mirrorlab::ui {

namespace {

enum Column { kName = 0, kType, kArguments, kOutputShape, kParams, kColumnCount };

constexpr int kErrorRole = Qt::UserRole + 1;

// Selection paints over an item's background, and a freshly added (so selected) layer is often
// the one in error: the error row keeps a red look when selected too.
class ErrorRowDelegate : public QStyledItemDelegate {
  public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override {
        QStyleOptionViewItem styled(option);
        if (index.data(kErrorRole).toBool()) {
            styled.palette.setColor(QPalette::Highlight, QColor(0xb0, 0x00, 0x20));
            styled.palette.setColor(QPalette::HighlightedText, Qt::white);
        }
        QStyledItemDelegate::paint(painter, styled, index);
    }
};

const QString kSettingsPrefix = QStringLiteral("model/");

QString qstr(std::string_view text) {
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

QString word_wrap(const QString& text, int width) {
    QStringList lines;
    QString line;
    for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        if (!line.isEmpty() && line.size() + 1 + word.size() > width) {
            lines << line;
            line.clear();
        }
        line += (line.isEmpty() ? QString() : QStringLiteral(" ")) + word;
    }
    if (!line.isEmpty()) lines << line;
    return lines.join(QLatin1Char('\n'));
}

}  // namespace

ModelPanel::ModelPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("modelPanel"));
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    outer->addWidget(scroll);
    auto* content = new QWidget(scroll);
    scroll->setWidget(content);
    auto* layout = new QVBoxLayout(content);

    buildFileRows(content, layout);
    layout->addWidget(buildLayersBox(content), 1);  // a tall dock shows more layers
    auto* editor_box = new QGroupBox(tr("Layer arguments"), content);
    auto* editor_layout = new QVBoxLayout(editor_box);
    editor_ = new LayerEditor(editor_box);
    editor_->setObjectName(QStringLiteral("layerEditor"));
    editor_layout->addWidget(editor_);
    layout->addWidget(editor_box);

    layout->addWidget(buildSummaryBox(content));
    compile_ = new CompileOptions(content);
    layout->addWidget(compile_);

    buildPresets();
    buildMenu();
    connectControls();
    selectPreset(0);
}

// Presets, files and the sequence length.
void ModelPanel::buildFileRows(QWidget* content, QVBoxLayout* layout) {
    auto* preset_row = new QHBoxLayout;
    auto* preset_label = new QLabel(tr("Preset:"), content);
    preset_row->addWidget(preset_label);
    preset_ = new QComboBox(content);
    preset_->setObjectName(QStringLiteral("preset"));
    preset_label->setBuddy(preset_);
    preset_->setToolTip(tr("Ready-made models; the tutorial's comes first"));
    // The longest preset name would set the form's width (and scroll it sideways on a laptop): the
    // box takes the room there is (its list shows every name whole, see buildPresets).
    preset_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    preset_->setMinimumContentsLength(16);
    preset_row->addWidget(preset_, 1);
    load_ = new QPushButton(tr("Load…"), content);
    load_->setObjectName(QStringLiteral("loadModel"));
    load_->setToolTip(tr("Load a model JSON file (ours, or Keras' model.to_json()), a Keras .keras file with its weights, "
                         "or a Keras .weights.h5 for the model in the form"));
    preset_row->addWidget(load_);
    save_ = new QPushButton(tr("Save…"), content);
    save_->setObjectName(QStringLiteral("saveModel"));
    save_->setToolTip(tr("Save the model's layers as JSON"));
    preset_row->addWidget(save_);
    layout->addLayout(preset_row);
    file_status_ = new QLabel(content);
    file_status_->setObjectName(QStringLiteral("fileStatus"));
    file_status_->setWordWrap(true);
    file_status_->setTextFormat(Qt::PlainText);
    file_status_->setVisible(false);
    layout->addWidget(file_status_);

    auto* length_row = new QHBoxLayout;
    auto* length_label = new QLabel(tr("Sequence length:"), content);
    length_row->addWidget(length_label);
    sequence_length_ = new QSpinBox(content);
    sequence_length_->setObjectName(QStringLiteral("sequenceLength"));
    sequence_length_->setRange(1, 1'000'000);
    sequence_length_->setKeyboardTracking(false);
    sequence_length_->setToolTip(
        tr("Tokens per sample (input_length); the data is padded or truncated to it"));
    length_label->setBuddy(sequence_length_);
    length_row->addWidget(sequence_length_);
    length_row->addWidget(new QLabel(tr("tokens per sample"), content), 1);
    layout->addLayout(length_row);
}

// The layer table with its buttons in a row under it: beside it they took the width the Arguments
// column needs on a laptop. The table wraps an argument list it cannot show on one line, so no
// cell is ever cut short (test_ui_screens checks every cell on every screen).
QGroupBox* ModelPanel::buildLayersBox(QWidget* parent) {
    auto* layers_box = new QGroupBox(tr("Layers"), parent);
    auto* layers_layout = new QVBoxLayout(layers_box);
    table_ = new QTableWidget(0, kColumnCount, layers_box);
    table_->setObjectName(QStringLiteral("layerTable"));
    table_->setAccessibleName(tr("Layers"));
    table_->setToolTip(tr("The model's layers in order; select one to edit its arguments below"));
    table_->setHorizontalHeaderLabels(
        {tr("Name"), tr("Type"), tr("Arguments"), tr("Output shape"), tr("Params")});
    table_->verticalHeader()->setVisible(false);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setWordWrap(true);
    table_->setTextElideMode(Qt::ElideNone);
    table_->setItemDelegate(new ErrorRowDelegate(table_));
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(kArguments, QHeaderView::Stretch);
    // Rows as tall as their wrapped arguments; the other columns fit their contents and never wrap.
    table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->verticalHeader()->setMinimumSectionSize(table_->verticalHeader()->defaultSectionSize());
    table_->setMinimumHeight(table_->verticalHeader()->defaultSectionSize() * 9);
    layers_layout->addWidget(table_, 1);
    auto* buttons = new QHBoxLayout;
    // A push button with the layer menu: it opens on a click and matches the buttons beside it.
    add_ = new QPushButton(tr("Add"), layers_box);
    add_->setObjectName(QStringLiteral("addLayer"));
    add_->setToolTip(tr("Insert a layer after the selected one"));
    buttons->addWidget(add_);
    remove_ = new QPushButton(tr("Remove"), layers_box);
    remove_->setObjectName(QStringLiteral("removeLayer"));
    remove_->setToolTip(tr("Remove the selected layer"));
    buttons->addWidget(remove_);
    move_up_ = new QPushButton(tr("Move up"), layers_box);
    move_up_->setObjectName(QStringLiteral("moveUp"));
    move_up_->setToolTip(tr("Move the selected layer one place up"));
    buttons->addWidget(move_up_);
    move_down_ = new QPushButton(tr("Move down"), layers_box);
    move_down_->setObjectName(QStringLiteral("moveDown"));
    move_down_->setToolTip(tr("Move the selected layer one place down"));
    buttons->addWidget(move_down_);
    buttons->addStretch(1);
    layers_layout->addLayout(buttons);
    return layers_box;
}

// The summary, exactly as model.summary() prints it, the parameter count and the model's error.
QGroupBox* ModelPanel::buildSummaryBox(QWidget* parent) {
    auto* summary_box = new QGroupBox(tr("Summary"), parent);
    auto* summary_layout = new QVBoxLayout(summary_box);
    summary_ = new QPlainTextEdit(summary_box);
    summary_->setObjectName(QStringLiteral("summaryText"));
    summary_->setToolTip(tr("model.summary() as Keras prints it"));
    summary_->setReadOnly(true);
    summary_->setLineWrapMode(QPlainTextEdit::NoWrap);
    QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    mono.setStyleHint(QFont::Monospace);
    summary_->setFont(mono);
    const QFontMetrics metrics(mono);
    summary_->setMinimumWidth(metrics.horizontalAdvance(QString(67, QLatin1Char('_'))) + 24);
    summary_->setMinimumHeight(metrics.lineSpacing() * 23 + 12);
    summary_layout->addWidget(summary_);
    total_params_ = new QLabel(summary_box);
    total_params_->setObjectName(QStringLiteral("totalParams"));
    QFont big = total_params_->font();
    big.setBold(true);
    big.setPointSizeF(big.pointSizeF() * 1.3);
    total_params_->setFont(big);
    summary_layout->addWidget(total_params_);
    error_label_ = new QLabel(summary_box);
    error_label_->setObjectName(QStringLiteral("modelError"));
    error_label_->setWordWrap(true);
    error_label_->setTextFormat(Qt::PlainText);
    error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_label_->setStyleSheet(
        QStringLiteral("QLabel { color: #b00020; background: #fde7e9; border-left: 3px solid "
                       "#d03040; padding: 4px 6px; }"));
    error_label_->setVisible(false);
    summary_layout->addWidget(error_label_);
    return summary_box;
}

void ModelPanel::connectControls() {
    connect(preset_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (!updating_) applyPreset(index);
    });
    connect(load_, &QPushButton::clicked, this, &ModelPanel::browseLoad);
    // Any change to the form: a file read in the background does not replace what came after it.
    connect(this, &ModelPanel::modelChanged, this, [this] { ++form_revision_; });
    connect(this, &ModelPanel::trainConfigChanged, this, [this] { ++form_revision_; });
    // One file at a time: Load waits while a large .keras archive is being read.
    file_job_ = new BackgroundJob(this);
    connect(file_job_, &BackgroundJob::runningChanged, load_, [this](bool running) { load_->setEnabled(!running); });
    connect(save_, &QPushButton::clicked, this, &ModelPanel::browseSave);
    connect(sequence_length_, &QSpinBox::valueChanged, this, [this](int value) {
        if (updating_) return;
        input_length_ = value;
        markCustom();
        rebuild();
    });
    connect(remove_, &QPushButton::clicked, this, &ModelPanel::removeLayer);
    connect(move_up_, &QPushButton::clicked, this, [this] { moveLayer(-1); });
    connect(move_down_, &QPushButton::clicked, this, [this] { moveLayer(+1); });
    connect(table_, &QTableWidget::itemSelectionChanged, this, &ModelPanel::onSelectionChanged);
    connect(editor_, &LayerEditor::layerEdited, this, &ModelPanel::onLayerEdited);
    connect(compile_, &CompileOptions::trainConfigChanged, this, &ModelPanel::trainConfigChanged);
}

ModelPanel::~ModelPanel() = default;

void ModelPanel::buildPresets() {
    const std::int64_t vocabulary = 30'982;  // Reuters, as the tutorial loads it
    const int classes = 46;
    auto add = [this](const QString& label_format, Model model) {
        auto shared = std::make_shared<const Model>(std::move(model));
        presets_.push_back(
            {label_format.arg(qstr(format_thousands(shared->total_params()))), shared});
    };
    add(tr("Keras tutorial (Reuters, %1 params)"), Model::reference());
    // One convolution, then the strongest response of each filter anywhere in the text: cheaper
    // than the tutorial and insensitive to where in the wire a phrase occurs.
    add(tr("Small CNN with global max pooling (%1 params)"),
        Model("sequential", 300,
              {embedding_layer("embedding", vocabulary, 8),
               conv1d_layer("conv1d", 64, 5, Padding::Valid),
               default_layer_config(LayerKind::GlobalMaxPooling1D, "global_max_pooling1d"),
               dense_layer("dense", classes, ActivationKind::Softmax)}));
    // More capacity with dropout against the overfitting the tutorial shows from epoch 4 on.
    add(tr("Wider CNN with dropout (%1 params)"),
        Model(
            "sequential", 300,
            {embedding_layer("embedding", vocabulary, 32), dropout_layer("dropout", 0.2),
             conv1d_layer("conv1d", 128, 5, Padding::Same), max_pooling1d_layer("max_pooling1d", 2),
             conv1d_layer("conv1d_1", 64, 5, Padding::Same),
             default_layer_config(LayerKind::GlobalMaxPooling1D, "global_max_pooling1d"),
             dropout_layer("dropout_1", 0.5),
             dense_layer("dense", classes, ActivationKind::Softmax)}));
    // No convolution: which words occur matters, their order does not. A baseline to beat.
    add(tr("Baseline: embedding + global max pooling (%1 params)"),
        Model("sequential", 300,
              {embedding_layer("embedding", vocabulary, 16),
               default_layer_config(LayerKind::GlobalMaxPooling1D, "global_max_pooling1d"),
               dense_layer("dense", classes, ActivationKind::Softmax)}));

    for (const Preset& preset : presets_) preset_->addItem(preset.label);
    preset_->addItem(tr("Custom model"));
    // The box may be narrower than its longest name (it takes the room the column has); its list,
    // in every style, is wide enough to show each name whole.
    fitPopupToChoices(preset_);
    if (auto* items = qobject_cast<QStandardItemModel*>(preset_->model())) {
        items->item(preset_->count() - 1)->setEnabled(false);  // shown after edits, not chosen
    }
}

void ModelPanel::buildMenu() {
    add_menu_ = new QMenu(this);
    add_menu_->setObjectName(QStringLiteral("addLayerMenu"));
    for (const LayerType* type : layer_types()) {
        const LayerKind kind = type->kind;
        const QString name = qstr(type->class_name);
        QAction* action = add_menu_->addAction(name);
        action->setObjectName(QStringLiteral("add") + name);
        connect(action, &QAction::triggered, this, [this, kind] { addLayer(kind); });
    }
    add_->setMenu(add_menu_);
}

QString ModelPanel::presetName(int index) const {
    if (index < 0 || index >= presetCount()) return {};
    return presets_[static_cast<std::size_t>(index)].label;
}

void ModelPanel::selectPreset(int index) {
    if (index < 0 || index >= presetCount()) return;
    updating_ = true;
    preset_->setCurrentIndex(index);
    updating_ = false;
    applyPreset(index);
}

void ModelPanel::applyPreset(int index) {
    if (index < 0 || index >= presetCount()) return;
    setModel(*presets_[static_cast<std::size_t>(index)].model);
    updating_ = true;
    preset_->setCurrentIndex(index);  // setModel() marked the form custom
    updating_ = false;
}

void ModelPanel::markCustom() {
    updating_ = true;
    preset_->setCurrentIndex(preset_->count() - 1);
    updating_ = false;
}

void ModelPanel::setModel(const Model& model) {
    name_ = model.name();
    input_length_ = model.input_length();
    configs_.clear();
    for (const LayerInfo& layer : model.layers()) configs_.push_back(layer.config);
    updating_ = true;
    sequence_length_->setValue(input_length_);
    updating_ = false;
    markCustom();
    rebuild();
    selectRow(configs_.empty() ? -1 : 0);
}

std::string ModelPanel::uniqueName(LayerKind kind) const {
    std::set<std::string> used;
    for (const LayerConfig& config : configs_) used.insert(config.name);
    const std::string stem(layer_type(kind).name_stem);
    if (!used.count(stem)) return stem;
    for (int i = 1;; ++i) {
        std::string candidate = stem + "_" + std::to_string(i);
        if (!used.count(candidate)) return candidate;
    }
}

int ModelPanel::currentRow() const {
    const auto selected = table_->selectionModel()->selectedRows();
    return selected.isEmpty() ? -1 : selected.front().row();
}

void ModelPanel::selectRow(int row) {
    if (row < 0 || row >= table_->rowCount()) {
        table_->clearSelection();
    } else {
        table_->selectRow(row);
        table_->scrollToItem(table_->item(row, kName));
    }
    onSelectionChanged();
}

void ModelPanel::onSelectionChanged() {
    if (updating_) return;
    const int row = currentRow();
    editor_->setLayer(row >= 0 && row < static_cast<int>(configs_.size())
                          ? &configs_[static_cast<std::size_t>(row)]
                          : nullptr);
    updateButtons();
}

void ModelPanel::updateButtons() {
    const int row = currentRow();
    const int count = static_cast<int>(configs_.size());
    remove_->setEnabled(row >= 0);
    move_up_->setEnabled(row > 0);
    move_down_->setEnabled(row >= 0 && row + 1 < count);
    save_->setEnabled(model_ != nullptr);
    save_->setToolTip(model_ ? tr("Save the model's layers as JSON")
                             : tr("Fix the model before saving it"));
}

void ModelPanel::addLayer(LayerKind kind) {
    const int row = currentRow();
    const int at = row >= 0 ? row + 1 : static_cast<int>(configs_.size());
    LayerConfig config = default_layer_config(kind);
    config.name = uniqueName(kind);
    configs_.insert(configs_.begin() + at, std::move(config));
    markCustom();
    rebuild();
    selectRow(at);
}

void ModelPanel::removeLayer() {
    const int row = currentRow();
    if (row < 0 || row >= static_cast<int>(configs_.size())) return;
    configs_.erase(configs_.begin() + row);
    markCustom();
    rebuild();
    selectRow(std::min(row, static_cast<int>(configs_.size()) - 1));
}

void ModelPanel::moveLayer(int delta) {
    const int row = currentRow();
    const int to = row + delta;
    if (row < 0 || to < 0 || to >= static_cast<int>(configs_.size())) return;
    std::swap(configs_[static_cast<std::size_t>(row)], configs_[static_cast<std::size_t>(to)]);
    markCustom();
    rebuild();
    selectRow(to);
}

void ModelPanel::onLayerEdited(const LayerConfig& config) {
    const int row = currentRow();
    if (row < 0 || row >= static_cast<int>(configs_.size())) return;
    LayerConfig& target = configs_[static_cast<std::size_t>(row)];
    target = config;
    const bool renamed = target.name.empty();
    if (renamed) target.name = uniqueName(target.kind);
    markCustom();
    rebuild();
    if (renamed) editor_->setLayer(&target);
}

std::vector<ModelPanel::RowInfo> ModelPanel::inferRows() const {
    std::vector<RowInfo> rows(configs_.size());
    if (model_) {
        for (std::size_t i = 0; i < rows.size(); ++i) {
            rows[i] = {true, model_->layers()[i].output_shape, model_->layers()[i].param_count};
        }
        return rows;
    }
    // The layers before the failing one are fine: build them alone, closed with a throwaway
    // classifier head, to show their shapes and counts while the person fixes the rest.
    const std::size_t known = probe_count_;
    if (known == 0) return rows;
    std::vector<LayerConfig> probe(configs_.begin(),
                                   configs_.begin() + static_cast<std::ptrdiff_t>(known));
    if (probe.back().activation == ActivationKind::Softmax)
        probe.back().activation = ActivationKind::Linear;
    LayerConfig flatten = default_layer_config(LayerKind::Flatten, "mirrorlab_probe_flatten");
    LayerConfig head = dense_layer("mirrorlab_probe_dense", 2, ActivationKind::Linear);
    probe.push_back(flatten);
    probe.push_back(head);
    try {
        const Model partial(name_, input_length_, std::move(probe));
        for (std::size_t i = 0; i < known; ++i) {
            rows[i] = {true, partial.layers()[i].output_shape, partial.layers()[i].param_count};
        }
    } catch (const std::exception&) {
        // Nothing more to show; the error message says what is wrong.
    }
    return rows;
}

void ModelPanel::rebuild() {
    try {
        model_ = std::make_shared<const Model>(name_, input_length_, configs_);
        error_.clear();
        error_row_ = -1;
        probe_count_ = 0;
        last_valid_ = model_;
    } catch (const std::exception& error) {
        model_.reset();
        error_ = QString::fromUtf8(error.what());
        // The message names the layer: "layer 'conv1d_2' (Conv1D) has kernel_size 100 but ...".
        // The layers before it are fine, and inferRows() shows their shapes.
        error_row_ = -1;
        probe_count_ = 0;
        for (std::size_t i = 0; i < configs_.size() && error_row_ < 0; ++i) {
            const LayerConfig& c = configs_[i];
            const QString named =
                QStringLiteral("layer '%1' (%2)").arg(qstr(c.name), qstr(layer_class_name(c.kind)));
            if (error_.contains(named)) {
                error_row_ = static_cast<int>(i);
                probe_count_ = i;
            }
        }
        // "two layers are named 'x'": the second one is the culprit; nothing was inferred.
        for (std::size_t i = configs_.size(); error_row_ < 0 && i-- > 0;) {
            if (error_.contains(QStringLiteral("named '%1'").arg(qstr(configs_[i].name))))
                error_row_ = static_cast<int>(i);
        }
        // Otherwise it is about the output ("the model's output is ...", "no Dense layer"): every
        // layer was built, and the last one is where to fix it.
        if (error_row_ < 0 && !configs_.empty()) {
            error_row_ = static_cast<int>(configs_.size()) - 1;
            probe_count_ = configs_.size();
        }
    }
    const std::vector<RowInfo> rows = inferRows();
    refreshTable(rows);
    refreshSummary(rows);
    compile_->setOutputActivation(
        model_ ? std::optional<ActivationKind>(model_->output_activation()) : std::nullopt);
    updateButtons();
    emit modelChanged();
}

void ModelPanel::refreshTable(const std::vector<RowInfo>& rows) {
    updating_ = true;
    const int selected = currentRow();
    table_->setRowCount(static_cast<int>(configs_.size()));
    const QColor error_background(0xfd, 0xd7, 0xdb);
    const QColor error_text(0x8a, 0x00, 0x10);
    for (int r = 0; r < static_cast<int>(configs_.size()); ++r) {
        const LayerConfig& c = configs_[static_cast<std::size_t>(r)];
        const RowInfo& info = rows[static_cast<std::size_t>(r)];
        const QString cells[kColumnCount] = {
            qstr(c.name), qstr(layer_class_name(c.kind)), layer_arguments_text(c),
            info.known ? qstr(output_shape_text(info.output_shape)) : QStringLiteral("?"),
            info.known ? QString::number(info.params) : QStringLiteral("?")};
        for (int column = 0; column < kColumnCount; ++column) {
            QTableWidgetItem* item = table_->item(r, column);
            if (item == nullptr) {
                item = new QTableWidgetItem;
                table_->setItem(r, column, item);
            }
            item->setText(cells[column]);
            item->setTextAlignment(column == kParams ? (Qt::AlignRight | Qt::AlignVCenter)
                                                     : (Qt::AlignLeft | Qt::AlignVCenter));
            const bool bad = r == error_row_;
            item->setData(Qt::BackgroundRole, bad ? QVariant(error_background) : QVariant());
            item->setData(Qt::ForegroundRole, bad ? QVariant(error_text) : QVariant());
            item->setData(kErrorRole, bad);
            item->setToolTip(bad ? error_ : QString());
        }
    }
    if (selected >= 0 && selected < table_->rowCount()) table_->selectRow(selected);
    updating_ = false;
}

void ModelPanel::refreshSummary(const std::vector<RowInfo>& rows) {
    if (model_) {
        summary_->setPlainText(QString::fromStdString(model_->summary()));
        total_params_->setText(
            tr("Total params: %1").arg(qstr(format_thousands(model_->total_params()))));
        total_params_->setVisible(true);
        error_label_->clear();
        error_label_->setVisible(false);
        return;
    }
    // The same table with what is known, and the reason in place of the totals.
    std::vector<SummaryRow> table;
    for (std::size_t i = 0; i < configs_.size(); ++i) {
        const LayerConfig& c = configs_[i];
        const RowInfo& info = rows[i];
        const bool bad = static_cast<int>(i) == error_row_;
        table.push_back({c.name + " (" + std::string(layer_class_name(c.kind)) + ")",
                         bad          ? tr("<-- error, see below").toStdString()
                         : info.known ? output_shape_text(info.output_shape)
                                      : "?",
                         info.known ? std::to_string(info.params) : "?"});
    }
    const std::string text = summary_table(name_, table);
    const std::string thin(65, '_');
    summary_->setPlainText(QString::fromStdString(text) + word_wrap(error_, 65) +
                           QStringLiteral("\n") + QString::fromStdString(thin) +
                           QStringLiteral("\n"));
    total_params_->setVisible(false);
    error_label_->setText(tr("Cannot build this model: %1").arg(error_));
    error_label_->setVisible(true);
}

TrainConfig ModelPanel::trainConfig() const {
    return compile_->trainConfig();
}

void ModelPanel::setTrainConfig(const TrainConfig& config) { compile_->setTrainConfig(config); }

QStringList ModelPanel::lints() const {
    return compile_->lints();
}

void ModelPanel::setReplicaCount(int replicas) {
    compile_->setReplicaCount(replicas);
}

void ModelPanel::setTrainingSamples(std::int64_t samples) {
    compile_->setTrainingSamples(samples);
}

void ModelPanel::showFileStatus(const QString& text, bool error) {
    file_status_->setText(text);
    file_status_->setStyleSheet(error ? QStringLiteral("QLabel { color: #b00020; }")
                                      : QStringLiteral("QLabel { color: palette(dark); }"));
    file_status_->setVisible(!text.isEmpty());
}

std::vector<float> ModelPanel::initialWeights() const {
    if (!model_ || keras_weights_.empty() || model_->to_json_text() != keras_model_json_) return {};
    return keras_weights_;
}

// What a model file holds, read without touching the form, so that a thread of its own can read
// it: a .keras archive of a large model takes seconds.
struct ModelPanel::FileContents {
    QString path;
    std::optional<KerasModel> keras;            // a .keras archive: layers, weights, optimizer
    std::optional<Model> model;                 // model JSON
    std::optional<std::vector<float>> weights;  // a .weights.h5 file, for the model `weights_for` describes
    std::string weights_for;
    std::uint64_t form_revision = 0;  // the form's when the read began
};

std::shared_ptr<ModelPanel::FileContents> ModelPanel::prepareRead(const QString& path) const {
    auto contents = std::make_shared<FileContents>();
    contents->path = path;
    contents->form_revision = form_revision_;
    if (isWeightsFile(path)) {
        // Keras' model.save_weights(): weights only, for the model the form holds now.
        if (!model_) {
            throw ModelError(tr("a weights file holds no model; make the form a valid model that matches it first (%1)")
                                 .arg(error_)
                                 .toStdString());
        }
        contents->weights_for = model_->to_json_text();
    }
    return contents;
}

bool ModelPanel::isWeightsFile(const QString& path) { return path.endsWith(QStringLiteral(".h5"), Qt::CaseInsensitive); }

void ModelPanel::readFile(FileContents& contents) {
    const std::string native = QDir::toNativeSeparators(contents.path).toStdString();
    if (contents.path.endsWith(QStringLiteral(".keras"), Qt::CaseInsensitive)) {
        contents.keras = load_keras_file(native);
    } else if (isWeightsFile(contents.path)) {
        contents.weights = load_keras_weights_file(native, Model::from_json_text(contents.weights_for, "the form's model"));
    } else {
        contents.model = Model::from_json_file(native);
    }
}

void ModelPanel::applyFile(FileContents& contents) {
    const QString shown = QDir::toNativeSeparators(contents.path);
    if (!contents.weights && contents.form_revision != form_revision_) {
        // Train again, a preset or an edit while a large file was read: replacing that now would
        // undo what the person did last without a word.
        throw ModelError(tr("the form changed while %1 was read; load it again to replace what the form holds now").arg(shown).toStdString());
    }
    if (contents.keras) {
        KerasModel& imported = *contents.keras;
        setModel(imported.model);
        keras_weights_ = std::move(imported.weights);
        keras_model_json_ = imported.model.to_json_text();
        QString status = tr("Loaded %1 with its weights: the next run starts from them").arg(shown);
        if (imported.optimizer) {
            // The optimizer it was compiled with, as Keras would go on training it.
            TrainConfig config = compile_->trainConfig();
            config.optimizer = *imported.optimizer;
            compile_->setTrainConfig(config);
            status += QLatin1Char('\n') + tr("Optimizer from the file: %1").arg(QString::fromStdString(imported.optimizer->describe()));
        }
        showFileStatus(status, false);
    } else if (contents.weights) {
        if (!model_ || model_->to_json_text() != contents.weights_for) {
            throw ModelError(tr("the model in the form changed while its weights were read; load the weights file again")
                                 .toStdString());
        }
        keras_weights_ = std::move(*contents.weights);
        keras_model_json_ = contents.weights_for;
        showFileStatus(tr("Loaded the weights in %1 into this model: the next run starts from them").arg(shown), false);
    } else {
        setModel(*contents.model);
        showFileStatus(tr("Loaded %1").arg(shown), false);
    }
    last_dir_ = QFileInfo(contents.path).absolutePath();
}

QString ModelPanel::fileStatus() const { return file_status_->isHidden() ? QString() : file_status_->text(); }

QString ModelPanel::showLoadFailure(const std::exception& failure) {
    const QString message = tr("Could not load the model (the current one is kept): %1").arg(QString::fromUtf8(failure.what()));
    showFileStatus(message, true);
    return message;
}

bool ModelPanel::loadFile(const QString& path, QString* error) {
    try {
        const std::shared_ptr<FileContents> contents = prepareRead(path);
        readFile(*contents);
        applyFile(*contents);
        if (error != nullptr) error->clear();
        return true;
    } catch (const std::exception& failure) {
        const QString message = showLoadFailure(failure);
        if (error != nullptr) *error = message;
        return false;
    }
}

bool ModelPanel::startLoadFile(const QString& path) {
    if (file_job_->isRunning()) return false;
    std::shared_ptr<FileContents> contents;
    try {
        contents = prepareRead(path);
    } catch (const std::exception& failure) {
        showLoadFailure(failure);
        return false;
    }
    showFileStatus(tr("Loading %1…").arg(QDir::toNativeSeparators(path)), false);
    file_job_->start([contents] { readFile(*contents); },
                     [this, contents](const QString& failure) {
                         try {
                             if (!failure.isEmpty()) throw ModelError(failure.toStdString());
                             applyFile(*contents);
                         } catch (const std::exception& problem) {
                             showLoadFailure(problem);
                         }
                     });
    return true;
}

bool ModelPanel::saveFile(const QString& path, QString* error) {
    QString message;
    if (!model_) {
        message = tr("Cannot save: the model is invalid (%1)").arg(error_);
    } else {
        QSaveFile file(path);
        const QByteArray bytes = QByteArray::fromStdString(model_->to_json_text());
        if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() ||
            !file.commit()) {
            message = tr("Cannot save the model to %1: %2")
                          .arg(QDir::toNativeSeparators(path), file.errorString());
        }
    }
    if (error != nullptr) *error = message;
    if (!message.isEmpty()) {
        showFileStatus(message, true);
        return false;
    }
    showFileStatus(tr("Saved %1").arg(QDir::toNativeSeparators(path)), false);
    last_dir_ = QFileInfo(path).absolutePath();
    return true;
}

namespace {
QString userModelFolder() {
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/mirrorlab/models");
}
}  // namespace

QString ModelPanel::modelFolder() {
    if (QDir(userModelFolder()).exists()) return userModelFolder();
    const QString presets = QStandardPaths::locate(QStandardPaths::GenericDataLocation, QStringLiteral("mirrorlab/presets"),
                                                   QStandardPaths::LocateDirectory);
    return presets.isEmpty() ? QDir::homePath() : presets;
}

void ModelPanel::browseLoad() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load model"), last_dir_.isEmpty() ? modelFolder() : last_dir_,
                                                      tr("Models (*.json *.keras *.weights.h5);;Model JSON (*.json);;Keras model (*.keras);;"
                                                         "Keras weights for this model (*.weights.h5 *.h5);;All files (*)"));
    if (!path.isEmpty()) startLoadFile(path);
}

void ModelPanel::browseSave() {
    QString folder = last_dir_;
    if (folder.isEmpty()) {  // a first save goes with the user's other models, not into the home folder
        folder = userModelFolder();
        if (!QDir().mkpath(folder)) folder = QDir::homePath();
    }
    const QString start = QDir(folder).filePath(QStringLiteral("model.json"));
    QString path = QFileDialog::getSaveFileName(this, tr("Save model"), start,
                                                tr("Model JSON (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".json");
    saveFile(path, nullptr);
}

void ModelPanel::saveSettings(QSettings& settings) const {
    const int preset = preset_->currentIndex();
    settings.setValue(kSettingsPrefix + QStringLiteral("preset"),
                      preset < presetCount() ? preset : -1);
    if (last_valid_)
        settings.setValue(kSettingsPrefix + QStringLiteral("json"),
                          QString::fromStdString(last_valid_->to_json_text()));
    settings.setValue(kSettingsPrefix + QStringLiteral("directory"), last_dir_);
    compile_->saveSettings(settings, kSettingsPrefix + QStringLiteral("compile/"));
}

void ModelPanel::restoreSettings(const QSettings& settings) {
    last_dir_ = settings.value(kSettingsPrefix + QStringLiteral("directory"), last_dir_).toString();
    const int preset = settings.value(kSettingsPrefix + QStringLiteral("preset"), -1).toInt();
    const QString json = settings.value(kSettingsPrefix + QStringLiteral("json")).toString();
    if (preset >= 0 && preset < presetCount()) {
        selectPreset(preset);
    } else if (!json.isEmpty()) {
        try {
            setModel(Model::from_json_text(json.toStdString(), "saved settings"));
        } catch (const std::exception& failure) {
            showFileStatus(tr("The saved model could not be restored: %1")
                               .arg(QString::fromUtf8(failure.what())),
                           true);
        }
    }
    compile_->restoreSettings(settings, kSettingsPrefix + QStringLiteral("compile/"));
}

}  // namespace mirrorlab::ui
