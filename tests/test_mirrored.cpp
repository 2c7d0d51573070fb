// Distribute module: the promise of synchronous data parallelism. Splitting a global batch over N
// replicas, all-reducing the gradients and applying the same update everywhere must give the
// single-device step on the same batch, and the mirrored variables must stay bit-identical.
//
// The expected values come from independent computations: sums in double for the all-reduce,
// and a OneDeviceStrategy run on the whole batch for the mirrored step.
#include <QtTest/QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/backend/cpu_fast.h"
#include "core/backend/cpu_reference.h"
#include "core/device/device.h"
#include "core/distribute/cross_device_ops.h"
#include "core/distribute/mirrored.h"
#include "core/distribute/replica_threads.h"
#include "core/distribute/strategy_plan.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/util/denormals.h"
#include "core/util/error.h"
#include "core/util/step_barrier.h"
#include "support/fake_nccl.h"

using namespace mirrorlab;

// Readable failure messages for std::string comparisons.
namespace QTest {
template <>
inline char* toString(const std::string& text) {
    return qstrdup(text.c_str());
}
}  // namespace QTest

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;
constexpr double kTolerance = 1e-5;

// Embedding(200, 6) -> Conv1D(8, 3, relu) -> MaxPooling1D(2) -> Flatten [-> Dropout] -> Dense(5,
// softmax), 1,717 parameters: small enough for many steps, and every layer kind the tutorial uses.
Model tiny_model(double dropout_rate = 0.0) {
    std::string layers =
        "{\"class_name\": \"Embedding\", \"config\": {\"name\": \"embedding\", \"input_dim\": 200, "
        "\"output_dim\": 6}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"name\": \"conv1d\", \"filters\": 8, "
        "\"kernel_size\": 3, "
        "\"activation\": \"relu\"}},"
        "{\"class_name\": \"MaxPooling1D\", \"config\": {\"name\": \"max_pooling1d\", "
        "\"pool_size\": 2}},"
        "{\"class_name\": \"Flatten\", \"config\": {\"name\": \"flatten\"}},";
    if (dropout_rate > 0.0) {
        layers += "{\"class_name\": \"Dropout\", \"config\": {\"name\": \"dropout\", \"rate\": " +
                  std::to_string(dropout_rate) + "}},";
    }
    layers +=
        "{\"class_name\": \"Dense\", \"config\": {\"name\": \"dense\", \"units\": 5, "
        "\"activation\": \"softmax\"}}";
    return Model::from_json_text(
        "{\"name\": \"tiny\", \"input_length\": 20, \"layers\": [" + layers + "]}", "tiny model");
}

struct Batch {
    std::vector<std::int32_t> ids;     // [size, input_length]
    std::vector<std::int32_t> labels;  // [size]
    std::int32_t size = 0;
};

Batch random_batch(const Model& model, std::int32_t size, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<std::int32_t> id(
        0, static_cast<std::int32_t>(model.vocabulary_size()) - 1);
    std::uniform_int_distribution<std::int32_t> label(0, model.num_classes() - 1);
    Batch batch;
    batch.size = size;
    batch.ids.resize(static_cast<std::size_t>(size) *
                     static_cast<std::size_t>(model.input_length()));
    batch.labels.resize(static_cast<std::size_t>(size));
    for (auto& v : batch.ids) v = id(rng);
    for (auto& v : batch.labels) v = label(rng);
    return batch;
}

struct Logged {
    std::vector<std::pair<LogLevel, std::string>> lines;
    bool contains(const std::string& text) const {
        for (const auto& [level, line] : lines) {
            if (line.find(text) != std::string::npos) return true;
        }
        return false;
    }
    std::string all() const {
        std::string text;
        for (const auto& [level, line] : lines) text += line + "\n";
        return text;
    }
};

