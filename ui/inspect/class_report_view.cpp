#include "ui/inspect/class_report_view.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QScrollBar>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <numeric>

#include "core/data/source.h"
#include "ui/inspect/class_names.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

constexpr int kMaxRowNameWidth = 120;     // px; longer names are elided (the tooltip has them whole)
constexpr int kMaxColumnNameHeight = 72;  // px, the column names written upwards
constexpr int kPreferredCell = 26;        // px: room for a three-digit count

QColor mix(const QColor& from, const QColor& to, double t) {
    return QColor::fromRgbF(static_cast<float>(from.redF() + (to.redF() - from.redF()) * t),
                            static_cast<float>(from.greenF() + (to.greenF() - from.greenF()) * t),
                            static_cast<float>(from.blueF() + (to.blueF() - from.blueF()) * t));
}

// A number column that sorts by value, with "-" (sorted first) where the value is undefined.
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(double value, int decimals) : QTableWidgetItem(std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("-")) {
        setData(Qt::UserRole, std::isfinite(value) ? value : -1.0);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override {
        return data(Qt::UserRole).toDouble() < other.data(Qt::UserRole).toDouble();
    }
};

}  // namespace

// ---- the confusion matrix ----

ConfusionMatrixView::ConfusionMatrixView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("confusionMatrix"));
    setAccessibleName(tr("Confusion matrix"));
    setToolTip(tr("Rows: the true topic; columns: the topic the model predicted. Point at a cell for its count."));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ConfusionMatrixView::clear() {
    names_.clear();
    counts_.clear();
    row_totals_.clear();
    updateGeometry();
    update();
}

void ConfusionMatrixView::setReport(const ClassReport& report, const std::vector<std::string>& class_names) {
    const int classes = report.num_classes;
    std::vector<int> order(static_cast<std::size_t>(classes));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return report.rows[static_cast<std::size_t>(a)].support > report.rows[static_cast<std::size_t>(b)].support;
    });
    // One class left over is shown as itself: an "other" of one class says nothing.
    const int singles = classes <= kMostSupported + 1 ? classes : kMostSupported;
    const int shown = singles < classes ? singles + 1 : singles;
    std::vector<int> slot(static_cast<std::size_t>(classes), singles);  // the leftovers go to "other"
    names_.clear();
    for (int i = 0; i < singles; ++i) {
        slot[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
        names_ << className(class_names, order[static_cast<std::size_t>(i)]);
    }
    if (shown > singles) names_ << tr("other (%1 topics)").arg(classes - singles);
    counts_.assign(static_cast<std::size_t>(shown * shown), 0);
    row_totals_.assign(static_cast<std::size_t>(shown), 0);
    for (int truth = 0; truth < classes; ++truth) {
        for (int predicted = 0; predicted < classes; ++predicted) {
            const std::int64_t count = report.at(truth, predicted);
            const int row = slot[static_cast<std::size_t>(truth)];
            counts_[static_cast<std::size_t>(row * shown + slot[static_cast<std::size_t>(predicted)])] += count;
            row_totals_[static_cast<std::size_t>(row)] += count;
        }
    }
    updateGeometry();
    update();
}

std::int64_t ConfusionMatrixView::cellCount(int truth, int predicted) const {
    const int n = shownClasses();
    if (truth < 0 || predicted < 0 || truth >= n || predicted >= n) return 0;
    return counts_[static_cast<std::size_t>(truth * n + predicted)];
}

QString ConfusionMatrixView::cellToolTip(int truth, int predicted) const {
    const std::int64_t count = cellCount(truth, predicted);
    return count == 1 ? tr("1 wire of %1 predicted as %2").arg(shownName(truth), shownName(predicted))
                      : tr("%1 wires of %2 predicted as %3").arg(count).arg(shownName(truth), shownName(predicted));
}

ConfusionMatrixView::Geometry ConfusionMatrixView::geometryFor(int cell) const {
    const QFontMetrics metrics(font());
    int widest = 0;
    for (const QString& name : names_) widest = std::max(widest, metrics.horizontalAdvance(name));
    Geometry g;
    g.left = std::min(widest, kMaxRowNameWidth) + 8;
    g.top = std::min(widest, kMaxColumnNameHeight) + 8;
    g.cell = cell;
    return g;
}

