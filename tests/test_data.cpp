// The data module: synthetic Reuters-shaped corpus, Keras pad_sequences, the input pipeline.
#include <QtTest/QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <numeric>
#include <thread>

#include "core/data/dataset.h"
#include "core/data/pipeline.h"
#include "core/data/sequence.h"
#include "core/data/synthetic.h"
#include "core/util/error.h"
#include "support/error_text.h"
#include "support/timing.h"

using namespace mirrorlab;

namespace {

// Validation accuracy of a nearest-centroid classifier on tf-idf bag-of-words vectors (cosine),
// a baseline people know: if it is near 1 the synthetic task is trivial, near chance it is noise.
double nearest_centroid_accuracy(const TextDataset& train, const TextDataset& validation) {
    const auto vocabulary = static_cast<size_t>(train.vocabulary_size);
    const auto classes = static_cast<size_t>(train.num_classes);
    auto counts = [](const std::vector<int32_t>& seq) {
        std::vector<int32_t> words(seq.begin() + 1, seq.end());  // skip the start id
        std::sort(words.begin(), words.end());
        std::vector<std::pair<int32_t, double>> bag;
        for (int32_t w : words) {
            if (!bag.empty() && bag.back().first == w)
                bag.back().second += 1.0;
            else
                bag.emplace_back(w, 1.0);
        }
        return bag;
    };
    std::vector<double> document_frequency(vocabulary, 0.0);
    for (const auto& seq : train.sequences) {
        for (const auto& [w, n] : counts(seq)) document_frequency[static_cast<size_t>(w)] += 1.0;
    }
    auto tfidf = [&](const std::vector<int32_t>& seq) {
        auto bag = counts(seq);
        double norm = 0.0;
        for (auto& [w, v] : bag) {
            v *= std::log((1.0 + static_cast<double>(train.size())) /
                          (1.0 + document_frequency[static_cast<size_t>(w)])) +
                 1.0;
            norm += v * v;
        }
        for (auto& entry : bag) entry.second /= std::sqrt(norm);
        return bag;
    };
    std::vector<double> centroids(classes * vocabulary, 0.0);
    for (size_t i = 0; i < train.size(); ++i) {
        const size_t row = static_cast<size_t>(train.labels[i]) * vocabulary;
        for (const auto& [w, v] : tfidf(train.sequences[i]))
            centroids[row + static_cast<size_t>(w)] += v;
    }
    for (size_t c = 0; c < classes; ++c) {
        double norm = 0.0;
        for (size_t w = 0; w < vocabulary; ++w)
            norm += centroids[c * vocabulary + w] * centroids[c * vocabulary + w];
        if (norm > 0.0) {
            for (size_t w = 0; w < vocabulary; ++w)
                centroids[c * vocabulary + w] /= std::sqrt(norm);
        }
    }
    int64_t correct = 0;
    for (size_t i = 0; i < validation.size(); ++i) {
        const auto bag = tfidf(validation.sequences[i]);
        size_t best = 0;
        double best_score = -1.0;
        for (size_t c = 0; c < classes; ++c) {
            double score = 0.0;
            for (const auto& [w, v] : bag)
                score += v * centroids[c * vocabulary + static_cast<size_t>(w)];
            if (score > best_score) {
                best_score = score;
                best = c;
            }
        }
        correct += static_cast<int32_t>(best) == validation.labels[i];
    }
    return static_cast<double>(correct) / static_cast<double>(validation.size());
}

// count x 3 matrix whose row i is {i, 1000 + i, 2000 + i} and label i, so a batch shows which
// samples it holds and that ids and labels stayed together.
struct Numbered {
    std::shared_ptr<PaddedSequences> ids = std::make_shared<PaddedSequences>();
    std::shared_ptr<std::vector<int32_t>> labels = std::make_shared<std::vector<int32_t>>();
};

Numbered numbered(int32_t count) {
    Numbered data;
    data.ids->count = count;
    data.ids->length = 3;
    for (int32_t i = 0; i < count; ++i) {
        data.ids->ids.insert(data.ids->ids.end(), {i, 1000 + i, 2000 + i});
        data.labels->push_back(i);
    }
    return data;
}

// Reads an epoch to its end; checks each batch's bookkeeping and returns the labels in order.
std::vector<int32_t> read_epoch(Pipeline& pipeline, int32_t epoch) {
    pipeline.start_epoch(epoch);
    std::vector<int32_t> labels;
    int64_t step = 0;
    while (auto batch = pipeline.next()) {
        if (batch->step != step++) throw std::runtime_error("batch steps out of order");
        if (batch->ids.size() != static_cast<size_t>(batch->size) * 3 ||
            batch->labels.size() != static_cast<size_t>(batch->size) ||
            batch->sequence_length != 3) {
            throw std::runtime_error("batch sizes inconsistent");
        }
        for (int32_t r = 0; r < batch->size; ++r) {
            const int32_t label = batch->labels[static_cast<size_t>(r)];
            if (batch->ids[static_cast<size_t>(r) * 3] != label ||
                batch->ids[static_cast<size_t>(r) * 3 + 2] != 2000 + label) {
                throw std::runtime_error("ids and labels separated");
            }
            labels.push_back(label);
        }
    }
    return labels;
}

}  // namespace