std::unique_ptr<MirroredStrategy> make_strategy(const std::string& spec,
                                                AllReduceAlgorithm algorithm,
                                                Logged* logged = nullptr) {
    DeviceRegistry registry;
    return std::make_unique<MirroredStrategy>(
        create_logical_devices(DeviceConfig::parse(spec), registry), algorithm,
        [logged](LogLevel level, const std::string& text) {
            if (logged != nullptr) logged->lines.emplace_back(level, text);
        });
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Empty when every element agrees within `tolerance` (relative above 1), else the first mismatch.
QString mismatch(const std::vector<float>& actual, const std::vector<float>& expected,
                 double tolerance) {
    if (actual.size() != expected.size()) {
        return QString("sizes differ: %1 vs %2").arg(actual.size()).arg(expected.size());
    }
    for (std::size_t i = 0; i < actual.size(); ++i) {
        const double a = actual[i], e = expected[i];
        if (!(std::abs(a - e) <= tolerance * std::max(1.0, std::abs(e)))) {
            return QString("element %1: %2 vs %3 (difference %4)")
                .arg(i)
                .arg(a, 0, 'g', 9)
                .arg(e, 0, 'g', 9)
                .arg(a - e);
        }
    }
    return {};
}

bool close(double actual, double expected, double tolerance = kTolerance) {
    return std::abs(actual - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

QString sizes_text(const std::vector<std::int32_t>& sizes) {
    QStringList parts;
    for (auto size : sizes) parts << QString::number(size);
    return parts.join('+');
}

// split_reduction: as the strategy builds it for CPU devices, which knows the replicas' number.
std::unique_ptr<CrossDeviceOps> make_ops(AllReduceAlgorithm algorithm, bool split_reduction = false, int replicas = 0) {
    if (algorithm == AllReduceAlgorithm::Ring) return std::make_unique<RingAllReduce>();
    return std::make_unique<ReduceToOneDevice>(split_reduction, split_reduction ? replicas : 0);
}

void add_algorithm_rows_by_replicas(const std::vector<int>& replica_counts) {
    QTest::addColumn<int>("replicas");
    QTest::addColumn<int>("algorithm");
    for (auto algorithm : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::ReduceToOneDevice}) {
        for (int n : replica_counts) {
            const std::string row =
                std::string(all_reduce_name(algorithm)) + "/" + std::to_string(n);
            QTest::newRow(row.c_str()) << n << static_cast<int>(algorithm);
        }
    }
}

// ---- Machines for the strategy plan ------------------------------------------------------

enum class Machine { CpuOnly, GpusWithNccl, GpusWithoutNccl, NcclFailsToStart };

// Two 4 GiB "GPUs" on host memory, with NCCL, without it, or with an NCCL that will not start.
class TwoFakeGpus final : public DeviceProvider {
  public:
    explicit TwoFakeGpus(Machine machine) : machine_(machine) {}
    DeviceType type() const override { return DeviceType::GPU; }
    std::vector<PhysicalDevice> devices() const override {
        std::vector<PhysicalDevice> gpus(2);
        for (int i = 0; i < 2; ++i) {
            gpus[static_cast<std::size_t>(i)].type = DeviceType::GPU;
            gpus[static_cast<std::size_t>(i)].index = i;
            gpus[static_cast<std::size_t>(i)].name = "Fake GPU";
            gpus[static_cast<std::size_t>(i)].total_memory_bytes = 4096 * kMiB;
        }
        return gpus;
    }
    std::string status() const override { return machine_ == Machine::GpusWithoutNccl ? "2 fake GPUs, no NCCL" : "2 fake GPUs"; }
    std::unique_ptr<Backend> create_backend(int) override { return std::make_unique<CpuReferenceBackend>(); }
    std::shared_ptr<RawAllocator> create_allocator(int) override { return std::make_shared<HostAllocator>(); }
    bool supports_collectives() const override { return machine_ != Machine::GpusWithoutNccl; }
    std::unique_ptr<CrossDeviceOps> create_all_reduce(const std::vector<LogicalDevice*>&) override {
        if (machine_ == Machine::GpusWithoutNccl) return nullptr;
        if (machine_ == Machine::NcclFailsToStart) {
            throw DeviceConfigError("device configuration: NCCL could not create communicators for GPU:0, GPU:1");
        }
        return std::make_unique<testsupport::FakeNccl>();
    }

  private:
    Machine machine_;
};

std::unique_ptr<DeviceRegistry> registry_for(Machine machine) {
    auto registry = std::make_unique<DeviceRegistry>();
    if (machine != Machine::CpuOnly) registry->add_provider(std::make_shared<TwoFakeGpus>(machine));
    return registry;
}

using LogLines = std::vector<PlanLogLine>;

QString lines_text(const LogLines& lines) {
    QStringList text;
    for (const PlanLogLine& line : lines) {
        text << QString("%1 %2").arg(line.level == LogLevel::Warning ? "W" : "I", QString::fromStdString(line.text));
    }
    return text.join('\n');
}

// What a strategy logs while it is built; the error it throws instead, if it does.
struct Built {
    std::unique_ptr<MirroredStrategy> strategy;
    LogLines log;
    std::string error;
};

template <typename Make>
Built build_strategy(Make make) {
    Built built;
    try {
        built.strategy = make([&built](LogLevel level, const std::string& text) { built.log.push_back({level, text}); });
    } catch (const DeviceConfigError& error) {
        built.error = error.what();
    }
    return built;
}

}  // namespace

class TestMirrored : public QObject {
    Q_OBJECT

  private slots:
    // ---- The strategy plan ---------------------------------------------------------------
    void plan_is_what_the_strategy_runs_data();
    void plan_is_what_the_strategy_runs();
    void plan_across_workers_names_the_cluster();

    // ---- Shards and chunks ---------------------------------------------------------------
    void shard_sizes_split_evenly_data();
    void shard_sizes_split_evenly();
    void chunk_range_covers_the_range();
    void bytes_sent_per_replica();
    void algorithm_names_and_descriptions();

    // ---- ReplicaThreads ------------------------------------------------------------------
    void replica_threads_run_concurrently_on_distinct_threads();
    void replica_threads_rethrow_after_all_finished();
    void replica_threads_prefer_the_failing_replicas_error();
    void replica_zero_runs_on_the_caller_like_the_others();
    void replica_zero_on_the_caller_fails_after_all_finished();
    void step_barrier_keeps_phases_apart();
    void step_barrier_abort_releases_sleeping_waiters();

    // ---- All-reduce from real threads ----------------------------------------------------
    void all_reduce_sums_bit_identically_data();
    void all_reduce_sums_bit_identically();

    // ---- The mirrored step ---------------------------------------------------------------
    void mirrored_step_equals_single_step_data();
    void mirrored_step_equals_single_step();
    void replicas_stay_bit_identical_data();
    void replicas_stay_bit_identical();
    void dropout_masks_differ_per_replica();
    void batch_smaller_than_replica_count();
    void non_finite_step_skips_the_update();
    void split_all_reduce_sees_every_non_finite_element_data();
    void split_all_reduce_sees_every_non_finite_element();
    void replica_failing_mid_step_stops_every_replica();
    void set_weights_reaches_every_replica();

    // ---- What people see -----------------------------------------------------------------
    void log_names_strategy_and_all_reduce();
    void log_describes_the_reduction();
    void nccl_on_cpu_is_refused();
    void memory_reports_every_replica();
};

// ---- Shards and chunks -------------------------------------------------------------------

void TestMirrored::shard_sizes_split_evenly_data() {
    QTest::addColumn<int>("global_batch");
    QTest::addColumn<int>("replicas");
    QTest::addColumn<QString>("expected");
    QTest::newRow("32/2") << 32 << 2 << "16+16";
    QTest::newRow("32/3") << 32 << 3 << "11+11+10";
    QTest::newRow("22/2") << 22 << 2 << "11+11";
    QTest::newRow("1/2") << 1 << 2 << "1+0";
    QTest::newRow("5/4") << 5 << 4 << "2+1+1+1";
    QTest::newRow("7/3") << 7 << 3 << "3+2+2";
    QTest::newRow("7/1") << 7 << 1 << "7";
    QTest::newRow("0/3") << 0 << 3 << "0+0+0";
}

void TestMirrored::shard_sizes_split_evenly() {
    QFETCH(int, global_batch);
    QFETCH(int, replicas);
    QFETCH(QString, expected);
    const auto sizes = shard_sizes(global_batch, replicas);
    QCOMPARE(sizes_text(sizes), expected);
}

void TestMirrored::chunk_range_covers_the_range() {
    for (std::int64_t count : {0, 1, 2, 3, 4, 7, 10, 1001, 4099}) {
        for (int parts = 1; parts <= 6; ++parts) {
            std::int64_t next = 0, smallest = count, largest = 0;
            for (int chunk = 0; chunk < parts; ++chunk) {
                const auto [begin, end] = chunk_range(count, parts, chunk);
                QVERIFY2(
                    begin == next,
                    qPrintable(
                        QString("count %1, %2 parts, chunk %3").arg(count).arg(parts).arg(chunk)));
                QVERIFY(end >= begin);
                smallest = std::min(smallest, end - begin);
                largest = std::max(largest, end - begin);
                next = end;
            }
            QCOMPARE(next, count);
            QVERIFY(largest - smallest <= 1);  // balanced: the ring is as fast as its biggest chunk
        }
    }
}

void TestMirrored::bytes_sent_per_replica() {
    const RingAllReduce ring;
    QCOMPARE(ring.bytes_sent_per_replica(4000, 1), std::int64_t{0});
    QCOMPARE(ring.bytes_sent_per_replica(4000, 2), std::int64_t{4000});  // 2 (N-1)/N = 1
    QCOMPARE(ring.bytes_sent_per_replica(3000, 3), std::int64_t{4000});  // 4/3
    QCOMPARE(ring.bytes_sent_per_replica(4000, 4), std::int64_t{6000});  // 3/2
    QCOMPARE(ring.bytes_sent_per_replica(4000, 5), std::int64_t{6400});  // 8/5
    const ReduceToOneDevice reduce;
    QCOMPARE(reduce.bytes_sent_per_replica(4000, 1), std::int64_t{0});
    QCOMPARE(reduce.bytes_sent_per_replica(4000, 2), std::int64_t{4000});

    // The strategy reports the same for the model's gradient buffer.
    const Model model = tiny_model();
    auto strategy = make_strategy("cpu:4", AllReduceAlgorithm::Ring);
    QCOMPARE(strategy->allreduce_bytes_per_replica(), std::int64_t{0});  // not built yet
    strategy->build(model, 8, OptimizerConfig::defaults(OptimizerKind::Nadam),
                    initial_weights(model, 1));
    QCOMPARE(strategy->allreduce_bytes_per_replica(),
             ring.bytes_sent_per_replica(model.total_params() * 4, 4));
}

void TestMirrored::algorithm_names_and_descriptions() {
    for (auto algorithm : {AllReduceAlgorithm::Auto, AllReduceAlgorithm::ReduceToOneDevice,
                           AllReduceAlgorithm::Ring, AllReduceAlgorithm::Nccl}) {
        QCOMPARE(all_reduce_from_name(all_reduce_name(algorithm)), algorithm);
    }
    QCOMPARE(all_reduce_from_name("reduce"), AllReduceAlgorithm::ReduceToOneDevice);
    QCOMPARE(all_reduce_from_name("allreduce"), AllReduceAlgorithm::Invalid);

    DeviceRegistry registry;
    const auto devices = create_logical_devices(DeviceConfig::parse("cpu:3"), registry);
    std::vector<LogicalDevice*> raw;
    for (const auto& device : devices) raw.push_back(device.get());
    QCOMPARE(ReduceToOneDevice().describe(raw),
             std::string("Reduce to /device:CPU:0 then broadcast to (/device:CPU:0, /device:CPU:1, "
                         "/device:CPU:2)."));
    QCOMPARE(
        RingAllReduce().describe(raw),
        std::string(
            "Ring all-reduce (reduce-scatter then all-gather in 3 chunks) over /device:CPU:0 -> "
            "/device:CPU:1 -> /device:CPU:2 -> /device:CPU:0."));
}

// ---- ReplicaThreads ----------------------------------------------------------------------

void TestMirrored::replica_threads_run_concurrently_on_distinct_threads() {
    constexpr int n = 4;
    ReplicaThreads threads(n);
    QCOMPARE(threads.size(), n);
    std::vector<std::thread::id> first(n), second(n);
    std::atomic<int> arrived{0};
    std::vector<int> saw_everyone(n, 0);
    threads.run([&](int r) {
        first[static_cast<std::size_t>(r)] = std::this_thread::get_id();
        // Every replica waits (bounded) until all have started: only possible if they run at once.
        ++arrived;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (arrived.load() < n && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        saw_everyone[static_cast<std::size_t>(r)] = arrived.load() == n ? 1 : 0;
    });
    const std::set<std::thread::id> distinct(first.begin(), first.end());
    QCOMPARE(distinct.size(), std::size_t{n});
    QVERIFY(!distinct.count(std::this_thread::get_id()));
    QCOMPARE(saw_everyone, std::vector<int>(n, 1));

    // Persistent workers: the next run uses the same threads, each replica on its own.
    threads.run([&](int r) { second[static_cast<std::size_t>(r)] = std::this_thread::get_id(); });
    QCOMPARE(second, first);
}

void TestMirrored::replica_threads_rethrow_after_all_finished() {
    constexpr int n = 4;
    ReplicaThreads threads(n);
    std::vector<std::atomic<bool>> finished(n);
    bool all_finished_at_rethrow = false;
    try {
        threads.run([&](int r) {
            if (r == 1) throw OutOfMemoryError("out of memory on /device:CPU:1: test");
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            finished[static_cast<std::size_t>(r)] = true;
        });
        QFAIL("the exception was not rethrown");
    } catch (const OutOfMemoryError& error) {  // the type survives the trip between threads
        QCOMPARE(std::string(error.what()), std::string("out of memory on /device:CPU:1: test"));
        all_finished_at_rethrow = finished[0] && finished[2] && finished[3];
    }
    QVERIFY(all_finished_at_rethrow);

    // Usable again afterwards, and the old error does not come back.
    std::vector<int> ran(n, 0);
    threads.run([&](int r) { ran[static_cast<std::size_t>(r)] = 1; });
    QCOMPARE(ran, std::vector<int>(n, 1));

    // Several failing replicas: one exception comes out, and the next run is clean again.
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, threads.run([](int r) {
        if (r % 2 == 0) throw std::runtime_error("replica " + std::to_string(r));
    }));
    threads.run([&](int r) { ran[static_cast<std::size_t>(r)] = 2; });
    QCOMPARE(ran, std::vector<int>(n, 2));
}

void TestMirrored::step_barrier_keeps_phases_apart() {
    // Every thread writes its slot for phase k, meets the others, and must then see every slot at
    // k: the barrier orders the writes before the reads, phase after phase, on one reused object.
    constexpr int n = 4, phases = 2000;
    StepBarrier barrier(n);
    std::vector<std::atomic<int>> phase_of(n);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            for (int phase = 1; phase <= phases; ++phase) {
                phase_of[static_cast<std::size_t>(r)].store(phase, std::memory_order_relaxed);
                barrier.arrive_and_wait();
                for (const auto& slot : phase_of) {
                    if (slot.load(std::memory_order_relaxed) != phase) ++mismatches;
                }
                barrier.arrive_and_wait();  // nobody writes phase + 1 before all have read phase
            }
        });
    }
    for (auto& thread : threads) thread.join();
    QCOMPARE(mismatches.load(), 0);
}

