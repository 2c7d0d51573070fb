// What a person with GPUs sees through mirrorlab-cli, on the CUDA host emulator's two GPUs
// (tests/cuda_emulation: gpu/'s own code with the CUDA runtime, cuBLAS, cuDNN and NCCL emulated
// on the CPU). Discovery (GPUs, no driver, no GPU; cuBLAS, cuDNN and NCCL left for the first GPU
// that trains, and what it says when they cannot load then), training on two virtual GPUs carved
// from one (TensorFlow's NCCL fallback line, device-timed phases, per-device memory) and with NCCL
// on two GPUs, and every way a GPU run can go wrong: out of memory on a virtual GPU, a GPU that does
// not exist, a virtual GPU too small to be useful, mixed CPU and GPU replicas, a NaN loss, a GPU
// that other programs have filled.
#include <QtTest/QtTest>

#include <cmath>

#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStringList>
#include <QTemporaryDir>

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif
#ifndef MIRRORLAB_EMULATED_PLUGIN_DIR
#error "MIRRORLAB_EMULATED_PLUGIN_DIR must name the emulated CUDA plugin's folder"
#endif

namespace {

constexpr int kTimeoutMs = 300000;

struct Run {
    bool finished = false;
    int exit_code = -1;
    QString out, err;
};

// mirrorlab-cli with the emulated plugin and `settings` (NAME=VALUE) for the emulator.
Run cli(const QStringList& arguments, const QStringList& settings = {}) {
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("MIRRORLAB_PLUGIN_DIR"), QStringLiteral(MIRRORLAB_EMULATED_PLUGIN_DIR));
    for (const QString& setting : settings) {
        environment.insert(setting.section(QLatin1Char('='), 0, 0), setting.section(QLatin1Char('='), 1));
    }
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(MIRRORLAB_CLI_PATH), arguments);
    Run run;
    if (!process.waitForStarted(kTimeoutMs)) return run;
    run.finished = process.waitForFinished(kTimeoutMs);
    if (!run.finished) process.kill();
    run.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err = QString::fromUtf8(process.readAllStandardError());
    return run;
}

QString describe(const Run& run) {
    return QStringLiteral("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3")
        .arg(run.exit_code)
        .arg(run.out.right(4000), run.err.right(4000));
}

QStringList train(const QString& devices, const QStringList& more = {}) {
    return QStringList{QStringLiteral("train"), QStringLiteral("--devices"), devices, QStringLiteral("--data"),
                       QStringLiteral("synthetic:64:32"), QStringLiteral("--epochs"), QStringLiteral("1")} +
           more;
}

}  // namespace

class TestEmulatedGpus : public QObject {
    Q_OBJECT

private slots:
    void devicesListsEveryGpu() {
        const Run run = cli({QStringLiteral("devices")});
        QVERIFY2(run.finished && run.exit_code == 0, qPrintable(describe(run)));
        QVERIFY2(run.out.contains(QStringLiteral("CPU:0")), qPrintable(describe(run)));
        for (const char* gpu : {"GPU:0  CUDA host emulator", "GPU:1  CUDA host emulator"}) {
            QVERIFY2(run.out.contains(QLatin1String(gpu)), qPrintable(describe(run)));
        }
        QVERIFY2(run.out.contains(QStringLiteral("4.00 GiB memory, compute capability 9.0")), qPrintable(describe(run)));
        // Listing devices loads only the plugin and the CUDA runtime; the line says when the rest loads.
        QVERIFY2(run.out.contains(QStringLiteral("GPU: CUDA runtime 13.0, driver 13.0: 2 GPUs, peer access GPU:0<->GPU:1 when a "
                                                 "run uses them; cuBLAS, cuDNN and NCCL load when a GPU trains\n")),
                 qPrintable(describe(run)));
        // Without NVML the free memory needs a CUDA context on every GPU: the line says so and why.
        const Run no_nvml = cli({QStringLiteral("devices")}, {QStringLiteral("MIRRORLAB_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1")});
        QVERIFY2(no_nvml.finished && no_nvml.exit_code == 0, qPrintable(describe(no_nvml)));
        QVERIFY2(no_nvml.out.contains(QStringLiteral("; free memory read through a CUDA context on every GPU (NVML: "
                                                     "/nonexistent/libnvidia-ml.so.1: cannot open shared object file")),
                 qPrintable(describe(no_nvml)));
        QVERIFY2(no_nvml.out.contains(QStringLiteral("GPU:1  CUDA host emulator")), qPrintable(describe(no_nvml)));
        // A MIG slice: NVML answers for its whole parent GPU; the slice's own memory is what counts.
        const Run slice = cli({QStringLiteral("devices")}, {QStringLiteral("MIRRORLAB_CUDA_EMULATION_NVML_PARENT_MIB=81920")});
        QVERIFY2(slice.finished && slice.exit_code == 0, qPrintable(describe(slice)));
        QVERIFY2(slice.out.contains(QStringLiteral("GPU:0  CUDA host emulator (CPU, not a GPU) - 4.00 GiB memory")),
                 qPrintable(describe(slice)));
        QVERIFY2(slice.out.contains(QStringLiteral("; GPU:0 free memory read through a CUDA context (NVML does not report "
                                                   "this GPU as CUDA sees it: a MIG slice?)")),
                 qPrintable(describe(slice)));
    }

