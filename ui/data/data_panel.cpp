#include "ui/data/data_panel.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>
#include <iterator>

#include "core/data/keras_reuters.h"
#include "core/data/source.h"
#include "core/util/cancellation.h"
#include "core/util/error.h"
#include "ui/data/dataset_downloader.h"

namespace mirrorlab::ui {

namespace {
struct SourceKind {
    const char* prefix;  // core data spec prefix
    const char* label;
    bool needs_path;
    bool folder;
};
// The order is the combo's order; the synthetic default needs nothing on disk.
const SourceKind kSources[] = {
    {"default", QT_TRANSLATE_NOOP("DataPanel", "Default: Reuters when found on this computer, else synthetic"), false, false},
    {"synthetic", QT_TRANSLATE_NOOP("DataPanel", "Synthetic newswire (built in, Reuters-shaped)"), false, false},
    {"keras", QT_TRANSLATE_NOOP("DataPanel", "Keras reuters.npz file"), true, false},
    {"reuters21578", QT_TRANSLATE_NOOP("DataPanel", "Reuters-21578 folder (reut2-*.sgm)"), true, true},
    {"folder", QT_TRANSLATE_NOOP("DataPanel", "Text folder (one subfolder per class)"), true, true},
    {"csv", QT_TRANSLATE_NOOP("DataPanel", "CSV or TSV file (label and text columns)"), true, false},
};
}  // namespace

DataPanel::DataPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    source_ = new QComboBox(this);
    source_->setObjectName(QStringLiteral("dataSource"));
    source_->setToolTip(tr("Where the training and validation samples come from"));
    for (const auto& kind : kSources) source_->addItem(QCoreApplication::translate("DataPanel", kind.label));
    // The longest choice would set the dock's minimum width; it is elided instead.
    source_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    source_->setMinimumContentsLength(24);
    form->addRow(tr("Source:"), source_);
    auto* path_row = new QHBoxLayout;
    path_ = new QLineEdit(this);
    path_->setObjectName(QStringLiteral("dataPath"));
    path_->setAccessibleName(tr("Path"));
    path_->setToolTip(tr("The file or folder of the chosen source"));
    browse_ = new QPushButton(tr("Browse…"), this);
    browse_->setToolTip(tr("Choose the file or folder"));
    path_row->addWidget(path_, 1);
    path_row->addWidget(browse_);
    form->addRow(tr("Path:"), path_row);
    layout->addLayout(form);
    load_button_ = new QPushButton(tr("Load"), this);
    load_button_->setObjectName(QStringLiteral("loadData"));
    load_button_->setToolTip(tr("Read the data from the chosen source (in the background; pressed again, it cancels)"));
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("dataStatus"));
    status_->setWordWrap(true);
    download_button_ = new QPushButton(tr("Download Keras Reuters…"), this);
    download_button_->setObjectName(QStringLiteral("downloadReuters"));
    download_button_->setToolTip(tr("Download reuters.npz from Keras' server into %1").arg(DatasetDownloader::defaultCachePath()));
    download_progress_ = new QProgressBar(this);
    download_progress_->setObjectName(QStringLiteral("downloadProgress"));
    download_progress_->setVisible(false);
    downloader_ = new DatasetDownloader(this);
    auto* load_row = new QHBoxLayout;
    load_row->addWidget(load_button_);
    load_row->addWidget(download_button_);
    load_row->addWidget(download_progress_, 1);
    load_row->addStretch(0);
    layout->addLayout(load_row);
    // On a line of its own: long messages (a path, the offline alternatives) wrap instead of
    // widening the dock.
    layout->addWidget(status_);
    not_loaded_ = new QLabel(this);
    not_loaded_->setObjectName(QStringLiteral("dataNotLoaded"));
    not_loaded_->setWordWrap(true);
    not_loaded_->setStyleSheet(QStringLiteral("QLabel { color: #7a4b00; }"));
    not_loaded_->setVisible(false);
    layout->addWidget(not_loaded_);
    addWordsRows(layout);
    addSampleViews(layout);

    connectControls();
    connectDownload();
    onSourceChanged();
}

