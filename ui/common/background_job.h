#pragma once
// One piece of slow work at a time off the GUI thread: reading or writing a file of hundreds of
// megabytes (a .keras archive of a 50-million-parameter model takes seconds) must not freeze the
// window. The work runs on a thread of its own; what comes after it runs on the GUI thread.
#include <QObject>
#include <QString>

#include <functional>
#include <thread>

namespace mirrorlab::ui {

class BackgroundJob : public QObject {
    Q_OBJECT
public:
    explicit BackgroundJob(QObject* parent = nullptr);
    // Waits for work still running; its `done` is not called then (its owner is going away).
    ~BackgroundJob() override;

    // Runs `work` on a thread; then `done` on the GUI thread with the message of what `work` threw
    // (any std::exception; empty when it returned). Results go through what both capture. False,
    // and nothing started, while another job runs.
    bool start(std::function<void()> work, std::function<void(const QString& error)> done);
    bool isRunning() const { return running_; }
    // For tests and scripted use: runs the event loop until `done` has run. False on timeout.
    bool waitForFinished(int timeout_ms);

signals:
    void runningChanged(bool running);

private:
    void finish(const QString& error);

    std::thread thread_;
    std::function<void(const QString&)> done_;
    bool running_ = false;
};

}  // namespace mirrorlab::ui
