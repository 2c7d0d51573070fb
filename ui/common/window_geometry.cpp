#include "ui/common/window_geometry.h"

#include <algorithm>

namespace mirrorlab::ui {

QMargins expectedFrameMargins() {
    return {4, 32, 4, 4};
}

QRect firstLaunchGeometry(const QRect& available, const QMargins& frame) {
    const QSize room = available.size().shrunkBy(frame).expandedTo(QSize(1, 1));
    const QSize whole(1920, 1200);
    QSize size = room;
    if (room.width() > whole.width() || room.height() > whole.height()) {
        size = (room * 0.75).expandedTo(whole).boundedTo(room);
    }
    // Centred in the room, so the frame around it stays on the screen too.
    const QRect room_rect = available.marginsRemoved(frame);
    QRect geometry(QPoint(0, 0), size);
    geometry.moveCenter(room_rect.center());
    geometry.moveLeft(std::max(geometry.left(), room_rect.left()));
    geometry.moveTop(std::max(geometry.top(), room_rect.top()));
    return geometry;
}

DockLayout firstLaunchDocks(const QSize& room, const DockNeeds& needs) {
    DockLayout layout;
    const int width = room.width();
    // The monitor: a fifth, between its minimum and 480 px (it only shows three small charts).
    layout.right_width = std::clamp(width / 5, std::max(needs.right_minimum, 280),
                                    std::max(needs.right_minimum, 480));
    // The left docks: what the model form wants, as far as the charts keep their minimum and
    // about a third of the width (two charts side by side need that much to be read).
    const int central_floor = std::max(needs.central_minimum, width * 9 / 25);
    const int room_for_left = width - layout.right_width - central_floor;
    layout.left_width = std::max(std::min(needs.left_wanted, room_for_left), needs.left_minimum);
    // Still too wide (a small screen): the monitor gives way down to its minimum.
    const int overflow = layout.left_width + layout.right_width + needs.central_minimum - width;
    if (overflow > 0)
        layout.right_width = std::max(layout.right_width - overflow, needs.right_minimum);
    layout.bottom_height =
        std::max(std::min(needs.bottom_wanted, room.height() / 5), needs.bottom_minimum);
    return layout;
}

}  // namespace mirrorlab::ui
