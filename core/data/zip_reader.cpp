#include "core/data/zip_reader.h"

#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/util/error.h"
#include "core/util/file.h"

namespace mirrorlab {

namespace {

// Deflate cannot expand by more than 1032:1 (a 258-byte match per ~2 bits); anything claiming
// more is corrupt, so this bounds what a small file can make us allocate.
constexpr uint64_t kDeflateMaxRatio = 1032;
// Smallest zip: an end-of-central-directory record alone.
constexpr uint64_t kEndRecordBytes = 22;

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

// Whether the end-of-central-directory record's signature is where a zip keeps it: in the last
// 22 bytes plus at most a 65535-byte comment.
bool has_end_record(const std::vector<uint8_t>& bytes) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::size_t from = bytes.size() > kEndRecordBytes + 0xffff ? bytes.size() - kEndRecordBytes - 0xffff : 0;
    return text.find("PK\x05\x06", from) != std::string_view::npos;
}

// What libzip's error means for a person holding this file.
std::string open_problem(zip_error_t* error, bool end_record, const std::string& kind) {
    switch (zip_error_code_zip(error)) {
        case ZIP_ER_NOZIP:
        case ZIP_ER_INCONS:
            if (!end_record) {
                return "has no zip end-of-central-directory record: the file is truncated or not a " + kind + " archive";
            }
            return "is corrupt: its central directory does not match the entries it lists (an entry's own header "
                   "differs, or its data lies outside the archive: truncated or damaged)";
        case ZIP_ER_MULTIDISK: return "is a multi-disk zip archive, which is not supported";
        case ZIP_ER_EXISTS: return "has two entries with the same name (corrupt)";
        case ZIP_ER_MEMORY: return "is too large to read into memory";
        default: return std::string("cannot be read as a zip archive (libzip: ") + zip_error_strerror(error) + ")";
    }
}

struct FileCloser {
    void operator()(zip_file_t* file) const { zip_fclose(file); }
};

}  // namespace

void ZipArchiveCloser::operator()(zip_t* archive) const { zip_discard(archive); }

std::vector<uint8_t> read_archive_file(const std::string& path) {
    return read_file_binary(path, kZipMaxArchiveBytes, "'" + path + "'", "a .npz or .npy file");
}

ZipReader ZipReader::open_file(const std::string& path) {
    return ZipReader(read_archive_file(path), path);
}

ZipReader::ZipReader(std::vector<uint8_t> bytes, std::string source_name, std::string kind)
    : bytes_(std::move(bytes)), source_(std::move(source_name)), kind_(std::move(kind)) {
    open();
    list_entries();
}

ZipReader::~ZipReader() = default;

void ZipReader::fail(const std::string& problem) const {
    throw DataError(source_ + ": " + problem);
}

void ZipReader::open() {
    const uint64_t size = bytes_.size();
    if (size == 0) fail("is empty (0 bytes), not a " + kind_ + " archive");
    if (size >= 6 && std::memcmp(bytes_.data(), "\x93NUMPY", 6) == 0) {
        fail("is a single .npy array, not a .npz (zip) archive");
    }
    if (size < kEndRecordBytes) {
        fail("is " + std::to_string(size) + " bytes, too short for a zip archive (truncated?)");
    }
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* source = zip_source_buffer_create(bytes_.data(), size, /*freep=*/0, &error);
    if (source == nullptr) fail(open_problem(&error, true, kind_));
    // ZIP_CHECKCONS: every local header is read and compared with the central directory, and
    // every entry must lie before the directory.
    zip_t* archive = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
    if (archive == nullptr) {
        zip_source_free(source);
        const std::string problem = open_problem(&error, has_end_record(bytes_), kind_);
        zip_error_fini(&error);
        fail(problem);
    }
    archive_.reset(archive);
}

