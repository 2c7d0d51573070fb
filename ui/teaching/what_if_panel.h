#pragma once
// "What if": the Scaling panel's prediction of clusters that are not here. The step cost model
// (core/distribute/step_cost_model.h) is calibrated from the latest scaling experiment (the compute
// at each shard size, the all-reduce between this process's replicas) and, where a person loads
// them, saved `mirrorlab-cli bench --json` results (one-replica runs; a multi-worker run's
// measured link). The person picks the link between workers, how many workers, devices per worker
// and the global batch; a table gives each worker count's predicted step (compute, all-reduce
// inside a worker and across workers, update), throughput and efficiency, and the Scaling panel
// draws the efficiency beside its measured points.
#include <QStringList>
#include <QWidget>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/train/what_if.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace mirrorlab::ui {

class WhatIfPanel : public QWidget {
    Q_OBJECT
public:
    explicit WhatIfPanel(QWidget* parent = nullptr);

    // Calibrates from `experiment` (and the bench results loaded so far) and predicts again; false
    // when it cannot (the status line says why).
    bool calibrateFrom(const ScalingExperiment& experiment);
    // Reads `mirrorlab-cli bench --json` results; false and `error` (naming the file) when one is
    // not such a result; the ones before it stay loaded.
    bool addBenchResults(const QStringList& paths, QString* error);
    bool calibrated() const { return calibrated_; }
    const WhatIfCalibration& calibration() const { return calibration_; }

    // One row per worker count (1, 2, 3, 4, 6, 8, ... up to workers()).
    const std::vector<StepPrediction>& predictions() const { return predictions_; }
    // The model for what the experiment measured: one worker with 1..max_replicas devices.
    std::vector<StepPrediction> modelForOneWorker(int max_replicas) const;

    void setWorkers(int workers);
    int workers() const;
    void setDevicesPerWorker(int devices);
    void setGlobalBatch(int batch);
    bool setLink(const QString& name);  // a standard link's name, or "measured"; false if unknown
    QString linkName() const;
    QString statusText() const;
    int tableRowCount() const;

signals:
    void predictionsChanged();

private:
    void buildControls();
    void buildTable();
    void recalibrate();
    void repredict();
    void refreshTable();
    void refreshLinks();
    void loadInteractively();

    WhatIfCalibration calibration_;
    bool calibrated_ = false;
    std::optional<ScalingExperiment> experiment_;
    std::vector<std::pair<std::string, std::string>> bench_results_;  // file name, JSON text
    std::vector<StepPrediction> predictions_;

    QComboBox* link_ = nullptr;
    QSpinBox* workers_ = nullptr;
    QSpinBox* devices_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QComboBox* inter_ = nullptr;
    QCheckBox* one_host_ = nullptr;
    QPushButton* load_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace mirrorlab::ui