// Square cells as large as the widget allows, never smaller than a line of text (the names).
ConfusionMatrixView::Geometry ConfusionMatrixView::geometry() const {
    const int n = std::max(1, shownClasses());
    Geometry g = geometryFor(0);
    const int fits = std::min((width() - g.left - 1) / n, (height() - g.top - 1) / n);
    g.cell = std::max(fontMetrics().height(), fits);
    return g;
}

QRect ConfusionMatrixView::cellRect(int truth, int predicted) const {
    const Geometry g = geometry();
    return {g.left + predicted * g.cell, g.top + truth * g.cell, g.cell, g.cell};
}

QSize ConfusionMatrixView::sizeHint() const {
    if (names_.isEmpty()) return {240, 120};
    const Geometry g = geometryFor(kPreferredCell);
    return {g.left + shownClasses() * g.cell + 1, g.top + shownClasses() * g.cell + 1};
}

QSize ConfusionMatrixView::minimumSizeHint() const {
    if (names_.isEmpty()) return {160, 60};
    const Geometry g = geometryFor(fontMetrics().height());
    return {g.left + shownClasses() * g.cell + 1, g.top + shownClasses() * g.cell + 1};
}

void ConfusionMatrixView::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    const QPalette& colours = palette();
    painter.setPen(colours.color(QPalette::WindowText));
    if (names_.isEmpty()) {
        painter.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                         tr("The confusion matrix appears when a run has been evaluated."));
        return;
    }
    const Geometry g = geometry();
    const int n = shownClasses();
    const QFontMetrics metrics = fontMetrics();
    painter.drawText(QRect(2, 2, g.left - 6, g.top - 6), Qt::AlignRight | Qt::AlignBottom | Qt::TextWordWrap,
                     tr("true ↓ predicted →"));
    for (int i = 0; i < n; ++i) {
        const QRect row_name(0, g.top + i * g.cell, g.left - 4, g.cell);
        painter.drawText(row_name, Qt::AlignRight | Qt::AlignVCenter, metrics.elidedText(names_[i], Qt::ElideRight, row_name.width()));
        painter.save();
        // Upwards from just above the cells, centred on the column.
        painter.translate(g.left + i * g.cell + (g.cell + metrics.ascent() - metrics.descent()) / 2, g.top - 4);
        painter.rotate(-90);
        painter.drawText(0, 0, metrics.elidedText(names_[i], Qt::ElideRight, g.top - 8));
        painter.restore();
    }
    const QColor empty = colours.color(QPalette::Base);
    const QColor full = colours.color(QPalette::Highlight);
    for (int truth = 0; truth < n; ++truth) {
        const std::int64_t total = row_totals_[static_cast<std::size_t>(truth)];
        for (int predicted = 0; predicted < n; ++predicted) {
            const std::int64_t count = cellCount(truth, predicted);
            // Shaded by the share of the true class's wires, so a small topic's mistakes show too.
            const double share = total > 0 ? static_cast<double>(count) / static_cast<double>(total) : 0.0;
            const QRect cell = cellRect(truth, predicted);
            painter.fillRect(cell, mix(empty, full, share));
            painter.setPen(colours.color(truth == predicted ? QPalette::WindowText : QPalette::Mid));
            painter.drawRect(cell.adjusted(0, 0, -1, -1));
            const QString text = QString::number(count);
            if (count > 0 && metrics.horizontalAdvance(text) + 4 <= g.cell && metrics.height() <= g.cell) {
                painter.setPen(colours.color(share > 0.5 ? QPalette::HighlightedText : QPalette::Text));
                painter.drawText(cell, Qt::AlignCenter, text);
            }
        }
    }
}

bool ConfusionMatrixView::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip || names_.isEmpty()) return QWidget::event(event);
    auto* help = static_cast<QHelpEvent*>(event);
    const Geometry g = geometry();
    const QPoint at = help->pos() - QPoint(g.left, g.top);
    const int n = shownClasses();
    if (at.x() >= 0 && at.y() >= 0 && at.x() / g.cell < n && at.y() / g.cell < n) {
        const int truth = at.y() / g.cell;
        const int predicted = at.x() / g.cell;
        QToolTip::showText(help->globalPos(), cellToolTip(truth, predicted), this, cellRect(truth, predicted));
        return true;
    }
    return QWidget::event(event);  // the widget's own tooltip elsewhere
}

