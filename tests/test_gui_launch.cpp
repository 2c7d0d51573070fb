// The `mirrorlab` program as a person starts it: without a display, with one that cannot be reached,
// with the screenshot mode's own window size, with arguments it cannot read. Each case runs the
// real program in a process of its own, with its own store and settings folders.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest/QtTest>

namespace {

struct Launch {
    bool finished = false;
    bool crashed = false;
    int exit_code = -1;
    QString err;
};

class TestGuiLaunch : public QObject {
    Q_OBJECT

    QTemporaryDir home_;

    // The program with `arguments`, the environment's display variables replaced by `display`
    // (empty: none), within `timeout_ms`.
    Launch launch(const QStringList& arguments, const QStringList& display, int timeout_ms = 60000) {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "XDG_SESSION_TYPE", "LANGUAGE", "LC_ALL"}) {
            environment.remove(QLatin1String(name));
        }
        environment.insert(QStringLiteral("LANG"), QStringLiteral("C.UTF-8"));
        environment.insert(QStringLiteral("MIRRORLAB_DATA_DIR"), home_.filePath(QStringLiteral("store")));
        environment.insert(QStringLiteral("XDG_CONFIG_HOME"), home_.filePath(QStringLiteral("config")));
        environment.insert(QStringLiteral("MIRRORLAB_NO_GPU"), QStringLiteral("1"));
        for (const QString& setting : display) {
            const auto equals = setting.indexOf(QLatin1Char('='));
            environment.insert(setting.left(equals), setting.mid(equals + 1));
        }
        QProcess process;
        process.setProcessEnvironment(environment);
        process.start(QStringLiteral(MIRRORLAB_GUI_PATH), arguments);
        Launch result;
        result.finished = process.waitForFinished(timeout_ms);
        if (!result.finished) process.kill();
        result.crashed = process.exitStatus() == QProcess::CrashExit;
        result.exit_code = process.exitCode();
        result.err = QString::fromUtf8(process.readAllStandardError());
        return result;
    }

    static QString describe(const Launch& launch) {
        return QStringLiteral("finished %1, crashed %2, exit %3\n%4")
            .arg(launch.finished)
            .arg(launch.crashed)
            .arg(launch.exit_code)
            .arg(launch.err);
    }

