#include "ui/teaching/scaling_panel.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/backend/arena.h"
#include "core/distribute/mirrored.h"
#include "ui/common/theme.h"
#include "ui/teaching/what_if_panel.h"

namespace mirrorlab::ui {

namespace {

const std::array<QColor, 6> kExperimentColours = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x76, 0xb7, 0xb2),
                                                  QColor(0xb0, 0x7a, 0xa1), QColor(0x9c, 0x75, 0x5f), QColor(0xed, 0xc9, 0x48)};
const QColor kCompute(0x4e, 0x79, 0xa7);
const QColor kCommunication(0xe1, 0x57, 0x59);
const QColor kOther(0xba, 0xb0, 0xac);
const QColor kModel(0x59, 0x4f, 0x99);   // the what-if model's line for one process
const QColor kWhatIf(0xc4, 0x3c, 0x3c);  // its prediction for the chosen cluster

enum Column {
    ExperimentColumn,
    DevicesColumn,
    ReplicasColumn,
    ShardsColumn,
    AllReduceColumn,
    RateColumn,
    StepColumn,
    ComputeColumn,
    CommunicationColumn,
    OtherColumn,
    SpeedupColumn,
    EfficiencyColumn,
    ColumnCount
};

QString all_reduce_text(const std::string& name) {
    if (name == "ring") return ScalingPanel::tr("ring");
    if (name == "reduce_to_one_device") return ScalingPanel::tr("reduce to one device");
    if (name == "nccl") return QStringLiteral("NCCL");
    return ScalingPanel::tr("none");
}

QString shards_text(const std::vector<std::int32_t>& shards) {
    QStringList parts;
    for (std::int32_t s : shards) parts << QString::number(s);
    return parts.join(QStringLiteral(" + "));
}

// A range from 0 to a round number above `top`.
double nice_top(double top) {
    if (!(top > 0)) return 1.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(top)));
    for (double factor : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0}) {
        if (factor * magnitude >= top * 1.05) return factor * magnitude;
    }
    return 10.0 * magnitude;
}

QChartView* make_chart_view(const QString& title, QWidget* parent) {
    auto* chart = new QChart;
    chart->setTheme(chartTheme(parent->palette()));  // first: a theme resets the colours set later
    chart->setTitle(title);
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(280, 240);
    view->setAccessibleName(title);
    view->setToolTip(title);
    return view;
}

void reset_chart(QChart* chart) {
    chart->removeAllSeries();
    for (QAbstractAxis* axis : chart->axes()) {
        chart->removeAxis(axis);
        delete axis;
    }
}

QValueAxis* replica_axis(int max_replicas, const QString& title) {
    auto* axis = new QValueAxis;
    axis->setRange(0.8, max_replicas + 0.2);
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(1.0);
    axis->setTickInterval(max_replicas > 32 ? 8.0 : max_replicas > 16 ? 4.0 : max_replicas > 8 ? 2.0 : 1.0);
    axis->setLabelFormat(QStringLiteral("%.0f"));
    axis->setTitleText(title);
    return axis;
}

// The dashed grey line of ideal scaling, on the chart's axes.
void add_ideal_line(QChart* chart, QLineSeries* ideal, const QString& name) {
    ideal->setName(name);
    ideal->setPen(QPen(QColor(0x80, 0x80, 0x80), 1.5, Qt::DashLine));
    chart->addSeries(ideal);
    for (QAbstractAxis* axis : chart->axes()) ideal->attachAxis(axis);
}

}  // namespace

ScalingPanel::ScalingPanel(std::shared_ptr<DeviceRegistry> registry, QWidget* parent)
    : QWidget(parent), registry_(registry ? std::move(registry) : std::make_shared<DeviceRegistry>()) {
    drain_timer_.setInterval(50);
    connect(&drain_timer_, &QTimer::timeout, this, &ScalingPanel::drainWorker);
    QHBoxLayout* controls = buildControls();
    QWidget* results = buildResults();
    QScrollArea* explanation_scroll = buildExplanation();

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(results);
    splitter->addWidget(explanation_scroll);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(splitter, 1);

    connect(run_, &QPushButton::clicked, this, [this] { start(); });
    connect(cancel_, &QPushButton::clicked, this, &ScalingPanel::cancel);
    connect(export_, &QPushButton::clicked, this, &ScalingPanel::exportInteractively);
    connect(clear_, &QPushButton::clicked, this, &ScalingPanel::clearEarlier);
    refresh();
    updateButtons();
}

