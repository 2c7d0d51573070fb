#pragma once
// Choosing the training data: the source (the synthetic default, files and folders as core
// supports them), loaded off the GUI thread, with its statistics and a few samples with labels.
// Samples read as words: Keras' reuters.npz holds only ids, so where no word index is found
// beside it the panel offers to download Keras' reuters_word_index.json or to derive the same
// index from the Reuters-21578 files, and says which one the words come from.
#include <QWidget>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/data/dataset.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QVBoxLayout;
class QSettings;

namespace mirrorlab::ui {

class DatasetDownloader;

class DataPanel : public QWidget {
    Q_OBJECT
public:
    explicit DataPanel(QWidget* parent = nullptr);
    ~DataPanel() override;

    std::shared_ptr<const DatasetSplit> dataset() const { return dataset_; }
    QString dataName() const;
    QString spec() const;  // the core data spec of the current choice ("synthetic", "keras:/path", ...)
    // The spec the data set shown (and trained on) was loaded from: what a run records, and what
    // "Train again" loads. The form may show another choice that has not been loaded yet.
    QString loadedSpec() const { return dataset_ ? loaded_spec_ : QString(); }
    // Whether the source and path shown are what was loaded (a note says so when they are not).
    bool formShowsLoaded() const;
    bool isLoading() const { return loading_; }
    QString lastError() const { return last_error_; }
    QString failedSpec() const { return failed_spec_; }  // the spec of the last load that failed

    // Loads in the background; datasetChanged() or loadFailed() follow on the GUI thread.
    void load(const QString& spec);
    // At start-up: the data the form shows (the last session's), or, when that cannot be loaded
    // any more (a file moved or deleted), the default data, with loadFailed() saying so.
    void loadLastUsed();
    // Gives up the load in progress: the panel keeps the data it had and can load again at once.
    // The abandoned load stops at its next row, text or file and frees what it held.
    void cancelLoad();
    // Loads whose threads have not ended yet (the current one and cancelled ones still stopping),
    // and how many cancelled loads stopped before reading to their end.
    int loadsRunning() const { return (worker_.thread.joinable() ? 1 : 0) + static_cast<int>(abandoned_.size()); }
    int loadsStoppedEarly() const { return loads_stopped_early_; }
    bool waitUntilLoaded(int timeout_ms);

    // "Words: …" as shown: where the samples' words come from, or why they are ids.
    QString wordsText() const;

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    void datasetChanged();
    void loadFailed(const QString& message);
    void loadingChanged(bool loading);  // a load began, or ended (loaded, failed or cancelled)

private:
    void addWordsRows(QVBoxLayout* layout);
    void addSampleViews(QVBoxLayout* layout);
    void connectControls();
    void connectDownload();
    void onSourceChanged();
    void showWhetherLoaded();
    void showLoadedInForm();
    void onLoaded(const std::shared_ptr<const DatasetSplit>& data, const QString& spec, const QString& error, int generation,
                  bool stopped_early);
    void showStatistics();
    // "Download Keras Reuters…": fetches reuters.npz into DatasetDownloader::defaultCachePath()
    // from DatasetDownloader::reutersUrl() (MIRRORLAB_REUTERS_URL / MIRRORLAB_REUTERS_SHA256
    // override Keras' URL and hash), then selects and loads it; clicked again, it cancels.
    void toggleDownload();
    void showWordsOrigin();
    void downloadWordIndex();
    void deriveWordIndex();

    QComboBox* source_ = nullptr;
    QLineEdit* path_ = nullptr;
    QPushButton* browse_ = nullptr;
    QPushButton* load_button_ = nullptr;
    QLabel* status_ = nullptr;
    QPlainTextEdit* statistics_ = nullptr;
    QTableWidget* samples_ = nullptr;
    QPushButton* download_button_ = nullptr;
    QProgressBar* download_progress_ = nullptr;
    DatasetDownloader* downloader_ = nullptr;
    QLabel* words_label_ = nullptr;
    QPushButton* download_words_ = nullptr;
    QPushButton* derive_words_ = nullptr;
    DatasetDownloader* words_downloader_ = nullptr;
    std::thread deriver_;  // derives the word index from the Reuters-21578 files
    std::shared_ptr<const DatasetSplit> dataset_;
    QString loaded_spec_;
    QLabel* not_loaded_ = nullptr;  // "Not loaded: training uses …" while the form shows another choice
    bool form_edited_ = false;      // the source or path changed by hand since the last load
    QString last_error_;
    bool loading_ = false;
    int load_generation_ = 0;  // a result from an older generation was cancelled
    QString loading_spec_;
    QString failed_spec_;
    QString fallback_from_;  // the last session's spec while it loads: the default follows if it fails
    // A load on its thread. Cancel sets its flag: load_dataset() stops within a row, a text or a
    // file, so that a cancelled multi-GB load neither runs on beside the next one nor holds its
    // memory (nor holds up closing the window).
    struct Loader {
        int generation = 0;
        std::shared_ptr<std::atomic<bool>> cancel;
        std::thread thread;
    };
    Loader worker_;
    // Cancelled loads still stopping, by their generation: joined when their dropped result
    // arrives, or on destruction.
    std::vector<Loader> abandoned_;
    int loads_stopped_early_ = 0;
};

}  // namespace mirrorlab::ui
