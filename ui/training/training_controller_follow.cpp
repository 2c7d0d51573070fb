// TrainingController::follow(): a run in another process, seen through the `train --json` events
// it writes to a file (rank 0 of an mpirun job, or a job started from a terminal); and
// launchWorkers(): such a job started from here with mpirun, then followed.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QStandardPaths>
#include <QStringList>

#include <unistd.h>

#include "core/train/train_config_json.h"
#include "core/util/error.h"
#include "core/util/file.h"
#include "core/util/json.h"

#include "ui/training/mpi_hosts.h"
#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

// A file that stops growing while its run has not said it ended: say so once, after this long.
constexpr qint64 kQuietWarningMs = 30000;
constexpr qint64 kMostBytesPerRead = 4 << 20;
// A job whose run has ended: how long its workers get to exit before they are ended.
constexpr int kLingeringJobWaitMs = 5000;
constexpr int kJobTerminateWaitMs = 10000;

// The mirrorlab-cli the workers run: `configured`, else the one next to this program, else on PATH;
// empty when there is none.
QString worker_program(const QString& configured) {
    QString cli = configured;
    if (cli.isEmpty()) {
        const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/mirrorlab-cli");
        cli = QFileInfo(beside).isExecutable() ? beside : QStandardPaths::findExecutable(QStringLiteral("mirrorlab-cli"));
    }
    return !cli.isEmpty() && QFileInfo(cli).isExecutable() ? cli : QString();
}

