#pragma once
// Tab order by what a person sees, not by when a widget was created: panels column by column
// (the left docks, the charts and the strip under them, the right docks, then floating ones),
// and within a panel row by row, left to right. Computed when Tab is pressed, so controls that
// panels create later (a layer's arguments, a device's rows) and tabs brought forward take their
// place without anyone maintaining a focus chain.
#include <QList>
#include <QObject>

class QDockWidget;
class QMainWindow;
class QWidget;

namespace mirrorlab::ui {

// The visible, enabled controls of `window` that take focus with Tab, in that order. Parts of a
// compound control (a spin box's line edit) are left out; the control itself stands for them.
QList<QWidget*> visualFocusOrder(const QMainWindow* window);

// Whether `dock` is shown: visible, and not behind another tab of its group (those stay visible
// to Qt, stacked under the one in front).
bool dockIsInFront(const QMainWindow* window, const QDockWidget* dock);

// Makes Tab and Shift+Tab follow visualFocusOrder() in `window` (item views included, which would
// otherwise walk their cells with Tab and keep the focus).
class VisualTabOrder : public QObject {
  public:
    explicit VisualTabOrder(QMainWindow* window);

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    QMainWindow* window_ = nullptr;
};

}  // namespace mirrorlab::ui
