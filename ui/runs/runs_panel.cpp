#include "ui/runs/runs_panel.h"

#include <QBrush>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPixmap>
#include <QProcess>
#include <QRect>
#include <QRegularExpression>
#include <QPushButton>
#include <QSaveFile>
#include <QSignalBlocker>
#include <QStandardPaths>
#include <QTableWidget>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/export/tensorboard.h"
#include "core/export/keras_file.h"
#include "core/optim/optimizer.h"
#include "core/store/recorded_run.h"
#include "ui/common/image_file.h"
#include "ui/training/training_panel.h"

namespace mirrorlab::ui {

namespace {

// Python's repr of a float, which is what CSVLogger writes: the shortest digits that read back
// exactly, fixed notation for exponents -4..15 (with ".0" on whole numbers), else "1e-05" style.
QString pythonFloat(double value) {
    if (std::isnan(value)) return QStringLiteral("nan");
    if (std::isinf(value)) return value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    const QString scientific = QString::number(value, 'e', QLocale::FloatingPointShortest);
    const qsizetype e = scientific.indexOf(QLatin1Char('e'));
    const int exponent = e < 0 ? 0 : scientific.mid(e + 1).toInt();
    if (exponent >= -4 && exponent < 16) {
        QString fixed = QString::number(value, 'f', QLocale::FloatingPointShortest);
        if (!fixed.contains(QLatin1Char('.'))) fixed += QStringLiteral(".0");
        return fixed;
    }
    return scientific;
}

QString metricText(double value) {
    return std::isfinite(value) ? QString::number(value, 'f', 4) : QStringLiteral("-");
}

// The table, telling which cell has an editor open (QAbstractItemView::state() is protected).
class RunsTable final : public QTableWidget {
public:
    using QTableWidget::QTableWidget;
    QModelIndex editedIndex() const { return state() == EditingState ? currentIndex() : QModelIndex(); }
};

// What a cell shows and allows, to tell the cells a refresh changed from those it set as they were.
struct CellLook {
    QVariant text, tip, foreground, user, check;
    Qt::ItemFlags flags;
    bool operator==(const CellLook&) const = default;
};

CellLook lookOf(const QTableWidgetItem* item) {
    if (item == nullptr) return {};
    return {item->data(Qt::DisplayRole), item->data(Qt::ToolTipRole), item->data(Qt::ForegroundRole),
            item->data(Qt::UserRole),    item->data(Qt::CheckStateRole), item->flags()};
}

}  // namespace

RunsPanel::RunsPanel(TrainingController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    buildTable();
    buildFilter();
    buildButtons();
    buildExportMenu();
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(train_again_button_);
    buttons->addWidget(resume_button_);
    buttons->addWidget(delete_button_);
    buttons->addStretch(1);
    buttons->addWidget(export_button_);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(filter_);
    layout->addWidget(table_, 1);
    layout->addWidget(store_label_);
    layout->addWidget(export_status_);
    layout->addLayout(buttons);

    if (controller_ != nullptr) {
        // Runs change a few times per epoch at most: redrawing the small table each time is cheap.
        connect(controller_, &TrainingController::runStarted, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::epochEnded, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::runFinished, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::runFailed, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::stateChanged, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::runsChanged, this, &RunsPanel::refresh);
        if (controller_->store() != nullptr) {
            QString text = tr("Runs are kept in %1").arg(QString::fromStdString(controller_->store()->folder()));
            if (controller_->storedRunsTotal() > TrainingController::storedRunsListed()) {
                // Older runs are not lost, only not listed: said in a few words (the strip under the
                // charts has no room for a second line on a laptop), the way to them in the tip.
                text += tr(" (%1 of %2 listed)").arg(TrainingController::storedRunsListed()).arg(controller_->storedRunsTotal());
                store_label_->setToolTip(tr("The %1 most recent of the store's %2 runs are listed here; mirrorlab-cli runs --store \"%3\" "
                                            "lists them all (train --resume, export and runs delete take any of them).")
                                             .arg(TrainingController::storedRunsListed())
                                             .arg(controller_->storedRunsTotal())
                                             .arg(QString::fromStdString(controller_->store()->folder())));
            }
            store_label_->setText(text);
        } else {
            store_label_->setText(controller_->storeProblem());
        }
    }
    refresh();
}

void RunsPanel::buildTable() {
    table_ = new RunsTable(0, ColumnCount, this);
    table_->setObjectName(QStringLiteral("runsTable"));
    table_->setAccessibleName(tr("Runs"));
    table_->setToolTip(tr("Every kept run, earlier sessions' too; tick a run to draw its curves in the charts, "
                          "double-click its name or note to edit it"));
    table_->setHorizontalHeaderLabels({tr("Run"), tr("Name"), tr("Devices"), tr("Data"), tr("Optimizer"), tr("Epochs"),
                                       tr("Best val_loss"), tr("Accuracy"), tr("Val accuracy"), tr("Status"), tr("Note")});
    table_->horizontalHeaderItem(RunColumn)->setToolTip(tr("Check a run to draw its curves on the training charts"));
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    connect(table_, &QTableWidget::itemChanged, this, &RunsPanel::onItemEdited);
    connect(table_, &QTableWidget::itemSelectionChanged, this, &RunsPanel::updateButtons);
}

void RunsPanel::buildFilter() {
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("runsFilter"));
    filter_->setPlaceholderText(tr("Filter runs (name, note, data, devices, status)"));
    filter_->setAccessibleName(tr("Filter runs"));
    filter_->setClearButtonEnabled(true);
    // The clear button is a child control of its own; it needs a name for screen readers too.
    for (QToolButton* clear : filter_->findChildren<QToolButton*>()) {
        clear->setAccessibleName(tr("Clear filter"));
        clear->setToolTip(tr("Clear filter"));
    }
    filter_->setToolTip(tr("Show only the runs whose name, note, data, devices, optimizer or status contain this text"));
    connect(filter_, &QLineEdit::textChanged, this, &RunsPanel::applyFilter);
    store_label_ = new QLabel(this);
    store_label_->setObjectName(QStringLiteral("runsStoreLabel"));
    store_label_->setWordWrap(true);
    store_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    export_status_ = new QLabel(this);
    export_status_->setObjectName(QStringLiteral("runsExportStatus"));
    export_status_->setWordWrap(true);
    export_status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    export_status_->hide();
    export_job_ = new BackgroundJob(this);
    connect(export_job_, &BackgroundJob::runningChanged, this, &RunsPanel::updateButtons);
}