class TestData : public QObject {
    Q_OBJECT

  private:
    DatasetSplit reuters_;  // the default synthetic corpus, generated once

  private slots:
    void initTestCase() { reuters_ = make_synthetic_reuters(); }

    // ---- synthetic corpus -----------------------------------------------------------------

    void syntheticHasReutersShape() {
        const TextDataset& train = reuters_.train;
        const TextDataset& validation = reuters_.validation;
        QCOMPARE(train.size(), size_t{8982});
        QCOMPARE(validation.size(), size_t{2246});
        QVERIFY(train.synthetic && validation.synthetic);
        QCOMPARE(train.num_classes, 46);
        QCOMPARE(train.vocabulary_size, 30982);
        QCOMPARE(train.class_names.size(), size_t{46});
        QCOMPARE(QString::fromStdString(train.class_names[3]), QStringLiteral("earn"));
        train.validate();
        validation.validate();

        std::vector<int64_t> counts = train.class_counts();
        const auto v = validation.class_counts();
        for (size_t c = 0; c < counts.size(); ++c) counts[c] += v[c];
        QCOMPARE(std::accumulate(counts.begin(), counts.end(), int64_t{0}), int64_t{11228});
        QCOMPARE(std::max_element(counts.begin(), counts.end()) - counts.begin(), 3);
        QVERIFY(counts[3] > 3800 && counts[3] < 4100);
        auto sorted = counts;
        std::sort(sorted.rbegin(), sorted.rend());
        QCOMPARE(sorted[1], counts[4]);  // "acq" second
        QVERIFY(counts[4] > 2300 && counts[4] < 2550);
        QVERIFY(sorted.back() >= 10 && sorted.back() <= 30);  // a long tail, but no empty class
        // The training split is imbalanced like Reuters too (earn ~35 %).
        const double earn_share = static_cast<double>(train.class_counts()[3]) / 8982.0;
        QVERIFY2(earn_share > 0.32 && earn_share < 0.39, qPrintable(QString::number(earn_share)));
    }

    void syntheticIdsFollowKeras() {
        int32_t train_max = 0;
        for (const TextDataset* part : {&reuters_.train, &reuters_.validation}) {
            for (const auto& seq : part->sequences) {
                QVERIFY(!seq.empty());
                QCOMPARE(seq.front(), 1);  // start char
                for (size_t t = 1; t < seq.size(); ++t) {
                    QVERIFY(seq[t] >= 4 && seq[t] < part->vocabulary_size);  // 0-3 are reserved
                }
                if (part == &reuters_.train)
                    train_max = std::max(train_max, *std::max_element(seq.begin(), seq.end()));
            }
        }
        QCOMPARE(train_max + 1, reuters_.train.vocabulary_size);
    }

    void syntheticLengthsLikeReuters() {
        std::vector<size_t> lengths;
        double sum = 0.0;
        for (const auto& seq : reuters_.train.sequences) {
            lengths.push_back(seq.size());
            sum += static_cast<double>(seq.size());
        }
        std::sort(lengths.begin(), lengths.end());
        const size_t median = lengths[lengths.size() / 2];
        const double mean = sum / static_cast<double>(lengths.size());
        const auto longer_than_300 =
            lengths.end() - std::upper_bound(lengths.begin(), lengths.end(), size_t{300});
        const double tail =
            static_cast<double>(longer_than_300) / static_cast<double>(lengths.size());
        const QString summary =
            QStringLiteral("median %1 mean %2 tail %3").arg(median).arg(mean).arg(tail);
        QVERIFY2(median >= 85 && median <= 105, qPrintable(summary));
        QVERIFY2(mean >= 125 && mean <= 165, qPrintable(summary));
        QVERIFY2(tail > 0.05 && tail < 0.2, qPrintable(summary));
        QVERIFY(lengths.front() >= 10);
    }

