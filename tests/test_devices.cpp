// Devices module: the --devices grammar, validation against the machine, logical devices, the
// memory arena that enforces a device's limit, and out-of-memory at the model level.
//
// Everything runs on the CPU. A fake GPU provider (host memory, CPU reference backend) stands in
// for the CUDA plugin, which also exercises the DeviceProvider interface the plugin implements.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend/arena.h"
#include "core/backend/cpu_reference.h"
#include "core/backend/tensor.h"
#include "core/device/device.h"
#include "core/distribute/mirrored.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/util/denormals.h"
#include "core/util/error.h"

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

// Counts what the arena asks of it, so a test can see that a device's arena really draws from
// the allocator its provider made.
class CountingAllocator final : public RawAllocator {
  public:
    void* allocate_raw(std::int64_t bytes) override {
        ++allocations;
        return host.allocate_raw(bytes);
    }
    void free_raw(void* pointer) override {
        ++frees;
        host.free_raw(pointer);
    }
    int allocations = 0;
    int frees = 0;

  private:
    HostAllocator host;
};

// The CPU reference ops with a "device clock" as a GPU backend has one (CUDA events): every
// phase a step marks takes a fixed, recognisable time. It also remembers the arena its logical
// device handed it, for the scratch a GPU backend keeps.
class FakeGpuBackend final : public CpuReferenceBackend {
  public:
    static constexpr double kForwardMs = 1.25, kBackwardMs = 2.5, kAllReduceMs = 0.5, kUpdateMs = 0.75;

    void attach_arena(MemoryArena* arena) override { attached_arena = arena; }
    void mark(StepMark point) override {
        recorded[static_cast<std::size_t>(point)] = true;
        // Device time at each mark: the phases back to back from 0.
        const double at[] = {0.0,
                             kForwardMs,
                             kForwardMs + kBackwardMs,
                             kForwardMs + kBackwardMs,
                             kForwardMs + kBackwardMs + kAllReduceMs,
                             kForwardMs + kBackwardMs + kAllReduceMs,
                             kForwardMs + kBackwardMs + kAllReduceMs + kUpdateMs};
        time_ms[static_cast<std::size_t>(point)] = at[static_cast<std::size_t>(point)];
    }
    double mark_elapsed_ms(StepMark from, StepMark to) override {
        if (!recorded[static_cast<std::size_t>(from)] || !recorded[static_cast<std::size_t>(to)]) return -1.0;
        return time_ms[static_cast<std::size_t>(to)] - time_ms[static_cast<std::size_t>(from)];
    }

    void apply_update(const OptimizerStep& step, const TensorView& weights, const TensorView& grads,
                      const TensorView& slot0, const TensorView& slot1, const IndexedSlicesViews& sparse) override {
        if (fail_update) throw OpError("[optimizer] simulated device fault");
        CpuReferenceBackend::apply_update(step, weights, grads, slot0, slot1, sparse);
    }

    MemoryArena* attached_arena = nullptr;
    bool fail_update = false;  // a GPU fault in the middle of the update, on this replica only

  private:
    bool recorded[static_cast<std::size_t>(StepMark::Count)] = {};
    double time_ms[static_cast<std::size_t>(StepMark::Count)] = {};
};

// One 4 GiB "GPU" backed by host memory and the CPU reference backend.
class FakeGpuProvider final : public DeviceProvider {
  public:
    DeviceType type() const override { return DeviceType::GPU; }
    std::vector<PhysicalDevice> devices() const override {
        PhysicalDevice gpu;
        gpu.type = DeviceType::GPU;
        gpu.index = 0;
        gpu.name = "Fake GPU";
        gpu.total_memory_bytes = 4096 * kMiB;
        gpu.free_memory_bytes = 4000 * kMiB;
        gpu.cores = 8;
        gpu.compute_capability = "9.0";
        gpu.bus_id = "0000:00:00.0";
        return {gpu};
    }
    std::string status() const override { return "fake provider, 1 GPU"; }
    std::unique_ptr<Backend> create_backend(int physical_index) override {
        backend_indices.push_back(physical_index);
        auto backend = std::make_unique<FakeGpuBackend>();
        backends.push_back(backend.get());
        return backend;
    }
    std::int64_t free_memory_bytes(int physical_index) const override {
        return physical_index == 0 ? 3000 * kMiB : 0;
    }
    std::shared_ptr<RawAllocator> create_allocator(int physical_index) override {
        allocator_indices.push_back(physical_index);
        auto allocator = std::make_shared<CountingAllocator>();
        allocators.push_back(allocator);
        return allocator;
    }

    std::vector<int> backend_indices, allocator_indices;
    std::vector<std::shared_ptr<CountingAllocator>> allocators;
    std::vector<FakeGpuBackend*> backends;  // owned by the logical devices
};

// The message of the DeviceConfigError that `fn` throws; fails the test when it throws nothing.
template <typename Fn>
QString config_error(Fn&& fn) {
    try {
        fn();
    } catch (const DeviceConfigError& error) {
        return QString::fromStdString(error.what());
    }
    return QStringLiteral("<no DeviceConfigError thrown>");
}

QString parse_error(const std::string& spec) {
    return config_error([&] { DeviceConfig::parse(spec); });
}

bool same_choice(const DeviceChoice& a, const DeviceChoice& b) {
    return a.type == b.type && a.index == b.index && a.mode == b.mode && a.replicas == b.replicas &&
           a.memory_limits_mb == b.memory_limits_mb;
}

// A small valid model whose embedding table holds `vocabulary` x `width` floats.
Model embedding_model(std::int64_t vocabulary, std::int64_t width, std::int32_t input_length) {
    const std::string text =
        "{\"name\": \"big_embedding\", \"input_length\": " + std::to_string(input_length) +
        ", \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"name\": \"embedding\", \"input_dim\": " +
        std::to_string(vocabulary) + ", \"output_dim\": " + std::to_string(width) +
        "}},"
        "{\"class_name\": \"Flatten\", \"config\": {\"name\": \"flatten\"}},"
        "{\"class_name\": \"Dense\", \"config\": {\"name\": \"dense\", \"units\": 3, "
        "\"activation\": \"softmax\"}}]}";
    return Model::from_json_text(text, "test model");
}

}  // namespace

class TestDevices : public QObject {
    Q_OBJECT

  private slots:
    // ---- DeviceConfig::parse -------------------------------------------------------------
    void parse_single_choices_data();
    void parse_single_choices();
    void parse_two_gpus();
    void parse_cpu0_names_the_cpu();
    void to_spec_round_trips();
    void parse_rejects_bad_specs_data();
    void parse_rejects_bad_specs();

    // ---- validate() against the machine --------------------------------------------------
    void registry_has_the_cpu();
    void validate_accepts_cpu_configurations();
    void validate_rejects_no_devices();
    void validate_rejects_missing_gpu();
    void validate_rejects_limits_above_physical_memory();
    void validate_rejects_tiny_virtual_device();
    void validate_rejects_duplicate_device();
    void validate_rejects_growth_with_limits();
    void validate_rejects_impossible_hand_built_choices();
    void fake_gpu_provider_validates_and_creates_devices();
    void validate_rejects_mixing_cpu_and_gpu();
    void gpu_steps_report_device_times_and_free_memory();
    void cpu_steps_report_wall_clock_times();
    void failure_during_the_update_stops_further_steps();

    // ---- create_logical_devices ----------------------------------------------------------
    void create_cpu_replicas_without_limits();
    void create_cpu_virtual_devices_with_limits();
    void create_validates_first();

