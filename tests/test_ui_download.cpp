// Downloading reuters.npz: against a small HTTP server inside the test (127.0.0.1, Range
// support switchable, able to drop a connection mid-body or stall), every outcome a person can
// meet: a good download with progress, a damaged file, a resumed one, a server that cannot
// resume, no connection, cancelling, the cache; then the data panel's button end to end.
#include <QtTest/QtTest>

#include <QApplication>
#include <QComboBox>
#include <QCryptographicHash>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTableWidget>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>

#include <algorithm>
#include <memory>
#include <string>

#include "core/data/dataset.h"
#include "core/data/keras_reuters.h"
#include "support/real_data.h"
#include "ui/data/data_panel.h"
#include "ui/data/dataset_downloader.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

QByteArray sha256_hex(const QByteArray& bytes) {
    return QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex();
}

QByteArray random_bytes(qsizetype size) {
    QByteArray bytes(size, Qt::Uninitialized);
    QRandomGenerator generator(20240601);
    for (char& c : bytes) c = static_cast<char>(generator.bounded(256));
    return bytes;
}

QByteArray read_file(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// One file over HTTP/1.1, one request per connection. Records each request's Range header
// (empty when none) and the status it answered.
class FileServer {
public:
    QByteArray body;
    bool supports_range = true;
    int drops_left = 0;      // that many responses end (connection closed) after drop_after body bytes
    qint64 drop_after = 0;
    qint64 stall_after = -1; // >= 0: send that many body bytes, then keep the connection open, silent
    QList<QByteArray> range_headers;
    QList<int> statuses;

    FileServer() {
        QObject::connect(&server_, &QTcpServer::newConnection, [this] {
            while (QTcpSocket* socket = server_.nextPendingConnection()) {
                auto buffer = std::make_shared<QByteArray>();
                QObject::connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
                QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, socket, buffer] {
                    buffer->append(socket->readAll());
                    if (buffer->contains("\r\n\r\n")) {
                        respond(socket, *buffer);
                        buffer->clear();
                    }
                });
            }
        });
    }
    bool listen() { return server_.listen(QHostAddress::LocalHost); }
    QUrl url() const { return QUrl(QStringLiteral("http://127.0.0.1:%1/reuters.npz").arg(server_.serverPort())); }

private:
    void respond(QTcpSocket* socket, const QByteArray& request) {
        QByteArray range;
        for (const QByteArray& raw_line : request.split('\n')) {
            const QByteArray line = raw_line.trimmed();
            if (line.toLower().startsWith("range:")) range = line.mid(6).trimmed();
        }
        range_headers << range;
        const qint64 size = body.size();
        qint64 start = 0;
        int status = 200;
        if (!range.isEmpty() && supports_range) {
            start = range.mid(6, range.indexOf('-') - 6).toLongLong();  // "bytes=N-"
            status = start >= size ? 416 : 206;
        }
        statuses << status;
        const QByteArray payload = status == 416 ? QByteArray() : body.mid(start);
        QByteArray head = "HTTP/1.1 " + QByteArray::number(status) +
                          (status == 200 ? " OK" : status == 206 ? " Partial Content" : " Range Not Satisfiable") + "\r\n";
        head += "Content-Type: application/octet-stream\r\nConnection: close\r\n";
        head += "Content-Length: " + QByteArray::number(payload.size()) + "\r\n";
        if (supports_range) head += "Accept-Ranges: bytes\r\n";
        if (status == 206) head += "Content-Range: bytes " + QByteArray::number(start) + '-' + QByteArray::number(size - 1) + '/' + QByteArray::number(size) + "\r\n";
        if (status == 416) head += "Content-Range: bytes */" + QByteArray::number(size) + "\r\n";
        head += "\r\n";
        if (drops_left > 0) {
            --drops_left;
            socket->write(head + payload.left(drop_after));
            socket->disconnectFromHost();  // after the bytes are out: the body ends short
            return;
        }
        if (stall_after >= 0) {
            socket->write(head + payload.left(stall_after));
            return;
        }
        socket->write(head + payload);
        socket->disconnectFromHost();
    }

    QTcpServer server_;
};

// What failed() said, for a failing wait on finished().
QString failure(const QSignalSpy& failed) {
    return failed.isEmpty() ? QStringLiteral("neither finished nor failed") : failed.first().first().toString();
}

