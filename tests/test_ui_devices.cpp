// The devices panel (choosing and carving devices, validation, the strategy that will run,
// settings) and the device monitor (memory, phase timings and throughput of a real run), driven
// through their child widgets as a person would.
#include <QtTest/QtTest>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>
#include <QStyle>
#include <QStyleFactory>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextDocument>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/backend/cpu_reference.h"
#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/distribute/cross_device_ops.h"
#include "core/distribute/strategy_plan.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "core/train/trainer.h"
#include "support/fake_nccl.h"
#include "ui/devices/device_carving_view.h"
#include "ui/devices/devices_panel.h"
#include "ui/training/monitor_panel.h"
#include "ui/training/training_controller.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

class FakeGpuProvider final : public DeviceProvider {
public:
    explicit FakeGpuProvider(int count, bool collectives = false, std::int64_t total_mib = 16384)
        : count_(count), collectives_(collectives), total_mib_(total_mib) {}
    bool supports_collectives() const override { return collectives_; }
    std::unique_ptr<CrossDeviceOps> create_all_reduce(const std::vector<LogicalDevice*>&) override {
        return collectives_ ? std::make_unique<testsupport::FakeNccl>() : nullptr;
    }
    DeviceType type() const override { return DeviceType::GPU; }
    std::vector<PhysicalDevice> devices() const override {
        std::vector<PhysicalDevice> gpus;
        for (int i = 0; i < count_; ++i) {
            PhysicalDevice gpu;
            gpu.type = DeviceType::GPU;
            gpu.index = i;
            gpu.name = "Fake H200";
            gpu.total_memory_bytes = total_mib_ * kMiB;
            gpu.free_memory_bytes = (total_mib_ - 384) * kMiB;
            gpu.cores = 132;
            gpu.compute_capability = "9.0";
            gpu.bus_id = "0000:0" + std::to_string(i + 1) + ":00.0";
            gpus.push_back(gpu);
        }
        return gpus;
    }
    std::string status() const override { return "fake CUDA, " + std::to_string(count_) + " GPUs"; }
    std::unique_ptr<Backend> create_backend(int) override { return std::make_unique<CpuReferenceBackend>(); }
    std::shared_ptr<RawAllocator> create_allocator(int) override { return std::make_shared<HostAllocator>(); }

private:
    int count_ = 0;
    bool collectives_ = false;
    std::int64_t total_mib_ = 16384;
};

template <typename T>
T* child(QWidget& parent, const QString& name) {
    T* widget = parent.findChild<T*>(name);
    if (widget == nullptr) qFatal("no child widget named %s", qPrintable(name));
    return widget;
}

void typeInto(QSpinBox* spin, const QString& text) {
    spin->selectAll();
    QTest::keyClicks(spin, text);
}

void chooseMode(QComboBox* combo, const QString& text) {
    const int index = combo->findText(text);
    QVERIFY2(index >= 0, qPrintable(text));
    combo->setCurrentIndex(index);
}

// What a label shows, without its markup.
QString shown(QWidget& parent, const QString& name) {
    QTextDocument document;
    document.setHtml(child<QLabel>(parent, name)->text());
    return document.toPlainText().remove(QChar(0x2060));  // word joiners keep device names whole
}

QString spec(const DevicesPanel& panel) { return QString::fromStdString(panel.config().to_spec()); }

// Embedding -> Conv1D -> GlobalMaxPooling1D -> Dense, as in test_trainer.cpp.
std::shared_ptr<const Model> small_model() {
    const std::string json =
        "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
        "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 2000, \"output_dim\": 8}},"
        "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 16, \"kernel_size\": 5, \"activation\": \"relu\"}},"
        "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
        "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}";
    return std::make_shared<const Model>(Model::from_json_text(json, "small model"));
}

RunSettings small_run(const std::string& devices) {
    SyntheticReutersOptions options;
    options.train_samples = 400;
    options.validation_samples = 100;
    options.vocabulary_size = 2000;
    RunSettings settings;
    settings.model = small_model();
    settings.devices = DeviceConfig::parse(devices);
    settings.config.epochs = 2;
    settings.config.batch_size = 32;
    settings.config.seed = 7;
    settings.config.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
    settings.config.optimizer.learning_rate = 0.01;
    settings.config.prefetch_batches = 1;
    settings.data = std::make_shared<const DatasetSplit>(make_synthetic_reuters(options));
    settings.data_name = QStringLiteral("synthetic");
    return settings;
}

// ---- The panel against the engine ----------------------------------------------------------

enum class Machine { Cpu, FakeGpusWithNccl, FakeGpusWithoutNccl, EmulatedGpus };