void TestMirrored::step_barrier_abort_releases_sleeping_waiters() {
    // Three replicas wait long enough to have stopped spinning and gone to sleep; the fourth fails
    // and aborts. All three must leave with StepAborted, promptly; after reset() the barrier works.
    constexpr int n = 4;
    auto barrier = std::make_shared<StepBarrier>(n);
    auto aborted = std::make_shared<std::atomic<int>>(0);
    std::vector<std::thread> waiters;
    for (int r = 1; r < n; ++r) {
        waiters.emplace_back([barrier, aborted] {
            try {
                barrier->arrive_and_wait();
            } catch (const StepAborted&) {
                ++*aborted;
            }
        });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    QCOMPARE(aborted->load(), 0);  // still waiting for the fourth
    barrier->abort();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (aborted->load() < n - 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (aborted->load() != n - 1) {
        for (auto& waiter : waiters) waiter.detach();  // they hang; do not hang the suite with them
        QFAIL(qPrintable(QString("only %1 of %2 waiters left the aborted barrier").arg(aborted->load()).arg(n - 1)));
    }
    for (auto& waiter : waiters) waiter.join();
    // A later arrival at a broken barrier leaves at once, too.
    QVERIFY_THROWS_EXCEPTION(StepAborted, barrier->arrive_and_wait());

    barrier->reset();
    std::vector<std::thread> again;
    std::atomic<int> passed{0};
    for (int r = 0; r < n; ++r) {
        again.emplace_back([&] {
            barrier->arrive_and_wait();
            ++passed;
        });
    }
    for (auto& thread : again) thread.join();
    QCOMPARE(passed.load(), n);
}

void TestMirrored::replica_threads_prefer_the_failing_replicas_error() {
    // The others' StepAborted arrives first; the error that comes out is still the one that
    // names the real problem.
    ReplicaThreads threads(4);
    try {
        threads.run([](int r) {
            if (r != 2) throw StepAborted();
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            throw OutOfMemoryError("out of memory on /device:CPU:2: test");
        });
        QFAIL("nothing was rethrown");
    } catch (const OutOfMemoryError& error) {
        QCOMPARE(std::string(error.what()), std::string("out of memory on /device:CPU:2: test"));
    }
}

namespace {
// What a product below float's normal range gives on the calling thread: 0 where denormals are
// flushed (the replicas' mode), a denormal otherwise.
float denormal_product() {
    volatile float smallest_normal = std::numeric_limits<float>::min();
    volatile float half = 0.5f;
    return smallest_normal * half;
}
}  // namespace

void TestMirrored::replica_zero_runs_on_the_caller_like_the_others() {
    // CPU replicas: the caller runs replica 0 itself (no thread of its own to wake up each step),
    // at the same time as the others, under the same floating-point mode; its own mode comes back.
    constexpr int n = 3;
    ReplicaThreads threads(n, ReplicaZero::Caller);
    QCOMPARE(threads.size(), n);
    const unsigned callers_mode = float_mode();
    std::vector<std::thread::id> ran_on(n);
    std::vector<float> products(n, -1.0f);
    std::atomic<int> arrived{0};
    std::vector<int> saw_everyone(n, 0);
    for (int round = 0; round < 2; ++round) {
        threads.run([&](int r) {
            const auto i = static_cast<std::size_t>(r);
            ran_on[i] = std::this_thread::get_id();
            products[i] = denormal_product();
            ++arrived;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (arrived.load() < n * (round + 1) && std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
            saw_everyone[i] = arrived.load() >= n * (round + 1) ? 1 : 0;
        });
        QCOMPARE(ran_on[0], std::this_thread::get_id());
        const std::set<std::thread::id> distinct(ran_on.begin(), ran_on.end());
        QCOMPARE(distinct.size(), std::size_t{n});
        QCOMPARE(saw_everyone, std::vector<int>(n, 1));
        QCOMPARE(products, std::vector<float>(n, 0.0f));  // flushed on every replica, replica 0 included
        QCOMPARE(float_mode(), callers_mode);
    }

    // One replica: it runs on the caller, and no other thread is involved.
    ReplicaThreads alone(1, ReplicaZero::Caller);
    std::thread::id alone_on;
    alone.run([&](int) { alone_on = std::this_thread::get_id(); });
    QCOMPARE(alone_on, std::this_thread::get_id());
}

void TestMirrored::replica_zero_on_the_caller_fails_after_all_finished() {
    // Replica 0's error on the calling thread comes out only once the others have finished, and is
    // preferred to their StepAborted; an error of another replica still comes out of the caller.
    constexpr int n = 3;
    ReplicaThreads threads(n, ReplicaZero::Caller);
    std::vector<std::atomic<bool>> finished(n);
    try {
        threads.run([&](int r) {
            if (r == 0) throw OutOfMemoryError("out of memory on /device:CPU:0: test");
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            finished[static_cast<std::size_t>(r)] = true;
            throw StepAborted();
        });
        QFAIL("nothing was rethrown");
    } catch (const OutOfMemoryError& error) {
        QCOMPARE(std::string(error.what()), std::string("out of memory on /device:CPU:0: test"));
        QVERIFY(finished[1] && finished[2]);
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, threads.run([](int r) {
        if (r == 2) throw std::runtime_error("replica 2");
    }));
    std::vector<int> ran(n, 0);
    threads.run([&](int r) { ran[static_cast<std::size_t>(r)] = 1; });
    QCOMPARE(ran, std::vector<int>(n, 1));
}

// ---- All-reduce from real threads --------------------------------------------------------

void TestMirrored::all_reduce_sums_bit_identically_data() {
    add_algorithm_rows_by_replicas({2, 3, 4, 5});
}

void TestMirrored::all_reduce_sums_bit_identically() {
    QFETCH(int, replicas);
    QFETCH(int, algorithm);
    const auto n = static_cast<std::size_t>(replicas);
    const bool reduce = algorithm == static_cast<int>(AllReduceAlgorithm::ReduceToOneDevice);
    // Reduce-to-one-device runs on replica 0 alone (GPUs) or split across the replicas (CPUs).
    for (const bool split : reduce ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
        const auto ops = make_ops(static_cast<AllReduceAlgorithm>(algorithm), split, replicas);
        QCOMPARE(static_cast<int>(ops->algorithm()), algorithm);

        std::vector<CpuReferenceBackend> backend_storage(n);
        std::vector<Backend*> backends;
        for (auto& backend : backend_storage) backends.push_back(&backend);
        ReplicaThreads threads(replicas);
        StepBarrier barrier(replicas);  // reused: every all-reduce leaves it in the same phase
        std::mt19937 rng(static_cast<std::uint32_t>(1000 * replicas + algorithm));
        std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
        std::uniform_int_distribution<int> exponent(-4, 4);

        // Odd lengths, including fewer elements than replicas (empty chunks).
        for (std::int64_t count : {1, 2, 3, 7, 33, 1001, 4099}) {
            for (int round = 0; round < 3; ++round) {
                std::vector<std::vector<float>> host(n, std::vector<float>(static_cast<std::size_t>(count)));
                std::vector<double> sum(static_cast<std::size_t>(count), 0.0),
                    magnitude(static_cast<std::size_t>(count), 0.0);
                std::vector<float> in_order(static_cast<std::size_t>(count), 0.0f);  // ((b0 + b1) + b2) ...
                for (std::size_t r = 0; r < n; ++r) {
                    for (std::size_t i = 0; i < host[r].size(); ++i) {
                        host[r][i] = mantissa(rng) * std::pow(10.0f, static_cast<float>(exponent(rng)));
                        sum[i] += host[r][i];
                        magnitude[i] += std::abs(host[r][i]);
                        in_order[i] = r == 0 ? host[r][i] : in_order[i] + host[r][i];
                    }
                }
                std::vector<TensorView> buffers;
                for (auto& h : host) buffers.push_back(TensorView{h.data(), Shape{count}, DType::F32});
                threads.run([&](int r) { ops->all_reduce(r, buffers, backends, barrier); });

                const QString where =
                    QString("%1 elements, round %2%3").arg(count).arg(round).arg(split ? ", split" : "");
                for (std::size_t i = 0; i < sum.size(); ++i) {
                    // Float summation of n terms: error at most (n - 1) * eps * sum |x|.
                    const double bound = static_cast<double>(n) * 1.2e-7 * magnitude[i] + 1e-30;
                    QVERIFY2(std::abs(host[0][i] - sum[i]) <= bound,
                             qPrintable(where + QString(", element %1: %2 vs %3").arg(i).arg(host[0][i]).arg(sum[i])));
                }
                // Reducing to one device adds in replica order, split or not: TensorFlow's sum.
                if (reduce) QVERIFY2(bit_identical(host[0], in_order), qPrintable(where + ": not b0 + b1 + ... in order"));
                for (std::size_t r = 1; r < n; ++r) {
                    QVERIFY2(bit_identical(host[r], host[0]), qPrintable(where + QString(", replica %1 differs").arg(r)));
                }
                // Split over host memory, the sum was checked as it was made; elsewhere the update checks.
                QCOMPARE(ops->sum_all_finite(), split ? std::optional<bool>(true) : std::nullopt);
            }
        }
    }
}

void TestMirrored::split_all_reduce_sees_every_non_finite_element_data() {
    QTest::addColumn<int>("replicas");
    for (int n : {1, 2, 3, 5}) QTest::newRow(qPrintable(QString("%1 replicas").arg(n))) << n;
}

// The verdict that guards the update, made by the CPU's split all-reduce: a NaN, an infinity or
// finite gradients whose sum overflows, in any replica's buffer and in any replica's slice, keep
// every replica from updating; a finite sum lets all of them.
void TestMirrored::split_all_reduce_sees_every_non_finite_element() {
    QFETCH(int, replicas);
    const auto n = static_cast<std::size_t>(replicas);
    const auto ops = make_ops(AllReduceAlgorithm::ReduceToOneDevice, true, replicas);
    std::vector<CpuFastBackend> backend_storage(n);
    std::vector<Backend*> backends;
    for (auto& backend : backend_storage) backends.push_back(&backend);
    ReplicaThreads threads(replicas);
    StepBarrier barrier(replicas);
    const std::int64_t count = 1001;
    const float max = std::numeric_limits<float>::max();
    struct Poison {
        const char* what;
        float value;  // written into one replica's buffer; `max` goes into every buffer (an overflowing sum)
    };
    const Poison poisons[] = {{"NaN", std::numeric_limits<float>::quiet_NaN()},
                              {"+inf", std::numeric_limits<float>::infinity()},
                              {"-inf", -std::numeric_limits<float>::infinity()},
                              {"an overflowing sum", max}};
    auto all_reduce = [&](std::vector<std::vector<float>>& host) {
        std::vector<TensorView> buffers;
        for (auto& h : host) buffers.push_back(TensorView{h.data(), Shape{count}, DType::F32});
        threads.run([&](int r) { ops->all_reduce(r, buffers, backends, barrier); });
        return ops->sum_all_finite();
    };
    for (const Poison& poison : poisons) {
        for (std::int64_t position : {std::int64_t{0}, count / 3, count / 2, count - 1}) {
            for (std::size_t owner = 0; owner < n; ++owner) {
                std::vector<std::vector<float>> host(n, std::vector<float>(static_cast<std::size_t>(count), 0.25f));
                const auto p = static_cast<std::size_t>(position);
                if (poison.value == max) {
                    for (auto& h : host) h[p] = max;
                } else {
                    host[owner][p] = poison.value;
                }
                const QString where = QString("%1 at %2 of replica %3").arg(poison.what).arg(position).arg(owner);
                QVERIFY2(all_reduce(host) == std::optional<bool>(n == 1 && poison.value == max), qPrintable(where));
                // The next, finite sum is judged afresh.
                std::vector<std::vector<float>> clean(n, std::vector<float>(static_cast<std::size_t>(count), 0.25f));
                QVERIFY2(all_reduce(clean) == std::optional<bool>(true), qPrintable(where + ", then a finite sum"));
                if (poison.value == max) break;  // in every buffer: one owner is enough
            }
        }
    }
}

// ---- The mirrored step -------------------------------------------------------------------

void TestMirrored::mirrored_step_equals_single_step_data() {
    // Nadam's embedding statistics travel in the all-reduced buffer: TF2's row counts (the
    // default) and Keras 3's squared slices must add up across replicas like the gradient.
    QTest::addColumn<int>("replicas");
    QTest::addColumn<int>("algorithm");
    QTest::addColumn<int>("embedding_update");
    for (auto algorithm : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::ReduceToOneDevice}) {
        for (int n : {2, 3, 4}) {
            for (auto update : {EmbeddingUpdate::TF2, EmbeddingUpdate::Keras3}) {
                const std::string row = std::string(all_reduce_name(algorithm)) + "/" + std::to_string(n) + "/" +
                                        std::string(embedding_update_name(update));
                QTest::newRow(row.c_str()) << n << static_cast<int>(algorithm) << static_cast<int>(update);
            }
        }
    }
}

void TestMirrored::mirrored_step_equals_single_step() {
    QFETCH(int, replicas);
    QFETCH(int, algorithm);
    QFETCH(int, embedding_update);
    const Model model = tiny_model();
    const std::vector<float> initial = initial_weights(model, 2024);
    OptimizerConfig nadam = OptimizerConfig::defaults(OptimizerKind::Nadam);
    nadam.embedding_update = static_cast<EmbeddingUpdate>(embedding_update);
    const std::int32_t global_batch = 12;

    auto single = make_strategy("cpu", AllReduceAlgorithm::Auto);
    auto mirrored = make_strategy("cpu:" + std::to_string(replicas) + "x256MB",
                                  static_cast<AllReduceAlgorithm>(algorithm));
    QCOMPARE(single->name(), std::string("OneDeviceStrategy"));
    QCOMPARE(mirrored->name(), std::string("MirroredStrategy"));
    QCOMPARE(mirrored->replica_count(), replicas);
    QCOMPARE(static_cast<int>(mirrored->all_reduce_algorithm()), algorithm);
    single->build(model, global_batch, nadam, initial);
    mirrored->build(model, global_batch, nadam, initial);

    // Full batches, uneven ones (10 and 7 do not divide by 3 or 4) and one smaller than N.
    const std::int32_t sizes[] = {12, 10, 7, 12, 1, 12, 10, 7, 12};
    for (std::size_t step = 0; step < std::size(sizes); ++step) {
        const Batch batch =
            random_batch(model, sizes[step], static_cast<std::uint32_t>(100 + step));
        const QString where = QString("step %1 (batch %2)").arg(step + 1).arg(batch.size);
        const TrainStepResult one =
            single->train_step(batch.ids.data(), batch.labels.data(), batch.size, step + 1);
        const TrainStepResult many =
            mirrored->train_step(batch.ids.data(), batch.labels.data(), batch.size, step + 1);
        QVERIFY(one.finite && many.finite);

        QCOMPARE(many.counts.samples, std::int64_t{batch.size});
        QCOMPARE(one.counts.samples, std::int64_t{batch.size});
        QVERIFY2(close(many.counts.loss_sum, one.counts.loss_sum),
                 qPrintable(where + QString(": loss sum %1 vs %2")
                                        .arg(many.counts.loss_sum, 0, 'g', 12)
                                        .arg(one.counts.loss_sum, 0, 'g', 12)));
        QCOMPARE(many.counts.correct, one.counts.correct);
        QCOMPARE(many.counts.top_k_correct, one.counts.top_k_correct);
        QCOMPARE(many.replicas.size(), static_cast<std::size_t>(replicas));
        const auto shards = shard_sizes(batch.size, replicas);
        double local_losses = 0.0;
        for (int r = 0; r < replicas; ++r) {
            const PhaseTimings& phase = many.replicas[static_cast<std::size_t>(r)];
            QCOMPARE(phase.shard_size, shards[static_cast<std::size_t>(r)]);
            local_losses += phase.local_loss * phase.shard_size;
        }
        QVERIFY(close(local_losses, one.counts.loss_sum));

        // The all-reduced gradient is the whole batch's mean gradient (a scale error would hide
        // behind Nadam's normalised update, so compare the gradients themselves).
        const std::vector<float> expected_gradient = single->replica(0).gradients();
        const std::vector<float> first_gradient = mirrored->replica(0).gradients();
        const QString gradient_diff = mismatch(first_gradient, expected_gradient, kTolerance);
        QVERIFY2(gradient_diff.isEmpty(),
                 qPrintable(where + ": gradient of replica 0 vs one device: " + gradient_diff));
        for (int r = 1; r < replicas; ++r) {
            QVERIFY2(
                bit_identical(mirrored->replica(r).gradients(), first_gradient),
                qPrintable(where + QString(": all-reduced gradient of replica %1 differs").arg(r)));
        }

        const std::vector<float> expected = single->weights(0);
        const std::vector<float> first = mirrored->weights(0);
        const QString diff = mismatch(first, expected, kTolerance);
        QVERIFY2(diff.isEmpty(), qPrintable(where + ": replica 0 vs one device: " + diff));
        for (int r = 1; r < replicas; ++r) {
            QVERIFY2(bit_identical(mirrored->weights(r), first),
                     qPrintable(where + QString(": replica %1 differs").arg(r)));
        }
    }
    QCOMPARE(mirrored->optimizer_state().iterations, single->optimizer_state().iterations);
    const QString slot_diff =
        mismatch(mirrored->optimizer_slots(), single->optimizer_slots(), kTolerance);
    QVERIFY2(slot_diff.isEmpty(), qPrintable("optimizer slots: " + slot_diff));

    // Evaluation over more samples than a replica was built for: chunked, same totals.
    const Batch held_out = random_batch(model, 31, 999);
    const LossCounts eval_one =
        single->evaluate(held_out.ids.data(), held_out.labels.data(), held_out.size);
    const LossCounts eval_many =
        mirrored->evaluate(held_out.ids.data(), held_out.labels.data(), held_out.size);
    QCOMPARE(eval_many.samples, std::int64_t{31});
    QCOMPARE(eval_one.samples, std::int64_t{31});
    QVERIFY(close(eval_many.loss_sum, eval_one.loss_sum));
    QCOMPARE(eval_many.correct, eval_one.correct);
    QCOMPARE(eval_many.top_k_correct, eval_one.top_k_correct);
}

void TestMirrored::replicas_stay_bit_identical_data() {
    QTest::addColumn<int>("replicas");
    QTest::addColumn<int>("algorithm");
    QTest::addColumn<double>("dropout");
    const int ring = static_cast<int>(AllReduceAlgorithm::Ring);
    const int reduce = static_cast<int>(AllReduceAlgorithm::ReduceToOneDevice);
    QTest::newRow("ring/2") << 2 << ring << 0.0;
    QTest::newRow("reduce_to_one_device/2") << 2 << reduce << 0.0;
    QTest::newRow("ring/4") << 4 << ring << 0.0;
    QTest::newRow("ring/2/dropout") << 2 << ring << 0.3;
    QTest::newRow("ring/3/dropout") << 3 << ring << 0.3;
    QTest::newRow("reduce_to_one_device/3/dropout") << 3 << reduce << 0.3;
    QTest::newRow("reduce_to_one_device/4/dropout") << 4 << reduce << 0.3;
}

void TestMirrored::replicas_stay_bit_identical() {
    QFETCH(int, replicas);
    QFETCH(int, algorithm);
    QFETCH(double, dropout);
    const Model model = tiny_model(dropout);
    auto strategy = make_strategy("cpu:" + std::to_string(replicas),
                                  static_cast<AllReduceAlgorithm>(algorithm));
    strategy->build(model, 12, OptimizerConfig::defaults(OptimizerKind::Nadam),
                    initial_weights(model, 5));
    const std::vector<float> initial = strategy->weights(0);
    const std::int32_t sizes[] = {12, 11, 10, 7, 5};
    for (int step = 1; step <= 50; ++step) {
        const Batch batch =
            random_batch(model, sizes[step % 5], static_cast<std::uint32_t>(7 * step));
        const TrainStepResult result = strategy->train_step(
            batch.ids.data(), batch.labels.data(), batch.size, static_cast<std::uint64_t>(step));
        QVERIFY(result.finite);
        const std::vector<float> first = strategy->weights(0);
        for (int r = 1; r < replicas; ++r) {
            QVERIFY2(bit_identical(strategy->weights(r), first),
                     qPrintable(QString("step %1: replica %2 differs").arg(step).arg(r)));
        }
    }
    QVERIFY(!bit_identical(strategy->weights(0), initial));  // it did train
    const std::vector<float> first_slots = strategy->replica(0).optimizer_slots();
    for (int r = 1; r < replicas; ++r) {
        QVERIFY2(bit_identical(strategy->replica(r).optimizer_slots(), first_slots),
                 qPrintable(QString("slots of replica %1 differ").arg(r)));
    }
}

void TestMirrored::dropout_masks_differ_per_replica() {
    // Two replicas get the same six samples. Without dropout their local losses agree; with
    // dropout each replica draws its own mask, so they differ — and the variables still agree.
    for (double rate : {0.0, 0.3}) {
        const Model model = tiny_model(rate);
        auto strategy = make_strategy("cpu:2", AllReduceAlgorithm::Ring);
        strategy->build(model, 12, OptimizerConfig::defaults(OptimizerKind::Nadam),
                        initial_weights(model, 11));
        Batch batch = random_batch(model, 12, 77);
        const std::size_t half_ids = batch.ids.size() / 2;
        std::copy(batch.ids.begin(), batch.ids.begin() + static_cast<std::ptrdiff_t>(half_ids),
                  batch.ids.begin() + static_cast<std::ptrdiff_t>(half_ids));
        std::copy(batch.labels.begin(), batch.labels.begin() + 6, batch.labels.begin() + 6);
        const TrainStepResult result =
            strategy->train_step(batch.ids.data(), batch.labels.data(), batch.size, 3);
        QVERIFY(result.finite);
        const double first = result.replicas[0].local_loss, second = result.replicas[1].local_loss;
        if (rate == 0.0) {
            QCOMPARE(first, second);
        } else {
            QVERIFY2(first != second, "both replicas used the same dropout mask");
        }
        QVERIFY(bit_identical(strategy->weights(1), strategy->weights(0)));
    }
}

void TestMirrored::batch_smaller_than_replica_count() {
    const Model model = tiny_model();
    const std::vector<float> initial = initial_weights(model, 3);
    const OptimizerConfig nadam = OptimizerConfig::defaults(OptimizerKind::Nadam);
    auto single = make_strategy("cpu", AllReduceAlgorithm::Auto);
    single->build(model, 1, nadam, initial);
    for (auto algorithm : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::ReduceToOneDevice}) {
        auto mirrored = make_strategy("cpu:2", algorithm);
        mirrored->build(model, 1, nadam, initial);  // shards 1 + 0
        single->set_weights(initial);
        single->restore_optimizer({}, std::vector<float>(single->optimizer_slots().size(), 0.0f));
        for (int step = 1; step <= 10; ++step) {
            const Batch batch = random_batch(model, 1, static_cast<std::uint32_t>(500 + step));
            const TrainStepResult one =
                single->train_step(batch.ids.data(), batch.labels.data(), 1, step);
            const TrainStepResult many =
                mirrored->train_step(batch.ids.data(), batch.labels.data(), 1, step);
            QVERIFY(one.finite && many.finite);
            QCOMPARE(many.counts.samples, std::int64_t{1});
            QCOMPARE(many.replicas[0].shard_size, 1);
            QCOMPARE(many.replicas[1].shard_size, 0);
            QCOMPARE(many.replicas[1].local_loss, 0.0);
            QVERIFY(close(many.counts.loss_sum, one.counts.loss_sum));
            const std::vector<float> first = mirrored->weights(0);
            QVERIFY2(bit_identical(mirrored->weights(1), first),
                     qPrintable(QString("step %1").arg(step)));
            const QString diff = mismatch(first, single->weights(0), kTolerance);
            QVERIFY2(diff.isEmpty(), qPrintable(QString("step %1: ").arg(step) + diff));
        }
    }
}

void TestMirrored::non_finite_step_skips_the_update() {
    const Model model = tiny_model();
    OptimizerConfig sgd = OptimizerConfig::defaults(OptimizerKind::SGD);
    sgd.learning_rate = 1e30;
    for (auto algorithm : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::ReduceToOneDevice}) {
        auto strategy = make_strategy("cpu:2", algorithm);
        strategy->build(model, 12, sgd, initial_weights(model, 9));
        bool skipped = false;
        int finite_steps = 0;
        for (int step = 1; step <= 30 && !skipped; ++step) {
            const Batch batch = random_batch(model, 12, static_cast<std::uint32_t>(step));
            const std::vector<float> before = strategy->weights(0);
            const auto iterations = strategy->optimizer_state().iterations;
            const TrainStepResult result =
                strategy->train_step(batch.ids.data(), batch.labels.data(), batch.size, step);
            if (result.finite) {
                ++finite_steps;
                QCOMPARE(strategy->optimizer_state().iterations, iterations + 1);
                continue;
            }
            skipped = true;
            for (int r = 0; r < 2; ++r) {
                QVERIFY2(bit_identical(strategy->weights(r), before),
                         qPrintable(QString("step %1: replica %2 changed in a non-finite step")
                                        .arg(step)
                                        .arg(r)));
            }
            QCOMPARE(strategy->optimizer_state().iterations,
                     iterations);  // no optimizer step either
        }
        QVERIFY2(skipped, "a learning rate of 1e30 never produced a non-finite step");
        QVERIFY(finite_steps >= 1);  // the first step, from sane weights, was finite
    }
}