// A port nothing listens on.
quint16 closed_port() {
    QTcpServer probe;
    if (!probe.listen(QHostAddress::LocalHost)) return 9;
    const quint16 port = probe.serverPort();
    probe.close();
    return port;
}

}  // namespace

class TestUiDownload : public QObject {
    Q_OBJECT
private slots:
    void init() {
        dir_ = std::make_unique<QTemporaryDir>();
        QVERIFY(dir_->isValid());
        destination_ = dir_->filePath(QStringLiteral("cache/reuters.npz"));
    }
    void cleanup() {
        qunsetenv("MIRRORLAB_REUTERS_URL");
        qunsetenv("MIRRORLAB_REUTERS_SHA256");
        qunsetenv("MIRRORLAB_REUTERS_WORD_INDEX_URL");
        qunsetenv("MIRRORLAB_REUTERS_WORD_INDEX_HASH");
        qunsetenv("XDG_CACHE_HOME");
        if (!home_.isEmpty()) qputenv("HOME", home_);
        if (!reuters21578_.isEmpty()) qputenv("MIRRORLAB_REUTERS21578_DIR", reuters21578_);
    }

    // A load asked for while another runs (Train again right after launch, while the default data
    // loads) was dropped without a word: Start then trained on the default data.
    void aLoadAskedDuringAnotherWins() {
        DataPanel panel;
        panel.show();
        panel.load(QStringLiteral("synthetic:2000:100"));  // the window's first load
        panel.load(QStringLiteral("synthetic:120:30"));
        QVERIFY(panel.waitUntilLoaded(60000));
        QCOMPARE(panel.loadedSpec(), QStringLiteral("synthetic:120:30"));
        QTest::qWait(200);  // the abandoned default load ends too; nothing it delivers replaces this one
        QCOMPARE(panel.loadedSpec(), QStringLiteral("synthetic:120:30"));
    }

    // Cancel stops the load it gives up: Load and Cancel pressed again and again on a large CSV
    // ran every cancelled load to its end at once, each holding its rows and tokens.
    void cancelStopsTheLoad() {
        QByteArray rows = "label,text\n";
        for (int row = 0; row < 200000; ++row) {
            rows += row % 2 ? "sport,\"" : "money,\"";
            for (int word = 0; word < 30; ++word) rows += "w" + QByteArray::number((row * 31 + word * 17) % 5000) + ' ';
            rows += "\"\n";
        }
        const QString big = dir_->filePath(QStringLiteral("big.csv"));
        QFile file(big);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(rows);
        file.close();

        DataPanel panel;
        panel.show();
        for (int attempt = 0; attempt < 3; ++attempt) {
            panel.load("csv:" + big);
            QVERIFY(panel.isLoading());
            panel.cancelLoad();
            QVERIFY(!panel.isLoading());
        }
        QTRY_COMPARE_WITH_TIMEOUT(panel.loadsRunning(), 0, 60000);
        QCOMPARE(panel.loadsStoppedEarly(), 3);  // none of them read its 200,000 rows to the end
        QVERIFY(!panel.dataset());
        QVERIFY(panel.lastError().isEmpty());  // a cancel is no failure

        panel.load(QStringLiteral("synthetic:120:30"));  // the panel loads again as usual
        QVERIFY(panel.waitUntilLoaded(60000));
        QCOMPARE(panel.loadedSpec(), QStringLiteral("synthetic:120:30"));
    }