// The experiment's settings and buttons, and its status line.
QHBoxLayout* ScalingPanel::buildControls() {
    replicas_ = new QSpinBox(this);
    replicas_->setObjectName(QStringLiteral("scalingReplicas"));
    replicas_->setRange(1, 16);
    replicas_->setValue(2);
    replicas_->setPrefix(tr("up to "));
    replicas_->setSuffix(tr(" replicas"));
    replicas_->setAccessibleName(tr("Most replicas"));
    replicas_->setToolTip(tr("Runs 1, 2, … up to this many replicas of the device configuration's kind"));
    steps_ = new QSpinBox(this);
    steps_->setObjectName(QStringLiteral("scalingSteps"));
    steps_->setRange(2, 5000);
    steps_->setValue(40);
    steps_->setSuffix(tr(" steps each"));
    steps_->setAccessibleName(tr("Steps per run"));
    steps_->setToolTip(tr("Timed training steps per run (after a few untimed warm-up steps)"));
    run_ = new QPushButton(tr("Run scaling experiment"), this);
    run_->setObjectName(QStringLiteral("runScaling"));
    run_->setToolTip(tr("Train a few steps with 1, 2, … replicas and compare their throughput"));
    cancel_ = new QPushButton(tr("Cancel"), this);
    cancel_->setToolTip(tr("Stop the experiment after the current step"));
    export_ = new QPushButton(tr("Export CSV…"), this);
    export_->setToolTip(tr("Every experiment's rows, for comparison in a spreadsheet"));
    clear_ = new QPushButton(tr("Clear earlier"), this);
    clear_->setToolTip(tr("Keep only the latest experiment"));
    progress_ = new QProgressBar(this);
    progress_->setMaximumWidth(200);
    progress_->setTextVisible(true);
    status_ = new QLabel(tr("Measures how throughput grows with replicas. Uses the Devices, Model and Data panels' "
                            "settings."),
                         this);
    status_->setObjectName(QStringLiteral("scalingStatus"));
    status_->setWordWrap(true);

    auto* controls = new QHBoxLayout;
    controls->addWidget(replicas_);
    controls->addWidget(steps_);
    controls->addWidget(run_);
    controls->addWidget(cancel_);
    controls->addWidget(progress_);
    controls->addStretch(1);
    controls->addWidget(export_);
    controls->addWidget(clear_);
    return controls;
}

// The three charts over the table of runs.
QWidget* ScalingPanel::buildResults() {
    throughput_view_ = make_chart_view(tr("Throughput"), this);
    time_view_ = make_chart_view(tr("Time per step"), this);
    efficiency_view_ = make_chart_view(tr("Scaling efficiency"), this);
    auto* charts = new QHBoxLayout;
    charts->addWidget(throughput_view_, 1);
    charts->addWidget(time_view_, 1);
    charts->addWidget(efficiency_view_, 1);

    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setObjectName(QStringLiteral("scalingTable"));
    table_->setAccessibleName(tr("Scaling results"));
    table_->setToolTip(tr("One row per run of every experiment"));
    table_->setHorizontalHeaderLabels({tr("Experiment"), tr("Devices"), tr("Replicas"), tr("Shards"), tr("All-reduce"),
                                       tr("Samples/s"), tr("ms/step"), tr("Compute ms"), tr("Communication ms"),
                                       tr("Other ms"), tr("Speed-up"), tr("Efficiency")});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setMinimumHeight(120);

    auto* left = new QWidget(this);
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    what_if_ = new WhatIfPanel(this);
    connect(what_if_, &WhatIfPanel::predictionsChanged, this, [this] { refreshCharts(); });
    auto* tabs = new QTabWidget(this);
    tabs->setObjectName(QStringLiteral("scalingTabs"));
    tabs->setAccessibleName(tr("Measured runs and what-if predictions"));
    tabs->setToolTip(tr("The runs measured here, and predictions for clusters that are not here"));
    tabs->addTab(table_, tr("Measured"));
    tabs->addTab(what_if_, tr("What if"));
    tabs->setTabToolTip(1, tr("Predict more workers, other links and batch sizes from what was measured here"));
    left_layout->addLayout(charts, 3);
    left_layout->addWidget(tabs, 2);
    return left;
}

