#pragma once
// The live view of one training run: a per-epoch progress bar, the Keras progress line, the run's
// status, and three charts (loss, accuracy, top-5 accuracy) with training curves per step,
// validation points per epoch, optional smoothing, zoom and pan, overfitting / early-stopping
// markers and a banner that explains them, plus curves of earlier runs as an overlay.
//
// The controller's signals only append to point buffers and mark the panel dirty; a timer (every
// 500 ms, or what the controller's refresh pacer asks while a CPU run keeps the cores busy) pushes
// the buffers into the series with QXYSeries::replace (one repaint per batch, never one append per
// step).
#include <QList>
#include <QPointF>
#include <QString>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <array>
#include <optional>
#include <cstdint>
#include <map>
#include <vector>

#include "core/train/events.h"
#include "ui/training/training_controller.h"

class QAreaSeries;
class QChart;
class QChartView;
class QComboBox;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QSlider;
class QValueAxis;

namespace mirrorlab::ui {

class TrainingPanel : public QWidget {
    Q_OBJECT
public:
    enum class AxisMode { Steps, Epochs };
    Q_ENUM(AxisMode)

    explicit TrainingPanel(TrainingController* controller, QWidget* parent = nullptr);
    ~TrainingPanel() override;

    // How a run ended, in the interface's language ("Finished: 3 epochs"): the panel's status line
    // and the window's status bar say the same.
    static QString finishedSummary(const mirrorlab::FinishedEvent& event);

    QChart* lossChart() const;
    QChart* accuracyChart() const;
    QChart* top5Chart() const;

    double smoothing() const { return smoothing_; }
    // Points of the loss chart's training / validation series as last pushed to the chart.
    int trainingPointCount() const;
    int runId() const { return run_id_; }  // the run drawn live or last; 0 for none
    int validationPointCount() const;
    bool overfittingShown() const { return overfitting_epoch_ > 0; }
    QString bannerText() const;
    QString progressText() const;   // the progress bar's text: "Epoch 2/3: 13/13 - 5 ms/step - 0.1 s"
    QString kerasLineText() const;  // the last Keras progress line
    QString statusText() const;
    QList<int> overlayRuns() const { return overlay_ids_; }

public slots:
    void clear();
    void setAxisMode(mirrorlab::ui::TrainingPanel::AxisMode mode);
    void setSmoothing(double weight);  // 0 (off) .. 0.99
    void setOverlayRuns(const QList<int>& run_ids);
    void resetZoom();
    void refreshNow();  // pushes pending chart data now instead of on the next timer tick

    // What the controller's signals are connected to; public so tests can feed events directly.
    void handleRunStarted(int run_id);
    void handleTrainBegan(const mirrorlab::TrainBeginEvent& event);
    void handleEpochBegan(const mirrorlab::EpochBeginEvent& event);
    void handleStepsEnded(const std::vector<mirrorlab::StepEndEvent>& steps);
    void handleEpochEnded(const mirrorlab::EpochEndEvent& event);
    void handleWarning(const mirrorlab::WarningEvent& event);
    void handleFinished(const mirrorlab::FinishedEvent& event);
    void handleFailed(const mirrorlab::FailedEvent& event);
    void handleStateChanged(mirrorlab::ui::TrainingController::State state);

protected:
    // The loss chart's legend goes beside the plot in a short chart and under it in a tall one.
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QString overfittingLabel() const;

private:
    static constexpr int kMetrics = 3;  // loss, accuracy, top-5 accuracy

    struct OverlaySeries {
        int run_id = 0;
        QLineSeries* train = nullptr;
        QLineSeries* validation = nullptr;
    };

    // One chart and everything drawn on it.
    struct MetricChart {
        int metric = 0;
        QChart* chart = nullptr;
        QChartView* view = nullptr;
        QValueAxis* x_axis = nullptr;
        QValueAxis* y_axis = nullptr;
        QLineSeries* train = nullptr;
        QLineSeries* smoothed = nullptr;
        QLineSeries* validation = nullptr;
        QLineSeries* overfit_upper = nullptr;  // owned by overfit_area
        QLineSeries* overfit_lower = nullptr;
        QAreaSeries* overfit_area = nullptr;
        QLineSeries* best_line = nullptr;
        QLineSeries* stop_line = nullptr;
        QLineSeries* restored_line = nullptr;
        std::vector<OverlaySeries> overlays;
        bool user_zoomed = false;
        int fitted_labels = 0;  // the y labels the plot's height held when the axes were last set
    };

