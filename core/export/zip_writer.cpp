#include "core/export/zip_writer.h"

#include <zip.h>

#include <memory>

#include "core/util/error.h"

namespace mirrorlab {

std::vector<std::uint8_t> write_stored_zip(const std::vector<std::pair<std::string, std::string_view>>& members) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
    if (buffer == nullptr) throw DataError("[zip] cannot set up a zip archive in memory");
    zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
    if (archive == nullptr) {
        zip_source_free(buffer);
        throw DataError(std::string("[zip] cannot create a zip archive (libzip: ") + zip_error_strerror(&error) + ")");
    }
    zip_source_keep(buffer);  // it outlives the archive: the bytes are read from it below
    const std::unique_ptr<zip_source_t, void (*)(zip_source_t*)> keep(buffer, zip_source_free);
    auto fail = [&](const std::string& what) {
        const std::string reason = zip_strerror(archive);
        zip_discard(archive);
        throw DataError("[zip] cannot " + what + " (libzip: " + reason + ")");
    };
    for (const auto& [name, bytes] : members) {
        zip_source_t* data = zip_source_buffer(archive, bytes.data(), bytes.size(), 0);
        if (data == nullptr) fail("add '" + name + "'");
        const zip_int64_t index = zip_file_add(archive, name.c_str(), data, ZIP_FL_ENC_UTF_8);
        if (index < 0) {
            zip_source_free(data);
            fail("add '" + name + "'");
        }
        if (zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0) {
            fail("store '" + name + "'");
        }
    }
    if (zip_close(archive) != 0) fail("finish the archive");
    zip_stat_t stat;
    if (zip_source_open(buffer) != 0 || zip_source_stat(buffer, &stat) != 0) {
        throw DataError("[zip] cannot read back the zip archive");
    }
    std::vector<std::uint8_t> out(static_cast<std::size_t>(stat.size));
    const zip_int64_t got = zip_source_read(buffer, out.data(), out.size());
    zip_source_close(buffer);
    if (got != static_cast<zip_int64_t>(out.size())) throw DataError("[zip] cannot read back the zip archive");
    return out;
}

}  // namespace mirrorlab
