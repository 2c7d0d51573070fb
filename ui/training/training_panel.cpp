#include "ui/training/training_panel.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFontDatabase>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <utility>
#include <cmath>
#include <limits>

#include "core/train/progress.h"
#include "ui/common/theme.h"
#include "ui/training/chart_ticks.h"
#include "ui/training/decimate.h"
#include "ui/training/zoomable_chart_view.h"

namespace mirrorlab::ui {

namespace {

enum MetricIndex { kLoss = 0, kAccuracy = 1, kTop5 = 2 };

double metricValue(const Metrics& metrics, int metric) {
    switch (metric) {
        case kLoss: return metrics.loss;
        case kAccuracy: return metrics.accuracy;
        default: return metrics.top5;
    }
}

const QColor kTrainColor(31, 119, 180);
const QColor kValidationColor(255, 127, 14);
const QColor kOverfitColor(214, 39, 40, 38);
const QColor kBestColor(44, 160, 44);
const QColor kStopColor(214, 39, 40);
const QColor kRestoredColor(148, 103, 189);

// Muted hues for earlier runs, so the live run stays the one that catches the eye.
QColor overlayColor(int index) {
    static const int hues[] = {200, 30, 120, 280, 0, 60, 170, 320};
    return QColor::fromHsv(hues[index % 8], 70, 165);
}

QPen makePen(const QColor& color, qreal width, Qt::PenStyle style = Qt::SolidLine) {
    QPen pen(color);
    pen.setWidthF(width);
    pen.setStyle(style);
    return pen;
}

// TensorBoard's smoothing: an exponential moving average, debiased so the first points are not
// dragged towards zero.
QVector<QPointF> smoothed(const QVector<QPointF>& raw, double weight) {
    QVector<QPointF> out;
    out.reserve(raw.size());
    double last = 0.0;
    double debias = 1.0;
    for (const QPointF& point : raw) {
        last = last * weight + (1.0 - weight) * point.y();
        debias *= weight;
        out.append(QPointF(point.x(), last / (1.0 - debias)));
    }
    return out;
}

// As many y labels as a plot's height holds without Qt eliding them all to "..." (the two ends at
// least). Qt Charts gives each of N labels height / N, less 4 px of padding above and below, and
// elides a label taller than that: a line of the labels' font and 2 px to spare each. (The height /
// 28 + 1 of before put 4 labels on a 1366x768 window's 85 px loss plot after one epoch: "...".)
int yLabelsThatFit(const QChart* chart) {
    const qreal plot_height = chart->plotArea().height();
    if (!(plot_height > 0)) return 8;
    const QList<QAbstractAxis*> axes = chart->axes(Qt::Vertical);
    const QFont font = axes.isEmpty() ? chart->font() : axes.front()->labelsFont();
    const qreal per_label = QFontMetricsF(font).height() + 2 * 4.0 + 2.0;
    return std::clamp(static_cast<int>(plot_height / per_label), 2, 8);
}

QString formatDuration(double seconds) {
    const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    if (total < 60) return QObject::tr("%1 s").arg(total);
    const long long hours = total / 3600;
    const long long minutes = (total / 60) % 60;
    const long long secs = total % 60;
    if (hours == 0) return QStringLiteral("%1:%2").arg(minutes).arg(secs, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2:%3").arg(hours).arg(minutes, 2, 10, QLatin1Char('0')).arg(secs, 2, 10, QLatin1Char('0'));
}

}  // namespace

TrainingPanel::TrainingPanel(TrainingController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller) {
    status_label_ = new QLabel(tr("No run yet"), this);
    QFont status_font = status_label_->font();
    status_font.setBold(true);
    status_label_->setFont(status_font);
    status_label_->setWordWrap(true);
    status_label_->setTextFormat(Qt::PlainText);

    progress_bar_ = new QProgressBar(this);
    progress_bar_->setRange(0, 1);
    progress_bar_->setValue(0);
    progress_bar_->setTextVisible(true);
    progress_bar_->setFormat(tr("Waiting for the first epoch"));

    keras_label_ = new QLabel(this);
    keras_label_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    keras_label_->setTextFormat(Qt::PlainText);
    keras_label_->setWordWrap(true);
    keras_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    keras_label_->setToolTip(tr("The last epoch's progress line, as Keras prints it with verbose=2"));

    banner_label_ = new QLabel(this);
    banner_label_->setTextFormat(Qt::PlainText);
    banner_label_->setWordWrap(true);
    banner_label_->setStyleSheet(QStringLiteral(
        "QLabel { background: #fff3e0; color: #5d3a00; border: 1px solid #f0a030; border-radius: 4px; padding: 6px; }"));
    banner_label_->hide();

    QHBoxLayout* controls = buildControls();
    QGridLayout* charts = buildCharts();

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(status_label_);
    layout->addWidget(progress_bar_);
    layout->addWidget(keras_label_);
    layout->addWidget(banner_label_);
    layout->addLayout(controls);
    layout->addLayout(charts, 1);

    refresh_timer_.setSingleShot(true);
    // Twice a second: enough to watch a run (TensorBoard refreshes every 30 s), and on a
    // software-rendered display (Xvfb, a remote desktop) stroking the antialiased curves then takes
    // a few percent of a core instead of the quarter of one that ten frames a second took from the
    // replicas (issue #17). While a run on CPU devices keeps the cores busy, the controller's pacer
    // stretches it further when the GUI thread needs more than its budget (refresh_pacer.h).
    refresh_timer_.setInterval(RefreshPacer::kFastestMs);
    connect(&refresh_timer_, &QTimer::timeout, this, &TrainingPanel::refresh);

    setSmoothing(0.0);

    if (controller_ != nullptr) connectController();
    refresh();
}

// The x axis, smoothing and zoom controls above the charts.
QHBoxLayout* TrainingPanel::buildControls() {
    axis_combo_ = new QComboBox(this);
    axis_combo_->addItem(tr("Steps"));
    axis_combo_->addItem(tr("Epochs"));
    axis_combo_->setToolTip(tr("Steps: training curves per step (running mean within the epoch), validation at the "
                               "step where its epoch ended. Epochs: one training and one validation point per epoch."));
    connect(axis_combo_, &QComboBox::currentIndexChanged, this,
            [this](int index) { setAxisMode(index == 1 ? AxisMode::Epochs : AxisMode::Steps); });

    smoothing_slider_ = new QSlider(Qt::Horizontal, this);
    smoothing_slider_->setRange(0, 99);
    smoothing_slider_->setValue(0);
    smoothing_slider_->setMaximumWidth(200);
    smoothing_slider_->setToolTip(tr("Exponential moving average of the training curves; the raw curve stays visible"));
    smoothing_label_ = new QLabel(this);
    connect(smoothing_slider_, &QSlider::valueChanged, this, [this](int value) { setSmoothing(value / 100.0); });

    reset_zoom_button_ = new QPushButton(tr("Reset zoom"), this);
    reset_zoom_button_->setToolTip(tr("Drag to zoom into a rectangle, scroll to zoom, middle button or Shift+drag to "
                                      "pan, right click to zoom out"));
    connect(reset_zoom_button_, &QPushButton::clicked, this, &TrainingPanel::resetZoom);

    auto* controls = new QHBoxLayout;
    auto* axis_label = new QLabel(tr("X axis:"), this);
    axis_label->setBuddy(axis_combo_);
    controls->addWidget(axis_label);
    controls->addWidget(axis_combo_);
    controls->addSpacing(16);
    auto* smoothing_label = new QLabel(tr("Smoothing:"), this);
    smoothing_label->setBuddy(smoothing_slider_);
    controls->addWidget(smoothing_label);
    controls->addWidget(smoothing_slider_);
    controls->addWidget(smoothing_label_);
    controls->addStretch(1);
    controls->addWidget(reset_zoom_button_);
    return controls;
}

// The loss chart across the top (it holds the legend), accuracy and top-5 accuracy under it.
QGridLayout* TrainingPanel::buildCharts() {
    buildChart(charts_[kLoss], kLoss, tr("Loss"));
    buildChart(charts_[kAccuracy], kAccuracy, tr("Accuracy"));
    buildChart(charts_[kTop5], kTop5, tr("Top-5 accuracy"));

    auto* charts = new QGridLayout;
    charts->addWidget(charts_[kLoss].view, 0, 0, 1, 2);
    charts->addWidget(charts_[kAccuracy].view, 1, 0);
    charts->addWidget(charts_[kTop5].view, 1, 1);
    // One legend is enough: the three charts draw the same series in the same colours, and the
    // smaller ones would truncate every label.
    charts_[kAccuracy].chart->legend()->hide();
    charts_[kTop5].chart->legend()->hide();
    charts_[kAccuracy].view->setToolTip(tr("Same series and colours as the loss chart's legend. ") +
                                        reset_zoom_button_->toolTip());
    charts_[kTop5].view->setToolTip(charts_[kAccuracy].view->toolTip());
    // The loss chart also holds the legend.
    charts->setRowStretch(0, 6);
    charts->setRowStretch(1, 5);
    return charts;
}

void TrainingPanel::connectController() {
    connect(controller_, &TrainingController::runStarted, this, &TrainingPanel::handleRunStarted);
    connect(controller_, &TrainingController::trainBegan, this, &TrainingPanel::handleTrainBegan);
    connect(controller_, &TrainingController::epochBegan, this, &TrainingPanel::handleEpochBegan);
    connect(controller_, &TrainingController::stepsEnded, this, &TrainingPanel::handleStepsEnded);
    connect(controller_, &TrainingController::epochEnded, this, &TrainingPanel::handleEpochEnded);
    connect(controller_, &TrainingController::warningRaised, this, &TrainingPanel::handleWarning);
    connect(controller_, &TrainingController::runFinished, this, &TrainingPanel::handleFinished);
    connect(controller_, &TrainingController::runFailed, this, &TrainingPanel::handleFailed);
    connect(controller_, &TrainingController::stateChanged, this, &TrainingPanel::handleStateChanged);
    connect(controller_, &TrainingController::runsChanged, this, [this] {
        // The run drawn was deleted: its curves go with it.
        if (run_id_ == 0 || controller_->run(run_id_) != nullptr) return;
        const int deleted = run_id_;
        clear();
        status_label_->setText(tr("Run %1 was deleted").arg(deleted));
    });
    // A panel created while (or after) a run goes shows what happened so far.
    if (const RunRecord* record = controller_->currentRun()) loadRecord(*record);
}

TrainingPanel::~TrainingPanel() = default;

QString TrainingPanel::overfittingLabel() const {
    // Beside a short plot the legend is a narrow column: the short name fits where the long one
    // would be cut to "overfitting from epo..." (the banner and the best-epoch line name it).
    if (charts_[kLoss].chart->legend()->alignment() == Qt::AlignRight) return tr("overfitting");
    return tr("overfitting from epoch %1").arg(overfitting_epoch_);
}

bool TrainingPanel::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Resize && watched == charts_[kLoss].view) {
        // Under the plot the legend costs a row of height, beside it a column of width; a short
        // chart (a laptop screen) has width to spare, and Qt Charts elides every axis label of a
        // plot squeezed too flat.
        const auto alignment = charts_[kLoss].view->height() < 260 ? Qt::AlignRight : Qt::AlignBottom;
        if (charts_[kLoss].chart->legend()->alignment() != alignment) {
            charts_[kLoss].chart->legend()->setAlignment(alignment);
            if (overfitting_epoch_ > 0) charts_[kLoss].overfit_area->setName(overfittingLabel());
        }
    }
    return QWidget::eventFilter(watched, event);
}

