// The training panel and the runs panel driven by real (small) runs through the controller: one
// chart point per step and per epoch, the step/epoch axis switch, smoothing, the overfitting and
// early-stopping markers and banner, overlays of earlier runs, the runs table and its CSV / PNG
// exports. Set MIRRORLAB_SCREENSHOT_DIR to keep a PNG of the panel to look at.
#include <QtTest/QtTest>

#include <QGraphicsScene>
#include <QGraphicsTextItem>

#include <QAreaSeries>
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QElapsedTimer>
#include <QImage>
#include <QLineSeries>
#include <QLegend>
#include <QLegendMarker>
#include <QSet>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "support/fresh_run_store.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "ui/runs/runs_panel.h"
#include "ui/training/chart_ticks.h"
#include "ui/training/decimate.h"
#include "ui/training/refresh_pacer.h"
#include "ui/training/training_controller.h"
#include "ui/training/training_panel.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

constexpr std::int32_t kVocabulary = 2000;

// Embedding(2000, 8) -> Conv1D(16, 5, relu) -> GlobalMaxPooling1D -> Dense(46, softmax), as in test_trainer.
std::shared_ptr<const Model> smallModel() {
    const std::string json =
        "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 2000, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 16, \"kernel_size\": 5, \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
        "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}";
    return std::make_shared<const Model>(Model::from_json_text(json, "small model"));
}

std::shared_ptr<const DatasetSplit> syntheticData(std::int32_t train, std::int32_t validation) {
    SyntheticReutersOptions options;
    options.seed = 113;
    options.train_samples = train;
    options.validation_samples = validation;
    options.num_classes = 46;
    options.vocabulary_size = kVocabulary;
    return std::make_shared<const DatasetSplit>(make_synthetic_reuters(options));
}

RunSettings smallRun(int epochs) {
    RunSettings settings;
    settings.model = smallModel();
    settings.devices = DeviceConfig::parse("cpu:2");
    settings.config.epochs = epochs;
    settings.config.batch_size = 32;
    settings.config.seed = 7;
    settings.config.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
    settings.config.optimizer.learning_rate = 0.01;
    settings.config.prefetch_batches = 1;
    settings.data = syntheticData(400, 100);
    settings.data_name = QStringLiteral("synthetic 400/100");
    return settings;
}

// test_trainer's setting that memorises its 64 training wires, so validation loss turns up.
RunSettings overfittingRun(int epochs) {
    RunSettings settings = smallRun(epochs);
    settings.config.batch_size = 16;
    settings.config.optimizer.learning_rate = 0.02;
    settings.data = syntheticData(64, 100);
    settings.data_name = QStringLiteral("synthetic 64/100");
    return settings;
}

QLineSeries* lineSeries(QChart* chart, const QString& name) {
    for (QAbstractSeries* series : chart->series()) {
        if (series->name() == name) return qobject_cast<QLineSeries*>(series);
    }
    return nullptr;
}

QAreaSeries* areaSeries(QChart* chart) {
    for (QAbstractSeries* series : chart->series()) {
        if (auto* area = qobject_cast<QAreaSeries*>(series)) return area;
    }
    return nullptr;
}

QLineSeries* seriesStartingWith(QChart* chart, const QString& prefix) {
    for (QAbstractSeries* series : chart->series()) {
        if (series->isVisible() && series->name().startsWith(prefix)) return qobject_cast<QLineSeries*>(series);
    }
    return nullptr;
}

// A picture of the charts has many colours (curves, text, shading), not one flat background.
int distinctColours(const QImage& image) {
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3) {
        for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
    }
    return static_cast<int>(colours.size());
}

}  // namespace

class TestUiTraining : public QObject {
    Q_OBJECT
    FreshRunStore run_store_;

private slots:
    void initTestCase();
    void cleanupTestCase();
    void stepAxisFollowsRealRun();
    void shortChartsKeepTheirLabelsReadable();
    void yTicksNeverOutnumberWhatThePlotHolds();
    void epochAxisShowsOnePointPerEpoch();
    void smoothingAddsSeriesAndKeepsRaw();
    void overfittingWarningShadesCharts();
    void realOverfittingRunShowsBanner();
    void runsTableAndCsvExport();
    void overlayDrawsEarlierRun();
    void earlyStoppingMarksStopAndRestoredEpochs();
    void chartsExportAsPng();
    void zoomStopsAutoRangeUntilReset();
    void validationWordsBeyondTheVocabularyTrainWithAWarning();
    void dataThatCannotTrainFailsTheRunNotTheApp();
    // Last: they add runs the cases above do not expect.
    void decimationKeepsEndsAndSpikes();
    void longRunIsDrawnDecimatedAndZoomShowsDetail();
    void refreshPacerKeepsGuiThreadInBudget();
    void refreshPacerFollowsRuns();
    void waitingForARunLeavesTheEventLoopToItsTimers();

private:
    bool runToEnd(const RunSettings& settings);

    std::unique_ptr<TrainingController> controller_;
    std::unique_ptr<TrainingPanel> panel_;
    std::unique_ptr<RunsPanel> runs_;
    QTemporaryDir dir_;
};

bool TestUiTraining::runToEnd(const RunSettings& settings) {
    controller_->start(settings);
    const bool finished = controller_->waitForFinished(60000);
    panel_->refreshNow();
    return finished;
}