    void syntheticIsDeterministicPerSeed() {
        const DatasetSplit again = make_synthetic_reuters();
        QVERIFY(again.train.sequences == reuters_.train.sequences);
        QVERIFY(again.train.labels == reuters_.train.labels);
        QVERIFY(again.validation.sequences == reuters_.validation.sequences);

        SyntheticReutersOptions other;
        other.seed = 7;
        const DatasetSplit different = make_synthetic_reuters(other);
        QVERIFY(different.train.labels != reuters_.train.labels);
        QVERIFY(different.train.sequences != reuters_.train.sequences);
        QCOMPARE(different.train.size(), size_t{8982});
    }

    void syntheticIsLearnableButNotTrivial() {
        const double accuracy = nearest_centroid_accuracy(reuters_.train, reuters_.validation);
        qInfo("nearest-centroid tf-idf validation accuracy: %.3f", accuracy);
        const double majority = static_cast<double>(reuters_.validation.class_counts()[3]) /
                                static_cast<double>(reuters_.validation.size());
        QVERIFY2(accuracy > 0.5 && accuracy < 0.95, qPrintable(QString::number(accuracy)));
        QVERIFY(accuracy > majority + 0.2);
    }

    void syntheticSmallOptions() {
        SyntheticReutersOptions options;
        options.train_samples = 300;
        options.validation_samples = 40;
        options.num_classes = 5;
        options.vocabulary_size = 2000;
        options.seed = 1;
        const DatasetSplit small = make_synthetic_reuters(options);
        small.train.validate();
        small.validation.validate();
        QCOMPARE(small.train.size(), size_t{300});
        QCOMPARE(small.validation.size(), size_t{40});
        int32_t train_max = 0;
        for (const auto& seq : small.train.sequences)
            train_max = std::max(train_max, *std::max_element(seq.begin(), seq.end()));
        QCOMPARE(train_max, 1999);  // forced in even where the Zipf tail would miss it

        options.validation_samples = 0;
        QCOMPARE(make_synthetic_reuters(options).validation.size(), size_t{0});
    }

    void syntheticRejectsBadOptions() {
        SyntheticReutersOptions options;
        options.num_classes = 1;
        QVERIFY(error_of<DataError>([&] { make_synthetic_reuters(options); }).contains("num_classes"));
        options = {};
        options.vocabulary_size = 10;
        QVERIFY(error_of<DataError>([&] { make_synthetic_reuters(options); }).contains("vocabulary_size"));
        options = {};
        options.train_samples = 0;
        QVERIFY(error_of<DataError>([&] { make_synthetic_reuters(options); }).contains("train_samples"));
    }

    // The default synthetic set is what the app shows first; its time is printed, and bounded
    // only with MIRRORLAB_TIMING_ASSERTS=1 in Release builds (tests/support/timing.h).
    void syntheticTiming() {
        const auto start = std::chrono::steady_clock::now();
        const DatasetSplit split = make_synthetic_reuters();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        qInfo("make_synthetic_reuters(): %.3f s for %zu + %zu samples", seconds, split.train.size(),
              split.validation.size());
        QVERIFY(split.train.size() > 0);
#ifdef NDEBUG
        if (testsupport::timing_asserts())
            QVERIFY2(seconds < 0.5, qPrintable(QString::number(seconds)));
#endif
    }

    // ---- TextDataset::validate --------------------------------------------------------------