QScrollArea* ScalingPanel::buildExplanation() {
    explanation_ = new QLabel(this);
    explanation_->setObjectName(QStringLiteral("scalingExplanation"));
    explanation_->setWordWrap(true);
    explanation_->setTextFormat(Qt::RichText);
    explanation_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    explanation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    explanation_->setMargin(6);
    auto* explanation_scroll = new QScrollArea(this);
    explanation_scroll->setWidget(explanation_);
    explanation_scroll->setWidgetResizable(true);
    explanation_scroll->setMinimumWidth(280);
    return explanation_scroll;
}

ScalingPanel::~ScalingPanel() {
    if (runner_) runner_->cancel();
    if (worker_.joinable()) worker_.join();
}

void ScalingPanel::setMaxReplicas(int replicas) { replicas_->setValue(std::clamp(replicas, 1, replicas_->maximum())); }
int ScalingPanel::maxReplicas() const { return replicas_->value(); }
void ScalingPanel::setSteps(int steps) { steps_->setValue(steps); }
int ScalingPanel::steps() const { return steps_->value(); }

bool ScalingPanel::start() {
    if (running()) return false;
    QString why;
    std::optional<ScalingSetup> setup = provider_ ? provider_(&why) : std::nullopt;
    if (!setup) {
        status_->setText(why.isEmpty() ? tr("Nothing to measure: no model, devices or data are set.") : why);
        return false;
    }
    return start(std::move(*setup));
}

bool ScalingPanel::start(ScalingSetup setup) {
    if (running()) return false;
    setup.max_replicas = maxReplicas();
    setup.steps = steps();
    if (setup.label.empty()) {
        setup.label = tr("%1, batch %2").arg(QString::fromStdString(setup.devices.to_spec())).arg(setup.config.batch_size).toStdString();
    }
    learning_rate_ = setup.config.optimizer.learning_rate;
    global_batch_ = setup.config.batch_size;
    const int id = next_id_++;
    in_progress_ = ScalingExperiment{};
    in_progress_->id = id;
    in_progress_->devices = setup.devices.to_spec();
    in_progress_->label = setup.label;
    in_progress_->global_batch = setup.config.batch_size;
    in_progress_->seed = setup.config.seed;
    in_progress_->steps = setup.steps;
    progress_->setRange(0, setup.max_replicas);
    progress_->setValue(0);
    status_->setText(tr("Experiment %1: training on 1 replica…").arg(id));
    runner_ = std::make_unique<ScalingRunner>(registry_);
    ScalingRunner* runner = runner_.get();
    {
        std::lock_guard lock(handover_mutex_);
        handover_ = {};
    }
    worker_ = std::thread([this, runner, id, setup = std::move(setup)] {
        ScalingExperiment result;
        try {
            result = runner->run(setup, id, [this](const ScalingPoint& point, int done, int total) {
                std::lock_guard lock(handover_mutex_);
                handover_.points.push_back({point, done, total});
            });
        } catch (const std::exception& e) {
            // The runner's trainings catch their own failures; what is left (out of memory copying
            // the data) ends the experiment with its reason instead of the program.
            result.id = id;
            result.error = e.what();
        }
        std::lock_guard lock(handover_mutex_);
        handover_.result = std::move(result);
    });
    drain_timer_.start();
    refresh();
    updateButtons();
    emit runningChanged(true);
    return true;
}

