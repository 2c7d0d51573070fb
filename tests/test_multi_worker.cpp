// Multi-worker training under mpirun (MultiWorkerMirroredStrategy over Open MPI), as a user runs it:
// `mpirun -np K mirrorlab-cli train --devices SPEC ...` on this host's loopback. What a user would
// notice: the same weights, bit for bit, and the same metrics as one process with all the
// replicas; one set of output and one kept run; drifted workers stopped with the ranks named; a
// killed worker ending the job quickly with its rank named; a resume on another number of workers.
// Skipped, saying why, where mpirun is missing or the build has no MPI.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>

#include <bit>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/store/checkpoint.h"
#include "core/util/json.h"

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif

namespace {

using namespace mirrorlab;

constexpr int kTimeoutMs = 120000;
// Small enough to keep every case well under a minute on two cores, large enough for many steps.
const QStringList kData = {QStringLiteral("--data"), QStringLiteral("synthetic:640:160")};

struct Ran {
    int exit_code = -1;
    QString out, err;
    QString all() const { return out + err; }
};

QString describe(const Ran& ran) {
    return QStringLiteral("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3").arg(ran.exit_code).arg(ran.out.left(6000), ran.err.left(6000));
}

// mpirun as CI runs it: as root where it is root, more workers than cores.
QStringList mpirun_arguments(int workers) {
    return {QStringLiteral("--oversubscribe"), QStringLiteral("--allow-run-as-root"), QStringLiteral("-np"), QString::number(workers)};
}

QProcessEnvironment environment(const QStringList& extra = {}) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT"), QStringLiteral("1"));
    env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QStringLiteral("1"));
    // In the sanitizer build (tests/sanitizers/run.sh) the workers run under AddressSanitizer too:
    // Open MPI leaves thousands of its own allocations unfreed at MPI_Finalize (in components it has
    // dlclose'd, so no suppression can name them), which LeakSanitizer would turn into an abort.
    // Leaks are left unchecked in the workers only; the same training code is leak-checked in the
    // single-process suites.
    if (const QString asan = env.value(QStringLiteral("ASAN_OPTIONS")); !asan.isEmpty()) {
        env.insert(QStringLiteral("ASAN_OPTIONS"), asan + QStringLiteral(":detect_leaks=0"));
    }
    for (const QString& pair : extra) env.insert(pair.section(QLatin1Char('='), 0, 0), pair.section(QLatin1Char('='), 1));
    return env;
}

Ran run(const QString& program, const QStringList& arguments, const QStringList& extra_environment = {}) {
    QProcess process;
    process.setProcessEnvironment(environment(extra_environment));
    process.start(program, arguments);
    Ran ran;
    if (!process.waitForStarted(kTimeoutMs)) return ran;
    if (!process.waitForFinished(kTimeoutMs)) {
        process.kill();
        process.waitForFinished(5000);
    }
    ran.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    ran.out = QString::fromUtf8(process.readAllStandardOutput());
    ran.err = QString::fromUtf8(process.readAllStandardError());
    return ran;
}

QString cli() { return QStringLiteral(MIRRORLAB_CLI_PATH); }
QString mpirun() { return QStandardPaths::findExecutable(QStringLiteral("mpirun")); }

Ran run_workers(int workers, const QStringList& cli_arguments, const QStringList& extra_environment = {}) {
    return run(mpirun(), mpirun_arguments(workers) + QStringList{cli()} + cli_arguments, extra_environment);
}