// Where the samples' words come from; for a reuters.npz without its word index, the two ways
// to get one.
void DataPanel::addWordsRows(QVBoxLayout* layout) {
    words_label_ = new QLabel(this);
    words_label_->setObjectName(QStringLiteral("wordsOrigin"));
    words_label_->setWordWrap(true);
    words_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(words_label_);
    download_words_ = new QPushButton(tr("Download the word index"), this);
    download_words_->setObjectName(QStringLiteral("downloadWordIndex"));
    download_words_->setToolTip(tr("Download Keras' reuters_word_index.json into %1 (resumable, checked against Keras' MD5)")
                                    .arg(DatasetDownloader::wordIndexCachePath()));
    derive_words_ = new QPushButton(tr("Derive from Reuters-21578"), this);
    derive_words_->setObjectName(QStringLiteral("deriveWordIndex"));
    derive_words_->setToolTip(tr("Rebuild Keras' word index from the Reuters-21578 files"));
    auto* words_row = new QHBoxLayout;
    words_row->addWidget(download_words_);
    words_row->addWidget(derive_words_);
    words_row->addStretch(1);
    layout->addLayout(words_row);
    download_words_->setVisible(false);
    derive_words_->setVisible(false);
    words_downloader_ = new DatasetDownloader(this);
}

// The loaded data's statistics and its first samples.
void DataPanel::addSampleViews(QVBoxLayout* layout) {
    statistics_ = new QPlainTextEdit(this);
    statistics_->setObjectName(QStringLiteral("dataStatistics"));
    statistics_->setAccessibleName(tr("Statistics"));
    statistics_->setToolTip(tr("Sizes, classes, vocabulary and sequence lengths of the loaded data"));
    statistics_->setReadOnly(true);
    statistics_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(statistics_, 1);
    samples_ = new QTableWidget(0, 3, this);
    samples_->setObjectName(QStringLiteral("dataSamples"));
    samples_->setAccessibleName(tr("Samples"));
    samples_->setToolTip(tr("The first training samples with their labels"));
    samples_->setHorizontalHeaderLabels({tr("Label"), tr("Tokens"), tr("Start of the sample")});
    samples_->horizontalHeader()->setStretchLastSection(true);
    samples_->verticalHeader()->setVisible(false);
    samples_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layout->addWidget(samples_, 1);
}

// The source, path and load controls, and the word index's buttons and download.
void DataPanel::connectControls() {
    connect(source_, &QComboBox::currentIndexChanged, this, &DataPanel::onSourceChanged);
    // By hand only: what a load puts in the form (showLoadedInForm) is what was loaded.
    auto edited = [this] {
        form_edited_ = true;
        showWhetherLoaded();
    };
    connect(source_, &QComboBox::activated, this, edited);
    connect(path_, &QLineEdit::textEdited, this, edited);
    // While a load runs the same button cancels it, as the download button does for downloads.
    connect(load_button_, &QPushButton::clicked, this, [this] { loading_ ? cancelLoad() : load(spec()); });
    connect(browse_, &QPushButton::clicked, this, [this] {
        const SourceKind& kind = kSources[source_->currentIndex()];
        const QString chosen = kind.folder ? QFileDialog::getExistingDirectory(this, tr("Choose a folder"), path_->text())
                                           : QFileDialog::getOpenFileName(this, tr("Choose a file"), path_->text());
        if (chosen.isEmpty()) return;
        path_->setText(chosen);
        form_edited_ = true;
        showWhetherLoaded();
    });
    connect(download_button_, &QPushButton::clicked, this, &DataPanel::toggleDownload);
    connect(download_words_, &QPushButton::clicked, this, &DataPanel::downloadWordIndex);
    connect(derive_words_, &QPushButton::clicked, this, &DataPanel::deriveWordIndex);
    connect(words_downloader_, &DatasetDownloader::progress, this, [this](qint64 received, qint64 total) {
        words_label_->setText(total > 0 ? tr("Downloading reuters_word_index.json: %1 of %2 kB…").arg(received / 1000).arg(total / 1000)
                                        : tr("Downloading reuters_word_index.json: %1 kB…").arg(received / 1000));
    });
    connect(words_downloader_, &DatasetDownloader::finished, this, [this] {
        // Core finds the file where it was put: loading again picks the words up.
        download_words_->setEnabled(true);
        load(loaded_spec_);
    });
    connect(words_downloader_, &DatasetDownloader::failed, this, [this](const QString& message) {
        download_words_->setEnabled(true);
        words_label_->setStyleSheet(QStringLiteral("color: #b00020"));
        words_label_->setText(message);
    });
}

