// CI's benchmark smoke test: `mirrorlab-cli bench --json` for a few steps, with the fast kernels
// and with MIRRORLAB_CPU_KERNELS=reference. It used to pass when the output merely contained
// "samples_per_second", so a crash after printing passed too. Now the program must exit with 0
// and print one JSON object whose fields a person reads are filled in and agree with what was
// asked: the devices and replicas, the step counts, the kernels, positive speeds and a finite loss.
// No timing is judged. CTest runs each case as its own test (bench_smoke, bench_smoke_reference,
// bench_flops: the epoch's FLOP count, in process).
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

#include "core/model/model.h"
#include "core/train/bench.h"

namespace {

struct Bench {
    int exit_code = -1;
    QProcess::ExitStatus exit_status = QProcess::CrashExit;
    QByteArray out, err;
};

Bench run_bench(const QStringList& arguments, const QString& kernels) {
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    if (kernels.isEmpty()) {
        environment.remove(QStringLiteral("MIRRORLAB_CPU_KERNELS"));
    } else {
        environment.insert(QStringLiteral("MIRRORLAB_CPU_KERNELS"), kernels);
    }
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(MIRRORLAB_CLI_PATH),
                  QStringList{QStringLiteral("bench")} + arguments);
    Bench bench;
    if (!process.waitForFinished(280000)) {
        process.kill();
        process.waitForFinished();
        bench.err = "did not finish within 280 s: " + process.readAllStandardError();
        return bench;
    }
    bench.exit_code = process.exitCode();
    bench.exit_status = process.exitStatus();
    bench.out = process.readAllStandardOutput();
    bench.err = process.readAllStandardError();
    return bench;
}

bool positive(const QJsonValue& value) {
    return value.isDouble() && std::isfinite(value.toDouble()) && value.toDouble() > 0;
}

}  // namespace

class TestBenchSmoke : public QObject {
    Q_OBJECT