void ZipReader::list_entries() {
    const zip_int64_t count = zip_get_num_entries(archive_.get(), 0);
    for (zip_int64_t i = 0; i < count; ++i) {
        zip_stat_t stat;
        zip_stat_init(&stat);
        if (zip_stat_index(archive_.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &stat) != 0) {
            fail("central directory entry " + std::to_string(i) + " cannot be read (libzip: " +
                 zip_strerror(archive_.get()) + ")");
        }
        ZipEntry e;
        e.name = stat.name != nullptr ? stat.name : "";
        e.method = static_cast<uint16_t>(stat.comp_method);
        e.encrypted = stat.encryption_method != ZIP_EM_NONE;
        e.crc32 = stat.crc;
        e.compressed_size = stat.comp_size;
        e.uncompressed_size = stat.size;
        e.index = static_cast<uint64_t>(i);
        entries_.push_back(std::move(e));
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
    fail("has no entry " + quoted(name) + " (entries: " + (listing.empty() ? "none" : listing) + ")");
}

// Decided on the declared sizes, before anything is inflated.
void ZipReader::check_sizes(const ZipEntry& e, const std::string& who) const {
    if (e.encrypted) fail(who + " is encrypted");
    if (e.method != ZIP_CM_STORE && e.method != ZIP_CM_DEFLATE) {
        fail(who + " uses compression method " + std::to_string(e.method) +
             " (only stored and deflate, as numpy writes, are supported)");
    }
    if (e.method == ZIP_CM_STORE && e.uncompressed_size != e.compressed_size) {
        fail(who + " is stored but its sizes differ (" + std::to_string(e.compressed_size) + " vs " +
             std::to_string(e.uncompressed_size) + " bytes): corrupt");
    }
    if (e.method == ZIP_CM_STORE) return;
    if (e.uncompressed_size > kZipMaxEntryBytes || e.uncompressed_size > e.compressed_size * kDeflateMaxRatio + 1024) {
        fail(who + " claims " + std::to_string(e.uncompressed_size) + " bytes from " +
             std::to_string(e.compressed_size) +
             " compressed ones, more than deflate can produce or this reader accepts (corrupt)");
    }
    if (e.uncompressed_size > kZipRatioFreeBytes && e.uncompressed_size / kZipMaxRatio > e.compressed_size) {
        fail(who + " would inflate " + std::to_string(e.compressed_size) + " compressed bytes to " +
             std::to_string(e.uncompressed_size) + ", more than " + std::to_string(kZipMaxRatio) +
             " times as many: it looks like a zip bomb and is not read (" +
             (kind_ == ".keras" ? std::string("a model's config and weights compress far less; save the model again with "
                                              "model.save(), or export it from MirrorLab")
                                : std::string("arrays of word ids and labels compress far less; save a very repetitive array "
                                              "uncompressed, with np.savez")) +
             ")");
    }
}

std::vector<uint8_t> ZipReader::read(const ZipEntry& e) const {
    const std::string who = "entry " + quoted(e.name);
    check_sizes(e, who);
    const std::unique_ptr<zip_file_t, FileCloser> file(zip_fopen_index(archive_.get(), e.index, 0));
    if (file == nullptr) fail(who + " cannot be opened (libzip: " + zip_strerror(archive_.get()) + ")");
    // Grow as data really comes out, so a lying header does not decide the allocation.
    std::vector<uint8_t> out;
    uint64_t produced = 0;
    for (;;) {
        // Once the declared size is reached the entry must end: read into a one-byte probe, and
        // any byte that comes out is one too many. libzip checks the CRC-32 at that end.
        uint8_t probe = 0;
        const bool probing = produced == e.uncompressed_size;
        if (!probing && produced == out.size()) {
            out.resize(static_cast<size_t>(std::min<uint64_t>(e.uncompressed_size, std::max<uint64_t>(produced * 2, 1 << 24))));
        }
        const zip_int64_t got = zip_fread(file.get(), probing ? &probe : out.data() + produced,
                                          probing ? 1 : std::min<uint64_t>(out.size() - produced, 1u << 30));
        if (got < 0) {
            zip_error_t* error = zip_file_get_error(file.get());
            if (zip_error_code_zip(error) == ZIP_ER_CRC) fail(who + " fails its CRC-32 check: the file is corrupt");
            if (zip_error_code_zip(error) == ZIP_ER_ZLIB) {
                fail(who + " has corrupt deflate data (libzip: " + zip_error_strerror(error) + ")");
            }
            if (produced < e.uncompressed_size) {
                fail(who + " is truncated (expected " + std::to_string(e.uncompressed_size) + " bytes, found " +
                     std::to_string(produced) + "; libzip: " + zip_error_strerror(error) + ")");
            }
            fail(who + " cannot be read (libzip: " + std::string(zip_error_strerror(error)) + ")");
        }
        if (probing && got > 0) {
            fail(who + " inflates to more than the " + std::to_string(e.uncompressed_size) +
                 " bytes its header says (corrupt)");
        }
        if (got == 0) break;
        produced += static_cast<uint64_t>(got);
    }
    if (produced != e.uncompressed_size) {
        fail(who + " is truncated (expected " + std::to_string(e.uncompressed_size) + " bytes, found " +
             std::to_string(produced) + ")");
    }
    out.resize(static_cast<size_t>(produced));
    return out;
}

}  // namespace mirrorlab