    void devicesWithoutGpus_data() {
        QTest::addColumn<QString>("setting");
        QTest::addColumn<QString>("status");
        // The driver probe answers these before the plugin is opened.
        QTest::newRow("no driver library") << "MIRRORLAB_CUDA_DRIVER_LIBRARY=/nonexistent/libcuda.so.1"
                                           << "GPU: no CUDA driver found (/nonexistent/libcuda.so.1: cannot open shared object file";
        QTest::newRow("no GPU") << "MIRRORLAB_CUDA_EMULATION_GPUS=0"
                                << "GPU: no CUDA GPU found: cuInit returned CUDA_ERROR_NO_DEVICE (no CUDA-capable device "
                                   "is detected); CUDA driver 13.0; the CUDA backend was not loaded";
        QTest::newRow("GPUs skipped") << "MIRRORLAB_NO_GPU=1"
                                      << "GPU: GPUs skipped (--no-gpu or MIRRORLAB_NO_GPU); the CUDA backend was not loaded";
        // The driver library is there but the runtime cannot use it: the plugin says so.
        QTest::newRow("runtime finds no driver") << "MIRRORLAB_CUDA_EMULATION_DRIVER=none"
                                                 << "GPU: no CUDA driver found: cudaGetDeviceCount returned cudaErrorInsufficientDriver";
    }

    // One line says why there is no GPU, and the CPU is still there to train on.
    void devicesWithoutGpus() {
        QFETCH(QString, setting);
        QFETCH(QString, status);
        const Run devices = cli({QStringLiteral("devices")}, {setting});
        QVERIFY2(devices.finished && devices.exit_code == 0, qPrintable(describe(devices)));
        QVERIFY2(devices.out.contains(status), qPrintable(describe(devices)));
        QVERIFY2(!devices.out.contains(QStringLiteral("GPU:0")), qPrintable(describe(devices)));
        const Run training = cli(train(QStringLiteral("cpu")), {setting});
        QVERIFY2(training.finished && training.exit_code == 0, qPrintable(describe(training)));
        QVERIFY2(training.out.contains(QStringLiteral("2/2 - ")), qPrintable(describe(training)));
    }

    // cuDNN is loaded when a GPU first trains, not when the devices are listed: one of another
    // major version leaves the GPUs listed, and a run on one of them stops saying what to install.
    void cudnnOfAnotherMajorVersion() {
        const QString setting = QStringLiteral("MIRRORLAB_CUDA_EMULATION_CUDNN=80907");
        const Run devices = cli({QStringLiteral("devices")}, {setting});
        QVERIFY2(devices.finished && devices.exit_code == 0, qPrintable(describe(devices)));
        QVERIFY2(devices.out.contains(QStringLiteral("GPU:0  CUDA host emulator")), qPrintable(describe(devices)));
        QVERIFY2(devices.out.contains(QStringLiteral("cuBLAS, cuDNN and NCCL load when a GPU trains")),
                 qPrintable(describe(devices)));
        const Run training = cli(train(QStringLiteral("gpu:0")), {setting});
        QVERIFY2(training.finished && training.exit_code == 1, qPrintable(describe(training)));
        QVERIFY2(training.err.contains(QStringLiteral("mirrorlab-cli: error: device configuration: GPU:0 cannot be used: "
                                                      "cuDNN version mismatch: the CUDA backend was built with cuDNN 9.0.0 "
                                                      "but loaded 8.9.7; install cuDNN 9, or train on the CPU (--devices cpu)")),
                 qPrintable(describe(training)));
        const Run cpu = cli(train(QStringLiteral("cpu")), {setting});
        QVERIFY2(cpu.finished && cpu.exit_code == 0 && cpu.out.contains(QStringLiteral("2/2 - ")), qPrintable(describe(cpu)));
    }

