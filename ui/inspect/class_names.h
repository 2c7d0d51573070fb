#pragma once
// A class's name as people read it: the data set's own name (Reuters' "earn", "acq", ...), else its
// number, for data sets that ship no names.
#include <QString>

#include <cstdint>
#include <string>
#include <vector>

namespace mirrorlab::ui {

inline QString className(const std::vector<std::string>& names, std::int32_t label) {
    if (label >= 0 && static_cast<std::size_t>(label) < names.size() && !names[static_cast<std::size_t>(label)].empty())
        return QString::fromStdString(names[static_cast<std::size_t>(label)]);
    return QString::number(label);
}

}  // namespace mirrorlab::ui