void TrainingPanel::buildChart(MetricChart& c, int metric, const QString& title) {
    c.metric = metric;
    c.chart = new QChart;
    c.chart->setTheme(chartTheme(palette()));  // first: a theme resets the colours set below
    c.chart->setTitle(title);
    QFont title_font = c.chart->titleFont();
    title_font.setBold(true);
    c.chart->setTitleFont(title_font);
    c.chart->setMargins(QMargins(4, 4, 4, 4));
    // The chart's own frame around its background would take 18 px of every short chart's height.
    c.chart->layout()->setContentsMargins(0, 0, 0, 0);
    c.chart->setBackgroundRoundness(0);
    c.chart->legend()->setAlignment(Qt::AlignBottom);

    c.x_axis = new QValueAxis;
    c.x_axis->setTitleText(tr("Step"));
    c.x_axis->setLabelFormat(QStringLiteral("%d"));
    // No title on the value axis: the chart's title names the metric, and a rotated title is the
    // first thing Qt Charts elides to "..." in a short chart.
    c.y_axis = new QValueAxis;
    c.y_axis->setLabelFormat(QStringLiteral("%.1f"));
    c.chart->addAxis(c.x_axis, Qt::AlignBottom);
    c.chart->addAxis(c.y_axis, Qt::AlignLeft);

    auto add = [&](QAbstractSeries* series) {
        c.chart->addSeries(series);
        series->attachAxis(c.x_axis);
        series->attachAxis(c.y_axis);
    };

    // Added first so that it lies under the curves.
    c.overfit_upper = new QLineSeries(this);
    c.overfit_lower = new QLineSeries(this);
    c.overfit_area = new QAreaSeries(c.overfit_upper, c.overfit_lower);
    c.overfit_area->setName(tr("overfitting"));
    c.overfit_area->setBrush(kOverfitColor);
    c.overfit_area->setPen(Qt::NoPen);
    c.overfit_area->setVisible(false);
    add(c.overfit_area);

    createLiveSeries(c);

    c.view = new ZoomableChartView(c.chart, this);
    // Small enough for a 1366x768 screen with the docks beside and under the charts.
    c.view->setMinimumSize(200, 130);
    c.view->installEventFilter(this);
    c.view->setAccessibleName(tr("%1 chart").arg(title));
    c.view->setToolTip(reset_zoom_button_->toolTip());

    // Any range change the panel did not make itself is the person zooming or panning: from then on
    // the axes stay where they put them until "Reset zoom".
    connect(c.x_axis, &QValueAxis::rangeChanged, this, [this, &c] { onAxisRangeChanged(c); });
    connect(c.y_axis, &QValueAxis::rangeChanged, this, [this, &c] { onAxisRangeChanged(c); });
    // A chart made shorter or taller (a dock opened below it, the window resized) after its run
    // ended gets no refresh: its labels are fitted to the new height here.
    connect(c.chart, &QChart::plotAreaChanged, this, [this, &c] {
        if (!c.user_zoomed && c.fitted_labels != 0 && yLabelsThatFit(c.chart) != c.fitted_labels) updateRanges(c);
    });
}