// The reuters.npz download: its progress, then loading what it fetched, or why it failed.
void DataPanel::connectDownload() {
    connect(downloader_, &DatasetDownloader::progress, this, [this](qint64 received, qint64 total) {
        download_progress_->setRange(0, total > 0 ? 1000 : 0);  // 0..0: busy, size unknown
        if (total > 0) download_progress_->setValue(static_cast<int>(std::clamp<qint64>(received * 1000 / total, 0, 1000)));
        status_->setText(total > 0 ? tr("Downloading reuters.npz: %1 of %2 MB…").arg(received / 1e6, 0, 'f', 1).arg(total / 1e6, 0, 'f', 1)
                                   : tr("Downloading reuters.npz: %1 MB…").arg(received / 1e6, 0, 'f', 1));
    });
    connect(downloader_, &DatasetDownloader::finished, this, [this](const QString& path) {
        download_progress_->setVisible(false);
        download_button_->setText(tr("Download Keras Reuters…"));
        for (std::size_t i = 0; i < std::size(kSources); ++i) {
            if (qstrcmp(kSources[i].prefix, "keras") == 0) source_->setCurrentIndex(static_cast<int>(i));
        }
        path_->setText(path);
        load(spec());
    });
    connect(downloader_, &DatasetDownloader::failed, this, [this](const QString& message) {
        download_progress_->setVisible(false);
        download_button_->setText(tr("Download Keras Reuters…"));
        last_error_ = message;
        status_->setStyleSheet(QStringLiteral("color: #b00020"));
        status_->setText(message);
        emit loadFailed(message);
    });
}

void DataPanel::toggleDownload() {
    download_progress_->setVisible(false);
    download_button_->setText(tr("Download Keras Reuters…"));
    if (downloader_->isRunning()) {
        downloader_->cancel();
        status_->setStyleSheet({});
        status_->setText(tr("Download cancelled."));
        return;
    }
    download_progress_->setRange(0, 0);
    download_progress_->setVisible(true);
    download_button_->setText(tr("Cancel download"));
    status_->setStyleSheet({});
    status_->setText(tr("Downloading reuters.npz…"));
    downloader_->start(DatasetDownloader::reutersUrl(), DatasetDownloader::defaultCachePath(), DatasetDownloader::reutersSha256());
}

DataPanel::~DataPanel() {
    if (worker_.cancel) worker_.cancel->store(true);
    for (Loader& abandoned : abandoned_) abandoned.cancel->store(true);
    if (worker_.thread.joinable()) worker_.thread.join();
    if (deriver_.joinable()) deriver_.join();
    for (Loader& abandoned : abandoned_) abandoned.thread.join();
}

QString DataPanel::spec() const {
    const SourceKind& kind = kSources[std::max(0, source_->currentIndex())];
    if (!kind.needs_path) return QString::fromLatin1(kind.prefix);
    return QString::fromLatin1(kind.prefix) + QLatin1Char(':') + path_->text();
}

QString DataPanel::dataName() const {
    if (!dataset_) return {};
    QString name = QString::fromStdString(dataset_->train.name);
    if (dataset_->train.synthetic && !name.contains(tr("synthetic"), Qt::CaseInsensitive)) name += tr(" (synthetic)");
    return name;
}

void DataPanel::onSourceChanged() {
    const SourceKind& kind = kSources[std::max(0, source_->currentIndex())];
    path_->setEnabled(kind.needs_path);
    browse_->setEnabled(kind.needs_path);
    showWhetherLoaded();
}

// Exactly: Load would read spec(), and "synthetic" is not the "synthetic:320:64" loaded. A spec
// the form cannot show (counts, tsv:) is no difference until the form is changed by hand.
bool DataPanel::formShowsLoaded() const {
    if (!dataset_ || !form_edited_) return true;
    return spec() == loaded_spec_;
}

