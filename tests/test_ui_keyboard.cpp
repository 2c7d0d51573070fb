// The window without a mouse: every control has a name a screen reader can say and a tooltip;
// F5, F6, Shift+F5, F10 and Ctrl+1...9 do what the menus say; Tab walks the panels in the order
// they are seen.
#include <QtTest>

#include <QAbstractButton>
#include <QAbstractItemView>
#include <QAccessible>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QTabBar>
#include <QTableWidget>
#include <QToolBar>
#include <QToolButton>

#include "core/device/device.h"
#include "core/model/model.h"
#include "ui/common/focus_order.h"
#include "ui/data/data_panel.h"
#include "ui/devices/devices_panel.h"
#include "ui/main_window.h"
#include "ui/model/layer_editor.h"
#include "ui/model/model_panel.h"
#include "ui/teaching/step_view.h"

using namespace mirrorlab;
using namespace mirrorlab::ui;

namespace {

QString scope() {
    return QStringLiteral("MirrorLab-test-keyboard-%1").arg(QCoreApplication::applicationPid());
}

std::string small_model() {
    return "{\"name\": \"small\", \"input_length\": 60, \"layers\": ["
           "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": 30982, \"output_dim\": 8}},"
           "{\"class_name\": \"GlobalMaxPooling1D\"},"
           "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": "
           "\"softmax\"}}]}";
}

template <typename T>
bool inside(const QWidget* widget) {
    for (const QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (qobject_cast<const T*>(up) != nullptr) return true;
    }
    return false;
}

// Widgets Qt makes for its own controls (scroll bars, headers, a spin box's line edit, the tab
// bars' arrows, dock title buttons) and containers: not controls of ours.
bool is_ours_to_name(const QWidget* widget) {
    if (widget->objectName().startsWith(QLatin1String("qt_"))) return false;
    if (qobject_cast<const QScrollBar*>(widget) || qobject_cast<const QHeaderView*>(widget) ||
        qobject_cast<const QScrollArea*>(widget) || qobject_cast<const QTabBar*>(widget) ||
        qobject_cast<const QTabBar*>(widget->parentWidget()) ||
        qobject_cast<const QMenu*>(widget) || qobject_cast<const QMenuBar*>(widget)) {
        return false;
    }
    // Labels are read as the text they show; a scroll area's viewport is part of the area.
    if (qobject_cast<const QLabel*>(widget) != nullptr) return false;
    if (auto* area = qobject_cast<const QAbstractScrollArea*>(widget->parentWidget());
        area != nullptr && area->viewport() == widget) {
        return false;
    }
    const QByteArray type = widget->metaObject()->className();
    if (type == "QTableCornerButton" || type == "QDockWidgetTitleButton" ||
        type == "QToolBarExtension")
        return false;
    for (const QWidget* up = widget->parentWidget(); up != nullptr; up = up->parentWidget()) {
        if (qobject_cast<const QAbstractSpinBox*>(up) || qobject_cast<const QComboBox*>(up))
            return false;
    }
    return true;
}

// What a person can operate: anything that takes the keyboard focus, and every button.
bool is_interactive(const QWidget* widget) {
    return is_ours_to_name(widget) &&
           (widget->focusPolicy() != Qt::NoFocus || qobject_cast<const QAbstractButton*>(widget));
}

// The name a screen reader says: the accessible name, else the label whose buddy it is, else what
// Qt derives (a button's text, a group box's title); a combo box's current item is not its name.
QString spoken_name(QWidget* widget) {
    if (!widget->accessibleName().trimmed().isEmpty()) return widget->accessibleName();
    if (QWidget* parent = widget->parentWidget()) {
        for (QObject* child : parent->children()) {
            auto* label = qobject_cast<QLabel*>(child);
            if (label != nullptr && label->buddy() == widget && !label->text().isEmpty())
                return label->text();
        }
    }
    if (qobject_cast<QComboBox*>(widget) != nullptr) return {};
    QAccessibleInterface* accessible = QAccessible::queryAccessibleInterface(widget);
    return accessible != nullptr ? accessible->text(QAccessible::Name).trimmed() : QString();
}

QString describe(const QWidget* widget) {
    QStringList path;
    for (const QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (!up->objectName().isEmpty()) path.prepend(up->objectName());
    }
    QString text = widget->property("text").toString();
    return QStringLiteral("%1 '%2' [%3]")
        .arg(QString::fromLatin1(widget->metaObject()->className()), text,
             path.join(QLatin1Char('/')));
}

QDockWidget* dock_of(const QWidget* widget) {
    for (const QWidget* up = widget; up != nullptr; up = up->parentWidget()) {
        if (auto* dock = qobject_cast<const QDockWidget*>(up))
            return const_cast<QDockWidget*>(dock);
    }
    return nullptr;
}

}  // namespace