void TestUiTraining::initTestCase() {
    QVERIFY(dir_.isValid());
    run_store_.start();  // one controller for the whole suite: its runs start from an empty store
    controller_ = std::make_unique<TrainingController>();
    panel_ = std::make_unique<TrainingPanel>(controller_.get());
    runs_ = std::make_unique<RunsPanel>(controller_.get());
    runs_->setTrainingPanel(panel_.get());
    connect(runs_.get(), &RunsPanel::overlayRunsChanged, panel_.get(), &TrainingPanel::setOverlayRuns);
    panel_->resize(1400, 900);
    panel_->show();
}

void TestUiTraining::cleanupTestCase() {
    runs_.reset();
    panel_.reset();
    controller_.reset();
}

void TestUiTraining::stepAxisFollowsRealRun() {
    QVERIFY(runToEnd(smallRun(3)));
    const RunRecord* record = controller_->currentRun();
    QVERIFY(record != nullptr);
    QVERIFY2(record->finished.has_value(), record->failed ? record->failed->reason.c_str() : "no end");
    QCOMPARE(record->steps_per_epoch, std::int64_t{13});  // ceil(400 / 32)
    QCOMPARE(record->steps.size(), std::size_t{39});
    QCOMPARE(record->epochs.size(), std::size_t{3});

    for (QChart* chart : {panel_->lossChart(), panel_->accuracyChart(), panel_->top5Chart()}) {
        QLineSeries* train = lineSeries(chart, QStringLiteral("training"));
        QLineSeries* validation = lineSeries(chart, QStringLiteral("validation"));
        QVERIFY(train != nullptr);
        QVERIFY(validation != nullptr);
        QCOMPARE(train->count(), 39);  // one point per step
        QCOMPARE(validation->count(), 3);  // one per epoch
        QVERIFY(validation->pointsVisible());
    }
    QCOMPARE(panel_->trainingPointCount(), 39);
    QCOMPARE(panel_->validationPointCount(), 3);

    // Training points are the running means at each global step; validation sits where its epoch ended.
    QLineSeries* train = lineSeries(panel_->lossChart(), QStringLiteral("training"));
    QLineSeries* validation = lineSeries(panel_->lossChart(), QStringLiteral("validation"));
    QCOMPARE(train->at(20).x(), double(record->steps[20].global_step));
    QCOMPARE(train->at(20).y(), record->steps[20].running.loss);
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(validation->at(i).x(), 13.0 * (i + 1));
        QCOMPARE(validation->at(i).y(), record->epochs[static_cast<std::size_t>(i)].validation.loss);
    }
    auto* x_axis = qobject_cast<QValueAxis*>(panel_->lossChart()->axes(Qt::Horizontal).value(0));
    QVERIFY(x_axis != nullptr);
    QCOMPARE(x_axis->titleText(), QStringLiteral("Step"));
    QVERIFY(x_axis->max() >= 39.0);

    QVERIFY2(panel_->progressText().contains(QStringLiteral("13/13")), qPrintable(panel_->progressText()));
    QVERIFY2(panel_->progressText().contains(QStringLiteral("ms/step")), qPrintable(panel_->progressText()));
    QVERIFY2(panel_->kerasLineText().contains(QStringLiteral("13/13 - ")), qPrintable(panel_->kerasLineText()));
    QVERIFY2(panel_->kerasLineText().contains(QStringLiteral("val_loss: ")), qPrintable(panel_->kerasLineText()));
    QCOMPARE(panel_->statusText(), QStringLiteral("Finished: 3 epochs"));
    QVERIFY(!panel_->overfittingShown());
    QVERIFY(panel_->bannerText().isEmpty());
    QCOMPARE(runs_->rowCount(), 1);
}

// 28,000 steps (100 epochs of the tutorial) drawn as at most kMaxDrawnPoints points that still
// show the curve's ends, its lowest and highest points and every spike.
void TestUiTraining::decimationKeepsEndsAndSpikes() {
    QVector<QPointF> points;
    for (int i = 0; i < 28000; ++i) points.append(QPointF(i, 2.0 - i / 20000.0 + 0.01 * std::sin(i * 0.37)));
    points[12345].setY(9.5);   // a loss spike
    points[20001].setY(-1.0);  // and a dip
    const double inf = std::numeric_limits<double>::infinity();
    const QVector<QPointF> drawn = decimated_for_drawing(points, -inf, inf);
    QVERIFY2(drawn.size() <= kMaxDrawnPoints + 2, qPrintable(QString::number(drawn.size())));
    QVERIFY(drawn.size() >= kMaxDrawnPoints / 2);
    QCOMPARE(drawn.front(), points.front());
    QCOMPARE(drawn.back(), points.back());
    QVERIFY(drawn.contains(points[12345]));
    QVERIFY(drawn.contains(points[20001]));
    for (qsizetype i = 1; i < drawn.size(); ++i) QVERIFY(drawn[i - 1].x() < drawn[i].x());
    // Every drawn point is a real one (no averaging that would invent values).
    for (const QPointF& point : drawn) QCOMPARE(points[static_cast<qsizetype>(point.x())], point);

    // Zoomed in: every point of the view, plus one neighbour on each side.
    const QVector<QPointF> zoomed = decimated_for_drawing(points, 100.0, 300.0);
    QCOMPARE(zoomed.size(), 203);
    QCOMPARE(zoomed.front(), points[99]);
    QCOMPARE(zoomed.back(), points[301]);
    // A short curve is drawn as it is.
    const QVector<QPointF> few(points.begin(), points.begin() + 50);
    QCOMPARE(decimated_for_drawing(few, -inf, inf), few);
}