    // ---- MemoryArena ---------------------------------------------------------------------
    void arena_bookkeeping_follows_tensor_lifetimes();
    void arena_reuses_freed_blocks();
    void arena_out_of_memory_names_everything();
    void arena_still_works_after_out_of_memory();
    void arena_releases_cache_to_stay_under_limit();
    void arena_unlimited_and_reset_peak();
    void format_bytes_units();

    // ---- Out of memory at the model level ------------------------------------------------
    void model_variables_do_not_fit_16mb();
    void memory_needed_is_what_a_replica_allocates();
    void model_activations_do_not_fit_and_nothing_leaks();
    void reference_model_fits_64mb();

    // ---- The update's deferred decays ----------------------------------------------------------
    void deferred_moment_decays_train_bit_for_bit();
    void deferred_decays_settle_as_the_updates_ran();
};

// ---- DeviceConfig::parse -----------------------------------------------------------------

void TestDevices::parse_single_choices_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("index");
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("replicas");
    QTest::addColumn<QString>("limits");  // "512+512", MiB
    QTest::addColumn<int>("replica_count");
    QTest::addColumn<QString>("canonical");

    const int cpu = static_cast<int>(DeviceType::CPU), gpu = static_cast<int>(DeviceType::GPU);
    const int whole = static_cast<int>(MemoryMode::Whole),
              virt = static_cast<int>(MemoryMode::Virtual),
              growth = static_cast<int>(MemoryMode::Growth);
    QTest::newRow("cpu") << "cpu" << cpu << 0 << whole << 1 << "" << 1 << "cpu";
    QTest::newRow("cpu:2") << "cpu:2" << cpu << 0 << whole << 2 << "" << 2 << "cpu:2";
    QTest::newRow("cpu:2x512MB") << "cpu:2x512MB" << cpu << 0 << virt << 1 << "512+512" << 2
                                 << "cpu:2x512MB";
    QTest::newRow("cpu:0:2x512MB")
        << "cpu:0:2x512MB" << cpu << 0 << virt << 1 << "512+512" << 2 << "cpu:2x512MB";
    QTest::newRow("cpu:0:3") << "cpu:0:3" << cpu << 0 << whole << 3 << "" << 3 << "cpu:3";
    QTest::newRow("CPU:2X1GiB") << "CPU:2X1GiB" << cpu << 0 << virt << 1 << "1024+1024" << 2
                                << "cpu:2x1024MB";
    QTest::newRow("gpu:0") << "gpu:0" << gpu << 0 << whole << 1 << "" << 1 << "gpu:0";
    QTest::newRow("gpu:3") << "gpu:3" << gpu << 3 << whole << 1 << "" << 1 << "gpu:3";
    QTest::newRow("gpu:0:2") << "gpu:0:2" << gpu << 0 << whole << 2 << "" << 2 << "gpu:0:2";
    QTest::newRow("gpu:0:2x1024MB")
        << "gpu:0:2x1024MB" << gpu << 0 << virt << 1 << "1024+1024" << 2 << "gpu:0:2x1024MB";
    QTest::newRow("gpu:0:growth") << "gpu:0:growth" << gpu << 0 << growth << 1 << "" << 1
                                  << "gpu:0:growth";
    QTest::newRow("gpu:0:1024MB+2048MB") << "gpu:0:1024MB+2048MB" << gpu << 0 << virt << 1
                                         << "1024+2048" << 2 << "gpu:0:1024MB+2048MB";
    QTest::newRow("gpu:1:2GB") << "gpu:1:2GB" << gpu << 1 << virt << 1 << "2048" << 1
                               << "gpu:1:1x2048MB";
    QTest::newRow("gpu:0:2x2GB") << "gpu:0:2x2GB" << gpu << 0 << virt << 1 << "2048+2048" << 2
                                 << "gpu:0:2x2048MB";
    QTest::newRow("gpu:0:512MiB+1g")
        << "gpu:0:512MiB+1g" << gpu << 0 << virt << 1 << "512+1024" << 2 << "gpu:0:512MB+1024MB";
    QTest::newRow("spaces") << "  gpu:0 " << gpu << 0 << whole << 1 << "" << 1 << "gpu:0";
}

void TestDevices::parse_single_choices() {
    QFETCH(QString, spec);
    QFETCH(int, type);
    QFETCH(int, index);
    QFETCH(int, mode);
    QFETCH(int, replicas);
    QFETCH(QString, limits);
    QFETCH(int, replica_count);
    QFETCH(QString, canonical);

    const DeviceConfig config = DeviceConfig::parse(spec.toStdString());
    QCOMPARE(config.devices.size(), std::size_t{1});
    const DeviceChoice& choice = config.devices.front();
    QCOMPARE(static_cast<int>(choice.type), type);
    QCOMPARE(choice.index, index);
    QCOMPARE(static_cast<int>(choice.mode), mode);
    if (choice.mode == MemoryMode::Whole) QCOMPARE(choice.replicas, replicas);
    QStringList parsed_limits;
    for (auto mb : choice.memory_limits_mb) parsed_limits << QString::number(mb);
    QCOMPARE(parsed_limits.join('+'), limits);
    QCOMPARE(config.replica_count(), replica_count);
    QCOMPARE(QString::fromStdString(config.to_spec()), canonical);
}

void TestDevices::parse_two_gpus() {
    for (const char* spec : {"gpu:0,gpu:1", "gpu:0, gpu:1", "GPU:0,GPU:1"}) {
        const DeviceConfig config = DeviceConfig::parse(spec);
        QCOMPARE(config.devices.size(), std::size_t{2});
        QCOMPARE(config.devices[0].type, DeviceType::GPU);
        QCOMPARE(config.devices[0].index, 0);
        QCOMPARE(config.devices[1].type, DeviceType::GPU);
        QCOMPARE(config.devices[1].index, 1);
        QCOMPARE(config.devices[1].mode, MemoryMode::Whole);
        QCOMPARE(config.replica_count(), 2);
        QCOMPARE(config.to_spec(), std::string("gpu:0,gpu:1"));
    }
    const DeviceConfig mixed = DeviceConfig::parse("gpu:0:2x1024MB,gpu:1:growth");
    QCOMPARE(mixed.replica_count(), 3);
    QCOMPARE(mixed.to_spec(), std::string("gpu:0:2x1024MB,gpu:1:growth"));
}

void TestDevices::parse_cpu0_names_the_cpu() {
    // parse() says '"cpu:0" names the CPU', and validate() tells people "the CPU is cpu (or
    // cpu:0)" — so "cpu:0" must mean one CPU replica, as "gpu:0" means one GPU.
    bool parsed = false;
    DeviceConfig config;
    QString error;
    try {
        config = DeviceConfig::parse("cpu:0");
        parsed = true;
    } catch (const DeviceConfigError& e) {
        error = QString::fromUtf8(e.what());
    }
    QVERIFY2(parsed, qPrintable(error));
    QCOMPARE(config.replica_count(), 1);
    QCOMPARE(config.devices.front().type, DeviceType::CPU);
}