    void validateNamesTheProblem() {
        TextDataset data;
        data.name = "tiny";
        data.num_classes = 3;
        data.vocabulary_size = 10;
        QVERIFY(error_of<DataError>([&] { data.validate(); }).contains("empty"));

        data.sequences = {{1, 4}, {1, 5}, {1, 6}};
        data.labels = {0, 1};
        QVERIFY(error_of<DataError>([&] { data.validate(); }).contains("3 sequences but 2 labels"));

        data.labels = {0, 1, 7};
        const QString label_error = error_of<DataError>([&] { data.validate(); });
        QVERIFY2(label_error.contains("sample 2") && label_error.contains("label 7") &&
                     label_error.contains("tiny"),
                 qPrintable(label_error));
        data.labels = {0, -1, 2};
        QVERIFY(error_of<DataError>([&] { data.validate(); }).contains("sample 1 has label -1"));

        data.labels = {0, 1, 2};
        data.sequences[1][1] = -3;
        const QString id_error = error_of<DataError>([&] { data.validate(); });
        QVERIFY2(id_error.contains("sample 1") && id_error.contains("negative"),
                 qPrintable(id_error));
        data.sequences[1][1] = 10;
        QVERIFY(error_of<DataError>([&] { data.validate(); }).contains("sample 1 has token id 10"));

        data.sequences[1][1] = 9;
        data.validate();
        QCOMPARE(data.class_counts(), (std::vector<int64_t>{1, 1, 1}));
    }

    // ---- pad_sequences -----------------------------------------------------------------------

    void padSequencesKerasSemantics() {
        const std::vector<std::vector<int32_t>> input = {{1, 2, 3}, {4, 5, 6, 7, 8}, {}, {9}};
        using Rows = std::vector<int32_t>;

        const PaddedSequences pre = pad_sequences(input, 4);
        QCOMPARE(pre.count, int64_t{4});
        QCOMPARE(pre.length, 4);
        QCOMPARE(pre.truncated_count, int64_t{1});
        QCOMPARE(pre.ids, (Rows{0, 1, 2, 3, /**/ 5, 6, 7, 8, /**/ 0, 0, 0, 0, /**/ 0, 0, 0, 9}));

        const PaddedSequences post = pad_sequences(input, 4, PadSide::Post, PadSide::Post);
        QCOMPARE(post.ids, (Rows{1, 2, 3, 0, /**/ 4, 5, 6, 7, /**/ 0, 0, 0, 0, /**/ 9, 0, 0, 0}));

        const PaddedSequences mixed = pad_sequences(input, 4, PadSide::Pre, PadSide::Post, -1);
        QCOMPARE(mixed.ids,
                 (Rows{-1, 1, 2, 3, /**/ 4, 5, 6, 7, /**/ -1, -1, -1, -1, /**/ -1, -1, -1, 9}));

        const PaddedSequences wide = pad_sequences(input, 6);
        QCOMPARE(wide.truncated_count, int64_t{0});
        QCOMPARE(wide.ids.size(), size_t{24});

        QCOMPARE(pad_sequences({}, 5).count, int64_t{0});
        QVERIFY(error_of<DataError>([&] { pad_sequences(input, 0); }).contains("maxlen"));
        QVERIFY(error_of<DataError>([&] { pad_sequences(input, -3); }).contains("maxlen"));
    }

    void padSequencesOnTheSyntheticCorpus() {
        // The tutorial's maxlen 300: about a tenth of the wires lose their beginning.
        const PaddedSequences padded = pad_sequences(reuters_.train.sequences, 300);
        QCOMPARE(padded.ids.size(), size_t{8982} * 300);
        QVERIFY(padded.truncated_count > 300 && padded.truncated_count < 1800);
    }

    // ---- Pipeline ----------------------------------------------------------------------------

    void pipelineDeliversEverySampleOnce_data() {
        QTest::addColumn<int32_t>("prefetch");
        QTest::addColumn<bool>("shuffle");
        QTest::newRow("caller thread") << 0 << true;
        QTest::newRow("prefetch 1") << 1 << true;
        QTest::newRow("prefetch 2") << 2 << true;
        QTest::newRow("prefetch 16, no shuffle") << 16 << false;
    }
    void pipelineDeliversEverySampleOnce() {
        QFETCH(int32_t, prefetch);
        QFETCH(bool, shuffle);
        const Numbered data = numbered(103);
        PipelineOptions options;
        options.batch_size = 10;
        options.prefetch_batches = prefetch;
        options.shuffle = shuffle;
        Pipeline pipeline(data.ids, data.labels, options);
        QCOMPARE(pipeline.steps_per_epoch(), int64_t{11});
        QCOMPARE(pipeline.sample_count(), int64_t{103});

        for (int32_t epoch = 0; epoch < 3; ++epoch) {
            pipeline.start_epoch(epoch);
            std::vector<int32_t> seen;
            std::vector<int32_t> sizes;
            while (auto batch = pipeline.next()) {
                sizes.push_back(batch->size);
                seen.insert(seen.end(), batch->labels.begin(), batch->labels.end());
            }
            QCOMPARE(sizes.size(), size_t{11});
            QCOMPARE(sizes.back(), 3);              // the last partial batch is kept
            QVERIFY(!pipeline.next().has_value());  // stays at the end
            std::vector<int32_t> expected(103);
            std::iota(expected.begin(), expected.end(), 0);
            if (!shuffle) QCOMPARE(seen, expected);
            std::sort(seen.begin(), seen.end());
            QCOMPARE(seen, expected);
        }
        QCOMPARE(read_epoch(pipeline, 5), read_epoch(pipeline, 5));  // ids travel with labels
    }

