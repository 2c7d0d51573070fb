#include "ui/runs/runs_panel.h"

#include <QBrush>
#include <QCoreApplication>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QMessageBox>
#include <QPixmap>
#include <QPushButton>
#include <QSaveFile>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

#include "core/optim/optimizer.h"
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

}  // namespace

RunsPanel::RunsPanel(TrainingController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setObjectName(QStringLiteral("runsTable"));
    table_->setAccessibleName(tr("Runs"));
    table_->setToolTip(tr("Every run of this session; tick a run to draw its curves in the charts too"));
    table_->setHorizontalHeaderLabels({tr("Run"), tr("Devices"), tr("Data"), tr("Optimizer"), tr("Epochs"),
                                       tr("Best val_loss"), tr("Accuracy"), tr("Val accuracy"), tr("Status")});
    table_->horizontalHeaderItem(RunColumn)->setToolTip(tr("Check a run to draw its curves on the training charts"));
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
        if (filling_ || item->column() != RunColumn) return;
        emit overlayRunsChanged(overlayRuns());
    });
    connect(table_, &QTableWidget::itemSelectionChanged, this, &RunsPanel::updateButtons);

    export_csv_button_ = new QPushButton(tr("Export history as CSV…"), this);
    export_csv_button_->setToolTip(tr("The selected run's per-epoch metrics, in the columns Keras' CSVLogger writes"));
    connect(export_csv_button_, &QPushButton::clicked, this, &RunsPanel::exportCsvInteractively);
    export_png_button_ = new QPushButton(tr("Export charts as PNG…"), this);
    export_png_button_->setToolTip(tr("The loss, accuracy and top-5 charts as one picture"));
    connect(export_png_button_, &QPushButton::clicked, this, &RunsPanel::exportPngInteractively);

    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(export_csv_button_);
    buttons->addWidget(export_png_button_);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(table_, 1);
    layout->addLayout(buttons);

    if (controller_ != nullptr) {
        // Runs change a few times per epoch at most: redrawing the small table each time is cheap.
        connect(controller_, &TrainingController::runStarted, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::epochEnded, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::runFinished, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::runFailed, this, &RunsPanel::refresh);
        connect(controller_, &TrainingController::stateChanged, this, &RunsPanel::refresh);
    }
    refresh();
}

void RunsPanel::setTrainingPanel(TrainingPanel* panel) {
    training_panel_ = panel;
    updateButtons();
}

int RunsPanel::rowCount() const { return table_->rowCount(); }

void RunsPanel::refresh() {
    if (controller_ == nullptr) return;
    const auto& runs = controller_->runs();
    filling_ = true;
    table_->setRowCount(static_cast<int>(runs.size()));
    for (std::size_t i = 0; i < runs.size(); ++i) fillRow(static_cast<int>(i), runs[i]);
    filling_ = false;
    updateButtons();
}

void RunsPanel::fillRow(int row, const RunRecord& record) {
    auto cell = [&](int column) {
        QTableWidgetItem* item = table_->item(row, column);
        if (item == nullptr) {
            item = new QTableWidgetItem;
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

    QString status;
    QString status_tip;
    QBrush status_brush;  // default: the palette's text colour
    if (record.failed) {
        status = tr("failed: %1").arg(QString::fromStdString(record.failed->kind));
        status_tip = QString::fromStdString(record.failed->reason);
        status_brush = QBrush(QColor(176, 0, 32));
    } else if (record.finished) {
        status_tip = QString::fromStdString(record.finished->text);
        switch (record.finished->reason) {
            case FinishReason::EarlyStopping:
                status = record.finished->restored_epoch > 0
                             ? tr("early stopping, restored epoch %1").arg(record.finished->restored_epoch)
                             : tr("early stopping");
                break;
            case FinishReason::StoppedByUser: status = tr("stopped"); break;
            default: status = tr("finished"); break;
        }
    } else if (record.running) {
        const bool current = controller_->currentRun() != nullptr && controller_->currentRun()->id == record.id;
        status = current && controller_->state() == TrainingController::State::Paused ? tr("paused") : tr("running");
    } else {
        status = tr("stopped");
    }
    if (record.overfitting_epoch > 0) {
        status_tip += (status_tip.isEmpty() ? QString() : QStringLiteral("\n")) +
                      tr("Overfitting from epoch %1").arg(record.overfitting_epoch);
    }
    QTableWidgetItem* status_item = cell(StatusColumn);
    status_item->setText(status);
    status_item->setToolTip(status_tip);
    status_item->setForeground(status_brush);
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

void RunsPanel::exportPngInteractively() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export charts as PNG"), tr("training_charts.png"),
                                                      tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportChartsPng(path, &error)) QMessageBox::warning(this, tr("Export charts as PNG"), error);
}

void RunsPanel::updateButtons() {
    export_csv_button_->setEnabled(selectedRunId() != 0);
    export_png_button_->setEnabled(training_panel_ != nullptr);
}

}  // namespace mirrorlab::ui