class TestUiKeyboard : public QObject {
    Q_OBJECT
  private slots:
    void cleanupTestCase() { QSettings(QStringLiteral("MirrorLab"), scope()).clear(); }

    // Every control of the main window, the ones in hidden tabs and every layer's argument editor
    // included, has an accessible name and a tooltip.
    void everyControlIsNamed() {
        MainWindow window(nullptr, scope());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QStringList unnamed, without_tooltip;
        QSet<const QWidget*> seen;
        auto walk = [&] {
            for (QWidget* widget : window.findChildren<QWidget*>()) {
                if (!is_interactive(widget) || seen.contains(widget)) continue;
                seen.insert(widget);
                if (spoken_name(widget).isEmpty()) unnamed << describe(widget);
                // The layer editor's fields are named by their labels; their tooltips are the layer
                // editor's own business (ui/model/layer_editor.cpp).
                if (widget->toolTip().trimmed().isEmpty() && !inside<LayerEditor>(widget)) {
                    without_tooltip << describe(widget);
                }
            }
        };
        walk();
        // The argument editor is built for the selected layer: walk it for every kind of layer.
        auto* table = window.modelPanel()->findChild<QTableWidget*>(QStringLiteral("layerTable"));
        QVERIFY(table != nullptr);
        for (int row = 0; row < table->rowCount(); ++row) {
            table->selectRow(row);
            walk();
        }
        QVERIFY2(seen.size() > 60, qPrintable(QString::number(seen.size())));
        // In full: QVERIFY2 cuts long messages.
        for (const QString& line : unnamed) qInfo("no accessible name: %s", qPrintable(line));
        for (const QString& line : without_tooltip) qInfo("no tooltip: %s", qPrintable(line));
        QVERIFY2(unnamed.isEmpty(), qPrintable(QStringLiteral("no accessible name:\n  ") +
                                               unnamed.join(QStringLiteral("\n  "))));
        QVERIFY2(without_tooltip.isEmpty(),
                 qPrintable(QStringLiteral("no tooltip:\n  ") +
                            without_tooltip.join(QStringLiteral("\n  "))));
    }

    // The keys are on the actions, so the menus show them, and the tooltips say them too.
    void shortcutsAreShownInMenusAndTooltips() {
        MainWindow window(nullptr, scope());
        const struct {
            const char* action;
            QKeySequence keys;
        } expected[] = {{"startAction", QKeySequence(Qt::Key_F5)},
                        {"pauseAction", QKeySequence(Qt::Key_F6)},
                        {"stopAction", QKeySequence(Qt::SHIFT | Qt::Key_F5)},
                        {"nextStepAction", QKeySequence(Qt::Key_F10)},
                        {"devicesDockOpen", QKeySequence(Qt::CTRL | Qt::Key_1)},
                        {"modelDockOpen", QKeySequence(Qt::CTRL | Qt::Key_2)},
                        {"dataDockOpen", QKeySequence(Qt::CTRL | Qt::Key_3)},
                        {"monitorDockOpen", QKeySequence(Qt::CTRL | Qt::Key_4)},
                        {"logDockOpen", QKeySequence(Qt::CTRL | Qt::Key_5)},
                        {"scalingDockOpen", QKeySequence(Qt::CTRL | Qt::Key_9)}};
        for (const auto& e : expected) {
            auto* action = window.findChild<QAction*>(QLatin1String(e.action));
            QVERIFY2(action != nullptr, e.action);
            QCOMPARE(action->shortcut(), e.keys);
            bool in_menu = false;
            for (QObject* user : action->associatedObjects())
                in_menu = in_menu || qobject_cast<QMenu*>(user) != nullptr;
            QVERIFY2(in_menu, e.action);
            QVERIFY2(action->toolTip().contains(e.keys.toString(QKeySequence::NativeText)),
                     qPrintable(action->toolTip()));
        }
        auto* toolbar = window.findChild<QToolBar*>(QStringLiteral("trainingToolbar"));
        auto* start = qobject_cast<QToolButton*>(
            toolbar->widgetForAction(window.findChild<QAction*>(QStringLiteral("startAction"))));
        QVERIFY(start != nullptr);
        QVERIFY2(start->toolTip().contains(QStringLiteral("F5")), qPrintable(start->toolTip()));
    }