void RunsPanel::buildButtons() {
    train_again_button_ = new QPushButton(tr("Train again"), this);
    train_again_button_->setToolTip(tr("Put the selected run's model, settings, devices and data back into the forms"));
    connect(train_again_button_, &QPushButton::clicked, this, [this] {
        if (const int id = selectedRunId()) emit trainAgainRequested(id);
    });
    resume_button_ = new QPushButton(tr("Resume"), this);
    resume_button_->setToolTip(tr("Continue the selected run from its last checkpoint (the end of its last finished epoch)"));
    connect(resume_button_, &QPushButton::clicked, this, [this] {
        if (const int id = selectedRunId()) emit resumeRequested(id);
    });
    delete_button_ = new QPushButton(tr("Delete…"), this);
    delete_button_->setToolTip(tr("Delete the selected run, its metrics and its checkpoints"));
    connect(delete_button_, &QPushButton::clicked, this, &RunsPanel::deleteInteractively);
}

void RunsPanel::buildExportMenu() {
    // The exports share one button with a menu, so the panel stays narrow enough for a laptop's
    // bottom strip beside the monitor.
    export_button_ = new QToolButton(this);
    export_button_->setObjectName(QStringLiteral("runsExportButton"));
    export_button_->setText(tr("Export"));
    export_button_->setToolTip(tr("The selected run's history as CSV or TensorBoard event files, its model as a Keras file, or the charts as PNG"));
    export_button_->setPopupMode(QToolButton::InstantPopup);
    auto* export_menu = new QMenu(export_button_);
    export_csv_action_ = export_menu->addAction(tr("Export history as CSV…"));
    export_csv_action_->setToolTip(tr("The selected run's per-epoch metrics, in the columns Keras' CSVLogger writes"));
    connect(export_csv_action_, &QAction::triggered, this, &RunsPanel::exportCsvInteractively);
    export_png_action_ = export_menu->addAction(tr("Export charts as PNG…"));
    export_png_action_->setToolTip(tr("The loss, accuracy and top-5 charts as one picture"));
    connect(export_png_action_, &QAction::triggered, this, &RunsPanel::exportPngInteractively);
    export_keras_action_ = export_menu->addAction(tr("Export as Keras model…"));
    export_keras_action_->setToolTip(
        tr("The selected run's model and weights (its last checkpoint) as a Keras 3 .keras file: keras.saving.load_model() opens it"));
    connect(export_keras_action_, &QAction::triggered, this, &RunsPanel::exportKerasInteractively);
    export_menu->addSeparator();
    export_tensorboard_action_ = export_menu->addAction(tr("Export to TensorBoard…"));
    export_tensorboard_action_->setToolTip(
        tr("The selected run's metrics as TensorBoard event files, as Keras' TensorBoard callback writes them"));
    connect(export_tensorboard_action_, &QAction::triggered, this, &RunsPanel::exportTensorBoardInteractively);
    open_tensorboard_action_ = export_menu->addAction(tr("Open in TensorBoard"));
    open_tensorboard_action_->setToolTip(tr("Start TensorBoard on the selected run and open it in the browser"));
    connect(open_tensorboard_action_, &QAction::triggered, this, &RunsPanel::openInTensorBoardInteractively);
    export_button_->setMenu(export_menu);
}

