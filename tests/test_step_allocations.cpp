// "No allocation in the steady-state step" (issue #6), checked rather than claimed: this suite
// replaces the global operator new with a counting one and runs real steps on the fast CPU
// backend. Warm-up steps may allocate (thread-local scratch, the first views); after them a
// mirrored step (every replica, the all-reduce, the NaN guard and the update), a batch from the
// input pipeline, and an epoch of the fit loop per step must not.
#include <QtTest/QtTest>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/data/pipeline.h"
#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/distribute/mirrored.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/train/events.h"
#include "core/train/trainer.h"

namespace {
std::atomic<std::int64_t> g_allocations{0};

void* counted_allocation(std::size_t bytes, std::size_t alignment) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (bytes == 0) bytes = 1;
    void* memory = nullptr;
    if (alignment <= alignof(std::max_align_t)) {
        memory = std::malloc(bytes);
    } else if (posix_memalign(&memory, alignment, bytes) != 0) {
        memory = nullptr;
    }
    if (memory == nullptr) throw std::bad_alloc();
    return memory;
}
}  // namespace

// Every replaceable allocation function routes through the counter (the sized and aligned
// deletes default to these frees).
void* operator new(std::size_t bytes) { return counted_allocation(bytes, 0); }
void* operator new[](std::size_t bytes) { return counted_allocation(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t alignment) {
    return counted_allocation(bytes, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment) {
    return counted_allocation(bytes, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
    try {
        return counted_allocation(bytes, 0);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
    try {
        return counted_allocation(bytes, 0);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete[](void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }

using namespace mirrorlab;

namespace {

std::int64_t allocations() { return g_allocations.load(std::memory_order_relaxed); }

// The tutorial's layers (Embedding, two Conv1D + pooling, Dropout, Dense) at a size that runs
// fast; the shapes do not matter to the question asked.
Model small_tutorial_model() {
    return Model::from_json_text(
        R"({"name": "small", "input_length": 64, "layers": [
            {"class_name": "Embedding", "config": {"input_dim": 2000, "output_dim": 7}},
            {"class_name": "Conv1D", "config": {"filters": 32, "kernel_size": 5, "activation": "relu"}},
            {"class_name": "MaxPooling1D", "config": {"pool_size": 2}},
            {"class_name": "Conv1D", "config": {"filters": 16, "kernel_size": 3, "activation": "relu"}},
            {"class_name": "GlobalMaxPooling1D", "config": {}},
            {"class_name": "Dropout", "config": {"rate": 0.2}},
            {"class_name": "Dense", "config": {"units": 46, "activation": "softmax"}}]})",
        "small tutorial model");
}

TrainData small_data(std::int32_t train_samples, std::int32_t validation_samples) {
    SyntheticReutersOptions options;
    options.train_samples = train_samples;
    options.validation_samples = validation_samples;
    options.vocabulary_size = 2000;
    return make_train_data(make_synthetic_reuters(options), 64);
}

}  // namespace

class TestStepAllocations : public QObject {
    Q_OBJECT

  private slots:
    void counter_sees_allocations();
    void mirrored_step_allocates_nothing_data();
    void mirrored_step_allocates_nothing();
    void pipeline_reuses_recycled_batches_data();
    void pipeline_reuses_recycled_batches();
    void fit_loop_allocations_do_not_grow_with_steps();
};

void TestStepAllocations::counter_sees_allocations() {
    // Without this, a counter that never counts would pass every test below.
    const std::int64_t before = allocations();
    auto vector = std::make_unique<std::vector<int>>(1000, 1);
    QVERIFY(allocations() - before >= 2);
    QCOMPARE(vector->size(), std::size_t{1000});
}

void TestStepAllocations::mirrored_step_allocates_nothing_data() {
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("algorithm");
    QTest::addColumn<bool>("detailed");
    const int reduce = static_cast<int>(AllReduceAlgorithm::Auto);  // reduce-to-one-device on CPUs
    const int ring = static_cast<int>(AllReduceAlgorithm::Ring);
    QTest::newRow("one device") << "cpu" << reduce << false;
    QTest::newRow("2 replicas, reduce") << "cpu:2" << reduce << false;
    QTest::newRow("3 replicas, reduce") << "cpu:3" << reduce << false;
    QTest::newRow("3 replicas, ring") << "cpu:3" << ring << false;
    QTest::newRow("2 replicas, step view statistics") << "cpu:2" << reduce << true;
}

void TestStepAllocations::mirrored_step_allocates_nothing() {
    QFETCH(QString, devices);
    QFETCH(int, algorithm);
    QFETCH(bool, detailed);
    const Model model = small_tutorial_model();
    DeviceRegistry registry;
    MirroredStrategy strategy(create_logical_devices(DeviceConfig::parse(devices.toStdString()), registry),
                              static_cast<AllReduceAlgorithm>(algorithm), [](LogLevel, const std::string&) {});
    strategy.set_detailed_stats(detailed);
    constexpr std::int32_t kBatch = 32;
    strategy.build(model, kBatch, OptimizerConfig::defaults(OptimizerKind::Nadam), initial_weights(model, 3));
    const TrainData data = small_data(kBatch * 4, 0);
    const std::int32_t* ids = data.train_ids->ids.data();
    const std::int32_t* labels = data.train_labels->data();

    for (std::uint64_t step = 1; step <= 3; ++step) QVERIFY(strategy.train_step(ids, labels, kBatch, step).finite);
    const std::int64_t before = allocations();
    constexpr int kSteps = 20;
    for (int step = 0; step < kSteps; ++step) {
        // Also the last, smaller batch of an epoch (shards change size, buffers do not).
        const std::int32_t batch = step % 5 == 4 ? 13 : kBatch;
        const std::int64_t offset = (step % 3) * kBatch;
        const TrainStepResult& result =
            strategy.train_step(ids + offset * 64, labels + offset, batch, static_cast<std::uint64_t>(step + 4));
        QVERIFY(result.finite);
    }
    const std::int64_t allocated = allocations() - before;
    QVERIFY2(allocated == 0, qPrintable(QString("%1 allocations in %2 steady-state steps").arg(allocated).arg(kSteps)));
    // Still training: the steps above changed the weights and kept the replicas identical.
    QVERIFY(strategy.optimizer_state().iterations == 3 + kSteps);
    for (int r = 1; r < strategy.replica_count(); ++r) QVERIFY(strategy.weights(r) == strategy.weights(0));
}

void TestStepAllocations::pipeline_reuses_recycled_batches_data() {
    QTest::addColumn<int>("prefetch");
    QTest::newRow("on the caller's thread") << 0;
    QTest::newRow("prefetched on a producer thread") << 2;
}

void TestStepAllocations::pipeline_reuses_recycled_batches() {
    QFETCH(int, prefetch);
    const TrainData data = small_data(32 * 40 + 7, 0);
    PipelineOptions options;
    options.batch_size = 32;
    options.prefetch_batches = prefetch;
    options.seed = 5;
    Pipeline pipeline(data.train_ids, data.train_labels, options);
    // What recycled buffers must still deliver: this epoch's samples in this epoch's order.
    std::vector<std::int32_t> expected_labels;
    for (std::int64_t sample : pipeline.epoch_order(0)) expected_labels.push_back((*data.train_labels)[static_cast<std::size_t>(sample)]);
    pipeline.start_epoch(0);
    std::vector<std::int32_t> labels;
    labels.reserve(expected_labels.size());
    std::int64_t delivered = 0;
    for (int i = 0; i < 5; ++i) {
        std::optional<Batch> batch = pipeline.next();
        QVERIFY(batch.has_value());
        labels.insert(labels.end(), batch->labels.begin(), batch->labels.end());
        ++delivered;
        pipeline.recycle(std::move(*batch));
    }
    const std::int64_t before = allocations();
    while (std::optional<Batch> batch = pipeline.next()) {
        labels.insert(labels.end(), batch->labels.begin(), batch->labels.end());
        ++delivered;
        pipeline.recycle(std::move(*batch));
    }
    const std::int64_t allocated = allocations() - before;
    QVERIFY(labels == expected_labels);
    QCOMPARE(delivered, pipeline.steps_per_epoch());
    QVERIFY2(allocated == 0, qPrintable(QString("%1 allocations for %2 batches").arg(allocated).arg(delivered - 5)));
}

void TestStepAllocations::fit_loop_allocations_do_not_grow_with_steps() {
    // The whole fit loop (pipeline, steps, running metrics) with step events off, as the CLI and
    // the bench run it: the second epoch of a 12-step and of a 48-step run allocate the same
    // (epoch-level work only: the shuffle order, the producer thread, validation, the epoch's
    // events); memory events, which come by the clock, are counted and taken out.
    auto epoch_allocations = [](std::int32_t steps) {
        TrainConfig config;
        config.epochs = 2;
        config.batch_size = 32;
        config.seed = 3;
        config.emit_step_events = false;
        config.overfitting_monitor = false;
        DeviceConfig devices = DeviceConfig::parse("cpu:2");
        Trainer trainer(small_tutorial_model(), devices, config, small_data(32 * steps, 64));
        std::int64_t begin = -1, end = -1, memory_events = 0;
        trainer.set_event_sink([&](const Event& event) {
            if (const auto* epoch_begin = std::get_if<EpochBeginEvent>(&event); epoch_begin && epoch_begin->epoch == 2) {
                begin = allocations();
            } else if (const auto* epoch_end = std::get_if<EpochEndEvent>(&event); epoch_end && epoch_end->epoch == 2) {
                end = allocations();
            } else if (std::holds_alternative<MemoryEvent>(event) && begin >= 0 && end < 0) {
                ++memory_events;
            }
        });
        const FitResult result = trainer.run();
        // Memory events come by the clock (every 0.5 s), not by step: each costs a few
        // allocations, which are taken out here so that a slow machine does not fail the test.
        constexpr std::int64_t kPerMemoryEvent = 4;
        return result.ok && begin >= 0 && end >= begin ? end - begin - kPerMemoryEvent * memory_events : std::int64_t{-1};
    };
    const std::int64_t short_epoch = epoch_allocations(12);
    const std::int64_t long_epoch = epoch_allocations(48);
    QVERIFY2(short_epoch >= 0 && long_epoch >= 0, "a run failed");
    QVERIFY2(long_epoch <= short_epoch + 8,
             qPrintable(QString("epoch of 12 steps: %1 allocations, of 48 steps: %2 (36 more steps cost %3)")
                            .arg(short_epoch)
                            .arg(long_epoch)
                            .arg(long_epoch - short_epoch)));
}

QTEST_GUILESS_MAIN(TestStepAllocations)
#include "test_step_allocations.moc"