void TestDevices::to_spec_round_trips() {
    for (const char* spec : {"cpu", "cpu:2", "cpu:2x512MB", "cpu:0:2x512MB", "cpu:growth", "gpu:0",
                             "gpu:0,gpu:1", "gpu:0:2x1024MB", "gpu:0:growth", "gpu:0:1024MB+2048MB",
                             "gpu:0:2x2GB", "gpu:1:4", "gpu:0:256MB+256MB+512MB,gpu:1:3x1GB"}) {
        const DeviceConfig first = DeviceConfig::parse(spec);
        const std::string canonical = first.to_spec();
        const DeviceConfig second = DeviceConfig::parse(canonical);
        QVERIFY2(second.to_spec() == canonical, spec);
        QVERIFY2(first.devices.size() == second.devices.size(), spec);
        for (std::size_t i = 0; i < first.devices.size(); ++i) {
            QVERIFY2(same_choice(first.devices[i], second.devices[i]), spec);
        }
    }
    // A hand-built configuration (what the GUI's form produces) prints in the CLI grammar.
    DeviceConfig config;
    config.devices.push_back({DeviceType::GPU, 0, MemoryMode::Virtual, 1, {1024, 1024}});
    config.devices.push_back({DeviceType::GPU, 2, MemoryMode::Growth, 1, {}});
    QCOMPARE(config.to_spec(), std::string("gpu:0:2x1024MB,gpu:2:growth"));
}

void TestDevices::parse_rejects_bad_specs_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("quoted");  // the part the message must name

    QTest::newRow("empty") << ""
                           << "it is empty";
    QTest::newRow("blank") << "   "
                           << "it is empty";
    QTest::newRow("tpu") << "tpu"
                         << "'tpu' is not a device type";
    QTest::newRow("gpu without index") << "gpu"
                                       << "'gpu' needs an index";
    QTest::newRow("gpu:x") << "gpu:x"
                           << "'x' is not a GPU index";
    QTest::newRow("gpu:-1") << "gpu:-1"
                            << "'-1' is not a GPU index";
    QTest::newRow("cpu:0x512MB") << "cpu:0x512MB"
                                 << "'cpu:0x512MB'";
    // After "2x" only a size can follow: what is wrong with it is said.
    QTest::newRow("cpu:2xMB") << "cpu:2xMB"
                              << "'MB' is not a memory limit: give whole MB or GB";
    QTest::newRow("cpu:2x1KB") << "cpu:2x1KB"
                               << "'1KB' is not a memory limit: give whole MB or GB";
    QTest::newRow("cpu:2x0MB") << "cpu:2x0MB"
                               << "'0MB' is no memory: a limit is at least 1MB";
    QTest::newRow("cpu:2x-5MB") << "cpu:2x-5MB"
                                << "'-5MB' is no memory";
    QTest::newRow("cpu:3x") << "cpu:3x"
                            << "a memory limit must follow the 'x', e.g. 2x512MB";
    QTest::newRow("cpu:2x512MB:extra") << "cpu:2x512MB:extra"
                                       << "'cpu:2x512MB:extra' has too many ':' parts";
    QTest::newRow("cpu:99") << "cpu:99"
                            << "between 1 and 64";
    QTest::newRow("cpu:65x16MB") << "cpu:65x16MB"
                                 << "between 1 and 64";
    QTest::newRow("gpu:0:lots") << "gpu:0:lots"
                                << "'lots' is neither a replica count";
    QTest::newRow("gpu:0:512MB+") << "gpu:0:512MB+"
                                  << "'' is neither a replica count";
    QTest::newRow("trailing comma") << "cpu,"
                                    << "'' is not a device type";
}

void TestDevices::parse_rejects_bad_specs() {
    QFETCH(QString, spec);
    QFETCH(QString, quoted);
    const QString message = parse_error(spec.toStdString());
    QVERIFY2(message.contains(quoted), qPrintable(message));
    // Every message quotes the whole spec and shows the grammar by example.
    QVERIFY2(message.contains("device spec '" + spec + "'"), qPrintable(message));
    QVERIFY2(message.contains("Examples:"), qPrintable(message));
    QVERIFY2(message.contains("cpu:2x512MB") && message.contains("gpu:0:2x1024MB"),
             qPrintable(message));
}

// ---- validate() --------------------------------------------------------------------------

void TestDevices::registry_has_the_cpu() {
    const DeviceRegistry registry;
    const auto devices = registry.physical_devices();
    QCOMPARE(devices.size(), std::size_t{1});
    QCOMPARE(devices[0].type, DeviceType::CPU);
    QCOMPARE(devices[0].id(), std::string("CPU:0"));
    QVERIFY(devices[0].total_memory_bytes > 0);
    QVERIFY(devices[0].cores >= 1);
    QVERIFY(!devices[0].name.empty());
    QVERIFY(registry.find(DeviceType::CPU, 0) != nullptr);
    QVERIFY(registry.find(DeviceType::CPU, 1) == nullptr);
    QVERIFY(registry.find(DeviceType::GPU, 0) == nullptr);
    QVERIFY(registry.provider(DeviceType::GPU) == nullptr);
    QCOMPARE(registry.gpu_status(), std::string("no GPU backend loaded"));
    QCOMPARE(DeviceConfig::default_for(registry).to_spec(), std::string("cpu"));
}

void TestDevices::validate_accepts_cpu_configurations() {
    const DeviceRegistry registry;
    for (const char* spec :
         {"cpu", "cpu:2", "cpu:4", "cpu:2x512MB", "cpu:0:2x16MB", "cpu:growth", "cpu:64"}) {
        try {
            DeviceConfig::parse(spec).validate(registry);
        } catch (const DeviceConfigError& error) {
            QFAIL(qPrintable(QString("%1: %2").arg(spec, error.what())));
        }
    }
}

void TestDevices::validate_rejects_no_devices() {
    const DeviceRegistry registry;
    const QString message = config_error([&] { DeviceConfig{}.validate(registry); });
    QVERIFY2(message.contains("no device is selected"), qPrintable(message));
    QVERIFY2(message.contains("CPU or GPU"), qPrintable(message));
}

void TestDevices::validate_rejects_missing_gpu() {
    const DeviceRegistry registry;
    for (const char* spec : {"gpu:0", "gpu:0:2x1024MB", "gpu:1"}) {
        const QString message = config_error([&] { DeviceConfig::parse(spec).validate(registry); });
        QVERIFY2(message.contains("does not exist"), qPrintable(message));
        QVERIFY2(message.contains("this machine has 0 GPUs"), qPrintable(message));
        QVERIFY2(message.contains("no GPU backend loaded"),
                 qPrintable(message));  // why there are none
        QVERIFY2(message.contains("--devices cpu"), qPrintable(message));
    }
}

void TestDevices::validate_rejects_limits_above_physical_memory() {
    const DeviceRegistry registry;
    const PhysicalDevice* cpu = registry.find(DeviceType::CPU, 0);
    QVERIFY(cpu != nullptr);
    const std::int64_t total_mb = cpu->total_memory_bytes / kMiB;
    const std::int64_t each_mb =
        total_mb / 2 + 1;  // two of them are just over the machine's memory
    const std::string spec = "cpu:2x" + std::to_string(each_mb) + "MB";
    const QString message = config_error([&] { DeviceConfig::parse(spec).validate(registry); });
    QVERIFY2(message.contains(QString("ask for %1 MB in all").arg(2 * each_mb)),
             qPrintable(message));
    QVERIFY2(message.contains(QString("has only %1 MB").arg(total_mb)), qPrintable(message));
    QVERIFY2(message.contains(QString::fromStdString(cpu->name)), qPrintable(message));
    QVERIFY2(message.contains("lower the limits"), qPrintable(message));

    // Exactly the machine's memory in all is allowed.
    const std::string fits = "cpu:1x" + std::to_string(total_mb) + "MB";
    DeviceConfig::parse(fits).validate(registry);
}