void RunsPanel::setTrainingPanel(TrainingPanel* panel) {
    training_panel_ = panel;
    updateButtons();
}

int RunsPanel::rowCount() const { return table_->rowCount(); }

void RunsPanel::refresh() {
    if (controller_ == nullptr || finishing_edit_) return;  // finishing an edit: the refresh under way goes on
    finishEditOnRowThatMoves();
    const auto& runs = controller_->runs();
    const int selected = selectedRunIdOnly();
    // Rows are refilled in the list's order, so a run's row moves when one above it is deleted or
    // resumed (it goes to the end): its tick and the selection go with the run, not the row.
    QList<int> overlaid = overlayRuns();
    std::sort(overlaid.begin(), overlaid.end());
    filling_ = true;
    const int rows = static_cast<int>(runs.size());
    table_->setRowCount(rows);
    // The header sizes every column to its contents, so each cell's own change notice would have
    // the view measure the text of every cell again before the next one: at each epoch's end, on
    // the GUI thread that shares the cores with the replicas, and growing with the square of the
    // rows kept. The cells change unannounced; the view then hears once of the ones that changed.
    std::vector<CellLook> before;
    before.reserve(static_cast<std::size_t>(rows) * ColumnCount);
    for (int row = 0; row < rows; ++row) {
        for (int column = 0; column < ColumnCount; ++column) before.push_back(lookOf(table_->item(row, column)));
    }
    {
        const QSignalBlocker quiet(table_->model());
        for (int row = 0; row < rows; ++row) {
            const RunRecord& record = runs[static_cast<std::size_t>(row)];
            fillRow(row, record);
            table_->item(row, RunColumn)->setCheckState(std::binary_search(overlaid.begin(), overlaid.end(), record.id) ? Qt::Checked : Qt::Unchecked);
        }
    }
    QRect changed;  // x: columns, y: rows
    for (int row = 0; row < rows; ++row) {
        for (int column = 0; column < ColumnCount; ++column) {
            if (lookOf(table_->item(row, column)) != before[static_cast<std::size_t>(row) * ColumnCount + column]) {
                changed |= QRect(column, row, 1, 1);
            }
        }
    }
    announceChanged(changed);
    filling_ = false;
    applyFilter();
    // Only where the selected run moved: selecting its row again would move the current cell and
    // close an editor a person is typing in.
    if (selected != 0 && selectedRunIdOnly() != selected) {
        table_->clearSelection();  // a deleted run's row now holds another run: nothing stays selected
        selectRun(selected);
    }
    // A deleted run's tick went with it: the charts stop drawing it.
    QList<int> overlaid_now = overlayRuns();
    std::sort(overlaid_now.begin(), overlaid_now.end());
    if (overlaid_now != overlaid) emit overlayRunsChanged(overlayRuns());
    updateButtons();
}

// A run deleted above the row being edited (or a row that goes) would leave the editor over
// another run's cell: its text is stored for the run it was typed for first.
void RunsPanel::finishEditOnRowThatMoves() {
    const QModelIndex edited = static_cast<const RunsTable*>(table_)->editedIndex();
    if (!edited.isValid()) return;
    const auto& runs = controller_->runs();
    const auto row = static_cast<std::size_t>(edited.row());
    const QTableWidgetItem* run = table_->item(edited.row(), RunColumn);
    if (run != nullptr && row < runs.size() && runs[row].id == run->data(Qt::UserRole).toInt()) return;
    finishing_edit_ = true;
    table_->setCurrentIndex(QModelIndex());  // commits the editor's text to its cell, which stores it, and closes it
    finishing_edit_ = false;
}

