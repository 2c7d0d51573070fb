#pragma once
// Downloads one data file (Keras' reuters.npz or reuters_word_index.json) into the cache, as
// keras.utils.get_file() would, but resumable and with a progress signal: the bytes go to
// `destination + ".part"`, a later attempt continues it with a Range request where the server
// answers 206 (and starts over where it answers 200), the checksum (SHA-256 or MD5, as get_file()
// tells them apart) is checked before the file is renamed into place, and a dropped
// or refused connection is retried up to kMaxRetries times with a doubling delay. Everything
// runs on the owning thread's event loop; no thread of its own.
#include <QByteArray>
#include <QFile>
#include <QObject>
#include <QString>
#include <QUrl>

class QNetworkAccessManager;
class QNetworkReply;
class QTimer;

namespace mirrorlab::ui {

class DatasetDownloader : public QObject {
    Q_OBJECT
public:
    // Where keras.datasets.reuters.load_data() downloads from, and the SHA-256 it checks
    // (keras/src/datasets/reuters.py, Keras 3: get_file(file_hash=...), 64 hex digits = sha256).
    static constexpr const char* kKerasReutersUrl = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/reuters.npz";
    static constexpr const char* kKerasReutersSha256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916";
    // keras.datasets.reuters.get_word_index(): get_file(file_hash=...), 32 hex digits = MD5.
    static constexpr const char* kKerasWordIndexUrl =
        "https://storage.googleapis.com/tensorflow/tf-keras-datasets/reuters_word_index.json";
    static constexpr const char* kKerasWordIndexMd5 = "4d44cc38712099c9e383dc6e5f11a921";
    static constexpr int kMaxRetries = 3;
    // Keras' reuters.npz is 2.1 MB: a server that sends far more is not sending it, and is stopped
    // before it can fill the disk.
    static constexpr qint64 kDefaultMaxBytes = qint64{64} << 20;

    explicit DatasetDownloader(QObject* parent = nullptr);
    // Aborts a running download but keeps the .part file, so the next start() resumes it.
    ~DatasetDownloader() override;

    // The URL and hash the app uses: Keras' own, unless the environment overrides them with
    // MIRRORLAB_REUTERS_URL and MIRRORLAB_REUTERS_SHA256 (for tests and for mirrors).
    static QUrl reutersUrl();
    static QByteArray reutersSha256();
    // GenericCacheLocation/mirrorlab/reuters.npz, i.e. $XDG_CACHE_HOME/mirrorlab/reuters.npz or
    // ~/.cache/mirrorlab/reuters.npz: the last place core's find_keras_reuters() looks. (Not
    // CacheLocation, which appends the organisation and application names.)
    static QString defaultCachePath();
    // The same for reuters_word_index.json: MIRRORLAB_REUTERS_WORD_INDEX_URL and
    // MIRRORLAB_REUTERS_WORD_INDEX_HASH override Keras' URL and MD5; it goes beside
    // defaultCachePath(), where core's find_reuters_word_index() looks.
    static QUrl wordIndexUrl();
    static QByteArray wordIndexHash();
    static QString wordIndexCachePath();

    // `expected_hash_hex`: the whole file's SHA-256 (64 hex digits) or MD5 (32), either case, as
    // get_file(file_hash=...) takes them; empty skips the check. A destination that already exists
    // with that hash is reused without a request.
    // Ignored while a download runs. Ends with exactly one finished() or failed() (none after
    // cancel()).
    void start(const QUrl& url, const QString& destination, const QByteArray& expected_hash_hex);
    // Stops the download and deletes the .part file; no signal follows.
    void cancel();
    bool isRunning() const { return running_; }
    // The first retry's delay; each further retry waits twice as long. 500 ms by default.
    void setRetryDelay(int first_retry_delay_ms) { retry_delay_ms_ = first_retry_delay_ms; }
    void setMaxBytes(qint64 max_bytes) { max_bytes_ = max_bytes; }

signals:
    // `total` is -1 while the size is unknown; both count the whole file, resumed bytes included.
    void progress(qint64 received, qint64 total);
    void finished(const QString& path);
    void failed(const QString& message);

private:
    enum class Body { Undecided, Writing, Discarding, RestartClean };

    void sendRequest();
    void onReplyFinished(QNetworkReply* reply);
    void consume(QNetworkReply* reply);
    void decideBody(QNetworkReply* reply);
    void finishDownload();
    void fail(const QString& message);
    void stop();
    QString partPath() const { return destination_ + QStringLiteral(".part"); }
    QString fileName() const;

    QNetworkAccessManager* network_ = nullptr;
    QNetworkReply* reply_ = nullptr;
    QTimer* retry_timer_ = nullptr;
    QFile part_;
    QUrl url_;
    QString destination_;
    QByteArray expected_hash_;
    Body body_ = Body::Undecided;
    qint64 max_bytes_ = kDefaultMaxBytes;
    qint64 resume_from_bytes_ = 0;
    qint64 received_bytes_ = 0;
    qint64 total_bytes_ = -1;
    qint64 end_bytes_ = -1;  // the file offset the current response should end at; -1: unknown
    int retries_ = 0;
    int clean_restarts_ = 0;
    int retry_delay_ms_ = 500;
    QString write_error_;
    bool too_large_ = false;  // more than max_bytes_ arrived (or was announced): not the file
    int generation_ = 0;  // start() and cancel() bump it, so stale queued calls do nothing
    bool running_ = false;
};

}  // namespace mirrorlab::ui
