#pragma once
// Reads the zip archives that numpy's np.savez and np.savez_compressed write (.npz): stored and
// deflate entries, zip64 extras (numpy forces them on every entry), data descriptors (savez into
// an unseekable stream), each entry checked against its CRC-32.
//
// The file is untrusted: every size and offset read from it is checked against the bytes that
// are really there before anything is allocated, so a truncated or hostile archive gives a
// DataError naming the file and the problem ("reuters.npz: entry 'x.npy' is truncated (expected
// 123 bytes, found 45)"), never a crash, a hang or a huge allocation.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab {

// Archives larger than this are refused before reading (the real reuters.npz is ~2 MB).
inline constexpr uint64_t kZipMaxArchiveBytes = uint64_t{4} << 30;
// No entry may inflate to more than this; deflate's own limit (1032:1) is checked too.
inline constexpr uint64_t kZipMaxEntryBytes = uint64_t{2} << 30;
// What a small archive may make us allocate: an entry may inflate to at most this many times its
// compressed size, or to kZipRatioFreeBytes whatever its ratio. Arrays of word ids and labels
// compress 2-10:1; only long runs of one value (a zip bomb) reach deflate's 1032:1, which would
// let a 3 MB file fill 3 GB. Checked on the declared sizes, before anything is inflated, and the
// entry must then inflate to exactly its declared size.
inline constexpr uint64_t kZipMaxRatio = 100;
inline constexpr uint64_t kZipRatioFreeBytes = uint64_t{64} << 20;

struct ZipEntry {
    std::string name;
    uint16_t method = 0;  // 0 = stored, 8 = deflate (nothing else is accepted)
    uint16_t flags = 0;
    uint32_t crc32 = 0;
    uint64_t compressed_size = 0;
    uint64_t uncompressed_size = 0;
    uint64_t local_header_offset = 0;
};

class ZipReader {
  public:
    // Reads the whole file. Errors name `path`.
    static ZipReader open_file(const std::string& path);
    // An archive already in memory; `source_name` starts every error message.
    ZipReader(std::vector<uint8_t> bytes, std::string source_name);

    const std::string& source_name() const { return source_; }
    // In central-directory order.
    const std::vector<ZipEntry>& entries() const { return entries_; }
    const ZipEntry* find(std::string_view name) const;

    // The entry's uncompressed bytes, CRC-checked.
    std::vector<uint8_t> read(const ZipEntry& entry) const;
    // Throws DataError listing the entries there are when `name` is missing.
    std::vector<uint8_t> read(std::string_view name) const;

  private:
    void parse_central_directory();
    [[noreturn]] void fail(const std::string& problem) const;

    std::vector<uint8_t> bytes_;
    std::string source_;
    std::vector<ZipEntry> entries_;
    uint64_t central_directory_offset_ = 0;
};

// CRC-32 as zip (and zlib) define it.
uint32_t zip_crc32(std::span<const uint8_t> bytes);

// Reads a whole .npz or .npy file (a regular file of at most kZipMaxArchiveBytes; see
// core/util/file.h); DataError naming `path` and the reason when it cannot.
std::vector<uint8_t> read_archive_file(const std::string& path);

}  // namespace mirrorlab
