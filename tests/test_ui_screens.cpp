// The main window on real screen sizes: the first launch fits the screen's available area from a
// 1366x768 laptop to 4K (and at a scale factor of 2), the model form shows every cell of its layer
// table whole without scrolling sideways (on one line each from 1600x900 on), and no text is
// squeezed on top of other text. Each screen is a child run of this program on Qt's offscreen
// platform with that screen (a JSON screen list, the plugin's configfile= option), since a process
// cannot change its screen's size.
#include <QtTest>

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QChartView>
#include <QComboBox>
#include <QDockWidget>
#include <QGraphicsView>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSlider>
#include <QStyle>
#include <QSpinBox>
#include <QTabBar>
#include <QTableWidget>
#include <QTemporaryDir>

#include <cmath>

#include "core/device/device.h"
#include "core/model/model.h"
#include "support/palettes.h"
#include "ui/common/focus_order.h"
#include "ui/common/theme.h"
#include "ui/common/window_geometry.h"
#include "ui/data/data_panel.h"
#include "ui/devices/devices_panel.h"
#include "ui/main_window.h"
#include "ui/model/model_panel.h"
#include "ui/training/monitor_panel.h"

using namespace mirrorlab::ui;

namespace {

constexpr const char* kChildEnv = "MIRRORLAB_TEST_SCREEN_CHILD";

QString describe(const QRect& r) {
    return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

QScrollArea* scroll_area_of(QWidget* widget) {
    for (QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (auto* area = qobject_cast<QScrollArea*>(up)) return area;
    }
    return nullptr;
}

// The layer table's cells whose text does not show whole: wider than its column (a word, when the
// table wraps) or, wrapped, taller than its row. Each names the cell and the text.
QStringList cut_table_cells(const QTableWidget& table) {
    QStringList cut;
    const QFontMetrics metrics(table.font());
    // The item delegate's margins, as QCommonStyle lays out an item's text.
    const int margin = table.style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, &table) + 1;
    for (int row = 0; row < table.rowCount(); ++row) {
        for (int column = 0; column < table.columnCount(); ++column) {
            const QTableWidgetItem* item = table.item(row, column);
            if (item == nullptr || item->text().isEmpty()) continue;
            const int width = table.columnWidth(column) - 2 * margin;
            const int flags = table.wordWrap() ? Qt::TextWordWrap : Qt::TextSingleLine;
            const QRect needed = metrics.boundingRect(QRect(0, 0, width, 1 << 20), flags, item->text());
            if (needed.width() > width || needed.height() > table.rowHeight(row)) {
                cut << QStringLiteral("row %1 column %2 \"%3\": needs %4x%5, has %6x%7")
                           .arg(row)
                           .arg(column)
                           .arg(item->text())
                           .arg(needed.width())
                           .arg(needed.height())
                           .arg(width)
                           .arg(table.rowHeight(row));
            }
        }
    }
    return cut;
}

QRect in_window(const QWidget* widget, const QWidget* window) {
    return QRect(widget->mapTo(window, QPoint(0, 0)), widget->size());
}

// What of `widget` can be seen: its rectangle cut to every ancestor's (a scrolled-away part is not
// on the screen, so it overlaps nothing).
QRect seen_part(const QWidget* widget, const QWidget* window) {
    QRect seen = in_window(widget, window);
    for (const QWidget* up = widget->parentWidget(); up != nullptr && up != window;
         up = up->parentWidget()) {
        seen &= in_window(up, window);
    }
    return seen;
}

QDockWidget* dock_of(const QWidget* widget) {
    for (const QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (auto* dock = qobject_cast<const QDockWidget*>(up))
            return const_cast<QDockWidget*>(dock);
    }
    return nullptr;
}

// Widgets that draw text or a picture of their own. Containers (group boxes, scroll areas, panels)
// hold them and so always "overlap" them.
bool draws_content(const QWidget* widget) {
    return qobject_cast<const QLabel*>(widget) || qobject_cast<const QAbstractButton*>(widget) ||
           qobject_cast<const QComboBox*>(widget) ||
           qobject_cast<const QAbstractSpinBox*>(widget) ||
           (qobject_cast<const QLineEdit*>(widget) &&
            !qobject_cast<const QAbstractSpinBox*>(widget->parentWidget())) ||
           qobject_cast<const QProgressBar*>(widget) || qobject_cast<const QSlider*>(widget) ||
           qobject_cast<const QGraphicsView*>(widget) ||
           qobject_cast<const QAbstractItemView*>(widget) ||
           qobject_cast<const QPlainTextEdit*>(widget) ||
           widget->objectName() == QLatin1String("memoryBars") ||
           widget->objectName() == QLatin1String("stepDiagram") ||
           widget->objectName() == QLatin1String("timelineView");
}

QString name_of(const QWidget* widget) {
    QStringList path;
    for (const QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (!up->objectName().isEmpty() && !up->objectName().startsWith(QLatin1String("qt_")))
            path.prepend(up->objectName());
    }
    const QString text = widget->property("text").toString().left(40);
    return QStringLiteral("%1 '%2' [%3]")
        .arg(QString::fromLatin1(widget->metaObject()->className()), text,
             path.join(QLatin1Char('/')));
}

// Every pair of content widgets on show that cover each other, and every label given less room
// than its text needs (a word-wrapped one shorter than its lines, another narrower than its text).
QStringList overlaps_and_cut_text(const QMainWindow& window) {
    QList<QWidget*> shown;
    for (QWidget* widget : window.findChildren<QWidget*>()) {
        if (!widget->isVisible() || !draws_content(widget)) continue;
        if (QDockWidget* dock = dock_of(widget); dock != nullptr && !dockIsInFront(&window, dock))
            continue;
        if (seen_part(widget, &window).isEmpty()) continue;
        shown << widget;
    }
    QStringList problems;
    for (qsizetype i = 0; i < shown.size(); ++i) {
        for (qsizetype j = i + 1; j < shown.size(); ++j) {
            const QWidget* a = shown[i];
            const QWidget* b = shown[j];
            if (a->isAncestorOf(b) || b->isAncestorOf(a)) continue;
            const QRect both = seen_part(a, &window) & seen_part(b, &window);
            if (both.width() > 1 && both.height() > 1)
                problems << QStringLiteral("%1 overlaps %2").arg(name_of(a), name_of(b));
        }
    }
    for (const QWidget* widget : shown) {
        const auto* label = qobject_cast<const QLabel*>(widget);
        if (label == nullptr || label->text().isEmpty() || !label->pixmap().isNull()) continue;
        const int needed =
            label->wordWrap() ? label->heightForWidth(label->width()) : label->sizeHint().height();
        if (label->height() + 1 < needed) {
            problems << QStringLiteral("%1 is %2 px tall, its text needs %3")
                            .arg(name_of(label))
                            .arg(label->height())
                            .arg(needed);
        }
        if (!label->wordWrap() && label->width() + 1 < label->minimumSizeHint().width()) {
            problems << QStringLiteral("%1 is %2 px wide, its text needs %3")
                            .arg(name_of(label))
                            .arg(label->width())
                            .arg(label->minimumSizeHint().width());
        }
    }
    // Combo boxes whose shown choice is elided: "Replica 0 · /device:CPU:" names no device.
    for (const QWidget* widget : shown) {
        const auto* combo = qobject_cast<const QComboBox*>(widget);
        if (combo == nullptr || combo->currentText().isEmpty()) continue;
        QStyleOptionComboBox option;
        option.initFrom(combo);
        option.editable = combo->isEditable();
        option.frame = combo->hasFrame();
        option.currentText = combo->currentText();
        const QRect field = combo->style()->subControlRect(QStyle::CC_ComboBox, &option,
                                                           QStyle::SC_ComboBoxEditField, combo);
        const int needed = combo->fontMetrics().horizontalAdvance(combo->currentText());
        if (field.width() < needed) {
            problems << QStringLiteral("%1 shows \"%2\" in %3 px, it needs %4")
                            .arg(name_of(combo), combo->currentText())
                            .arg(field.width())
                            .arg(needed);
        }
    }
    // Tabs (the docks' tab bars among them) whose titles are elided or pushed behind the scroll
    // arrows: on a laptop screen "Ru..." and "Tr..." name no panel.
    for (const QTabBar* bar : window.findChildren<QTabBar*>()) {
        if (!bar->isVisible() || seen_part(bar, &window).isEmpty()) continue;
        // What QTabBar asks for a tab's title: its text and the style's padding on either side.
        const int padding = bar->style()->pixelMetric(QStyle::PM_TabBarTabHSpace, nullptr, bar);
        for (int i = 0; i < bar->count(); ++i) {
            const QRect tab = bar->tabRect(i);
            const int needed = bar->fontMetrics().horizontalAdvance(bar->tabText(i)) + padding;
            if (tab.width() < needed || !bar->rect().contains(tab)) {
                problems << QStringLiteral("the tab '%1' is %2 px wide in a %3 px bar, its title needs %4")
                                .arg(bar->tabText(i))
                                .arg(tab.width())
                                .arg(bar->width())
                                .arg(needed);
            }
        }
    }
    return problems;
}

// WCAG 2 contrast ratio of two colours.
double contrast(const QColor& a, const QColor& b) {
    auto luminance = [](const QColor& c) {
        auto channel = [](double v) {
            return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
        };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) +
               0.0722 * channel(c.blueF());
    };
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
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
        QVERIFY2(
            available.contains(with_frame),
            qPrintable(describe(with_frame) + QStringLiteral(" outside ") + describe(available)));
        // Laptops and ordinary monitors are used whole, bigger ones mostly.
        const double used = double(with_frame.width()) * with_frame.height() /
                            (double(available.width()) * available.height());
        QVERIFY2(used > (available.width() <= 1920 ? 0.95 : 0.5),
                 qPrintable(QString::number(used)));
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