void TestDevices::validate_rejects_tiny_virtual_device() {
    const DeviceRegistry registry;
    DeviceConfig::parse("cpu:2x16MB").validate(registry);  // the smallest allowed
    for (const char* spec : {"cpu:2x15MB", "cpu:512MB+8MB"}) {
        const QString message = config_error([&] { DeviceConfig::parse(spec).validate(registry); });
        QVERIFY2(message.contains("too small"), qPrintable(message));
        QVERIFY2(message.contains("at least 16 MB"), qPrintable(message));
    }
}

void TestDevices::validate_rejects_duplicate_device() {
    const DeviceRegistry registry;
    for (const char* spec : {"cpu,cpu", "cpu:2,cpu:0:2x512MB"}) {
        const QString message = config_error([&] { DeviceConfig::parse(spec).validate(registry); });
        QVERIFY2(message.contains("CPU:0 is listed twice"), qPrintable(message));
        QVERIFY2(message.contains("cpu:2"),
                 qPrintable(message));  // how to ask for several replicas
    }
}

void TestDevices::validate_rejects_growth_with_limits() {
    const DeviceRegistry registry;
    DeviceConfig config;
    config.devices.push_back({DeviceType::CPU, 0, MemoryMode::Growth, 1, {512, 512}});
    const QString message = config_error([&] { config.validate(registry); });
    QVERIFY2(message.contains("memory growth cannot be combined with virtual devices"),
             qPrintable(message));
}

void TestDevices::validate_rejects_impossible_hand_built_choices() {
    const DeviceRegistry registry;
    struct Case {
        DeviceChoice choice;
        const char* expected;
    };
    const Case cases[] = {
        {{DeviceType::Invalid, 0, MemoryMode::Whole, 1, {}}, "no type"},
        {{DeviceType::CPU, 0, MemoryMode::Invalid, 1, {}}, "no memory mode"},
        {{DeviceType::CPU, 0, MemoryMode::Whole, 0, {}}, "0 replicas"},
        {{DeviceType::CPU, 0, MemoryMode::Whole, 65, {}}, "between 1 and 64"},
        {{DeviceType::CPU, 0, MemoryMode::Virtual, 1, {}}, "0 virtual devices"},
        {{DeviceType::CPU, 0, MemoryMode::Virtual, 1, std::vector<std::int64_t>(65, 16)},
         "at most 64 virtual devices"},
        {{DeviceType::CPU, 1, MemoryMode::Whole, 1, {}}, "CPU:1 does not exist"},
    };
    for (const Case& c : cases) {
        DeviceConfig config;
        config.devices.push_back(c.choice);
        const QString message = config_error([&] { config.validate(registry); });
        QVERIFY2(message.contains(c.expected), qPrintable(message));
        QVERIFY2(message.startsWith("device configuration: "), qPrintable(message));
    }
}

void TestDevices::fake_gpu_provider_validates_and_creates_devices() {
    DeviceRegistry registry;
    auto provider = std::make_shared<FakeGpuProvider>();
    registry.add_provider(provider);
    QCOMPARE(registry.gpu_status(), std::string("fake provider, 1 GPU"));
    QCOMPARE(registry.physical_devices().size(), std::size_t{2});
    QCOMPARE(registry.provider(DeviceType::GPU), provider.get());
    const PhysicalDevice* gpu = registry.find(DeviceType::GPU, 0);
    QVERIFY(gpu != nullptr);
    QCOMPARE(gpu->name, std::string("Fake GPU"));
    QVERIFY(registry.find(DeviceType::GPU, 1) == nullptr);
    QCOMPARE(DeviceConfig::default_for(registry).to_spec(), std::string("gpu:0"));

    const DeviceConfig config = DeviceConfig::parse("gpu:0:2x1024MB");
    config.validate(registry);
    const auto devices = create_logical_devices(config, registry);
    QCOMPARE(devices.size(), std::size_t{2});
    for (int i = 0; i < 2; ++i) {
        const LogicalDevice& device = *devices[static_cast<std::size_t>(i)];
        QCOMPARE(device.name(), "/device:GPU:" + std::to_string(i));
        QCOMPARE(device.memory_limit_bytes(), 1024 * kMiB);
        QCOMPARE(device.arena().stats().limit_bytes, 1024 * kMiB);
        QCOMPARE(device.arena().device_name(), device.name());
        QCOMPARE(device.physical().type, DeviceType::GPU);
        QCOMPARE(device.physical().name, std::string("Fake GPU"));
    }
    QCOMPARE(provider->backend_indices, (std::vector<int>{0, 0}));
    QCOMPARE(provider->allocator_indices, (std::vector<int>{0, 0}));
    QCOMPARE(devices[1]->backend().name(), std::string_view("cpu-reference"));

    // The arena of a provider's device draws from the provider's allocator.
    {
        Tensor t(devices[1]->arena(), DType::F32, Shape{1000}, "a test tensor");
        QCOMPARE(provider->allocators[1]->allocations, 1);
        QCOMPARE(provider->allocators[0]->allocations, 0);
    }
    QCOMPARE(provider->allocators[1]->frees, 0);  // cached for reuse, not returned yet

    // The virtual devices together may not exceed the fake GPU's 4 GiB.
    const QString message =
        config_error([&] { DeviceConfig::parse("gpu:0:3x2GB").validate(registry); });
    QVERIFY2(message.contains("6144 MB in all") && message.contains("Fake GPU has only 4096 MB"),
             qPrintable(message));
    const QString twice =
        config_error([&] { DeviceConfig::parse("gpu:0,gpu:0:growth").validate(registry); });
    QVERIFY2(twice.contains("GPU:0 is listed twice") && twice.contains("gpu:0:2x1024MB"),
             qPrintable(twice));
    const QString missing =
        config_error([&] { DeviceConfig::parse("gpu:0,gpu:1").validate(registry); });
    QVERIFY2(missing.contains("GPU:1 does not exist: this machine has 1 GPU ("),
             qPrintable(missing));
}

void TestDevices::gpu_steps_report_device_times_and_free_memory() {
    // What the CUDA backend feeds the step view and the memory panel, through the same paths: a
    // backend with a device clock times the phases (not the host's wall clock around them), the
    // provider's free memory reaches every logical device's row, and each backend got its own
    // device's arena for scratch.
    DeviceRegistry registry;
    auto provider = std::make_shared<FakeGpuProvider>();
    registry.add_provider(provider);
    std::vector<std::string> log;
    MirroredStrategy strategy(create_logical_devices(DeviceConfig::parse("gpu:0:2x1024MB"), registry),
                              AllReduceAlgorithm::Auto, [&](LogLevel, const std::string& line) { log.push_back(line); });
    QCOMPARE(provider->backends.size(), std::size_t{2});
    for (int r = 0; r < 2; ++r) {
        QCOMPARE(provider->backends[static_cast<std::size_t>(r)]->attached_arena, &strategy.device(r).arena());
    }
    // Two virtual devices of one GPU: NCCL cannot run, and the log says so as TensorFlow does.
    QCOMPARE(strategy.all_reduce_algorithm(), AllReduceAlgorithm::ReduceToOneDevice);
    QVERIFY(std::find(log.begin(), log.end(),
                      "NCCL is not supported when using virtual GPUs, falling back to reduction to one device") != log.end());

    const Model model = embedding_model(50, 4, 6);
    strategy.build(model, 8, OptimizerConfig::defaults(OptimizerKind::Adam), initial_weights(model, 3));
    std::vector<std::int32_t> ids(8 * 6), labels(8);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i % 50);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 3);
    const TrainStepResult& result = strategy.train_step(ids.data(), labels.data(), 8, 1);
    QVERIFY(result.finite);
    for (const PhaseTimings& phase : result.replicas) {
        QVERIFY(phase.device_timed);
        QCOMPARE(phase.forward_ms, FakeGpuBackend::kForwardMs);
        QCOMPARE(phase.backward_ms, FakeGpuBackend::kBackwardMs);
        QCOMPARE(phase.allreduce_ms, FakeGpuBackend::kAllReduceMs);
        QCOMPARE(phase.update_ms, FakeGpuBackend::kUpdateMs);
    }
    for (const DeviceMemory& memory : strategy.memory()) {
        QCOMPARE(memory.physical_free_bytes, 3000 * kMiB);
        QCOMPARE(memory.limit_bytes, 1024 * kMiB);
        QVERIFY(memory.bytes_in_use > 0);
    }
}