void ScalingPanel::cancel() {
    if (runner_) runner_->cancel();
    status_->setText(tr("Cancelling after the current step…"));
}

bool ScalingPanel::waitForFinished(int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (running()) {
        if (timeout_ms >= 0 && timer.elapsed() > timeout_ms) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(5);
    }
    return true;
}

void ScalingPanel::drainWorker() {
    Handover taken;
    {
        std::lock_guard lock(handover_mutex_);
        std::swap(taken, handover_);
    }
    for (const Handover::Point& row : taken.points) addPoint(row.point, row.done, row.total);
    if (taken.result) {
        drain_timer_.stop();
        finish(std::move(*taken.result));
    }
}

void ScalingPanel::addPoint(const ScalingPoint& point, int done, int total) {
    if (!in_progress_) return;
    in_progress_->points.push_back(point);
    progress_->setValue(done);
    if (done < total) status_->setText(tr("Experiment %1: training on %2 replicas…").arg(in_progress_->id).arg(done + 1));
    refresh();
}

void ScalingPanel::finish(ScalingExperiment experiment) {
    if (worker_.joinable()) worker_.join();
    runner_.reset();
    in_progress_.reset();
    const int id = experiment.id;
    if (experiment.completed) {
        // The engine times at most one epoch's batches: a small data set gives fewer than asked.
        std::int64_t timed = experiment.steps;
        for (const ScalingPoint& point : experiment.points) timed = std::min(timed, point.timed_steps);
        status_->setText(timed < experiment.steps
                             ? tr("Experiment %1 finished: %2 runs of %3 timed steps (the data holds no more batches per "
                                  "epoch; %4 were asked for).")
                                   .arg(id)
                                   .arg(experiment.points.size())
                                   .arg(timed)
                                   .arg(experiment.steps)
                             : tr("Experiment %1 finished: %2 runs of %3 steps.").arg(id).arg(experiment.points.size()).arg(experiment.steps));
    } else if (!experiment.error.empty()) {
        status_->setText(tr("Experiment %1 stopped: %2").arg(id).arg(QString::fromStdString(experiment.error)));
    } else {
        status_->setText(tr("Experiment %1 cancelled; the runs so far are kept.").arg(id));
    }
    progress_->setValue(static_cast<int>(experiment.points.size()));
    if (!experiment.points.empty()) {
        experiments_.push_back(std::move(experiment));
        what_if_->calibrateFrom(experiments_.back());
    }
    refresh();
    updateButtons();
    emit runningChanged(false);
}

void ScalingPanel::clearEarlier() {
    if (experiments_.size() > 1) experiments_.erase(experiments_.begin(), experiments_.end() - 1);
    refresh();
}

int ScalingPanel::tableRowCount() const { return table_->rowCount(); }
QString ScalingPanel::statusText() const { return status_->text(); }
QString ScalingPanel::explanationText() const { return explanation_->text(); }
QChart* ScalingPanel::throughputChart() const { return throughput_view_->chart(); }
QChart* ScalingPanel::stepTimeChart() const { return time_view_->chart(); }
QChart* ScalingPanel::efficiencyChart() const { return efficiency_view_->chart(); }

