// The main window on real screen sizes: the first launch fits the screen's available area from a
// 1366x768 laptop to 4K (and at a scale factor of 2), the model form shows its layer table without
// scrolling sideways from 1600x900 on, and no text is squeezed on top of other text. Each screen
// is a child run of this program on Qt's offscreen platform with that screen (a JSON screen list,
// the plugin's configfile= option), since a process cannot change its screen's size.
#include <QtTest>

#include <QAbstractItemView>
#include <QApplication>
#include <QDockWidget>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProcess>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QTableWidget>
#include <QTemporaryDir>

#include "ui/main_window.h"
#include "ui/model_panel.h"
#include "ui/monitor_panel.h"
#include "ui/window_geometry.h"

using namespace mirrorlab::ui;

namespace {

constexpr const char* kChildEnv = "MIRRORLAB_TEST_SCREEN_CHILD";

QString describe(const QRect& r) { return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height()); }

QScrollArea* scroll_area_of(QWidget* widget) {
    for (QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (auto* area = qobject_cast<QScrollArea*>(up)) return area;
    }
    return nullptr;
}

}  // namespace

class TestUiScreens : public QObject {
    Q_OBJECT
private slots:
    void firstLaunchGeometryFitsEveryScreen_data() {
        QTest::addColumn<QRect>("available");
        QTest::newRow("1366x768") << QRect(0, 0, 1366, 768);
        QTest::newRow("1366x768, top panel") << QRect(0, 27, 1366, 741);
        QTest::newRow("1280x720, dock on the left") << QRect(64, 0, 1216, 720);
        QTest::newRow("1600x900") << QRect(0, 0, 1600, 900);
        QTest::newRow("1920x1080") << QRect(0, 0, 1920, 1080);
        QTest::newRow("second screen 1920x1080") << QRect(1920, 0, 1920, 1040);
        QTest::newRow("2560x1440") << QRect(0, 0, 2560, 1440);
        QTest::newRow("3840x2160") << QRect(0, 0, 3840, 2160);
        QTest::newRow("4K at scale 2") << QRect(0, 0, 1920, 1080);
        QTest::newRow("tiny") << QRect(0, 0, 800, 600);
    }
    void firstLaunchGeometryFitsEveryScreen() {
        QFETCH(QRect, available);
        const QMargins frame = expectedFrameMargins();
        const QRect geometry = firstLaunchGeometry(available, frame);
        const QRect with_frame = geometry.marginsAdded(frame);
        QVERIFY2(available.contains(with_frame), qPrintable(describe(with_frame) + QStringLiteral(" outside ") + describe(available)));
        // Laptops and ordinary monitors are used whole, bigger ones mostly.
        const double used = double(with_frame.width()) * with_frame.height() / (double(available.width()) * available.height());
        QVERIFY2(used > (available.width() <= 1920 ? 0.95 : 0.5), qPrintable(QString::number(used)));
    }

    void firstLaunchDocksShareTheWidth() {
        DockNeeds needs;
        needs.left_wanted = 690;
        needs.left_minimum = 320;
        needs.right_minimum = 270;
        needs.central_minimum = 460;
        needs.bottom_wanted = 170;
        needs.bottom_minimum = 150;
        // 1600 wide: the model form gets all it wants, the charts a third and more.
        DockLayout wide = firstLaunchDocks(QSize(1590, 820), needs);
        QCOMPARE(wide.left_width, 690);
        QVERIFY(1590 - wide.left_width - wide.right_width >= 1590 * 9 / 25);
        QVERIFY(wide.right_width >= 280);
        QCOMPARE(wide.bottom_height, 164);  // a fifth of the height at most
        // 1366 wide: the charts keep their share, the model form gives way.
        DockLayout narrow = firstLaunchDocks(QSize(1350, 690), needs);
        QVERIFY(narrow.left_width < 690);
        QVERIFY(narrow.left_width >= needs.left_minimum);
        QVERIFY(1350 - narrow.left_width - narrow.right_width >= needs.central_minimum);
        QCOMPARE(narrow.bottom_height, 150);  // never under the minimum
        // Too small for everything: every dock keeps its minimum.
        DockLayout tiny = firstLaunchDocks(QSize(900, 600), needs);
        QCOMPARE(tiny.left_width, needs.left_minimum);
        QCOMPARE(tiny.right_width, needs.right_minimum);
    }