void TestDevices::failure_during_the_update_stops_further_steps() {
    // Replica 1's device faults while applying the update; replica 0 may update anyway. The mirrored
    // copies (variables and optimizer slots) now differ and none is known to be right, so the
    // strategy refuses every further step with a message that says what to do.
    DeviceRegistry registry;
    auto provider = std::make_shared<FakeGpuProvider>();
    registry.add_provider(provider);
    MirroredStrategy strategy(create_logical_devices(DeviceConfig::parse("gpu:0:2x1024MB"), registry),
                              AllReduceAlgorithm::Auto, [](LogLevel, const std::string&) {});
    const Model model = embedding_model(50, 4, 6);
    const std::vector<float> weights = initial_weights(model, 3);
    strategy.build(model, 8, OptimizerConfig::defaults(OptimizerKind::Adam), weights);
    std::vector<std::int32_t> ids(8 * 6, 1), labels(8, 2);
    provider->backends[1]->fail_update = true;
    QVERIFY_THROWS_EXCEPTION(OpError, strategy.train_step(ids.data(), labels.data(), 8, 1));
    // Replica 0 has usually updated by now (unless the abort reached it first): the copies may differ.
    provider->backends[1]->fail_update = false;
    for (int attempt = 0; attempt < 2; ++attempt) {  // also after setting the weights again
        try {
            strategy.train_step(ids.data(), labels.data(), 8, 2);
            QFAIL("a step ran on replicas that may differ");
        } catch (const OpError& error) {
            QVERIFY2(QString(error.what()).contains("start a new run"), error.what());
        }
        strategy.set_weights(weights);
    }
}

void TestDevices::cpu_steps_report_wall_clock_times() {
    // The CPU has no clock of its own: phases are host wall-clock times, and no free-memory figure
    // is invented for it.
    DeviceRegistry registry;
    MirroredStrategy strategy(create_logical_devices(DeviceConfig::parse("cpu:2"), registry), AllReduceAlgorithm::Auto,
                              [](LogLevel, const std::string&) {});
    const Model model = embedding_model(50, 4, 6);
    strategy.build(model, 8, OptimizerConfig::defaults(OptimizerKind::Adam), initial_weights(model, 3));
    std::vector<std::int32_t> ids(8 * 6, 1), labels(8, 2);
    const TrainStepResult& result = strategy.train_step(ids.data(), labels.data(), 8, 1);
    QVERIFY(result.finite);
    for (const PhaseTimings& phase : result.replicas) {
        QVERIFY(!phase.device_timed);
        QVERIFY(phase.forward_ms > 0 && phase.backward_ms > 0 && phase.update_ms > 0);
    }
    for (const DeviceMemory& memory : strategy.memory()) QCOMPARE(memory.physical_free_bytes, std::int64_t{0});
}

void TestDevices::validate_rejects_mixing_cpu_and_gpu() {
    DeviceRegistry registry;
    registry.add_provider(std::make_shared<FakeGpuProvider>());
    for (const char* spec : {"cpu,gpu:0", "gpu:0:2x1024MB,cpu:2"}) {
        const QString message = config_error([&] { DeviceConfig::parse(spec).validate(registry); });
        QVERIFY2(message.contains("mixing CPU and GPU replicas is not supported"),
                 qPrintable(message));
        QVERIFY2(message.contains("GPUs alone") && message.contains("CPU alone"),
                 qPrintable(message));
    }
}

// ---- create_logical_devices --------------------------------------------------------------

void TestDevices::create_cpu_replicas_without_limits() {
    DeviceRegistry registry;
    const auto devices = create_logical_devices(DeviceConfig::parse("cpu:3"), registry);
    QCOMPARE(devices.size(), std::size_t{3});
    for (int i = 0; i < 3; ++i) {
        const LogicalDevice& device = *devices[static_cast<std::size_t>(i)];
        QCOMPARE(device.name(), "/device:CPU:" + std::to_string(i));
        QCOMPARE(device.memory_limit_bytes(), std::int64_t{0});
        QCOMPARE(device.physical().type, DeviceType::CPU);
        QCOMPARE(device.arena().stats().bytes_in_use, std::int64_t{0});
    }
    // Each replica has its own arena and backend.
    QVERIFY(&devices[0]->arena() != &devices[1]->arena());
    QVERIFY(&devices[0]->backend() != &devices[1]->backend());

    const auto one = create_logical_devices(DeviceConfig::parse("cpu"), registry);
    QCOMPARE(one.size(), std::size_t{1});
    QCOMPARE(one[0]->name(), std::string("/device:CPU:0"));
    const auto growth = create_logical_devices(DeviceConfig::parse("cpu:growth"), registry);
    QCOMPARE(growth.size(), std::size_t{1});
    QCOMPARE(growth[0]->memory_limit_bytes(), std::int64_t{0});
}

void TestDevices::create_cpu_virtual_devices_with_limits() {
    DeviceRegistry registry;
    const auto devices = create_logical_devices(DeviceConfig::parse("cpu:2x512MB"), registry);
    QCOMPARE(devices.size(), std::size_t{2});
    QCOMPARE(devices[0]->name(), std::string("/device:CPU:0"));
    QCOMPARE(devices[1]->name(), std::string("/device:CPU:1"));
    for (const auto& device : devices) {
        QCOMPARE(device->memory_limit_bytes(), 512 * kMiB);
        QCOMPARE(device->arena().stats().limit_bytes, 512 * kMiB);
    }
    const auto uneven = create_logical_devices(DeviceConfig::parse("cpu:256MB+128MB"), registry);
    QCOMPARE(uneven.size(), std::size_t{2});
    QCOMPARE(uneven[0]->memory_limit_bytes(), 256 * kMiB);
    QCOMPARE(uneven[1]->memory_limit_bytes(), 128 * kMiB);
}

void TestDevices::create_validates_first() {
    DeviceRegistry registry;
    const QString message =
        config_error([&] { create_logical_devices(DeviceConfig::parse("gpu:0"), registry); });
    QVERIFY2(message.contains("this machine has 0 GPUs"), qPrintable(message));
    const QString tiny =
        config_error([&] { create_logical_devices(DeviceConfig::parse("cpu:2x8MB"), registry); });
    QVERIFY2(tiny.contains("too small"), qPrintable(tiny));
}

// ---- MemoryArena -------------------------------------------------------------------------

