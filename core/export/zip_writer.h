#pragma once
// Writes a zip archive in memory through libzip: every member stored (uncompressed), as Keras
// writes its .keras archives, in the order given. DataError when libzip fails.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mirrorlab {

// (name, bytes) pairs; the bytes are read where they are (a model's weights are hundreds of MB:
// no copy of them is made before the archive's own).
std::vector<std::uint8_t> write_stored_zip(const std::vector<std::pair<std::string, std::string_view>>& members);

}  // namespace mirrorlab