    // F5 starts, F6 pauses and resumes, F10 runs one step at a time, Shift+F5 stops; Ctrl+2 brings
    // the model form forward with the keyboard in it.
    void shortcutsWork() {
        MainWindow window(nullptr, scope());
        window.show();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        window.dataPanel()->load(QStringLiteral("synthetic:320:64"));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        window.modelPanel()->setModel(Model::from_json_text(small_model()));
        window.devicesPanel()->setConfig(DeviceConfig::parse("cpu:2"));
        auto* epochs = window.modelPanel()->findChild<QSpinBox*>(QStringLiteral("epochs"));
        QVERIFY(epochs != nullptr);
        epochs->setValue(1000);
        QVERIFY2(window.startBlocker().isEmpty(), qPrintable(window.startBlocker()));
        auto steps = [&] {
            window.controller()->drainEvents();
            const RunRecord* run = window.controller()->currentRun();
            return run == nullptr || run->steps.empty() ? std::int64_t{0}
                                                        : run->steps.back().global_step;
        };

        QTest::keyClick(&window, Qt::Key_F5);
        QCOMPARE(window.controller()->state(), TrainingController::State::Running);
        QTRY_VERIFY_WITH_TIMEOUT(steps() >= 2, 60000);
        QTest::keyClick(&window, Qt::Key_F6);
        QCOMPARE(window.controller()->state(), TrainingController::State::Paused);
        QTest::keyClick(&window, Qt::Key_F6);
        QCOMPARE(window.controller()->state(), TrainingController::State::Running);

        // F10: slow motion, one step per key.
        QTest::keyClick(&window, Qt::Key_F10);
        QVERIFY(window.stepView()->slowMotion());
        QTRY_COMPARE_WITH_TIMEOUT(window.controller()->state(), TrainingController::State::Paused,
                                  60000);
        QTest::qWait(300);
        const std::int64_t held = steps();
        QTest::keyClick(&window, Qt::Key_F10);
        QTRY_COMPARE_WITH_TIMEOUT(steps(), held + 1, 60000);

        QTest::keyClick(&window, Qt::Key_F5, Qt::ShiftModifier);
        QVERIFY(window.controller()->waitForFinished(120000));
        QCOMPARE(window.controller()->currentRun()->finished->reason, FinishReason::StoppedByUser);

        auto* model_dock = window.findChild<QDockWidget*>(QStringLiteral("modelDock"));
        window.findChild<QDockWidget*>(QStringLiteral("devicesDock"))->raise();
        QVERIFY(!dockIsInFront(&window, model_dock));  // behind the Devices tab
        QTest::keyClick(&window, Qt::Key_2, Qt::ControlModifier);
        QVERIFY(dockIsInFront(&window, model_dock));
        QVERIFY(QApplication::focusWidget() != nullptr);
        QCOMPARE(dock_of(QApplication::focusWidget()), model_dock);
        QTest::keyClick(&window, Qt::Key_4, Qt::ControlModifier);
        QCOMPARE(dock_of(QApplication::focusWidget()),
                 window.findChild<QDockWidget*>(QStringLiteral("monitorDock")));
        // Try it and the Per-class report, behind the Devices tab, through the View menu.
        for (const char* name : {"tryItDock", "classReportDock"}) {
            auto* dock = window.findChild<QDockWidget*>(QLatin1String(name));
            window.findChild<QDockWidget*>(QStringLiteral("devicesDock"))->raise();
            QVERIFY2(!dockIsInFront(&window, dock), name);
            auto* open = window.findChild<QAction*>(QLatin1String(name) + QStringLiteral("Open"));
            QVERIFY2(open != nullptr, name);
            bool in_menu = false;
            for (QObject* user : open->associatedObjects())
                in_menu = in_menu || qobject_cast<QMenu*>(user) != nullptr;
            QVERIFY2(in_menu, name);
            open->trigger();
            QVERIFY2(dockIsInFront(&window, dock), name);
            QCOMPARE(dock_of(QApplication::focusWidget()), dock);
        }
    }