// A real run long enough to be decimated: the chart holds a bounded number of points while the
// panel keeps every step, and zooming brings back every step in view.
void TestUiTraining::longRunIsDrawnDecimatedAndZoomShowsDetail() {
    RunSettings settings = smallRun(6);
    settings.config.batch_size = 1;  // 400 steps per epoch: 2,400 steps
    QVERIFY(runToEnd(settings));
    const RunRecord* record = controller_->currentRun();
    QVERIFY(record != nullptr && record->finished.has_value());
    QCOMPARE(record->steps.size(), std::size_t{2400});
    QCOMPARE(panel_->trainingPointCount(), 2400);
    QLineSeries* train = lineSeries(panel_->lossChart(), QStringLiteral("training"));
    QVERIFY(train != nullptr);
    // Two points per pixel column of the plot draw what every point would; no more are handed over.
    const qreal plot_width = panel_->lossChart()->plotArea().width();
    QVERIFY2(plot_width > 100, qPrintable(QString::number(plot_width)));
    const int budget = std::min(kMaxDrawnPoints, 2 * static_cast<int>(std::ceil(plot_width)));
    QVERIFY2(budget < 2400, "the chart is wide enough to draw every step: the test decimates nothing");
    QVERIFY2(train->count() <= budget + 2 && train->count() >= budget / 2,
             qPrintable(QString("%1 points drawn, %2 pixels wide").arg(train->count()).arg(plot_width)));
    QCOMPARE(train->at(train->count() - 1).x(), 2400.0);
    auto* x_axis = qobject_cast<QValueAxis*>(panel_->lossChart()->axes(Qt::Horizontal).value(0));
    QVERIFY(x_axis != nullptr);
    x_axis->setRange(1000.0, 1100.0);  // as the zoomable view does
    panel_->refreshNow();
    QCOMPARE(train->count(), 103);
    QCOMPARE(train->at(1).x(), 1000.0);
    QCOMPARE(train->at(1).y(), record->steps[999].running.loss);
    panel_->resetZoom();  // back to the whole run, decimated again
    QVERIFY(train->count() <= budget + 2);
}

// A short chart (the window of a laptop, a dock opened below the charts) gets no more value labels
// than its height holds (a line of the labels' font and Qt's padding each): more, and Qt elides
// every one of them to "...". The run has ended, so no refresh comes: resizing alone fits them.
void TestUiTraining::shortChartsKeepTheirLabelsReadable() {
    const QSize size = panel_->size();
    for (int height : {330, 420, 900, 330}) {
        panel_->resize(1400, height);
        QTest::qWait(50);  // the layout and the charts' geometry
        for (QChart* chart : {panel_->lossChart(), panel_->accuracyChart(), panel_->top5Chart()}) {
            // What Qt drew: a label it has no room for reads "..." (the loss axis of a 1366x768
            // window after one epoch showed four).
            for (const QGraphicsItem* item : chart->scene()->items()) {
                const auto* text = dynamic_cast<const QGraphicsTextItem*>(item);
                if (text == nullptr || !text->isVisible()) continue;
                QVERIFY2(!text->toPlainText().endsWith(QStringLiteral("...")),
                         qPrintable(QString("%1 at %2 px: a label reads '%3'").arg(chart->title()).arg(height).arg(text->toPlainText())));
            }
            auto* y_axis = qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).value(0));
            QVERIFY(y_axis != nullptr);
            const qreal plot_height = chart->plotArea().height();
            const long labels = std::lround((y_axis->max() - y_axis->min()) / y_axis->tickInterval()) + 1;
            const qreal per_label = QFontMetricsF(y_axis->labelsFont()).height() + 10.0;  // a line, 4 px padding each side, 2 spare
            const long fit = std::max(2L, static_cast<long>(plot_height / per_label));
            QVERIFY2(labels >= 2 && labels <= fit,
                     qPrintable(QString("%1: %2 labels on a plot %3 px high (%4 fit), range %5..%6")
                                    .arg(chart->title()).arg(labels).arg(plot_height).arg(fit)
                                    .arg(y_axis->min()).arg(y_axis->max())));
        }
    }
    panel_->resize(size);
}

