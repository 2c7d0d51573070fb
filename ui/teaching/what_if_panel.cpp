#include "ui/teaching/what_if_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <thread>

#include "core/util/error.h"

namespace mirrorlab::ui {

namespace {

constexpr char kMeasured[] = "measured";

enum Column {
    ClusterColumn,
    BatchColumn,
    ComputeColumn,
    IntraColumn,
    InterColumn,
    UpdateColumn,
    StepColumn,
    RateColumn,
    EfficiencyColumn,
    ColumnCount
};

// 1, 2, 3, 4, 6, 8, 12, 16, ... up to `most`.
std::vector<int> worker_counts(int most) {
    std::vector<int> counts;
    for (int base = 1; base <= most; base *= 2) {
        counts.push_back(base);
        if (base >= 2 && base + base / 2 <= most) counts.push_back(base + base / 2);
    }
    if (counts.back() != most) counts.push_back(most);
    return counts;
}

QTableWidgetItem* number_item(double value, int decimals) {
    auto* item = new QTableWidgetItem(QString::number(value, 'f', decimals));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent) {
    buildControls();
    buildTable();
    auto* controls = new QGridLayout;
    controls->addWidget(new QLabel(tr("Link:"), this), 0, 0);
    controls->addWidget(link_, 0, 1);
    controls->addWidget(workers_, 0, 2);
    controls->addWidget(devices_, 0, 3);
    controls->addWidget(batch_, 0, 4);
    controls->addWidget(new QLabel(tr("Across workers:"), this), 1, 0);
    controls->addWidget(inter_, 1, 1);
    controls->addWidget(one_host_, 1, 2, 1, 2);
    controls->addWidget(load_, 1, 4);
    controls->setColumnStretch(5, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(controls);
    layout->addWidget(status_);
    layout->addWidget(table_, 1);

    refreshLinks();
    connect(link_, &QComboBox::currentIndexChanged, this, [this] {
        one_host_->setChecked(linkName().contains(QStringLiteral("shared memory")) || linkName() == QLatin1String(kMeasured));
        repredict();
    });
    for (QSpinBox* box : {workers_, devices_, batch_}) connect(box, &QSpinBox::valueChanged, this, [this] { repredict(); });
    connect(inter_, &QComboBox::currentIndexChanged, this, [this] { repredict(); });
    connect(one_host_, &QCheckBox::toggled, this, [this] { repredict(); });
    connect(load_, &QPushButton::clicked, this, &WhatIfPanel::loadInteractively);
    setLink(QStringLiteral("10 GbE"));
    recalibrate();  // says what it needs
}

// The link, cluster and batch choices, and the button that loads bench results.
void WhatIfPanel::buildControls() {
    link_ = new QComboBox(this);
    link_->setObjectName(QStringLiteral("whatIfLink"));
    link_->setAccessibleName(tr("Link between workers"));
    link_->setToolTip(tr("What connects the workers: latency and bandwidth of each all-reduce message"));
    workers_ = new QSpinBox(this);
    workers_->setObjectName(QStringLiteral("whatIfWorkers"));
    workers_->setRange(1, 1024);
    workers_->setValue(8);
    workers_->setPrefix(tr("up to "));
    workers_->setSuffix(tr(" workers"));
    workers_->setAccessibleName(tr("Most workers"));
    workers_->setToolTip(tr("Predict 1, 2, 3, 4, 6, 8, … up to this many workers"));
    devices_ = new QSpinBox(this);
    devices_->setObjectName(QStringLiteral("whatIfDevices"));
    devices_->setRange(1, 64);
    devices_->setValue(1);
    devices_->setSuffix(tr(" device(s) each"));
    devices_->setAccessibleName(tr("Devices per worker"));
    devices_->setToolTip(tr("Replicas (CPU cores or GPUs) in each worker: their gradients are summed inside the worker first"));
    batch_ = new QSpinBox(this);
    batch_->setObjectName(QStringLiteral("whatIfBatch"));
    batch_->setRange(1, 1 << 20);
    batch_->setValue(32);
    batch_->setPrefix(tr("global batch "));
    batch_->setAccessibleName(tr("Global batch"));
    batch_->setToolTip(tr("Samples per step over all devices of all workers"));
    inter_ = new QComboBox(this);
    inter_->setObjectName(QStringLiteral("whatIfAlgorithm"));
    inter_->setAccessibleName(tr("All-reduce across workers"));
    inter_->addItem(tr("gather, then fold (bit-identical)"), QStringLiteral("gather-fold"));
    inter_->addItem(tr("ring"), QStringLiteral("ring"));
    inter_->addItem(tr("tree"), QStringLiteral("tree"));
    inter_->addItem(tr("reduce to one, broadcast"), QStringLiteral("reduce"));
    inter_->setToolTip(tr("How the workers sum their gradients: MirrorLab's CPU workers gather every replica's "
                          "gradient and fold them in one process's order; NCCL and MPI use rings and trees"));
    one_host_ = new QCheckBox(tr("all workers on this host"), this);
    one_host_->setObjectName(QStringLiteral("whatIfOneHost"));
    one_host_->setToolTip(tr("Workers share this host's cores (loopback), or each has a host of its own"));
    load_ = new QPushButton(tr("Load bench results…"), this);
    load_->setObjectName(QStringLiteral("whatIfLoad"));
    load_->setToolTip(tr("Calibrate from saved `mirrorlab-cli bench --json` results: one-replica runs at several "
                         "batch sizes, and a run under mpirun for the measured link between workers"));

}

// The status line and the table of predicted steps.
void WhatIfPanel::buildTable() {
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("whatIfStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setObjectName(QStringLiteral("whatIfTable"));
    table_->setAccessibleName(tr("Predicted steps"));
    table_->setToolTip(tr("One row per worker count: the predicted step split into its phases, throughput and efficiency"));
    table_->setHorizontalHeaderLabels({tr("Workers × devices"), tr("Batch / device"), tr("Compute ms"),
                                       tr("All-reduce in worker ms"), tr("Across workers ms"), tr("Update + rest ms"),
                                       tr("Step ms"), tr("Samples/s"), tr("Efficiency")});
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);

}

bool WhatIfPanel::calibrateFrom(const ScalingExperiment& experiment) {
    experiment_ = experiment;
    if (!experiment.points.empty() && experiment.global_batch > 0) batch_->setValue(experiment.global_batch);
    recalibrate();
    return calibrated_;
}

bool WhatIfPanel::addBenchResults(const QStringList& paths, QString* error) {
    for (const QString& path : paths) {
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly)) {
            if (error != nullptr) *error = tr("Cannot open %1: %2").arg(path, file.errorString());
            recalibrate();
            return false;
        }
        const std::string text = file.read(64 << 20).toStdString();
        const std::string name = QFileInfo(path).fileName().toStdString();
        try {  // read alone first, so a wrong file is named and not kept
            WhatIfCalibration check;
            add_bench_json(check, text, name);
        } catch (const Error& e) {
            if (error != nullptr) *error = QString::fromStdString(e.what());
            recalibrate();
            return false;
        }
        bench_results_.emplace_back(name, text);
    }
    recalibrate();
    if (calibration_.measured_link) setLink(QString::fromLatin1(kMeasured));
    return true;
}

void WhatIfPanel::recalibrate() {
    calibration_ = WhatIfCalibration{};
    calibrated_ = false;
    QString why;
    try {
        for (const auto& [name, text] : bench_results_) add_bench_json(calibration_, text, name);
        if (experiment_) {
            add_scaling_experiment(calibration_, *experiment_, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
        }
        finish_calibration(calibration_);
        calibrated_ = true;
    } catch (const Error& error) {
        why = QString::fromStdString(error.what());
    }
    refreshLinks();
    repredict();
    if (!calibrated_) {
        status_->setText(experiment_ || !bench_results_.empty()
                             ? tr("Cannot calibrate the model: %1").arg(why)
                             : tr("Run a scaling experiment (or load bench results) to calibrate the model: the "
                                  "prediction starts from what this machine measured."));
    }
}

void WhatIfPanel::refreshLinks() {
    const QString current = link_->currentData().toString();
    const QSignalBlocker block(link_);
    link_->clear();
    if (calibration_.measured_link) {
        const LinkModel& link = *calibration_.measured_link;
        link_->addItem(tr("measured: %1 us + bytes / %2 GB/s").arg(link.latency_us, 0, 'f', 1).arg(link.gbytes_per_second, 0, 'f', 2),
                       QString::fromLatin1(kMeasured));
    }
    for (const LinkModel& link : standard_links()) {
        link_->addItem(QStringLiteral("%1 (%2 us, %3 GB/s)").arg(QString::fromStdString(link.name)).arg(link.latency_us).arg(link.gbytes_per_second),
                       QString::fromStdString(link.name));
        link_->setItemData(link_->count() - 1, QString::fromStdString(link.source), Qt::ToolTipRole);
    }
    const int index = link_->findData(current);
    link_->setCurrentIndex(index >= 0 ? index : link_->findData(QStringLiteral("10 GbE")));
}

bool WhatIfPanel::setLink(const QString& name) {
    int index = link_->findData(name);
    if (index < 0) {
        if (const LinkModel* standard = find_standard_link(name.toStdString())) index = link_->findData(QString::fromStdString(standard->name));
    }
    if (index < 0) return false;
    link_->setCurrentIndex(index);
    return true;
}

QString WhatIfPanel::linkName() const { return link_->currentData().toString(); }
void WhatIfPanel::setWorkers(int workers) { workers_->setValue(workers); }
int WhatIfPanel::workers() const { return workers_->value(); }
void WhatIfPanel::setDevicesPerWorker(int devices) { devices_->setValue(devices); }
void WhatIfPanel::setGlobalBatch(int batch) { batch_->setValue(batch); }
QString WhatIfPanel::statusText() const { return status_->text(); }
int WhatIfPanel::tableRowCount() const { return table_->rowCount(); }

std::vector<StepPrediction> WhatIfPanel::modelForOneWorker(int max_replicas) const {
    std::vector<StepPrediction> rows;
    if (!calibrated_) return rows;
    ClusterShape shape;
    shape.global_batch = batch_->value();
    for (int devices = 1; devices <= max_replicas && devices <= shape.global_batch; ++devices) {
        shape.devices_per_worker = devices;
        rows.push_back(predict_step(calibration_.profile, shape));
    }
    return rows;
}

void WhatIfPanel::repredict() {
    predictions_.clear();
    if (calibrated_) {
        ClusterShape shape;
        shape.devices_per_worker = devices_->value();
        shape.inter_algorithm = collective_algorithm_from_name(inter_->currentData().toString().toStdString());
        const QString link = linkName();
        if (link == QLatin1String(kMeasured) && calibration_.measured_link) {
            shape.inter_link = *calibration_.measured_link;
        } else if (const LinkModel* standard = find_standard_link(link.toStdString())) {
            shape.inter_link = *standard;
        }
        try {
            // Worker counts that would leave a device without a sample are left out of the table.
            predictions_ = predict_range(calibration_.profile, shape, worker_counts(workers_->value()), {batch_->value()},
                                         one_host_->isChecked());
            const ComputeProfile& p = calibration_.profile;
            status_->setText(tr("Calibrated from %1: compute %2 ms + %3 ms per sample, update %4 ms, gradient %5 MB. "
                                "Step = compute + all-reduce in each worker + across workers + update + rest; "
                                "each all-reduce costs latency × messages + bytes ÷ bandwidth.")
                                 .arg(QString::fromStdString([&] {
                                     std::string all;
                                     for (const std::string& source : calibration_.sources) all += (all.empty() ? "" : ", ") + source;
                                     return all;
                                 }()))
                                 .arg(p.fixed_ms, 0, 'f', 3)
                                 .arg(p.per_sample_ms, 0, 'f', 4)
                                 .arg(p.update_ms, 0, 'f', 3)
                                 .arg(p.gradient_bytes / 1e6, 0, 'f', 2));
        } catch (const Error& error) {
            status_->setText(QString::fromStdString(error.what()));
        }
    }
    refreshTable();
    emit predictionsChanged();
}

void WhatIfPanel::refreshTable() {
    table_->setRowCount(static_cast<int>(predictions_.size()));
    for (int row = 0; row < table_->rowCount(); ++row) {
        const StepPrediction& p = predictions_[static_cast<std::size_t>(row)];
        table_->setItem(row, ClusterColumn, new QTableWidgetItem(QStringLiteral("%1 × %2").arg(p.shape.workers).arg(p.shape.devices_per_worker)));
        table_->setItem(row, BatchColumn, number_item(static_cast<double>(p.per_device_batch), 0));
        table_->setItem(row, ComputeColumn, number_item(p.compute_ms, 3));
        table_->setItem(row, IntraColumn, number_item(p.intra_all_reduce_ms, 3));
        table_->setItem(row, InterColumn, number_item(p.inter_all_reduce_ms, 3));
        table_->setItem(row, UpdateColumn, number_item(p.update_ms + p.other_ms, 3));
        table_->setItem(row, StepColumn, number_item(p.step_ms, 3));
        table_->setItem(row, RateColumn, number_item(p.samples_per_second, 0));
        table_->setItem(row, EfficiencyColumn, new QTableWidgetItem(QStringLiteral("%1 %").arg(100.0 * p.efficiency, 0, 'f', 1)));
    }
}

void WhatIfPanel::loadInteractively() {
    const QStringList paths =
        QFileDialog::getOpenFileNames(this, tr("Load bench results"), QString(), tr("Bench results (*.json);;All files (*)"));
    if (paths.isEmpty()) return;
    QString error;
    if (!addBenchResults(paths, &error)) status_->setText(tr("Not loaded: %1").arg(error));
}

}  // namespace mirrorlab::ui
