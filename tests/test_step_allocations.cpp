// "No allocation in the steady-state step" (issue #6), checked rather than claimed: this suite
// counts every allocation and runs real steps on the fast CPU backend. Two counters:
//   - operator new (every replaceable form, replaced below);
//   - the C allocator: malloc, calloc, realloc, reallocarray, aligned_alloc, posix_memalign,
//     memalign, valloc and pvalloc, defined in this executable so that they interpose on glibc's
//     for every library in the process (what operator new, the memory arenas' std::aligned_alloc,
//     Qt and libstdc++ call), and forward to glibc's own __libc_* functions (no dlsym, which could
//     itself allocate). Under ASan/TSan the sanitizer owns malloc, so only operator new is counted
//     there; the normal build counts both.
// Warm-up steps may allocate (thread-local scratch, the first views); after them a mirrored step
// (every replica, the all-reduce, the NaN guard and the update), a batch from the input pipeline,
// and an epoch of the fit loop per step must not, and no device arena may ask the system for a
// new block.
#include <QtTest/QtTest>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/arena.h"
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

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MIRRORLAB_COUNT_C_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MIRRORLAB_COUNT_C_ALLOCATIONS 0
#endif
#endif
#ifndef MIRRORLAB_COUNT_C_ALLOCATIONS
#define MIRRORLAB_COUNT_C_ALLOCATIONS 1
#endif