void TestMirrored::replica_failing_mid_step_stops_every_replica() {
    // One replica's op fails (here: a label outside the classes, in that replica's shard only)
    // while the others already wait for it at the all-reduce. The step must end promptly with
    // that replica's own error, change no variable, and leave the strategy ready for more steps.
    const Model model = tiny_model();
    for (auto algorithm : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::ReduceToOneDevice}) {
        for (int replicas : {2, 3, 4}) {
            for (int failing = 0; failing < replicas; ++failing) {
                const QString where = QString("%1 replicas, %2, replica %3 fails")
                                          .arg(replicas)
                                          .arg(QString::fromStdString(std::string(all_reduce_name(algorithm))))
                                          .arg(failing);
                auto strategy = make_strategy("cpu:" + std::to_string(replicas), algorithm);
                const std::int32_t global_batch = 4 * replicas;
                strategy->build(model, global_batch, OptimizerConfig::defaults(OptimizerKind::Nadam),
                                initial_weights(model, 5));
                Batch batch = random_batch(model, global_batch, 77);
                const std::vector<float> before = strategy->weights(0);
                batch.labels[static_cast<std::size_t>(4 * failing + 1)] = 999;
                try {
                    strategy->train_step(batch.ids.data(), batch.labels.data(), batch.size, 1);
                    QFAIL(qPrintable(where + ": the bad label was accepted"));
                } catch (const OpError& error) {
                    QVERIFY2(QString(error.what()).contains("label 999"), qPrintable(where + ": " + error.what()));
                }
                QCOMPARE(strategy->optimizer_state().iterations, std::int64_t{0});
                for (int r = 0; r < replicas; ++r) {
                    QVERIFY2(bit_identical(strategy->weights(r), before),
                             qPrintable(where + QString(": replica %1 changed").arg(r)));
                }
                // The next, good step runs on every replica and keeps them identical.
                const Batch good = random_batch(model, global_batch, 78);
                const TrainStepResult& result =
                    strategy->train_step(good.ids.data(), good.labels.data(), good.size, 2);
                QVERIFY2(result.finite, qPrintable(where));
                QCOMPARE(strategy->optimizer_state().iterations, std::int64_t{1});
                QVERIFY2(!bit_identical(strategy->weights(0), before), qPrintable(where + ": no update"));
                for (int r = 1; r < replicas; ++r) {
                    QVERIFY2(bit_identical(strategy->weights(r), strategy->weights(0)),
                             qPrintable(where + QString(": replica %1 differs after recovery").arg(r)));
                }
            }
        }
    }
}

