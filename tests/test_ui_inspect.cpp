// Asking a trained model, as a person does in the GUI: the Try it panel names the topic of a
// newswire and strikes through the words the vocabulary lacks, and says in a sentence why it
// cannot answer (no model yet, a data set without words, no text); the per-class report after a
// run has one row per topic whose supports add up to the validation split, a confusion matrix
// whose cells add up to the report's, and paints in a light and a dark palette.
#include <QtTest/QtTest>

#include <QHelpEvent>
#include <QImage>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QToolTip>

#include <memory>
#include <numeric>
#include <string>

#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "support/palettes.h"
#include "support/tiny_corpus.h"
#include "ui/inspect/class_report_view.h"
#include "ui/inspect/try_it_panel.h"
#include "ui/training/training_panel.h"
#include "ui/training/training_controller.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

RunSettings tinyRun(std::shared_ptr<const DatasetSplit> data) {
    RunSettings settings;
    settings.model = std::make_shared<const Model>(Model::from_json_text(R"({"name": "tiny", "input_length": 20, "layers": [
        {"class_name": "Embedding", "config": {"input_dim": 100, "output_dim": 8}},
        {"class_name": "GlobalAveragePooling1D", "config": {}},
        {"class_name": "Dense", "config": {"units": 2, "activation": "softmax"}}]})",
                                                                         "tiny"));
    settings.devices = DeviceConfig::parse("cpu");
    settings.config.epochs = 15;
    settings.config.optimizer.learning_rate = 0.05;
    settings.config.prefetch_batches = 1;
    settings.data = std::move(data);
    settings.data_name = QStringLiteral("tiny corpus");
    return settings;
}

std::shared_ptr<const DatasetSplit> tinyCorpus(const QTemporaryDir& dir) {
    write_corpus(dir.path());  // test_cli_runs' corpus: trains to > 60 % in 15 epochs
    return std::make_shared<const DatasetSplit>(load_dataset(("folder:" + dir.path()).toStdString()));
}

bool train(TrainingController& controller, const RunSettings& settings) {
    controller.start(settings);
    if (!controller.waitForFinished(120000)) return false;
    const RunRecord* run = controller.currentRun();
    return run != nullptr && run->finished.has_value();
}

// The character format of `word` in the Try it panel's words view (the first time it occurs).
std::optional<QTextFragment> fragmentOf(const QTextBrowser* view, const QString& word) {
    for (QTextBlock block = view->document()->begin(); block.isValid(); block = block.next()) {
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            if (it.fragment().text().split(QLatin1Char(' ')).contains(word)) return it.fragment();
        }
    }
    return std::nullopt;
}

// A 46-topic report as Reuters' validation split looks: topic t has 46 - t wires, most of them
// right, the rest predicted as topic 0 or the next topic.
ClassReport reutersShapedReport() {
    ClassReport report;
    report.num_classes = 46;
    report.confusion.assign(46 * 46, 0);
    report.rows.resize(46);
    for (int t = 0; t < 46; ++t) {
        const int support = 46 - t;
        report.confusion[static_cast<std::size_t>(t * 46 + t)] += support - support / 3;
        report.confusion[static_cast<std::size_t>(t * 46 + (t + 1) % 46)] += support / 3 - support / 6;
        report.confusion[static_cast<std::size_t>(t * 46)] += support / 6;
        report.rows[static_cast<std::size_t>(t)].label = t;
        report.rows[static_cast<std::size_t>(t)].support = support;
    }
    return report;
}

}  // namespace

class TestUiInspect : public QObject {
    Q_OBJECT
private slots:
    void tryItAsksForATrainedModelFirst();
    void aDeletedRunLeavesNothingThatStandsForIt();
    void tryItNamesTheTopicAndMarksUnknownWords();
    void tryItExplainsDataWithoutWords();
    void tryItStacksInATallDockAndLinesUpInAWideOne();
    void classReportAddsUpToTheValidationSplit();
    void classReportShowsErrorsInItsStatus();
    void confusionMatrixKeepsTheBusiestTopics();
    void confusionMatrixPaintsInLightAndDarkPalettes();
};

void TestUiInspect::tryItAsksForATrainedModelFirst() {
    TrainingController controller;
    TryItPanel panel(&controller);
    panel.setText(QStringLiteral("wheat harvest"));
    panel.classify();
    QVERIFY2(panel.statusText().startsWith(QStringLiteral("Train a model first")), qPrintable(panel.statusText()));
    QVERIFY(panel.topicNames().isEmpty());
}

