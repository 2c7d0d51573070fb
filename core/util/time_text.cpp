#include "core/util/time_text.h"

#include <chrono>
#include <ctime>

namespace mirrorlab {

std::string now_text(const char* strftime_format, TimeZone zone) {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm parts{};
    if (zone == TimeZone::Local) {
        localtime_r(&now, &parts);
    } else {
        gmtime_r(&now, &parts);
    }
    char text[64];
    const std::size_t length = std::strftime(text, sizeof text, strftime_format, &parts);
    return std::string(text, length);
}

}  // namespace mirrorlab
