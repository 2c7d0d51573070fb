#pragma once
// After a run: which topics the model gets right and which it confuses. The final weights are
// evaluated on the validation split; a table gives each class's precision, recall, F1 and support,
// and a heat map the confusion matrix (rows: the true class, columns: the predicted one) for the
// classes with the most wires plus "other" for the rest, so 46 Reuters topics stay readable.
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/data/dataset.h"
#include "core/model/model.h"
#include "core/train/inference.h"

class QLabel;
class QSplitter;
class QTableWidget;

namespace mirrorlab::ui {

class TrainingController;

class ConfusionMatrixView : public QWidget {
    Q_OBJECT
public:
    static constexpr int kMostSupported = 15;  // classes shown one by one; the rest add up to "other"

    explicit ConfusionMatrixView(QWidget* parent = nullptr);
    void setReport(const ClassReport& report, const std::vector<std::string>& class_names);
    void clear();

    // What is drawn: the axes' classes (most wires first, then "other" when some are left out),
    // the count in each cell, its place and its tooltip.
    int shownClasses() const { return static_cast<int>(names_.size()); }
    QString shownName(int index) const { return names_.value(index); }
    std::int64_t cellCount(int truth, int predicted) const;
    QRect cellRect(int truth, int predicted) const;
    QString cellToolTip(int truth, int predicted) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Geometry {
        int left = 0;  // room for the row names
        int top = 0;   // room for the column names, written upwards
        int cell = 0;
    };
    Geometry geometry() const;
    Geometry geometryFor(int cell) const;

    QStringList names_;
    std::vector<std::int64_t> counts_;      // names_.size() squared, row = true class
    std::vector<std::int64_t> row_totals_;  // wires of each shown true class
};

class ClassReportView : public QWidget {
    Q_OBJECT
public:
    enum Column { ClassColumn, PrecisionColumn, RecallColumn, F1Column, SupportColumn, ColumnCount };

    explicit ClassReportView(TrainingController* controller, QWidget* parent = nullptr);
    ~ClassReportView() override;  // waits for an evaluation in progress

    // Evaluates `weights` on the validation split of `data` on a worker thread; reportReady (or
    // the status line's error) follows on the GUI thread. A later call supersedes an earlier one.
    void evaluate(std::shared_ptr<const Model> model, std::shared_ptr<const DatasetSplit> data, std::vector<float> weights);
    // Processes events until the evaluation in progress is shown (tests, --screenshot).
    bool waitForReport(int timeout_ms);

    const std::optional<ClassReport>& report() const { return report_; }
    QString statusText() const;
    QTableWidget* table() const { return table_; }
    ConfusionMatrixView* matrix() const { return matrix_; }

signals:
    void reportReady();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Outcome;
    void showOutcome(const Outcome& outcome);

    TrainingController* controller_ = nullptr;
    std::thread worker_;
    std::uint64_t generation_ = 0;  // of the latest evaluate(); older outcomes are dropped
    bool evaluating_ = false;
    bool trained_elsewhere_ = false;  // the last run trained in another process, its weights not here
    std::optional<ClassReport> report_;
    QLabel* status_ = nullptr;
    QTableWidget* table_ = nullptr;
    QSplitter* split_ = nullptr;
    ConfusionMatrixView* matrix_ = nullptr;
};

}  // namespace mirrorlab::ui
