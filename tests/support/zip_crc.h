#pragma once
// CRC-32 as zip defines it (zlib's crc32), for tests that write their own .npz archives.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace mirrorlab::testing {

inline std::uint32_t zip_crc32(std::span<const std::uint8_t> bytes) {
    uLong crc = crc32(0L, Z_NULL, 0);
    for (std::size_t done = 0; done < bytes.size();) {
        const auto chunk = static_cast<uInt>(std::min<std::size_t>(bytes.size() - done, std::size_t{1} << 30));
        crc = crc32(crc, bytes.data() + done, chunk);
        done += chunk;
    }
    return static_cast<std::uint32_t>(crc);
}

}  // namespace mirrorlab::testing
