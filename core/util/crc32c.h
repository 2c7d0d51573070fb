#pragma once
// CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected): the checksum of MirrorLab's checkpoint
// files and of TFRecord framing. x86-64 CPUs with SSE 4.2 compute it in hardware (~8 GB/s), others
// from a table (~0.5 GB/s).
#include <cstddef>
#include <cstdint>

namespace mirrorlab {

// The CRC of `size` bytes, continuing from `crc` (0 to start): crc32c(b, crc32c(a)) == crc32c(ab).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);
// The table's CRC, whatever the CPU (what crc32c is checked against).
std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0);

// TFRecord's "masked" CRC (TensorFlow's crc32c::Mask): rotated and offset, because a CRC of data
// that itself holds CRCs is weak. TensorBoard event files store every CRC this way.
constexpr std::uint32_t crc32c_mask(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }
constexpr std::uint32_t crc32c_unmask(std::uint32_t masked) {
    const std::uint32_t rotated = masked - 0xA282EAD8u;
    return (rotated >> 17) | (rotated << 15);
}

}  // namespace mirrorlab
