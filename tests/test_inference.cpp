// Using a kept model: evaluate equals what the trainer reported for the same weights, predict's
// probabilities are the evaluate pass's, the class report counts as scikit-learn does, and a
// text is encoded with the data set's own words, start mark and OOV id.
#include <QtTest/QtTest>

#include <cmath>
#include <numeric>

#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/data/text_encoding.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/train/inference.h"
#include "core/train/trainer.h"
#include "core/util/error.h"

using namespace mirrorlab;

namespace {

constexpr std::int32_t kVocabulary = 1500;
constexpr std::int32_t kInputLength = 40;

Model small_model() {
    return Model::from_json_text(
        "{\"name\": \"small\", \"input_length\": 40, \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 1500, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 12, \"kernel_size\": 5, \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
        "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}",
        "small model");
}

DatasetSplit small_split() {
    SyntheticReutersOptions options;
    options.train_samples = 256;
    options.validation_samples = 100;  // not a multiple of the batch: the last batch is partial
    options.vocabulary_size = kVocabulary;
    return make_synthetic_reuters(options);
}

}  // namespace

class TestInference : public QObject {
    Q_OBJECT

private slots:
    void evaluateMatchesTheTrainersValidation();
    void classReportCountsLikeScikitLearn();
    void textIsEncodedWithTheDataSetsWords();
    void textWithoutWordsIsAClearError();
};

void TestInference::evaluateMatchesTheTrainersValidation() {
    const Model model = small_model();
    const TrainData data = make_train_data(small_split(), kInputLength);
    TrainConfig config;
    config.epochs = 2;
    config.seed = 3;
    Trainer trainer(model, DeviceConfig::parse("cpu:2"), config, data);
    QVERIFY(trainer.run().ok);
    const Metrics reported = trainer.history().epochs.back().validation;
    DeviceRegistry registry;
    const Predictions predictions = run_inference(model, trainer.weights(), *data.validation_ids, data.validation_labels.get(),
                                                  registry, DeviceConfig::parse("cpu"), 32);
    QCOMPARE(predictions.samples, 100);
    QCOMPARE(predictions.steps, 4);
    QVERIFY(std::abs(predictions.metrics.loss - reported.loss) < 1e-6);
    QCOMPARE(predictions.metrics.accuracy, reported.accuracy);
    QCOMPARE(predictions.metrics.top5, reported.top5);
    // Each row is a distribution, and the accuracy recomputed from the argmax agrees.
    for (std::int64_t i = 0; i < predictions.samples; ++i) {
        const float* row = predictions.probabilities.data() + i * 46;
        QVERIFY(std::abs(std::accumulate(row, row + 46, 0.0) - 1.0) < 1e-5);
    }
    const ClassReport report = class_report(predictions, *data.validation_labels);
    QCOMPARE(report.accuracy, reported.accuracy);
    const auto top = top_classes(predictions, 0, 5);
    QCOMPARE(top.size(), std::size_t{5});
    QVERIFY(top[0].second >= top[1].second && top[3].second >= top[4].second);
    // Weights of another model are refused before anything runs.
    std::vector<float> wrong = trainer.weights();
    wrong.pop_back();
    QVERIFY_THROWS_EXCEPTION(ModelError, run_inference(model, wrong, *data.validation_ids, nullptr, registry, DeviceConfig::parse("cpu")));
}

void TestInference::classReportCountsLikeScikitLearn() {
    // 3 classes, 6 samples: truth 0 0 1 1 2 2, predicted 0 1 1 1 0 2.
    Predictions predictions;
    predictions.num_classes = 3;
    predictions.samples = 6;
    const int predicted[] = {0, 1, 1, 1, 0, 2};
    for (int p : predicted) {
        for (int c = 0; c < 3; ++c) predictions.probabilities.push_back(c == p ? 0.8f : 0.1f);
    }
    const ClassReport report = class_report(predictions, {0, 0, 1, 1, 2, 2});
    QCOMPARE(report.at(0, 0), 1);
    QCOMPARE(report.at(0, 1), 1);
    QCOMPARE(report.at(2, 0), 1);
    QCOMPARE(report.rows[0].precision, 0.5);  // sklearn: precision 0.50, recall 0.50
    QCOMPARE(report.rows[1].precision, 2.0 / 3.0);
    QCOMPARE(report.rows[1].recall, 1.0);
    QCOMPARE(report.rows[2].recall, 0.5);
    QCOMPARE(report.rows[2].support, 2);
    QCOMPARE(report.accuracy, 4.0 / 6.0);
    QVERIFY(std::abs(report.macro_f1 - (0.5 + 0.8 + 2.0 / 3.0) / 3.0) < 1e-12);  // f1 of class 1: 2*(2/3)/(5/3)
    const std::string text = format_class_report(report, {"earn", "acq", "crude"});
    QVERIFY(text.find("acq") != std::string::npos && text.find("accuracy 0.6667") != std::string::npos);
}

void TestInference::textIsEncodedWithTheDataSetsWords() {
    TextDataset data;
    data.name = "tiny";
    data.words = {"", "<start>", "<oov>", "<unused>", "the", "wheat", "harvest", "rose"};
    data.oov_id = 2;
    const EncodedText encoded = encode_text(data, "The WHEAT harvest, zorblat rose!", 7);
    // Keras' start mark, lower case, punctuation gone; "zorblat" is unknown and "rose" (id 7) is
    // beyond a 7-word Embedding: both are the OOV id.
    QCOMPARE(encoded.ids, (std::vector<std::int32_t>{1, 4, 5, 6, 2, 2}));
    QCOMPARE(encoded.words, (std::vector<std::string>{"the", "wheat", "harvest", "zorblat", "rose"}));
    QCOMPARE(encoded.unknown_count, 2);
    QVERIFY(!encoded.known[3] && !encoded.known[4] && encoded.known[0]);
}

void TestInference::textWithoutWordsIsAClearError() {
    TextDataset data;
    data.name = "Keras reuters.npz";
    try {
        encode_text(data, "wheat", 100);
        QFAIL("encoded without words");
    } catch (const DataError& e) {
        QVERIFY(std::string(e.what()).find("has ids but no words") != std::string::npos);
        QVERIFY(std::string(e.what()).find("reuters_word_index.json") != std::string::npos);
    }
}

QTEST_GUILESS_MAIN(TestInference)
#include "test_inference.moc"