    void pipelineOrderDependsOnSeedAndEpoch() {
        const Numbered data = numbered(200);
        PipelineOptions options;
        options.seed = 42;
        Pipeline a(data.ids, data.labels, options);
        options.prefetch_batches = 0;  // production mode does not change the order
        Pipeline b(data.ids, data.labels, options);
        options.seed = 43;
        Pipeline c(data.ids, data.labels, options);

        const auto a0 = read_epoch(a, 0);
        const auto a1 = read_epoch(a, 1);
        QVERIFY(a0 != a1);  // reshuffled each epoch
        QCOMPARE(read_epoch(b, 1), a1);
        QCOMPARE(read_epoch(b, 0), a0);
        QCOMPARE(read_epoch(a, 0), a0);  // repeatable, whatever ran before
        QVERIFY(read_epoch(c, 0) != a0);
        QCOMPARE(a.epoch_order(1).size(), size_t{200});
    }

    void pipelineFullBufferShufflesUniformly() {
        // Where does sample 0 land over many epochs? Uniform over 10 places: mean 4.5.
        const Numbered data = numbered(10);
        Pipeline pipeline(data.ids, data.labels, PipelineOptions{});
        double position_sum = 0.0;
        std::vector<int> first_counts(10, 0);
        const int epochs = 2000;
        for (int32_t epoch = 0; epoch < epochs; ++epoch) {
            const auto order = pipeline.epoch_order(epoch);
            position_sum +=
                static_cast<double>(std::find(order.begin(), order.end(), 0) - order.begin());
            ++first_counts[static_cast<size_t>(order[0])];
        }
        const double mean = position_sum / epochs;
        QVERIFY2(mean > 4.2 && mean < 4.8, qPrintable(QString::number(mean)));
        for (int count : first_counts) QVERIFY(count > 140 && count < 260);  // expected 200
    }

    void pipelineSmallBufferKeepsLocality() {
        const Numbered data = numbered(1000);
        PipelineOptions options;
        options.shuffle_buffer_size = 5;
        options.batch_size = 7;
        Pipeline pipeline(data.ids, data.labels, options);
        const auto order = read_epoch(pipeline, 3);
        std::vector<int32_t> identity(1000);
        std::iota(identity.begin(), identity.end(), 0);
        QVERIFY(order != identity);
        double displacement = 0.0;
        for (size_t p = 0; p < order.size(); ++p) {
            // Sample i enters the buffer after i - 4 outputs, so it cannot come out earlier.
            QVERIFY(static_cast<size_t>(order[p]) < p + 5);
            displacement += std::abs(static_cast<double>(order[p]) - static_cast<double>(p));
        }
        QVERIFY(displacement / 1000.0 < 10.0);  // a full shuffle would give ~333

        options.shuffle_buffer_size = 1;  // one slot: nothing to choose from
        Pipeline unshuffled(data.ids, data.labels, options);
        QCOMPARE(read_epoch(unshuffled, 0), identity);
    }

    void pipelineRejectsBadInput() {
        const Numbered data = numbered(10);
        auto build = [&](PipelineOptions options) { Pipeline p(data.ids, data.labels, options); };
        PipelineOptions options;
        options.batch_size = 0;
        QVERIFY(error_of<DataError>([&] { build(options); }).contains("batch_size"));
        options = {};
        options.shuffle_buffer_size = -1;
        QVERIFY(error_of<DataError>([&] { build(options); }).contains("shuffle_buffer_size"));
        options = {};
        options.prefetch_batches = -1;
        QVERIFY(error_of<DataError>([&] { build(options); }).contains("prefetch_batches"));

        auto short_labels = std::make_shared<std::vector<int32_t>>(9, 0);
        QVERIFY(error_of<DataError>([&] {
                    Pipeline p(data.ids, short_labels, {});
                }).contains("10 sequences but 9 labels"));
        auto broken = std::make_shared<PaddedSequences>(*data.ids);
        broken->ids.pop_back();
        QVERIFY(error_of<DataError>([&] { Pipeline p(broken, data.labels, {}); }).contains("count x length"));
        QVERIFY(!error_of<DataError>([&] { Pipeline p(nullptr, data.labels, {}); }).isEmpty());

        Pipeline not_started(data.ids, data.labels, {});
        QVERIFY(error_of<DataError>([&] { not_started.next(); }).contains("start_epoch"));
    }