void RunsPanel::announceChanged(const QRect& cells) {
    QAbstractItemModel* model = table_->model();
    auto notify = [&](int top, int bottom, int left, int right) {
        if (top <= bottom && left <= right) emit model->dataChanged(model->index(top, left), model->index(bottom, right));
    };
    if (cells.isEmpty()) return;
    // A notice over a cell whose editor is open puts the stored text back into the editor: the
    // cell a person is typing in stays out of it (their text is stored when they finish).
    const QModelIndex edited = static_cast<const RunsTable*>(table_)->editedIndex();
    if (!edited.isValid() || !cells.contains(edited.column(), edited.row())) {
        notify(cells.top(), cells.bottom(), cells.left(), cells.right());
        return;
    }
    notify(cells.top(), edited.row() - 1, cells.left(), cells.right());
    notify(edited.row(), edited.row(), cells.left(), edited.column() - 1);
    notify(edited.row(), edited.row(), edited.column() + 1, cells.right());
    notify(edited.row() + 1, cells.bottom(), cells.left(), cells.right());
}

void RunsPanel::fillRow(int row, const RunRecord& record) {
    auto cell = [&](int column) {
        QTableWidgetItem* item = table_->item(row, column);
        if (item == nullptr) {
            item = new QTableWidgetItem;
            const bool editable = column == NameColumn || column == NoteColumn;
            item->setFlags(editable ? item->flags() | Qt::ItemIsEditable : item->flags() & ~Qt::ItemIsEditable);
            if (column == RunColumn) {
                item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
                item->setCheckState(Qt::Unchecked);
            }
            table_->setItem(row, column, item);
        }
        return item;
    };

    QTableWidgetItem* run = cell(RunColumn);
    run->setText(QString::number(record.id));
    run->setData(Qt::UserRole, record.id);
    run->setToolTip(record.title);
    QTableWidgetItem* name = cell(NameColumn);
    name->setText(record.name.isEmpty() ? tr("Run %1").arg(record.id) : record.name);
    name->setToolTip(record.stored ? tr("Double-click to rename") : tr("This run is not kept, so it cannot be renamed"));
    if (!record.stored) name->setFlags(name->flags() & ~Qt::ItemIsEditable);
    QTableWidgetItem* note = cell(NoteColumn);
    note->setText(record.note);
    if (!record.stored) note->setFlags(note->flags() & ~Qt::ItemIsEditable);
    cell(DevicesColumn)->setText(record.devices_spec);
    cell(DataColumn)->setText(record.data_name);
    cell(OptimizerColumn)
        ->setText(tr("%1 lr %2, batch %3")
                      .arg(QString::fromUtf8(optimizer_name(record.config.optimizer.kind).data()))
                      .arg(record.config.optimizer.learning_rate)
                      .arg(record.config.batch_size));
    cell(EpochsColumn)->setText(tr("%1/%2").arg(record.epochs.size()).arg(record.config.epochs));

    double best_loss = std::numeric_limits<double>::infinity();
    int best_epoch = 0;
    for (const EpochRecord& epoch : record.epochs) {
        if (epoch.has_validation && epoch.validation.loss < best_loss) {
            best_loss = epoch.validation.loss;
            best_epoch = epoch.epoch;
        }
    }
    cell(BestValLossColumn)
        ->setText(best_epoch > 0 ? tr("%1 (epoch %2)").arg(metricText(best_loss)).arg(best_epoch) : QStringLiteral("-"));
    const EpochRecord* last = record.epochs.empty() ? nullptr : &record.epochs.back();
    cell(AccuracyColumn)->setText(last != nullptr ? metricText(last->train.accuracy) : QStringLiteral("-"));
    cell(ValAccuracyColumn)
        ->setText(last != nullptr && last->has_validation ? metricText(last->validation.accuracy) : QStringLiteral("-"));

    QString status_tip;
    bool failed = false;
    const QString status = statusOf(record, &status_tip, &failed);
    const QBrush status_brush = failed ? QBrush(QColor(176, 0, 32)) : QBrush();  // default: the palette's text colour
    if (record.overfitting_epoch > 0) {
        status_tip += (status_tip.isEmpty() ? QString() : QStringLiteral("\n")) +
                      tr("Overfitting from epoch %1").arg(record.overfitting_epoch);
    }
    QTableWidgetItem* status_item = cell(StatusColumn);
    status_item->setText(status);
    status_item->setToolTip(status_tip);
    status_item->setForeground(status_brush);
}