// Deleting the last run (Runs > Delete…) left its curves in the charts and its model answering in
// Try it and the per-class report: the run was gone from the table, not from the window.
void TestUiInspect::aDeletedRunLeavesNothingThatStandsForIt() {
    QTemporaryDir corpus;
    TrainingController controller;
    TryItPanel try_it(&controller);
    ClassReportView report(&controller);
    TrainingPanel charts(&controller);
    QVERIFY(train(controller, tinyRun(tinyCorpus(corpus))));
    QVERIFY(report.waitForReport(60000));
    try_it.setText(QStringLiteral("wheat harvest"));
    try_it.classify();
    QVERIFY(!try_it.topicNames().isEmpty());
    QVERIFY(report.report().has_value());
    const int id = controller.currentRun()->id;
    QCOMPARE(charts.runId(), id);

    QString error;
    QVERIFY2(controller.deleteRun(id, &error), qPrintable(error));
    QVERIFY(controller.lastWeights().empty());
    QCOMPARE(charts.runId(), 0);
    QCOMPARE(charts.trainingPointCount(), 0);
    QCOMPARE(charts.statusText(), QStringLiteral("Run %1 was deleted").arg(id));
    QVERIFY2(try_it.statusText().startsWith(QStringLiteral("Train a model first")), qPrintable(try_it.statusText()));
    QVERIFY(try_it.topicNames().isEmpty());
    QVERIFY(report.waitForReport(60000));
    QVERIFY(!report.report().has_value());
    QVERIFY2(report.statusText().startsWith(QStringLiteral("Train a model first")), qPrintable(report.statusText()));
}

// In a side dock (tall) the text, the bars and the words sit one under the other; in a strip under
// the charts (wide) side by side, each readable at its size.
void TestUiInspect::tryItStacksInATallDockAndLinesUpInAWideOne() {
    TrainingController controller;
    TryItPanel panel(&controller);
    auto* text = panel.findChild<QWidget*>(QStringLiteral("tryItText"));
    QVERIFY(text != nullptr);
    const QWidget* words = panel.wordsView();
    panel.resize(520, 640);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTRY_VERIFY(words->geometry().top() > text->geometry().bottom());
    QVERIFY2(text->width() > 400 && words->width() > 400,
             qPrintable(QStringLiteral("%1 %2").arg(text->width()).arg(words->width())));  // the column's width
    panel.resize(1200, 260);
    QTRY_VERIFY(words->geometry().left() > text->geometry().right());
    QVERIFY2(text->height() > 180 && words->height() > 180,
             qPrintable(QStringLiteral("%1 %2").arg(text->height()).arg(words->height())));
}

void TestUiInspect::tryItNamesTheTopicAndMarksUnknownWords() {
    QTemporaryDir corpus;
    TrainingController controller;
    TryItPanel panel(&controller);  // before the run: it takes the model when the run ends
    QVERIFY(train(controller, tinyRun(tinyCorpus(corpus))));

    // Typing: the answer comes after the debounce, without a click.
    panel.setText(QStringLiteral("The wheat HARVEST, zorblat crop!"));
    QVERIFY(panel.topicNames().isEmpty() || panel.statusText().contains(QStringLiteral("Paste")));
    QTRY_VERIFY_WITH_TIMEOUT(!panel.topicNames().isEmpty(), 5000);
    QCOMPARE(panel.topicNames().size(), 2);  // two topics only: two bars
    QCOMPARE(panel.topicNames().front(), QStringLiteral("wheat"));
    QVERIFY2(panel.topicProbabilities().front() > 0.6, qPrintable(QString::number(panel.topicProbabilities().front())));
    QVERIFY(std::abs(panel.topicProbabilities()[0] + panel.topicProbabilities()[1] - 1.0) < 0.005);
    // "the" and "zorblat" are in no wire of the corpus.
    QVERIFY2(panel.statusText().startsWith(QStringLiteral("Words: 5; not in the vocabulary: 2")), qPrintable(panel.statusText()));
    const auto unknown = fragmentOf(panel.wordsView(), QStringLiteral("zorblat"));
    QVERIFY(unknown.has_value());
    QVERIFY(unknown->charFormat().fontStrikeOut());
    QCOMPARE(unknown->charFormat().toolTip(), TryItPanel::unknownWordToolTip());
    const auto known = fragmentOf(panel.wordsView(), QStringLiteral("harvest"));
    QVERIFY(known.has_value());
    QVERIFY(!known->charFormat().fontStrikeOut());
    QVERIFY(known->charFormat().toolTip().isEmpty());

    // The other topic's words: the answer follows the text, not a favourite class.
    panel.setText(QStringLiteral("crude oil prices at the refinery"));
    panel.classify();
    QCOMPARE(panel.topicNames().front(), QStringLiteral("oil"));
    QVERIFY(fragmentOf(panel.wordsView(), QStringLiteral("zorblat")) == std::nullopt);

    panel.setText(QStringLiteral("   "));
    panel.classify();
    QVERIFY2(panel.statusText().startsWith(QStringLiteral("Paste or type a newswire")), qPrintable(panel.statusText()));
    QVERIFY(panel.topicNames().isEmpty());
    panel.setText(QStringLiteral("?!"));
    panel.classify();
    QVERIFY2(panel.statusText().contains(QStringLiteral("no words")), qPrintable(panel.statusText()));
}