void TestMirrored::set_weights_reaches_every_replica() {
    const Model model = tiny_model();
    auto strategy = make_strategy("cpu:3", AllReduceAlgorithm::Ring);
    strategy->build(model, 9, OptimizerConfig::defaults(OptimizerKind::Adam),
                    initial_weights(model, 1));
    for (int r = 0; r < 3; ++r)
        QVERIFY(bit_identical(strategy->weights(r), initial_weights(model, 1)));
    const std::vector<float> other = initial_weights(model, 2);
    strategy->set_weights(other);
    for (int r = 0; r < 3; ++r) QVERIFY(bit_identical(strategy->weights(r), other));
    QVERIFY_THROWS_EXCEPTION(ModelError, strategy->set_weights(std::vector<float>(10, 0.0f)));
}

// ---- What people see ---------------------------------------------------------------------

void TestMirrored::log_names_strategy_and_all_reduce() {
    {
        Logged logged;
        auto strategy = make_strategy("cpu:2", AllReduceAlgorithm::Auto, &logged);
        QVERIFY2(
            logged.contains("Using MirroredStrategy with devices (/device:CPU:0, /device:CPU:1)"),
            logged.all().c_str());
        // Both replicas live on the one CPU: TensorFlow's choice for virtual devices.
        QVERIFY2(logged.contains("All-reduce: reduce_to_one_device"), logged.all().c_str());
        QCOMPARE(strategy->all_reduce_algorithm(), AllReduceAlgorithm::ReduceToOneDevice);
        QCOMPARE(strategy->device_names(),
                 (std::vector<std::string>{"/device:CPU:0", "/device:CPU:1"}));
        for (const auto& [level, line] : logged.lines) QCOMPARE(level, LogLevel::Info);
    }
    {
        Logged logged;
        auto strategy = make_strategy("cpu:3", AllReduceAlgorithm::Ring, &logged);
        QVERIFY2(logged.contains("Using MirroredStrategy with devices (/device:CPU:0, "
                                 "/device:CPU:1, /device:CPU:2)"),
                 logged.all().c_str());
        QVERIFY2(logged.contains("All-reduce: ring (chosen explicitly)"), logged.all().c_str());
    }
    {
        Logged logged;
        auto strategy = make_strategy("cpu", AllReduceAlgorithm::Auto, &logged);
        QVERIFY2(logged.contains("Using OneDeviceStrategy"), logged.all().c_str());
        QVERIFY2(logged.contains("/device:CPU:0"), logged.all().c_str());
        QVERIFY(!logged.contains("MirroredStrategy"));
        QCOMPARE(strategy->name(), std::string("OneDeviceStrategy"));
        QCOMPARE(strategy->all_reduce_algorithm(), AllReduceAlgorithm::Invalid);
    }
}