    // An installation that lost libmirrorlab_cuda_compute.so (cuBLAS, cuDNN and NCCL's half of the
    // backend): the GPUs are still listed, and training on one names the missing file.
    void missingComputeModule() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (const char* file : {"libmirrorlab_cuda.so", "libmirrorlab_cuda_driver.so"}) {
            QVERIFY(QFile::copy(QStringLiteral(MIRRORLAB_EMULATED_PLUGIN_DIR "/") + QLatin1String(file),
                                dir.filePath(QLatin1String(file))));
        }
        const QString setting = QStringLiteral("MIRRORLAB_PLUGIN_DIR=") + dir.path();
        const Run devices = cli({QStringLiteral("devices")}, {setting});
        QVERIFY2(devices.finished && devices.exit_code == 0, qPrintable(describe(devices)));
        QVERIFY2(devices.out.contains(QStringLiteral("GPU:1  CUDA host emulator")), qPrintable(describe(devices)));
        const Run training = cli(train(QStringLiteral("gpu:0:2x256MB")), {setting});
        QVERIFY2(training.finished && training.exit_code == 1, qPrintable(describe(training)));
        for (const char* words : {"mirrorlab-cli: error: device configuration: GPU:0 cannot be used: ",
                                  "/libmirrorlab_cuda_compute.so is missing",
                                  "reinstall MirrorLab's CUDA backend (the mirrorlab-cuda package)",
                                  "or train on the CPU (--devices cpu)"}) {
            QVERIFY2(training.err.contains(QLatin1String(words)), qPrintable(describe(training)));
        }
    }

    // The tutorial's configuration: two 1024 MB virtual GPUs on one GPU.
    void trainsOnTwoVirtualGpus() {
        const Run run = cli(train(QStringLiteral("gpu:0:2x1024MB")));
        QVERIFY2(run.finished && run.exit_code == 0, qPrintable(describe(run)));
        for (const char* line : {"NCCL is not supported when using virtual GPUs, falling back to reduction to one device",
                                 "Using MirroredStrategy with devices (/device:GPU:0, /device:GPU:1)",
                                 "Reduce to /device:GPU:0 then broadcast to (/device:GPU:0, /device:GPU:1).",
                                 "2/2 - ", "val_sparse_top_k_categorical_accuracy: "}) {
            QVERIFY2(run.out.contains(QLatin1String(line)) || run.err.contains(QLatin1String(line)),
                     qPrintable(QStringLiteral("missing '%1'\n%2").arg(QLatin1String(line), describe(run))));
        }
        // The events a GUI draws: phases timed by CUDA events, memory per virtual GPU under its limit.
        const Run json = cli(train(QStringLiteral("gpu:0:2x1024MB"), {QStringLiteral("--json")}));
        QVERIFY2(json.finished && json.exit_code == 0, qPrintable(describe(json)));
        QVERIFY2(json.out.contains(QStringLiteral("\"timing\":\"device_events\"")), qPrintable(describe(json)));
        for (const char* device : {"{\"device\":\"/device:GPU:0\"", "{\"device\":\"/device:GPU:1\""}) {
            QVERIFY2(json.out.contains(QLatin1String(device)), qPrintable(describe(json)));
        }
        QVERIFY2(json.out.contains(QStringLiteral("\"limit_bytes\":1073741824,\"physical_free_bytes\":")),
                 qPrintable(describe(json)));
    }

    // Layer types whose ops the CUDA backend has no kernel for train on two virtual GPUs through
    // run_op's host fallback, to the CPU's loss, from a model file as a person writes it.
    void newLayerTypesTrainOnVirtualGpus_data() {
        QTest::addColumn<QString>("layers");
        QTest::newRow("GlobalAveragePooling1D")
            << QStringLiteral(R"({"class_name": "Conv1D", "config": {"filters": 16, "kernel_size": 5, "activation": "relu"}},
                                 {"class_name": "GlobalAveragePooling1D"},)");
        // The masks follow each replica's seed: cpu:2 draws the same two as the two virtual GPUs.
        QTest::newRow("SpatialDropout1D")
            << QStringLiteral(R"({"class_name": "SpatialDropout1D", "config": {"rate": 0.3}},
                                 {"class_name": "Conv1D", "config": {"filters": 16, "kernel_size": 5, "activation": "relu"}},
                                 {"class_name": "GlobalMaxPooling1D"},)");
    }

    void newLayerTypesTrainOnVirtualGpus() {
        QFETCH(QString, layers);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("model.json"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QStringLiteral(R"({"input_length": 60, "layers": [
            {"class_name": "Embedding", "config": {"input_dim": 30982, "output_dim": 8}}, %1
            {"class_name": "Dense", "config": {"units": 46, "activation": "softmax"}}]})")
                       .arg(layers)
                       .toUtf8());
        file.close();
        // Two epochs at a high learning rate, so that the second epoch's losses depend on the masks
        // and the arithmetic of the first (one CPU replica, drawing other masks, misses by ~6e-3).
        const QRegularExpression losses(QStringLiteral(" - (?:val_)?loss: ([0-9.]+)"));
        QList<double> found[2];
        int i = 0;
        for (const QString& devices : {QStringLiteral("gpu:0:2x256MB"), QStringLiteral("cpu:2")}) {
            const Run run = cli(train(devices, {QStringLiteral("--model"), path, QStringLiteral("--epochs"), QStringLiteral("2"),
                                                QStringLiteral("--learning-rate"), QStringLiteral("0.05")}));
            QVERIFY2(run.finished && run.exit_code == 0, qPrintable(describe(run)));
            for (const auto& match : losses.globalMatch(run.out)) found[i] << match.captured(1).toDouble();
            QVERIFY2(found[i].size() == 4, qPrintable(describe(run)));  // loss and val_loss of each epoch
            ++i;
        }
        for (qsizetype k = 0; k < found[0].size(); ++k) {
            QVERIFY2(std::abs(found[0][k] - found[1][k]) <= 2e-4,
                     qPrintable(QStringLiteral("loss %1 on the GPUs, %2 on the CPU").arg(found[0][k]).arg(found[1][k])));
        }
    }

    void trainsWithNcclOnTwoGpus() {
        const Run run = cli(train(QStringLiteral("gpu:0,gpu:1")));
        QVERIFY2(run.finished && run.exit_code == 0, qPrintable(describe(run)));
        QVERIFY2(run.out.contains(QStringLiteral("NCCL 2.28.0 all-reduce over (/device:GPU:0, /device:GPU:1)")) ||
                     run.err.contains(QStringLiteral("NCCL 2.28.0 all-reduce over (/device:GPU:0, /device:GPU:1)")),
                 qPrintable(describe(run)));
        QVERIFY2(run.out.contains(QStringLiteral("2/2 - ")), qPrintable(describe(run)));

        // NCCL that will not start: said in one warning, and the run goes on with a ring.
        const Run fallback = cli(train(QStringLiteral("gpu:0,gpu:1")), {QStringLiteral("MIRRORLAB_CUDA_EMULATION_FAIL=ncclCommInitAll")});
        QVERIFY2(fallback.finished && fallback.exit_code == 0, qPrintable(describe(fallback)));
        const QString both = fallback.out + fallback.err;
        QVERIFY2(both.contains(QStringLiteral("NCCL could not be started (device configuration: NCCL could not create "
                                              "communicators for GPU:0, GPU:1: unhandled system error); using a ring instead")),
                 qPrintable(describe(fallback)));
        QVERIFY2(both.contains(QStringLiteral("All-reduce: ring")) && fallback.out.contains(QStringLiteral("2/2 - ")),
                 qPrintable(describe(fallback)));
    }

    void gpuRunsThatCannotWork_data() {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QStringList>("reason");
        QTest::addColumn<QStringList>("settings");
        // A shared GPU: other programs hold all but ~10 MiB, far below the limits set.
        QTest::newRow("a GPU that other programs have filled")
            << train(QStringLiteral("gpu:0:2x1024MB"))
            << QStringList{QStringLiteral("out of memory on /device:GPU:0: GPU:0 refused"),
                           QStringLiteral("of its 4.00 GiB free"), QStringLiteral("Close programs that use GPU:0")}
            << QStringList{QStringLiteral("MIRRORLAB_CUDA_EMULATION_OTHER_MIB=4086")};
        QTest::newRow("out of memory on a virtual GPU")
            << QStringList{QStringLiteral("train"), QStringLiteral("--devices"), QStringLiteral("gpu:0:2x16MB"),
                           QStringLiteral("--data"), QStringLiteral("synthetic:4096:32"), QStringLiteral("--batch-size"),
                           QStringLiteral("4096"), QStringLiteral("--epochs"), QStringLiteral("1")}
            << QStringList{QStringLiteral("out of memory on /device:GPU:0"), QStringLiteral("limit of 16.0 MiB"),
                           QStringLiteral("lower the batch size")}
            << QStringList{};
        QTest::newRow("a GPU that does not exist")
            << train(QStringLiteral("gpu:2"))
            << QStringList{QStringLiteral("GPU:2 does not exist: this machine has 2 GPUs"),
                           QStringLiteral("use --devices cpu")}
            << QStringList{};
        QTest::newRow("a virtual GPU too small")
            << train(QStringLiteral("gpu:0:2x4MB"))
            << QStringList{QStringLiteral("a virtual device of 4 MB is too small; give each at least 16 MB")}
            << QStringList{};
        QTest::newRow("CPU and GPU replicas")
            << train(QStringLiteral("cpu,gpu:0"))
            << QStringList{QStringLiteral("mixing CPU and GPU replicas is not supported"),
                           QStringLiteral("train on the GPUs alone")}
            << QStringList{};
        QTest::newRow("cuDNN that will not start")
            << train(QStringLiteral("gpu:0:2x1024MB"))
            << QStringList{QStringLiteral("GPU:0 could not be set up: [cudnn] cudnnCreate failed on GPU:0: "
                                          "CUDNN_STATUS_NOT_INITIALIZED"),
                           QStringLiteral("check nvidia-smi, or train on the CPU (--devices cpu)")}
            << QStringList{QStringLiteral("MIRRORLAB_CUDA_EMULATION_FAIL=cudnnCreate")};
        QTest::newRow("cuBLAS that will not start")
            << train(QStringLiteral("gpu:1"))
            << QStringList{QStringLiteral("GPU:1 could not be set up: [cublas] cublasCreate failed on GPU:1")}
            << QStringList{QStringLiteral("MIRRORLAB_CUDA_EMULATION_FAIL=cublasCreate")};
        QTest::newRow("a NaN loss")
            << train(QStringLiteral("gpu:0:2x256MB"), {QStringLiteral("--optimizer"), QStringLiteral("sgd"),
                                                        QStringLiteral("--learning-rate"), QStringLiteral("1e30")})
            << QStringList{QStringLiteral("the loss became NaN at epoch 1, step 2"),
                           QStringLiteral("the weights from before this step are kept"),
                           QStringLiteral("Lower the learning rate")}
            << QStringList{};
    }

    // Each ends with exit code 1 and one "mirrorlab-cli: error:" line that names what is wrong and
    // what to do about it.
    void gpuRunsThatCannotWork() {
        QFETCH(QStringList, arguments);
        QFETCH(QStringList, reason);
        QFETCH(QStringList, settings);
        const Run run = cli(arguments, settings);
        QVERIFY2(run.finished && run.exit_code == 1, qPrintable(describe(run)));
        QString error;
        for (const QString& line : run.err.split(QLatin1Char('\n'))) {
            if (line.startsWith(QStringLiteral("mirrorlab-cli: error: "))) error = line;
        }
        for (const QString& words : reason) QVERIFY2(error.contains(words), qPrintable(describe(run)));
        // Said once: the trainer's log line of its failure is not printed besides (it was "ERROR: ...").
        QVERIFY2(run.err.count(reason.front()) == 1, qPrintable(describe(run)));
    }
};

QTEST_APPLESS_MAIN(TestEmulatedGpus)
#include "test_emulated_gpus.moc"
