#include "ui/common/background_job.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>
#include <QPointer>
#include <QThread>

#include <exception>
#include <new>

namespace mirrorlab::ui {

BackgroundJob::BackgroundJob(QObject* parent) : QObject(parent) {}

BackgroundJob::~BackgroundJob() {
    if (thread_.joinable()) thread_.join();
}

bool BackgroundJob::start(std::function<void()> work, std::function<void(const QString& error)> done) {
    if (running_) return false;
    if (thread_.joinable()) thread_.join();  // the last one posted its end already
    running_ = true;
    done_ = std::move(done);
    QPointer<BackgroundJob> self(this);
    thread_ = std::thread([self, work = std::move(work)] {
        QString error;
        try {
            work();
        } catch (const std::bad_alloc&) {
            error = tr("not enough memory for it");
        } catch (const std::exception& failure) {
            error = QString::fromUtf8(failure.what());
        }
        // `self` is only read on the GUI thread, in the call it posts.
        QMetaObject::invokeMethod(
            qApp, [self, error] {
                if (self) self->finish(error);
            },
            Qt::QueuedConnection);
    });
    emit runningChanged(true);
    return true;
}

void BackgroundJob::finish(const QString& error) {
    // The thread posted this as its last act: joining orders its writes before `done` reads them.
    if (thread_.joinable()) thread_.join();
    running_ = false;
    auto done = std::move(done_);
    done_ = nullptr;
    emit runningChanged(false);
    if (done) done(error);
}

bool BackgroundJob::waitForFinished(int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (running_ && timer.elapsed() < timeout_ms) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (running_) QThread::msleep(2);
    }
    return !running_;
}

}  // namespace mirrorlab::ui