void TestMirrored::log_describes_the_reduction() {
    // ARCHITECTURE.md: "each implementation states its algorithm in the log, as TensorFlow does"
    // ("Reduce to .../GPU:0 then broadcast to (...)"); CrossDeviceOps::describe() is that line.
    Logged logged;
    auto strategy = make_strategy("cpu:2", AllReduceAlgorithm::ReduceToOneDevice, &logged);
    const Model model = tiny_model();
    strategy->build(model, 4, OptimizerConfig::defaults(OptimizerKind::Nadam),
                    initial_weights(model, 1));
    const Batch batch = random_batch(model, 4, 1);
    strategy->train_step(batch.ids.data(), batch.labels.data(), batch.size, 1);
    QVERIFY2(logged.contains(
                 "Reduce to /device:CPU:0 then broadcast to (/device:CPU:0, /device:CPU:1)."),
             logged.all().c_str());
}

void TestMirrored::nccl_on_cpu_is_refused() {
    try {
        auto strategy = make_strategy("cpu:2", AllReduceAlgorithm::Nccl);
        QFAIL("NCCL on CPU devices was accepted");
    } catch (const DeviceConfigError& error) {
        QVERIFY2(QString(error.what()).contains("NCCL all-reduce needs GPUs"), error.what());
    }
    // One device needs no all-reduce at all, so the choice does not matter there.
    auto one = make_strategy("cpu", AllReduceAlgorithm::Nccl);
    QCOMPARE(one->replica_count(), 1);
}

