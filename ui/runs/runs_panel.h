#pragma once
// Every kept run in one table — this session's and earlier ones' from the run store, interrupted
// ones included — (name, devices, data, optimizer, how far it got, its best validation loss, final
// accuracies, how it ended, a note), filtered by text; check boxes overlay runs on the training
// charts; a run can be renamed and annotated in place, trained again (its settings back in the
// forms), resumed from its last checkpoint, deleted, and exported: its history as Keras'
// CSVLogger writes it, the charts as PNG, and TensorBoard event files (opened in TensorBoard when
// it is installed).
#include <QList>
#include <QPointer>
#include <QRect>
#include <QString>
#include <QWidget>

#include "ui/common/background_job.h"
#include "ui/training/training_controller.h"

class QAction;
class QLabel;
class QProcess;
class QToolButton;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTableWidgetItem;

namespace mirrorlab::ui {

class TrainingPanel;

class RunsPanel : public QWidget {
    Q_OBJECT
public:
    enum Column { RunColumn = 0, NameColumn, DevicesColumn, DataColumn, OptimizerColumn, EpochsColumn, BestValLossColumn,
                  AccuracyColumn, ValAccuracyColumn, StatusColumn, NoteColumn, ColumnCount };

    explicit RunsPanel(TrainingController* controller, QWidget* parent = nullptr);
    ~RunsPanel() override;  // stops the TensorBoard it started

    // The charts "Export charts as PNG..." saves; without one the button is disabled.
    void setTrainingPanel(TrainingPanel* panel);

    // Keras CSVLogger's file for the run: "epoch,accuracy,loss,top5,val_accuracy,val_loss,val_top5"
    // (keys sorted after epoch), epoch 0-based, values in their shortest exact form, "NA" for a
    // validation value the run does not have.
    static QString historyCsv(const RunRecord& record);
    bool exportCsv(int run_id, const QString& path, QString* error) const;
    // Stored run `run_id`'s last checkpoint as a Keras 3 .keras file (core/export/keras_file.h).
    bool exportKeras(int run_id, const QString& path, QString* error) const;
    // The same off the GUI thread (a large model's archive takes seconds): the panel says it is
    // exporting, then where it went or why it could not. False, with the reason, when it cannot
    // start (no such kept run, another export running).
    bool startKerasExport(int run_id, const QString& path, QString* error);
    BackgroundJob* exportJob() const { return export_job_; }
    // "Exporting run 3 to …", "Exported run 3 to …", or the failure: the last export's line.
    QString exportStatus() const;
    bool lastExportFailed() const { return last_export_failed_; }
    bool exportChartsPng(const QString& path, QString* error) const;
    // The stored run's event files in `folder`/train and /validation, as Keras' TensorBoard
    // callback writes them (core/export/tensorboard.h).
    bool exportTensorBoard(int run_id, const QString& folder, QString* error) const;
    // Where "Open in TensorBoard" exports a run: a folder inside the run's own folder.
    QString tensorBoardFolder(int run_id) const;
    // Exports the run there and starts `tensorboard --logdir` on it (the browser opens at the URL
    // it prints). False with the reason — how to install TensorBoard when it is not on PATH.
    bool openInTensorBoard(int run_id, QString* message);
    QProcess* tensorBoardProcess() const { return tensorboard_; }

    QTableWidget* table() const { return table_; }
    QLineEdit* filterEdit() const { return filter_; }
    // Rows whose run matches the filter text (name, note, data, devices, status); others are hidden.
    int visibleRowCount() const;
    void selectRun(int run_id);
    // The run's status as the table shows it ("interrupted", "finished", "early stopping, ...").
    QString statusText(int run_id) const;
    int rowCount() const;
    int selectedRunId() const;  // the selected row's run, else the latest run; 0 if there is none
    int selectedRunIdOnly() const;  // the selected row's run; 0 when no row is selected
    QList<int> overlayRuns() const;
    void setOverlayChecked(int run_id, bool checked);

signals:
    void overlayRunsChanged(const QList<int>& run_ids);
    void trainAgainRequested(int run_id);
    void resumeRequested(int run_id);

public slots:
    void refresh();  // brings every row up to date with the controller's runs

private:
    void buildTable();
    void buildFilter();
    void buildButtons();
    void buildExportMenu();
    void fillRow(int row, const RunRecord& record);
    // Tells the table's view that `cells` (x: columns, y: rows) changed: one notice, or up to four
    // around a cell whose editor is open.
    void announceChanged(const QRect& cells);
    void finishEditOnRowThatMoves();
    QString statusOf(const RunRecord& record, QString* tip, bool* failed) const;
    void applyFilter();
    void onItemEdited(QTableWidgetItem* item);
    void deleteInteractively();
    void exportCsvInteractively();
    void exportKerasInteractively();
    void exportPngInteractively();
    void exportTensorBoardInteractively();
    void openInTensorBoardInteractively();
    void updateButtons();

    TrainingController* controller_ = nullptr;
    QPointer<TrainingPanel> training_panel_;
    QTableWidget* table_ = nullptr;
    QLineEdit* filter_ = nullptr;
    QLabel* store_label_ = nullptr;
    QPushButton* train_again_button_ = nullptr;
    QPushButton* resume_button_ = nullptr;
    QPushButton* delete_button_ = nullptr;
    QToolButton* export_button_ = nullptr;
    QAction* export_csv_action_ = nullptr;
    QAction* export_keras_action_ = nullptr;
    QAction* export_png_action_ = nullptr;
    QAction* export_tensorboard_action_ = nullptr;
    QAction* open_tensorboard_action_ = nullptr;
    QProcess* tensorboard_ = nullptr;  // the TensorBoard this panel started, if any
    BackgroundJob* export_job_ = nullptr;  // a .keras export being written
    QLabel* export_status_ = nullptr;
    bool last_export_failed_ = false;
    bool filling_ = false;  // ignore itemChanged while the panel writes the table itself
    bool finishing_edit_ = false;  // finishEditOnRowThatMoves is storing an edit
};

}  // namespace mirrorlab::ui
