#pragma once
// Writes a zip archive in memory through libzip: every member stored (uncompressed), as Keras
// writes its .keras archives, in the order given. DataError when libzip fails.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mirrorlab {

// (name, bytes) pairs.
std::vector<std::uint8_t> write_stored_zip(const std::vector<std::pair<std::string, std::string>>& members);

}  // namespace mirrorlab