// The live run's series. Created again (empty) after overlays are added, because series are painted
// in the order they were added and the live run belongs on top; removing a series that holds points
// and adding it back leaves it drawn against a stale domain in Qt Charts 6.4.
void TrainingPanel::createLiveSeries(MetricChart& c) {
    for (QLineSeries* old : {c.train, c.smoothed, c.validation, c.best_line, c.stop_line, c.restored_line}) {
        if (old == nullptr) continue;
        c.chart->removeSeries(old);
        delete old;
    }
    auto add = [&](QLineSeries* series) {
        c.chart->addSeries(series);
        series->attachAxis(c.x_axis);
        series->attachAxis(c.y_axis);
    };
    c.train = new QLineSeries;
    c.train->setName(tr("training"));
    add(c.train);

    c.smoothed = new QLineSeries;
    c.smoothed->setName(tr("training (smoothed)"));
    c.smoothed->setPen(makePen(kTrainColor, 2.0));
    add(c.smoothed);

    c.validation = new QLineSeries;
    c.validation->setName(tr("validation"));
    c.validation->setPen(makePen(kValidationColor, 2.0));
    c.validation->setPointsVisible(true);
    c.validation->setMarkerSize(7.0);
    add(c.validation);

    c.best_line = new QLineSeries;
    c.best_line->setPen(makePen(kBestColor, 2.0, Qt::DashLine));
    c.best_line->setVisible(false);
    add(c.best_line);

    c.stop_line = new QLineSeries;
    c.stop_line->setPen(makePen(kStopColor, 2.0, Qt::DashDotLine));
    c.stop_line->setVisible(false);
    add(c.stop_line);

    c.restored_line = new QLineSeries;
    c.restored_line->setPen(makePen(kRestoredColor, 2.0, Qt::DotLine));
    c.restored_line->setVisible(false);
    add(c.restored_line);

    applyTrainPens(c);
}