    void check(const QStringList& arguments, const QString& kernels, const QString& devices,
               int replicas, int steps, int validation_steps, int train_samples,
               int validation_samples, int scaling_replicas) {
        const Bench bench = run_bench(arguments, kernels);
        const QString context = "mirrorlab-cli bench " + arguments.join(' ') + "\nstderr:\n" +
                                QString::fromUtf8(bench.err);
        QVERIFY2(bench.exit_status == QProcess::NormalExit, qPrintable("crashed: " + context));
        QVERIFY2(bench.exit_code == 0,
                 qPrintable(QString("exit code %1: ").arg(bench.exit_code) + context));

        QJsonParseError error;
        const QJsonDocument document = QJsonDocument::fromJson(bench.out, &error);
        QVERIFY2(error.error == QJsonParseError::NoError && document.isObject(),
                 qPrintable("stdout is not one JSON object (" + error.errorString() + "):\n" +
                            QString::fromUtf8(bench.out)));
        const QJsonObject root = document.object();
        const QJsonObject run = root.value(QStringLiteral("run")).toObject();
        const QString shown = QString::fromUtf8(bench.out);

        // What was asked for.
        QCOMPARE(run.value(QStringLiteral("devices")).toString(), devices);
        QCOMPARE(run.value(QStringLiteral("replicas")).toInt(), replicas);
        QCOMPARE(run.value(QStringLiteral("steps_per_epoch")).toInt(), steps);
        QCOMPARE(run.value(QStringLiteral("validation_steps")).toInt(), validation_steps);
        QCOMPARE(root.value(QStringLiteral("batch_size")).toInt(), 32);
        QCOMPARE(root.value(QStringLiteral("train_samples")).toInt(), train_samples);
        QCOMPARE(root.value(QStringLiteral("validation_samples")).toInt(), validation_samples);
        QCOMPARE(run.value(QStringLiteral("epoch_seconds_each")).toArray().size(), 1);
        const QString backend = root.value(QStringLiteral("backend")).toString();
        if (kernels == QStringLiteral("reference")) {
            QCOMPARE(backend, QStringLiteral("cpu-reference"));
        } else {
            QVERIFY2(backend.startsWith(QStringLiteral("cpu-fast")), qPrintable(backend));
        }
        QVERIFY2(!root.value(QStringLiteral("cpu")).toString().isEmpty(), qPrintable(shown));
        QVERIFY(root.value(QStringLiteral("cores")).toInt() >= 1);
        // Where Linux says what caches the CPU has, the bench names them beside its speed figures.
        if (QFile::exists(QStringLiteral("/sys/devices/system/cpu/cpu0/cache/index2/size"))) {
            const QString caches = root.value(QStringLiteral("cpu_caches")).toString();
            QVERIFY2(caches.contains(QRegularExpression(QStringLiteral("(^|, )L2 [0-9]+ (KiB|MiB)"))),
                     qPrintable("cpu_caches: " + caches));
        }
        QVERIFY(run.value(QStringLiteral("threads")).toInt() >= 1);

        // The numbers a person reads are there and sane (not judged against any speed).
        for (const char* field :
             {"ms_per_step", "samples_per_second", "epoch_seconds", "train_seconds",
              "validation_seconds", "epoch_end_snapshot_ms", "peak_rss_mib", "final_loss"}) {
            QVERIFY2(positive(run.value(QString::fromLatin1(field))),
                     qPrintable(QString("run.%1 in\n%2").arg(field, shown)));
        }
        // Memory as a user sees it: the whole process's peak holds the start, the data and the run.
        const double process_peak = root.value(QStringLiteral("process_peak_rss_mib")).toDouble();
        const double startup = root.value(QStringLiteral("startup_rss_mib")).toDouble();
        QVERIFY2(startup > 0 && root.value(QStringLiteral("data_rss_mib")).toDouble() >= 0, qPrintable(shown));
        QVERIFY2(process_peak >= startup + root.value(QStringLiteral("data_rss_mib")).toDouble() - 1.0, qPrintable(shown));
        QVERIFY2(process_peak >= run.value(QStringLiteral("peak_rss_mib")).toDouble(), qPrintable(shown));
        const double per_step = 32 * 1000.0 / run.value(QStringLiteral("ms_per_step")).toDouble();
        QVERIFY2(std::abs(run.value(QStringLiteral("samples_per_second")).toDouble() - per_step) <=
                     1e-6 * per_step + 1e-9,
                 qPrintable("samples_per_second is not batch / ms_per_step:\n" + shown));
        // The epoch against the FMA units (bench.h): the work, a measured peak for the kernels'
        // instruction set, and a floor no epoch can beat.
        const QJsonObject fma = root.value(QStringLiteral("fma_peak")).toObject();
        const QString isa = fma.value(QStringLiteral("isa")).toString();
        QVERIFY2(isa == "avx512" || isa == "avx2" || isa == "generic", qPrintable(shown));
        if (kernels != QStringLiteral("reference"))
            QCOMPARE(root.value(QStringLiteral("kernel_isa")).toString(), isa);
        QVERIFY2(backend.contains(root.value(QStringLiteral("kernel_isa")).toString()), qPrintable(shown));
        QVERIFY2(fma.value(QStringLiteral("threads")).toInt() >= 1, qPrintable(shown));
        const double one_core = fma.value(QStringLiteral("one_core_gflops")).toDouble();
        const double all_cores = fma.value(QStringLiteral("all_core_gflops")).toDouble();
        QVERIFY2(positive(fma.value(QStringLiteral("one_core_gflops"))) && positive(fma.value(QStringLiteral("all_core_gflops"))),
                 qPrintable(shown));
        QVERIFY2(all_cores >= 0.5 * one_core, qPrintable(shown));  // never below a core's share of it
        for (const char* field :
             {"epoch_flops", "achieved_gflops", "floor_seconds", "floor_ratio", "cpu_floor_seconds", "cpu_floor_ratio"})
            QVERIFY2(positive(root.value(QString::fromLatin1(field))), qPrintable(QString("%1 in\n%2").arg(field, shown)));
        // model_flops of the tutorial model: 3,335,040 forward and 10,005,120 forward + backward
        // per sample (the formula in bench.h).
        const double trained = std::min(train_samples, steps * 32), validated = validation_samples;
        QCOMPARE(root.value(QStringLiteral("epoch_flops")).toDouble(), 10005120.0 * trained + 3335040.0 * validated);
        const double epoch = run.value(QStringLiteral("epoch_seconds")).toDouble();
        const double floor = root.value(QStringLiteral("floor_seconds")).toDouble();
        QVERIFY2(floor < epoch, qPrintable(shown));
        QVERIFY2(std::abs(root.value(QStringLiteral("floor_ratio")).toDouble() - epoch / floor) <= 1e-6 * epoch / floor,
                 qPrintable(shown));
        QVERIFY2(std::abs(root.value(QStringLiteral("achieved_gflops")).toDouble() -
                          root.value(QStringLiteral("epoch_flops")).toDouble() / epoch / 1e9) <= 1e-6 * (1 + all_cores),
                 qPrintable(shown));

        const QJsonObject phases = run.value(QStringLiteral("phases")).toObject();
        QVERIFY2(positive(phases.value(QStringLiteral("forward_ms"))) &&
                     positive(phases.value(QStringLiteral("backward_ms"))) &&
                     positive(phases.value(QStringLiteral("update_ms"))),
                 qPrintable(shown));

        // Where a step goes (step_parts.h): one replica's shard, each layer by name (the fused
        // Conv1D + MaxPooling1D pairs as one row), then the loss and the update; the layers' GEMM
        // work adds up to the model's per-sample work times the shard.
        const QJsonObject step_parts = root.value(QStringLiteral("step_parts")).toObject();
        const int shard = 32 / replicas;
        QCOMPARE(step_parts.value(QStringLiteral("batch")).toInt(), shard);
        const QJsonArray parts = step_parts.value(QStringLiteral("parts")).toArray();
        QStringList names;
        double gflop = 0.0;
        for (const QJsonValue& value : parts) {
            const QJsonObject part = value.toObject();
            names << part.value(QStringLiteral("name")).toString();
            gflop += part.value(QStringLiteral("gflop")).toDouble();
            QVERIFY2(part.value(QStringLiteral("forward_ms")).toDouble() >= 0 &&
                         part.value(QStringLiteral("backward_ms")).toDouble() >= 0,
                     qPrintable(shown));
        }
        QCOMPARE(names, QStringList({"embedding", "conv1d + max_pooling1d", "conv1d_1 + max_pooling1d_1", "flatten",
                                     "dense", "loss (softmax cross-entropy)", "update (finite check, optimizer)"}));
        QVERIFY2(std::abs(gflop - 10005120.0 * shard / 1e9) < 1e-9, qPrintable(shown));
        for (int row : {1, 2, 4}) {  // the GEMM-shaped layers take time both ways
            const QJsonObject part = parts.at(row).toObject();
            QVERIFY2(positive(part.value(QStringLiteral("forward_ms"))) &&
                         positive(part.value(QStringLiteral("backward_ms"))),
                     qPrintable(shown));
        }
        QVERIFY2(positive(parts.at(6).toObject().value(QStringLiteral("forward_ms"))), qPrintable(shown));

        // The scaling table (bench.h): 1..N replicas, one replica on every core where there are
        // several, and N independent copies where N > 1.
        const QJsonArray scaling = root.value(QStringLiteral("scaling")).toArray();
        const int cores = root.value(QStringLiteral("cores")).toInt();
        const int rows = scaling_replicas == 0 ? 0
                                               : scaling_replicas + (cores > 1 ? 1 : 0) +
                                                     (scaling_replicas > 1 ? 1 : 0);
        QCOMPARE(scaling.size(), rows);
        int highest = 0;
        for (const QJsonValue& row : scaling) {
            const QJsonObject entry = row.toObject();
            highest = std::max(highest, entry.value(QStringLiteral("replicas")).toInt());
            QVERIFY2(entry.value(QStringLiteral("threads")).toInt() >= 1, qPrintable(shown));
            QVERIFY2(positive(entry.value(QStringLiteral("samples_per_second"))),
                     qPrintable(shown));
            QVERIFY2(positive(entry.value(QStringLiteral("efficiency"))), qPrintable(shown));
        }
        QCOMPARE(highest, scaling_replicas);
        if (scaling_replicas > 1)
            QVERIFY(scaling.last().toObject().value(QStringLiteral("independent_copies")).toBool());
    }

