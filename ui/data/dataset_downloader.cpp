#include "ui/data/dataset_downloader.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QStandardPaths>
#include <QTimer>

#include <filesystem>

namespace mirrorlab::ui {

namespace {
// A stalled transfer counts as a dropped connection (and is retried) after this long without data.
constexpr int kTransferTimeoutMs = 30'000;

// keras.utils.get_file(hash_algorithm="auto"): 64 hex digits are a SHA-256, others an MD5.
QCryptographicHash::Algorithm algorithm_of(const QByteArray& hex) {
    return hex.size() == 64 ? QCryptographicHash::Sha256 : QCryptographicHash::Md5;
}

QByteArray hash_of_file(const QString& path, QCryptographicHash::Algorithm algorithm) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash hash(algorithm);
    if (!hash.addData(&file)) return {};
    return hash.result().toHex();
}

// "bytes START-END/TOTAL" (TOTAL may be "*"): START, END and TOTAL (-1 when unknown), or false.
bool parse_content_range(const QByteArray& header, qint64& start, qint64& end, qint64& total) {
    const QByteArray value = header.trimmed();
    if (!value.startsWith("bytes ")) return false;
    const QByteArray spec = value.mid(6).trimmed();
    const qsizetype dash = spec.indexOf('-');
    const qsizetype slash = spec.indexOf('/');
    if (dash <= 0 || slash <= dash) return false;
    bool ok = false;
    start = spec.left(dash).toLongLong(&ok);
    if (!ok) return false;
    end = spec.mid(dash + 1, slash - dash - 1).toLongLong(&ok);
    if (!ok || end < start) return false;
    const QByteArray total_text = spec.mid(slash + 1);
    total = total_text == "*" ? -1 : total_text.toLongLong(&ok);
    return ok;
}

// Errors below ContentAccessDenied are about reaching the server (refused, closed, DNS, timeout,
// TLS, proxy): the ones a person without a connection meets, and worth retrying.
bool is_connection_error(QNetworkReply::NetworkError error) {
    return error != QNetworkReply::NoError && error < QNetworkReply::ContentAccessDenied;
}
}  // namespace

DatasetDownloader::DatasetDownloader(QObject* parent)
    : QObject(parent), network_(new QNetworkAccessManager(this)), retry_timer_(new QTimer(this)) {
    retry_timer_->setSingleShot(true);
    connect(retry_timer_, &QTimer::timeout, this, [this] {
        if (running_) sendRequest();
    });
}

DatasetDownloader::~DatasetDownloader() {
    if (reply_ != nullptr) {
        reply_->disconnect(this);
        reply_->abort();
    }
    part_.close();  // flushed and kept: the next start() resumes from it
}

QUrl DatasetDownloader::reutersUrl() {
    const QString url = qEnvironmentVariable("MIRRORLAB_REUTERS_URL");
    return QUrl(url.isEmpty() ? QString::fromLatin1(kKerasReutersUrl) : url);
}

QByteArray DatasetDownloader::reutersSha256() {
    const QByteArray hash = qgetenv("MIRRORLAB_REUTERS_SHA256").trimmed();
    return hash.isEmpty() ? QByteArray(kKerasReutersSha256) : hash;
}

QString DatasetDownloader::defaultCachePath() {
    return QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation) + QStringLiteral("/mirrorlab/reuters.npz");
}

QUrl DatasetDownloader::wordIndexUrl() {
    const QString url = qEnvironmentVariable("MIRRORLAB_REUTERS_WORD_INDEX_URL");
    return QUrl(url.isEmpty() ? QString::fromLatin1(kKerasWordIndexUrl) : url);
}

QByteArray DatasetDownloader::wordIndexHash() {
    const QByteArray hash = qgetenv("MIRRORLAB_REUTERS_WORD_INDEX_HASH").trimmed();
    return hash.isEmpty() ? QByteArray(kKerasWordIndexMd5) : hash;
}

QString DatasetDownloader::wordIndexCachePath() {
    return QFileInfo(defaultCachePath()).absolutePath() + QStringLiteral("/reuters_word_index.json");
}

QString DatasetDownloader::fileName() const {
    const QString name = QFileInfo(destination_).fileName();
    return name.isEmpty() ? url_.fileName() : name;
}