    // The check below finds the bug it is for: the device monitor squeezed under its minimum
    // height (as a dock too short for it did) draws the step-time legend over the chart's axis.
    void overlapCheckCatchesASqueezedPanel() {
        QMainWindow window;
        auto* holder = new QWidget;  // no layout: the panel gets the size it is given
        window.setCentralWidget(holder);
        auto* monitor = new MonitorPanel(nullptr, holder);
        window.resize(400, 1300);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        monitor->setGeometry(0, 0, 300, 1200);  // room to spare
        QTest::qWait(50);
        QVERIFY2(overlaps_and_cut_text(window).isEmpty(),
                 qPrintable(overlaps_and_cut_text(window).join(QLatin1Char('\n'))));
        monitor->setGeometry(0, 0, 300, 330);
        QTest::qWait(50);
        const QStringList problems = overlaps_and_cut_text(window);
        QVERIFY(!problems.isEmpty());
        QVERIFY2(problems.join(QLatin1Char('\n')).contains(QLatin1String("phaseSummary")),
                 qPrintable(problems.join(QLatin1Char('\n'))));
    }

    // Colours chosen on white carried onto a palette: unchanged on a light one; on a dark one pale
    // boxes turn dark and dark text light, with the contrast WCAG asks of body text (4.5:1).
    void coloursFollowThePalette() {
        const QPalette light = light_palette();
        for (const QColor& c :
             {QColor(0xf7, 0xf7, 0xf7), QColor(0x30, 0x30, 0x30), QColor(0xdb, 0xe6, 0xf1)}) {
            QCOMPARE(onPalette(c, light).name(), c.name());
        }
        const QPalette dark = dark_palette();
        QVERIFY(paletteIsDark(dark) && !paletteIsDark(light));
        QCOMPARE(chartTheme(dark), QChart::ChartThemeDark);
        QCOMPARE(chartTheme(light), QChart::ChartThemeLight);
        const QColor box = onPalette(QColor(0xf7, 0xf7, 0xf7), dark);
        const QColor text = onPalette(QColor(0x30, 0x30, 0x30), dark);
        QVERIFY2(box.lightnessF() < 0.3 && text.lightnessF() > 0.7,
                 qPrintable(box.name() + QLatin1Char(' ') + text.name()));
        QVERIFY2(contrast(text, box) >= 4.5, qPrintable(QString::number(contrast(text, box))));
        // A pale tint keeps its hue.
        const QColor blue = onPalette(QColor(0xdb, 0xe6, 0xf1), dark);
        QVERIFY(blue.lightnessF() < 0.35 &&
                qAbs(blue.hslHue() - QColor(0xdb, 0xe6, 0xf1).hslHue()) <= 2);
    }