// One registry per machine for the whole suite: the emulated CUDA plugin (tests/cuda_emulation,
// two 4 GiB "GPUs" with NCCL) loads once per process.
std::shared_ptr<DeviceRegistry> machine_registry(Machine machine) {
    static std::map<Machine, std::shared_ptr<DeviceRegistry>> registries;
    std::shared_ptr<DeviceRegistry>& registry = registries[machine];
    if (registry) return registry;
    registry = std::make_shared<DeviceRegistry>();
    switch (machine) {
        case Machine::Cpu: break;
        case Machine::FakeGpusWithNccl: registry->add_provider(std::make_shared<FakeGpuProvider>(2, true)); break;
        case Machine::FakeGpusWithoutNccl: registry->add_provider(std::make_shared<FakeGpuProvider>(2, false)); break;
        case Machine::EmulatedGpus: load_gpu_plugin(*registry, {MIRRORLAB_EMULATED_PLUGIN_DIR}); break;
    }
    return registry;
}

// What the engine logs and reports when a run starts on `devices`: one step of a small model
// through the trainer, as Start runs it.
struct EngineRun {
    QStringList strategy_log;  // the warnings before "Using ...", the "All-reduce: ..." line, the line after it
    QString strategy_line;     // "Using ..."
    QString all_reduce;        // TrainBeginEvent::all_reduce
    QStringList devices;       // TrainBeginEvent::devices
    std::vector<std::int64_t> limits_bytes;  // the first MemoryEvent's limit per device
    QString failure;           // FailedEvent::reason
    QString log;               // everything logged, for failure messages
};

EngineRun run_engine(const std::shared_ptr<DeviceRegistry>& registry, const DeviceConfig& devices,
                     AllReduceAlgorithm all_reduce) {
    SyntheticReutersOptions options;
    options.train_samples = 32;
    options.validation_samples = 8;
    options.vocabulary_size = 2000;
    const auto model = small_model();
    TrainData data = make_train_data(make_synthetic_reuters(options), model->input_length(), model->vocabulary_size());
    data.validation_ids.reset();
    data.validation_labels.reset();
    data.warnings.clear();
    TrainConfig config;
    config.epochs = 1;
    config.batch_size = 12;
    config.max_steps_per_epoch = 1;
    config.all_reduce = all_reduce;
    config.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
    config.overfitting_monitor = false;
    config.prefetch_batches = 1;
    Trainer trainer(*model, devices, config, data, registry);
    EngineRun run;
    std::vector<LogEvent> log;
    trainer.set_event_sink([&](const Event& event) {
        if (const auto* line = std::get_if<LogEvent>(&event)) {
            log.push_back(*line);
            run.log += QString::fromStdString(line->text) + QLatin1Char('\n');
        } else if (const auto* begin = std::get_if<TrainBeginEvent>(&event)) {
            run.all_reduce = QString::fromStdString(begin->all_reduce);
            for (const auto& name : begin->devices) run.devices << QString::fromStdString(name);
        } else if (const auto* memory = std::get_if<MemoryEvent>(&event)) {
            if (!run.limits_bytes.empty()) return;
            for (const auto& device : memory->devices) run.limits_bytes.push_back(device.limit_bytes);
        } else if (const auto* failed = std::get_if<FailedEvent>(&event)) {
            run.failure = QString::fromStdString(failed->reason);
        }
    });
    trainer.run();
    const auto using_line = std::find_if(log.begin(), log.end(), [](const LogEvent& line) { return line.text.rfind("Using ", 0) == 0; });
    if (using_line == log.end()) return run;
    run.strategy_line = QString::fromStdString(using_line->text);
    auto first_warning = using_line;
    while (first_warning != log.begin() && std::prev(first_warning)->level == LogLevel::Warning) --first_warning;
    for (auto it = first_warning; it != using_line; ++it) run.strategy_log << QString::fromStdString(it->text);
    const auto all_reduce_line = std::next(using_line);
    if (all_reduce_line != log.end() && all_reduce_line->text.rfind("All-reduce: ", 0) == 0) {
        run.strategy_log << QString::fromStdString(all_reduce_line->text);
        if (std::next(all_reduce_line) != log.end()) run.strategy_log << QString::fromStdString(std::next(all_reduce_line)->text);
    }
    return run;
}

}  // namespace

class TestUiDevices : public QObject {
    Q_OBJECT

private slots:
    void defaultIsTwoVirtualCpuDevices() {
        DevicesPanel panel(std::make_shared<DeviceRegistry>());
        QCOMPARE(spec(panel), QStringLiteral("cpu:2x1024MB"));
        QCOMPARE(panel.validationError(), QString());
        QCOMPARE(panel.replicaCount(), 2);
        QCOMPARE(panel.allReduce(), AllReduceAlgorithm::Auto);
        QCOMPARE(shown(panel, "validationLabel"), QStringLiteral("Ready: 2 replicas"));
        QVERIFY2(panel.strategyDescription().contains("Reduce to /device:CPU:0 then broadcast"),
                 qPrintable(panel.strategyDescription()));
        QVERIFY(child<QLabel>(panel, "gpuStatus")->text().contains("no GPU backend loaded"));
        QVERIFY(child<QLabel>(panel, "cpuFacts")->text().contains("cores"));
    }