// A run trains on the data loaded, not on a choice made since: the form says so until Load.
void DataPanel::showWhetherLoaded() {
    const bool differs = !formShowsLoaded();
    if (differs) {
        not_loaded_->setText(tr("Not loaded yet: training uses %1 (%2) until you press Load.").arg(dataName(), loaded_spec_));
    }
    not_loaded_->setVisible(differs);
}

// The form shows the source and path of what was loaded, however the load was asked for (Train
// again, a download, the word index).
void DataPanel::showLoadedInForm() {
    form_edited_ = false;
    QString prefix = loaded_spec_.section(QLatin1Char(':'), 0, 0);
    if (prefix == QLatin1String("tsv")) prefix = QStringLiteral("csv");  // "CSV or TSV file" reads both
    for (std::size_t i = 0; i < std::size(kSources); ++i) {
        if (prefix != QLatin1String(kSources[i].prefix)) continue;
        source_->setCurrentIndex(static_cast<int>(i));
        if (kSources[i].needs_path) path_->setText(loaded_spec_.section(QLatin1Char(':'), 1));
        break;
    }
    showWhetherLoaded();
}

void DataPanel::loadLastUsed() {
    const QString last = spec();
    fallback_from_ = last == QLatin1String("default") ? QString() : last;
    load(last);
}

void DataPanel::load(const QString& spec_text) {
    if (spec_text != fallback_from_) fallback_from_.clear();  // another choice: no fallback for it
    if (loading_) {
        if (spec_text == loading_spec_) return;  // already on its way
        // The newest request wins: Train again during the first load (the default data) was
        // dropped without a word, and Start then trained on the default data.
        cancelLoad();
    }
    if (worker_.thread.joinable()) worker_.thread.join();
    loading_ = true;
    loading_spec_ = spec_text;
    const int generation = ++load_generation_;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    load_button_->setText(tr("Cancel"));
    status_->setStyleSheet({});
    status_->setText(tr("Loading %1…").arg(spec_text));
    emit loadingChanged(true);
    QPointer<DataPanel> self(this);
    const std::string spec_string = spec_text.toStdString();
    worker_.generation = generation;
    worker_.cancel = cancel;
    worker_.thread = std::thread([self, spec_string, spec_text, generation, cancel] {
        std::shared_ptr<const DatasetSplit> data;
        QString error;
        bool stopped_early = false;
        try {
            data = std::make_shared<const DatasetSplit>(load_dataset(spec_string, kDefaultDataSeed, cancel.get()));
        } catch (const Cancelled&) {
            stopped_early = true;  // its generation is past: there is nothing to show
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(
            qApp, [self, data, spec_text, error, generation, stopped_early] {
                if (self) self->onLoaded(data, spec_text, error, generation, stopped_early);
            },
            Qt::QueuedConnection);
    });
}

bool DataPanel::waitUntilLoaded(int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (loading_ && timer.elapsed() < timeout_ms) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(5);
    }
    return !loading_;
}

void DataPanel::cancelLoad() {
    if (!loading_) return;
    worker_.cancel->store(true);
    fallback_from_.clear();  // the person chose to stop it: no default follows
    abandoned_.push_back(std::move(worker_));
    worker_ = Loader{};
    ++load_generation_;
    loading_ = false;
    load_button_->setText(tr("Load"));
    status_->setStyleSheet({});
    status_->setText(dataset_ ? tr("Stopped loading %1; still using %2").arg(loading_spec_, dataName())
                              : tr("Stopped loading %1").arg(loading_spec_));
    emit loadingChanged(false);
}

