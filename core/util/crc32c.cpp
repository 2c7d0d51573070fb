#include "core/util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define MIRRORLAB_CRC32C_SSE42 1
#endif

namespace mirrorlab {

namespace {

constexpr std::array<std::uint32_t, 256> make_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t byte = 0; byte < 256; ++byte) {
        std::uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        table[byte] = crc;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

#if defined(MIRRORLAB_CRC32C_SSE42)
// SSE 4.2's CRC32 instruction computes exactly this polynomial, 8 bytes per instruction (3 cycles
// of latency): 4 MiB in 0.4-0.5 ms against the table's 9.5 (AMD EPYC Zen 4). The run store writes
// two 4 MB checkpoints (last and best) at an epoch's end, while the replicas wait.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(const unsigned char* bytes, std::size_t size,
                                                            std::uint32_t crc) {
    std::uint64_t wide = ~crc;
    for (; size >= 8; size -= 8, bytes += 8) {
        std::uint64_t word;
        std::memcpy(&word, bytes, 8);
        wide = _mm_crc32_u64(wide, word);
    }
    auto narrow = static_cast<std::uint32_t>(wide);
    for (; size > 0; --size, ++bytes) narrow = _mm_crc32_u8(narrow, *bytes);
    return ~narrow;
}

bool have_sse42() {
    static const bool have = __builtin_cpu_supports("sse4.2");
    return have;
}
#endif

}  // namespace

std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    crc = ~crc;
    for (std::size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc) {
#if defined(MIRRORLAB_CRC32C_SSE42)
    if (have_sse42()) return crc32c_sse42(static_cast<const unsigned char*>(data), size, crc);
#endif
    return crc32c_portable(data, size, crc);
}

}  // namespace mirrorlab