void TestDevices::arena_bookkeeping_follows_tensor_lifetimes() {
    MemoryArena arena("/device:CPU:0", 1 * kMiB);
    QCOMPARE(arena.stats().limit_bytes, 1 * kMiB);
    QCOMPARE(arena.stats().bytes_in_use, std::int64_t{0});
    QCOMPARE(MemoryArena::rounded_size(400), std::int64_t{448});
    QCOMPARE(MemoryArena::rounded_size(64), std::int64_t{64});
    QCOMPARE(MemoryArena::rounded_size(0), std::int64_t{64});
    {
        Tensor a(arena, DType::F32, Shape{100}, "a");  // 400 bytes -> 448
        QCOMPARE(a.bytes(), std::int64_t{400});
        QVERIFY(!a.empty());
        QVERIFY(reinterpret_cast<std::uintptr_t>(a.f32()) % 64 == 0);
        QCOMPARE(arena.stats().bytes_in_use, std::int64_t{448});
        QCOMPARE(arena.stats().allocation_count, std::int64_t{1});
        {
            Tensor b(arena, DType::I32, Shape{4, 64}, "b");  // 1024 bytes
            QCOMPARE(arena.stats().bytes_in_use, std::int64_t{448 + 1024});
            QCOMPARE(arena.stats().peak_bytes_in_use, std::int64_t{448 + 1024});
            QCOMPARE(arena.stats().allocation_count, std::int64_t{2});
        }
        QCOMPARE(arena.stats().bytes_in_use, std::int64_t{448});
        QCOMPARE(arena.stats().peak_bytes_in_use, std::int64_t{448 + 1024});
        QCOMPARE(arena.stats().bytes_reserved, std::int64_t{448 + 1024});  // b's block is cached

        // Moving a tensor moves ownership, not memory.
        Tensor moved = std::move(a);
        QVERIFY(a.empty());
        QCOMPARE(arena.stats().allocation_count, std::int64_t{1});
        Tensor assigned(arena, DType::F32, Shape{16}, "c");
        assigned = std::move(moved);  // frees c's block
        QCOMPARE(arena.stats().allocation_count, std::int64_t{1});
        QCOMPARE(arena.stats().bytes_in_use, std::int64_t{448});
    }
    const MemoryStats stats = arena.stats();
    QCOMPARE(stats.bytes_in_use, std::int64_t{0});
    QCOMPARE(stats.allocation_count, std::int64_t{0});
    QCOMPARE(stats.peak_bytes_in_use, std::int64_t{448 + 1024});
    QCOMPARE(stats.limit_bytes, 1 * kMiB);
}

void TestDevices::arena_reuses_freed_blocks() {
    MemoryArena arena("/device:CPU:1", 0);
    const std::vector<Shape> step_shapes = {Shape{32, 300}, Shape{32, 296, 64}, Shape{46},
                                            Shape{7, 3}, Shape{7, 3}};
    auto one_step = [&] {
        std::vector<Tensor> tensors;
        for (const Shape& shape : step_shapes)
            tensors.emplace_back(arena, DType::F32, shape, "activations");
        return arena.stats();
    };
    const MemoryStats first = one_step();
    QCOMPARE(first.raw_allocation_calls, std::int64_t{5});
    const std::int64_t reserved = arena.stats().bytes_reserved;
    for (int step = 0; step < 10; ++step) {
        const MemoryStats during = one_step();
        QCOMPARE(during.raw_allocation_calls,
                 first.raw_allocation_calls);  // a steady step asks the system for nothing
        QCOMPARE(during.bytes_in_use, first.bytes_in_use);
    }
    QCOMPARE(arena.stats().bytes_reserved, reserved);
    QCOMPARE(arena.stats().bytes_in_use, std::int64_t{0});

    // Another shape needs a new block; the cache does not hand out a block of the wrong size.
    { Tensor other(arena, DType::F32, Shape{33, 300}, "bigger"); }
    QCOMPARE(arena.stats().raw_allocation_calls, std::int64_t{6});
}

void TestDevices::arena_out_of_memory_names_everything() {
    MemoryArena arena("/device:GPU:1", 1 * kMiB);
    Tensor held(arena, DType::F32, Shape{64 * 1024}, "held");  // 256 KiB
    try {
        Tensor too_big(arena, DType::F32, Shape{256 * 1024},
                       "the output of layer 'conv1d'");  // 1 MiB
        QFAIL("no OutOfMemoryError");
    } catch (const OutOfMemoryError& error) {
        const QString message = QString::fromUtf8(error.what());
        QVERIFY2(message.contains("out of memory on /device:GPU:1"), qPrintable(message));
        QVERIFY2(message.contains("allocating 1.0 MiB"), qPrintable(message));
        QVERIFY2(message.contains("for the output of layer 'conv1d'"), qPrintable(message));
        QVERIFY2(message.contains("limit of 1.0 MiB"), qPrintable(message));
        QVERIFY2(message.contains("256.0 KiB already in use"), qPrintable(message));
        QVERIFY2(
            message.contains("Raise the memory limit") && message.contains("lower the batch size"),
            qPrintable(message));
    }
    // OutOfMemoryError is an engine Error, so callers that catch Error report it too.
    QVERIFY_THROWS_EXCEPTION(Error, Tensor(arena, DType::F32, Shape{1 << 20}, "x"));
}

void TestDevices::arena_still_works_after_out_of_memory() {
    MemoryArena arena("/device:CPU:0", 1 * kMiB);
    Tensor held(arena, DType::F32, Shape{100 * 1024}, "held");  // 400 KiB
    { Tensor cached(arena, DType::F32, Shape{1000}, "cached"); }
    const MemoryStats before = arena.stats();
    QVERIFY_THROWS_EXCEPTION(OutOfMemoryError,
                             Tensor(arena, DType::F32, Shape{200 * 1024}, "too much"));
    const MemoryStats after = arena.stats();
    QCOMPARE(after.bytes_in_use, before.bytes_in_use);
    QCOMPARE(after.peak_bytes_in_use, before.peak_bytes_in_use);
    QCOMPARE(after.bytes_reserved, before.bytes_reserved);
    QCOMPARE(after.allocation_count, before.allocation_count);
    QCOMPARE(after.raw_allocation_calls, before.raw_allocation_calls);

    Tensor small(arena, DType::F32, Shape{1000}, "small");
    small.f32()[999] = 1.0f;
    QCOMPARE(arena.stats().allocation_count, before.allocation_count + 1);
    QCOMPARE(arena.stats().raw_allocation_calls, before.raw_allocation_calls);  // the cached block
    // Up to the limit exactly still fits.
    const std::int64_t left = 1 * kMiB - arena.stats().bytes_in_use;
    Tensor rest(arena, DType::F32, Shape{left / 4}, "the rest");
    QCOMPARE(arena.stats().bytes_in_use, 1 * kMiB);
    // ... and not one byte more.
    QVERIFY_THROWS_EXCEPTION(OutOfMemoryError,
                             Tensor(arena, DType::F32, Shape{1}, "one more float"));
    QCOMPARE(arena.stats().bytes_in_use, 1 * kMiB);
}