void DatasetDownloader::start(const QUrl& url, const QString& destination, const QByteArray& expected_hash_hex) {
    if (running_) return;
    url_ = url;
    destination_ = destination;
    expected_hash_ = expected_hash_hex.trimmed().toLower();
    retries_ = 0;
    clean_restarts_ = 0;
    running_ = true;
    const int generation = ++generation_;
    // Answers that need no request still arrive from the event loop, like every other answer.
    auto answer_later = [this, generation](auto emit_answer) {
        QTimer::singleShot(0, this, [this, generation, emit_answer] {
            if (running_ && generation == generation_) emit_answer();
        });
    };
    const QFileInfo info(destination_);
    if (!QDir().mkpath(info.absolutePath())) {
        answer_later([this] { fail(tr("Could not create the folder %1.").arg(QDir::toNativeSeparators(QFileInfo(destination_).absolutePath()))); });
        return;
    }
    if (info.isFile() && !expected_hash_.isEmpty() && hash_of_file(destination_, algorithm_of(expected_hash_)) == expected_hash_) {
        answer_later([this] {
            stop();
            emit finished(destination_);
        });
        return;
    }
    sendRequest();
}

void DatasetDownloader::cancel() {
    if (!running_) return;
    ++generation_;
    stop();
    if (reply_ != nullptr) {
        QNetworkReply* reply = reply_;
        reply_ = nullptr;
        reply->disconnect(this);
        reply->abort();
        reply->deleteLater();
    }
    QFile::remove(partPath());
}

void DatasetDownloader::stop() {
    running_ = false;
    retry_timer_->stop();
    part_.close();
}

void DatasetDownloader::fail(const QString& message) {
    stop();
    emit failed(message);
}

void DatasetDownloader::sendRequest() {
    body_ = Body::Undecided;
    total_bytes_ = -1;
    end_bytes_ = -1;
    write_error_.clear();
    too_large_ = false;
    const QFileInfo part_info(partPath());
    resume_from_bytes_ = part_info.isFile() ? part_info.size() : 0;
    received_bytes_ = 0;
    QNetworkRequest request(url_);
    request.setTransferTimeout(kTransferTimeoutMs);
    // Byte offsets only mean something on the file itself, not on a compressed transfer of it.
    request.setRawHeader("Accept-Encoding", "identity");
    if (resume_from_bytes_ > 0) request.setRawHeader("Range", "bytes=" + QByteArray::number(resume_from_bytes_) + '-');
    QNetworkReply* reply = network_->get(request);
    reply_ = reply;
    connect(reply, &QNetworkReply::readyRead, this, [this, reply] { consume(reply); });
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onReplyFinished(reply); });
}

void DatasetDownloader::decideBody(QNetworkReply* reply) {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    bool append = false;
    if (status == 206) {
        qint64 start = 0;
        qint64 end = 0;
        qint64 total = -1;
        // A range other than the one asked for cannot continue the .part file.
        if (!parse_content_range(reply->rawHeader("Content-Range"), start, end, total) || start != resume_from_bytes_) {
            body_ = Body::RestartClean;
            QTimer::singleShot(0, reply, &QNetworkReply::abort);
            return;
        }
        append = start > 0;
        total_bytes_ = total;
        end_bytes_ = end + 1;
    } else if (status == 200) {
        // The server ignored the Range header (or none was sent): start the file over.
        const QVariant length = reply->header(QNetworkRequest::ContentLengthHeader);
        total_bytes_ = length.isValid() ? length.toLongLong() : -1;
        end_bytes_ = total_bytes_;
    } else {
        body_ = Body::Discarding;  // an error page, not the file
        return;
    }
    resume_from_bytes_ = append ? resume_from_bytes_ : 0;
    received_bytes_ = resume_from_bytes_;
    part_.setFileName(partPath());
    if (!part_.open(append ? QIODevice::WriteOnly | QIODevice::Append : QIODevice::WriteOnly | QIODevice::Truncate)) {
        write_error_ = part_.errorString();
        body_ = Body::Discarding;
        QTimer::singleShot(0, reply, &QNetworkReply::abort);
        return;
    }
    body_ = Body::Writing;
    emit progress(received_bytes_, total_bytes_);
}

void DatasetDownloader::consume(QNetworkReply* reply) {
    if (reply != reply_) return;
    if (body_ == Body::Undecided) decideBody(reply);
    const QByteArray chunk = reply->readAll();
    if (body_ != Body::Writing || chunk.isEmpty()) return;
    if (part_.write(chunk) != chunk.size()) {
        write_error_ = part_.errorString();
        body_ = Body::Discarding;
        QTimer::singleShot(0, reply, &QNetworkReply::abort);
        return;
    }
    received_bytes_ += chunk.size();
    if (received_bytes_ > max_bytes_ || total_bytes_ > max_bytes_) {
        body_ = Body::Discarding;
        too_large_ = true;
        QTimer::singleShot(0, reply, &QNetworkReply::abort);
        return;
    }
    emit progress(received_bytes_, total_bytes_);
}

