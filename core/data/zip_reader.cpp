#include "core/data/zip_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "core/util/error.h"
#include "core/util/file.h"

namespace mirrorlab {

namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectorySignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kEndRecordBytes = 22;
constexpr size_t kZip64EndBytes = 56;
constexpr size_t kZip64LocatorBytes = 20;
// Deflate cannot expand by more than 1032:1 (a 258-byte match per ~2 bits); anything claiming
// more is corrupt, so this bounds what a small file can make us allocate.
constexpr uint64_t kDeflateMaxRatio = 1032;

uint16_t le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) {
    return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

std::string quoted(std::string_view name) {
    // Entry names come from the file: keep messages printable.
    std::string out = "'";
    for (char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "'";
}

}  // namespace

uint32_t zip_crc32(std::span<const uint8_t> bytes) {
    uLong crc = crc32(0L, Z_NULL, 0);
    const uint8_t* p = bytes.data();
    size_t left = bytes.size();
    while (left > 0) {
        const auto chunk = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
        crc = crc32(crc, p, chunk);
        p += chunk;
        left -= chunk;
    }
    return static_cast<uint32_t>(crc);
}

std::vector<uint8_t> read_archive_file(const std::string& path) {
    return read_file_binary(path, kZipMaxArchiveBytes, "'" + path + "'", "a .npz or .npy file");
}

ZipReader ZipReader::open_file(const std::string& path) {
    return ZipReader(read_archive_file(path), path);
}

ZipReader::ZipReader(std::vector<uint8_t> bytes, std::string source_name)
    : bytes_(std::move(bytes)), source_(std::move(source_name)) {
    parse_central_directory();
}

void ZipReader::fail(const std::string& problem) const {
    throw DataError(source_ + ": " + problem);
}

void ZipReader::parse_central_directory() {
    const uint64_t size = bytes_.size();
    if (size == 0) fail("is empty (0 bytes), not a .npz archive");
    if (size >= 6 && std::memcmp(bytes_.data(), "\x93NUMPY", 6) == 0) {
        fail("is a single .npy array, not a .npz (zip) archive");
    }
    if (size < kEndRecordBytes) {
        fail("is " + std::to_string(size) + " bytes, too short for a zip archive (truncated?)");
    }

    // The end-of-central-directory record is the last 22 bytes plus an optional comment of up
    // to 65535 bytes; search backwards for its signature.
    uint64_t end_pos = std::numeric_limits<uint64_t>::max();
    const uint64_t lowest = size > kEndRecordBytes + 0xffff ? size - kEndRecordBytes - 0xffff : 0;
    for (uint64_t pos = size - kEndRecordBytes + 1; pos-- > lowest;) {
        const uint8_t* p = bytes_.data() + pos;
        if (le32(p) == kEndOfCentralDirectorySignature &&
            pos + kEndRecordBytes + le16(p + 20) <= size) {
            end_pos = pos;
            break;
        }
    }
    if (end_pos == std::numeric_limits<uint64_t>::max()) {
        fail(
            "has no zip end-of-central-directory record: the file is truncated or not a .npz "
            "archive");
    }
    const uint8_t* end = bytes_.data() + end_pos;
    if (le16(end + 4) != 0 || le16(end + 6) != 0)
        fail("is a multi-disk zip archive, which is not supported");
    uint64_t entry_count = le16(end + 10);
    uint64_t cd_size = le32(end + 12);
    uint64_t cd_offset = le32(end + 16);
    uint64_t cd_limit = end_pos;  // the central directory ends before this

    const bool needs_zip64 = le16(end + 8) == 0xffff || entry_count == 0xffff ||
                             cd_size == 0xffffffff || cd_offset == 0xffffffff;
    if (end_pos >= kZip64LocatorBytes && le32(end - kZip64LocatorBytes) == kZip64LocatorSignature) {
        const uint8_t* locator = end - kZip64LocatorBytes;
        const uint64_t z64_pos = le64(locator + 8);
        if (z64_pos > end_pos - kZip64LocatorBytes ||
            end_pos - kZip64LocatorBytes - z64_pos < kZip64EndBytes) {
            fail("has a zip64 locator pointing outside the file (offset " +
                 std::to_string(z64_pos) + ")");
        }
        const uint8_t* z64 = bytes_.data() + z64_pos;
        if (le32(z64) != kZip64EndSignature)
            fail("has a corrupt zip64 end-of-central-directory record");
        if (le32(z64 + 16) != 0 || le32(z64 + 20) != 0)
            fail("is a multi-disk zip archive, which is not supported");
        entry_count = le64(z64 + 32);
        cd_size = le64(z64 + 40);
        cd_offset = le64(z64 + 48);
        cd_limit = z64_pos;
    } else if (needs_zip64) {
        fail("needs a zip64 end-of-central-directory record but has none (truncated or corrupt)");
    }
    if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset) {
        fail("has a central directory (offset " + std::to_string(cd_offset) + ", " +
             std::to_string(cd_size) + " bytes) outside the file's " + std::to_string(size) +
             " bytes: truncated or corrupt");
    }
    if (entry_count > cd_size / kCentralHeaderBytes) {
        fail("claims " + std::to_string(entry_count) + " entries in a central directory of " +
             std::to_string(cd_size) + " bytes: corrupt");
    }
    central_directory_offset_ = cd_offset;

    uint64_t pos = cd_offset;
    const uint64_t cd_end = cd_offset + cd_size;
    for (uint64_t i = 0; i < entry_count; ++i) {
        const std::string which = "central directory entry " + std::to_string(i);
        if (cd_end - pos < kCentralHeaderBytes) fail(which + " is truncated");
        const uint8_t* h = bytes_.data() + pos;
        if (le32(h) != kCentralHeaderSignature)
            fail(which + " has a bad signature (corrupt archive)");
        ZipEntry e;
        e.flags = le16(h + 8);
        e.method = le16(h + 10);
        e.crc32 = le32(h + 16);
        e.compressed_size = le32(h + 20);
        e.uncompressed_size = le32(h + 24);
        const uint64_t name_len = le16(h + 28), extra_len = le16(h + 30),
                       comment_len = le16(h + 32);
        const uint16_t disk = le16(h + 34);
        e.local_header_offset = le32(h + 42);
        if (cd_end - pos - kCentralHeaderBytes < name_len + extra_len + comment_len) {
            fail(which + " is truncated");
        }
        e.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderBytes), name_len);
        const uint8_t* extra = h + kCentralHeaderBytes + name_len;

        // Zip64 extended information: only the fields whose 32-bit value is saturated follow,
        // in this order.
        const bool want_usize = e.uncompressed_size == 0xffffffff;
        const bool want_csize = e.compressed_size == 0xffffffff;
        const bool want_offset = e.local_header_offset == 0xffffffff;
        bool found_zip64 = false;
        for (uint64_t x = 0; x + 4 <= extra_len;) {
            const uint16_t id = le16(extra + x);
            const uint64_t len = le16(extra + x + 2);
            if (x + 4 + len > extra_len)
                fail("entry " + quoted(e.name) + " has a truncated extra field");
            if (id == 0x0001) {
                found_zip64 = true;
                const uint8_t* f = extra + x + 4;
                uint64_t used = 0;
                auto take = [&](uint64_t& field) {
                    if (used + 8 > len)
                        fail("entry " + quoted(e.name) +
                             " has a zip64 extra field that is too short");
                    field = le64(f + used);
                    used += 8;
                };
                if (want_usize) take(e.uncompressed_size);
                if (want_csize) take(e.compressed_size);
                if (want_offset) take(e.local_header_offset);
            }
            x += 4 + len;
        }
        if ((want_usize || want_csize || want_offset) && !found_zip64) {
            fail("entry " + quoted(e.name) + " needs a zip64 extra field but has none (corrupt)");
        }
        if (disk != 0 && disk != 0xffff)
            fail("entry " + quoted(e.name) +
                 " is on another disk (multi-disk archives are not supported)");
        if (find(e.name) != nullptr) fail("has two entries named " + quoted(e.name));
        entries_.push_back(std::move(e));
        pos += kCentralHeaderBytes + name_len + extra_len + comment_len;
    }
}