    // Each screen in a child process; see inChild().
    void firstLaunchOnScreen_data() {
        QTest::addColumn<QSize>("screen");
        QTest::addColumn<QString>("scale");
        QTest::newRow("1366x768") << QSize(1366, 768) << QString();
        QTest::newRow("1600x900") << QSize(1600, 900) << QString();
        QTest::newRow("1920x1080") << QSize(1920, 1080) << QString();
        QTest::newRow("2560x1440") << QSize(2560, 1440) << QString();
        QTest::newRow("2732x1536 at scale 2") << QSize(2732, 1536) << QStringLiteral("2");
        QTest::newRow("3840x2160 at scale 2") << QSize(3840, 2160) << QStringLiteral("2");
    }
    void firstLaunchOnScreen() {
        QFETCH(QSize, screen);
        QFETCH(QString, scale);
        if (qEnvironmentVariableIsSet(kChildEnv)) QSKIP("in a child run");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QJsonObject config{{QStringLiteral("windowFrameMargins"), true},
                                 {QStringLiteral("screens"),
                                  QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("test")},
                                                         {QStringLiteral("x"), 0},
                                                         {QStringLiteral("y"), 0},
                                                         {QStringLiteral("width"), screen.width()},
                                                         {QStringLiteral("height"), screen.height()},
                                                         {QStringLiteral("logicalDpi"), 96},
                                                         {QStringLiteral("dpr"), 1.0}}}}};
        const QString config_path = dir.filePath(QStringLiteral("screen.json"));
        QFile file(config_path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QJsonDocument(config).toJson());
        file.close();

        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QString::fromLatin1(kChildEnv), QStringLiteral("%1x%2").arg(screen.width()).arg(screen.height()));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));  // a first launch
        env.insert(QStringLiteral("XDG_CACHE_HOME"), dir.filePath(QStringLiteral("cache")));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        if (scale.isEmpty()) {
            env.remove(QStringLiteral("QT_SCALE_FACTOR"));
        } else {
            env.insert(QStringLiteral("QT_SCALE_FACTOR"), scale);
        }
        child.setProcessEnvironment(env);
        child.setProcessChannelMode(QProcess::MergedChannels);
        child.start(QCoreApplication::applicationFilePath(),
                    {QStringLiteral("-platform"), QStringLiteral("offscreen:configfile=") + config_path, QStringLiteral("inChild")});
        QVERIFY(child.waitForFinished(180000));
        const QString output = QString::fromLocal8Bit(child.readAll());
        QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0, qPrintable(output));
        QVERIFY2(output.contains(QStringLiteral("PASS   : TestUiScreens::inChild()")), qPrintable(output));
    }

    // Runs only as the child of firstLaunchOnScreen(), on the screen it was given.
    void inChild() {
        const QString wanted = qEnvironmentVariable(kChildEnv);
        if (wanted.isEmpty()) QSKIP("runs as a child of firstLaunchOnScreen");
        const QScreen* screen = QGuiApplication::primaryScreen();
        const QRect available = screen->availableGeometry();
        const QSize physical = (QSizeF(screen->geometry().size()) * screen->devicePixelRatio()).toSize();
        QCOMPARE(QStringLiteral("%1x%2").arg(physical.width()).arg(physical.height()), wanted);

        MainWindow window(nullptr, QStringLiteral("MirrorLab-test-screens"));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QTest::qWait(700);  // the queued first-launch layout and the frame check after it

        // The whole frame on the screen, and most of the screen used.
        const QRect frame = window.frameGeometry();
        QVERIFY2(available.contains(frame), qPrintable(describe(frame) + QStringLiteral(" outside ") + describe(available)));
        QVERIFY2(frame.width() >= available.width() * 9 / 10 || frame.width() >= 1920, qPrintable(describe(frame)));
        QVERIFY2(frame.height() >= available.height() * 9 / 10 || frame.height() >= 1200, qPrintable(describe(frame)));

        // The log starts as a strip: the charts get most of the height.
        auto* log_dock = window.findChild<QDockWidget*>(QStringLiteral("logDock"));
        QVERIFY(log_dock != nullptr);
        QVERIFY2(log_dock->height() <= window.height() / 4, qPrintable(QString::number(log_dock->height())));
        QVERIFY(window.centralWidget()->height() > log_dock->height());

        // The device monitor never scrolls sideways: its panel fits its dock's width.
        auto* monitor_scroll = scroll_area_of(window.monitorPanel());
        QVERIFY(monitor_scroll != nullptr);
        QVERIFY2(window.monitorPanel()->minimumSizeHint().width() <= monitor_scroll->viewport()->width(),
                 qPrintable(QStringLiteral("%1 > %2").arg(window.monitorPanel()->minimumSizeHint().width()).arg(monitor_scroll->viewport()->width())));

        // The model form, brought forward as a person would.
        auto* model_dock = window.findChild<QDockWidget*>(QStringLiteral("modelDock"));
        QVERIFY(model_dock != nullptr);
        model_dock->raise();
        QTest::qWait(100);
        auto* table = window.modelPanel()->findChild<QTableWidget*>(QStringLiteral("layerTable"));
        QVERIFY(table != nullptr && table->isVisible());
        QScrollArea* form = scroll_area_of(table);
        QVERIFY(form != nullptr);
        const bool big_enough = available.width() >= 1600 && available.height() >= 900;
        if (big_enough) {
            QVERIFY2(!form->horizontalScrollBar()->isVisible(), "the model form scrolls sideways");
            QVERIFY2(!table->horizontalScrollBar()->isVisible(), "the layer table scrolls sideways");
            for (int column = 0; column < table->columnCount(); ++column) {
                const int needed = static_cast<const QAbstractItemView*>(table)->sizeHintForColumn(column);
                QVERIFY2(table->columnWidth(column) >= needed,
                         qPrintable(QStringLiteral("column %1: %2 < %3").arg(column).arg(table->columnWidth(column)).arg(needed)));
            }
        }
        window.hide();
        QSettings(QStringLiteral("MirrorLab"), QStringLiteral("MirrorLab-test-screens")).clear();
    }
};

QTEST_MAIN(TestUiScreens)
#include "test_ui_screens.moc"
