#pragma once
// Where the main window opens the first time and how its docks share it: pure functions of the
// screen's available geometry, so they are tested for every screen size without that screen.
#include <QMargins>
#include <QRect>
#include <QSize>

namespace mirrorlab::ui {

// What a window manager adds around a window before it has one: a title bar and thin borders.
// Only a guess until the window is shown (frameGeometry() tells then); too much wastes a few
// pixels, too little lets the bottom edge fall off the screen, so it errs on the large side.
QMargins expectedFrameMargins();

// The first-launch geometry (of the window without its frame) on a screen whose available
// geometry (the screen less panels and docks) is `available`. Screens up to 1920x1200 are used
// whole: the docks need every pixel of a laptop. Larger ones get three quarters, at least
// 1920x1200. Never larger than `available` less `frame`, whatever the window's minimum size;
// centred.
QRect firstLaunchGeometry(const QRect& available, const QMargins& frame);

// The docks' first-launch widths and heights for a window of `window` (logical pixels).
struct DockLayout {
    int left_width = 0;     // Devices, Model and Data, tabbed
    int right_width = 0;    // the device monitor
    int bottom_height = 0;  // the log and the other bottom tabs, a strip under the charts
};
struct DockNeeds {
    int left_wanted = 0;      // what the model form needs to show its layer table unscrolled
    int left_minimum = 0;     // the left docks' minimum width
    int right_minimum = 0;    // the monitor's minimum width
    int central_minimum = 0;  // the charts' minimum width
    int bottom_wanted = 0;    // a few log lines with the tab bar and the log's own bar
    int bottom_minimum = 0;   // the bottom tabs' minimum height
};
// `room`: the window's size less the dock separators. The charts keep at least their minimum
// width and 36 % of the room; the monitor gets about a fifth, the left docks what they want (less
// where the charts would be squeezed), the bottom strip the few lines it wants but never more than
// a fifth of the height.
DockLayout firstLaunchDocks(const QSize& room, const DockNeeds& needs);

}  // namespace mirrorlab::ui