// Rank 0's `train --json` events of `type`, parsed, in the order printed.
std::vector<json::Value> events_of(const Ran& ran, std::string_view type) {
    std::vector<json::Value> events;
    for (const QString& line : ran.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        if (!line.startsWith(QLatin1Char('{'))) continue;
        json::Value event = json::parse(line.toStdString(), "rank 0's stdout");
        if (event.at("type").as_string() == type) events.push_back(std::move(event));
    }
    return events;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool same_double(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Every epoch's training and validation metrics, compared bit for bit.
QString history_difference(const History& a, const History& b) {
    if (a.epochs.size() != b.epochs.size()) return QStringLiteral("%1 vs %2 epochs").arg(a.epochs.size()).arg(b.epochs.size());
    for (std::size_t e = 0; e < a.epochs.size(); ++e) {
        const EpochRecord& x = a.epochs[e];
        const EpochRecord& y = b.epochs[e];
        const double pairs[][2] = {{x.train.loss, y.train.loss},           {x.train.accuracy, y.train.accuracy},
                                   {x.train.top5, y.train.top5},           {x.validation.loss, y.validation.loss},
                                   {x.validation.accuracy, y.validation.accuracy}, {x.validation.top5, y.validation.top5}};
        for (const auto& pair : pairs) {
            if (!same_double(pair[0], pair[1])) {
                return QStringLiteral("epoch %1: %2 vs %3").arg(x.epoch).arg(pair[0], 0, 'g', 17).arg(pair[1], 0, 'g', 17);
            }
        }
    }
    return {};
}

Checkpoint last_checkpoint(const QString& store, int run_id = 1) {
    return load_checkpoint(QStringLiteral("%1/runs/%2/last.mlckpt").arg(store).arg(run_id).toStdString());
}

void compare_checkpoints(const Checkpoint& workers, const Checkpoint& one_process) {
    QVERIFY2(same_floats(workers.state.weights, one_process.state.weights), "the weights differ");
    QVERIFY2(same_floats(workers.state.optimizer_slots, one_process.state.optimizer_slots), "the optimizer slots differ");
    QCOMPARE(workers.state.global_step, one_process.state.global_step);
    QCOMPARE(workers.state.replicas, one_process.state.replicas);
    const QString difference = history_difference(workers.state.history, one_process.state.history);
    QVERIFY2(difference.isEmpty(), qPrintable(QStringLiteral("the metrics differ: ") + difference));
}

// The process of `mpirun_pid`'s workers with OMPI_COMM_WORLD_RANK = rank (read from /proc).
qint64 worker_pid(qint64 mpirun_pid, int rank) {
    const QString wanted = QStringLiteral("OMPI_COMM_WORLD_RANK=%1").arg(rank);
    for (const QString& entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool numeric = false;
        const qint64 pid = entry.toLongLong(&numeric);
        if (!numeric) continue;
        QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
        if (!stat.open(QIODevice::ReadOnly)) continue;
        const QString fields = QString::fromLatin1(stat.readAll());
        const QStringList after_name = fields.mid(fields.lastIndexOf(QLatin1Char(')')) + 2).split(QLatin1Char(' '));
        if (after_name.size() < 2 || after_name[1].toLongLong() != mpirun_pid) continue;
        QFile environ(QStringLiteral("/proc/%1/environ").arg(pid));
        if (!environ.open(QIODevice::ReadOnly)) continue;
        for (const QByteArray& variable : environ.readAll().split('\0')) {
            if (QString::fromLatin1(variable) == wanted) return pid;
        }
    }
    return 0;
}

}  // namespace

class TestMultiWorker : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
#ifndef MIRRORLAB_TEST_HAVE_MPI
        QSKIP("this build has no MPI (install libopenmpi-dev and openmpi-bin and reconfigure): multi-worker tests skipped");
#endif
        if (mpirun().isEmpty()) QSKIP("mpirun not found (install openmpi-bin; packaging/mirrorlab.sh test does): multi-worker tests skipped");
    }

    void sameAsOneProcess_data() {
        QTest::addColumn<int>("workers");
        QTest::addColumn<QString>("devices");           // each worker's
        QTest::addColumn<QString>("one_process");       // the same replicas in one process
        QTest::addColumn<QString>("all_reduce");
        QTest::addColumn<QString>("cluster_line");
        QTest::newRow("2 workers x cpu = cpu:2") << 2 << "cpu" << "cpu:2" << "auto" << "with 2 workers × 1 device (";
        QTest::newRow("3 workers x cpu = cpu:3") << 3 << "cpu" << "cpu:3" << "auto" << "with 3 workers × 1 device (";
        QTest::newRow("2 workers x cpu:2 = cpu:4") << 2 << "cpu:2" << "cpu:4" << "auto" << "with 2 workers × 2 devices (";
        QTest::newRow("2 workers x cpu:2 = cpu:4, ring") << 2 << "cpu:2" << "cpu:4" << "ring" << "with 2 workers × 2 devices (";
    }

    // K workers x R replicas train exactly as one process with K*R replicas: bit-identical weights,
    // optimizer slots and metrics after 2 epochs; only rank 0 prints and keeps the run.
    void sameAsOneProcess() {
        QFETCH(int, workers);
        QFETCH(QString, devices);
        QFETCH(QString, one_process);
        QFETCH(QString, all_reduce);
        QFETCH(QString, cluster_line);
        QTemporaryDir folder;
        const QString together = folder.filePath(QStringLiteral("workers")), alone = folder.filePath(QStringLiteral("alone"));
        const QStringList common = kData + QStringList{"--epochs", "2", "--all-reduce", all_reduce};
        const Ran cluster = run_workers(workers, QStringList{"train", "--devices", devices, "--store", together} + common);
        QVERIFY2(cluster.exit_code == 0, qPrintable(describe(cluster)));
        const Ran single = run(cli(), QStringList{"train", "--devices", one_process, "--store", alone} + common);
        QVERIFY2(single.exit_code == 0, qPrintable(describe(single)));

        QVERIFY2(cluster.err.contains(QStringLiteral("INFO: Using MultiWorkerMirroredStrategy ") + cluster_line), qPrintable(describe(cluster)));
        QVERIFY2(cluster.err.contains(QStringLiteral("/job:worker/task:%1/device:CPU:0").arg(workers - 1)), qPrintable(cluster.err));
        // One voice: the progress of rank 0 alone, and one kept run.
        QCOMPARE(cluster.out.count(QStringLiteral("Epoch 2/2")), 1);
        QVERIFY(QFile::exists(together + QStringLiteral("/runs/1/last.mlckpt")));
        QVERIFY2(!QFile::exists(together + QStringLiteral("/runs/2")), "a worker other than rank 0 recorded a run");
        compare_checkpoints(last_checkpoint(together), last_checkpoint(alone));
        QCOMPARE(last_checkpoint(together).state.replicas, workers * (devices == QStringLiteral("cpu") ? 1 : 2));
    }

    // Fault injection: worker 1 changes one weight at the start; the consistency check finds the
    // workers apart at its first step and stops the job with a message naming the rank.
    void checksumMismatchStopsTheRun() {
        const QStringList arguments = mpirun_arguments(3) + QStringList{"-x", "MIRRORLAB_FAULT_INJECTION_PERTURB_RANK", cli(), "train",
                                                                        "--devices", "cpu", "--epochs", "2", "--no-store",
                                                                        "--consistency-check-every", "5"} +
                                      kData;
        const Ran ran = run(mpirun(), arguments, {QStringLiteral("MIRRORLAB_FAULT_INJECTION_PERTURB_RANK=1")});
        QVERIFY2(ran.exit_code != 0, qPrintable(describe(ran)));
        QVERIFY2(ran.err.contains(QStringLiteral("mirrorlab-cli: error: the workers' variables differ after step 5: rank 1 differs from rank 0")),
                 qPrintable(describe(ran)));
        QVERIFY2(!ran.out.contains(QStringLiteral("Epoch 2/2")), qPrintable(describe(ran)));
    }

    // Workers started with different --devices are refused before training, naming the ranks.
    void differentDevicesAreRefused() {
        const QStringList common = QStringList{"--epochs", "1", "--no-store"} + kData;
        const QStringList arguments = mpirun_arguments(1) + QStringList{cli(), "train", "--devices", "cpu"} + common + QStringList{":"} +
                                      QStringList{"-np", "1", cli(), "train", "--devices", "cpu:2"} + common;
        const Ran ran = run(mpirun(), arguments);
        QCOMPARE(ran.exit_code, 2);
        QVERIFY2(ran.err.contains(QStringLiteral("the number of replicas differs between the workers: rank 1 has 2 replicas "
                                                 "(--devices cpu:2) where rank 0 has 1 replicas (--devices cpu)")),
                 qPrintable(describe(ran)));
    }

    // kill -9 of one worker: the job ends well within 30 s, and what it prints names the lost rank.
    void killedWorkerEndsTheJob() {
        QProcess job;
        job.setProcessEnvironment(environment());
        job.start(mpirun(), mpirun_arguments(2) + QStringList{cli(), "train", "--devices", "cpu", "--epochs", "1000", "--no-store",
                                                               "--data", "synthetic:2000:100"});
        QVERIFY(job.waitForStarted(kTimeoutMs));
        QString out;
        QElapsedTimer started;
        started.start();
        while (!out.contains(QStringLiteral("Epoch 2/")) && started.elapsed() < kTimeoutMs && job.state() == QProcess::Running) {
            job.waitForReadyRead(100);
            out += QString::fromUtf8(job.readAllStandardOutput());
        }
        QVERIFY2(out.contains(QStringLiteral("Epoch 2/")), qPrintable(out + QString::fromUtf8(job.readAllStandardError())));
        const qint64 victim = worker_pid(job.processId(), 1);
        QVERIFY2(victim > 0, "rank 1's process not found among mpirun's children");
        QElapsedTimer since_kill;
        since_kill.start();
        QCOMPARE(::kill(static_cast<pid_t>(victim), SIGKILL), 0);
        const bool ended = job.waitForFinished(30000);
        const qint64 took_ms = since_kill.elapsed();
        if (!ended) job.kill();
        QVERIFY2(ended, "the job still runs 30 s after one worker was killed");
        QVERIFY(took_ms < 30000);
        const QString err = QString::fromUtf8(job.readAllStandardError()) + QString::fromUtf8(job.readAllStandardOutput());
        QVERIFY(job.exitCode() != 0);
        QVERIFY2(err.contains(QStringLiteral("process rank 1")) && err.contains(QStringLiteral("signal 9")), qPrintable(err));
    }

    // Rank 0's step events carry every worker's replicas (what the GUI shows when it follows the
    // job): 3 workers of one replica each, in global order, every one with its shard and times.
    void stepEventsShowEveryWorker() {
        const Ran ran = run_workers(3, QStringList{"train", "--devices", "cpu", "--epochs", "1", "--steps-per-epoch", "6",
                                                   "--no-store", "--json"} +
                                           kData);
        QVERIFY2(ran.exit_code == 0, qPrintable(describe(ran)));
        const std::vector<json::Value> steps = events_of(ran, "step_end");
        for (const json::Value& step : steps) {
            const auto& replicas = step.at("replicas").as_array();
            QCOMPARE(replicas.size(), std::size_t{3});
            std::int64_t samples = 0;
            for (const json::Value& replica : replicas) {
                samples += replica.at("shard_size").as_int64();
                QVERIFY(replica.at("forward_ms").as_double() > 0.0);
                QVERIFY(replica.at("backward_ms").as_double() > 0.0);
            }
            QCOMPARE(samples, std::int64_t{32});  // 11 + 11 + 10: the global batch
            QCOMPARE(replicas[2].at("shard_size").as_int64(), std::int64_t{10});
        }
        QCOMPARE(steps.size(), std::size_t{6});  // one worker speaks
    }

    // Rank 0's memory events (the GUI's device monitor following a job) list every worker's devices
    // as the job names them, each with its own limit: at the start, at each epoch's end and, between
    // them, when a worker's clock says half a second has passed (all workers agree on when).
    void memoryEventsShowEveryWorker() {
        const Ran ran = run_workers(2, QStringList{"train", "--devices", "cpu:2x256MB", "--epochs", "3", "--no-store",
                                                   "--json"} +
                                           kData);
        QVERIFY2(ran.exit_code == 0, qPrintable(describe(ran)));
        const std::vector<json::Value> events = events_of(ran, "memory");
        for (const json::Value& memory : events) {
            const auto& devices = memory.at("devices").as_array();
            QCOMPARE(devices.size(), std::size_t{4});
            for (std::size_t d = 0; d < devices.size(); ++d) {
                const std::string expected = "/job:worker/task:" + std::to_string(d / 2) + "/device:CPU:" + std::to_string(d % 2);
                QCOMPARE(devices[d].at("device").as_string(), expected);
                QCOMPARE(devices[d].at("limit_bytes").as_int64(), std::int64_t{256} << 20);
                QVERIFY(devices[d].at("bytes_in_use").as_int64() > 0);
                QVERIFY(devices[d].at("peak_bytes").as_int64() >= devices[d].at("bytes_in_use").as_int64());
            }
            // The workers hold the same replicas: task 1's devices hold what task 0's do.
            QCOMPARE(devices[2].at("bytes_in_use").as_int64(), devices[0].at("bytes_in_use").as_int64());
        }
        QVERIFY2(events.size() >= 4, qPrintable(describe(ran)));  // the start and each of the 3 epochs' ends
    }

    // --model and --config are read by rank 0 and sent to the others, so workers on other hosts need
    // no copy (the GUI writes them to its own temporary folder): here rank 1 is given paths that do
    // not exist, as on a host without them. A file rank 0 cannot read ends every worker, named.
    void onlyRankZeroReadsTheModelAndSettings() {
        QTemporaryDir dir;
        const QString model = dir.filePath(QStringLiteral("model.json"));
        const QString config = dir.filePath(QStringLiteral("config.json"));
        QFile model_file(model);
        QVERIFY(model_file.open(QIODevice::WriteOnly));
        model_file.write(R"({"name": "small", "input_length": 60, "layers": [
            {"class_name": "Embedding", "config": {"input_dim": 30982, "output_dim": 8}},
            {"class_name": "GlobalMaxPooling1D"},
            {"class_name": "Dense", "config": {"units": 46, "activation": "softmax"}}]})");
        model_file.close();
        QFile config_file(config);
        QVERIFY(config_file.open(QIODevice::WriteOnly));
        config_file.write(R"({"epochs": 1, "batch_size": 16, "seed": 7, "max_steps_per_epoch": 4,
                              "optimizer": {"class_name": "Adam", "learning_rate": 0.002}})");
        config_file.close();
        const QString missing = dir.filePath(QStringLiteral("not-on-this-host/"));
        // One worker of an MPMD launch (`mpirun -np 1 A : -np 1 B`), without its -np.
        auto worker = [&](const QString& model_path, const QString& config_path) {
            QStringList arguments = {cli(), QStringLiteral("train"), QStringLiteral("--model"), model_path};
            if (!config_path.isEmpty()) arguments << QStringLiteral("--config") << config_path;
            return arguments + QStringList{QStringLiteral("--devices"), QStringLiteral("cpu"), QStringLiteral("--no-store"),
                                           QStringLiteral("--json")} +
                   kData;
        };
        auto two_workers = [&](const QStringList& rank0, const QStringList& rank1) {
            return run(mpirun(), mpirun_arguments(1) + rank0 + QStringList{QStringLiteral(":"), QStringLiteral("-np"),
                                                                           QStringLiteral("1")} +
                                     rank1);
        };
        const Ran ran = two_workers(worker(model, config), worker(missing + QStringLiteral("model.json"),
                                                                  missing + QStringLiteral("config.json")));
        QVERIFY2(ran.exit_code == 0, qPrintable(describe(ran)));
        const std::vector<json::Value> begin = events_of(ran, "train_begin");
        QCOMPARE(begin.size(), std::size_t{1});
        // The file's settings, on both workers: 2 replicas of 8.
        QCOMPARE(begin.front().at("global_batch").as_int64(), std::int64_t{16});
        QCOMPARE(begin.front().at("steps_per_epoch").as_int64(), std::int64_t{4});
        QCOMPARE(begin.front().at("replicas").as_int64(), std::int64_t{2});
        QCOMPARE(events_of(ran, "epoch_end").size(), std::size_t{1});

        const Ran lost = two_workers(worker(missing + QStringLiteral("model.json"), config), worker(model, config));
        QCOMPARE(lost.exit_code, 1);
        QVERIFY2(lost.err.contains(QStringLiteral("not-on-this-host/model.json")), qPrintable(describe(lost)));

        // Workers given different kinds of file would wait for different messages: refused, named.
        const Ran unlike = two_workers(worker(model, config), worker(model, QString()));
        QCOMPARE(unlike.exit_code, 2);
        QVERIFY2(unlike.err.contains(QStringLiteral("rank 1 has --model where rank 0 has --model --config")),
                 qPrintable(describe(unlike)));
    }

    // `bench` under mpirun: one JSON result for the job (rank 0's), counting every worker's replicas.
    void benchUnderMpirun() {
        const Ran ran = run_workers(2, {"bench", "--devices", "cpu", "--epochs", "1", "--steps", "20", "--data", "synthetic:640:64",
                                        "--json"});
        QVERIFY2(ran.exit_code == 0, qPrintable(describe(ran)));
        QCOMPARE(ran.out.count(QStringLiteral("\"cpu\":")), 1);  // one result, from rank 0
        const json::Value result = json::parse(ran.out.toStdString());
        QCOMPARE(result.at("workers").as_int64(), std::int64_t{2});
        QCOMPARE(result.at("run").at("replicas").as_int64(), std::int64_t{2});
        QVERIFY(result.at("run").at("samples_per_second").as_double() > 0.0);
        QVERIFY2(result.at("scaling").as_array().empty(), "a scaling table under mpirun");
        // The link probe the what-if model calibrates from: six sizes, timings growing with them.
        const json::Value& probe = result.at("link_probe");
        const auto& samples = probe.at("samples").as_array();
        QCOMPARE(samples.size(), std::size_t{6});
        QVERIFY(samples.back().at("seconds").as_double() > samples.front().at("seconds").as_double());
        QVERIFY(probe.at("gbytes_per_second").as_double() > 0.0);
        QVERIFY(probe.at("latency_us").as_double() >= 0.0);

        // `whatif` from it and a one-replica bench predicts the 2- and 3-worker steps over that link.
        QTemporaryDir folder;
        QFile two(folder.filePath(QStringLiteral("two.json")));
        QVERIFY(two.open(QIODevice::WriteOnly));
        two.write(ran.out.toUtf8());
        two.close();
        const Ran one = run(cli(), {"bench", "--devices", "cpu", "--threads", "1", "--epochs", "1", "--steps", "20", "--data", "synthetic:640:64",
                                    "--scaling", "0", "--json"});
        QVERIFY2(one.exit_code == 0, qPrintable(describe(one)));
        QFile single(folder.filePath(QStringLiteral("one.json")));
        QVERIFY(single.open(QIODevice::WriteOnly));
        single.write(one.out.toUtf8());
        single.close();
        const Ran whatif = run(cli(), {"whatif", "--calibration", single.fileName(), "--calibration", two.fileName(), "--workers",
                                       "1,2,3", "--json"});
        QVERIFY2(whatif.exit_code == 0, qPrintable(describe(whatif)));
        const json::Value prediction = json::parse(whatif.out.toStdString());
        QCOMPARE(prediction.at("inter_link").at("name").as_string(), std::string("shared memory (measured)"));
        const auto& rows = prediction.at("predictions").as_array();
        QCOMPARE(rows.size(), std::size_t{3});
        QCOMPARE(rows[0].at("inter_all_reduce_ms").as_double(), 0.0);
        QVERIFY(rows[1].at("inter_all_reduce_ms").as_double() > 0.0);
        QVERIFY(rows[2].at("inter_all_reduce_ms").as_double() > rows[1].at("inter_all_reduce_ms").as_double());
        QCOMPARE(rows[2].at("per_device_batch").as_int64(), std::int64_t{11});  // 32 over 3: 11 + 11 + 10
    }

    // A run of 2 workers resumed from its checkpoint on 3 workers continues exactly as the same
    // checkpoint resumed in one process with 3 replicas, and says that the replica count changed.
    void resumeOnAnotherWorkerCount() {
        QTemporaryDir folder;
        const QString first = folder.filePath(QStringLiteral("first"));
        const Ran started = run_workers(2, QStringList{"train", "--devices", "cpu", "--epochs", "2", "--store", first} + kData);
        QVERIFY2(started.exit_code == 0, qPrintable(describe(started)));
        const QString checkpoint = folder.filePath(QStringLiteral("after2.mlckpt"));
        QVERIFY(QFile::copy(first + QStringLiteral("/runs/1/last.mlckpt"), checkpoint));

        const QString three = folder.filePath(QStringLiteral("three")), alone = folder.filePath(QStringLiteral("alone"));
        const Ran resumed = run_workers(3, {"train", "--devices", "cpu", "--epochs", "3", "--resume", checkpoint, "--store", three});
        QVERIFY2(resumed.exit_code == 0, qPrintable(describe(resumed)));
        QVERIFY2(resumed.err.contains(QStringLiteral("Resuming after epoch 2")), qPrintable(describe(resumed)));
        QVERIFY2(resumed.err.contains(QStringLiteral("it was trained on 2 replicas and continues on 3")), qPrintable(describe(resumed)));
        QCOMPARE(resumed.out.count(QStringLiteral("Epoch 3/3")), 1);
        const Ran single = run(cli(), {"train", "--devices", "cpu:3", "--epochs", "3", "--resume", checkpoint, "--store", alone});
        QVERIFY2(single.exit_code == 0, qPrintable(describe(single)));
        const Checkpoint after = last_checkpoint(three);
        QCOMPARE(after.state.epochs_done, 3);
        compare_checkpoints(after, last_checkpoint(alone));
    }
};

QTEST_GUILESS_MAIN(TestMultiWorker)
#include "test_multi_worker.moc"