// Every range a curve can span, on plots from two labels' height up: the labels cover the data at
// round intervals and never outnumber the room (a short plot crowded with labels shows "..." each).
void TestUiTraining::yTicksNeverOutnumberWhatThePlotHolds() {
    // The first step that fits in one interval, 0.2, straddles 1.0: three labels where two fit.
    const YTicks straddling = y_ticks_that_fit(0.9, 1.1, 2, false);
    QCOMPARE(straddling.low, 0.0);
    QCOMPARE(straddling.high, 2.0);
    int checked = 0;
    for (bool is_accuracy : {false, true}) {
        for (int max_labels = 2; max_labels <= 8; ++max_labels) {
            for (double y_min = 0.0; y_min < 4.0; y_min += 0.037) {
                for (double span : {0.001, 0.013, 0.05, 0.2, 0.31, 0.77, 1.9, 4.3}) {
                    const double y_max = y_min + span;
                    if (is_accuracy && (y_min > 1.0 || y_max > 1.05)) continue;  // padded accuracies
                    const YTicks t = y_ticks_that_fit(y_min, y_max, max_labels, is_accuracy);
                    const long labels = std::lround((t.high - t.low) / t.step) + 1;
                    const double round = t.step / std::pow(10.0, std::floor(std::log10(t.step) + 1e-9));
                    const bool covers = t.low <= y_min + 1e-9 && (t.high >= y_max - 1e-9 || (is_accuracy && t.high == 1.0));
                    QVERIFY2(labels >= 2 && labels <= max_labels && covers &&
                                 (std::abs(round - 1) < 1e-6 || std::abs(round - 2) < 1e-6 || std::abs(round - 5) < 1e-6),
                             qPrintable(QString("%1..%2 in %3 labels%4: %5..%6 by %7")
                                            .arg(y_min).arg(y_max).arg(max_labels)
                                            .arg(is_accuracy ? " (accuracy)" : "").arg(t.low).arg(t.high).arg(t.step)));
                    ++checked;
                }
            }
        }
    }
    QVERIFY(checked > 1000);
}

void TestUiTraining::epochAxisShowsOnePointPerEpoch() {
    const RunRecord* record = controller_->currentRun();
    panel_->setAxisMode(TrainingPanel::AxisMode::Epochs);
    panel_->refreshNow();
    QCOMPARE(panel_->trainingPointCount(), 3);
    QCOMPARE(panel_->validationPointCount(), 3);
    QLineSeries* train = lineSeries(panel_->lossChart(), QStringLiteral("training"));
    QLineSeries* validation = lineSeries(panel_->accuracyChart(), QStringLiteral("validation"));
    for (int i = 0; i < 3; ++i) {
        const EpochRecord& epoch = record->epochs[static_cast<std::size_t>(i)];
        QCOMPARE(train->at(i), QPointF(i + 1, epoch.train.loss));  // per-epoch train metrics, not step means
        QCOMPARE(validation->at(i), QPointF(i + 1, epoch.validation.accuracy));
    }
    auto* x_axis = qobject_cast<QValueAxis*>(panel_->lossChart()->axes(Qt::Horizontal).value(0));
    QCOMPARE(x_axis->titleText(), QStringLiteral("Epoch"));
    QVERIFY(x_axis->max() >= 3.0 && x_axis->max() < 13.0);

    panel_->setAxisMode(TrainingPanel::AxisMode::Steps);
    panel_->refreshNow();
    QCOMPARE(panel_->trainingPointCount(), 39);
}

void TestUiTraining::smoothingAddsSeriesAndKeepsRaw() {
    panel_->setSmoothing(0.8);
    panel_->refreshNow();
    QLineSeries* raw = lineSeries(panel_->lossChart(), QStringLiteral("training"));
    QLineSeries* smooth = lineSeries(panel_->lossChart(), QStringLiteral("training (smoothed)"));
    QVERIFY(smooth != nullptr);
    QVERIFY(smooth->isVisible());
    QVERIFY(raw->isVisible());
    QCOMPARE(smooth->count(), raw->count());
    QCOMPARE(smooth->at(0).y(), raw->at(0).y());  // debiased: the first point is the first value
    QVERIFY(smooth->at(30).y() != raw->at(30).y());
    QVERIFY(raw->pen().color().alpha() < 255);  // raw stays, lighter
    panel_->setSmoothing(0.0);
    panel_->refreshNow();
    QVERIFY(!smooth->isVisible());
    QCOMPARE(raw->pen().color().alpha(), 255);
}

void TestUiTraining::overfittingWarningShadesCharts() {
    // Fed directly: the situation "validation loss rose at epoch 4, best epoch 3".
    panel_->handleWarning(WarningEvent{"overfitting", "Epoch 4: validation loss rose", 4, 3});
    panel_->refreshNow();
    QVERIFY(panel_->overfittingShown());
    const QString banner = panel_->bannerText();
    QVERIFY2(banner.contains(QStringLiteral("since epoch 4")), qPrintable(banner));
    QVERIFY2(banner.contains(QStringLiteral("best epoch so far is 3")), qPrintable(banner));
    QVERIFY2(banner.contains(QStringLiteral("early stopping with restore best weights")), qPrintable(banner));
    for (QChart* chart : {panel_->lossChart(), panel_->accuracyChart(), panel_->top5Chart()}) {
        QAreaSeries* area = areaSeries(chart);
        QVERIFY(area != nullptr);
        QVERIFY(area->isVisible());
        QCOMPARE(area->upperSeries()->at(0).x(), 39.0);  // epoch 4 begins after step 39
        QLineSeries* best = seriesStartingWith(chart, QStringLiteral("best epoch 3"));
        QVERIFY(best != nullptr);
        QCOMPARE(best->count(), 2);
        QCOMPARE(best->at(0).x(), 39.0);  // the end of epoch 3
        QCOMPARE(best->pen().style(), Qt::DashLine);
    }
    // Epoch axis: the shading begins where epoch 4 begins (at epoch 3's point).
    panel_->setAxisMode(TrainingPanel::AxisMode::Epochs);
    panel_->refreshNow();
    QCOMPARE(areaSeries(panel_->lossChart())->upperSeries()->at(0).x(), 3.0);
    panel_->setAxisMode(TrainingPanel::AxisMode::Steps);

    panel_->clear();
    panel_->refreshNow();
    QVERIFY(!panel_->overfittingShown());
    QVERIFY(panel_->bannerText().isEmpty());
    QVERIFY(!areaSeries(panel_->lossChart())->isVisible());
    QCOMPARE(panel_->trainingPointCount(), 0);
}