    // reuters.npz alone shows word ids; the panel offers Keras' word index, downloads it as it
    // downloads the npz (resumable, checked: Keras gives an MD5 for this file) and then shows words,
    // saying where they come from. A damaged download is refused.
    void wordIndexDownloadGivesWords() {
        const QString npz = keras_npz_alone();
        FileServer server;
        server.body = read_file(QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/npz/reuters_small_word_index.json"));
        QVERIFY(!server.body.isEmpty());
        QVERIFY(server.listen());
        qputenv("MIRRORLAB_REUTERS_WORD_INDEX_URL", server.url().toString().toUtf8());
        qputenv("MIRRORLAB_REUTERS_WORD_INDEX_HASH", "0123456789abcdef0123456789abcdef");  // wrong
        DataPanel panel;
        panel.show();
        QVERIFY(panel.waitUntilLoaded(60000));
        panel.load(QStringLiteral("keras:") + npz);
        QVERIFY(panel.waitUntilLoaded(60000));
        QVERIFY2(panel.wordsText().contains(QStringLiteral("no reuters_word_index.json")), qPrintable(panel.wordsText()));
        QVERIFY2(shows_ids(panel), qPrintable(first_sample(panel)));
        auto* download = panel.findChild<QPushButton*>(QStringLiteral("downloadWordIndex"));
        auto* derive = panel.findChild<QPushButton*>(QStringLiteral("deriveWordIndex"));
        QVERIFY(download != nullptr && download->isVisible());
        QVERIFY(derive != nullptr && derive->isVisible() && !derive->isEnabled());  // no SGML files here

        QTest::mouseClick(download, Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(panel.wordsText().contains(QStringLiteral("MD5")), 20000);
        QVERIFY(!QFile::exists(DatasetDownloader::wordIndexCachePath()));

        qputenv("MIRRORLAB_REUTERS_WORD_INDEX_HASH", QCryptographicHash::hash(server.body, QCryptographicHash::Md5).toHex());
        QSignalSpy changed(&panel, &DataPanel::datasetChanged);
        QTest::mouseClick(download, Qt::LeftButton);
        QVERIFY(changed.wait(20000));
        QCOMPARE(read_file(DatasetDownloader::wordIndexCachePath()), server.body);
        QCOMPARE(DatasetDownloader::wordIndexCachePath(), dir_->filePath(QStringLiteral("xdg/mirrorlab/reuters_word_index.json")));
        QVERIFY2(panel.wordsText().contains(QStringLiteral("Keras' word index")) &&
                     panel.wordsText().contains(DatasetDownloader::wordIndexCachePath()),
                 qPrintable(panel.wordsText()));
        QVERIFY2(!shows_ids(panel), qPrintable(first_sample(panel)));
        QVERIFY2(first_sample(panel).contains(QStringLiteral("word")), qPrintable(first_sample(panel)));
        QVERIFY(!download->isVisible());
    }

    // Without a connection: the word index derived from the Reuters-21578 files (Keras' recipe),
    // and the panel says that is where the words come from.
    void derivedWordIndexGivesWords() {
        if (!testsupport::have_reuters21578()) REAL_DATA_MISSING(QStringLiteral("Reuters-21578 SGML files not found"));
        const QString sgml = testsupport::reuters21578_dir();
        const QString npz = keras_npz_alone();
        qputenv("MIRRORLAB_REUTERS21578_DIR", sgml.toUtf8());
        DataPanel panel;
        panel.show();
        QVERIFY(panel.waitUntilLoaded(60000));
        panel.load(QStringLiteral("keras:") + npz);
        QVERIFY(panel.waitUntilLoaded(60000));
        QVERIFY(shows_ids(panel));
        auto* derive = panel.findChild<QPushButton*>(QStringLiteral("deriveWordIndex"));
        QVERIFY(derive != nullptr && derive->isVisible() && derive->isEnabled());
        QVERIFY2(derive->toolTip().contains(sgml), qPrintable(derive->toolTip()));
        QSignalSpy changed(&panel, &DataPanel::datasetChanged);
        QTest::mouseClick(derive, Qt::LeftButton);
        QVERIFY(changed.wait(60000));
        QVERIFY2(panel.wordsText().contains(QStringLiteral("derived from the Reuters-21578 files")), qPrintable(panel.wordsText()));
        QVERIFY(panel.dataset()->words_origin.kind == WordsOrigin::Kind::DerivedWordIndex);
        QVERIFY2(!shows_ids(panel), qPrintable(first_sample(panel)));
        // The ids of the small fixture are the real index's most frequent words.
        QVERIFY2(first_sample(panel).contains(QStringLiteral("the")) || first_sample(panel).contains(QStringLiteral("of")),
                 qPrintable(first_sample(panel)));
    }

    void downloadsWithProgressAndChecksum() {
        FileServer server;
        server.body = random_bytes(300'000);
        QVERIFY(server.listen());
        DatasetDownloader downloader;
        QSignalSpy progress(&downloader, &DatasetDownloader::progress);
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        downloader.start(server.url(), destination_, sha256_hex(server.body).toUpper());  // hex in either case
        QVERIFY(downloader.isRunning());
        QVERIFY2(finished.wait(10'000), qPrintable(failure(failed)));
        QCOMPARE(failed.count(), 0);
        QCOMPARE(finished.at(0).at(0).toString(), destination_);
        QCOMPARE(read_file(destination_), server.body);
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));
        QVERIFY(!downloader.isRunning());
        QVERIFY(progress.count() >= 2);
        qint64 previous = -1;
        for (const auto& signal : progress) {
            QCOMPARE(signal.at(1).toLongLong(), server.body.size());
            QVERIFY(signal.at(0).toLongLong() >= previous);
            previous = signal.at(0).toLongLong();
        }
        QCOMPARE(previous, server.body.size());
        QCOMPARE(server.range_headers, QList<QByteArray>{QByteArray()});
    }

    void checksumMismatchLeavesNoFile() {
        FileServer server;
        server.body = random_bytes(50'000);
        QVERIFY(server.listen());
        const QByteArray expected = sha256_hex("something else");
        DatasetDownloader downloader;
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        downloader.start(server.url(), destination_, expected);
        QVERIFY(failed.wait(10'000));
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains(QString::fromLatin1(expected)), qPrintable(message));
        QVERIFY2(message.contains(QString::fromLatin1(sha256_hex(server.body))), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("SHA-256")), qPrintable(message));
        QCOMPARE(finished.count(), 0);
        QVERIFY(!QFile::exists(destination_));
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));
    }

    // A server that sends far more than the file is gets stopped at the cap, and a reuters.npz
    // already there stays as it was; a good download replaces it whole.
    void oversizedBodyStopsAndKeepsTheOldFile() {
        const QByteArray old_file = random_bytes(4'000);
        {
            QVERIFY(QDir().mkpath(QFileInfo(destination_).absolutePath()));
            QFile file(destination_);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(old_file);
        }
        FileServer server;
        server.body = random_bytes(200'000);
        QVERIFY(server.listen());
        DatasetDownloader downloader;
        downloader.setMaxBytes(50'000);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QVERIFY(failed.wait(10'000));
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("Stopped downloading reuters.npz")), qPrintable(message));
        QCOMPARE(finished.count(), 0);
        QCOMPARE(read_file(destination_), old_file);
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));