    void pipelineCancelWakesBlockedNext() {
        // Rows wide enough that the producer, not the consumer, is the slow side: the consumer
        // spends its time blocked in next(), which is where cancel() must reach it.
        auto ids = std::make_shared<PaddedSequences>();
        ids->count = 256;
        ids->length = 40000;
        ids->ids.assign(static_cast<size_t>(ids->count) * static_cast<size_t>(ids->length), 4);
        auto labels = std::make_shared<std::vector<int32_t>>(256, 0);
        PipelineOptions options;
        options.batch_size = 1;
        options.prefetch_batches = 1;
        Pipeline pipeline(ids, labels, options);

        int64_t total_received = 0;
        for (int trial = 0; trial < 5; ++trial) {
            pipeline.start_epoch(trial);
            std::atomic<int64_t> received{0};
            auto consumer = std::async(std::launch::async, [&] {
                while (pipeline.next()) ++received;
            });
            while (received.load() == 0) std::this_thread::yield();
            pipeline.cancel();  // from this thread, while the consumer reads
            QVERIFY2(consumer.wait_for(std::chrono::seconds(10)) == std::future_status::ready,
                     "next() stayed blocked after cancel()");
            consumer.get();
            QVERIFY(!pipeline.next().has_value());
            QVERIFY(received.load() <= 256);
            total_received += received.load();
        }
        // The epochs were cut short (one trial could lose the race if this thread is descheduled
        // for a whole epoch, all five will not).
        QVERIFY2(total_received < 5 * 256, qPrintable(QString::number(total_received)));
        // A new epoch after a cancel runs in full.
        pipeline.start_epoch(9);
        int64_t steps = 0;
        while (pipeline.next()) ++steps;
        QCOMPARE(steps, int64_t{256});
    }

    void pipelineStopsCleanlyMidEpoch() {
        const Numbered data = numbered(1000);
        PipelineOptions options;
        options.batch_size = 4;
        options.prefetch_batches = 3;
        // Destroying a pipeline whose producer is blocked on a full queue must not hang. The work
        // runs on another thread so that a hang is reported as one (after a minute, far beyond the
        // milliseconds it takes) instead of running into CTest's timeout; how long it took is
        // printed, not judged.
        QElapsedTimer timer;
        timer.start();
        std::atomic<int> destroyed{0};
        std::atomic<bool> next_ok{true};
        std::atomic<size_t> restarted_epoch{0};
        auto work = std::async(std::launch::async, [&] {
            for (int trial = 0; trial < 50; ++trial) {
                // Destroyed with the producer blocked on a full queue, before and after reading.
                Pipeline pipeline(data.ids, data.labels, options);
                pipeline.start_epoch(trial);
                if (trial % 2 == 0 && !pipeline.next().has_value()) next_ok = false;
                ++destroyed;  // (counted just before the destructor runs)
            }
            {
                Pipeline restarted(data.ids, data.labels, options);  // restart mid-epoch
                restarted.start_epoch(0);
                if (!restarted.next().has_value()) next_ok = false;
                restarted_epoch = read_epoch(restarted, 1).size();
            }
            { Pipeline never_started(data.ids, data.labels, options); }
        });
        if (work.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
            // The thread cannot be joined; end the process with the finding instead of hanging.
            qFatal(
                "a Pipeline destructor hung (%d of 50 destructions started): the producer "
                "blocked on a full queue was never woken",
                destroyed.load());
        }
        work.get();
        qInfo("51 pipelines destroyed mid-epoch in %lld ms",
              static_cast<long long>(timer.elapsed()));
        QVERIFY(next_ok.load());
        QCOMPARE(restarted_epoch.load(), size_t{1000});
    }
};

QTEST_APPLESS_MAIN(TestData)
#include "test_data.moc"