void TrainingPanel::applyTrainPens(MetricChart& c) {
    QColor raw = kTrainColor;
    if (smoothing_ > 0.0) raw.setAlpha(70);  // the raw curve stays visible, lighter
    c.train->setPen(makePen(raw, smoothing_ > 0.0 ? 1.0 : 2.0));
    c.smoothed->setVisible(smoothing_ > 0.0);
}

QChart* TrainingPanel::lossChart() const { return charts_[kLoss].chart; }
QChart* TrainingPanel::accuracyChart() const { return charts_[kAccuracy].chart; }
QChart* TrainingPanel::top5Chart() const { return charts_[kTop5].chart; }

int TrainingPanel::trainingPointCount() const {
    const MetricBuffers& b = buffers_[kLoss];  // every point held, not the decimated drawing
    return static_cast<int>((axis_mode_ == AxisMode::Steps ? b.train_steps : b.train_epochs).size());
}
int TrainingPanel::validationPointCount() const { return static_cast<int>(charts_[kLoss].validation->count()); }
QString TrainingPanel::bannerText() const { return banner_label_->text(); }
QString TrainingPanel::progressText() const { return progress_bar_->text(); }
QString TrainingPanel::kerasLineText() const { return keras_label_->text(); }
QString TrainingPanel::statusText() const { return status_label_->text(); }

void TrainingPanel::clear() {
    run_id_ = 0;
    planned_epochs_ = 0;
    steps_per_epoch_ = 0;
    current_epoch_ = 0;
    last_global_step_ = 0;
    epoch_end_step_.clear();
    for (auto& buffers : buffers_) buffers = MetricBuffers{};
    epoch_step_time_ms_sum_ = 0.0;
    epoch_steps_timed_ = 0;
    overfitting_epoch_ = 0;
    best_epoch_ = 0;
    stop_epoch_ = 0;
    restored_epoch_ = 0;
    early_stopping_monitor_ = "val_loss";
    early_stopping_restores_ = false;
    finished_ = false;
    for (auto& c : charts_) c.user_zoomed = false;

    status_label_->setText(tr("No run yet"));
    status_label_->setToolTip(QString());
    status_label_->setStyleSheet(QString());
    pending_progress_.reset();
    progress_bar_->setRange(0, 1);
    progress_bar_->setValue(0);
    progress_bar_->setFormat(tr("Waiting for the first epoch"));
    keras_label_->clear();
    updateBanner();
    markDirty();
}

void TrainingPanel::handleRunStarted(int run_id) {
    beginRun(run_id);
    // A resumed run goes on from its history: the epochs and steps it had are drawn again (the
    // trainer only sends what comes after them).
    if (controller_ != nullptr) {
        if (const RunRecord* record = controller_->run(run_id)) drawHistory(*record);
    }
}

void TrainingPanel::drawHistory(const RunRecord& record) {
    if (record.steps_per_epoch > 0) steps_per_epoch_ = record.steps_per_epoch;
    for (const StepPoint& step : record.steps) appendStep(step.global_step, step.epoch, step.running);
    for (const EpochRecord& epoch : record.epochs) appendEpoch(epoch.epoch, epoch.train, epoch.validation, epoch.has_validation);
}

void TrainingPanel::beginRun(int run_id) {
    clear();
    run_id_ = run_id;
    if (controller_ != nullptr) {
        if (const RunRecord* record = controller_->run(run_id)) {
            planned_epochs_ = record->config.epochs;
            early_stopping_monitor_ = record->config.early_stopping.monitor;
            early_stopping_restores_ =
                record->config.early_stopping.enabled && record->config.early_stopping.restore_best_weights;
        }
    }
    status_label_->setText(tr("Running"));
    // The new run may have been in the overlay list; it is drawn live now, not as an overlay.
    rebuildOverlays();
}

void TrainingPanel::handleTrainBegan(const TrainBeginEvent& event) {
    planned_epochs_ = event.epochs;
    steps_per_epoch_ = event.steps_per_epoch;
    markDirty();
}

void TrainingPanel::handleEpochBegan(const EpochBeginEvent& event) {
    current_epoch_ = event.epoch;
    if (event.epochs > 0) planned_epochs_ = event.epochs;
    epoch_step_time_ms_sum_ = 0.0;
    epoch_steps_timed_ = 0;
    pending_progress_.reset();
    progress_bar_->setRange(0, static_cast<int>(std::max<std::int64_t>(1, event.steps)));
    progress_bar_->setValue(0);
    progress_bar_->setFormat(tr("Epoch %1/%2: 0/%3").arg(event.epoch).arg(event.epochs).arg(event.steps));
}

void TrainingPanel::handleStepsEnded(const std::vector<StepEndEvent>& steps) {
    if (steps.empty()) return;
    for (const StepEndEvent& step : steps) {
        appendStep(step.global_step, step.epoch, step.running);
        if (step.epoch != current_epoch_) {
            current_epoch_ = step.epoch;
            epoch_step_time_ms_sum_ = 0.0;
            epoch_steps_timed_ = 0;
        }
        epoch_step_time_ms_sum_ += step.step_time_ms;
        ++epoch_steps_timed_;
    }
    const StepEndEvent& last = steps.back();
    const double ms_per_step = epoch_steps_timed_ > 0 ? epoch_step_time_ms_sum_ / static_cast<double>(epoch_steps_timed_) : 0.0;
    const double eta_seconds = static_cast<double>(std::max<std::int64_t>(0, last.steps - last.step)) * ms_per_step / 1000.0;
    pending_progress_ = PendingProgress{static_cast<int>(std::max<std::int64_t>(1, last.steps)), static_cast<int>(last.step),
                                        tr("Epoch %1/%2: %3/%4 - %5 ms/step - ETA %6")
                                            .arg(last.epoch)
                                            .arg(planned_epochs_)
                                            .arg(last.step)
                                            .arg(last.steps)
                                            .arg(ms_per_step, 0, 'f', ms_per_step < 10.0 ? 1 : 0)
                                            .arg(formatDuration(eta_seconds))};
    markDirty();
}