    // Buffers for both axis modes, filled as events arrive; the timer pushes the current mode's.
    struct MetricBuffers {
        QVector<QPointF> train_steps;
        QVector<QPointF> train_epochs;
        QVector<QPointF> validation_steps;
        QVector<QPointF> validation_epochs;
    };

    QHBoxLayout* buildControls();
    QGridLayout* buildCharts();
    void connectController();
    void buildChart(MetricChart& chart, int metric, const QString& title);
    void createLiveSeries(MetricChart& chart);
    void applyTrainPens(MetricChart& chart);
    void appendStep(std::int64_t global_step, int epoch, const Metrics& running);
    void appendEpoch(int epoch, const Metrics& train, const Metrics& validation, bool has_validation);
    void loadRecord(const RunRecord& record);
    void beginRun(int run_id);                     // the charts emptied for the run, its plan read
    void drawHistory(const RunRecord& record);     // the steps and epochs the record holds
    void showStoredEnd(const RunRecord& record);
    void markDirty();
    void refresh();
    void rebuildOverlays();
    void updateRanges(MetricChart& chart);
    // Points drawn per curve on this chart: two per pixel column of its plot (a bucket's lowest and
    // highest), which draw the picture every point would; kMaxDrawnPoints before it is laid out.
    static int drawnPoints(const MetricChart& chart);
    void updateDecorations(MetricChart& chart);
    void updateBanner();
    void updateTicksAfterZoom(MetricChart& chart);
    void onAxisRangeChanged(MetricChart& chart);
    double epochStartX(int epoch) const;  // where the epoch's training begins on the x axis
    double epochEndX(int epoch) const;    // where its validation point sits
    double plannedXMax() const;

    TrainingController* controller_ = nullptr;

    QLabel* status_label_ = nullptr;
    QProgressBar* progress_bar_ = nullptr;
    QLabel* keras_label_ = nullptr;
    QLabel* banner_label_ = nullptr;
    QComboBox* axis_combo_ = nullptr;
    QSlider* smoothing_slider_ = nullptr;
    QLabel* smoothing_label_ = nullptr;
    QPushButton* reset_zoom_button_ = nullptr;
    std::array<MetricChart, kMetrics> charts_;
    QTimer refresh_timer_;
    // The progress bar's latest step, painted with the charts: a Fusion progress bar repainted at
    // every drained batch of steps (20 times a second) cost a replica ~5 % of a core.
    struct PendingProgress {
        int maximum = 1;
        int value = 0;
        QString text;
    };
    std::optional<PendingProgress> pending_progress_;

    AxisMode axis_mode_ = AxisMode::Steps;
    double smoothing_ = 0.0;
    bool applying_range_ = false;  // set while the panel itself moves the axes (not a user zoom)
    QList<int> overlay_ids_;

    // The run on display.
    int run_id_ = 0;
    int planned_epochs_ = 0;
    std::int64_t steps_per_epoch_ = 0;
    int current_epoch_ = 0;
    std::int64_t last_global_step_ = 0;
    std::map<int, std::int64_t> epoch_end_step_;  // epoch -> global step of its last training step
    std::array<MetricBuffers, kMetrics> buffers_;
    double epoch_step_time_ms_sum_ = 0.0;
    std::int64_t epoch_steps_timed_ = 0;
    int overfitting_epoch_ = 0;  // the epoch whose validation loss first rose (shaded from there); 0: none
    int best_epoch_ = 0;
    int stop_epoch_ = 0;      // early stopping ended the run after this epoch
    int restored_epoch_ = 0;  // weights restored from this epoch
    std::string early_stopping_monitor_ = "val_loss";
    bool early_stopping_restores_ = false;  // the run has early stopping with restore_best_weights
    bool finished_ = false;
};

}  // namespace mirrorlab::ui
