#pragma once
// Reading the unsigned little-endian integers file formats store (TensorBoard's record framing,
// HDF5's fields), byte by byte, so neither the host's byte order nor alignment matters.
#include <cstddef>
#include <cstdint>

namespace mirrorlab {

// The first `count` bytes (at most 8) of `bytes` as an unsigned little-endian number; fewer bytes
// than a full word read as if the rest were zeros.
inline std::uint64_t load_little_endian(const unsigned char* bytes, std::size_t count) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < count && i < 8; ++i) value |= std::uint64_t{bytes[i]} << (8 * i);
    return value;
}

}  // namespace mirrorlab