    // Tab goes column by column (left docks, the charts and the strip under them, the monitor),
    // and within a panel row by row; every visible control once, then round again.
    void tabFollowsTheVisualOrder() {
        MainWindow window(nullptr, scope());
        window.resize(1600, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(window.dataPanel()->waitUntilLoaded(60000));
        QTest::qWait(100);
        // The first control of the left column.
        auto* devices_dock = window.findChild<QDockWidget*>(QStringLiteral("devicesDock"));
        devices_dock->raise();
        // The top row's leftmost control (a combo box a few pixels higher than the check box beside
        // it is in the same row).
        QList<QWidget*> candidates;
        for (QWidget* widget : devices_dock->findChildren<QWidget*>()) {
            if (is_interactive(widget) && widget->isVisible() && widget->isEnabled() &&
                (widget->focusPolicy() & Qt::TabFocus)) {
                candidates << widget;
            }
        }
        QVERIFY(!candidates.isEmpty());
        int top = INT_MAX;
        for (QWidget* widget : candidates)
            top = std::min(top, widget->mapTo(&window, QPoint()).y());
        QWidget* first = nullptr;
        for (QWidget* widget : candidates) {
            const QPoint at = widget->mapTo(&window, QPoint());
            if (at.y() <= top + 12 &&
                (first == nullptr || at.x() < first->mapTo(&window, QPoint()).x()))
                first = widget;
        }
        first->setFocus(Qt::OtherFocusReason);
        auto column = [&](const QWidget* widget) {
            QDockWidget* dock = dock_of(widget);
            if (dock == nullptr) return 1;  // the charts
            switch (window.dockWidgetArea(dock)) {
                case Qt::LeftDockWidgetArea:
                    return 0;
                case Qt::BottomDockWidgetArea:
                    return 2;
                case Qt::RightDockWidgetArea:
                    return 3;
                default:
                    return 4;
            }
        };
        auto control = [](QWidget* widget) {
            while (widget != nullptr && !is_interactive(widget)) widget = widget->parentWidget();
            return widget;
        };
        QList<QWidget*> visited{control(QApplication::focusWidget())};
        QVERIFY2(visited.front() == first, qPrintable(describe(first)));
        for (int i = 0; i < 300; ++i) {
            QTest::keyClick(QApplication::focusWidget(), Qt::Key_Tab);
            QWidget* now = control(QApplication::focusWidget());
            QVERIFY(now != nullptr);
            if (now == visited.front()) break;  // round again
            QVERIFY2(!visited.contains(now), qPrintable(QStringLiteral("twice: ") + describe(now)));
            visited << now;
        }
        QVERIFY2(control(QApplication::focusWidget()) == visited.front(),
                 "Tab never came round to the first control");
        QVERIFY2(visited.size() > 15, qPrintable(QString::number(visited.size())));
        QStringList problems;
        for (qsizetype i = 1; i < visited.size(); ++i) {
            const QWidget* before = visited[i - 1];
            const QWidget* now = visited[i];
            QVERIFY2(now->isVisible(), qPrintable(describe(now)));
            if (column(now) < column(before))
                problems << QStringLiteral("back a column: %1 after %2")
                                .arg(describe(now), describe(before));
            // In one panel, never back up a row (a field a few pixels higher than the label row's
            // button beside it is the same row).
            if (dock_of(now) == dock_of(before) &&
                now->mapTo(&window, QPoint()).y() + 12 < before->mapTo(&window, QPoint()).y()) {
                problems
                    << QStringLiteral("back up: %1 after %2").arg(describe(now), describe(before));
            }
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        // Every column was visited, and every visible control of the left column.
        QSet<int> columns;
        for (const QWidget* widget : visited) columns.insert(column(widget));
        QVERIFY2(columns.contains(0) && columns.contains(1) && columns.contains(2) &&
                     columns.contains(3),
                 qPrintable(QString::number(columns.size())));
        // Shift+Tab goes back.
        QWidget* second = visited[1];
        second->setFocus(Qt::OtherFocusReason);
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_Backtab, Qt::ShiftModifier);
        QCOMPARE(control(QApplication::focusWidget()), visited[0]);
    }
};

QTEST_MAIN(TestUiKeyboard)
#include "test_ui_keyboard.moc"
