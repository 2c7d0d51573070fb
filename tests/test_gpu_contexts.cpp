// What MirrorLab leaves on GPUs it does not use, counted on the CUDA host emulator with four GPUs:
// a CUDA context costs a GPU a few hundred MB and shows the program in nvidia-smi, so on a shared
// machine listing the GPUs (discovery, the Devices panel's free memory) must make none, a run makes
// one on each GPU it trains on and no other, and peer access joins only GPUs in use. Free memory
// comes from NVML (the emulator answers as NVML too), as other programs hold it.
#include <QtTest/QtTest>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/distribute/mirrored.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "mirrorlab_emulation_counters.h"

using namespace mirrorlab;

namespace {

constexpr int kGpus = 4;                                     // MIRRORLAB_CUDA_EMULATION_GPUS (CTest)
constexpr std::int64_t kCapacityBytes = 4096ll << 20;       // the emulator's default per GPU
constexpr std::int64_t kOthersBytes = 512ll << 20;          // MIRRORLAB_CUDA_EMULATION_OTHER_MIB (CTest)

std::uint64_t gpus(std::initializer_list<int> list) {
    std::uint64_t bits = 0;
    for (const int gpu : list) bits |= std::uint64_t{1} << gpu;
    return bits;
}

QString describe_peers() {
    QStringList pairs;
    for (int from = 0; from < kGpus; ++from) {
        for (int to = 0; to < kGpus; ++to) {
            if (mirrorlab_emulation_peer_enabled(from, to) != 0) pairs << QStringLiteral("%1->%2").arg(from).arg(to);
        }
    }
    return pairs.join(QLatin1Char(' '));
}

// One training step of a small model (Embedding, GlobalMaxPooling1D, Dense) on `run`'s devices.
void train_one_step(MirroredStrategy& run) {
    const Model model = Model::from_json_text(R"({"name": "small", "input_length": 20, "layers": [
        {"class_name": "Embedding", "config": {"input_dim": 100, "output_dim": 8}},
        {"class_name": "GlobalMaxPooling1D"},
        {"class_name": "Dense", "config": {"units": 4, "activation": "softmax"}}]})");
    constexpr std::int32_t kBatch = 8;
    run.build(model, kBatch, OptimizerConfig::defaults(OptimizerKind::Nadam), initial_weights(model, 1));
    std::vector<std::int32_t> ids(static_cast<std::size_t>(kBatch * 20)), labels(static_cast<std::size_t>(kBatch));
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i % 100);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 4);
    QVERIFY(run.train_step(ids.data(), labels.data(), kBatch, 7).finite);
}

}  // namespace

class TestGpuContexts : public QObject {
    Q_OBJECT

private slots:
    void onlyTheGpusARunUsesHoldAContext() {
        const char* dir = std::getenv("MIRRORLAB_TEST_GPU_PLUGIN_DIR");
        if (dir == nullptr || *dir == '\0') QSKIP("MIRRORLAB_TEST_GPU_PLUGIN_DIR is not set (run through CTest)");
        DeviceRegistry registry;
        const PluginLoadResult plugin = load_gpu_plugin(registry, {std::string(dir)});
        QVERIFY2(plugin.plugin_loaded && plugin.gpu_count == kGpus, qPrintable(QString::fromStdString(plugin.status)));

        // Discovery: every GPU with its free memory (what the other programs leave), no context.
        for (const PhysicalDevice& device : registry.physical_devices()) {
            if (device.type != DeviceType::GPU) continue;
            QCOMPARE(device.total_memory_bytes, kCapacityBytes);
            QCOMPARE(device.free_memory_bytes, kCapacityBytes - kOthersBytes);
        }
        QCOMPARE(mirrorlab_emulation_context_devices(), std::uint64_t{0});
        DeviceProvider* provider = registry.provider(DeviceType::GPU);
        QVERIFY(provider != nullptr);
        QCOMPARE(provider->free_memory_bytes(3), kCapacityBytes - kOthersBytes);  // the Devices panel asks
        QCOMPARE(mirrorlab_emulation_context_devices(), std::uint64_t{0});
        QVERIFY2(QString::fromStdString(provider->status()).contains(QStringLiteral("when a run uses them")),
                 provider->status().c_str());

        // A run on GPU 1 and GPU 2 that trains a step (streams, pinned uploads, NCCL, the update):
        // contexts there and nowhere else (a helper thread that forgot its device would touch GPU 0),
        // peer access between them both ways.
        {
            MirroredStrategy run(create_logical_devices(DeviceConfig::parse("gpu:1,gpu:2"), registry), AllReduceAlgorithm::Auto,
                                 [](LogLevel, const std::string&) {});
            train_one_step(run);
            QCOMPARE(mirrorlab_emulation_context_devices(), gpus({1, 2}));
            QCOMPARE(describe_peers(), QStringLiteral("1->2 2->1"));
            (void)run.memory();  // the device monitor's reading during the run
            QCOMPARE(mirrorlab_emulation_context_devices(), gpus({1, 2}));
        }
        // Then one on GPU 0: its context, and peer access with the GPUs this process already uses.
        {
            MirroredStrategy run(create_logical_devices(DeviceConfig::parse("gpu:0"), registry), AllReduceAlgorithm::Auto,
                                 [](LogLevel, const std::string&) {});
            train_one_step(run);
            QCOMPARE(mirrorlab_emulation_context_devices(), gpus({0, 1, 2}));
            QCOMPARE(describe_peers(), QStringLiteral("0->1 0->2 1->0 1->2 2->0 2->1"));
        }
        QVERIFY((mirrorlab_emulation_context_devices() & gpus({3})) == 0);  // never used, never touched
    }
};

QTEST_MAIN(TestGpuContexts)
#include "test_gpu_contexts.moc"
