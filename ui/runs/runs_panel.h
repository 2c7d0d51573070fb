#pragma once
// Every run of the session in one table (devices, data, optimizer, how far it got, its best
// validation loss, final accuracies, how it ended), with check boxes to overlay earlier runs on the
// training charts and exports: a run's history as Keras' CSVLogger writes it, and the charts as PNG.
#include <QList>
#include <QPointer>
#include <QString>
#include <QWidget>

#include "ui/training/training_controller.h"

class QPushButton;
class QTableWidget;

namespace mirrorlab::ui {

class TrainingPanel;

class RunsPanel : public QWidget {
    Q_OBJECT
public:
    enum Column { RunColumn = 0, DevicesColumn, DataColumn, OptimizerColumn, EpochsColumn, BestValLossColumn,
                  AccuracyColumn, ValAccuracyColumn, StatusColumn, ColumnCount };

    explicit RunsPanel(TrainingController* controller, QWidget* parent = nullptr);

    // The charts "Export charts as PNG..." saves; without one the button is disabled.
    void setTrainingPanel(TrainingPanel* panel);

    // Keras CSVLogger's file for the run: "epoch,accuracy,loss,top5,val_accuracy,val_loss,val_top5"
    // (keys sorted after epoch), epoch 0-based, values in their shortest exact form, "NA" for a
    // validation value the run does not have.
    static QString historyCsv(const RunRecord& record);
    bool exportCsv(int run_id, const QString& path, QString* error) const;
    bool exportChartsPng(const QString& path, QString* error) const;

    QTableWidget* table() const { return table_; }
    int rowCount() const;
    int selectedRunId() const;  // the selected row's run, else the latest run; 0 if there is none
    QList<int> overlayRuns() const;
    void setOverlayChecked(int run_id, bool checked);

signals:
    void overlayRunsChanged(const QList<int>& run_ids);

public slots:
    void refresh();  // brings every row up to date with the controller's runs

private:
    void fillRow(int row, const RunRecord& record);
    void exportCsvInteractively();
    void exportPngInteractively();
    void updateButtons();

    TrainingController* controller_ = nullptr;
    QPointer<TrainingPanel> training_panel_;
    QTableWidget* table_ = nullptr;
    QPushButton* export_csv_button_ = nullptr;
    QPushButton* export_png_button_ = nullptr;
    bool filling_ = false;  // ignore itemChanged while the panel writes the table itself
};

}  // namespace mirrorlab::ui
