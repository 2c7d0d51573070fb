// The numbers the step view shows come from the engine: gradient norms before and after the
// all-reduce (after it every replica holds the global gradient: the single-device one), variable
// checksums (identical replicas), where each phase sits within the step, the all-reduce's name and
// bytes, and none of it computed unless asked for.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/train/events.h"
#include "core/train/trainer.h"

using namespace mirrorlab;

namespace {

constexpr std::int32_t kVocabulary = 2000;
constexpr std::int32_t kInputLength = 60;

Model small_model() {
    return Model::from_json_text(
        "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 2000, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 16, \"kernel_size\": 5, \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
        "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}",
        "small model");
}

TrainData small_data() {
    SyntheticReutersOptions options;
    options.train_samples = 256;
    options.validation_samples = 0;
    options.vocabulary_size = kVocabulary;
    return make_train_data(make_synthetic_reuters(options), kInputLength);
}

std::vector<StepEndEvent> train(const char* devices, bool detailed, AllReduceAlgorithm all_reduce = AllReduceAlgorithm::Auto,
                                std::int64_t steps = 4) {
    TrainConfig config;
    config.epochs = 1;
    config.batch_size = 32;
    config.seed = 11;
    config.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
    config.optimizer.learning_rate = 0.01;
    config.max_steps_per_epoch = steps;
    config.prefetch_batches = 1;
    config.all_reduce = all_reduce;
    config.detailed_step_stats = detailed;
    std::vector<StepEndEvent> events;
    Trainer trainer(small_model(), DeviceConfig::parse(devices), config, small_data());
    trainer.set_event_sink([&](const Event& event) {
        if (const auto* step = std::get_if<StepEndEvent>(&event)) events.push_back(*step);
    });
    const FitResult result = trainer.run();
    if (result.failed) qWarning("%s", result.failed->reason.c_str());
    return events;
}

}  // namespace

class TestStepStats : public QObject {
    Q_OBJECT
private slots:
    void normsAfterTheAllReduceAreTheSingleDeviceNorm_data() {
        QTest::addColumn<QString>("devices");
        QTest::addColumn<int>("algorithm");
        QTest::newRow("2 replicas, reduce") << "cpu:2" << static_cast<int>(AllReduceAlgorithm::ReduceToOneDevice);
        QTest::newRow("2 replicas, ring") << "cpu:2" << static_cast<int>(AllReduceAlgorithm::Ring);
        QTest::newRow("3 replicas, ring") << "cpu:3" << static_cast<int>(AllReduceAlgorithm::Ring);
        QTest::newRow("3 replicas, reduce") << "cpu:3x256MB" << static_cast<int>(AllReduceAlgorithm::ReduceToOneDevice);
    }
    void normsAfterTheAllReduceAreTheSingleDeviceNorm() {
        QFETCH(QString, devices);
        QFETCH(int, algorithm);
        const auto single = train("cpu", true, AllReduceAlgorithm::Auto, 1);
        const auto mirrored = train(devices.toStdString().c_str(), true, static_cast<AllReduceAlgorithm>(algorithm), 1);
        QCOMPARE(single.size(), std::size_t{1});
        QCOMPARE(mirrored.size(), std::size_t{1});
        const double global = single[0].replicas[0].grad_norm_after;
        QVERIFY(std::isfinite(global) && global > 0);
        QCOMPARE(single[0].replicas[0].grad_norm_before, global);  // one replica: nothing to reduce
        double local_squares = 0.0;
        for (const PhaseTimings& replica : mirrored[0].replicas) {
            // Every replica holds the same all-reduced buffer, bit for bit.
            QCOMPARE(replica.grad_norm_after, mirrored[0].replicas[0].grad_norm_after);
            QVERIFY(std::isfinite(replica.grad_norm_before) && replica.grad_norm_before > 0);
            QVERIFY(replica.grad_norm_before < replica.grad_norm_after);  // a share of the batch
            local_squares += replica.grad_norm_before * replica.grad_norm_before;
        }
        // The same gradient as one device on the whole batch (up to float summation order).
        QVERIFY2(std::abs(mirrored[0].replicas[0].grad_norm_after - global) <= 1e-4 * global,
                 qPrintable(QStringLiteral("mirrored %1, single %2").arg(mirrored[0].replicas[0].grad_norm_after).arg(global)));
        QVERIFY(local_squares > 0);
    }