bool ScalingPanel::exportCsv(const QString& path, QString* error) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error != nullptr) *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    file.write(QByteArray::fromStdString(scaling_csv(experiments_)));
    if (!file.commit()) {
        if (error != nullptr) *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

void ScalingPanel::exportInteractively() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export scaling experiments"), QStringLiteral("scaling.csv"),
                                                      tr("CSV files (*.csv)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportCsv(path, &error)) status_->setText(error);
}

void ScalingPanel::updateButtons() {
    run_->setEnabled(!running());
    cancel_->setEnabled(running());
    export_->setEnabled(!experiments_.empty());
    clear_->setEnabled(experiments_.size() > 1);
    replicas_->setEnabled(!running());
    steps_->setEnabled(!running());
}

void ScalingPanel::refresh() {
    refreshTable();
    refreshCharts();
    refreshExplanation();
    updateButtons();
}

void ScalingPanel::refreshTable() {
    std::vector<const ScalingExperiment*> all;
    for (const auto& e : experiments_) all.push_back(&e);
    if (in_progress_) all.push_back(&*in_progress_);
    int rows = 0;
    for (const auto* e : all) rows += static_cast<int>(e->points.size());
    table_->setRowCount(rows);
    int row = 0;
    const QLocale locale;
    for (const auto* e : all) {
        const QColor colour = kExperimentColours[static_cast<std::size_t>(e->id - 1) % kExperimentColours.size()];
        for (const ScalingPoint& p : e->points) {
            auto set = [&](int column, const QString& text, bool right = true) {
                auto* item = new QTableWidgetItem(text);
                if (right) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                table_->setItem(row, column, item);
            };
            set(ExperimentColumn, tr("#%1 %2").arg(e->id).arg(QString::fromStdString(e->label)), false);
            table_->item(row, ExperimentColumn)->setForeground(colour.darker(120));
            set(DevicesColumn, QString::fromStdString(p.devices), false);
            set(ReplicasColumn, QString::number(p.replicas));
            set(ShardsColumn, shards_text(p.shards), false);
            set(AllReduceColumn, all_reduce_text(p.all_reduce), false);
            set(RateColumn, locale.toString(p.samples_per_second, 'f', 0));
            set(StepColumn, locale.toString(p.ms_per_step, 'f', 2));
            set(ComputeColumn, locale.toString(p.compute_ms, 'f', 2));
            set(CommunicationColumn, locale.toString(p.communication_ms, 'f', 2));
            set(OtherColumn, locale.toString(p.other_ms, 'f', 2));
            set(SpeedupColumn, tr("%1×").arg(p.speedup, 0, 'f', 2));
            set(EfficiencyColumn, tr("%1%").arg(p.efficiency * 100.0, 0, 'f', 0));
            ++row;
        }
    }
}

void ScalingPanel::refreshCharts() {
    std::vector<const ScalingExperiment*> all;
    for (const auto& e : experiments_) all.push_back(&e);
    if (in_progress_) all.push_back(&*in_progress_);
    const ScalingExperiment* latest = all.empty() ? nullptr : all.back();
    int max_replicas = std::max(2, maxReplicas());
    for (const auto* e : all) {
        for (const auto& p : e->points) max_replicas = std::max(max_replicas, p.replicas);
    }
    refreshThroughputChart(all, latest, max_replicas);
    refreshStepTimeChart(latest);
    refreshEfficiencyChart(all, latest, max_replicas);
}

// One experiment's line: its colour, solid and thicker for the latest one.
QLineSeries* ScalingPanel::experimentSeries(const ScalingExperiment& experiment, bool latest) const {
    auto* series = new QLineSeries;
    series->setName(tr("#%1 %2").arg(experiment.id).arg(QString::fromStdString(experiment.devices)));
    QPen pen(kExperimentColours[static_cast<std::size_t>(experiment.id - 1) % kExperimentColours.size()], latest ? 2.5 : 1.5);
    if (!latest) pen.setStyle(Qt::DashDotLine);
    series->setPen(pen);
    series->setPointsVisible(true);
    return series;
}

void ScalingPanel::refreshThroughputChart(const std::vector<const ScalingExperiment*>& all, const ScalingExperiment* latest,
                                          int max_replicas) {
    // Throughput, with the ideal line of the latest experiment: n x its 1-replica throughput.
    QChart* chart = throughput_view_->chart();
    double top = 0.0;
    QValueAxis* y = plotPerReplica(chart, all, latest, max_replicas, tr("samples/s"),
                                   [](const ScalingPoint& p) { return p.samples_per_second; }, top);
    if (latest != nullptr && !latest->points.empty()) {
        auto* ideal = new QLineSeries;
        const double one = latest->points.front().samples_per_second;
        for (int n = 1; n <= max_replicas; ++n) ideal->append(n, n * one);
        top = std::max(top, max_replicas * one);
        add_ideal_line(chart, ideal, tr("ideal (linear)"));
    }
    y->setRange(0, nice_top(top));
}

void ScalingPanel::refreshStepTimeChart(const ScalingExperiment* latest) {
    // Time per step of the latest experiment, split into compute, communication and the rest.
    QChart* chart = time_view_->chart();
    reset_chart(chart);
    if (latest == nullptr || latest->points.empty()) return;
    auto* compute = new QBarSet(tr("compute"));
    auto* communication = new QBarSet(tr("communication"));
    auto* other = new QBarSet(tr("other"));
    compute->setColor(kCompute);
    communication->setColor(kCommunication);
    other->setColor(kOther);
    QStringList categories;
    double step_top = 0.0;
    for (const auto& p : latest->points) {
        *compute << p.compute_ms;
        *communication << p.communication_ms;
        *other << p.other_ms;
        categories << QString::number(p.replicas);
        step_top = std::max(step_top, p.compute_ms + p.communication_ms + p.other_ms);
    }
    auto* bars = new QStackedBarSeries;
    bars->append(compute);
    bars->append(communication);
    bars->append(other);
    chart->addSeries(bars);
    auto* categories_axis = new QBarCategoryAxis;
    categories_axis->append(categories);
    categories_axis->setTitleText(tr("replicas (experiment #%1)").arg(latest->id));
    auto* ms = new QValueAxis;
    ms->setTitleText(tr("ms per step"));
    ms->setRange(0, nice_top(step_top));
    ms->setLabelFormat(QStringLiteral("%.1f"));
    chart->addAxis(categories_axis, Qt::AlignBottom);
    chart->addAxis(ms, Qt::AlignLeft);
    bars->attachAxis(categories_axis);
    bars->attachAxis(ms);
}

void ScalingPanel::refreshEfficiencyChart(const std::vector<const ScalingExperiment*>& all, const ScalingExperiment* latest,
                                          int max_replicas) {
    // Efficiency against the ideal 100 %, with the what-if model: its line for one worker of 1..N
    // replicas (what was measured, so a person sees how well it fits) and its prediction for the
    // chosen cluster, at its total device count (the axis widens to show it, up to 64).
    QChart* chart = efficiency_view_->chart();
    double efficiency_top = 100.0;
    const std::vector<StepPrediction>& predicted = what_if_->predictions();
    int axis_max = max_replicas;
    for (const StepPrediction& p : predicted) {
        const int devices = p.shape.workers * p.shape.devices_per_worker;
        if (devices <= 64) axis_max = std::max(axis_max, devices);
    }
    QValueAxis* y = plotPerReplica(chart, all, latest, axis_max, tr("efficiency (%)"),
                                   [](const ScalingPoint& p) { return p.efficiency * 100.0; }, efficiency_top);
    auto* ideal = new QLineSeries;
    ideal->append(1, 100.0);
    ideal->append(axis_max, 100.0);
    add_ideal_line(chart, ideal, tr("ideal (100%)"));
    auto add_model_line = [&](const std::vector<StepPrediction>& rows, const QString& name, const QColor& colour,
                              Qt::PenStyle style) {
        if (rows.empty()) return;
        auto* series = new QLineSeries;
        series->setName(name);
        series->setPen(QPen(colour, 1.8, style));
        series->setPointsVisible(true);
        for (const StepPrediction& p : rows) {
            const int devices = p.shape.workers * p.shape.devices_per_worker;
            if (devices > axis_max) continue;
            series->append(devices, 100.0 * p.efficiency);
            efficiency_top = std::max(efficiency_top, 100.0 * p.efficiency);
        }
        chart->addSeries(series);
        for (QAbstractAxis* axis : chart->axes()) series->attachAxis(axis);
    };
    add_model_line(what_if_->modelForOneWorker(max_replicas), tr("model, one process"), kModel, Qt::DotLine);
    if (!predicted.empty()) {
        add_model_line(predicted,
                       tr("what if: workers × %1 on %2").arg(predicted.front().shape.devices_per_worker).arg(what_if_->linkName()),
                       kWhatIf, Qt::DashDotDotLine);
    }
    y->setRange(0, efficiency_top > 100.0 ? nice_top(efficiency_top) : 120.0);
    y->setTickCount(7);
}

// A chart of one value per replica count, cleared first: the replicas axis, a value axis titled
// `y_title`, one line per experiment; `top` grows to the largest value. Returns the value axis.
QValueAxis* ScalingPanel::plotPerReplica(QChart* chart, const std::vector<const ScalingExperiment*>& all,
                                         const ScalingExperiment* latest, int max_replicas, const QString& y_title,
                                         double (*value)(const ScalingPoint&), double& top) const {
    reset_chart(chart);
    auto* x = replica_axis(max_replicas, tr("replicas"));
    auto* y = new QValueAxis;
    y->setTitleText(y_title);
    y->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (const auto* e : all) {
        if (e->points.empty()) continue;
        auto* series = experimentSeries(*e, e == latest);
        for (const auto& p : e->points) {
            series->append(p.replicas, value(p));
            top = std::max(top, value(p));
        }
        chart->addSeries(series);
        series->attachAxis(x);
        series->attachAxis(y);
    }
    return y;
}

void ScalingPanel::refreshExplanation() {
    const int n = std::max(2, maxReplicas());
    const std::int32_t batch = global_batch_ > 0 ? global_batch_ : 32;
    const double lr = learning_rate_ > 0 ? learning_rate_ : 0.001;
    QStringList splits;
    for (int r = 1; r <= std::min(n, 4); ++r) splits << shards_text(shard_sizes(batch, r));
    const auto smallest = shard_sizes(batch, n);
    const QString bigger_batch = QString::number(batch * n);
    const QString linear = QString::number(lr * n, 'g', 3);
    const QString square_root = QString::number(lr * std::sqrt(static_cast<double>(n)), 'g', 3);

    QString html;
    html += QStringLiteral("<h3>") + tr("Effective batch size") + QStringLiteral("</h3><p>");
    html += tr("Every run trains on the same global batch of %1 samples with the same seed. The replicas share it: "
               "%2. One step makes the same progress however many replicas share it, so the runs differ only in speed.")
                .arg(batch)
                .arg(splits.join(QStringLiteral(" → ")));
    html += QStringLiteral("</p><h3>") + tr("Why efficiency drops") + QStringLiteral("</h3><ul><li>");
    html += tr("<b>Communication.</b> Every step all-reduces the whole gradient and ends at a barrier, so each replica "
               "waits for the slowest one; that time does not shrink with more replicas.");
    html += QStringLiteral("</li><li>");
    html += tr("<b>A batch too small to share.</b> %1 samples over %2 replicas leaves %3 per replica: too little work to "
               "keep a device busy, while each step's fixed costs (starting the work, synchronising, updating the "
               "variables) stay the same.")
                .arg(batch)
                .arg(n)
                .arg(smallest.empty() ? 0 : smallest.back());
    html += QStringLiteral("</li><li>");
    html += tr("<b>Virtual devices share one physical device.</b> CPU replicas split the same cores and memory "
               "bandwidth, and virtual GPUs carved from one GPU share its compute units, so N of them cannot be N "
               "times faster than one. Real speed-ups need replicas on separate devices.");
    html += QStringLiteral("</li></ul><h3>") + tr("Learning rate for larger global batches") + QStringLiteral("</h3><p>");
    html += tr("Usually one keeps the batch per replica and adds replicas, so the global batch grows with them. The rule "
               "of thumb (Goyal et al., 2017): scale the learning rate by the same factor (linear scaling), with a "
               "warm-up over the first epochs; for Adam-type optimizers a square-root scaling is often safer. For "
               "example, %1 replicas × %2 = a global batch of %3: learning rate %4 → %5 (linear) or %6 (square root). "
               "This experiment keeps the global batch at %2, so the learning rate stays at %4.")
                .arg(n)
                .arg(batch)
                .arg(bigger_batch)
                .arg(QString::number(lr, 'g', 3), linear, square_root);
    html += QStringLiteral("</p>");
    explanation_->setText(html);
}

}  // namespace mirrorlab::ui