// `data` by reference: a copy at the call would touch the loader's reference count before the join
// below orders it (ThreadSanitizer reported that copy once it had lost the loader's stack).
void DataPanel::onLoaded(const std::shared_ptr<const DatasetSplit>& data, const QString& spec_text, const QString& error,
                         int generation, bool stopped_early) {
    if (generation != load_generation_) {
        loads_stopped_early_ += stopped_early ? 1 : 0;
        // Cancelled: the panel has moved on. This was the load's last act; joining it now orders its
        // writes before the result is released, after this returns, where ThreadSanitizer sees it.
        const auto cancelled = std::find_if(abandoned_.begin(), abandoned_.end(),
                                            [generation](const Loader& entry) { return entry.generation == generation; });
        if (cancelled != abandoned_.end()) {
            cancelled->thread.join();
            abandoned_.erase(cancelled);
        }
        return;
    }
    // This generation's loader posted this call as its last act: joining it costs nothing and
    // orders its writes to the data set before every read here, where ThreadSanitizer sees it.
    if (worker_.thread.joinable()) worker_.thread.join();
    loading_ = false;
    load_button_->setText(tr("Load"));
    emit loadingChanged(false);
    const bool last_used = !fallback_from_.isEmpty() && spec_text == fallback_from_;
    fallback_from_.clear();
    if (!error.isEmpty()) {
        last_error_ = error;
        failed_spec_ = spec_text;
        status_->setStyleSheet(QStringLiteral("color: #b00020"));
        status_->setText(tr("Could not load the data: %1").arg(error));
        if (last_used && !dataset_) {
            // The last session's file is gone: the window still gets data to train on.
            last_error_ = tr("The data used last time (%1) could not be loaded: %2. The default data is loaded instead; "
                             "choose other data in the Data panel.")
                              .arg(spec_text, error);
            emit loadFailed(last_error_);
            load(QStringLiteral("default"));
            return;
        }
        emit loadFailed(error);
        return;
    }
    last_error_.clear();
    dataset_ = data;
    loaded_spec_ = spec_text;
    showLoadedInForm();
    status_->setStyleSheet({});
    status_->setText(tr("Loaded: %1").arg(dataName()));
    showStatistics();
    showWordsOrigin();
    emit datasetChanged();
}

void DataPanel::showStatistics() {
    const TextDataset& train = dataset_->train;
    const TextDataset& validation = dataset_->validation;
    std::vector<std::size_t> lengths;
    for (const auto& sequence : train.sequences) lengths.push_back(sequence.size());
    std::sort(lengths.begin(), lengths.end());
    const std::size_t median = lengths.empty() ? 0 : lengths[lengths.size() / 2];
    const auto truncated = std::count_if(lengths.begin(), lengths.end(), [](std::size_t n) { return n > 300; });
    QString text;
    text += tr("%1\n").arg(dataName());
    text += tr("Training samples:   %1\n").arg(train.size());
    text += tr("Validation samples: %1\n").arg(validation.size());
    text += tr("Classes:            %1\n").arg(train.num_classes);
    text += tr("Vocabulary:         %1 ids\n").arg(train.vocabulary_size);
    text += tr("Length (tokens):    median %1, max %2; %3 % longer than 300\n")
                .arg(median)
                .arg(lengths.empty() ? 0 : lengths.back())
                .arg(lengths.empty() ? 0.0 : 100.0 * static_cast<double>(truncated) / static_cast<double>(lengths.size()), 0, 'f', 1);
    const std::vector<std::int64_t> counts = train.class_counts();
    std::vector<int> order(counts.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return counts[static_cast<std::size_t>(a)] > counts[static_cast<std::size_t>(b)]; });
    text += tr("Largest classes:\n");
    for (std::size_t i = 0; i < std::min<std::size_t>(8, order.size()); ++i) {
        const auto c = static_cast<std::size_t>(order[i]);
        const QString name = c < train.class_names.size() ? QString::fromStdString(train.class_names[c]) : QString::number(c);
        text += QStringLiteral("  %1 %2  %3\n").arg(c, 3).arg(name, -16).arg(counts[c]);
    }
    statistics_->setPlainText(text);

    samples_->setRowCount(0);
    for (std::size_t i = 0; i < std::min<std::size_t>(10, train.size()); ++i) {
        const int row = samples_->rowCount();
        samples_->insertRow(row);
        const auto label = static_cast<std::size_t>(train.labels[i]);
        const QString name = label < train.class_names.size() ? QString::fromStdString(train.class_names[label]) : QString::number(label);
        samples_->setItem(row, 0, new QTableWidgetItem(QStringLiteral("%1 (%2)").arg(name).arg(label)));
        samples_->setItem(row, 1, new QTableWidgetItem(QString::number(train.sequences[i].size())));
        // Words where the source has a vocabulary (Reuters-21578, own texts), else the ids.
        samples_->setItem(row, 2, new QTableWidgetItem(QString::fromStdString(decode_sequence(train, train.sequences[i], 24))));
    }
}

QString DataPanel::wordsText() const { return words_label_->text(); }