    void twoVirtualDevicesOf512MbThroughTheWidgets() {
        DevicesPanel panel(std::make_shared<DeviceRegistry>());
        panel.resize(560, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QSignalSpy changed(&panel, &DevicesPanel::configChanged);

        chooseMode(child<QComboBox>(panel, "cpuMode"), "One logical device");
        QCOMPARE(spec(panel), QStringLiteral("cpu"));
        QVERIFY(panel.strategyDescription().startsWith("One device: /device:CPU:0 (no all-reduce)"));
        QVERIFY(child<QSpinBox>(panel, "cpuReplicas")->isVisible());
        QVERIFY(!child<QSpinBox>(panel, "cpuVirtualCount")->isVisible());

        chooseMode(child<QComboBox>(panel, "cpuMode"), "Split into N virtual devices");
        typeInto(child<QSpinBox>(panel, "cpuVirtualCount"), "2");
        typeInto(child<QSpinBox>(panel, "cpuMemoryLimitMb"), "512");
        QCOMPARE(spec(panel), QStringLiteral("cpu:2x512MB"));
        QCOMPARE(panel.validationError(), QString());
        QCOMPARE(shown(panel, "validationLabel"), QStringLiteral("Ready: 2 replicas"));
        QVERIFY2(panel.strategyDescription().contains("Reduce to /device:CPU:0"), qPrintable(panel.strategyDescription()));
        QVERIFY(panel.strategyDescription().contains("virtual devices share one physical device"));
        QCOMPARE(shown(panel, "strategyLabel"), panel.strategyDescription());
        QVERIFY(changed.count() >= 3);

        // The drawing carves the CPU into two 512 MB segments.
        auto* carving = child<DeviceCarvingView>(panel, "deviceCarving");
        QCOMPARE(carving->devices().size(), std::size_t{1});
        const CarvedDevice& cpu = carving->devices().front();
        QVERIFY(cpu.used);
        QCOMPARE(cpu.logical_names, QStringList({"/device:CPU:0", "/device:CPU:1"}));
        QCOMPARE(cpu.limit_bytes, std::vector<std::int64_t>({512 * kMiB, 512 * kMiB}));

        // The all-reduce combo overrides Auto, and the description says so.
        child<QComboBox>(panel, "allReduce")->setCurrentIndex(2);
        QCOMPARE(panel.allReduce(), AllReduceAlgorithm::Ring);
        QVERIFY(panel.strategyDescription().contains("ring"));
        QVERIFY(panel.strategyDescription().contains("chosen explicitly"));

        // Several whole-CPU replicas share one physical device too.
        chooseMode(child<QComboBox>(panel, "cpuMode"), "One logical device");
        child<QComboBox>(panel, "allReduce")->setCurrentIndex(0);
        typeInto(child<QSpinBox>(panel, "cpuReplicas"), "3");
        QCOMPARE(spec(panel), QStringLiteral("cpu:3"));
        QVERIFY(panel.strategyDescription().contains("replicas share one physical device"));
        QCOMPARE(shown(panel, "validationLabel"), QStringLiteral("Ready: 3 replicas"));

        chooseMode(child<QComboBox>(panel, "cpuMode"), "Memory growth");
        QCOMPARE(spec(panel), QStringLiteral("cpu:growth"));
    }

    void limitsSetOneByOne() {
        DevicesPanel panel(std::make_shared<DeviceRegistry>());
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        auto* table = child<QTableWidget>(panel, "cpuLimitTable");
        QVERIFY(!table->isVisible());
        QTest::mouseClick(child<QCheckBox>(panel, "cpuEditEachLimit"), Qt::LeftButton);
        QVERIFY(table->isVisible());
        QCOMPARE(table->rowCount(), 2);
        QCOMPARE(table->item(1, 0)->text(), QStringLiteral("/device:CPU:1"));
        QVERIFY(!child<QSpinBox>(panel, "cpuMemoryLimitMb")->isEnabled());
        typeInto(child<QSpinBox>(panel, "cpuLimit1"), "256");
        QCOMPARE(spec(panel), QStringLiteral("cpu:1024MB+256MB"));
        typeInto(child<QSpinBox>(panel, "cpuVirtualCount"), "3");
        QCOMPARE(table->rowCount(), 3);
        QCOMPARE(spec(panel), QStringLiteral("cpu:1024MB+256MB+1024MB"));
        QCOMPARE(child<DeviceCarvingView>(panel, "deviceCarving")->devices().front().limit_bytes,
                 std::vector<std::int64_t>({1024 * kMiB, 256 * kMiB, 1024 * kMiB}));
        // Back to one limit for all.
        QTest::mouseClick(child<QCheckBox>(panel, "cpuEditEachLimit"), Qt::LeftButton);
        QCOMPARE(spec(panel), QStringLiteral("cpu:3x1024MB"));
    }

    void impossibleLimitsAreExplained() {
        auto registry = std::make_shared<DeviceRegistry>();
        DevicesPanel panel(registry);
        auto* label = child<QLabel>(panel, "validationLabel");
        auto label_text = [&] { return shown(panel, "validationLabel"); };
        typeInto(child<QSpinBox>(panel, "cpuMemoryLimitMb"), "10");
        QCOMPARE(spec(panel), QStringLiteral("cpu:2x10MB"));
        QVERIFY2(panel.validationError().contains("10 MB is too small"), qPrintable(panel.validationError()));
        QVERIFY(panel.validationError().contains("at least 16 MB"));
        QVERIFY(label_text().contains(panel.validationError()));
        QVERIFY(label->styleSheet().contains("#b00020"));
        QVERIFY(panel.strategyDescription().contains("not valid"));

        // More than the machine has: each virtual device asks for all of it.
        const std::int64_t total_mb = registry->find(DeviceType::CPU, 0)->total_memory_bytes / kMiB;
        QVERIFY(total_mb > 0);
        typeInto(child<QSpinBox>(panel, "cpuMemoryLimitMb"), QString::number(total_mb));
        QVERIFY2(panel.validationError().contains("lower the limits or use fewer virtual devices"),
                 qPrintable(panel.validationError()));
        QVERIFY(label_text().contains("lower the limits"));

        typeInto(child<QSpinBox>(panel, "cpuMemoryLimitMb"), "512");
        QCOMPARE(panel.validationError(), QString());
        QVERIFY(label->styleSheet().contains("#1b7a1b"));
    }

    void noDeviceSelected() {
        DevicesPanel panel(std::make_shared<DeviceRegistry>());
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QTest::mouseClick(child<QCheckBox>(panel, "cpuUse"), Qt::LeftButton);
        QVERIFY(!child<QCheckBox>(panel, "cpuUse")->isChecked());
        QVERIFY2(panel.validationError().contains("no device is selected"), qPrintable(panel.validationError()));
        QVERIFY(shown(panel, "validationLabel").contains("no device is selected"));
        QCOMPARE(panel.replicaCount(), 0);
        QVERIFY(!child<QComboBox>(panel, "cpuMode")->isEnabled());
        QVERIFY(!child<DeviceCarvingView>(panel, "deviceCarving")->devices().front().used);
        QTest::mouseClick(child<QCheckBox>(panel, "cpuUse"), Qt::LeftButton);
        QCOMPARE(spec(panel), QStringLiteral("cpu:2x1024MB"));
    }

    void setConfigAndSettingsRoundTrip() {
        DevicesPanel panel(std::make_shared<DeviceRegistry>());
        for (const char* text : {"cpu:2x512MB", "cpu:512MB+256MB+128MB", "cpu:3", "cpu:growth", "cpu"}) {
            panel.setConfig(DeviceConfig::parse(text));
            QCOMPARE(spec(panel), QString::fromLatin1(text));
            QCOMPARE(panel.validationError(), QString());
        }
        panel.setConfig(DeviceConfig::parse("cpu:512MB+256MB+128MB"));
        QVERIFY(child<QCheckBox>(panel, "cpuEditEachLimit")->isChecked());
        QCOMPARE(child<QSpinBox>(panel, "cpuLimit2")->value(), 128);

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("settings.ini");
        {
            QSettings settings(path, QSettings::IniFormat);
            panel.setConfig(DeviceConfig::parse("cpu:2x512MB"));
            panel.setAllReduce(AllReduceAlgorithm::Ring);
            panel.saveSettings(settings);
        }
        {
            QSettings settings(path, QSettings::IniFormat);
            QCOMPARE(settings.value("devices/spec").toString(), QStringLiteral("cpu:2x512MB"));
            DevicesPanel restored(std::make_shared<DeviceRegistry>());
            QSignalSpy changed(&restored, &DevicesPanel::configChanged);
            restored.restoreSettings(settings);
            QCOMPARE(spec(restored), QStringLiteral("cpu:2x512MB"));
            QCOMPARE(restored.allReduce(), AllReduceAlgorithm::Ring);
            QVERIFY(changed.count() >= 1);
        }
        {
            // Nothing selected is restored as nothing selected; an unreadable spec is ignored.
            QSettings settings(path, QSettings::IniFormat);
            panel.setConfig(DeviceConfig{});
            panel.saveSettings(settings);
            DevicesPanel restored(std::make_shared<DeviceRegistry>());
            restored.restoreSettings(settings);
            QVERIFY(restored.validationError().contains("no device is selected"));
            settings.setValue("devices/spec", "tpu:9");
            restored.setConfig(DeviceConfig::parse("cpu:2"));
            restored.restoreSettings(settings);
            QCOMPARE(spec(restored), QStringLiteral("cpu:2"));
        }
    }

    void gpusFromAProvider() {
        auto registry = std::make_shared<DeviceRegistry>();
        registry->add_provider(std::make_shared<FakeGpuProvider>(2));
        DevicesPanel panel(registry);
        panel.resize(560, 1100);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QVERIFY(child<QLabel>(panel, "gpuStatus")->text().contains("fake CUDA, 2 GPUs"));
        QVERIFY(child<QLabel>(panel, "gpu1Facts")->text().contains("compute capability 9.0"));
        QVERIFY(child<QLabel>(panel, "gpu1Facts")->text().contains("0000:02:00.0"));
        // With a GPU, the panel opens on the tutorial's setup: two 1024 MB virtual GPUs on GPU:0.
        QCOMPARE(spec(panel), QStringLiteral("gpu:0:2x1024MB"));
        QCOMPARE(panel.validationError(), QString());
        QVERIFY(panel.strategyDescription().contains("Reduce to /device:GPU:0 then broadcast"));
        panel.setConfig(DeviceConfig::parse("cpu:2x1024MB"));
        QCOMPARE(child<DeviceCarvingView>(panel, "deviceCarving")->devices().size(), std::size_t{3});

        QTest::mouseClick(child<QCheckBox>(panel, "gpu0Use"), Qt::LeftButton);
        QVERIFY(panel.validationError().contains("mixing CPU and GPU"));
        QTest::mouseClick(child<QCheckBox>(panel, "cpuUse"), Qt::LeftButton);
        chooseMode(child<QComboBox>(panel, "gpu0Mode"), "Split into N virtual devices");
        QCOMPARE(spec(panel), QStringLiteral("gpu:0:2x1024MB"));
        QCOMPARE(panel.validationError(), QString());
        QVERIFY(panel.strategyDescription().contains("Reduce to /device:GPU:0 then broadcast"));
        QTest::qWait(20);  // let the layout settle before looking
        child<QWidget>(panel, "devicesScroll")->grab().save("/tmp/devices_panel_gpus.png");

        panel.setConfig(DeviceConfig::parse("gpu:0,gpu:1"));
        QCOMPARE(panel.validationError(), QString());
        QVERIFY2(panel.strategyDescription().contains("ring"), qPrintable(panel.strategyDescription()));
        QVERIFY(panel.strategyDescription().contains("each replica has its own device"));

        // A configuration naming a GPU this machine lacks is explained, and can be dropped.
        panel.setConfig(DeviceConfig::parse("gpu:3"));
        QVERIFY(child<QLabel>(panel, "missingDevices")->isVisible());
        QVERIFY2(panel.validationError().contains("GPU:3 does not exist"), qPrintable(panel.validationError()));
        // The fix in this panel, not mirrorlab-cli's option.
        QVERIFY2(panel.validationError().contains("press Remove beside the missing devices and tick the CPU") &&
                     !panel.validationError().contains("--devices"),
                 qPrintable(panel.validationError()));
        QTest::mouseClick(child<QWidget>(panel, "removeMissing"), Qt::LeftButton);
        QVERIFY(panel.validationError().contains("no device is selected"));
        QVERIFY(!child<QLabel>(panel, "missingDevices")->isVisible());
    }

    // A GPU too small for the tutorial's two 1024 MB devices: the panel opens on the CPU instead.
    void smallGpuOpensOnTheCpu() {
        auto registry = std::make_shared<DeviceRegistry>();
        registry->add_provider(std::make_shared<FakeGpuProvider>(1, false, 1536));
        DevicesPanel panel(registry);
        QCOMPARE(spec(panel), QStringLiteral("cpu:2x1024MB"));
        QCOMPARE(panel.validationError(), QString());
    }

    // Limits that fit the GPU but not what it has free (other programs hold the rest): the run may
    // start, with a caution under "Ready".
    void cautionWhenOtherProgramsHoldTheMemory() {
        auto registry = std::make_shared<DeviceRegistry>();
        registry->add_provider(std::make_shared<FakeGpuProvider>(1));  // 16 GiB, 16000 MiB free
        DevicesPanel panel(registry);
        QCOMPARE(panel.memoryCaution(), QString());  // the tutorial's 2 x 1024 MB
        panel.setConfig(DeviceConfig::parse("gpu:0:2x8100MB"));
        QCOMPARE(panel.validationError(), QString());
        QVERIFY2(panel.memoryCaution().contains("GPU:0 has 15.62 GiB free, but its virtual devices ask for 15.82 GiB"),
                 qPrintable(panel.memoryCaution()));
        const QString label = shown(panel, "validationLabel");
        QVERIFY2(label.startsWith("Ready: 2 replicas\n") && label.contains("other programs hold the rest"), qPrintable(label));
        panel.setConfig(DeviceConfig::parse("gpu:0:2x4096MB"));
        QCOMPARE(panel.memoryCaution(), QString());
        QCOMPARE(shown(panel, "validationLabel"), QStringLiteral("Ready: 2 replicas"));
    }

    void ncclBetweenSeparateGpus() {
        auto registry = std::make_shared<DeviceRegistry>();
        registry->add_provider(std::make_shared<FakeGpuProvider>(2, true));
        DevicesPanel panel(registry);
        panel.setConfig(DeviceConfig::parse("gpu:0,gpu:1"));
        QVERIFY2(panel.strategyDescription().contains("All-reduce: nccl"), qPrintable(panel.strategyDescription()));
        panel.setConfig(DeviceConfig::parse("gpu:0:2x1024MB"));
        QVERIFY(panel.strategyDescription().contains("Reduce to /device:GPU:0 then broadcast"));
        QVERIFY(panel.strategyDescription().contains("NCCL is not supported when using virtual GPUs"));
    }

    // For every configuration: the panel says what the engine then logs, word for word, and shows
    // the devices (names, limits) the engine then trains on; an invalid one is refused in the same
    // words. The engine is a real run of one step through the trainer.
    void panelSaysWhatTheEngineLogs_data() {
        QTest::addColumn<int>("machine");
        QTest::addColumn<QString>("devices");
        QTest::addColumn<QString>("requested");
        QTest::addColumn<QString>("all_reduce");  // what runs: "none", "ring", ..., or "" when refused
        const int cpu = static_cast<int>(Machine::Cpu), nccl = static_cast<int>(Machine::FakeGpusWithNccl),
                  no_nccl = static_cast<int>(Machine::FakeGpusWithoutNccl),
                  emulated = static_cast<int>(Machine::EmulatedGpus);
        struct Row {
            const char* name;
            int machine;
            const char* spec;
            const char* requested;
            const char* all_reduce;
        };
        for (const Row& row : std::initializer_list<Row>{
                 {"cpu", cpu, "cpu", "auto", "none"},
                 {"cpu:2", cpu, "cpu:2", "auto", "reduce_to_one_device"},
                 {"cpu:2x512MB", cpu, "cpu:2x512MB", "auto", "reduce_to_one_device"},
                 {"cpu:2x512MB ring", cpu, "cpu:2x512MB", "ring", "ring"},
                 {"cpu:3 auto", cpu, "cpu:3", "auto", "reduce_to_one_device"},
                 {"cpu:3 ring", cpu, "cpu:3", "ring", "ring"},
                 {"cpu:3 reduce", cpu, "cpu:3", "reduce", "reduce_to_one_device"},
                 {"cpu:256MB+128MB", cpu, "cpu:256MB+128MB", "auto", "reduce_to_one_device"},
                 {"cpu:growth", cpu, "cpu:growth", "ring", "none"},
                 {"cpu:2x8MB (too small)", cpu, "cpu:2x8MB", "auto", ""},
                 {"gpu:0 on a CPU-only machine", cpu, "gpu:0", "auto", ""},
                 {"fake GPUs with NCCL", nccl, "gpu:0,gpu:1", "auto", "nccl"},
                 {"fake GPUs with NCCL, ring", nccl, "gpu:0,gpu:1", "ring", "ring"},
                 {"fake virtual GPUs with NCCL", nccl, "gpu:0:2x1024MB", "auto", "reduce_to_one_device"},
                 {"fake virtual GPUs with NCCL, reduce", nccl, "gpu:0:2x1024MB", "reduce", "reduce_to_one_device"},
                 {"fake GPUs without NCCL", no_nccl, "gpu:0,gpu:1", "auto", "ring"},
                 {"fake virtual GPUs without NCCL", no_nccl, "gpu:1:2x512MB", "auto", "reduce_to_one_device"},
                 {"mixed CPU and GPU", no_nccl, "cpu,gpu:0", "auto", ""},
                 {"emulated gpu:0", emulated, "gpu:0", "auto", "none"},
                 {"emulated GPUs: NCCL", emulated, "gpu:0,gpu:1", "auto", "nccl"},
                 {"emulated GPUs, ring", emulated, "gpu:0,gpu:1", "ring", "ring"},
                 {"emulated virtual GPUs: NCCL refused", emulated, "gpu:0:2x1024MB", "auto", "reduce_to_one_device"},
                 {"emulated virtual GPUs, ring", emulated, "gpu:0:2x1024MB", "ring", "ring"},
                 {"emulated virtual and whole GPUs", emulated, "gpu:0:2x1024MB,gpu:1", "auto", "reduce_to_one_device"},
                 {"emulated gpu:1 in 3, reduce", emulated, "gpu:1:3x512MB", "reduce", "reduce_to_one_device"},
             }) {
            QTest::newRow(row.name) << row.machine << QString(row.spec) << QString(row.requested) << QString(row.all_reduce);
        }
    }

    void panelSaysWhatTheEngineLogs() {
        QFETCH(int, machine);
        QFETCH(QString, devices);
        QFETCH(QString, requested);
        QFETCH(QString, all_reduce);
        const auto registry = machine_registry(static_cast<Machine>(machine));
        if (static_cast<Machine>(machine) == Machine::EmulatedGpus) {
            QVERIFY2(registry->find(DeviceType::GPU, 1) != nullptr, registry->gpu_status().c_str());
        }
        const DeviceConfig config = DeviceConfig::parse(devices.toStdString());
        const AllReduceAlgorithm algorithm = all_reduce_from_name(requested.toStdString());
        DevicesPanel panel(registry);
        panel.setConfig(config);
        panel.setAllReduce(algorithm);
        QCOMPARE(spec(panel), devices);
        QCOMPARE(panel.allReduce(), algorithm);

        const EngineRun engine = run_engine(registry, config, algorithm);
        if (all_reduce.isEmpty()) {
            // Refused before anything runs, in the same words, up to the advice: the panel names
            // its own fix where the engine names mirrorlab-cli's --devices.
            QVERIFY(!panel.validationError().isEmpty());
            const QString what = panel.validationError().section(QLatin1Char(';'), 0, 0);
            QVERIFY2(engine.failure.startsWith(QStringLiteral("device configuration: ") + what),
                     qPrintable(engine.failure + QStringLiteral("\n") + panel.validationError()));
            QVERIFY2(!panel.validationError().contains(QStringLiteral("--devices")), qPrintable(panel.validationError()));
            QVERIFY(shown(panel, "validationLabel").contains(panel.validationError()));
            QVERIFY(panel.strategyLog().isEmpty());
            return;
        }
        QVERIFY2(engine.failure.isEmpty(), qPrintable(engine.failure + "\n" + engine.log));
        QCOMPARE(panel.validationError(), QString());
        QCOMPARE(engine.all_reduce, all_reduce);

        // The sentence: the panel's "All-reduce: ..." line is the engine's, and so are its warnings
        // and the route of the gradients (NCCL names its version only once it runs).
        QStringList expected = engine.strategy_log;
        if (all_reduce == QLatin1String("nccl")) {
            QVERIFY2(expected.size() >= 2 && expected.last().contains("NCCL"), qPrintable(engine.log));
            expected.removeLast();
        }
        QCOMPARE(panel.strategyLog(), expected);
        if (all_reduce == QLatin1String("none")) {
            QCOMPARE(panel.allReduceSentence(), QString());
            QCOMPARE(engine.strategy_line, QStringLiteral("Using OneDeviceStrategy on ") + engine.devices.value(0));
        } else {
            QVERIFY(panel.allReduceSentence().startsWith("All-reduce: " + all_reduce + " ("));
            QVERIFY(panel.strategyLog().contains(panel.allReduceSentence()));
        }
        QVERIFY(panel.strategyDescription().endsWith(panel.strategyLog().join('\n')));
        QCOMPARE(shown(panel, "strategyLabel"), panel.strategyDescription());

        // The devices: names in replica order and limits, in the plan, the drawing and the engine.
        QStringList drawn;
        std::vector<std::int64_t> drawn_limits;
        for (const CarvedDevice& device : child<DeviceCarvingView>(panel, "deviceCarving")->devices()) {
            if (!device.used) continue;
            drawn << device.logical_names;
            if (device.mode == MemoryMode::Virtual) {
                drawn_limits.insert(drawn_limits.end(), device.limit_bytes.begin(), device.limit_bytes.end());
            } else {
                drawn_limits.insert(drawn_limits.end(), static_cast<std::size_t>(device.logical_names.size()), 0);
            }
        }
        QCOMPARE(drawn, engine.devices);
        QCOMPARE(drawn_limits, engine.limits_bytes);
        QStringList planned;
        for (const LogicalDevicePlan& device : panel.plan().devices) planned << QString::fromStdString(device.name);
        QCOMPARE(planned, engine.devices);
        QCOMPARE(panel.replicaCount(), static_cast<int>(engine.devices.size()));
    }

    void reloadKeepsTheConfiguration() {
        auto registry = std::make_shared<DeviceRegistry>();
        DevicesPanel panel(registry);
        panel.setConfig(DeviceConfig::parse("cpu:2x512MB"));
        registry->add_provider(std::make_shared<FakeGpuProvider>(1));
        panel.reloadDevices();
        QVERIFY(panel.findChild<QGroupBox*>("gpu0Box") != nullptr);
        QCOMPARE(spec(panel), QStringLiteral("cpu:2x512MB"));
    }

    void devicesScreenshot() {
        DevicesPanel panel(std::make_shared<DeviceRegistry>());
        panel.setConfig(DeviceConfig::parse("cpu:2x512MB"));
        panel.resize(560, 860);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QTest::qWait(20);
        QVERIFY(panel.grab().save("/tmp/devices_panel.png"));
        // A narrow dock: everything wraps instead of being clipped.
        panel.setConfig(DeviceConfig::parse("cpu:1024MB+512MB+256MB"));
        panel.resize(360, 900);
        QTest::qWait(20);
        QVERIFY(panel.grab().save("/tmp/devices_panel_narrow.png"));
        // Limits beyond the machine: the drawing marks the end of the physical memory, the label says why.
        const std::int64_t total_mb = DeviceRegistry().find(DeviceType::CPU, 0)->total_memory_bytes / kMiB;
        panel.setConfig(DeviceConfig::parse("cpu:2x" + std::to_string(total_mb * 3 / 4) + "MB"));
        QVERIFY(!panel.validationError().isEmpty());
        QTest::qWait(20);
        QVERIFY(panel.grab().save("/tmp/devices_panel_error.png"));
    }

    void monitorShowsARealRun() {
        TrainingController controller;
        MonitorPanel monitor(&controller);
        monitor.resize(640, 820);
        monitor.show();
        QVERIFY(QTest::qWaitForWindowExposed(&monitor));
        QCOMPARE(monitor.deviceRowCount(), 0);

        controller.start(small_run("cpu:2x512MB"));
        QVERIFY(controller.waitForFinished(60000));
        QVERIFY2(!controller.currentRun()->failed,
                 controller.currentRun()->failed ? controller.currentRun()->failed->reason.c_str() : "");
        monitor.refreshNow();
        QCOMPARE(monitor.deviceRowCount(), 2);
        QVERIFY(monitor.shownBytesInUse(0) > 0);
        QVERIFY(monitor.shownBytesInUse(1) > 0);
        QCOMPARE(monitor.shownBytesInUse(2), std::int64_t{-1});
        // CPU rows: in use, peak, the limit; no GPU free memory is made up for them.
        QVERIFY2(monitor.shownDeviceText(0).contains("limit 512"), qPrintable(monitor.shownDeviceText(0)));
        QVERIFY2(!monitor.shownDeviceText(0).contains("free"), qPrintable(monitor.shownDeviceText(0)));
        QVERIFY(monitor.phaseSampleCount() > 0);
        QVERIFY(monitor.samplesPerSecond() > 0.0);
        auto* replicas = child<QComboBox>(monitor, "replicaSelector");
        QCOMPARE(replicas->count(), 2);
        QVERIFY(replicas->itemText(1).contains("/device:CPU:1"));
        // Another worker's devices have long names: the box may elide them, its list does not, in
        // a style that does not widen the list by itself (Fusion does) as in the default one.
        const std::unique_ptr<QStyle> windows_style(QStyleFactory::create(QStringLiteral("Windows")));
        QVERIFY(windows_style != nullptr);
        replicas->setStyle(windows_style.get());
        monitor.setReplicaNames({"/job:worker/task:0/device:CPU:0", "/job:worker/task:1/device:CPU:0"});
        QCOMPARE(replicas->itemText(1), QStringLiteral("Replica 1 · /job:worker/task:1/device:CPU:0"));
        const QSize wide = monitor.size();
        monitor.resize(300, wide.height());  // a laptop's dock
        QTest::qWait(50);
        const int text_width = replicas->fontMetrics().horizontalAdvance(replicas->itemText(1));
        QVERIFY(replicas->width() < text_width);
        replicas->showPopup();
        QTest::qWait(50);
        const int list_width = replicas->view()->width();
        replicas->hidePopup();
        QVERIFY2(list_width >= text_width, qPrintable(QStringLiteral("%1 < %2").arg(list_width).arg(text_width)));
        monitor.resize(wide);
        replicas->setStyle(nullptr);
        replicas->setCurrentIndex(1);
        QVERIFY(monitor.phaseSampleCount() > 0);
        QVERIFY(shown(monitor, "phaseSummary").contains("replica 1"));
        replicas->setCurrentIndex(0);
        QVERIFY(child<QLabel>(monitor, "samplesPerSecond")->text() != QStringLiteral("—"));
        QTest::qWait(50);
        QVERIFY(monitor.grab().save("/tmp/monitor_panel.png"));
        monitor.resize(380, 820);
        QTest::qWait(50);
        QVERIFY(monitor.grab().save("/tmp/monitor_panel_narrow.png"));
        monitor.resize(640, 820);

        // A new run starts from a clean slate.
        controller.start(small_run("cpu"));
        QCOMPARE(monitor.deviceRowCount(), 0);
        QCOMPARE(monitor.phaseSampleCount(), 0);
        QCOMPARE(monitor.samplesPerSecond(), 0.0);
        QVERIFY(controller.waitForFinished(60000));
        monitor.refreshNow();
        QCOMPARE(monitor.deviceRowCount(), 1);
        QCOMPARE(replicas->count(), 1);
    }

    void monitorShowsWhatTheGpuHasLeft() {
        // Virtual GPUs carved from one chip: each row also says how much the chip has free (the
        // CUDA backend reports it with every memory event).
        TrainingController controller;
        MonitorPanel monitor(&controller);
        MemoryEvent event;
        for (int i = 0; i < 2; ++i) {
            DeviceMemory device;
            device.device = "/device:GPU:" + std::to_string(i);
            device.bytes_in_use = 300LL << 20;
            device.peak_bytes = 400LL << 20;
            device.limit_bytes = 1024LL << 20;
            device.physical_free_bytes = 140000LL << 20;
            event.devices.push_back(device);
        }
        monitor.setMemory(event);
        QCOMPARE(monitor.deviceRowCount(), 2);
        const QString text = monitor.shownDeviceText(1);
        QVERIFY2(text.contains("300") && text.contains("400") && text.contains("1.00 GiB"), qPrintable(text));
        QVERIFY2(text.contains("free on the GPU") && text.contains("136.72 GiB"), qPrintable(text));

        // In a narrow dock every number stays readable: the row takes more lines, none cut off.
        monitor.resize(300, 700);
        monitor.show();
        QVERIFY(QTest::qWaitForWindowExposed(&monitor));
        const QStringList lines = monitor.shownDeviceLines(1);
        QVERIFY2(lines.size() >= 2, qPrintable(lines.join(" | ")));
        QCOMPARE(lines.join(QStringLiteral(" · ")), text);
        auto* bars = monitor.findChild<QWidget*>("memoryBars");
        QVERIFY(bars != nullptr);
        for (const QString& line : lines) {
            QVERIFY2(bars->fontMetrics().horizontalAdvance(line) <= bars->width(), qPrintable(line));
        }
    }
};

QTEST_MAIN(TestUiDevices)
#include "test_ui_devices.moc"