void TestDevices::arena_releases_cache_to_stay_under_limit() {
    auto counting = std::make_shared<CountingAllocator>();
    MemoryArena arena("/device:CPU:0", 1 * kMiB, counting);
    { Tensor a(arena, DType::F32, Shape{150 * 1024}, "a"); }  // 600 KiB, then cached
    QCOMPARE(arena.stats().bytes_reserved, std::int64_t{600 * 1024});
    // 700 KiB fits the limit only if the cached 600 KiB block is given back first.
    Tensor b(arena, DType::F32, Shape{175 * 1024}, "b");
    const MemoryStats stats = arena.stats();
    QCOMPARE(stats.bytes_in_use, std::int64_t{700 * 1024});
    QCOMPARE(stats.bytes_reserved, std::int64_t{700 * 1024});
    QVERIFY(stats.bytes_reserved <= stats.limit_bytes);
    QCOMPARE(counting->allocations, 2);
    QCOMPARE(counting->frees, 1);
}

void TestDevices::arena_unlimited_and_reset_peak() {
    auto counting = std::make_shared<CountingAllocator>();
    {
        MemoryArena arena("/device:CPU:0", 0, counting);
        { Tensor big(arena, DType::F32, Shape{4 * 1024 * 1024}, "16 MiB"); }
        QCOMPARE(arena.stats().peak_bytes_in_use, 16 * kMiB);
        Tensor small(arena, DType::F32, Shape{16}, "small");
        arena.reset_peak();
        QCOMPARE(arena.stats().peak_bytes_in_use, std::int64_t{64});
        QCOMPARE(arena.stats().limit_bytes, std::int64_t{0});
    }
    // The arena gives every block back when it goes.
    QCOMPARE(counting->frees, counting->allocations);
}

void TestDevices::format_bytes_units() {
    QCOMPARE(format_bytes(0), std::string("0 B"));
    QCOMPARE(format_bytes(17), std::string("17 B"));
    QCOMPARE(format_bytes(1023), std::string("1023 B"));
    QCOMPARE(format_bytes(1024), std::string("1.0 KiB"));
    QCOMPARE(format_bytes(12595), std::string("12.3 KiB"));
    QCOMPARE(format_bytes(1024 * 1024), std::string("1.0 MiB"));
    QCOMPARE(format_bytes(512 * kMiB), std::string("512.0 MiB"));
    QCOMPARE(format_bytes(1024 * kMiB), std::string("1.00 GiB"));
    QCOMPARE(format_bytes(2560 * kMiB), std::string("2.50 GiB"));
    QCOMPARE(format_bytes(141 * 1024 * kMiB), std::string("141.00 GiB"));
}

// ---- Out of memory at the model level ----------------------------------------------------

void TestDevices::model_variables_do_not_fit_16mb() {
    DeviceRegistry registry;
    auto devices = create_logical_devices(DeviceConfig::parse("cpu:1x16MB"), registry);
    const Model model = embedding_model(2'000'000, 8, 4);  // 16 M floats = 61 MiB of weights alone
    try {
        ModelReplica replica(model, *devices[0], 4, UpdateLayout{2});
        QFAIL("no OutOfMemoryError");
    } catch (const OutOfMemoryError& error) {
        const QString message = QString::fromUtf8(error.what());
        QVERIFY2(message.contains("/device:CPU:0"), qPrintable(message));
        QVERIFY2(message.contains("the model's variables"), qPrintable(message));
        QVERIFY2(message.contains(QString::fromStdString(format_thousands(model.total_params()))),
                 qPrintable(message));
        QVERIFY2(message.contains("limit of 16.0 MiB"), qPrintable(message));
    }
    QCOMPARE(devices[0]->arena().stats().bytes_in_use, std::int64_t{0});

    // Through the strategy, the same error reaches whoever builds it.
    MirroredStrategy strategy(create_logical_devices(DeviceConfig::parse("cpu:2x16MB"), registry),
                              AllReduceAlgorithm::Auto, [](LogLevel, const std::string&) {});
    QVERIFY_THROWS_EXCEPTION(
        OutOfMemoryError,
        strategy.build(model, 8, OptimizerConfig::defaults(OptimizerKind::Nadam),
                       std::vector<float>(static_cast<std::size_t>(model.total_params()), 0.0f)));
}

// The check before allocation and the allocation itself must agree, byte for byte, or a model is
// refused that fits (or accepted and then fails half-built).
void TestDevices::memory_needed_is_what_a_replica_allocates() {
    DeviceRegistry registry;
    auto devices = create_logical_devices(DeviceConfig::parse("cpu"), registry);
    const Model with_dropout = Model::from_json_text(
        "{\"input_length\": 40, \"layers\": [{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 500, \"output_dim\": 6}},"
        "{\"class_name\": \"Dropout\", \"config\": {\"rate\": 0.2}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 8, \"kernel_size\": 3, \"padding\": \"same\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\"}, {\"class_name\": \"Dense\", \"config\": {\"units\": 5, \"activation\": \"softmax\"}}]}",
        "dropout model");
    // The layouts of no optimizer state, SGD with momentum, Adam, and the tutorial's Nadam with
    // its Embedding statistics and deferred decays.
    const UpdateLayout tf2_nadam = OptimizerSchedule(OptimizerConfig::defaults(OptimizerKind::Nadam)).update_layout();
    QVERIFY(tf2_nadam.embedding_moment_decays);
    for (const Model& model : {Model::reference(), embedding_model(100, 8, 2000), with_dropout}) {
        for (const UpdateLayout& layout : {UpdateLayout{0}, UpdateLayout{1}, UpdateLayout{2}, tf2_nadam}) {
            const int slot_count = layout.optimizer_slots;
            for (const std::int32_t batch : {1, 16}) {
                const ReplicaMemory need = ModelReplica::memory_needed(model, batch, layout);
                ModelReplica replica(model, *devices[0], batch, layout);
                QCOMPARE(devices[0]->arena().stats().bytes_in_use, need.total());
                QVERIFY(need.state_bytes >= model.total_params() * 4 * (2 + slot_count));
            }
        }
    }
}

void TestDevices::model_activations_do_not_fit_and_nothing_leaks() {
    DeviceRegistry registry;
    auto devices = create_logical_devices(DeviceConfig::parse("cpu:1x16MB"), registry);
    // Tiny weights, but [512, 2000, 8] floats of embedding output is 31 MiB.
    const Model model = embedding_model(100, 8, 2000);
    try {
        ModelReplica replica(model, *devices[0], 512, UpdateLayout{2});
        QFAIL("no OutOfMemoryError");
    } catch (const OutOfMemoryError& error) {
        const QString message = QString::fromUtf8(error.what());
        QVERIFY2(message.contains("/device:CPU:0"), qPrintable(message));
        QVERIFY2(message.contains("layer 'embedding'"), qPrintable(message));
    }
    // Whatever the replica had allocated before it failed is freed again.
    QCOMPARE(devices[0]->arena().stats().bytes_in_use, std::int64_t{0});
    QCOMPARE(devices[0]->arena().stats().allocation_count, std::int64_t{0});
    // A smaller batch fits the same device.
    ModelReplica replica(model, *devices[0], 16, UpdateLayout{2});
    QVERIFY(devices[0]->arena().stats().bytes_in_use > 0);
}

