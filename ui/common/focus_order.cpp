#include "ui/common/focus_order.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QKeyEvent>
#include <QMainWindow>
#include <QScrollArea>

#include <algorithm>

namespace mirrorlab::ui {

namespace {

// Columns left to right; the strip under the charts belongs to the charts' column.
int area_rank(const QMainWindow* window, const QDockWidget* dock) {
    if (dock->isFloating()) return 5;
    switch (window->dockWidgetArea(const_cast<QDockWidget*>(dock))) {
        case Qt::LeftDockWidgetArea:
            return 0;
        case Qt::TopDockWidgetArea:
            return 1;
        case Qt::BottomDockWidgetArea:
            return 3;
        case Qt::RightDockWidgetArea:
            return 4;
        default:
            return 5;
    }
}

bool is_part_of_compound(const QWidget* widget, const QWidget* top) {
    // A scroll area's viewport hands its focus to the area (a chart view, a table).
    if (auto* area = qobject_cast<const QAbstractScrollArea*>(widget->parentWidget());
        area != nullptr && area->viewport() == widget) {
        return true;
    }
    for (const QWidget* up = widget->parentWidget(); up != nullptr && up != top;
         up = up->parentWidget()) {
        if (qobject_cast<const QAbstractSpinBox*>(up) != nullptr ||
            qobject_cast<const QComboBox*>(up) != nullptr)
            return true;
    }
    return false;
}

// Row by row, left to right: widgets whose tops lie above the bottom of the row begun so far share
// that row (a button beside a taller table, a label beside a field).
QList<QWidget*> in_reading_order(QList<QWidget*> widgets, const QWidget* frame) {
    auto top_left = [frame](const QWidget* w) { return w->mapTo(frame, QPoint(0, 0)); };
    std::stable_sort(widgets.begin(), widgets.end(), [&](const QWidget* a, const QWidget* b) {
        return top_left(a).y() < top_left(b).y();
    });
    QList<QWidget*> ordered;
    for (qsizetype start = 0; start < widgets.size();) {
        int row_bottom = top_left(widgets[start]).y() + std::min(widgets[start]->height(), 40);
        qsizetype end = start + 1;
        while (end < widgets.size() && top_left(widgets[end]).y() < row_bottom) {
            row_bottom = std::max(
                row_bottom, top_left(widgets[end]).y() + std::min(widgets[end]->height(), 40));
            ++end;
        }
        QList<QWidget*> row = widgets.mid(start, end - start);
        std::stable_sort(row.begin(), row.end(), [&](const QWidget* a, const QWidget* b) {
            return top_left(a).x() < top_left(b).x();
        });
        ordered += row;
        start = end;
    }
    return ordered;
}

QList<QWidget*> controls_in(QWidget* top, const QMainWindow* window) {
    QList<QWidget*> found;
    const auto candidates = top->findChildren<QWidget*>();
    for (QWidget* widget : candidates) {
        if (!widget->isVisibleTo(window) || !widget->isVisible() || !widget->isEnabled()) continue;
        if (!(widget->focusPolicy() & Qt::TabFocus)) continue;
        if (qobject_cast<QScrollArea*>(widget) != nullptr) continue;  // a container, not a control
        if (is_part_of_compound(widget, top)) continue;
        found << widget;
    }
    return in_reading_order(found, window);
}

}  // namespace

bool dockIsInFront(const QMainWindow* window, const QDockWidget* dock) {
    if (!dock->isVisible()) return false;
    if (dock->isFloating()) return true;
    // Docks behind another tab stay "visible" at the same place; the tab in front is the one raised
    // last, and raising a widget moves it to the end of its parent's children.
    const QObjectList& siblings = dock->parentWidget()->children();
    const qsizetype at = siblings.indexOf(dock);
    for (QDockWidget* other : window->tabifiedDockWidgets(const_cast<QDockWidget*>(dock))) {
        if (other->isVisible() && !other->isFloating() && siblings.indexOf(other) > at)
            return false;
    }
    return true;
}

QList<QWidget*> visualFocusOrder(const QMainWindow* window) {
    struct Region {
        int rank = 0;
        QPoint at;
        QWidget* widget = nullptr;
    };
    QList<Region> regions;
    for (QDockWidget* dock : window->findChildren<QDockWidget*>()) {
        if (dockIsInFront(window, dock) && dock->widget() != nullptr &&
            dock->widget()->isVisible()) {
            regions.push_back(
                {area_rank(window, dock), dock->mapTo(window, QPoint(0, 0)), dock->widget()});
        }
    }
    if (window->centralWidget() != nullptr)
        regions.push_back({2, window->centralWidget()->pos(), window->centralWidget()});
    std::stable_sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) {
        if (a.rank != b.rank) return a.rank < b.rank;
        if (a.at.y() != b.at.y()) return a.at.y() < b.at.y();
        return a.at.x() < b.at.x();
    });
    QList<QWidget*> order;
    for (const Region& region : regions) order += controls_in(region.widget, window);
    return order;
}

VisualTabOrder::VisualTabOrder(QMainWindow* window) : QObject(window), window_(window) {
    qApp->installEventFilter(this);
}

bool VisualTabOrder::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() != QEvent::KeyPress) return false;
    auto* key = static_cast<QKeyEvent*>(event);
    const bool tab = key->key() == Qt::Key_Tab || key->key() == Qt::Key_Backtab;
    if (!tab || (key->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)))
        return false;
    auto* widget = qobject_cast<QWidget*>(watched);
    if (widget == nullptr || widget->window() != window_ ||
        QApplication::activePopupWidget() != nullptr)
        return false;
    const QList<QWidget*> order = visualFocusOrder(window_);
    if (order.isEmpty()) return false;
    // The focus may sit in a part of a control (a spin box's line edit): find the control.
    qsizetype index = -1;
    for (const QWidget* up = widget; up != nullptr && index < 0; up = up->parentWidget())
        index = order.indexOf(up);
    const bool forward = key->key() == Qt::Key_Tab && !(key->modifiers() & Qt::ShiftModifier);
    const qsizetype count = order.size();
    const qsizetype next =
        index < 0 ? (forward ? 0 : count - 1) : (index + (forward ? 1 : count - 1)) % count;
    order[next]->setFocus(forward ? Qt::TabFocusReason : Qt::BacktabFocusReason);
    return true;
}

}  // namespace mirrorlab::ui
