#include "ui/common/column_scroll_area.h"

#include <QBoxLayout>
#include <QEvent>
#include <QLayout>
#include <QScrollBar>
#include <QStyle>
#include <QTimer>

#include <algorithm>

namespace mirrorlab::ui {

ColumnScrollArea::ColumnScrollArea(QWidget* parent) : QScrollArea(parent) {
    setWidgetResizable(false);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setFrameShape(QFrame::NoFrame);
}

void ColumnScrollArea::setPanel(QWidget* panel) {
    setWidget(panel);
    panel->installEventFilter(this);
    fit();
}

void ColumnScrollArea::resizeEvent(QResizeEvent* event) {
    QScrollArea::resizeEvent(event);
    fit();
}

bool ColumnScrollArea::eventFilter(QObject* watched, QEvent* event) {
    // The panel's contents changed what it needs (a banner, longer text): fit again once the
    // layout has settled.
    if (watched == widget() && event->type() == QEvent::LayoutRequest) {
        QTimer::singleShot(0, this, &ColumnScrollArea::fit);
    }
    return QScrollArea::eventFilter(watched, event);
}

void ColumnScrollArea::fit() {
    QWidget* panel = widget();
    if (panel == nullptr || fitting_) return;
    fitting_ = true;
    auto needed_at = [panel](int width) {
        int needed = panel->minimumSizeHint().height();
        const auto* column = qobject_cast<const QBoxLayout*>(panel->layout());
        if (column == nullptr || column->direction() != QBoxLayout::TopToBottom) {
            if (panel->layout() != nullptr && panel->layout()->hasHeightForWidth()) {
                needed = std::max(needed, panel->layout()->totalMinimumHeightForWidth(width));
            }
            return needed;
        }
        // Each row its minimum, or its height for this width where that is more: a box layout
        // short of the sum gives the rows with a height for width theirs and squeezes the others
        // under their minimum, where widgets overlap.
        const QMargins margins = column->contentsMargins();
        const int inner = width - margins.left() - margins.right();
        int sum = margins.top() + margins.bottom();
        int rows = 0;
        for (int i = 0; i < column->count(); ++i) {
            QLayoutItem* item = column->itemAt(i);
            if (item == nullptr || item->isEmpty()) continue;
            int row = item->minimumSize().height();
            if (item->hasHeightForWidth()) row = std::max(row, item->heightForWidth(inner));
            sum += row;
            ++rows;
        }
        int spacing = column->spacing();
        if (spacing < 0)
            spacing = panel->style()->pixelMetric(QStyle::PM_LayoutVerticalSpacing, nullptr, panel);
        if (rows > 1) sum += (rows - 1) * std::max(spacing, 0);
        return std::max(needed, sum);
    };
    const int full_width = width() - 2 * frameWidth();
    int panel_width = full_width;
    int needed = needed_at(panel_width);
    const int height_there = height() - 2 * frameWidth();
    // Taller than the area: the vertical scroll bar takes its width from the panel.
    if (needed > height_there) {
        panel_width = full_width - style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, this);
        needed = needed_at(panel_width);
    }
    panel->resize(std::max(panel_width, panel->minimumSizeHint().width()),
                  std::max(needed, height_there));
    fitting_ = false;
}

}  // namespace mirrorlab::ui