void TestMirrored::memory_reports_every_replica() {
    const Model model = tiny_model();
    auto strategy = make_strategy("cpu:3x256MB", AllReduceAlgorithm::Auto);
    auto before = strategy->memory();
    QCOMPARE(before.size(), std::size_t{3});
    for (const auto& entry : before) QCOMPARE(entry.bytes_in_use, std::int64_t{0});

    strategy->build(model, 12, OptimizerConfig::defaults(OptimizerKind::Nadam),
                    initial_weights(model, 1));
    const Batch batch = random_batch(model, 12, 4);
    strategy->train_step(batch.ids.data(), batch.labels.data(), batch.size, 1);
    const auto memory = strategy->memory();
    QCOMPARE(memory.size(), std::size_t{3});
    for (std::size_t r = 0; r < memory.size(); ++r) {
        QCOMPARE(memory[r].device, "/device:CPU:" + std::to_string(r));
        QCOMPARE(memory[r].limit_bytes, 256 * kMiB);
        // At least the variables, their gradients and Nadam's two slots.
        QVERIFY(memory[r].bytes_in_use >= 4 * 4 * model.total_params());
        QVERIFY(memory[r].peak_bytes >= memory[r].bytes_in_use);
        QVERIFY(memory[r].peak_bytes <= memory[r].limit_bytes);
        QCOMPARE(memory[r].bytes_in_use, memory[0].bytes_in_use);  // every replica holds the same
    }
    // Unlimited devices report a limit of 0.
    auto unlimited = make_strategy("cpu:2", AllReduceAlgorithm::Auto);
    for (const auto& entry : unlimited->memory()) QCOMPARE(entry.limit_bytes, std::int64_t{0});
}

// ---- The strategy plan -------------------------------------------------------------------

void TestMirrored::plan_is_what_the_strategy_runs_data() {
    QTest::addColumn<int>("machine");
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("requested");
    QTest::addColumn<QString>("all_reduce_line");  // the plan's; empty for one device or an error
    QTest::addColumn<QString>("warning");          // the plan's one warning, if any
    QTest::addColumn<QString>("error");            // what the plan and the engine refuse with
    const QString shared_virtual = "virtual devices share one physical device, so a reduction on one of them moves "
                                   "no data between chips";
    const QString shared_replicas = "replicas share one physical device, so a reduction on one of them moves no "
                                    "data between chips";
    const QString own_device = "each replica has its own device; a ring keeps the traffic per device flat";
    const QString own_gpu = "each replica has its own GPU; NCCL moves the gradients between the GPUs directly";
    const QString no_nccl_virtual = "NCCL is not supported when using virtual GPUs, falling back to reduction to one device";
    const int cpu = static_cast<int>(Machine::CpuOnly), nccl = static_cast<int>(Machine::GpusWithNccl),
              no_nccl = static_cast<int>(Machine::GpusWithoutNccl), failing = static_cast<int>(Machine::NcclFailsToStart);
    auto row = [](const char* name, int machine, const char* spec, const char* requested, const QString& line,
                  const QString& warning = {}, const QString& error = {}) {
        QTest::newRow(name) << machine << QString(spec) << QString(requested) << line << warning << error;
    };
    row("cpu", cpu, "cpu", "auto", "");
    row("cpu, nccl asked: one device needs none", cpu, "cpu", "nccl", "");
    row("cpu:2", cpu, "cpu:2", "auto", "All-reduce: reduce_to_one_device (" + shared_replicas + ")");
    row("cpu:2x512MB", cpu, "cpu:2x512MB", "auto", "All-reduce: reduce_to_one_device (" + shared_virtual + ")");
    row("cpu:3 auto", cpu, "cpu:3", "auto", "All-reduce: reduce_to_one_device (" + shared_replicas + ")");
    row("cpu:3 ring", cpu, "cpu:3", "ring", "All-reduce: ring (chosen explicitly)");
    row("cpu:3 reduce", cpu, "cpu:3", "reduce", "All-reduce: reduce_to_one_device (chosen explicitly)");
    row("cpu:2 nccl", cpu, "cpu:2", "nccl", "", "",
        "device configuration: NCCL all-reduce needs GPUs; use ring or reduce on CPU devices");
    row("cpu:2x8MB", cpu, "cpu:2x8MB", "auto", "", "",
        "device configuration: CPU:0: a virtual device of 8 MB is too small; give each at least 16 MB");
    row("gpu:0 without a GPU backend", cpu, "gpu:0", "auto", "", "",
        "device configuration: GPU:0 does not exist: this machine has 0 GPUs (no GPU backend loaded); use --devices "
        "cpu or cpu:2 to train on the CPU");
    row("two GPUs, NCCL", nccl, "gpu:0,gpu:1", "auto", "All-reduce: nccl (" + own_gpu + ")");
    row("two GPUs, NCCL asked", nccl, "gpu:0,gpu:1", "nccl", "All-reduce: nccl (chosen explicitly)");
    row("two GPUs, ring asked", nccl, "gpu:0,gpu:1", "ring", "All-reduce: ring (chosen explicitly)");
    row("gpu:0:2x1024MB", nccl, "gpu:0:2x1024MB", "auto", "All-reduce: reduce_to_one_device (" + shared_virtual + ")",
        no_nccl_virtual);
    row("gpu:0:2x1024MB, NCCL asked", nccl, "gpu:0:2x1024MB", "nccl",
        "All-reduce: reduce_to_one_device (NCCL cannot run between virtual devices of one GPU)", no_nccl_virtual);
    row("gpu:0:2x1024MB, ring asked", nccl, "gpu:0:2x1024MB", "ring", "All-reduce: ring (chosen explicitly)");
    row("gpu:0:2", nccl, "gpu:0:2", "auto", "All-reduce: reduce_to_one_device (" + shared_replicas + ")", no_nccl_virtual);
    row("gpu:0:2x1024MB,gpu:1", nccl, "gpu:0:2x1024MB,gpu:1", "auto",
        "All-reduce: reduce_to_one_device (" + shared_virtual + ")", no_nccl_virtual);
    row("gpu:1,gpu:0", nccl, "gpu:1,gpu:0", "auto", "All-reduce: nccl (" + own_gpu + ")");
    row("two GPUs without NCCL", no_nccl, "gpu:0,gpu:1", "auto", "All-reduce: ring (" + own_device + ")");
    row("two GPUs without NCCL, NCCL asked", no_nccl, "gpu:0,gpu:1", "nccl", "", "",
        "device configuration: the CUDA backend offers no NCCL all-reduce for these devices (2 fake GPUs, no NCCL); "
        "use ring or reduce");
    row("gpu:0 alone", no_nccl, "gpu:0", "auto", "");
    row("gpu:0:2x1024MB without NCCL", no_nccl, "gpu:0:2x1024MB", "auto",
        "All-reduce: reduce_to_one_device (" + shared_virtual + ")", no_nccl_virtual);
    row("mixed CPU and GPU", nccl, "gpu:0,cpu", "auto", "", "",
        "device configuration: mixing CPU and GPU replicas is not supported: the CPU replica would hold every step "
        "back and the GPUs' all-reduce cannot include it; train on the GPUs alone (gpu:0,...) or on the CPU alone "
        "(cpu:2)");
    // The one thing a plan cannot know: NCCL that will not start. The plan says NCCL; the engine
    // falls back to a ring and says why (Auto), or refuses (NCCL asked for by name).
    row("NCCL fails to start", failing, "gpu:0,gpu:1", "auto", "All-reduce: nccl (" + own_gpu + ")");
    row("NCCL fails to start, NCCL asked", failing, "gpu:0,gpu:1", "nccl", "All-reduce: nccl (chosen explicitly)");
}

