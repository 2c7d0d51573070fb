#pragma once
// A scroll area for a panel that wraps to any width: the panel is as wide as the area and at
// least as tall, and scrolls only when the area is shorter than the panel's minimum height at
// that width. (QScrollArea's resizable mode gives a panel with word-wrapped labels its preferred
// height for the width, so a monitor or the charts scrolled on screens that had room for them.)
#include <QScrollArea>

namespace mirrorlab::ui {

class ColumnScrollArea : public QScrollArea {
  public:
    explicit ColumnScrollArea(QWidget* parent = nullptr);
    void setPanel(QWidget* panel);

  protected:
    void resizeEvent(QResizeEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    void fit();
    bool fitting_ = false;
};

}  // namespace mirrorlab::ui