void TestUiInspect::tryItExplainsDataWithoutWords() {
    SyntheticReutersOptions options;
    options.train_samples = 64;
    options.validation_samples = 32;
    options.num_classes = 2;
    options.vocabulary_size = 1000;
    auto synthetic = std::make_shared<const DatasetSplit>(make_synthetic_reuters(options));
    TrainingController controller;
    TryItPanel panel(&controller);
    RunSettings settings = tinyRun(synthetic);
    settings.model = std::make_shared<const Model>(settings.model->with_input_length(20));
    settings.config.epochs = 1;
    QVERIFY(train(controller, settings));
    panel.setText(QStringLiteral("wheat harvest"));
    panel.classify();
    QVERIFY2(panel.statusText().startsWith(QStringLiteral("the synthetic corpus has no words")), qPrintable(panel.statusText()));
    QVERIFY(panel.topicNames().isEmpty());
}

void TestUiInspect::classReportAddsUpToTheValidationSplit() {
    QTemporaryDir corpus;
    TrainingController controller;
    ClassReportView view(&controller);
    const auto data = tinyCorpus(corpus);
    QVERIFY(train(controller, tinyRun(data)));
    QVERIFY(view.waitForReport(60000));
    QVERIFY2(view.report().has_value(), qPrintable(view.statusText()));
    const ClassReport& report = *view.report();
    const auto validation = static_cast<std::int64_t>(data->validation.size());
    QVERIFY(validation > 0);

    // The table: one row per topic, sorted by support, supports adding up to the split.
    QTableWidget* table = view.table();
    QCOMPARE(table->rowCount(), 2);
    std::int64_t support = 0;
    for (int row = 0; row < table->rowCount(); ++row) support += table->item(row, ClassReportView::SupportColumn)->text().toLongLong();
    QCOMPARE(support, validation);
    QVERIFY(table->item(0, ClassReportView::SupportColumn)->text().toInt() >= table->item(1, ClassReportView::SupportColumn)->text().toInt());
    QVERIFY(QStringList({"wheat", "oil"}).contains(table->item(0, ClassReportView::ClassColumn)->text()));
    // Sorting by recall puts the lower recall first.
    table->sortByColumn(ClassReportView::RecallColumn, Qt::AscendingOrder);
    QVERIFY(table->item(0, ClassReportView::RecallColumn)->text().toDouble() <= table->item(1, ClassReportView::RecallColumn)->text().toDouble());
    QVERIFY2(view.statusText().contains(QStringLiteral("%1 wires").arg(validation)), qPrintable(view.statusText()));
    QVERIFY2(report.accuracy > 0.6, qPrintable(view.statusText()));

    // The matrix: both topics, each cell the report's count.
    ConfusionMatrixView* matrix = view.matrix();
    QCOMPARE(matrix->shownClasses(), 2);
    std::int64_t cells = 0;
    for (int t = 0; t < 2; ++t) {
        for (int p = 0; p < 2; ++p) {
            const int truth = data->train.class_names[0] == matrix->shownName(t).toStdString() ? 0 : 1;
            const int predicted = data->train.class_names[0] == matrix->shownName(p).toStdString() ? 0 : 1;
            QCOMPARE(matrix->cellCount(t, p), report.at(truth, predicted));
            cells += matrix->cellCount(t, p);
        }
    }
    QCOMPARE(cells, validation);
}

void TestUiInspect::classReportShowsErrorsInItsStatus() {
    QTemporaryDir corpus;
    TrainingController controller;
    ClassReportView view(&controller);
    const RunSettings settings = tinyRun(tinyCorpus(corpus));
    view.evaluate(settings.model, settings.data, {});
    QVERIFY(view.waitForReport(1000));
    QVERIFY2(view.statusText().startsWith(QStringLiteral("Train a model first")), qPrintable(view.statusText()));
    // Weights of another model: the engine's error, in a sentence, and no table.
    view.evaluate(settings.model, settings.data, std::vector<float>(7, 0.0f));
    QVERIFY(view.waitForReport(30000));
    QVERIFY(!view.report().has_value());
    QVERIFY(!view.statusText().isEmpty());
    QVERIFY2(!view.statusText().startsWith(QStringLiteral("Evaluating")), qPrintable(view.statusText()));
    QCOMPARE(view.table()->rowCount(), 0);
    QCOMPARE(view.matrix()->shownClasses(), 0);
}