// mpirun -np K: the plan of one worker names every worker's replicas and the order one process
// with all of them would reduce in; GPUs across workers are refused with what to do instead.
void TestMirrored::plan_across_workers_names_the_cluster() {
    const auto registry = registry_for(Machine::CpuOnly);
    const StrategyPlan two = plan_across_workers(plan_strategy(DeviceConfig::parse("cpu"), *registry, AllReduceAlgorithm::Auto), 2, 1,
                                                 "Open MPI v4.1.4");
    QVERIFY(two.ok());
    QCOMPARE(two.strategy_name(), std::string("MultiWorkerMirroredStrategy"));
    QCOMPARE(two.global_replica_count(), 2);
    QCOMPARE(two.strategy_line(), std::string("Using MultiWorkerMirroredStrategy with 2 workers × 1 device "
                                              "(/job:worker/task:0/device:CPU:0, /job:worker/task:1/device:CPU:0)"));
    QCOMPARE(two.all_reduce, AllReduceAlgorithm::ReduceToOneDevice);  // as cpu:2 in one process
    QVERIFY(two.exchange_line().find("bit for bit, as one process with 2 replicas") != std::string::npos);

    const StrategyPlan ring = plan_across_workers(plan_strategy(DeviceConfig::parse("cpu:2"), *registry, AllReduceAlgorithm::Ring), 3, 0,
                                                  "Open MPI v4.1.4");
    QCOMPARE(ring.all_reduce, AllReduceAlgorithm::Ring);
    QCOMPARE(ring.global_device_names().size(), std::size_t{6});
    QCOMPARE(ring.global_device_names().back(), std::string("/job:worker/task:2/device:CPU:1"));
    QVERIFY(ring.strategy_line().find("with 3 workers × 2 devices") != std::string::npos);

    const auto gpus = registry_for(Machine::GpusWithNccl);
    const StrategyPlan on_gpus =
        plan_across_workers(plan_strategy(DeviceConfig::parse("gpu:0"), *gpus, AllReduceAlgorithm::Auto), 2, 0, "Open MPI v4.1.4");
    QVERIFY(!on_gpus.ok());
    QVERIFY(on_gpus.error.find("multi-worker training runs on CPU devices for now") != std::string::npos);
}

void TestMirrored::plan_is_what_the_strategy_runs() {
    QFETCH(int, machine);
    QFETCH(QString, spec);
    QFETCH(QString, requested);
    QFETCH(QString, all_reduce_line);
    QFETCH(QString, warning);
    QFETCH(QString, error);
    const auto registry = registry_for(static_cast<Machine>(machine));
    const DeviceConfig config = DeviceConfig::parse(spec.toStdString());
    const AllReduceAlgorithm algorithm = all_reduce_from_name(requested.toStdString());

    // The plan says it all before anything exists.
    const StrategyPlan plan = plan_strategy(config, *registry, algorithm);
    QCOMPARE(QString::fromStdString(plan.error), error);
    QCOMPARE(QString::fromStdString(plan.all_reduce_line()), all_reduce_line);
    QCOMPARE(plan.warnings.size(), std::size_t{warning.isEmpty() ? 0u : 1u});
    if (!warning.isEmpty()) QCOMPARE(QString::fromStdString(plan.warnings.front()), warning);
    QCOMPARE(plan.replica_count(), config.replica_count());

    // What a run does (the trainer builds from the plan) and what a strategy built on devices made
    // by hand does: the same devices, all-reduce and log as the plan, or the same refusal.
    const bool nccl_fails = static_cast<Machine>(machine) == Machine::NcclFailsToStart;
    const std::string nccl_error = "device configuration: NCCL could not create communicators for GPU:0, GPU:1";
    Built from_plan = build_strategy([&](const MirroredStrategy::LogSink& log) {
        return std::make_unique<MirroredStrategy>(plan, *registry, log);
    });
    Built by_hand = build_strategy([&](const MirroredStrategy::LogSink& log) {
        return std::make_unique<MirroredStrategy>(create_logical_devices(config, *registry), algorithm, log);
    });
    for (Built* built : {&from_plan, &by_hand}) {
        if (!plan.ok()) {
            QCOMPARE(QString::fromStdString(built->error), error);
            continue;
        }
        if (nccl_fails && algorithm == AllReduceAlgorithm::Nccl) {
            QCOMPARE(built->error, nccl_error);
            continue;
        }
        QVERIFY2(built->strategy != nullptr, built->error.c_str());
        const MirroredStrategy& strategy = *built->strategy;
        const StrategyPlan ran = nccl_fails ? plan.without_nccl(nccl_error) : plan;
        QCOMPARE(strategy.plan().all_reduce_line(), ran.all_reduce_line());
        QCOMPARE(strategy.all_reduce_algorithm(), ran.all_reduce);
        QCOMPARE(strategy.name(), plan.strategy_name());
        QCOMPARE(strategy.device_names(), plan.device_names());
        for (int r = 0; r < strategy.replica_count(); ++r) {
            const LogicalDevicePlan& planned = plan.devices[static_cast<std::size_t>(r)];
            LogicalDevice& device = built->strategy->device(r);
            QCOMPARE(device.memory_limit_bytes(), planned.memory_limit_bytes);
            QCOMPARE(device.physical().id(), planned.physical_id());
        }
        LogLines expected = ran.log_lines();
        if (ran.all_reduce == AllReduceAlgorithm::Nccl) {
            expected.push_back({LogLevel::Info, "fake NCCL all-reduce over 2 GPUs"});
        } else if (!ran.exchange_line().empty()) {
            expected.push_back({LogLevel::Info, ran.exchange_line()});
        }
        QVERIFY2(built->log == expected, qPrintable("logged:\n" + lines_text(built->log) + "\nplanned:\n" +
                                                     lines_text(expected)));
    }
    if (nccl_fails && algorithm == AllReduceAlgorithm::Auto) {
        QCOMPARE(from_plan.strategy->plan().warnings,
                 std::vector<std::string>{"NCCL could not be started (" + nccl_error + "); using a ring instead"});
        QCOMPARE(from_plan.strategy->all_reduce_algorithm(), AllReduceAlgorithm::Ring);
    }
}

QTEST_APPLESS_MAIN(TestMirrored)
#include "test_mirrored.moc"