  private slots:
    // The figure: an epoch of the tutorial model on Reuters is about 97 GFLOP.
    void epochFlops() {
        const mirrorlab::Model model = mirrorlab::Model::reference();
        const mirrorlab::ModelFlops flops = mirrorlab::model_flops(model);
        QCOMPARE(flops.forward_per_sample, 2.0 * (296 * 35 * 64 + 146 * 192 * 32 + 2336 * 46));
        QCOMPARE(flops.training_per_sample, 3 * flops.forward_per_sample);  // conv1's input feeds the embedding
        const double epoch = mirrorlab::epoch_flops(model, 8982, 2246);
        QVERIFY2(epoch > 97.0e9 && epoch < 97.8e9, qPrintable(QString::number(epoch)));
    }
    void fastKernels() {
        check({"--devices", "cpu:2", "--steps", "5", "--epochs", "1", "--data", "synthetic:256:64",
               "--scaling", "2", "--scaling-steps", "4", "--json"},
              QString(), QStringLiteral("cpu:2"), 2, 5, 2, 256, 64, 2);
    }
    void referenceKernels() {
        check({"--devices", "cpu", "--steps", "3", "--epochs", "1", "--data", "synthetic:128:32",
               "--scaling", "0", "--json"},
              QStringLiteral("reference"), QStringLiteral("cpu"), 1, 3, 1, 128, 32, 0);
    }
};

QTEST_GUILESS_MAIN(TestBenchSmoke)
#include "test_bench_smoke.moc"