void TestUiTraining::realOverfittingRunShowsBanner() {
    QVERIFY(runToEnd(overfittingRun(12)));
    const RunRecord* record = controller_->currentRun();
    QVERIFY(record->finished.has_value());
    QCOMPARE(record->epochs.size(), std::size_t{12});
    QCOMPARE(panel_->validationPointCount(), 12);
    QCOMPARE(panel_->trainingPointCount(), 12 * 4);  // 64 / 16 steps per epoch
    // test_trainer shows this setting overfits within 12 epochs.
    QVERIFY2(record->overfitting_epoch > 0, "the setting should overfit");
    QVERIFY(panel_->overfittingShown());
    int best = 0;
    for (const WarningEvent& warning : record->warnings) {
        if (warning.code == "overfitting") best = warning.best_epoch;
    }
    const QString banner = panel_->bannerText();
    QVERIFY2(banner.contains(QStringLiteral("The best epoch so far is %1.").arg(best)), qPrintable(banner));
    QVERIFY2(banner.contains(QStringLiteral("the model is overfitting")), qPrintable(banner));
    QVERIFY(areaSeries(panel_->lossChart())->isVisible());
}

void TestUiTraining::runsTableAndCsvExport() {
    QCOMPARE(controller_->runs().size(), std::size_t{2});
    QCOMPARE(runs_->rowCount(), 2);
    QTableWidget* table = runs_->table();
    QCOMPARE(table->item(0, RunsPanel::RunColumn)->text(), QStringLiteral("1"));
    QCOMPARE(table->item(1, RunsPanel::RunColumn)->text(), QStringLiteral("2"));
    QCOMPARE(table->item(0, RunsPanel::EpochsColumn)->text(), QStringLiteral("3/3"));
    QCOMPARE(table->item(1, RunsPanel::EpochsColumn)->text(), QStringLiteral("12/12"));
    QCOMPARE(table->item(0, RunsPanel::StatusColumn)->text(), QStringLiteral("finished"));
    QVERIFY(table->item(0, RunsPanel::DevicesColumn)->text().contains(QStringLiteral("cpu")));
    QCOMPARE(table->item(1, RunsPanel::DataColumn)->text(), QStringLiteral("synthetic 64/100"));
    QVERIFY(table->item(1, RunsPanel::OptimizerColumn)->text().contains(QStringLiteral("0.02")));
    QVERIFY(table->item(1, RunsPanel::BestValLossColumn)->text().contains(QStringLiteral("(epoch ")));

    const RunRecord& run = controller_->runs().front();
    const QString csv = RunsPanel::historyCsv(run);
    QStringList lines = csv.split(QLatin1Char('\n'));
    QCOMPARE(lines.takeLast(), QString());  // ends with a newline
    QCOMPARE(lines.size(), 4);
    QCOMPARE(lines[0], QStringLiteral("epoch,accuracy,loss,top5,val_accuracy,val_loss,val_top5"));
    for (int i = 0; i < 3; ++i) {
        const QStringList fields = lines[i + 1].split(QLatin1Char(','));
        QCOMPARE(fields.size(), 7);
        const EpochRecord& epoch = run.epochs[static_cast<std::size_t>(i)];
        QCOMPARE(fields[0], QString::number(i));  // 0-based, as CSVLogger
        // Shortest exact digits: the numbers read back bit for bit.
        QCOMPARE(fields[1].toDouble(), epoch.train.accuracy);
        QCOMPARE(fields[2].toDouble(), epoch.train.loss);
        QCOMPARE(fields[3].toDouble(), epoch.train.top5);
        QCOMPARE(fields[4].toDouble(), epoch.validation.accuracy);
        QCOMPARE(fields[5].toDouble(), epoch.validation.loss);
        QCOMPARE(fields[6].toDouble(), epoch.validation.top5);
    }

    const QString path = dir_.filePath(QStringLiteral("history.csv"));
    QString error;
    QVERIFY2(runs_->exportCsv(1, path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(file.readAll()), csv);
    QVERIFY(!runs_->exportCsv(99, dir_.filePath(QStringLiteral("none.csv")), &error));
    QVERIFY(error.contains(QStringLiteral("99")));
}

void TestUiTraining::overlayDrawsEarlierRun() {
    QSignalSpy spy(runs_.get(), &RunsPanel::overlayRunsChanged);
    runs_->setOverlayChecked(1, true);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.takeFirst().at(0).value<QList<int>>(), QList<int>{1});
    QCOMPARE(panel_->overlayRuns(), QList<int>{1});
    for (QChart* chart : {panel_->lossChart(), panel_->accuracyChart(), panel_->top5Chart()}) {
        QLineSeries* train = lineSeries(chart, QStringLiteral("run 1 training"));
        QLineSeries* validation = lineSeries(chart, QStringLiteral("run 1 validation"));
        QVERIFY(train != nullptr);
        QVERIFY(validation != nullptr);
        QCOMPARE(train->count(), 39);
        QCOMPARE(validation->count(), 3);
        // Muted, not the live run's colours.
        QVERIFY(train->pen().color() != lineSeries(chart, QStringLiteral("training"))->pen().color());
    }
    panel_->setAxisMode(TrainingPanel::AxisMode::Epochs);
    QCOMPARE(lineSeries(panel_->lossChart(), QStringLiteral("run 1 training"))->count(), 3);
    panel_->setAxisMode(TrainingPanel::AxisMode::Steps);
    // The live series stay on top and keep their data.
    QCOMPARE(panel_->trainingPointCount(), 48);
}