QString RunsPanel::statusOf(const RunRecord& record, QString* tip, bool* failed) const {
    *failed = false;
    if (record.failed) {
        *tip = QString::fromStdString(record.failed->reason);
        *failed = true;
        return tr("failed: %1").arg(QString::fromStdString(record.failed->kind));
    }
    if (record.finished) {
        *tip = QString::fromStdString(record.finished->text);
        switch (record.finished->reason) {
            case FinishReason::EarlyStopping:
                return record.finished->restored_epoch > 0 ? tr("early stopping, restored epoch %1").arg(record.finished->restored_epoch)
                                                           : tr("early stopping");
            case FinishReason::StoppedByUser: return tr("stopped");
            default: return tr("finished");
        }
    }
    if (record.running) {
        const bool current = controller_->currentRun() != nullptr && controller_->currentRun()->id == record.id;
        return current && controller_->state() == TrainingController::State::Paused ? tr("paused") : tr("running");
    }
    // A run of an earlier session: its status as the store kept it.
    *tip = record.status_text;
    switch (record.stored_status) {
        case RunStatus::Finished: return tr("finished");
        case RunStatus::Failed: *failed = true; return tr("failed");
        case RunStatus::Interrupted: return tr("interrupted");
        case RunStatus::Running: return tr("running elsewhere");
        default: return tr("stopped");
    }
}

QString RunsPanel::statusText(int run_id) const {
    for (int row = 0; row < table_->rowCount(); ++row) {
        const QTableWidgetItem* item = table_->item(row, RunColumn);
        if (item != nullptr && item->data(Qt::UserRole).toInt() == run_id) return table_->item(row, StatusColumn)->text();
    }
    return {};
}

void RunsPanel::applyFilter() {
    const QString needle = filter_->text().trimmed();
    for (int row = 0; row < table_->rowCount(); ++row) {
        bool match = needle.isEmpty();
        for (int column : {NameColumn, DevicesColumn, DataColumn, StatusColumn, NoteColumn, OptimizerColumn}) {
            const QTableWidgetItem* item = table_->item(row, column);
            if (!match && item != nullptr && item->text().contains(needle, Qt::CaseInsensitive)) match = true;
        }
        table_->setRowHidden(row, !match);
    }
}

int RunsPanel::visibleRowCount() const {
    int visible = 0;
    for (int row = 0; row < table_->rowCount(); ++row) visible += table_->isRowHidden(row) ? 0 : 1;
    return visible;
}

void RunsPanel::selectRun(int run_id) {
    for (int row = 0; row < table_->rowCount(); ++row) {
        const QTableWidgetItem* item = table_->item(row, RunColumn);
        if (item != nullptr && item->data(Qt::UserRole).toInt() == run_id) {
            table_->selectRow(row);
            return;
        }
    }
}

// Check boxes overlay runs; edited names and notes go to the run store.
void RunsPanel::onItemEdited(QTableWidgetItem* item) {
    if (filling_) return;
    if (item->column() == RunColumn) {
        emit overlayRunsChanged(overlayRuns());
        return;
    }
    if (item->column() != NameColumn && item->column() != NoteColumn) return;
    const QTableWidgetItem* run = table_->item(item->row(), RunColumn);
    if (run == nullptr) return;
    const int id = run->data(Qt::UserRole).toInt();
    QString error;
    const bool ok = item->column() == NameColumn ? controller_->renameRun(id, item->text().trimmed(), &error)
                                                 : controller_->annotateRun(id, item->text(), &error);
    if (!ok) {
        // The cell goes back to what the store holds: what was typed is shown, selectable, so that a
        // long note is not lost to a store that could not take it (locked by another MirrorLab).
        QMessageBox box(QMessageBox::Warning, tr("Runs"), error, QMessageBox::Ok, this);
        box.setInformativeText(tr("What you typed, not kept:\n%1").arg(item->text()));
        box.setTextInteractionFlags(Qt::TextSelectableByMouse);
        box.exec();
        refresh();
    }
}

void RunsPanel::deleteInteractively() {
    const int id = selectedRunIdOnly();
    if (id == 0) return;
    const auto answer = QMessageBox::question(this, tr("Delete run"),
                                              tr("Delete run %1 with its metrics and checkpoints? This cannot be undone.").arg(id),
                                              QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) return;
    QString error;
    if (!controller_->deleteRun(id, &error)) QMessageBox::warning(this, tr("Delete run"), error);
}

int RunsPanel::selectedRunIdOnly() const {
    const auto selected = table_->selectionModel() != nullptr ? table_->selectionModel()->selectedRows() : QModelIndexList{};
    if (selected.isEmpty()) return 0;
    const QTableWidgetItem* item = table_->item(selected.front().row(), RunColumn);
    return item != nullptr ? item->data(Qt::UserRole).toInt() : 0;
}

int RunsPanel::selectedRunId() const {
    const auto selected = table_->selectionModel() != nullptr ? table_->selectionModel()->selectedRows() : QModelIndexList{};
    if (!selected.isEmpty()) {
        if (const QTableWidgetItem* item = table_->item(selected.front().row(), RunColumn)) return item->data(Qt::UserRole).toInt();
    }
    const RunRecord* current = controller_ != nullptr ? controller_->currentRun() : nullptr;
    return current != nullptr ? current->id : 0;
}