void TrainingPanel::handleEpochEnded(const EpochEndEvent& event) {
    appendEpoch(event.epoch, event.train, event.validation, event.has_validation);
    if (event.epochs > 0) planned_epochs_ = event.epochs;
    const int steps = static_cast<int>(std::max<std::int64_t>(1, event.steps));
    pending_progress_.reset();  // the epoch's own line replaces its last step's
    progress_bar_->setRange(0, steps);
    progress_bar_->setValue(steps);
    progress_bar_->setFormat(tr("Epoch %1/%2: %3/%4 - %5 ms/step - %6")
                                 .arg(event.epoch)
                                 .arg(event.epochs)
                                 .arg(event.steps)
                                 .arg(event.steps)
                                 .arg(event.ms_per_step, 0, 'f', event.ms_per_step < 10.0 ? 1 : 0)
                                 .arg(formatDuration(event.epoch_seconds)));
    keras_label_->setText(tr("Epoch %1/%2").arg(event.epoch).arg(event.epochs) + QLatin1Char('\n') +
                          QString::fromStdString(keras_progress_line(event)));
}

void TrainingPanel::handleWarning(const WarningEvent& event) {
    if (event.code == "overfitting") {
        // A new best epoch since the last warning means validation loss recovered for a while:
        // the shaded stretch starts again at this epoch.
        if (overfitting_epoch_ == 0 || event.best_epoch != best_epoch_) overfitting_epoch_ = std::max(1, event.epoch);
        best_epoch_ = event.best_epoch;
    } else if (event.code == "early_stopping") {
        stop_epoch_ = event.epoch;
        best_epoch_ = event.best_epoch;
    } else {
        return;  // other warnings belong to the log
    }
    updateBanner();
    markDirty();
}

QString TrainingPanel::finishedSummary(const FinishedEvent& event) {
    switch (event.reason) {
        case FinishReason::EarlyStopping:
            return tr("Finished: early stopping after %1 epochs").arg(event.epochs_completed);
        case FinishReason::StoppedByUser:
            return event.epochs_completed == 1 ? tr("Stopped after 1 complete epoch")
                                               : tr("Stopped after %1 complete epochs").arg(event.epochs_completed);
        default:
            return event.epochs_completed == 1 ? tr("Finished: 1 epoch") : tr("Finished: %1 epochs").arg(event.epochs_completed);
    }
}

void TrainingPanel::handleFinished(const FinishedEvent& event) {
    finished_ = true;
    if (event.reason == FinishReason::EarlyStopping) {
        if (stop_epoch_ == 0) stop_epoch_ = event.epochs_completed;
        if (event.best_epoch > 0) best_epoch_ = event.best_epoch;
        restored_epoch_ = event.restored_epoch;
    }
    status_label_->setText(finishedSummary(event));
    status_label_->setStyleSheet(QString());
    updateBanner();
    refreshNow();  // the whole run at once, not a paced interval later
}

void TrainingPanel::handleFailed(const FailedEvent& event) {
    finished_ = true;
    QString where;
    if (event.epoch > 0) where = tr(" at epoch %1, step %2").arg(event.epoch).arg(event.step);
    status_label_->setText(tr("Failed (%1)%2: %3")
                               .arg(QString::fromStdString(event.kind), where, QString::fromStdString(event.reason)));
    status_label_->setStyleSheet(QStringLiteral("QLabel { color: #b00020; }"));
    refreshNow();  // every step the run made, at once
}

void TrainingPanel::handleStateChanged(TrainingController::State state) {
    switch (state) {
        case TrainingController::State::Running: status_label_->setText(tr("Running")); break;
        case TrainingController::State::Paused: status_label_->setText(tr("Paused")); break;
        case TrainingController::State::Stopping: status_label_->setText(tr("Stopping after the current step…")); break;
        case TrainingController::State::Idle: break;  // runFinished / runFailed say how it ended
    }
    if (state != TrainingController::State::Idle) status_label_->setStyleSheet(QString());
}

void TrainingPanel::appendStep(std::int64_t global_step, int epoch, const Metrics& running) {
    last_global_step_ = global_step;
    epoch_end_step_[epoch] = global_step;
    const auto x = static_cast<double>(global_step);
    for (int m = 0; m < kMetrics; ++m) {
        const double y = metricValue(running, m);
        if (std::isfinite(y)) buffers_[m].train_steps.append(QPointF(x, y));
    }
    markDirty();
}

void TrainingPanel::appendEpoch(int epoch, const Metrics& train, const Metrics& validation, bool has_validation) {
    const double step_x = epochEndX(epoch);
    for (int m = 0; m < kMetrics; ++m) {
        const double y = metricValue(train, m);
        if (std::isfinite(y)) buffers_[m].train_epochs.append(QPointF(epoch, y));
        const double v = metricValue(validation, m);
        if (has_validation && std::isfinite(v)) {
            buffers_[m].validation_epochs.append(QPointF(epoch, v));
            buffers_[m].validation_steps.append(QPointF(step_x, v));
        }
    }
    markDirty();
}

void TrainingPanel::loadRecord(const RunRecord& record) {
    beginRun(record.id);
    drawHistory(record);
    for (const WarningEvent& warning : record.warnings) handleWarning(warning);
    if (record.finished) handleFinished(*record.finished);
    if (record.failed) handleFailed(*record.failed);
    if (!record.running && !record.finished && !record.failed) showStoredEnd(record);
}