void DataPanel::showWordsOrigin() {
    words_label_->setStyleSheet({});
    const WordsOrigin& origin = dataset_->words_origin;
    const QString path = QDir::toNativeSeparators(QString::fromStdString(origin.path));
    const bool npz_without_words =
        origin.kind == WordsOrigin::Kind::None && dataset_->train.name == kKerasReutersName;
    switch (origin.kind) {
        case WordsOrigin::Kind::KerasWordIndex:
            words_label_->setText(tr("Words: from Keras' word index %1").arg(path));
            break;
        case WordsOrigin::Kind::DerivedWordIndex:
            words_label_->setText(tr("Words: from the word index derived from the Reuters-21578 files (Keras' recipe), %1").arg(path));
            break;
        case WordsOrigin::Kind::Vocabulary:
            words_label_->setText(tr("Words: the source's own vocabulary"));
            break;
        case WordsOrigin::Kind::None:
            words_label_->setText(npz_without_words
                                      ? tr("Words: none yet. reuters.npz holds word ids only, and no reuters_word_index.json "
                                           "was found beside it; download Keras' word index or derive it from the Reuters-21578 "
                                           "files to read the samples as words.")
                                      : tr("Words: none (this source has word ids only)"));
            break;
    }
    download_words_->setVisible(npz_without_words);
    derive_words_->setVisible(npz_without_words);
    const std::optional<std::string> sgml = find_reuters21578();
    derive_words_->setEnabled(sgml.has_value() && !deriver_.joinable());
    derive_words_->setToolTip(sgml ? tr("Rebuild Keras' word index from the Reuters-21578 files in %1 (the same 30,979 ranks)")
                                         .arg(QDir::toNativeSeparators(QString::fromStdString(*sgml)))
                                   : tr("No Reuters-21578 files found: put reut2-000.sgm ... reut2-021.sgm in %1 or set "
                                        "MIRRORLAB_REUTERS21578_DIR")
                                         .arg(QDir::toNativeSeparators(QString::fromStdString(reuters21578_candidates().empty()
                                                                                                  ? std::string()
                                                                                                  : reuters21578_candidates().back()))));
}

void DataPanel::downloadWordIndex() {
    if (words_downloader_->isRunning()) return;
    download_words_->setEnabled(false);
    words_label_->setStyleSheet({});
    words_label_->setText(tr("Downloading reuters_word_index.json…"));
    words_downloader_->start(DatasetDownloader::wordIndexUrl(), DatasetDownloader::wordIndexCachePath(),
                             DatasetDownloader::wordIndexHash());
}

void DataPanel::deriveWordIndex() {
    const std::optional<std::string> sgml = find_reuters21578();
    if (!sgml || deriver_.joinable()) return;
    derive_words_->setEnabled(false);
    words_label_->setStyleSheet({});
    words_label_->setText(tr("Deriving the word index from the Reuters-21578 files in %1…")
                              .arg(QDir::toNativeSeparators(QString::fromStdString(*sgml))));
    const std::string destination = mirrorlab_cache_dir() + "/" + kDerivedWordIndexName;
    QPointer<DataPanel> self(this);
    deriver_ = std::thread([self, dir = *sgml, destination] {
        QString error;
        try {
            derive_reuters_word_index(dir, destination);
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(
            qApp,
            [self, error] {
                if (!self) return;
                self->deriver_.join();
                if (!error.isEmpty()) {
                    self->derive_words_->setEnabled(true);
                    self->words_label_->setStyleSheet(QStringLiteral("color: #b00020"));
                    self->words_label_->setText(tr("Could not derive the word index: %1").arg(error));
                    return;
                }
                self->load(self->loaded_spec_);
            },
            Qt::QueuedConnection);
    });
}

void DataPanel::saveSettings(QSettings& settings) const {
    settings.setValue(QStringLiteral("data/source"), source_->currentIndex());
    settings.setValue(QStringLiteral("data/path"), path_->text());
}

void DataPanel::restoreSettings(const QSettings& settings) {
    source_->setCurrentIndex(std::clamp(settings.value(QStringLiteral("data/source"), 0).toInt(), 0, source_->count() - 1));
    path_->setText(settings.value(QStringLiteral("data/path")).toString());
}

}  // namespace mirrorlab::ui
