// TrainingController::follow(): a run in another process, seen through the `train --json` events
// it writes to a file (rank 0 of an mpirun job, or a job started from a terminal).
#include <QDir>
#include <QFileInfo>
#include <QStringList>

#include "ui/training/training_controller.h"

namespace mirrorlab::ui {

namespace {

// A file that stops growing while its run has not said it ended: say so once, after this long.
constexpr qint64 kQuietWarningMs = 30000;
constexpr qint64 kMostBytesPerRead = 4 << 20;

}  // namespace

int TrainingController::follow(const QString& path, QString* error) {
    if (state_ != State::Idle) {
        if (error) *error = tr("A run is in progress: stop it before following another.");
        return 0;
    }
    auto file = std::make_unique<QFile>(path);
    // Unbuffered: each read asks the file again, so what the other process appends is seen.
    if (!file->open(QIODevice::ReadOnly | QIODevice::Unbuffered)) {
        if (error) *error = tr("Cannot follow %1: %2").arg(path, file->errorString());
        return 0;
    }
    if (QFileInfo(path).isDir() || file->isSequential()) {
        if (error) *error = tr("Cannot follow %1: give the file a job's `train --json` output goes to.").arg(path);
        return 0;
    }
    if (trainer_) trainer_->wait();  // the previous run has ended (Idle); its thread is joined here
    trainer_.reset();                // its weights and settings do not belong to the run shown next
    last_settings_ = RunSettings{};
    followed_ = std::move(file);
    follow_reader_ = EventLineReader{};
    follow_quiet_.start();
    follow_quiet_warned_ = false;

    RunRecord record;
    record.id = runs_.empty() ? 1 : runs_.back().id + 1;
    record.devices_spec = tr("another process");
    record.data_name = QFileInfo(path).fileName();
    record.running = true;
    record.title = tr("Run %1 - followed: %2").arg(record.id).arg(QFileInfo(path).fileName());
    runs_.push_back(std::move(record));
    setState(State::Running);
    emit runStarted(runs_.back().id);
    {
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

}  // namespace mirrorlab::ui