        downloader.setMaxBytes(DatasetDownloader::kDefaultMaxBytes);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QVERIFY(finished.wait(10'000));
        QCOMPARE(read_file(destination_), server.body);
    }

    void droppedConnectionResumesWithRange() {
        FileServer server;
        server.body = random_bytes(300'000);
        server.drops_left = 1;
        server.drop_after = 100'000;
        QVERIFY(server.listen());
        DatasetDownloader downloader;
        downloader.setRetryDelay(10);
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QVERIFY2(finished.wait(10'000), qPrintable(failure(failed)));
        QCOMPARE(failed.count(), 0);
        // Qt's HTTP client may send the cut request once more by itself (a plain GET whose answer
        // it drops); what matters is that our retry asked for the rest and got it.
        QVERIFY(server.range_headers.size() >= 2);
        QCOMPARE(server.range_headers.first(), QByteArray());
        QCOMPARE(server.range_headers.last(), QByteArray("bytes=100000-"));
        QCOMPARE(server.statuses.last(), 206);
        QCOMPARE(read_file(destination_), server.body);
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));
    }

    void partFromAnEarlierRunIsContinued() {
        FileServer server;
        server.body = random_bytes(20'000);
        QVERIFY(server.listen());
        QVERIFY(QDir().mkpath(QFileInfo(destination_).absolutePath()));
        QFile part(destination_ + QStringLiteral(".part"));
        QVERIFY(part.open(QIODevice::WriteOnly));
        part.write(server.body.left(1234));
        part.close();
        DatasetDownloader downloader;
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        QSignalSpy progress(&downloader, &DatasetDownloader::progress);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QVERIFY2(finished.wait(10'000), qPrintable(failure(failed)));
        QCOMPARE(server.range_headers, QList<QByteArray>{QByteArray("bytes=1234-")});
        QCOMPARE(progress.first().at(0).toLongLong(), 1234);  // the bar starts where the file stopped
        QCOMPARE(read_file(destination_), server.body);
    }

    void serverWithoutRangeRestartsCleanly() {
        FileServer server;
        server.body = random_bytes(300'000);
        server.supports_range = false;
        server.drops_left = 1;
        server.drop_after = 100'000;
        QVERIFY(server.listen());
        DatasetDownloader downloader;
        downloader.setRetryDelay(10);
        QSignalSpy progress(&downloader, &DatasetDownloader::progress);
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QVERIFY2(finished.wait(10'000), qPrintable(failure(failed)));
        QCOMPARE(failed.count(), 0);
        QVERIFY(server.range_headers.size() >= 2);  // see droppedConnectionResumesWithRange()
        QCOMPARE(server.range_headers.last(), QByteArray("bytes=100000-"));  // asked to resume...
        QCOMPARE(server.statuses.last(), 200);                               // ...got the whole file
        const bool restarted_from_zero = std::any_of(progress.begin() + 1, progress.end(), [](const QList<QVariant>& signal) {
            return signal.at(0).toLongLong() == 0;
        });
        QVERIFY(restarted_from_zero);
        QCOMPARE(read_file(destination_), server.body);  // not the first 100 kB twice
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));
    }

    void connectionRefusedOffersTheAlternatives() {
        DatasetDownloader downloader;
        downloader.setRetryDelay(10);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        downloader.start(QUrl(QStringLiteral("http://127.0.0.1:%1/reuters.npz").arg(closed_port())), destination_, "00");
        QVERIFY(failed.wait(10'000));
        QCOMPARE(finished.count(), 0);
        QCOMPARE(failed.count(), 1);
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.startsWith(QStringLiteral("Could not download reuters.npz (")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("refused"), Qt::CaseInsensitive), qPrintable(message));  // Qt's own reason
        QVERIFY2(message.contains(QStringLiteral("Without a connection you can")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("Reuters-21578 folder")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("text folder or CSV")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("synthetic corpus")), qPrintable(message));
        QVERIFY(!QFile::exists(destination_));
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));
    }

    void cancelLeavesNoFile() {
        FileServer server;
        server.body = random_bytes(300'000);
        server.stall_after = 60'000;
        QVERIFY(server.listen());
        DatasetDownloader downloader;
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        QSignalSpy failed(&downloader, &DatasetDownloader::failed);
        QSignalSpy progress(&downloader, &DatasetDownloader::progress);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty() && progress.last().at(0).toLongLong() > 0, 10'000);
        QVERIFY(QFile::exists(destination_ + QStringLiteral(".part")));
        downloader.cancel();
        QVERIFY(!downloader.isRunning());
        QTest::qWait(200);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(failed.count(), 0);
        QVERIFY(!QFile::exists(destination_));
        QVERIFY(!QFile::exists(destination_ + QStringLiteral(".part")));
    }

    void verifiedCachedFileNeedsNoRequest() {
        FileServer server;
        server.body = random_bytes(1000);
        QVERIFY(server.listen());
        QVERIFY(QDir().mkpath(QFileInfo(destination_).absolutePath()));
        QFile cached(destination_);
        QVERIFY(cached.open(QIODevice::WriteOnly));
        cached.write(server.body);
        cached.close();
        DatasetDownloader downloader;
        QSignalSpy finished(&downloader, &DatasetDownloader::finished);
        downloader.start(server.url(), destination_, sha256_hex(server.body));
        QVERIFY(finished.wait(5'000));
        QVERIFY(server.range_headers.isEmpty());
    }

    void defaultCachePathIsOneCoreSearches() {
        qputenv("XDG_CACHE_HOME", dir_->path().toUtf8());
        const QString path = DatasetDownloader::defaultCachePath();
        QCOMPARE(path, dir_->path() + QStringLiteral("/mirrorlab/reuters.npz"));
        const std::vector<std::string> candidates = find_keras_reuters_candidates();
        QVERIFY(std::find(candidates.begin(), candidates.end(), path.toStdString()) != candidates.end());
    }

    void urlAndHashAreKerasUnlessOverridden() {
        QCOMPARE(DatasetDownloader::reutersUrl(), QUrl(QStringLiteral("https://storage.googleapis.com/tensorflow/tf-keras-datasets/reuters.npz")));
        QCOMPARE(DatasetDownloader::reutersSha256(), QByteArray("d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"));
        qputenv("MIRRORLAB_REUTERS_URL", "http://127.0.0.1:1/x.npz");
        qputenv("MIRRORLAB_REUTERS_SHA256", "abc");
        QCOMPARE(DatasetDownloader::reutersUrl(), QUrl(QStringLiteral("http://127.0.0.1:1/x.npz")));
        QCOMPARE(DatasetDownloader::reutersSha256(), QByteArray("abc"));
    }

    void panelButtonDownloadsAndLoads() {
        FileServer server;
        server.body = read_file(QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/npz/reuters_small_savez.npz"));
        QVERIFY(!server.body.isEmpty());
        QVERIFY(server.listen());
        qputenv("XDG_CACHE_HOME", dir_->path().toUtf8());
        qputenv("MIRRORLAB_REUTERS_URL", server.url().toString().toUtf8());
        qputenv("MIRRORLAB_REUTERS_SHA256", sha256_hex(server.body));
        DataPanel panel;
        panel.show();
        QSignalSpy changed(&panel, &DataPanel::datasetChanged);
        QSignalSpy load_failed(&panel, &DataPanel::loadFailed);
        auto* button = panel.findChild<QPushButton*>(QStringLiteral("downloadReuters"));
        auto* bar = panel.findChild<QProgressBar*>(QStringLiteral("downloadProgress"));
        QVERIFY(button != nullptr);
        QVERIFY(bar != nullptr);
        QVERIFY(!bar->isVisible());
        QTest::mouseClick(button, Qt::LeftButton);
        QVERIFY(bar->isVisible());
        QVERIFY(changed.wait(15'000));
        QCOMPARE(load_failed.count(), 0);
        QVERIFY(!bar->isVisible());
        const QString path = dir_->path() + QStringLiteral("/mirrorlab/reuters.npz");
        QCOMPARE(read_file(path), server.body);
        QCOMPARE(panel.spec(), QStringLiteral("keras:") + path);
        QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("dataSource"))->currentText(), QStringLiteral("Keras reuters.npz file"));
        QVERIFY(panel.dataset() != nullptr);
        QVERIFY(panel.dataset()->train.size() > 0);
    }

    void panelShowsTheOfflineMessage() {
        qputenv("XDG_CACHE_HOME", dir_->path().toUtf8());
        qputenv("MIRRORLAB_REUTERS_URL", QStringLiteral("http://127.0.0.1:%1/reuters.npz").arg(closed_port()).toUtf8());
        DataPanel panel;
        panel.show();
        QSignalSpy load_failed(&panel, &DataPanel::loadFailed);
        QTest::mouseClick(panel.findChild<QPushButton*>(QStringLiteral("downloadReuters")), Qt::LeftButton);
        QVERIFY(load_failed.wait(20'000));  // three retries at 0.5, 1 and 2 s
        const QString message = load_failed.at(0).at(0).toString();
        QVERIFY2(message.contains(QStringLiteral("synthetic corpus")), qPrintable(message));
        auto* status = panel.findChild<QLabel*>(QStringLiteral("dataStatus"));
        QCOMPARE(status->text(), message);
        QVERIFY(status->styleSheet().contains(QStringLiteral("color")));
        QVERIFY(!panel.findChild<QProgressBar*>(QStringLiteral("downloadProgress"))->isVisible());
        QCOMPARE(panel.lastError(), message);
    }

private:
    // The fixture as reuters.npz in a folder of its own, with HOME and the cache in the test's
    // folder, so no word index is found until the test makes one.
    QString keras_npz_alone() {
        home_ = qgetenv("HOME");
        reuters21578_ = qgetenv("MIRRORLAB_REUTERS21578_DIR");
        qputenv("HOME", dir_->filePath(QStringLiteral("home")).toUtf8());
        qputenv("XDG_CACHE_HOME", dir_->filePath(QStringLiteral("xdg")).toUtf8());
        qputenv("MIRRORLAB_REUTERS21578_DIR", dir_->filePath(QStringLiteral("no-sgml")).toUtf8());
        QDir().mkpath(dir_->filePath(QStringLiteral("data")));
        const QString npz = dir_->filePath(QStringLiteral("data/reuters.npz"));
        QFile::copy(QStringLiteral(MIRRORLAB_TEST_DATA_DIR "/npz/reuters_small_savez.npz"), npz);
        return npz;
    }
    static QString first_sample(const DataPanel& panel) {
        auto* samples = panel.findChild<QTableWidget*>(QStringLiteral("dataSamples"));
        return samples != nullptr && samples->rowCount() > 0 && samples->item(0, 2) != nullptr ? samples->item(0, 2)->text() : QString();
    }
    // "<12>": an id without a word.
    static bool shows_ids(const DataPanel& panel) {
        static const QRegularExpression id(QStringLiteral("<\\d+>"));
        return id.match(first_sample(panel)).hasMatch();
    }

    QByteArray home_;
    QByteArray reuters21578_;
    std::unique_ptr<QTemporaryDir> dir_;
    QString destination_;
};

QTEST_MAIN(TestUiDownload)
#include "test_ui_download.moc"