// ---- the report ----

struct ClassReportView::Outcome {
    std::uint64_t generation = 0;
    std::optional<ClassReport> report;
    std::vector<std::string> class_names;
    QString error;
    double milliseconds = 0.0;
};

ClassReportView::ClassReportView(TrainingController* controller, QWidget* parent) : QWidget(parent), controller_(controller) {
    status_ = new QLabel(tr("When a run ends, its final weights are evaluated here on the validation split, topic by topic."), this);
    status_->setObjectName(QStringLiteral("classReportStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setObjectName(QStringLiteral("classReportTable"));
    table_->setAccessibleName(tr("Per-class report"));
    table_->setToolTip(tr("Precision, recall, F1 and support of every topic on the validation split; click a header to sort"));
    table_->setHorizontalHeaderLabels({tr("Topic"), tr("Precision"), tr("Recall"), tr("F1"), tr("Support")});
    table_->horizontalHeaderItem(PrecisionColumn)->setToolTip(tr("Of the wires predicted as this topic, the share that truly are"));
    table_->horizontalHeaderItem(RecallColumn)->setToolTip(tr("Of this topic's wires, the share the model finds"));
    table_->horizontalHeaderItem(SupportColumn)->setToolTip(tr("Wires of this topic in the validation split"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(false);
    table_->horizontalHeader()->setSortIndicator(SupportColumn, Qt::DescendingOrder);
    table_->setSortingEnabled(true);
    matrix_ = new ConfusionMatrixView(this);

    split_ = new QSplitter(Qt::Horizontal, this);
    split_->setObjectName(QStringLiteral("classReportSplit"));
    split_->addWidget(table_);
    split_->addWidget(matrix_);
    split_->setStretchFactor(1, 1);
    split_->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(status_);
    layout->addWidget(split_, 1);

    connect(controller_, &TrainingController::runFinished, this, [this] {
        trained_elsewhere_ = controller_->following() && controller_->lastWeights().empty();
        evaluate(controller_->lastModel(), controller_->lastData(), controller_->lastWeights());
    });
    connect(controller_, &TrainingController::lastRunDeleted, this, [this] {
        trained_elsewhere_ = false;
        evaluate(nullptr, nullptr, {});
    });
}

// The bottom strip is wide and short, a floating or side dock tall and narrow: the table goes beside
// the matrix or above it, whichever leaves the matrix the larger square.
void ClassReportView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    const Qt::Orientation wanted = width() >= 2 * height() ? Qt::Horizontal : Qt::Vertical;
    if (split_->orientation() != wanted) split_->setOrientation(wanted);
}

ClassReportView::~ClassReportView() {
    if (worker_.joinable()) worker_.join();
}

// Measured on the 2-core build machine: the tutorial model (Conv1D, input 300) over Reuters'
// 2,246 validation wires takes ~200 ms (padding included), over the ~100 ms the window may freeze
// (and a GPU-sized model or a slower machine takes longer), so the work
// runs on a std::thread (QtConcurrent is not linked) and the result comes back as a queued call.
// The destructor joins the thread, so the queued call never outlives this object.
void ClassReportView::evaluate(std::shared_ptr<const Model> model, std::shared_ptr<const DatasetSplit> data, std::vector<float> weights) {
    if (worker_.joinable()) worker_.join();  // a few hundred ms at most; keeps one worker at a time
    const std::uint64_t generation = ++generation_;
    if (!model || !data || weights.empty()) {
        Outcome outcome;
        outcome.generation = generation;
        outcome.error = trained_elsewhere_ ? tr("The last run trained in another process, which keeps its weights: train or "
                                                "resume a run here to evaluate it.")
                                           : tr("Train a model first: when a run ends, its final weights are evaluated here.");
        showOutcome(outcome);
        return;
    }
    evaluating_ = true;
    status_->setText(tr("Evaluating the final weights on the validation split…"));
    worker_ = std::thread([this, generation, model = std::move(model), data = std::move(data), weights = std::move(weights),
                           registry = controller_->registry()] {
        Outcome outcome;
        outcome.generation = generation;
        outcome.class_names = data->train.class_names;
        try {
            const auto started = std::chrono::steady_clock::now();
            const TrainData padded = make_train_data(*data, model->input_length(), model->vocabulary_size());
            if (!padded.validation_ids || padded.validation_ids->count == 0 || !padded.validation_labels) {
                outcome.error = QCoreApplication::translate("mirrorlab::ui::ClassReportView",
                                                            "This data set has no validation split, so there is nothing to evaluate on.");
            } else {
                const Predictions predictions = run_inference(*model, weights, *padded.validation_ids, padded.validation_labels.get(),
                                                              *registry, DeviceConfig::parse("cpu"), 32);
                outcome.report = class_report(predictions, *padded.validation_labels);
            }
            outcome.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        } catch (const std::exception& error) {
            outcome.error = QString::fromStdString(error.what());
        }
        // The GUI thread joins this thread before it reads a current outcome: posting the call is
        // this thread's last act, so the join costs nothing, and it orders the worker's writes before
        // the reads where ThreadSanitizer sees it (Qt's event-queue lock is invisible to it). A
        // superseded outcome is only dropped: worker_ may be a newer evaluation by then.
        QMetaObject::invokeMethod(
            this,
            [this, outcome = std::move(outcome)] {
                if (outcome.generation == generation_ && worker_.joinable()) worker_.join();
                showOutcome(outcome);
            },
            Qt::QueuedConnection);
    });
}

void ClassReportView::showOutcome(const Outcome& outcome) {
    if (outcome.generation != generation_) return;  // superseded by a later run
    evaluating_ = false;
    if (!outcome.report) {
        report_.reset();
        status_->setText(outcome.error);
        table_->setRowCount(0);
        matrix_->clear();
        emit reportReady();
        return;
    }
    report_ = outcome.report;
    const ClassReport& report = *report_;
    std::int64_t samples = 0;
    for (const ClassRow& row : report.rows) samples += row.support;
    status_->setText(tr("Validation split: %1 wires, accuracy %2, macro F1 %3 (the run's final weights, evaluated in %4 ms).")
                         .arg(samples)
                         .arg(report.accuracy, 0, 'f', 3)
                         .arg(report.macro_f1, 0, 'f', 3)
                         .arg(std::lround(outcome.milliseconds)));
    table_->setSortingEnabled(false);  // filled in class order, then sorted as the header says
    table_->setRowCount(report.num_classes);
    for (int i = 0; i < report.num_classes; ++i) {
        const ClassRow& row = report.rows[static_cast<std::size_t>(i)];
        const QString name = className(outcome.class_names, row.label);
        table_->setItem(i, ClassColumn, new QTableWidgetItem(name));
        auto* precision = new NumberItem(row.precision, 3);
        if (!std::isfinite(row.precision)) precision->setToolTip(tr("No wire was predicted as %1").arg(name));
        auto* recall = new NumberItem(row.recall, 3);
        if (!std::isfinite(row.recall)) recall->setToolTip(tr("%1 has no wires in the validation split").arg(name));
        table_->setItem(i, PrecisionColumn, precision);
        table_->setItem(i, RecallColumn, recall);
        table_->setItem(i, F1Column, new NumberItem(row.f1, 3));
        table_->setItem(i, SupportColumn, new NumberItem(static_cast<double>(row.support), 0));
    }
    table_->setSortingEnabled(true);
    // Every column in view: the numbers are what the table is for.
    table_->setMinimumWidth(table_->horizontalHeader()->length() + table_->verticalScrollBar()->sizeHint().width() +
                            2 * table_->frameWidth());
    matrix_->setReport(report, outcome.class_names);
    emit reportReady();
}

bool ClassReportView::waitForReport(int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (evaluating_ && timer.elapsed() < timeout_ms) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return !evaluating_;
}

QString ClassReportView::statusText() const { return status_->text(); }

}  // namespace mirrorlab::ui