// A run of an earlier session, or one another process trains: no event will say how it ended, so
// the store's word for it is shown, not "Running" over a bar waiting for its first epoch.
void TrainingPanel::showStoredEnd(const RunRecord& record) {
    finished_ = true;
    const int done = static_cast<int>(record.epochs.size());
    QString text;
    bool failed = false;
    const RunStatus status = record.stored ? record.stored_status : RunStatus::Invalid;
    switch (status) {
        case RunStatus::Finished: text = done == 1 ? tr("Finished: 1 epoch") : tr("Finished: %1 epochs").arg(done); break;
        case RunStatus::Failed:
            text = tr("Failed: %1").arg(record.status_text);
            failed = true;
            break;
        case RunStatus::Interrupted:
            if (!record.has_checkpoint) {
                text = tr("Interrupted before its first epoch finished");
            } else {
                text = done == 1 ? tr("Interrupted after 1 complete epoch; Resume in the Runs panel goes on from there")
                                 : tr("Interrupted after %1 complete epochs; Resume in the Runs panel goes on from there").arg(done);
            }
            break;
        case RunStatus::Running: text = tr("Training in another process"); break;
        case RunStatus::Stopped:
            text = done == 1 ? tr("Stopped after 1 complete epoch") : tr("Stopped after %1 complete epochs").arg(done);
            break;
        default:  // not kept here: a run followed until its following stopped, which goes on elsewhere
            text = record.status_text.isEmpty() ? tr("Ended after %1 complete epochs").arg(done) : record.status_text;
    }
    status_label_->setText(text);
    status_label_->setToolTip(record.status_text);
    status_label_->setStyleSheet(failed ? QStringLiteral("QLabel { color: #b00020; }") : QString());
    const int planned = std::max(record.config.epochs, done);
    progress_bar_->setRange(0, std::max(1, planned));
    progress_bar_->setValue(done);
    progress_bar_->setFormat(tr("%1 of %2 epochs").arg(done).arg(planned));
    updateBanner();
    refreshNow();
}

double TrainingPanel::epochEndX(int epoch) const {
    if (axis_mode_ == AxisMode::Epochs) return epoch;
    if (epoch <= 0) return 0.0;
    const auto it = epoch_end_step_.find(epoch);
    if (it != epoch_end_step_.end()) return static_cast<double>(it->second);
    return static_cast<double>(epoch) * static_cast<double>(steps_per_epoch_);
}

double TrainingPanel::epochStartX(int epoch) const { return epochEndX(epoch - 1); }

double TrainingPanel::plannedXMax() const {
    if (axis_mode_ == AxisMode::Epochs) return planned_epochs_;
    return static_cast<double>(planned_epochs_) * static_cast<double>(steps_per_epoch_);
}

void TrainingPanel::setAxisMode(AxisMode mode) {
    if (mode == axis_mode_) return;
    axis_mode_ = mode;
    {
        const QSignalBlocker blocker(axis_combo_);
        axis_combo_->setCurrentIndex(mode == AxisMode::Epochs ? 1 : 0);
    }
    // The old zoom means nothing on the other axis.
    for (auto& c : charts_) {
        c.user_zoomed = false;
        c.x_axis->setTitleText(mode == AxisMode::Epochs ? tr("Epoch") : tr("Step"));
    }
    rebuildOverlays();
    markDirty();
}

void TrainingPanel::setSmoothing(double weight) {
    smoothing_ = std::clamp(weight, 0.0, 0.99);
    {
        const QSignalBlocker blocker(smoothing_slider_);
        smoothing_slider_->setValue(static_cast<int>(std::lround(smoothing_ * 100.0)));
    }
    smoothing_label_->setText(QString::number(smoothing_, 'f', 2));
    for (auto& c : charts_) applyTrainPens(c);
    markDirty();
}

void TrainingPanel::setOverlayRuns(const QList<int>& run_ids) {
    overlay_ids_ = run_ids;
    rebuildOverlays();
    markDirty();
}