// The job's model and settings (rank 0 reads them and sends them to the others) and its empty
// events file; what went wrong, or empty.
QString write_job_files(const RunSettings& settings, const QString& model, const QString& config, const QString& events) {
    try {
        write_file_atomically(model.toStdString(), settings.model->to_json_text(), "the job's model file");
        write_file_atomically(config.toStdString(), json::dump(train_config_to_json(settings.config), 2),
                              "the job's settings file");
        write_file_atomically(events.toStdString(), std::string_view(), "the job's events file");
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

int TrainingController::follow(const QString& path, QString* error) {
    if (state_ != State::Idle) {
        if (error) *error = tr("A run is in progress: stop it before following another.");
        return 0;
    }
    endLingeringJob();
    // Looked at before it is opened: opening a named pipe waits for a writer, and froze the window.
    const QFileInfo info(path);
    if (info.exists() && !info.isFile()) {
        if (error) *error = tr("Cannot follow %1: give the file a job's `train --json` output goes to.").arg(path);
        return 0;
    }
    auto file = std::make_unique<QFile>(path);
    // Unbuffered: each read asks the file again, so what the other process appends is seen.
    if (!file->open(QIODevice::ReadOnly | QIODevice::Unbuffered)) {
        if (error) *error = tr("Cannot follow %1: %2").arg(path, file->errorString());
        return 0;
    }
    if (file->isSequential()) {
        if (error) *error = tr("Cannot follow %1: give the file a job's `train --json` output goes to.").arg(path);
        return 0;
    }
    if (trainer_) trainer_->wait();  // the previous run has ended (Idle); its thread is joined here
    trainer_.reset();                // its weights and settings do not belong to the run shown next
    job_weights_.clear();
    last_settings_ = RunSettings{};
    followed_ = std::move(file);
    follow_reader_ = EventLineReader{};
    follow_quiet_.start();
    follow_quiet_warned_ = false;

    RunRecord record;
    record.id = nextRunId();
    if (!launching_job_) setIdAside(record.id);  // a job started here: rank 0 keeps the run under this id
    record.devices_spec = tr("another process");
    record.data_name = QFileInfo(path).fileName();
    record.running = true;
    record.title = tr("Run %1 - followed: %2").arg(record.id).arg(QFileInfo(path).fileName());
    runs_.push_back(std::move(record));
    setState(State::Running);
    emit runStarted(runs_.back().id);
    if (!launching_job_) {  // a job started here says what it runs instead (launchWorkers)
        std::lock_guard lock(queue_mutex_);
        queue_.push_back(LogEvent{LogLevel::Info, tr("Following %1: the events of a run in another process, read as "
                                                     "they are written. Stop stops following; the run goes on.")
                                                      .arg(QDir::toNativeSeparators(path))
                                                      .toStdString()});
    }
    drain_timer_.start();
    follow_timer_.start();
    readFollowed();
    return runs_.back().id;
}

void TrainingController::readFollowed() {
    if (!followed_) return;
    // At most this much per tick, so that following a long run's file from its start does not
    // hold the GUI thread: the rest comes on the next ticks (40 MB/s).
    const QByteArray bytes = followed_->read(kMostBytesPerRead);
    std::vector<Event> events = follow_reader_.feed(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
    if (!bytes.isEmpty()) {
        follow_quiet_.restart();
    } else if (!follow_quiet_warned_ && follow_quiet_.elapsed() > kQuietWarningMs) {
        follow_quiet_warned_ = true;
        events.push_back(LogEvent{LogLevel::Warning,
                                  tr("No new events from %1 for %2 s: the run may have ended without saying so (killed), or "
                                     "be paused. Stop stops following.")
                                      .arg(followed_->fileName())
                                      .arg(kQuietWarningMs / 1000)
                                      .toStdString()});
    }
    if (!events.empty()) {
        std::lock_guard lock(queue_mutex_);
        for (Event& event : events) queue_.push_back(std::move(event));
    }
    drainEvents();
    // Its finished or failed event ended the run.
    if (state_ == State::Idle) stopFollowing(QString());
}

void TrainingController::stopFollowing(const QString& why) {
    if (!followed_) return;
    follow_timer_.stop();
    followed_.reset();
    if (why.isEmpty() || runs_.empty()) return;
    {
        std::lock_guard lock(queue_mutex_);
        queue_.push_back(LogEvent{LogLevel::Info, why.toStdString()});
    }
    drainEvents();
    runs_.back().running = false;
    runs_.back().status_text = tr("followed until stopped");
    setState(State::Idle);
    drain_timer_.stop();
}

int TrainingController::launchWorkers(const RunSettings& settings, int workers, QString* error, const QString& hosts) {
    auto fail = [&](const QString& why) {
        if (error) *error = why;
        return 0;
    };
    if (state_ != State::Idle) return fail(tr("A run is in progress: stop it before starting another."));
    if (workers < 1) return fail(tr("A job needs at least one worker."));
    endLingeringJob();
    const QString host_list = normalizedHosts(hosts);
    if (const QString problem = hostsProblem(host_list); !problem.isEmpty()) return fail(tr("Hosts: %1").arg(problem));
    const QString mpirun = QStandardPaths::findExecutable(QStringLiteral("mpirun"));
    if (mpirun.isEmpty()) {
        return fail(tr("mpirun was not found: install Open MPI (apt-get install openmpi-bin; the set-up script "
                       "packaging/mirrorlab.sh installs it) to train on several workers."));
    }
    const QString cli = worker_program(cli_path_);
    if (cli.isEmpty())
        return fail(tr("mirrorlab-cli was not found next to this program or on PATH: the workers run it."));
    if (settings.data_spec.isEmpty())
        return fail(tr("The workers load the data themselves, by name: load it from a file or a built-in set in the Data panel."));
    if (!settings.initial_weights.empty())
        return fail(tr("This model's weights were imported into this window; the workers would start from fresh "
                       "weights. Train it here, or export it and train it with mirrorlab-cli."));

    job_dir_ = std::make_unique<QTemporaryDir>();
    const QString model = job_dir_->filePath(QStringLiteral("model.json"));
    const QString config = job_dir_->filePath(QStringLiteral("config.json"));
    const QString events = job_dir_->filePath(QStringLiteral("job.jsonl"));
    if (!job_dir_->isValid()) return fail(tr("Cannot write the job's files to %1.").arg(QDir::tempPath()));
    if (const QString why = write_job_files(settings, model, config, events); !why.isEmpty()) return fail(why);
    QStringList arguments = {QStringLiteral("--oversubscribe"), QStringLiteral("-np"), QString::number(workers)};
    if (!host_list.isEmpty()) arguments << QStringLiteral("--host") << host_list;
    if (::geteuid() == 0) arguments.prepend(QStringLiteral("--allow-run-as-root"));  // Open MPI refuses root otherwise
    arguments << cli << QStringLiteral("train") << QStringLiteral("--json") << QStringLiteral("--model") << model
              << QStringLiteral("--config") << config << QStringLiteral("--data") << settings.data_spec
              << QStringLiteral("--devices") << QString::fromStdString(settings.devices.to_spec());
    if (store_) {
        arguments << QStringLiteral("--store") << QString::fromStdString(store_->folder());
    } else {
        arguments << QStringLiteral("--no-store");
    }

    launching_job_ = true;
    const int id = follow(events, error);
    launching_job_ = false;
    if (id == 0) return 0;
    last_settings_ = settings;  // the model and data it trains (its weights stay in the workers)
    const QString devices = QString::fromStdString(settings.devices.to_spec());
    runs_.back().title =
        tr("Run %1 - %2 workers x %3 - %4").arg(id).arg(workers).arg(devices, QString::fromStdString(settings.model->name()));
    runs_.back().devices_spec = host_list.isEmpty() ? tr("%1 workers x %2").arg(workers).arg(devices)
                                                    : tr("%1 workers x %2 on %3").arg(workers).arg(devices, host_list);
    runs_.back().model_name = QString::fromStdString(settings.model->name());
    runs_.back().data_name = settings.data_name;
    runs_.back().config = settings.config;
    job_stopped_ = false;
    job_run_id_ = id;
    job_ = std::make_unique<QProcess>();
    job_->setStandardOutputFile(events);
    job_->setStandardErrorFile(job_dir_->filePath(QStringLiteral("job.err")));
    // Only this job's end speaks for its run: a job let go by endLingeringJob() is disconnected.
    connect(job_.get(), &QProcess::finished, this, [this, job = job_.get()](int exit_code) {
        if (job == job_.get()) jobEnded(exit_code);
    });
    {
        std::lock_guard lock(queue_mutex_);
        queue_.push_back(LogEvent{LogLevel::Info, tr("Training on %1 workers: %2 (Stop ends them after their step)")
                                                      .arg(workers)
                                                      .arg(QStringLiteral("mpirun ") + arguments.join(QLatin1Char(' ')))
                                                      .toStdString()});
    }
    job_->start(mpirun, arguments);
    if (!job_->waitForStarted(10000)) {
        const QString why = job_->errorString();
        job_.reset();
        setIdAside(id);  // no rank 0 will keep a run under it
        stopFollowing(tr("mpirun did not start: %1").arg(why));
        return fail(tr("mpirun did not start: %1").arg(why));
    }
    return id;
}

// Rank 0 has said its run ended (the state is Idle) while mpirun still waits for the workers to exit.
// Before anything else starts, the job is given a moment to exit on its own (its workers are past
// their last step and rank 0 has kept the run), ended when it does not, and let go: its end must
// not be read as the next run's, nor Stop go to it instead of that run.
void TrainingController::endLingeringJob() {
    if (!job_) return;
    job_->disconnect(this);
    // In slices, so that the window still paints (user input waits) and the log says why.
    if (job_->state() != QProcess::NotRunning) {
        {
            std::lock_guard lock(queue_mutex_);
            queue_.push_back(LogEvent{LogLevel::Info, tr("Waiting for the previous job's workers to exit (at most %1 s)…")
                                                          .arg(kLingeringJobWaitMs / 1000)
                                                          .toStdString()});
        }
        drainEvents();
        QElapsedTimer waited;
        waited.start();
        while (!job_->waitForFinished(100) && waited.elapsed() < kLingeringJobWaitMs) {
            QCoreApplication::processEvents(QEventLoop::ExcludeUserInputEvents);
        }
    }
    if (job_->state() != QProcess::NotRunning) {
        job_->terminate();
        if (!job_->waitForFinished(kJobTerminateWaitMs)) {
            job_->kill();
            job_->waitForFinished(kJobTerminateWaitMs);
        }
    }
    job_.reset();
    setIdAside(job_run_id_);  // kept under it by rank 0, or by nobody (the job failed before): not reused
    emit runsChanged();  // rank 0 kept the run in the store
}

void TrainingController::jobEnded(int exit_code) {
    readFollowed();  // what rank 0 wrote last; its finished or failed event ends the run
    if (followed_) {
        std::vector<Event> rest = follow_reader_.finish();
        if (job_stopped_) {
            rest.push_back(LogEvent{LogLevel::Info, tr("Stopped: mpirun ended the workers after their step; the "
                                                       "epochs finished so far are kept in the run store.")
                                                        .toStdString()});
        } else {
            QFile err(job_dir_->filePath(QStringLiteral("job.err")));
            QString said;
            if (err.open(QIODevice::ReadOnly)) said = QString::fromUtf8(err.readAll()).trimmed().right(1200);
            rest.push_back(FailedEvent{"cluster",
                                       tr("the job ended (mpirun exit status %1) before its run finished%2")
                                           .arg(exit_code)
                                           .arg(said.isEmpty() ? QString() : QStringLiteral(":\n") + said)
                                           .toStdString(),
                                       0, 0});
        }
        {
            std::lock_guard lock(queue_mutex_);
            for (Event& event : rest) queue_.push_back(std::move(event));
        }
        drainEvents();
        if (job_stopped_ && state_ != State::Idle) {
            runs_.back().running = false;
            runs_.back().status_text = tr("stopped");
            setState(State::Idle);
            drain_timer_.stop();
        }
        stopFollowing(QString());
    }
    setIdAside(job_run_id_);  // kept under it by rank 0, or by nobody (the job failed before): not reused
    // Not deleted inside its own signal.
    if (job_) job_.release()->deleteLater();
    emit runsChanged();  // rank 0 kept the run in the store
}

}  // namespace mirrorlab::ui