    // Under a dark platform palette: the charts take Qt Charts' dark theme, and the painted views
    // (the step diagram, the carving bar, the timeline) draw on a dark background with light text.
    void darkPaletteIsLegible() {
        const QPalette before = QApplication::palette();
        QApplication::setPalette(dark_palette());
        {
            MainWindow window(nullptr, QStringLiteral("MirrorLab-test-screens-dark"));
            window.resize(1600, 900);
            window.show();
            QVERIFY(QTest::qWaitForWindowExposed(&window));
            const auto charts = window.findChildren<QChartView*>();
            QVERIFY(charts.size() >= 8);
            for (QChartView* view : charts)
                QCOMPARE(view->chart()->theme(), QChart::ChartThemeDark);
            for (const char* name : {"stepViewDock", "timelineDock"})
                window.findChild<QDockWidget*>(QLatin1String(name))->raise();
            QTest::qWait(100);
            for (const char* name : {"stepDiagram", "deviceCarving", "timelineView"}) {
                auto* view = window.findChild<QWidget*>(QLatin1String(name));
                QVERIFY2(view != nullptr, name);
                const QImage image = view->grab().toImage();
                QVERIFY2(!image.isNull(), name);
                int dark = 0, light = 0, total = 0;
                for (int y = 0; y < image.height(); y += 2) {
                    for (int x = 0; x < image.width(); x += 2) {
                        const double l = QColor(image.pixel(x, y)).lightnessF();
                        dark += l < 0.3;
                        light += l > 0.7;
                        ++total;
                    }
                }
                QVERIFY2(dark > total / 2, qPrintable(QStringLiteral("%1: %2 of %3 pixels dark")
                                                          .arg(QLatin1String(name))
                                                          .arg(dark)
                                                          .arg(total)));
                QVERIFY2(light > 0,
                         qPrintable(QStringLiteral("%1: no light text").arg(QLatin1String(name))));
            }
            window.hide();
        }
        QSettings(QStringLiteral("MirrorLab"), QStringLiteral("MirrorLab-test-screens-dark"))
            .clear();
        QApplication::setPalette(before);
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
        const QJsonObject config{
            {QStringLiteral("windowFrameMargins"), true},
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
        env.insert(QString::fromLatin1(kChildEnv),
                   QStringLiteral("%1x%2").arg(screen.width()).arg(screen.height()));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"),
                   dir.filePath(QStringLiteral("config")));  // a first launch
        env.insert(QStringLiteral("XDG_CACHE_HOME"), dir.filePath(QStringLiteral("cache")));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        if (scale.isEmpty()) {
            env.remove(QStringLiteral("QT_SCALE_FACTOR"));
        } else {
            env.insert(QStringLiteral("QT_SCALE_FACTOR"), scale);
        }
        child.setProcessEnvironment(env);
        child.setProcessChannelMode(QProcess::MergedChannels);
        child.start(
            QCoreApplication::applicationFilePath(),
            {QStringLiteral("-platform"), QStringLiteral("offscreen:configfile=") + config_path,
             QStringLiteral("inChild")});
        QVERIFY(child.waitForFinished(180000));
        const QString output = QString::fromLocal8Bit(child.readAll());
        QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0,
                 qPrintable(output));
        QVERIFY2(output.contains(QStringLiteral("PASS   : TestUiScreens::inChild()")),
                 qPrintable(output));
    }

    // Runs only as the child of firstLaunchOnScreen(), on the screen it was given.
    void inChild() {
        const QString wanted = qEnvironmentVariable(kChildEnv);
        if (wanted.isEmpty()) QSKIP("runs as a child of firstLaunchOnScreen");
        const QScreen* screen = QGuiApplication::primaryScreen();
        const QRect available = screen->availableGeometry();
        const QSize physical =
            (QSizeF(screen->geometry().size()) * screen->devicePixelRatio()).toSize();
        QCOMPARE(QStringLiteral("%1x%2").arg(physical.width()).arg(physical.height()), wanted);

        MainWindow window(nullptr, QStringLiteral("MirrorLab-test-screens"));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QTest::qWait(700);  // the queued first-launch layout and the frame check after it

        // The whole frame on the screen, and most of the screen used.
        const QRect frame = window.frameGeometry();
        QVERIFY2(available.contains(frame),
                 qPrintable(describe(frame) + QStringLiteral(" outside ") + describe(available)));
        QVERIFY2(frame.width() >= available.width() * 9 / 10 || frame.width() >= 1920,
                 qPrintable(describe(frame)));
        QVERIFY2(frame.height() >= available.height() * 9 / 10 || frame.height() >= 1200,
                 qPrintable(describe(frame)));

        // The log starts as a strip: the charts get most of the height.
        auto* log_dock = window.findChild<QDockWidget*>(QStringLiteral("logDock"));
        QVERIFY(log_dock != nullptr);
        QVERIFY2(log_dock->height() <= window.height() / 4,
                 qPrintable(QString::number(log_dock->height())));
        QVERIFY(window.centralWidget()->height() > log_dock->height());

        // The device monitor never scrolls sideways: its panel fits its dock's width.
        auto* monitor_scroll = scroll_area_of(window.monitorPanel());
        QVERIFY(monitor_scroll != nullptr);
        QVERIFY2(
            window.monitorPanel()->minimumSizeHint().width() <= monitor_scroll->viewport()->width(),
            qPrintable(QStringLiteral("%1 > %2")
                           .arg(window.monitorPanel()->minimumSizeHint().width())
                           .arg(monitor_scroll->viewport()->width())));

        // The model form, brought forward as a person would.
        auto* model_dock = window.findChild<QDockWidget*>(QStringLiteral("modelDock"));
        QVERIFY(model_dock != nullptr);
        model_dock->raise();
        QTest::qWait(100);
        auto* table = window.modelPanel()->findChild<QTableWidget*>(QStringLiteral("layerTable"));
        QVERIFY(table != nullptr && table->isVisible());
        QScrollArea* form = scroll_area_of(table);
        QVERIFY(form != nullptr);
        // Neither the form nor its layer table scrolls sideways, and every cell shows its whole
        // text: on a laptop the table wraps the tutorial's argument lists onto two lines.
        QVERIFY2(!form->horizontalScrollBar()->isVisible(), "the model form scrolls sideways");
        QVERIFY2(!table->horizontalScrollBar()->isVisible(), "the layer table scrolls sideways");
        QCOMPARE(table->rowCount(), 7);  // the tutorial's model, as on a first launch
        const QStringList cut_cells = cut_table_cells(*table);
        QVERIFY2(cut_cells.isEmpty(), qPrintable(cut_cells.join(QLatin1Char('\n'))));
        // From 1600x900 on, on one line each.
        const bool big_enough = available.width() >= 1600 && available.height() >= 900;
        if (big_enough) {
            for (int column = 0; column < table->columnCount(); ++column) {
                const int needed =
                    static_cast<const QAbstractItemView*>(table)->sizeHintForColumn(column);
                QVERIFY2(table->columnWidth(column) >= needed,
                         qPrintable(QStringLiteral("column %1: %2 < %3")
                                        .arg(column)
                                        .arg(table->columnWidth(column))
                                        .arg(needed)));
            }
        }
        // Nothing on top of anything, before a run and after one (the monitor's legend and memory
        // rows, the step time chart's axis, the charts' headers).
        QStringList problems = overlaps_and_cut_text(window);
        QVERIFY2(problems.isEmpty(),
                 qPrintable(QStringLiteral("before a run:\n") + problems.join(QLatin1Char('\n'))));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        window.dataPanel()->load(QStringLiteral("synthetic:320:64"));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        window.modelPanel()->setModel(mirrorlab::Model::from_json_text(
            "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
            "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 30982, \"output_dim\": "
            "8}},"
            "{\"class_name\": \"GlobalMaxPooling1D\"},"
            "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": "
            "\"softmax\"}}]}"));
        window.devicesPanel()->setConfig(mirrorlab::DeviceConfig::parse("cpu:2x512MB"));
        auto* epochs = window.modelPanel()->findChild<QSpinBox*>(QStringLiteral("epochs"));
        QVERIFY(epochs != nullptr);
        epochs->setValue(2);
        QVERIFY2(window.startTraining(), qPrintable(window.startBlocker()));
        QVERIFY(window.controller()->waitForFinished(120000));
        window.monitorPanel()->refreshNow();
        QTest::qWait(300);
        problems = overlaps_and_cut_text(window);
        QVERIFY2(problems.isEmpty(),
                 qPrintable(QStringLiteral("after a run:\n") + problems.join(QLatin1Char('\n'))));
        // Every tab brought forward in turn, at the size the first launch gave its dock.
        for (const char* name : {"devicesDock", "modelDock", "dataDock", "logDock", "runsDock",
                                 "stepViewDock", "timelineDock", "scalingDock", "tryItDock",
                                 "classReportDock"}) {
            auto* dock = window.findChild<QDockWidget*>(QLatin1String(name));
            QVERIFY2(dock != nullptr, name);
            dock->raise();
            QTest::qWait(150);
            problems = overlaps_and_cut_text(window);
            QVERIFY2(problems.isEmpty(),
                     qPrintable(QStringLiteral("%1 in front:\n").arg(QLatin1String(name)) +
                                problems.join(QLatin1Char('\n'))));
        }

        window.hide();
        QSettings(QStringLiteral("MirrorLab"), QStringLiteral("MirrorLab-test-screens")).clear();
    }
};

QTEST_MAIN(TestUiScreens)
#include "test_ui_screens.moc"