QList<int> RunsPanel::overlayRuns() const {
    QList<int> ids;
    for (int row = 0; row < table_->rowCount(); ++row) {
        const QTableWidgetItem* item = table_->item(row, RunColumn);
        if (item != nullptr && item->checkState() == Qt::Checked) ids.append(item->data(Qt::UserRole).toInt());
    }
    return ids;
}

void RunsPanel::setOverlayChecked(int run_id, bool checked) {
    for (int row = 0; row < table_->rowCount(); ++row) {
        QTableWidgetItem* item = table_->item(row, RunColumn);
        if (item != nullptr && item->data(Qt::UserRole).toInt() == run_id) {
            item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);  // itemChanged emits overlayRunsChanged
        }
    }
}

QString RunsPanel::historyCsv(const RunRecord& record) {
    QString csv = QStringLiteral("epoch,accuracy,loss,top5,val_accuracy,val_loss,val_top5\n");
    for (const EpochRecord& epoch : record.epochs) {
        auto validation = [&](double value) { return epoch.has_validation ? pythonFloat(value) : QStringLiteral("NA"); };
        csv += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
                   .arg(epoch.epoch - 1)
                   .arg(pythonFloat(epoch.train.accuracy), pythonFloat(epoch.train.loss), pythonFloat(epoch.train.top5),
                        validation(epoch.validation.accuracy), validation(epoch.validation.loss),
                        validation(epoch.validation.top5));
    }
    return csv;
}