void TestUiTraining::earlyStoppingMarksStopAndRestoredEpochs() {
    RunSettings settings = overfittingRun(40);
    settings.config.early_stopping.enabled = true;
    settings.config.early_stopping.patience = 2;
    settings.config.early_stopping.restore_best_weights = true;
    QVERIFY(runToEnd(settings));
    const RunRecord* record = controller_->currentRun();
    QCOMPARE(record->id, 3);
    QVERIFY(record->finished.has_value());
    QCOMPARE(record->finished->reason, FinishReason::EarlyStopping);
    const int stop = record->finished->epochs_completed;
    const int restored = record->finished->restored_epoch;
    QVERIFY(restored >= 1 && restored < stop);
    const QString banner = panel_->bannerText();
    QVERIFY2(banner.contains(QStringLiteral("Early stopping ended the run after epoch %1").arg(stop)), qPrintable(banner));
    QVERIFY2(banner.contains(QStringLiteral("restored from epoch %1").arg(restored)), qPrintable(banner));
    QVERIFY2(!banner.contains(QStringLiteral("Turn on early stopping")), qPrintable(banner));
    QLineSeries* stop_line = seriesStartingWith(panel_->lossChart(), QStringLiteral("early stop at epoch %1").arg(stop));
    QVERIFY(stop_line != nullptr);
    QCOMPARE(stop_line->at(0).x(), 4.0 * stop);
    QLineSeries* best_line = seriesStartingWith(panel_->lossChart(), QStringLiteral("best epoch %1").arg(restored));
    QVERIFY(best_line != nullptr);
    QVERIFY(best_line->name().contains(QStringLiteral("restored")));
    QCOMPARE(best_line->at(0).x(), 4.0 * restored);
    QCOMPARE(runs_->rowCount(), 3);
    QVERIFY(runs_->table()->item(2, RunsPanel::StatusColumn)->text().contains(QStringLiteral("early stopping")));

    // A picture to look at: run 3 live, run 1 overlaid, smoothing on. (Run 2 is run 3 without early
    // stopping: same seed, same curves.)
    panel_->setSmoothing(0.6);
    panel_->refreshNow();
    QCoreApplication::sendPostedEvents();  // chart legends and the banner lay out from posted events
    for (QChart* chart : {panel_->lossChart(), panel_->accuracyChart(), panel_->top5Chart()}) {
        QCOMPARE(lineSeries(chart, QStringLiteral("training"))->count(), 4 * stop);
        QCOMPARE(lineSeries(chart, QStringLiteral("training (smoothed)"))->count(), 4 * stop);
        QCOMPARE(lineSeries(chart, QStringLiteral("validation"))->count(), stop);
    }
    const QImage image = panel_->grab().toImage();
    QVERIFY(image.save(dir_.filePath(QStringLiteral("training_panel.png"))));
    // One legend, on the loss chart, naming the live run, the overlays and the markers.
    QStringList shown;
    for (QLegendMarker* marker : panel_->lossChart()->legend()->markers()) {
        if (marker->isVisible()) shown << marker->label();
    }
    for (const QString& label : {QStringLiteral("training"), QStringLiteral("training (smoothed)"), QStringLiteral("validation"),
                                 QStringLiteral("run 1 training"), QStringLiteral("run 1 validation"),
                                 QStringLiteral("early stop at epoch %1").arg(stop)}) {
        QVERIFY2(shown.contains(label), qPrintable(shown.join(QStringLiteral(", "))));
    }
    QVERIFY(!panel_->accuracyChart()->legend()->isVisible());
    const QByteArray keep = qgetenv("MIRRORLAB_SCREENSHOT_DIR");
    if (!keep.isEmpty()) {
        const QDir out(QString::fromLocal8Bit(keep));
        QVERIFY(image.save(out.filePath(QStringLiteral("training_panel.png"))));
        panel_->setAxisMode(TrainingPanel::AxisMode::Epochs);
        panel_->refreshNow();
        QCoreApplication::sendPostedEvents();
        QVERIFY(panel_->grab().save(out.filePath(QStringLiteral("training_panel_epochs.png"))));
        panel_->setAxisMode(TrainingPanel::AxisMode::Steps);
        panel_->refreshNow();
    }
}

void TestUiTraining::chartsExportAsPng() {
    const QString path = dir_.filePath(QStringLiteral("charts.png"));
    QString error;
    QVERIFY2(runs_->exportChartsPng(path, &error), qPrintable(error));
    QVERIFY(QFileInfo(path).size() > 0);
    QImage image;
    QVERIFY(image.load(path, "PNG"));
    QCOMPARE(image.size(), panel_->size());
    QVERIFY2(distinctColours(image) > 20, "the exported charts look blank");

    RunsPanel no_panel(controller_.get());
    QVERIFY(!no_panel.exportChartsPng(dir_.filePath(QStringLiteral("none.png")), &error));
    QVERIFY(!error.isEmpty());
}