void TestDevices::reference_model_fits_64mb() {
    DeviceRegistry registry;
    const Model model = Model::reference();
    QCOMPARE(model.total_params(), std::int64_t{332856});
    MirroredStrategy strategy(create_logical_devices(DeviceConfig::parse("cpu:1x64MB"), registry),
                              AllReduceAlgorithm::Auto, [](LogLevel, const std::string&) {});
    const std::int32_t batch = 16;
    strategy.build(model, batch, OptimizerConfig::defaults(OptimizerKind::Nadam),
                   initial_weights(model, 7));

    std::mt19937 rng(42);
    std::uniform_int_distribution<std::int32_t> id(
        0, static_cast<std::int32_t>(model.vocabulary_size()) - 1);
    std::uniform_int_distribution<std::int32_t> label(0, model.num_classes() - 1);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(batch) *
                                  static_cast<std::size_t>(model.input_length()));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    for (auto& v : ids) v = id(rng);
    for (auto& v : labels) v = label(rng);
    const TrainStepResult result = strategy.train_step(ids.data(), labels.data(), batch, 1);
    QVERIFY(result.finite);
    QCOMPARE(result.counts.samples, std::int64_t{batch});

    const auto memory = strategy.memory();
    QCOMPARE(memory.size(), std::size_t{1});
    QCOMPARE(memory[0].device, std::string("/device:CPU:0"));
    QCOMPARE(memory[0].limit_bytes, 64 * kMiB);
    // Weights, gradients and two Nadam slots are at least 4 x 332,856 floats.
    QVERIFY(memory[0].bytes_in_use >= 4 * 4 * model.total_params());
    QVERIFY(memory[0].peak_bytes >= memory[0].bytes_in_use);
    QVERIFY(memory[0].peak_bytes <= memory[0].limit_bytes);
    qInfo("reference model, batch %d on %s: %s in use, peak %s of %s", batch,
          memory[0].device.c_str(), format_bytes(memory[0].bytes_in_use).c_str(),
          format_bytes(memory[0].peak_bytes).c_str(), format_bytes(memory[0].limit_bytes).c_str());
}

// ---- The update's deferred decays ------------------------------------------------------------

// The tutorial's model and Nadam trained twice side by side, once decaying every Embedding row's
// moments at every step and once deferring the decays of rows outside the batch until their next
// batch (a CPU device's default): the weights after every step and the optimizer's slots (which
// pay what is owed, here every few steps as checkpoints would) are the same bits. Word ids follow
// a word-frequency law, so that frequent rows owe little and rare ones many decays.
void TestDevices::deferred_moment_decays_train_bit_for_bit() {
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    DeviceRegistry registry;
    auto devices = create_logical_devices(DeviceConfig::parse("cpu:2"), registry);
    const Model model = Model::reference();
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    UpdateLayout every_step = schedule.update_layout();
    QVERIFY(every_step.embedding_moment_decays);
    every_step.embedding_moment_decays = false;
    const std::int32_t batch = 8;
    ModelReplica eager(model, *devices[0], batch, every_step);
    ModelReplica deferred(model, *devices[1], batch, schedule.update_layout());
    QVERIFY(devices[1]->backend().defers_moment_decays());
    const std::vector<float> weights = initial_weights(model, 7);
    eager.set_weights(weights);
    deferred.set_weights(weights);
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const double vocabulary = static_cast<double>(model.vocabulary_size());
    std::vector<std::int32_t> ids(static_cast<std::size_t>(batch * model.input_length()));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    for (int step = 0; step < 12; ++step) {
        for (auto& id : ids) id = static_cast<std::int32_t>(std::exp(uniform(rng) * std::log(vocabulary))) - 1;
        for (auto& label : labels) label = std::uniform_int_distribution<std::int32_t>(0, model.num_classes() - 1)(rng);
        eager.forward_backward(ids.data(), labels.data(), batch, batch, 0, nullptr);
        deferred.forward_backward(ids.data(), labels.data(), batch, batch, 0, nullptr);
        const OptimizerStep update = schedule.next_step();
        eager.apply_update(update);
        deferred.apply_update(update);
        QVERIFY2(same_bits(eager.weights(), deferred.weights()),
                 qPrintable(QString("weights differ after step %1").arg(step)));
        if (step % 5 == 4) {
            QVERIFY2(same_bits(eager.optimizer_slots(), deferred.optimizer_slots()),
                     qPrintable(QString("slots differ after step %1").arg(step)));
        }
    }
    QVERIFY(same_bits(eager.optimizer_slots(), deferred.optimizer_slots()));
}

// Settling pays the deferred decays as the updates would have run them, denormals included: a
// thread that flushes denormals (the engine's) and one that does not (a plain caller's) each get
// the bits of decaying every row at every step. Rare rows stop appearing early, so that by the
// later checkpoints their first moments have decayed through the denormal range; a step skipped as
// non-finite (no decay owed for it) and a restore in the middle (nothing owed after it) come on top.
void TestDevices::deferred_decays_settle_as_the_updates_ran() {
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    const auto has_denormal = [](const std::vector<float>& values) {
        return std::any_of(values.begin(), values.end(),
                           [](float x) { return x != 0.0f && std::fabs(x) < std::numeric_limits<float>::min(); });
    };
    DeviceRegistry registry;
    auto devices = create_logical_devices(DeviceConfig::parse("cpu:2"), registry);
    const Model model = embedding_model(50, 4, 6);
    for (const bool flush : {false, true}) {
        const ScopedFloatMode restore_mode(float_mode());
        if (flush) enable_flush_denormals();
        OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
        UpdateLayout every_step = schedule.update_layout();
        every_step.embedding_moment_decays = false;
        ModelReplica eager(model, *devices[0], 2, every_step);
        ModelReplica deferred(model, *devices[1], 2, schedule.update_layout());
        const std::vector<float> weights = initial_weights(model, 3);
        eager.set_weights(weights);
        deferred.set_weights(weights);
        std::mt19937 rng(5);
        std::vector<std::int32_t> ids(12), labels(2);
        bool saw_denormal = false;
        for (int step = 0; step < 1000; ++step) {
            // Rows 40-49 only in the first 40 steps (row 40 + k last at about step 4k), rows 0-39 always.
            for (std::size_t i = 0; i < ids.size(); ++i) {
                ids[i] = i == 0 && step < 40 ? 40 + step / 4
                                             : std::uniform_int_distribution<std::int32_t>(0, 39)(rng);
            }
            for (auto& label : labels) label = std::uniform_int_distribution<std::int32_t>(0, 2)(rng);
            eager.forward_backward(ids.data(), labels.data(), 2, 2, 0, nullptr);
            deferred.forward_backward(ids.data(), labels.data(), 2, 2, 0, nullptr);
            const OptimizerStep update = schedule.next_step();
            const bool skipped = step == 300;  // as a NaN loss would have it: no update, no decay
            for (ModelReplica* replica : {&eager, &deferred}) {
                replica->apply_update_if_finite(update, !skipped);
                QCOMPARE(replica->finish_step().update_applied, !skipped);
            }
            if (step == 500) {  // a restore: the moments come back settled and owe nothing
                const std::vector<float> restored = eager.optimizer_slots();
                eager.set_optimizer_slots(restored);
                deferred.set_optimizer_slots(restored);
            }
            if (step >= 700 && step % 20 == 0) {
                const std::vector<float> expected = eager.optimizer_slots();
                saw_denormal = saw_denormal || has_denormal(expected);
                QVERIFY2(same_bits(expected, deferred.optimizer_slots()),
                         qPrintable(QString("slots differ after step %1 (denormals %2)")
                                        .arg(step)
                                        .arg(flush ? "flushed" : "kept")));
            }
        }
        QVERIFY2(same_bits(eager.weights(), deferred.weights()), flush ? "weights, flushed" : "weights, kept");
        // Without flushing the decays pass through denormals: the comparison above saw them.
        if (!flush) QVERIFY2(saw_denormal, "no moment reached the denormal range; the test checks less than it says");
    }
}

QTEST_APPLESS_MAIN(TestDevices)
#include "test_devices.moc"