    void checksumsAreIdenticalAcrossReplicas_data() {
        QTest::addColumn<QString>("devices");
        QTest::addColumn<int>("algorithm");
        QTest::newRow("cpu:2 reduce") << "cpu:2" << static_cast<int>(AllReduceAlgorithm::ReduceToOneDevice);
        QTest::newRow("cpu:3 ring") << "cpu:3" << static_cast<int>(AllReduceAlgorithm::Ring);
    }
    void checksumsAreIdenticalAcrossReplicas() {
        QFETCH(QString, devices);
        QFETCH(int, algorithm);
        const auto steps = train(devices.toStdString().c_str(), true, static_cast<AllReduceAlgorithm>(algorithm));
        QCOMPARE(steps.size(), std::size_t{4});
        std::uint64_t previous = 0;
        for (const StepEndEvent& step : steps) {
            const std::uint64_t first = step.replicas[0].weights_checksum;
            QVERIFY(first != 0);
            for (const PhaseTimings& replica : step.replicas) QCOMPARE(replica.weights_checksum, first);
            QVERIFY(first != previous);  // the variables changed
            previous = first;
        }
    }

    void phasesArePlacedWithinTheStep() {
        const auto steps = train("cpu:3", true, AllReduceAlgorithm::Ring);
        QCOMPARE(steps.size(), std::size_t{4});
        for (std::size_t s = 0; s < steps.size(); ++s) {
            const StepEndEvent& step = steps[s];
            QCOMPARE(step.replicas.size(), std::size_t{3});
            QCOMPARE(step.all_reduce, std::string("ring"));
            QCOMPARE(step.gradient_bytes, small_model().total_params() * 4);
            // What the all-reduce sums: the gradients and the loss marker (Adam's Embedding update
            // equals its dense one, so no row statistics travel; Nadam's would add a count per row).
            QCOMPARE(step.allreduce_buffer_bytes, (small_model().total_params() + 1) * 4);
            QCOMPARE(step.allreduce_bytes_total, 2 * 2 * step.gradient_bytes);  // 2 (N-1) buffers
            QCOMPARE(step.allreduce_bytes_per_replica, 2 * step.gradient_bytes * 2 / 3);
            const double end0 = step.replicas[0].update_begin_ms + step.replicas[0].update_ms + step.replicas[0].finish_wait_ms;
            for (const PhaseTimings& r : step.replicas) {
                const double eps = 1e-6;
                QVERIFY(r.split_ms >= 0);
                QVERIFY(r.barrier_wait_ms >= 0 && r.finish_wait_ms >= 0);
                // Gradients, then the barrier, then the all-reduce, then the update.
                QVERIFY(r.allreduce_begin_ms + eps >= r.split_ms + r.forward_ms + r.backward_ms + r.barrier_wait_ms);
                QVERIFY(r.update_begin_ms + eps >= r.allreduce_begin_ms + r.allreduce_ms);
                // Every replica's step ends together: when the slowest has updated.
                QVERIFY(std::abs(r.update_begin_ms + r.update_ms + r.finish_wait_ms - end0) < 1e-3);
                QVERIFY(end0 <= step.step_time_ms);
                // The variables are copied once, when they are set; later steps find them in place.
                if (s == 0) {
                    QVERIFY(r.copy_model_ms > 0);
                } else {
                    QCOMPARE(r.copy_model_ms, 0.0);
                }
            }
        }
        const std::string json = event_to_json(steps.front());
        for (const char* key : {"\"all_reduce\":\"ring\"", "\"allreduce_bytes_total\"", "\"grad_norm_before\"", "\"grad_norm_after\"",
                                "\"weights_checksum\":\"", "\"split_ms\"", "\"barrier_wait_ms\"", "\"copy_model_ms\""}) {
            QVERIFY2(json.find(key) != std::string::npos, key);
        }
    }

    void reduceToOneDeviceReportsItsBytes() {
        const auto steps = train("cpu:2x256MB", false, AllReduceAlgorithm::Auto, 1);
        QCOMPARE(steps.size(), std::size_t{1});
        QCOMPARE(steps[0].all_reduce, std::string("reduce_to_one_device"));
        QCOMPARE(steps[0].allreduce_bytes_total, 2 * steps[0].gradient_bytes);
        const auto one = train("cpu", false, AllReduceAlgorithm::Auto, 1);
        QCOMPARE(one[0].all_reduce, std::string("none"));
        QCOMPARE(one[0].allreduce_bytes_total, std::int64_t{0});
    }

    void withoutTheFlagNothingExtraIsComputed() {
        const auto steps = train("cpu:2", false);
        QCOMPARE(steps.size(), std::size_t{4});
        for (const StepEndEvent& step : steps) {
            for (const PhaseTimings& r : step.replicas) {
                QVERIFY(std::isnan(r.grad_norm_before));
                QVERIFY(std::isnan(r.grad_norm_after));
                QCOMPARE(r.weights_checksum, std::uint64_t{0});
            }
        }
        const std::string json = event_to_json(steps.front());
        QVERIFY(json.find("\"weights_checksum\":null") != std::string::npos);
        QVERIFY(json.find("\"grad_norm_after\":null") != std::string::npos);
    }
};

QTEST_MAIN(TestStepStats)
#include "test_step_stats.moc"
