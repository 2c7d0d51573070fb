#pragma once
// Reads the zip archives that numpy's np.savez and np.savez_compressed write (.npz) through libzip
// (Debian: libzip-dev): stored and deflate entries, zip64, data descriptors (savez into an
// unseekable stream), each entry checked against its CRC-32 and its local header against the
// central directory.
//
// The file is untrusted. What libzip leaves to its caller is done here, before anything is
// inflated: only stored and deflate entries, no encryption, and the size limits below. A
// truncated or hostile archive gives a DataError naming the file and the problem ("reuters.npz:
// entry 'x.npy' fails its CRC-32 check"), never a crash, a hang or a huge allocation.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct zip;  // libzip's archive (zip_t); zip.h stays out of this header

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
    bool encrypted = false;
    uint32_t crc32 = 0;
    uint64_t compressed_size = 0;
    uint64_t uncompressed_size = 0;
    uint64_t index = 0;  // libzip's
};

struct ZipArchiveCloser {
    void operator()(::zip* archive) const;
};

class ZipReader {
  public:
    // Reads the whole file. Errors name `path`.
    static ZipReader open_file(const std::string& path);
    // An archive already in memory; `source_name` starts every error message, `kind` names what
    // the archive should be where it is not a zip at all (".npz", ".keras").
    ZipReader(std::vector<uint8_t> bytes, std::string source_name, std::string kind = ".npz");
    ZipReader(ZipReader&&) noexcept = default;
    ~ZipReader();

    const std::string& source_name() const { return source_; }
    // In central-directory order.
    const std::vector<ZipEntry>& entries() const { return entries_; }
    const ZipEntry* find(std::string_view name) const;

    // The entry's uncompressed bytes, CRC-checked.
    std::vector<uint8_t> read(const ZipEntry& entry) const;
    // Throws DataError listing the entries there are when `name` is missing.
    std::vector<uint8_t> read(std::string_view name) const;

  private:
    void open();
    void list_entries();
    void check_sizes(const ZipEntry& entry, const std::string& who) const;
    [[noreturn]] void fail(const std::string& problem) const;

    std::vector<uint8_t> bytes_;  // libzip reads from here: kept in place for the archive's life
    std::string source_;
    std::string kind_;
    std::vector<ZipEntry> entries_;
    std::unique_ptr<::zip, ZipArchiveCloser> archive_;
};

// Reads a whole .npz or .npy file (a regular file of at most kZipMaxArchiveBytes; see
// core/util/file.h); DataError naming `path` and the reason when it cannot.
std::vector<uint8_t> read_archive_file(const std::string& path);

}  // namespace mirrorlab