bool RunsPanel::exportCsv(int run_id, const QString& path, QString* error) const {
    const RunRecord* record = controller_ != nullptr ? controller_->run(run_id) : nullptr;
    if (record == nullptr) {
        if (error != nullptr) *error = tr("There is no run %1.").arg(run_id);
        return false;
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error != nullptr) *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    file.write(historyCsv(*record).toUtf8());
    if (!file.commit()) {
        if (error != nullptr) *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

bool RunsPanel::exportChartsPng(const QString& path, QString* error) const {
    if (training_panel_ == nullptr) {
        if (error != nullptr) *error = tr("There are no training charts to export.");
        return false;
    }
    // Chart and widget layouts run from posted events; without them a panel whose legend or banner
    // just changed is drawn with the old layout.
    QCoreApplication::sendPostedEvents();
    const QPixmap pixmap = training_panel_->grab();
    if (pixmap.isNull()) {
        if (error != nullptr) *error = tr("The training charts could not be drawn.");
        return false;
    }
    return savePngAtomically(pixmap, path, error);
}

void RunsPanel::exportCsvInteractively() {
    const int run_id = selectedRunId();
    if (run_id == 0) return;
    const QString path = QFileDialog::getSaveFileName(this, tr("Export history as CSV"),
                                                      tr("run%1_history.csv").arg(run_id), tr("CSV files (*.csv)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportCsv(run_id, path, &error)) QMessageBox::warning(this, tr("Export history as CSV"), error);
}

namespace {

// Reads a checkpoint and writes it as a .keras archive: no store and no Qt object, so that it can
// run on a thread of its own.
void write_keras_of_checkpoint(const std::string& checkpoint_path, const std::string& keras_path) {
    const Checkpoint checkpoint = load_checkpoint(checkpoint_path);
    const Model model = Model::from_json_text(checkpoint.model_json, "checkpoint");
    const KerasOptimizerState optimizer_state = keras_optimizer_state(checkpoint.state);
    save_keras_file(keras_path, model, checkpoint.state.weights, checkpoint.config.optimizer, &optimizer_state);
}

}  // namespace

bool RunsPanel::exportKeras(int run_id, const QString& path, QString* error) const {
    try {
        if (controller_ == nullptr || controller_->store() == nullptr) throw StoreError("the runs are not kept");
        write_keras_of_checkpoint(checkpoint_path_of(controller_->store()->get(run_id)), QDir::toNativeSeparators(path).toStdString());
        return true;
    } catch (const std::exception& failure) {
        if (error != nullptr) *error = tr("Cannot export run %1 as a Keras model: %2").arg(run_id).arg(QString::fromUtf8(failure.what()));
        return false;
    }
}

bool RunsPanel::startKerasExport(int run_id, const QString& path, QString* error) {
    std::string checkpoint_path;
    try {
        if (export_job_->isRunning()) throw Error(tr("another export is being written; wait for it to finish").toStdString());
        if (controller_ == nullptr || controller_->store() == nullptr) throw StoreError("the runs are not kept");
        // The store is read here, on its own thread; the thread gets a path.
        checkpoint_path = checkpoint_path_of(controller_->store()->get(run_id));
    } catch (const std::exception& failure) {
        if (error != nullptr) *error = tr("Cannot export run %1 as a Keras model: %2").arg(run_id).arg(QString::fromUtf8(failure.what()));
        return false;
    }
    const QString shown = QDir::toNativeSeparators(path);
    export_status_->setStyleSheet({});
    export_status_->setText(tr("Exporting run %1 to %2…").arg(run_id).arg(shown));
    export_status_->show();
    export_job_->start([checkpoint_path, keras_path = shown.toStdString()] { write_keras_of_checkpoint(checkpoint_path, keras_path); },
                       [this, run_id, shown](const QString& failure) {
                           last_export_failed_ = !failure.isEmpty();
                           if (failure.isEmpty()) {
                               export_status_->setText(tr("Exported run %1 to %2").arg(run_id).arg(shown));
                               return;
                           }
                           const QString message = tr("Cannot export run %1 as a Keras model: %2").arg(run_id).arg(failure);
                           export_status_->setStyleSheet(QStringLiteral("color: #b00020"));
                           export_status_->setText(message);
                           if (isVisible()) QMessageBox::warning(this, tr("Export as Keras model"), message);
                       });
    return true;
}

QString RunsPanel::exportStatus() const { return export_status_->isHidden() ? QString() : export_status_->text(); }

void RunsPanel::exportKerasInteractively() {
    const int run_id = selectedRunIdOnly();
    if (run_id == 0 || export_job_->isRunning()) return;
    const QString path = QFileDialog::getSaveFileName(this, tr("Export as Keras model"), tr("run%1.keras").arg(run_id),
                                                      tr("Keras models (*.keras)"));
    if (path.isEmpty()) return;
    QString error;
    if (!startKerasExport(run_id, path, &error)) QMessageBox::warning(this, tr("Export as Keras model"), error);
}

void RunsPanel::exportPngInteractively() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export charts as PNG"), tr("training_charts.png"),
                                                      tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportChartsPng(path, &error)) QMessageBox::warning(this, tr("Export charts as PNG"), error);
}

RunsPanel::~RunsPanel() {
    if (tensorboard_ != nullptr && tensorboard_->state() != QProcess::NotRunning) {
        tensorboard_->kill();
        tensorboard_->waitForFinished(2000);
    }
}

bool RunsPanel::exportTensorBoard(int run_id, const QString& folder, QString* error) const {
    RunStore* store = controller_ != nullptr ? controller_->store() : nullptr;
    const RunRecord* record = controller_ != nullptr ? controller_->run(run_id) : nullptr;
    if (store == nullptr || record == nullptr || !record->stored) {
        if (error != nullptr) *error = tr("Run %1 is not kept in the run store, so it has no event files to export.").arg(run_id);
        return false;
    }
    try {
        export_run_to_tensorboard(*store, run_id, folder.toStdString(), false);
    } catch (const Error& e) {
        if (error != nullptr) *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

QString RunsPanel::tensorBoardFolder(int run_id) const {
    RunStore* store = controller_ != nullptr ? controller_->store() : nullptr;
    const std::optional<RunInfo> run = store != nullptr ? store->find(run_id) : std::nullopt;
    return run ? QDir(QString::fromStdString(run->folder)).filePath(QStringLiteral("tensorboard")) : QString();
}

bool RunsPanel::openInTensorBoard(int run_id, QString* message) {
    const QString folder = tensorBoardFolder(run_id);
    if (folder.isEmpty()) {
        if (message != nullptr) *message = tr("Run %1 is not kept in the run store, so it has no event files to show.").arg(run_id);
        return false;
    }
    const RunRecord* record = controller_ != nullptr ? controller_->run(run_id) : nullptr;
    if (record != nullptr && record->running) {
        // A run in training shows its live event files (written as it trains), which TensorBoard
        // follows; there is nothing complete to export yet.
        if (controller_->liveTensorBoardFolder(run_id).isEmpty()) {
            if (message != nullptr) *message = tr("Run %1 is training without TensorBoard event files (Training → Write TensorBoard event files).").arg(run_id);
            return false;
        }
    } else {
        // A fresh export each time: event files left from an earlier one would show every step twice.
        QDir(folder).removeRecursively();
        if (!exportTensorBoard(run_id, folder, message)) return false;
    }
    const QString program = QStandardPaths::findExecutable(QStringLiteral("tensorboard"));
    if (program.isEmpty()) {
        if (message != nullptr) {
            *message = tr("TensorBoard is not installed (there is no \"tensorboard\" program on PATH). Install it with\n\n"
                          "    pip install tensorboard\n\n"
                          "then choose Open in TensorBoard again. The run's event files are in %1; "
                          "\"tensorboard --logdir %1\" shows them.")
                           .arg(QDir::toNativeSeparators(folder));
        }
        return false;
    }
    if (tensorboard_ != nullptr) {  // one TensorBoard at a time: the previous run's makes way
        tensorboard_->kill();
        tensorboard_->waitForFinished(2000);
        tensorboard_->deleteLater();
    }
    tensorboard_ = new QProcess(this);
    tensorboard_->setProcessChannelMode(QProcess::MergedChannels);
    // TensorBoard picks a free port near 6006 and prints "TensorBoard 2.x at http://localhost:6006/".
    connect(tensorboard_, &QProcess::readyRead, this, [process = tensorboard_, output = QString(), opened = false]() mutable {
        output += QString::fromUtf8(process->readAll());
        static const QRegularExpression url(QStringLiteral(R"(TensorBoard \S+ at (https?://\S+))"));
        if (const QRegularExpressionMatch match = url.match(output); !opened && match.hasMatch()) {
            opened = true;
            QDesktopServices::openUrl(QUrl(match.captured(1)));
        }
        if (opened || output.size() > (1 << 16)) output = output.right(256);  // only the start matters
    });
    tensorboard_->start(program, {QStringLiteral("--logdir"), folder});
    if (!tensorboard_->waitForStarted(5000)) {
        if (message != nullptr) *message = tr("TensorBoard (%1) did not start: %2").arg(program, tensorboard_->errorString());
        return false;
    }
    if (message != nullptr) *message = tr("TensorBoard is starting on %1; the browser opens when it is ready.").arg(folder);
    return true;
}

void RunsPanel::exportTensorBoardInteractively() {
    const int run_id = selectedRunId();
    if (run_id == 0) return;
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Export to TensorBoard: choose the log folder"));
    if (folder.isEmpty()) return;
    QString error;
    if (!exportTensorBoard(run_id, folder, &error)) {
        QMessageBox::warning(this, tr("Export to TensorBoard"), error);
        return;
    }
    QMessageBox::information(this, tr("Export to TensorBoard"),
                             tr("Run %1's event files are in %2/train and %2/validation. Show them with\n\n"
                                "    tensorboard --logdir %2")
                                 .arg(run_id)
                                 .arg(QDir::toNativeSeparators(folder)));
}

void RunsPanel::openInTensorBoardInteractively() {
    const int run_id = selectedRunId();
    if (run_id == 0) return;
    QString message;
    if (!openInTensorBoard(run_id, &message)) QMessageBox::information(this, tr("Open in TensorBoard"), message);
}

void RunsPanel::updateButtons() {
    const int id = selectedRunIdOnly();
    const RunRecord* record = id != 0 && controller_ != nullptr ? controller_->run(id) : nullptr;
    const bool idle = controller_ != nullptr && controller_->state() == TrainingController::State::Idle;
    train_again_button_->setEnabled(record != nullptr && record->stored);
    resume_button_->setEnabled(record != nullptr && record->stored && record->has_checkpoint && idle);
    resume_button_->setToolTip(record != nullptr && record->stored && !record->has_checkpoint
                                   ? tr("This run has no checkpoint: it ended before its first epoch finished")
                                   : tr("Continue the selected run from its last checkpoint (the end of its last finished epoch)"));
    // A run being exported keeps its checkpoint until the export has read it.
    const bool exporting = export_job_ != nullptr && export_job_->isRunning();
    delete_button_->setEnabled(record != nullptr && !(record->running && !idle) && !exporting);
    export_csv_action_->setEnabled(selectedRunId() != 0);
    export_png_action_->setEnabled(training_panel_ != nullptr);
    export_keras_action_->setEnabled(record != nullptr && record->stored && record->has_checkpoint && !exporting);
    // A stored run that is not being written: its rows are complete.
    const RunRecord* exportable = controller_ != nullptr ? controller_->run(selectedRunId()) : nullptr;
    const bool has_events = exportable != nullptr && exportable->stored && !exportable->running && controller_->store() != nullptr;
    export_tensorboard_action_->setEnabled(has_events);
    const bool live = exportable != nullptr && exportable->running && !controller_->liveTensorBoardFolder(exportable->id).isEmpty();
    open_tensorboard_action_->setEnabled(has_events || live);
}

}  // namespace mirrorlab::ui