void TrainingPanel::rebuildOverlays() {
    applying_range_ = true;  // attaching series can move the axes; that is not the person zooming
    bool had_overlays = false;
    for (auto& c : charts_) {
        had_overlays = had_overlays || !c.overlays.empty();
        for (OverlaySeries& overlay : c.overlays) {
            c.chart->removeSeries(overlay.train);
            c.chart->removeSeries(overlay.validation);
            delete overlay.train;
            delete overlay.validation;
        }
        c.overlays.clear();
    }
    int index = 0;
    for (int id : overlay_ids_) {
        const RunRecord* record = controller_ != nullptr ? controller_->run(id) : nullptr;
        if (record == nullptr || id == run_id_) continue;
        std::map<int, std::int64_t> end_step;
        for (const StepPoint& step : record->steps) end_step[step.epoch] = step.global_step;
        auto end_x = [&](int epoch) {
            if (axis_mode_ == AxisMode::Epochs) return static_cast<double>(epoch);
            const auto it = end_step.find(epoch);
            return it != end_step.end() ? static_cast<double>(it->second)
                                        : static_cast<double>(epoch) * static_cast<double>(record->steps_per_epoch);
        };
        const QColor color = overlayColor(index++);
        for (auto& c : charts_) {
            QVector<QPointF> train;
            QVector<QPointF> validation;
            if (axis_mode_ == AxisMode::Steps) {
                for (const StepPoint& step : record->steps) {
                    const double y = metricValue(step.running, c.metric);
                    if (std::isfinite(y)) train.append(QPointF(static_cast<double>(step.global_step), y));
                }
            } else {
                for (const EpochRecord& epoch : record->epochs) {
                    const double y = metricValue(epoch.train, c.metric);
                    if (std::isfinite(y)) train.append(QPointF(epoch.epoch, y));
                }
            }
            for (const EpochRecord& epoch : record->epochs) {
                const double y = metricValue(epoch.validation, c.metric);
                if (epoch.has_validation && std::isfinite(y)) validation.append(QPointF(end_x(epoch.epoch), y));
            }
            OverlaySeries overlay;
            overlay.run_id = id;
            overlay.train = new QLineSeries;
            overlay.train->setName(tr("run %1 training").arg(id));
            overlay.train->setPen(makePen(color, 1.5));
            overlay.train->replace(decimated_for_drawing(train, -std::numeric_limits<double>::infinity(),
                                                         std::numeric_limits<double>::infinity()));
            overlay.validation = new QLineSeries;
            overlay.validation->setName(tr("run %1 validation").arg(id));
            overlay.validation->setPen(makePen(color, 1.5, Qt::DashLine));
            overlay.validation->setPointsVisible(true);
            overlay.validation->setMarkerSize(5.0);
            overlay.validation->replace(validation);
            for (QLineSeries* series : {overlay.train, overlay.validation}) {
                c.chart->addSeries(series);
                series->attachAxis(c.x_axis);
                series->attachAxis(c.y_axis);
            }
            c.overlays.push_back(overlay);
        }
    }
    if (had_overlays || !overlay_ids_.isEmpty()) {
        for (auto& c : charts_) createLiveSeries(c);
        refresh();  // the new live series are empty until the buffers are pushed again
    }
    applying_range_ = false;
}

void TrainingPanel::resetZoom() {
    for (auto& c : charts_) c.user_zoomed = false;
    refresh();
}

void TrainingPanel::markDirty() {
    if (refresh_timer_.isActive()) return;
    if (controller_ != nullptr) refresh_timer_.setInterval(controller_->refreshIntervalMs());
    refresh_timer_.start();
}

void TrainingPanel::refreshNow() {
    refresh_timer_.stop();
    refresh();
}

void TrainingPanel::refresh() {
    if (pending_progress_) {
        progress_bar_->setRange(0, pending_progress_->maximum);
        progress_bar_->setValue(pending_progress_->value);
        progress_bar_->setFormat(pending_progress_->text);
        pending_progress_.reset();
    }
    for (auto& c : charts_) {
        const MetricBuffers& b = buffers_[c.metric];
        const QVector<QPointF>& train = axis_mode_ == AxisMode::Steps ? b.train_steps : b.train_epochs;
        // Drawn decimated over what is in view: all of it, or the zoomed part in full detail.
        const double x_min = c.user_zoomed ? c.x_axis->min() : -std::numeric_limits<double>::infinity();
        const double x_max = c.user_zoomed ? c.x_axis->max() : std::numeric_limits<double>::infinity();
        const int points = drawnPoints(c);
        c.train->replace(decimated_for_drawing(train, x_min, x_max, points));
        c.validation->replace(decimated_for_drawing(
            axis_mode_ == AxisMode::Steps ? b.validation_steps : b.validation_epochs, x_min, x_max, points));
        if (smoothing_ > 0.0) {
            c.smoothed->replace(decimated_for_drawing(smoothed(train, smoothing_), x_min, x_max, points));
        } else if (c.smoothed->count() > 0) {
            c.smoothed->clear();
        }
        if (!c.user_zoomed) updateRanges(c);
        updateDecorations(c);
    }
}

int TrainingPanel::drawnPoints(const MetricChart& c) {
    // Qt Charts strokes an outline around every point of a series (for hit tests) each time its
    // points are replaced, and paints each segment: with 2,000 points per curve, the GUI thread's
    // refreshes took CPU time from the replicas that the same picture does not need.
    const qreal width = c.chart->plotArea().width();
    if (!(width > 0)) return kMaxDrawnPoints;
    return std::clamp(2 * static_cast<int>(std::ceil(width)), 4, kMaxDrawnPoints);
}

void TrainingPanel::updateRanges(MetricChart& c) {
    // While a run goes the x axis spans the planned epochs, so the curves grow into a fixed frame;
    // once it has ended, the data decide (early stopping leaves no empty tail).
    double x_max = finished_ ? 1.0 : std::max(1.0, plannedXMax());
    double y_min = std::numeric_limits<double>::infinity();
    double y_max = -std::numeric_limits<double>::infinity();
    auto take = [&](const auto& points) {
        for (const QPointF& p : points) {
            x_max = std::max(x_max, p.x());
            y_min = std::min(y_min, p.y());
            y_max = std::max(y_max, p.y());
        }
    };
    take(c.train->points());
    take(c.validation->points());
    for (const OverlaySeries& overlay : c.overlays) {
        take(overlay.train->points());
        take(overlay.validation->points());
    }
    const bool is_accuracy = c.metric != kLoss;
    if (!std::isfinite(y_min)) {
        y_min = 0.0;
        y_max = 1.0;
    } else {
        const double pad = y_max > y_min ? (y_max - y_min) * 0.03 : 0.05;
        y_min -= pad;
        y_max += pad;
    }
    const int max_labels = yLabelsThatFit(c.chart);
    c.fitted_labels = max_labels;
    const YTicks y_ticks = y_ticks_that_fit(y_min, y_max, max_labels, is_accuracy);
    y_min = y_ticks.low;
    y_max = y_ticks.high;
    const double y_step = y_ticks.step;
    // A little room on the right so the last validation marker is not cut in half.
    x_max += axis_mode_ == AxisMode::Epochs ? 0.25 : x_max * 0.015;
    const double x_step = std::max(1.0, nice_step(x_max, axis_mode_ == AxisMode::Epochs ? 10 : 8));

    // Saved, not reset: a relayout inside setRange can refit this chart again (plotAreaChanged), and
    // clearing the flag there made the rest of this range look like the person zooming.
    const bool was_applying = std::exchange(applying_range_, true);
    c.x_axis->setTickType(QValueAxis::TicksDynamic);
    c.x_axis->setTickAnchor(0.0);
    c.x_axis->setTickInterval(x_step);
    c.y_axis->setTickType(QValueAxis::TicksDynamic);
    c.y_axis->setTickAnchor(0.0);
    c.y_axis->setTickInterval(y_step);
    c.y_axis->setLabelFormat(label_format(y_step));
    c.x_axis->setRange(0.0, x_max);
    c.y_axis->setRange(y_min, y_max);
    applying_range_ = was_applying;
}