void DatasetDownloader::onReplyFinished(QNetworkReply* reply) {
    if (reply != reply_) return;
    consume(reply);  // whatever arrived with the end of the transfer
    reply_ = nullptr;
    reply->deleteLater();
    const bool wrote_bytes = body_ == Body::Writing && received_bytes_ > resume_from_bytes_;
    part_.close();
    if (!running_) return;
    if (!write_error_.isEmpty()) {
        fail(tr("Could not write %1: %2").arg(QDir::toNativeSeparators(partPath()), write_error_));
        return;
    }
    if (too_large_) {
        QFile::remove(partPath());
        fail(tr("Stopped downloading %1: the server sent more than %2 MB, far more than the file is. Check the "
                "address (MIRRORLAB_REUTERS_URL) or try again later.")
                 .arg(fileName())
                 .arg(max_bytes_ >> 20));
        return;
    }
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QNetworkReply::NetworkError error = reply->error();
    const bool complete = error == QNetworkReply::NoError && body_ == Body::Writing;
    // Qt's HTTP/1 client reports a connection closed in mid-body as a success, and may silently
    // send the request again on the same reply; the length the server announced tells.
    const bool too_long = complete && end_bytes_ >= 0 && received_bytes_ > end_bytes_;
    const bool cut_short = complete && end_bytes_ >= 0 && received_bytes_ < end_bytes_;
    if (body_ == Body::RestartClean || status == 416 || too_long) {
        // The .part file cannot be continued (the server sent another range, the file is
        // already longer than the server's, or the bytes came twice): drop it, fetch it whole.
        QFile::remove(partPath());
        if (clean_restarts_++ < kMaxRetries) {
            sendRequest();
            return;
        }
        fail(tr("Could not download %1 (the server keeps sending another part of the file than the one asked for).").arg(fileName()));
        return;
    } else if (complete && !cut_short) {
        finishDownload();
        return;
    }
    // A connection that delivered bytes before it dropped starts a fresh series of retries.
    if (wrote_bytes) retries_ = 0;
    const bool server_error = status >= 500 || (error >= QNetworkReply::InternalServerError && error <= QNetworkReply::UnknownServerError);
    if ((is_connection_error(error) || server_error || cut_short) && retries_ < kMaxRetries) {
        retry_timer_->start(retry_delay_ms_ << retries_);
        ++retries_;
        return;
    }
    const QString reason = cut_short                         ? tr("the connection closed after %1 of %2 bytes").arg(received_bytes_).arg(end_bytes_)
                           : error != QNetworkReply::NoError ? reply->errorString()
                                                             : tr("the server answered HTTP %1").arg(status);
    const QString alternatives = tr("import the Reuters-21578 files (Data → Reuters-21578 folder), train on your own texts "
                                    "(text folder or CSV), or use the built-in synthetic corpus.");
    if (is_connection_error(error) || cut_short) {
        fail(tr("Could not download %1 (%2). Without a connection you can: %3").arg(fileName(), reason, alternatives));
    } else {
        fail(tr("Could not download %1 (%2). Instead you can: %3").arg(fileName(), reason, alternatives));
    }
}

void DatasetDownloader::finishDownload() {
    const QByteArray actual = hash_of_file(partPath(), algorithm_of(expected_hash_));
    if (actual.isEmpty()) {
        fail(tr("Could not read %1 back to check it.").arg(QDir::toNativeSeparators(partPath())));
        return;
    }
    if (!expected_hash_.isEmpty() && actual != expected_hash_) {
        QFile::remove(partPath());
        if (algorithm_of(expected_hash_) == QCryptographicHash::Sha256) {
            fail(tr("The downloaded %1 is damaged: its SHA-256 is %2, expected %3. The partial file was deleted; try again.")
                     .arg(fileName(), QString::fromLatin1(actual), QString::fromLatin1(expected_hash_)));
        } else {
            fail(tr("The downloaded %1 is damaged: its MD5 is %2, expected %3. The partial file was deleted; try again.")
                     .arg(fileName(), QString::fromLatin1(actual), QString::fromLatin1(expected_hash_)));
        }
        return;
    }
    // rename(2) replaces the old file in one step: until the new one is checked and in place, the
    // old one stays usable, and a failure leaves it as it was.
    std::error_code rename_error;
    std::filesystem::rename(QFile::encodeName(partPath()).toStdString(), QFile::encodeName(destination_).toStdString(),
                            rename_error);
    if (rename_error) {
        fail(tr("Could not move %1 to %2: %3")
                 .arg(QDir::toNativeSeparators(partPath()), QDir::toNativeSeparators(destination_),
                      QString::fromStdString(rename_error.message())));
        return;
    }
    stop();
    emit finished(destination_);
}

}  // namespace mirrorlab::ui