namespace {
std::atomic<std::int64_t> g_allocations{0};    // operator new
std::atomic<std::int64_t> g_c_allocations{0};  // the C allocator (operator new included: it calls malloc)

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

#if MIRRORLAB_COUNT_C_ALLOCATIONS
// glibc's allocator under its exported second names. Every function that hands out memory counts
// once and forwards; free and the others' memory all belong to the same glibc heap.
extern "C" {
void* __libc_malloc(std::size_t);
void __libc_free(void*);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* __libc_valloc(std::size_t);
void* __libc_pvalloc(std::size_t);
}

namespace {
inline void count_c() { g_c_allocations.fetch_add(1, std::memory_order_relaxed); }
inline bool power_of_two(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }
}  // namespace

extern "C" {
void* malloc(std::size_t bytes) noexcept {
    count_c();
    return __libc_malloc(bytes);
}
void free(void* memory) noexcept { __libc_free(memory); }
void* calloc(std::size_t count, std::size_t bytes) noexcept {
    count_c();
    return __libc_calloc(count, bytes);
}
// A realloc may move the block (a new allocation) or grow it in place; either way the caller asked
// for memory, so every call that asks for bytes counts.
void* realloc(void* memory, std::size_t bytes) noexcept {
    if (bytes != 0 || memory == nullptr) count_c();
    return __libc_realloc(memory, bytes);
}
void* reallocarray(void* memory, std::size_t count, std::size_t bytes) noexcept {
    std::size_t total = 0;
    if (__builtin_mul_overflow(count, bytes, &total)) {
        errno = ENOMEM;
        return nullptr;
    }
    return realloc(memory, total);
}
void* aligned_alloc(std::size_t alignment, std::size_t bytes) noexcept {
    count_c();
    if (!power_of_two(alignment)) {
        errno = EINVAL;
        return nullptr;
    }
    return __libc_memalign(alignment, bytes);
}
int posix_memalign(void** memory, std::size_t alignment, std::size_t bytes) noexcept {
    count_c();
    if (!power_of_two(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
    void* block = __libc_memalign(alignment, bytes);
    if (block == nullptr) return ENOMEM;
    *memory = block;
    return 0;
}
void* memalign(std::size_t alignment, std::size_t bytes) noexcept {
    count_c();
    return __libc_memalign(alignment, bytes);
}
void* valloc(std::size_t bytes) noexcept {
    count_c();
    return __libc_valloc(bytes);
}
void* pvalloc(std::size_t bytes) noexcept {
    count_c();
    return __libc_pvalloc(bytes);
}
}  // extern "C"
#endif

using namespace mirrorlab;

namespace {

constexpr bool kCountsCAllocations = MIRRORLAB_COUNT_C_ALLOCATIONS != 0;

std::int64_t allocations() { return g_allocations.load(std::memory_order_relaxed); }
std::int64_t c_allocations() { return g_c_allocations.load(std::memory_order_relaxed); }

// Keeps the compiler from removing an allocation whose result is unused (it may pair a malloc
// with its free and drop both).
void escape(void* pointer) { asm volatile("" : : "g"(pointer) : "memory"); }

// What one measured window allocated: operator new calls, C allocator calls (operator new's
// mallocs included), and blocks the device arenas asked the system for.
struct Allocated {
    std::int64_t operator_new = 0;
    std::int64_t c_calls = 0;
    std::int64_t arena_blocks = 0;
    bool none() const { return operator_new == 0 && c_calls == 0 && arena_blocks == 0; }
    QString text() const {
        return QString("%1 operator new, %2 C allocator calls (malloc, aligned_alloc, ...%3), %4 new arena blocks")
            .arg(operator_new)
            .arg(c_calls)
            .arg(kCountsCAllocations ? "" : "; not counted under a sanitizer")
            .arg(arena_blocks);
    }
};

std::int64_t arena_blocks(MirroredStrategy& strategy) {
    std::int64_t blocks = 0;
    for (int r = 0; r < strategy.replica_count(); ++r) blocks += strategy.device(r).arena().stats().raw_allocation_calls;
    return blocks;
}

class Window {
  public:
    explicit Window(MirroredStrategy* strategy = nullptr)
        : strategy_(strategy), news_(allocations()), cs_(c_allocations()), blocks_(strategy ? arena_blocks(*strategy) : 0) {}
    Allocated now() const {
        return {allocations() - news_, c_allocations() - cs_, strategy_ ? arena_blocks(*strategy_) - blocks_ : 0};
    }

  private:
    MirroredStrategy* strategy_;
    std::int64_t news_, cs_, blocks_;
};

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
    void c_counter_sees_every_entry_point();
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

// The same for the C allocator: each entry point, a call glibc makes on its own (strdup), and an
// arena's block (MemoryArena takes its blocks from std::aligned_alloc, which operator new never sees).
void TestStepAllocations::c_counter_sees_every_entry_point() {
    if (!kCountsCAllocations) QSKIP("under a sanitizer, the sanitizer's malloc is not interposed; the normal build counts it");
    auto counts = [](const char* what, const std::function<void()>& allocate) {
        const std::int64_t before = c_allocations();
        allocate();
        const std::int64_t counted = c_allocations() - before;
        QVERIFY2(counted >= 1, qPrintable(QString("%1 was not counted").arg(what)));
    };
    counts("malloc", [] {
        void* p = std::malloc(100);
        escape(p);
        std::free(p);
    });
    counts("calloc", [] {
        void* p = std::calloc(10, 10);
        escape(p);
        std::free(p);
    });
    void* grown = std::malloc(16);
    escape(grown);
    counts("realloc", [&] {
        grown = std::realloc(grown, 1 << 20);
        escape(grown);
    });
    std::free(grown);
    counts("aligned_alloc", [] {
        void* p = std::aligned_alloc(64, 4096);
        escape(p);
        std::free(p);
    });
    counts("posix_memalign", [] {
        void* p = nullptr;
        QCOMPARE(posix_memalign(&p, 64, 4096), 0);
        escape(p);
        std::free(p);
    });
    counts("strdup (glibc's own malloc call)", [] {
        char* p = strdup("counted inside glibc");
        escape(p);
        std::free(p);
    });
    MemoryArena arena("/device:CPU:0", 0);
    counts("a new arena block", [&] {
        void* block = arena.allocate(1 << 16, "the negative control");
        escape(block);
        arena.deallocate(block);
    });
    QCOMPARE(arena.stats().raw_allocation_calls, std::int64_t{1});
    // The block is cached: the same size again asks the system for nothing.
    const std::int64_t before = c_allocations();
    void* again = arena.allocate(1 << 16, "the cached block");
    arena.deallocate(again);
    QCOMPARE(arena.stats().raw_allocation_calls, std::int64_t{1});
    QVERIFY(c_allocations() - before <= 2);  // the arena's bookkeeping node (operator new), nothing else
}

void TestStepAllocations::mirrored_step_allocates_nothing_data() {
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("algorithm");
    QTest::addColumn<bool>("detailed");
    QTest::addColumn<bool>("control");
    const int reduce = static_cast<int>(AllReduceAlgorithm::Auto);  // reduce-to-one-device on CPUs
    const int ring = static_cast<int>(AllReduceAlgorithm::Ring);
    QTest::newRow("one device") << "cpu" << reduce << false << false;
    QTest::newRow("2 replicas, reduce") << "cpu:2" << reduce << false << false;
    QTest::newRow("3 replicas, reduce") << "cpu:3" << reduce << false << false;
    QTest::newRow("3 replicas, ring") << "cpu:3" << ring << false << false;
    QTest::newRow("2 replicas, step view statistics") << "cpu:2" << reduce << true << false;
    // The negative control: the same window with one new arena block per step must be seen.
    QTest::newRow("negative control: an arena block per step") << "cpu:2" << reduce << false << true;
}

void TestStepAllocations::mirrored_step_allocates_nothing() {
    QFETCH(QString, devices);
    QFETCH(int, algorithm);
    QFETCH(bool, detailed);
    QFETCH(bool, control);
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
    const Window window(&strategy);
    constexpr int kSteps = 20;
    for (int step = 0; step < kSteps; ++step) {
        if (control) {
            // A size no tensor has, so the arena's cache cannot serve it.
            MemoryArena& arena = strategy.device(0).arena();
            void* block = arena.allocate((std::int64_t{1} << 20) + 64 * (step + 1), "the negative control");
            escape(block);
            arena.deallocate(block);
        }
        // Also the last, smaller batch of an epoch (shards change size, buffers do not).
        const std::int32_t batch = step % 5 == 4 ? 13 : kBatch;
        const std::int64_t offset = (step % 3) * kBatch;
        const TrainStepResult& result =
            strategy.train_step(ids + offset * 64, labels + offset, batch, static_cast<std::uint64_t>(step + 4));
        QVERIFY(result.finite);
    }
    const Allocated allocated = window.now();
    const QString message = QString("%1 in %2 steady-state steps").arg(allocated.text()).arg(kSteps);
    if (control) {
        qInfo("negative control: %s", qPrintable(message));
        QVERIFY2(allocated.arena_blocks == kSteps, qPrintable(message));
        if (kCountsCAllocations) QVERIFY2(allocated.c_calls >= kSteps, qPrintable(message));
        return;
    }
    QVERIFY2(allocated.none(), qPrintable(message));
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
    const Window window;
    while (std::optional<Batch> batch = pipeline.next()) {
        labels.insert(labels.end(), batch->labels.begin(), batch->labels.end());
        ++delivered;
        pipeline.recycle(std::move(*batch));
    }
    const Allocated allocated = window.now();
    QVERIFY(labels == expected_labels);
    QCOMPARE(delivered, pipeline.steps_per_epoch());
    QVERIFY2(allocated.none(), qPrintable(QString("%1 for %2 batches").arg(allocated.text()).arg(delivered - 5)));
}

void TestStepAllocations::fit_loop_allocations_do_not_grow_with_steps() {
    // The whole fit loop (pipeline, steps, running metrics) with step events off, as the CLI and
    // the bench run it: the second epoch of a 12-step and of a 48-step run allocate the same
    // (epoch-level work only: the shuffle order, the producer thread, validation, the epoch's
    // events); memory events, which come by the clock, are counted and taken out.
    struct EpochCounts {
        std::int64_t operator_new = -1, c_calls = -1, memory_events = 0;
    };
    auto epoch_allocations = [](std::int32_t steps) {
        TrainConfig config;
        config.epochs = 2;
        config.batch_size = 32;
        config.seed = 3;
        config.emit_step_events = false;
        config.overfitting_monitor = false;
        DeviceConfig devices = DeviceConfig::parse("cpu:2");
        Trainer trainer(small_tutorial_model(), devices, config, small_data(32 * steps, 64));
        std::optional<Window> window;
        Allocated allocated;
        std::int64_t memory_events = 0;
        bool ended = false;
        trainer.set_event_sink([&](const Event& event) {
            if (const auto* epoch_begin = std::get_if<EpochBeginEvent>(&event); epoch_begin && epoch_begin->epoch == 2) {
                window.emplace();
            } else if (const auto* epoch_end = std::get_if<EpochEndEvent>(&event); epoch_end && epoch_end->epoch == 2) {
                allocated = window->now();
                ended = true;
            } else if (std::holds_alternative<MemoryEvent>(event) && window && !ended) {
                ++memory_events;
            }
        });
        const FitResult result = trainer.run();
        EpochCounts counts;
        if (!result.ok || !ended) return counts;
        // Memory events come by the clock (every 0.5 s), not by step: each costs a few
        // allocations, which are taken out here so that a slow machine does not fail the test.
        constexpr std::int64_t kPerMemoryEvent = 4;
        counts.operator_new = allocated.operator_new - kPerMemoryEvent * memory_events;
        counts.c_calls = allocated.c_calls - kPerMemoryEvent * memory_events;
        counts.memory_events = memory_events;
        return counts;
    };
    const EpochCounts short_epoch = epoch_allocations(12);
    const EpochCounts long_epoch = epoch_allocations(48);
    QVERIFY2(short_epoch.operator_new >= 0 && long_epoch.operator_new >= 0, "a run failed");
    const QString message = QString("epoch of 12 steps: %1 operator new, %2 C allocator calls; of 48 steps: %3, %4 "
                                    "(memory events taken out: %5, %6)")
                                .arg(short_epoch.operator_new)
                                .arg(short_epoch.c_calls)
                                .arg(long_epoch.operator_new)
                                .arg(long_epoch.c_calls)
                                .arg(short_epoch.memory_events)
                                .arg(long_epoch.memory_events);
    qInfo("%s", qPrintable(message));
    QVERIFY2(long_epoch.operator_new <= short_epoch.operator_new + 8, qPrintable(message));
    QVERIFY2(long_epoch.c_calls <= short_epoch.c_calls + 8, qPrintable(message));
}

QTEST_GUILESS_MAIN(TestStepAllocations)
#include "test_step_allocations.moc"