void TrainingPanel::updateTicksAfterZoom(MetricChart& c) {
    // Whole steps or epochs at round intervals; a fixed tick count would print 7.8 as "7".
    c.x_axis->setTickInterval(
        std::max(1.0, nice_step(c.x_axis->max() - c.x_axis->min(), axis_mode_ == AxisMode::Epochs ? 10 : 8)));
    const double y_step = nice_step(c.y_axis->max() - c.y_axis->min(), 7);
    c.y_axis->setTickInterval(y_step);
    c.y_axis->setLabelFormat(label_format(y_step));
}

void TrainingPanel::onAxisRangeChanged(MetricChart& c) {
    if (applying_range_) return;
    c.user_zoomed = true;
    applying_range_ = true;
    updateTicksAfterZoom(c);
    applying_range_ = false;
    updateDecorations(c);
    // A long curve is drawn decimated: the zoomed part gets its detail back at the next refresh.
    const MetricBuffers& b = buffers_[c.metric];
    if ((axis_mode_ == AxisMode::Steps ? b.train_steps : b.train_epochs).size() > drawnPoints(c)) markDirty();
}

void TrainingPanel::updateDecorations(MetricChart& c) {
    const double y_min = c.y_axis->min();
    const double y_max = c.y_axis->max();
    auto vertical = [&](QLineSeries* series, int epoch, const QString& name) {
        if (epoch <= 0) {
            series->setVisible(false);
            return;
        }
        const double x = epochEndX(epoch);
        series->replace(QList<QPointF>{QPointF(x, y_min), QPointF(x, y_max)});
        series->setName(name);
        series->setVisible(true);
    };
    if (overfitting_epoch_ > 0) {
        // From where the first epoch with rising validation loss began to the end of the axis.
        const double x0 = epochStartX(overfitting_epoch_);
        const double x1 = std::max({plannedXMax(), c.x_axis->max(), epochEndX(std::max(current_epoch_, overfitting_epoch_))});
        c.overfit_upper->replace(QList<QPointF>{QPointF(x0, y_max), QPointF(x1, y_max)});
        c.overfit_lower->replace(QList<QPointF>{QPointF(x0, y_min), QPointF(x1, y_min)});
        c.overfit_area->setName(overfittingLabel());
        c.overfit_area->setVisible(true);
    } else {
        c.overfit_area->setVisible(false);
    }
    vertical(c.best_line, overfitting_epoch_ > 0 || stop_epoch_ > 0 ? best_epoch_ : 0, tr("best epoch %1").arg(best_epoch_));
    vertical(c.stop_line, stop_epoch_, tr("early stop at epoch %1").arg(stop_epoch_));
    // The restored epoch is the best one by the monitor; draw it only where it differs from the best line.
    vertical(c.restored_line, restored_epoch_ != best_epoch_ || stop_epoch_ == 0 ? restored_epoch_ : 0,
             tr("restored epoch %1").arg(restored_epoch_));
    if (restored_epoch_ > 0 && restored_epoch_ == best_epoch_) {
        c.best_line->setName(tr("best epoch %1 (weights restored)").arg(best_epoch_));
    }
}

void TrainingPanel::updateBanner() {
    QStringList parts;
    if (overfitting_epoch_ > 0) {
        if (early_stopping_restores_) {
            parts << tr("Validation loss has been rising since epoch %1 while training loss keeps falling: the model is "
                        "overfitting. The best epoch so far is %2.")
                         .arg(overfitting_epoch_)
                         .arg(best_epoch_);
        } else {
            parts << tr("Validation loss has been rising since epoch %1 while training loss keeps falling: the model is "
                        "overfitting. The best epoch so far is %2. Turn on early stopping with restore best weights "
                        "to keep it.")
                         .arg(overfitting_epoch_)
                         .arg(best_epoch_);
        }
    }
    if (stop_epoch_ > 0) {
        parts << tr("Early stopping ended the run after epoch %1: %2 had not improved since epoch %3.")
                     .arg(stop_epoch_)
                     .arg(QString::fromStdString(early_stopping_monitor_))
                     .arg(best_epoch_);
        if (restored_epoch_ > 0) {
            parts << tr("The weights were restored from epoch %1.").arg(restored_epoch_);
        } else if (finished_) {
            parts << tr("The model keeps the weights of epoch %1, the last one trained; turn on restore best weights to "
                        "keep epoch %2.")
                         .arg(stop_epoch_)
                         .arg(best_epoch_);
        }
    }
    banner_label_->setText(parts.join(QLatin1Char(' ')));
    banner_label_->setVisible(!parts.isEmpty());
}

}  // namespace mirrorlab::ui