void TestUiTraining::zoomStopsAutoRangeUntilReset() {
    QChart* chart = panel_->lossChart();
    auto* x_axis = qobject_cast<QValueAxis*>(chart->axes(Qt::Horizontal).value(0));
    const double full_max = x_axis->max();

    // Mouse wheel up over the plot zooms in around the cursor.
    auto* view = qobject_cast<QChartView*>(panel_->findChildren<QChartView*>().value(0));
    QVERIFY(view != nullptr);
    QCOMPARE(view->chart(), chart);
    const QPointF centre = view->mapFromScene(chart->mapToScene(chart->plotArea().center()));
    QWheelEvent wheel(centre, view->viewport()->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(view->viewport(), &wheel);
    const double zoomed_min = x_axis->min();
    const double zoomed_max = x_axis->max();
    QVERIFY2(zoomed_max - zoomed_min < full_max * 0.9, qPrintable(QStringLiteral("%1..%2").arg(zoomed_min).arg(zoomed_max)));

    // New data does not move a zoomed chart...
    StepEndEvent step;
    step.epoch = 6;
    step.step = 1;
    step.steps = 4;
    step.global_step = 200;
    step.running.loss = 1.0;
    step.running.accuracy = 0.5;
    step.running.top5 = 0.9;
    panel_->handleStepsEnded({step});
    panel_->refreshNow();
    QCOMPARE(x_axis->min(), zoomed_min);
    QCOMPARE(x_axis->max(), zoomed_max);
    // ...until "Reset zoom", which auto-ranges over all data again.
    panel_->resetZoom();
    QCOMPARE(x_axis->min(), 0.0);
    QVERIFY(x_axis->max() >= 200.0);
}

// A validation split with word ids the training split never had (as Keras' load_data gives) used
// to abort the GUI on Start: now the ids map to the OOV id, the run trains and the log says so.
void TestUiTraining::validationWordsBeyondTheVocabularyTrainWithAWarning() {
    auto data = std::make_shared<DatasetSplit>(*syntheticData(200, 50));
    data->validation.sequences[0].back() = kVocabulary + 11;
    RunSettings settings = smallRun(1);
    settings.data = data;
    QVERIFY(runToEnd(settings));
    const RunRecord* record = controller_->currentRun();
    QVERIFY(record != nullptr);
    QVERIFY2(!record->failed, record->failed ? record->failed->reason.c_str() : "");
    QVERIFY(record->finished);
    bool warned = false;
    for (const WarningEvent& warning : record->warnings) {
        warned = warned || (warning.text.find("validation data") != std::string::npos &&
                            warning.text.find("out-of-vocabulary") != std::string::npos);
    }
    QVERIFY(warned);
}

// Data the engine cannot use at all (a negative id) ends that run with the reason; the window and
// the controller stay usable and the next run trains.
void TestUiTraining::dataThatCannotTrainFailsTheRunNotTheApp() {
    auto data = std::make_shared<DatasetSplit>(*syntheticData(200, 50));
    data->train.sequences[5].front() = -3;
    RunSettings settings = smallRun(1);
    settings.data = data;
    QVERIFY(runToEnd(settings));
    const RunRecord* failed = controller_->currentRun();
    QVERIFY(failed != nullptr && failed->failed);
    QVERIFY2(failed->failed->reason.find("negative token id") != std::string::npos, failed->failed->reason.c_str());
    QCOMPARE(controller_->state(), TrainingController::State::Idle);
    QVERIFY(runToEnd(smallRun(1)));
    QVERIFY(controller_->currentRun()->finished);
}

// The pacer with a simulated GUI thread whose work is a fixed 2 % of a core plus 5.6 % at the
// 500 ms refresh, shrinking as the refresh slows (what perf measured of the GUI thread on the Xeon
// under Xvfb while two replicas trained), sampled on every 50 ms drain.
void TestUiTraining::refreshPacerKeepsGuiThreadInBudget() {
    RefreshPacer pacer;
    double now = 0.0, cpu = 0.0;
    auto run_for = [&](double seconds, double fixed_share, double refresh_share_at_fastest) {
        for (const double end = now + seconds; now < end;) {
            now += 0.05;
            cpu += 0.05 * (fixed_share + refresh_share_at_fastest * RefreshPacer::kFastestMs / pacer.intervalMs());
            pacer.sample(now, cpu);
        }
    };
    const auto shown = [&] {
        return QString("interval %1 ms, share %2").arg(pacer.intervalMs()).arg(pacer.lastShare()).toUtf8();
    };
    // Cores not busy with training: the views keep their pace, however busy the thread.
    pacer.setCoresBusy(false);
    run_for(10, 0.02, 0.056);
    QCOMPARE(pacer.intervalMs(), RefreshPacer::kFastestMs);
    QVERIFY2(pacer.lastShare() > 0.07, shown().constData());
    // Busy cores: the interval grows until the thread's share is the budget (1.4 s here).
    pacer.setCoresBusy(true);
    run_for(20, 0.02, 0.056);
    QVERIFY2(pacer.intervalMs() > 1200 && pacer.intervalMs() < 1600, shown().constData());
    QVERIFY2(std::abs(pacer.lastShare() - RefreshPacer::kBudget) < 0.003, shown().constData());
    // One heavy second (a resize, say) doubles it at most; a heavy thread is held at the slowest.
    const int before = pacer.intervalMs();
    run_for(1.0, 0.02, 0.5);
    QVERIFY2(pacer.intervalMs() <= 2 * before, shown().constData());
    run_for(10, 0.02, 0.5);
    QCOMPARE(pacer.intervalMs(), RefreshPacer::kSlowestMs);
    // A light thread comes back to the fastest pace, and so does a run that frees the cores.
    run_for(10, 0.005, 0.005);
    QCOMPARE(pacer.intervalMs(), RefreshPacer::kFastestMs);
    run_for(10, 0.02, 0.5);
    QVERIFY2(pacer.intervalMs() > RefreshPacer::kFastestMs, shown().constData());
    pacer.setCoresBusy(false);
    QCOMPARE(pacer.intervalMs(), RefreshPacer::kFastestMs);
}

// A run on CPU devices marks the cores busy for the pacer while it goes; its end frees them.
void TestUiTraining::refreshPacerFollowsRuns() {
    QVERIFY(!controller_->refreshPacer().coresBusy());
    controller_->start(smallRun(1));
    QVERIFY(controller_->refreshPacer().coresBusy());
    QVERIFY(controller_->waitForFinished(60000));
    QTRY_VERIFY(!controller_->refreshPacer().coresBusy());
    QCOMPARE(controller_->refreshIntervalMs(), RefreshPacer::kFastestMs);
    // The finished run is drawn whole when it ends, not a paced interval later: every step's point.
    QLineSeries* train = lineSeries(panel_->lossChart(), QStringLiteral("training"));
    QVERIFY(train != nullptr);
    QCOMPARE(train->count(), 13);  // ceil(400 / 32) steps of one epoch
    QCOMPARE(panel_->statusText(), QStringLiteral("Finished: 1 epoch"));
    // The clock the pacer reads is this thread's own CPU time: work advances it.
    const double cpu_before = threadCpuSeconds();
    volatile double sink = 0.0;
    for (int i = 0; i < 20'000'000; ++i) sink = sink + i * 0.5;
    QVERIFY2(threadCpuSeconds() > cpu_before, "the GUI thread's CPU clock did not move");
}

// waitForFinished (tests, --screenshot, which gui_vs_cli.sh times) runs the event loop as the
// application does: the run's steps reach the views at the drain timer's pace, and the wait gives
// up at its deadline while the run goes on. (A loop polling every 5 ms handed steps over up to 200
// times a second, each wake-up taking a core from a replica.)
void TestUiTraining::waitingForARunLeavesTheEventLoopToItsTimers() {
    // Long epochs (3,125 steps): step events are also flushed before each epoch's and each memory event.
    RunSettings settings = smallRun(100);
    settings.data = syntheticData(100000, 100);
    controller_->start(settings);
    int hand_overs = 0;
    int other_events = 0;  // each one that comes between steps ends a hand-over early
    auto count_other = [&other_events] { ++other_events; };
    const TrainingController* c = controller_.get();
    const std::vector<QMetaObject::Connection> counting = {
        connect(c, &TrainingController::stepsEnded, this, [&hand_overs] { ++hand_overs; }),
        connect(c, &TrainingController::epochBegan, this, count_other),
        connect(c, &TrainingController::epochEnded, this, count_other),
        connect(c, &TrainingController::memoryUpdated, this, count_other),
        connect(c, &TrainingController::warningRaised, this, count_other),
        connect(c, &TrainingController::logLine, this, count_other)};
    QElapsedTimer clock;
    clock.start();
    QVERIFY(!controller_->waitForFinished(1000));  // the deadline passes: the run goes on
    const qint64 waited_ms = clock.elapsed();
    for (const QMetaObject::Connection& connection : counting) disconnect(connection);
    QCOMPARE(controller_->state(), TrainingController::State::Running);
    QVERIFY2(waited_ms >= 980, qPrintable(QString("returned after %1 ms").arg(waited_ms)));
    // Steps arrived while waiting, but no more often than the 50 ms drain timer fires, plus one
    // where an epoch's, a memory or a log event came between them. (On a slow machine short epochs
    // bring several such events a second: a fixed allowance failed there.)
    const qint64 most_hand_overs = waited_ms / 50 + 2 + other_events;
    QVERIFY2(hand_overs >= 1 && hand_overs <= most_hand_overs,
             qPrintable(QString("%1 hand-overs in %2 ms (at most %3: %4 other events came)")
                            .arg(hand_overs).arg(waited_ms).arg(most_hand_overs).arg(other_events)));
    qInfo("%d hand-overs of steps in %lld ms, %d other events", hand_overs, static_cast<long long>(waited_ms),
          other_events);
    controller_->stop();
    QVERIFY(controller_->waitForFinished(60000));
    QCOMPARE(controller_->state(), TrainingController::State::Idle);
    QVERIFY(controller_->waitForFinished(0));  // nothing running: at once
}

QTEST_MAIN(TestUiTraining)
#include "test_ui_training.moc"