void TestUiInspect::confusionMatrixKeepsTheBusiestTopics() {
    const ClassReport report = reutersShapedReport();
    std::vector<std::string> names;
    for (int t = 0; t < 46; ++t) names.push_back("topic" + std::to_string(t));
    ConfusionMatrixView matrix;
    matrix.setReport(report, names);
    QCOMPARE(matrix.shownClasses(), ConfusionMatrixView::kMostSupported + 1);
    QCOMPARE(matrix.shownName(0), QStringLiteral("topic0"));  // the most wires first
    QCOMPARE(matrix.shownName(14), QStringLiteral("topic14"));
    QCOMPARE(matrix.shownName(15), QStringLiteral("other (31 topics)"));
    std::int64_t all = 0;
    std::int64_t other_row = 0;
    for (int t = 0; t < matrix.shownClasses(); ++t) {
        for (int p = 0; p < matrix.shownClasses(); ++p) all += matrix.cellCount(t, p);
        other_row += matrix.cellCount(15, t);
    }
    QCOMPARE(all, std::int64_t{46 * 47 / 2});
    QCOMPARE(other_row, std::int64_t{31 * 32 / 2});  // topics 15..45 have 31..1 wires
    QCOMPARE(matrix.cellCount(3, 3), report.at(3, 3));
    QCOMPARE(matrix.cellCount(3, 4), report.at(3, 4));
    QCOMPARE(matrix.cellCount(3, 0), report.at(3, 0));
    // topic 14's wires predicted as topic 15 count under "other"; topic 45's under topic 0.
    QCOMPARE(matrix.cellCount(14, 15), report.at(14, 15));
    QCOMPARE(matrix.cellCount(15, 0), report.at(45, 0) + [&] {
        std::int64_t sum = 0;
        for (int t = 15; t < 45; ++t) sum += report.at(t, 0);
        return sum;
    }());
    QCOMPARE(matrix.cellToolTip(2, 2), QStringLiteral("%1 wires of topic2 predicted as topic2").arg(report.at(2, 2)));
    QCOMPARE(matrix.cellToolTip(1, 15), QStringLiteral("0 wires of topic1 predicted as other (31 topics)"));

    // A few topics: all shown, no "other".
    ClassReport small;
    small.num_classes = 3;
    small.rows.resize(3);
    small.confusion = {5, 1, 0, 2, 9, 0, 0, 0, 1};
    for (int t = 0; t < 3; ++t) small.rows[static_cast<std::size_t>(t)].support = t == 0 ? 6 : t == 1 ? 11 : 1;
    matrix.setReport(small, {});
    QCOMPARE(matrix.shownClasses(), 3);
    QCOMPARE(matrix.shownName(0), QStringLiteral("1"));  // no names: numbers, most wires first
    QCOMPARE(matrix.cellCount(0, 0), std::int64_t{9});
    QCOMPARE(matrix.cellCount(0, 1), std::int64_t{2});
}

void TestUiInspect::confusionMatrixPaintsInLightAndDarkPalettes() {
    ConfusionMatrixView matrix;
    std::vector<std::string> names;
    for (int t = 0; t < 46; ++t) names.push_back("topic" + std::to_string(t));
    matrix.setReport(reutersShapedReport(), names);
    matrix.resize(matrix.sizeHint());
    for (const QPalette& palette : {light_palette(), dark_palette()}) {
        matrix.setPalette(palette);
        const QImage image = matrix.grab().toImage();
        QVERIFY(!image.isNull());
        const qreal ratio = image.devicePixelRatio();
        auto pixel = [&](QPoint at) { return image.pixelColor((at.toPointF() * ratio).toPoint()); };
        // An empty cell has the palette's Base; a cell that holds most of its row is near Highlight.
        const QRect empty = matrix.cellRect(2, 9);
        QCOMPARE(matrix.cellCount(2, 9), std::int64_t{0});
        const QColor empty_colour = pixel(empty.topLeft() + QPoint(3, 3));
        QCOMPARE(empty_colour, palette.color(QPalette::Base));
        const QColor diagonal = pixel(matrix.cellRect(2, 2).topLeft() + QPoint(3, 3));
        QVERIFY2(std::abs(diagonal.hueF() - palette.color(QPalette::Highlight).hueF()) < 0.05, qPrintable(diagonal.name()));
        // The count is written in the cell, in a colour that stands out from its fill.
        bool written = false;
        const QRect cell = matrix.cellRect(2, 2);
        for (int y = cell.top() + 2; y < cell.bottom() - 1 && !written; ++y) {
            for (int x = cell.left() + 2; x < cell.right() - 1 && !written; ++x) written = pixel(QPoint(x, y)) != diagonal;
        }
        QVERIFY2(written, "no count drawn in the diagonal cell");
    }
    // Before any report: a sentence, and no crash.
    matrix.clear();
    QVERIFY(!matrix.grab().toImage().isNull());
}

QTEST_MAIN(TestUiInspect)
#include "test_ui_inspect.moc"
