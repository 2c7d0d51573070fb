// The CUDA plugin loader: whatever is (or is not) in the plugin directory, the program carries on
// with its CPU and says in one line why there is no GPU. Stand-in plugins built next to this test
// (tests/support/fake_gpu_plugin.cpp) cover every failure a user can meet; the real plugin is
// loaded too where it was built, which on a machine without a driver must say so. The emulated
// plugin (tests/cuda_emulation) shows when the plugin loads its compute module (cuBLAS, cuDNN,
// NCCL): at a GPU's first backend, not at discovery, and what a missing one costs.
#include <QtTest/QtTest>

#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <algorithm>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/util/error.h"

using namespace mirrorlab;

namespace {

const std::string kNotInstalled = "CUDA backend not installed (libmirrorlab_cuda.so not found)";

std::string fake(const char* variant) { return std::string(MIRRORLAB_FAKE_PLUGINS_DIR) + "/" + variant; }

int gpu_count(const DeviceRegistry& registry) {
    int gpus = 0;
    for (const auto& device : registry.physical_devices()) gpus += device.type == DeviceType::GPU ? 1 : 0;
    return gpus;
}

bool has_cpu(const DeviceRegistry& registry) { return registry.find(DeviceType::CPU, 0) != nullptr; }

// Loads `dir` into a fresh registry and checks what must hold whatever happened.
PluginLoadResult load_from(const std::string& dir, DeviceRegistry& registry) {
    const PluginLoadResult result = load_gpu_plugin(registry, {dir});
    if (!has_cpu(registry)) qFatal("the CPU vanished from the registry");
    if (result.status != registry.gpu_status()) qFatal("the result's status is not the registry's");
    if (result.status.find('\n') != std::string::npos) qFatal("the status is not one line");
    return result;
}

// True when a library whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
    QFile maps(QStringLiteral("/proc/self/maps"));
    if (!maps.open(QIODevice::ReadOnly)) qFatal("cannot read /proc/self/maps");
    return maps.readAll().contains(QByteArray::fromStdString(name));
}

}  // namespace

class TestPluginLoader : public QObject {
    Q_OBJECT

private slots:
    // The stand-in plugins have no driver of their own: the emulator's stand-in driver says there
    // is a GPU, so that the loader goes on to open them (the driver probe is tested below).
    void initTestCase() { qputenv("MIRRORLAB_CUDA_DRIVER_LIBRARY", MIRRORLAB_EMULATED_DRIVER_PATH); }

    void emptyDirectoryMeansNotInstalled() {
        QTemporaryDir dir;
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(dir.path().toStdString(), registry);
        QCOMPARE(result.status, kNotInstalled);
        QVERIFY(!result.plugin_loaded);
        QVERIFY(result.path.empty());
        QCOMPARE(gpu_count(registry), 0);
        QCOMPARE(registry.physical_devices().size(), std::size_t{1});
    }

    void noDirectoriesMeansNotInstalled() {
        DeviceRegistry registry;
        QCOMPARE(load_gpu_plugin(registry, {}).status, kNotInstalled);
        QCOMPARE(load_gpu_plugin(registry, {"/nonexistent/mirrorlab/plugins"}).status, kNotInstalled);
    }

    void bogusFileIsReportedWithItsPath() {
        QTemporaryDir dir;
        QFile file(dir.filePath("libmirrorlab_cuda.so"));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("this is not a shared library\n");
        file.close();
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(dir.path().toStdString(), registry);
        QVERIFY2(result.status.rfind("CUDA backend could not be loaded: ", 0) == 0, result.status.c_str());
        QVERIFY2(result.status.find("libmirrorlab_cuda.so") != std::string::npos, result.status.c_str());
        QVERIFY(!result.plugin_loaded);
        QCOMPARE(gpu_count(registry), 0);
    }