const ZipEntry* ZipReader::find(std::string_view name) const {
    for (const auto& e : entries_) {
        if (e.name == name) return &e;
    }
    return nullptr;
}

std::vector<uint8_t> ZipReader::read(std::string_view name) const {
    if (const ZipEntry* e = find(name)) return read(*e);
    std::string listing;
    for (const auto& e : entries_) listing += (listing.empty() ? "" : ", ") + quoted(e.name);
    fail("has no entry " + quoted(name) + " (entries: " + (listing.empty() ? "none" : listing) +
         ")");
}

std::vector<uint8_t> ZipReader::read(const ZipEntry& e) const {
    const std::string who = "entry " + quoted(e.name);
    if (e.flags & 0x0001) fail(who + " is encrypted");
    if (e.method != 0 && e.method != 8) {
        fail(who + " uses compression method " + std::to_string(e.method) +
             " (only stored and deflate, as numpy writes, are supported)");
    }
    const uint64_t limit = central_directory_offset_;  // entry data lies before the directory
    if (e.local_header_offset > limit || limit - e.local_header_offset < kLocalHeaderBytes) {
        fail(who + " has a local header offset " + std::to_string(e.local_header_offset) +
             " outside the archive (corrupt)");
    }
    const uint8_t* h = bytes_.data() + e.local_header_offset;
    if (le32(h) != kLocalHeaderSignature)
        fail(who + " has a bad local header signature (corrupt archive)");
    const uint64_t name_len = le16(h + 26), extra_len = le16(h + 28);
    const uint64_t header_end = e.local_header_offset + kLocalHeaderBytes + name_len + extra_len;
    if (header_end > limit) fail(who + " has a truncated local header");
    if (std::string_view(reinterpret_cast<const char*>(h + kLocalHeaderBytes), name_len) !=
        e.name) {
        fail(who + ": the local header names a different file (corrupt archive)");
    }
    const uint64_t available = limit - header_end;
    if (e.compressed_size > available) {
        fail(who + " is truncated (expected " + std::to_string(e.compressed_size) +
             " bytes, found " + std::to_string(available) + ")");
    }
    const uint8_t* data = bytes_.data() + header_end;

    std::vector<uint8_t> out;
    if (e.method == 0) {
        if (e.uncompressed_size != e.compressed_size) {
            fail(who + " is stored but its sizes differ (" + std::to_string(e.compressed_size) +
                 " vs " + std::to_string(e.uncompressed_size) + " bytes): corrupt");
        }
        out.assign(data, data + e.compressed_size);
    } else {
        if (e.uncompressed_size > kZipMaxEntryBytes ||
            e.uncompressed_size > e.compressed_size * kDeflateMaxRatio + 1024) {
            fail(
                who + " claims " + std::to_string(e.uncompressed_size) + " bytes from " +
                std::to_string(e.compressed_size) +
                " compressed ones, more than deflate can produce or this reader accepts (corrupt)");
        }
        if (e.uncompressed_size > kZipRatioFreeBytes &&
            e.uncompressed_size / kZipMaxRatio > e.compressed_size) {
            fail(who + " would inflate " + std::to_string(e.compressed_size) +
                 " compressed bytes to " + std::to_string(e.uncompressed_size) + ", more than " +
                 std::to_string(kZipMaxRatio) +
                 " times as many: it looks like a zip bomb and is not read (arrays of word ids "
                 "and labels compress far less; save a very repetitive array uncompressed, with "
                 "np.savez)");
        }
        z_stream zs{};
        if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail(who + ": zlib could not start inflating");
        std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);
        // Grow as data really comes out, so a lying header does not decide the allocation.
        out.resize(static_cast<size_t>(std::min<uint64_t>(e.uncompressed_size, uint64_t{1} << 24)));
        uint64_t in_pos = 0, produced = 0;
        for (;;) {
            if (produced == out.size() && out.size() < e.uncompressed_size) {
                out.resize(
                    static_cast<size_t>(std::min<uint64_t>(e.uncompressed_size, produced * 2)));
            }
            // Once the declared size is reached the stream must end: inflate into a one-byte
            // probe, and any byte that comes out is one too many.
            uint8_t probe = 0;
            const bool probing = produced == out.size();
            zs.next_out = probing ? &probe : out.data() + produced;
            zs.avail_out =
                probing ? 1u
                        : static_cast<uInt>(std::min<uint64_t>(out.size() - produced, 1u << 30));
            zs.next_in = const_cast<Bytef*>(data + in_pos);
            zs.avail_in =
                static_cast<uInt>(std::min<uint64_t>(e.compressed_size - in_pos, 1u << 30));
            const uInt before_in = zs.avail_in, before_out = zs.avail_out;
            const int rc = inflate(&zs, Z_NO_FLUSH);
            const uInt consumed = before_in - zs.avail_in, made = before_out - zs.avail_out;
            in_pos += consumed;
            if (probing && made > 0) {
                fail(who + " inflates to more than the " + std::to_string(e.uncompressed_size) +
                     " bytes its header says (corrupt)");
            }
            if (!probing) produced += made;
            if (rc == Z_STREAM_END) break;
            if (rc != Z_OK && rc != Z_BUF_ERROR) {
                fail(who + " has corrupt deflate data (zlib: " + (zs.msg ? zs.msg : "error") + ")");
            }
            // No progress: the compressed bytes ran out before the deflate stream ended.
            if (consumed == 0 && made == 0) {
                if (produced == e.uncompressed_size)
                    fail(who + "'s deflate stream does not end (corrupt)");
                fail(who + " is truncated (expected " + std::to_string(e.uncompressed_size) +
                     " bytes, found " + std::to_string(produced) + ")");
            }
        }
        if (produced != e.uncompressed_size) {
            fail(who + " is truncated (expected " + std::to_string(e.uncompressed_size) +
                 " bytes, found " + std::to_string(produced) + ")");
        }
        out.resize(static_cast<size_t>(produced));
    }
    const uint32_t crc = zip_crc32(out);
    if (crc != e.crc32) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "(stored %08x, computed %08x)", e.crc32, crc);
        fail(who + " fails its CRC-32 check " + buf + ": the file is corrupt");
    }
    return out;
}

}  // namespace mirrorlab
