#pragma once
// The engine's formatters as the panels show them: one wording of a size across the UI, the
// engine's messages and the command line.
#include <QString>

#include <cstdint>

#include "core/backend/arena.h"

namespace mirrorlab::ui {

// "1.00 GiB", "512.0 MiB", "12.3 KiB", "17 B" (format_bytes).
inline QString bytes_text(std::int64_t bytes) { return QString::fromStdString(format_bytes(bytes)); }

}  // namespace mirrorlab::ui