    void missingDependencyIsNamed() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("missing_dependency"), registry);
        QVERIFY2(result.status.rfind("CUDA backend could not be loaded: ", 0) == 0, result.status.c_str());
        QVERIFY2(result.status.find("libmirrorlab_fake_dependency.so") != std::string::npos, result.status.c_str());
        QCOMPARE(gpu_count(registry), 0);
    }

    void libraryWithoutEntryPointsIsRejected() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("no_symbols"), registry);
        QVERIFY2(result.status.find("is not a MirrorLab plugin") != std::string::npos, result.status.c_str());
        QVERIFY(!result.plugin_loaded);
    }

    void abiMismatchIsRejected() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("bad_abi"), registry);
        const std::string expected = "was built for plugin ABI " + std::to_string(kPluginAbiVersion + 1000) +
                                     ", this program needs ABI " + std::to_string(kPluginAbiVersion);
        QVERIFY2(result.status.find(expected) != std::string::npos, result.status.c_str());
        QVERIFY(!result.plugin_loaded);
        QCOMPARE(gpu_count(registry), 0);
    }

    void layoutMismatchIsRejected() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("bad_fingerprint"), registry);
        QVERIFY2(result.status.find("ABI fingerprint mismatch") != std::string::npos, result.status.c_str());
        QCOMPARE(gpu_count(registry), 0);
    }

    void failedInitialisationIsReported() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("failing"), registry);
        QCOMPARE(result.status, std::string("CUDA backend failed to initialise: cuInit failed in the fake plugin"));
        QCOMPARE(gpu_count(registry), 0);
    }

    void noDriverLeavesTheCpu() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("no_driver"), registry);
        QVERIFY(result.plugin_loaded);
        QCOMPARE(result.gpu_count, 0);
        QCOMPARE(result.status, std::string("no CUDA driver found: fake plugin without a driver"));
        QVERIFY(registry.provider(DeviceType::GPU) == nullptr);
        // The reason reaches the person who asks for a GPU anyway.
        try {
            DeviceConfig::parse("gpu:0").validate(registry);
            QFAIL("gpu:0 was accepted without a GPU");
        } catch (const DeviceConfigError& error) {
            QVERIFY2(std::string(error.what()).find("no CUDA driver found") != std::string::npos, error.what());
        }
        QCOMPARE(DeviceConfig::default_for(registry).to_spec(), std::string("cpu"));
    }

    void workingPluginAddsItsGpus() {
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("good"), registry);
        QVERIFY(result.plugin_loaded);
        QCOMPARE(result.gpu_count, 1);
        QCOMPARE(result.status, std::string("fake CUDA plugin: 1 GPU"));
        const PhysicalDevice* gpu = registry.find(DeviceType::GPU, 0);
        QVERIFY(gpu != nullptr);
        QCOMPARE(gpu->name, std::string("Fake Plugin GPU"));
        QCOMPARE(gpu->bus_id, std::string("0000:42:00.0"));
        QVERIFY(has_cpu(registry));
        QCOMPARE(DeviceConfig::default_for(registry).to_spec(), std::string("gpu:0"));

        // Loading again changes nothing; another registry shares the one provider.
        QCOMPARE(load_gpu_plugin(registry, {fake("good")}).gpu_count, 1);
        QCOMPARE(gpu_count(registry), 1);
        DeviceRegistry other;
        load_gpu_plugin(other, {fake("good")});
        QCOMPARE(other.provider(DeviceType::GPU), registry.provider(DeviceType::GPU));
    }

    void firstDirectoryWithThePluginWins() {
        QTemporaryDir empty;
        DeviceRegistry registry;
        QCOMPARE(load_gpu_plugin(registry, {empty.path().toStdString(), fake("good")}).gpu_count, 1);
        // A broken plugin earlier in the list is reported, not skipped silently.
        DeviceRegistry second;
        const PluginLoadResult result = load_gpu_plugin(second, {fake("bad_abi"), fake("good")});
        QVERIFY2(result.status.find("ABI") != std::string::npos, result.status.c_str());
        QCOMPARE(gpu_count(second), 0);
    }

    void environmentVariableIsTheWholeSearchPath() {
        qputenv("MIRRORLAB_PLUGIN_DIR", QByteArray::fromStdString(fake("good") + ":/nonexistent"));
        const std::vector<std::string> dirs = gpu_plugin_search_dirs();
        DeviceRegistry registry;
        const PluginLoadResult result = load_gpu_plugin(registry);
        QCOMPARE(dirs, (std::vector<std::string>{fake("good"), "/nonexistent"}));
        QCOMPARE(result.gpu_count, 1);
        // An empty folder, or an empty value, means no plugin, even where one sits next to the program.
        QTemporaryDir empty;
        qputenv("MIRRORLAB_PLUGIN_DIR", empty.path().toUtf8());
        QCOMPARE(gpu_plugin_search_dirs(), std::vector<std::string>{empty.path().toStdString()});
        qputenv("MIRRORLAB_PLUGIN_DIR", "");
        QVERIFY(gpu_plugin_search_dirs().empty());
        DeviceRegistry without;
        QCOMPARE(load_gpu_plugin(without).status, kNotInstalled);
        qunsetenv("MIRRORLAB_PLUGIN_DIR");
        const std::vector<std::string> defaults = gpu_plugin_search_dirs();
        const std::string exe_dir = QCoreApplication::applicationDirPath().toStdString();
        QVERIFY(std::find(defaults.begin(), defaults.end(), exe_dir) != defaults.end());
        QVERIFY(std::find(defaults.begin(), defaults.end(), exe_dir + "/../gpu") != defaults.end());
    }

    // Without a driver library the plugin is never opened: nothing of CUDA is mapped.
    void noDriverMeansThePluginIsNotOpened() {
        // A plugin this process has never opened (the fakes' folders are opened by other cases).
        QTemporaryDir dir;
        const QString copy = dir.filePath(QStringLiteral("libmirrorlab_cuda.so"));
        QVERIFY(QFile::copy(QString::fromStdString(fake("good") + "/libmirrorlab_cuda.so"), copy));
        qputenv("MIRRORLAB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(dir.path().toStdString(), registry);
        qputenv("MIRRORLAB_CUDA_DRIVER_LIBRARY", MIRRORLAB_EMULATED_DRIVER_PATH);
        QVERIFY2(result.status.rfind("no CUDA driver found (/nonexistent/libcuda.so.1: ", 0) == 0, result.status.c_str());
        QVERIFY2(result.status.find("; the CUDA backend was not loaded") != std::string::npos, result.status.c_str());
        QVERIFY(!result.plugin_loaded);
        QVERIFY(!result.path.empty());  // found, but not opened
        QVERIFY(!mapped(copy.toStdString()));
        QCOMPARE(gpu_count(registry), 0);
        QCOMPARE(DeviceConfig::default_for(registry).to_spec(), std::string("cpu"));
    }

    // A driver that finds no GPU: the line says what the driver said.
    void driverWithoutGpusIsNamed() {
        qputenv("MIRRORLAB_CUDA_EMULATION_GPUS", "0");
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("good"), registry);
        qunsetenv("MIRRORLAB_CUDA_EMULATION_GPUS");
        QCOMPARE(result.status, std::string("no CUDA GPU found: cuInit returned CUDA_ERROR_NO_DEVICE (no CUDA-capable "
                                            "device is detected); CUDA driver 13.0; the CUDA backend was not loaded"));
        QCOMPARE(result.driver.library, std::string(MIRRORLAB_EMULATED_DRIVER_PATH));
        QVERIFY(result.driver.found);
        QCOMPARE(result.driver.gpu_count, 0);
        QCOMPARE(gpu_count(registry), 0);
        const CudaDriverProbe two = probe_cuda_driver(MIRRORLAB_EMULATED_DRIVER_PATH);
        QCOMPARE(two.gpu_count, 2);
        QCOMPARE(two.driver_version, 13000);
        QVERIFY(two.problem.empty());
    }

    // A library that is not a CUDA driver is not taken for one.
    void libraryWithoutTheDriverApiIsNoDriver() {
        const std::string not_a_driver = std::string(MIRRORLAB_FAKE_PLUGINS_DIR) + "/dependency/libmirrorlab_fake_dependency.so";
        const CudaDriverProbe probe = probe_cuda_driver(not_a_driver);
        QVERIFY(!probe.found);
        QCOMPARE(probe.problem, "no CUDA driver found (" + not_a_driver + " lacks cuInit or cuDeviceGetCount)");
    }

    // --no-gpu, MIRRORLAB_NO_GPU: no plugin looked for, no driver asked.
    void gpusCanBeSkipped() {
        qputenv("MIRRORLAB_NO_GPU", "1");
        QVERIFY(gpus_skipped());
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(fake("good"), registry);
        QCOMPARE(result.status, std::string("GPUs skipped (--no-gpu or MIRRORLAB_NO_GPU); the CUDA backend was not loaded"));
        QVERIFY(result.path.empty());
        QVERIFY(result.driver.library.empty());
        QCOMPARE(gpu_count(registry), 0);
        qputenv("MIRRORLAB_NO_GPU", "0");
        QVERIFY(!gpus_skipped());
        qunsetenv("MIRRORLAB_NO_GPU");
        QVERIFY(!gpus_skipped());
        for (const QStringList& arguments : {QStringList{QStringLiteral("--no-gpu"), QStringLiteral("devices")},
                                             QStringList{QStringLiteral("devices"), QStringLiteral("--no-gpu")}}) {
            QProcess cli;
            cli.start(QStringLiteral(MIRRORLAB_CLI_PATH), arguments);
            QVERIFY(cli.waitForFinished(60000));
            const QString out = QString::fromUtf8(cli.readAllStandardOutput() + cli.readAllStandardError());
            QVERIFY2(cli.exitCode() == 0, qPrintable(out));
            QVERIFY2(out.contains(QStringLiteral("GPU: GPUs skipped (--no-gpu or MIRRORLAB_NO_GPU)")), qPrintable(out));
            QVERIFY2(out.contains(QStringLiteral("CPU:0")), qPrintable(out));
        }
    }

    void realPluginLoadsOrSaysWhy() {
        const std::string dir = MIRRORLAB_CUDA_PLUGIN_DIR;
        if (dir.empty()) QSKIP("the CUDA plugin is not built in this tree (no nvcc or no cuDNN at configure time)");
        // The machine's own driver, as a user's program asks it.
        qunsetenv("MIRRORLAB_CUDA_DRIVER_LIBRARY");
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(dir, registry);
        qputenv("MIRRORLAB_CUDA_DRIVER_LIBRARY", MIRRORLAB_EMULATED_DRIVER_PATH);
        qInfo("CUDA plugin: %s", result.status.c_str());
        QVERIFY(!result.status.empty());
        if (result.driver.gpu_count == 0) {
            // No GPU for the driver (or no driver): the plugin and cuBLAS, cuDNN, NCCL stay unloaded.
            QVERIFY2(!result.plugin_loaded, result.status.c_str());
            QVERIFY2(!mapped(dir + "/libmirrorlab_cuda.so") && !mapped("libcublas") && !mapped("libcudnn") && !mapped("libnccl"),
                     "CUDA libraries are mapped on a machine without a GPU");
            const bool reason = result.status.find("no CUDA driver found (") == 0 ||
                                result.status.find("no CUDA GPU found: ") == 0 ||
                                result.status.find("CUDA driver failed") == 0;
            QVERIFY2(reason, result.status.c_str());
            return;
        }
        QVERIFY2(result.plugin_loaded, result.status.c_str());
        // Discovery needs the CUDA runtime alone: cuBLAS, cuDNN and NCCL wait for a GPU to train.
        QVERIFY2(!mapped("libmirrorlab_cuda_compute") && !mapped("libcublas") && !mapped("libcudnn") && !mapped("libnccl"),
                 "discovering the GPUs mapped cuBLAS, cuDNN or NCCL");
        if (result.gpu_count == 0) {
            // No GPU here: the line names the reason (no driver, no device, a failed initialisation).
            const bool reason = result.status.find("no CUDA driver found") == 0 ||
                                result.status.find("no CUDA GPU found") == 0 ||
                                result.status.find("CUDA driver too old") == 0 ||
                                result.status.find("CUDA initialisation failed") == 0 ||
                                result.status.find("cuDNN version mismatch") == 0;
            QVERIFY2(reason, result.status.c_str());
        } else {
            QVERIFY2(result.status.find("GPU") != std::string::npos, result.status.c_str());
            const PhysicalDevice* gpu = registry.find(DeviceType::GPU, registry.physical_devices()[1].index);
            QVERIFY(gpu != nullptr);
            QVERIFY(gpu->total_memory_bytes > 0);
            QVERIFY(!gpu->compute_capability.empty());
            QVERIFY(!gpu->bus_id.empty());
        }
    }

    // The plugin opens its compute module (cuBLAS, cuDNN, NCCL) when a GPU's first backend is
    // made, not at discovery; the provider's status says which has happened. On the emulator.
    void computeModuleLoadsWhenAGpuIsFirstUsed() {
        const std::string module = std::string(MIRRORLAB_EMULATED_PLUGIN_DIR) + "/libmirrorlab_cuda_compute.so";
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(MIRRORLAB_EMULATED_PLUGIN_DIR, registry);
        QVERIFY2(result.gpu_count == 2, result.status.c_str());
        QCOMPARE(result.status, std::string("CUDA runtime 13.0, driver 13.0: 2 GPUs, peer access GPU:0<->GPU:1 when a run uses them; "
                                            "cuBLAS, cuDNN and NCCL load when a GPU trains"));
        QVERIFY2(!mapped(module), "discovery loaded the compute module");
        DeviceProvider* provider = registry.provider(DeviceType::GPU);
        QVERIFY(provider != nullptr);
        QVERIFY(provider->supports_collectives());  // known without loading NCCL
        QVERIFY(!mapped(module));

        std::unique_ptr<Backend> backend = provider->create_backend(0);
        QVERIFY(backend != nullptr);
        QVERIFY2(mapped(module), "the first GPU backend did not load the compute module");
        QCOMPARE(provider->status(), std::string("CUDA runtime 13.0, driver 13.0: 2 GPUs, peer access GPU:0<->GPU:1 when a run uses them; "
                                                 "cuDNN 9.0.0, NCCL 2.28.0 loaded"));
        // Loaded once: the second GPU's backend uses the same module.
        std::unique_ptr<Backend> second = provider->create_backend(1);
        QVERIFY(second != nullptr);
        QCOMPARE(provider->status(), std::string("CUDA runtime 13.0, driver 13.0: 2 GPUs, peer access GPU:0<->GPU:1 when a run uses them; "
                                                 "cuDNN 9.0.0, NCCL 2.28.0 loaded"));
    }

    void computeModuleThatCannotServeIsNamed_data() {
        QTest::addColumn<QString>("module");  // copied beside the plugin as libmirrorlab_cuda_compute.so
        QTest::addColumn<QStringList>("words");
        QTest::newRow("missing") << QString()
                                 << QStringList{QStringLiteral("/libmirrorlab_cuda_compute.so is missing"),
                                                QStringLiteral("reinstall MirrorLab's CUDA backend (the mirrorlab-cuda package)")};
        // As when libcudnn.so.9 is not installed: the dynamic linker's reason names the library.
        QTest::newRow("a library it needs is missing")
            << QStringLiteral(MIRRORLAB_FAKE_COMPUTE_DIR "/missing_dependency/libmirrorlab_cuda_compute.so")
            << QStringList{QStringLiteral("libmirrorlab_cuda_compute.so could not be loaded: "
                                          "libmirrorlab_fake_compute_dependency.so: cannot open shared object file"),
                           QStringLiteral("install cuDNN 9, cuBLAS and NCCL 2 for CUDA 13")};
        QTest::newRow("from another build")
            << QStringLiteral(MIRRORLAB_FAKE_COMPUTE_DIR "/bad_fingerprint/libmirrorlab_cuda_compute.so")
            << QStringList{QStringLiteral("/libmirrorlab_cuda_compute.so was built from another version of MirrorLab "
                                          "than libmirrorlab_cuda.so (ABI fingerprint mismatch)"),
                           QStringLiteral("reinstall MirrorLab's CUDA backend")};
        QTest::newRow("not a compute module")
            << QString::fromStdString(fake("good") + "/libmirrorlab_cuda.so")
            << QStringList{QStringLiteral("/libmirrorlab_cuda_compute.so is not MirrorLab's CUDA compute module (it lacks "
                                          "mirrorlab_cuda_compute_api); reinstall MirrorLab's CUDA backend")};
    }

    // A plugin whose compute module is missing or broken still lists the GPUs (discovery needs
    // only the CUDA runtime); a GPU's backend then fails saying what is wrong, every time.
    void computeModuleThatCannotServeIsNamed() {
        QFETCH(QString, module);
        QFETCH(QStringList, words);
        // A copy of the emulated plugin this process has not opened, so its loader starts afresh;
        // the emulator's library is found through the plugin's run path to the build tree.
        QTemporaryDir dir;
        for (const char* file : {"libmirrorlab_cuda.so", "libmirrorlab_cuda_driver.so"}) {
            QVERIFY(QFile::copy(QStringLiteral(MIRRORLAB_EMULATED_PLUGIN_DIR "/") + QLatin1String(file),
                                dir.filePath(QLatin1String(file))));
        }
        if (!module.isEmpty()) QVERIFY(QFile::copy(module, dir.filePath(QStringLiteral("libmirrorlab_cuda_compute.so"))));
        DeviceRegistry registry;
        const PluginLoadResult result = load_from(dir.path().toStdString(), registry);
        QVERIFY2(result.gpu_count == 2, result.status.c_str());
        DeviceProvider* provider = registry.provider(DeviceType::GPU);
        QVERIFY(provider != nullptr);
        for (int attempt = 0; attempt < 2; ++attempt) {
            try {
                provider->create_backend(0);
                QFAIL("a GPU backend was made without a working compute module");
            } catch (const DeviceConfigError& error) {
                const std::string what = error.what();
                QVERIFY2(what.rfind("device configuration: GPU:0 cannot be used: ", 0) == 0, what.c_str());
                for (const QString& word : words) QVERIFY2(what.find(word.toStdString()) != std::string::npos, what.c_str());
                QVERIFY2(what.find("train on the CPU (--devices cpu)") != std::string::npos, what.c_str());
            }
        }
        const std::string status = provider->status();
        QVERIFY2(status.find("; the GPUs cannot train: ") != std::string::npos, status.c_str());
        QVERIFY2(status.find(words.front().toStdString()) != std::string::npos, status.c_str());
    }

    void cliListsTheCpuAndOneGpuLine() {
        QProcess cli;
        cli.start(QStringLiteral(MIRRORLAB_CLI_PATH), {QStringLiteral("devices")});
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        const QString out = QString::fromUtf8(cli.readAllStandardOutput());
        QVERIFY2(out.contains(QStringLiteral("CPU:0")), qPrintable(out));
        const QStringList gpu_lines = out.split('\n').filter(QRegularExpression(QStringLiteral("^GPU: ")));
        QCOMPARE(gpu_lines.size(), 1);
        if (!std::string(MIRRORLAB_CUDA_PLUGIN_DIR).empty()) {
            // The CLI found the plugin in the build tree on its own.
            QVERIFY2(!gpu_lines.front().contains(QStringLiteral("not installed")), qPrintable(out));
            QVERIFY2(!gpu_lines.front().contains(QStringLiteral("no GPU backend loaded")), qPrintable(out));
        }
    }
};

QTEST_GUILESS_MAIN(TestPluginLoader)
#include "test_plugin_loader.moc"
