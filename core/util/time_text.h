#pragma once
// The current time as text, for what the engine writes into files (the run store's UTC
// timestamps, a .keras archive's date_saved).
#include <string>

namespace mirrorlab {

enum class TimeZone { Invalid = 0, Utc, Local };

// `strftime_format` applied to now: ("%Y-%m-%dT%H:%M:%SZ", Utc) -> "2026-12-02T03:33:58Z".
std::string now_text(const char* strftime_format, TimeZone zone);

}  // namespace mirrorlab
