#pragma once
// Every TrainingController (and so every main window) keeps its runs in the run store named by
// MIRRORLAB_DATA_DIR and shows the runs already there. A test that counts runs gives each test
// function an empty store of its own: call start() from the suite's init() slot.
#include <QTemporaryDir>
#include <QtGlobal>

#include <memory>

class FreshRunStore {
public:
    void start() {
        folder_ = std::make_unique<QTemporaryDir>();
        qputenv("MIRRORLAB_DATA_DIR", folder_->path().toUtf8());
    }
    QString path() const { return folder_ ? folder_->path() : QString(); }

private:
    std::unique_ptr<QTemporaryDir> folder_;
};
