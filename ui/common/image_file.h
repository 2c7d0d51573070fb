#pragma once
// Pictures the application writes (chart exports, --screenshot) go through a temporary file that
// replaces the destination only when complete, so a full disk or a crash never leaves half a PNG
// where a good one was.
#include <QString>

class QPixmap;

namespace mirrorlab::ui {

// Writes `image` as PNG to `path` atomically; on failure returns false with *error saying why.
bool savePngAtomically(const QPixmap& image, const QString& path, QString* error);

}  // namespace mirrorlab::ui