private slots:
    void initTestCase() { QVERIFY(home_.isValid()); }

    // No display at all: one message naming the way to train without a window, and exit status 3,
    // which packaging/mirrorlab.sh's main job reads as "train without a window".
    void withoutADisplay() {
        const Launch run = launch({}, {});
        QVERIFY2(run.finished && !run.crashed && run.exit_code == 3, qPrintable(describe(run)));
        QVERIFY2(run.err.contains(QStringLiteral("there is no display to open the window on")), qPrintable(describe(run)));
        QVERIFY2(run.err.contains(QStringLiteral("mirrorlab-cli train")), qPrintable(describe(run)));
    }

    // A DISPLAY left from an `ssh -X` session that ended: Qt aborted (SIGABRT) with a message about
    // platform plugins. Now the display is named, with what to do; in the interface's language too.
    void withADisplayThatCannotBeReached() {
        const Launch run = launch({}, {QStringLiteral("DISPLAY=:987")});
        QVERIFY2(run.finished && !run.crashed && run.exit_code == 3, qPrintable(describe(run)));
        QVERIFY2(run.err.contains(QStringLiteral("the display could not be opened (DISPLAY=:987)")), qPrintable(describe(run)));
        QVERIFY2(run.err.contains(QStringLiteral("mirrorlab-cli train")), qPrintable(describe(run)));
        // A platform asked for by name, with nothing to show it on, is said the same way.
        const Launch asked = launch({}, {QStringLiteral("QT_QPA_PLATFORM=xcb")});
        QVERIFY2(asked.finished && !asked.crashed && asked.exit_code == 3, qPrintable(describe(asked)));
        QVERIFY2(asked.err.contains(QStringLiteral("QT_QPA_PLATFORM=xcb")), qPrintable(describe(asked)));
        // Qt's own -platform argument: it aborted as well.
        const Launch argument = launch({QStringLiteral("-platform"), QStringLiteral("xcb")}, {QStringLiteral("DISPLAY=:987")});
        QVERIFY2(argument.finished && !argument.crashed && argument.exit_code == 3, qPrintable(describe(argument)));
        QVERIFY2(argument.err.contains(QStringLiteral("the display could not be opened (QT_QPA_PLATFORM=xcb, DISPLAY=:987)")),
                 qPrintable(describe(argument)));
        const Launch chinese = launch({QStringLiteral("--language"), QStringLiteral("zh_CN")}, {QStringLiteral("DISPLAY=:987")});
        QVERIFY2(chinese.finished && !chinese.crashed && chinese.exit_code == 3, qPrintable(describe(chinese)));
        QVERIFY2(chinese.err.contains(QStringLiteral("无法打开显示（DISPLAY=:987）")), qPrintable(describe(chinese)));
    }

    // The screenshot mode renders offscreen where no display can show it, at the --size asked for:
    // the offscreen platform's own 800x800 screen cut a 1920x1080 window to 796x796.
    void aScreenshotWithoutADisplayHasItsSize() {
        const QString picture = home_.filePath(QStringLiteral("window.png"));
        // No display; one that cannot be reached; the offscreen platform asked for by name.
        for (const QStringList& display : {QStringList{}, QStringList{QStringLiteral("DISPLAY=:987")},
                                           QStringList{QStringLiteral("QT_QPA_PLATFORM=offscreen")}}) {
            QFile::remove(picture);
            const Launch run = launch({QStringLiteral("--screenshot"), picture, QStringLiteral("--epochs"), QStringLiteral("1"),
                                       QStringLiteral("--size"), QStringLiteral("1000x700")},
                                      display, 300000);
            QVERIFY2(run.finished && !run.crashed && run.exit_code == 0, qPrintable(describe(run)));
            QFile file(picture);
            QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(picture));
            const QByteArray header = file.read(24);  // PNG signature, IHDR: width and height, big-endian
            QVERIFY(header.size() == 24 && header.startsWith("\x89PNG"));
            const auto big_endian = [&header](int at) {
                return (static_cast<quint32>(static_cast<quint8>(header[at])) << 24) |
                       (static_cast<quint32>(static_cast<quint8>(header[at + 1])) << 16) |
                       (static_cast<quint32>(static_cast<quint8>(header[at + 2])) << 8) | static_cast<quint8>(header[at + 3]);
            };
            QCOMPARE(big_endian(16), quint32{1000});
            QCOMPARE(big_endian(20), quint32{700});
        }
    }

    // The offscreen screen's settings file is removed once Qt has read it, and not made for a window.
    void leavesNoFilesBehind() {
        const QString tmp = home_.filePath(QStringLiteral("tmp"));
        QVERIFY(QDir().mkpath(tmp));
        QVERIFY(launch({QStringLiteral("--version")}, {QStringLiteral("TMPDIR=") + tmp}).exit_code == 0);
        QVERIFY(launch({}, {QStringLiteral("TMPDIR=") + tmp, QStringLiteral("DISPLAY=:987")}).exit_code == 3);
        const QStringList left = QDir(tmp).entryList({QStringLiteral("mirrorlab-screen-*")}, QDir::Files);
        QVERIFY2(left.isEmpty(), qPrintable(left.join(QLatin1Char(' '))));
    }

    // Numbers it cannot read are refused as --size's are (they trained 1 epoch, or no workers).
    void argumentsThatCannotBeRead() {
        for (const QStringList& arguments : {QStringList{QStringLiteral("--epochs"), QStringLiteral("abc")},
                                             QStringList{QStringLiteral("--epochs"), QStringLiteral("0")},
                                             QStringList{QStringLiteral("--workers"), QStringLiteral("0")}}) {
            const Launch run = launch(QStringList{QStringLiteral("--screenshot"), home_.filePath(QStringLiteral("x.png"))} + arguments, {});
            QVERIFY2(run.finished && !run.crashed && run.exit_code == 2, qPrintable(describe(run)));
            QVERIFY2(run.err.contains(arguments.front() + QStringLiteral(" wants a whole number")), qPrintable(describe(run)));
            QVERIFY2(!QFile::exists(home_.filePath(QStringLiteral("x.png"))), qPrintable(describe(run)));
        }
    }
};

}  // namespace

QTEST_APPLESS_MAIN(TestGuiLaunch)
#include "test_gui_launch.moc"
