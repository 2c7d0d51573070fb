#include "core/export/hdf5_file.h"

#include <hdf5.h>

#include <atomic>
#include <mutex>
#include <type_traits>
#include <utility>

#include "core/util/error.h"

namespace mirrorlab::hdf5 {

static_assert(std::is_same_v<hid_t, std::int64_t>, "HDF5 >= 1.10: hid_t is int64_t");

namespace {

// Debian's serial HDF5 is not built thread-safe: one call into the library at a time.
std::recursive_mutex& library_mutex() {
    static std::recursive_mutex mutex;
    return mutex;
}

// Held for every call into HDF5: the library lock, and no error printing on stderr (the setting
// is per thread in thread-safe builds, so it is made on each entry).
class Session {
public:
    Session() : lock_(library_mutex()) { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

private:
    std::lock_guard<std::recursive_mutex> lock_;
};

// Closes any HDF5 identifier (file, group, dataset, dataspace, type, attribute, list).
class Id {
public:
    explicit Id(hid_t id = -1) : id_(id) {}
    ~Id() {
        if (id_ >= 0) H5Idec_ref(id_);
    }
    Id(Id&& other) noexcept : id_(std::exchange(other.id_, -1)) {}
    Id(const Id&) = delete;
    Id& operator=(const Id&) = delete;
    Id& operator=(Id&&) = delete;
    hid_t get() const { return id_; }
    bool ok() const { return id_ >= 0; }
    hid_t release() { return std::exchange(id_, -1); }

private:
    hid_t id_;
};

herr_t innermost_message(unsigned, const H5E_error2_t* error, void* data) {
    auto* text = static_cast<std::string*>(data);
    if (text->empty() && error != nullptr && error->desc != nullptr) *text = error->desc;
    return 0;
}

// HDF5's own words for the last failure, innermost first ("truncated file: eof = ...").
std::string library_reason() {
    std::string text;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_message, &text);
    H5Eclear2(H5E_DEFAULT);
    return text.empty() ? std::string() : " (HDF5: " + text + ")";
}

// Unique names: HDF5 refuses to open two files of one name at once, even in memory.
std::string memory_file_name() {
    static std::atomic<unsigned long> counter{0};
    return "mirrorlab-memory-" + std::to_string(counter++) + ".h5";
}

Id memory_access_list() {
    Id access(H5Pcreate(H5P_FILE_ACCESS));
    if (!access.ok() || H5Pset_fapl_core(access.get(), 1 << 16, /*backing_store=*/0) < 0) {
        throw DataError("HDF5: cannot set up an in-memory file" + library_reason());
    }
    return access;
}

}  // namespace

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    return text + (shape.size() == 1 ? ",)" : ")");
}

// ---------------------------------------------------------------------------------------------
// Writing

FileWriter::FileWriter() {
    const Session session;
    const Id access = memory_access_list();
    file_ = H5Fcreate(memory_file_name().c_str(), H5F_ACC_EXCL, H5P_DEFAULT, access.get());
    if (file_ < 0) throw DataError("HDF5: cannot create an in-memory file" + library_reason());
}

FileWriter::~FileWriter() {
    if (file_ >= 0) {
        const Session session;
        H5Fclose(file_);
    }
}

void FileWriter::group(const std::string& path) {
    const Session session;
    const Id group(H5Gcreate2(file_, path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!group.ok()) throw DataError("HDF5: cannot create group '" + path + "'" + library_reason());
}

void FileWriter::string_attribute(const std::string& object_path, const std::string& name, const std::string& value) {
    const Session session;
    const Id type(H5Tcopy(H5T_C_S1));
    const Id space(H5Screate(H5S_SCALAR));
    const Id object(H5Oopen(file_, object_path.c_str(), H5P_DEFAULT));
    if (!type.ok() || H5Tset_size(type.get(), H5T_VARIABLE) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0 ||
        !space.ok() || !object.ok()) {
        throw DataError("HDF5: cannot set up attribute '" + name + "' of '" + object_path + "'" + library_reason());
    }
    const Id attribute(H5Acreate2(object.get(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
    const char* text = value.c_str();
    if (!attribute.ok() || H5Awrite(attribute.get(), type.get(), &text) < 0) {
        throw DataError("HDF5: cannot write attribute '" + name + "' of '" + object_path + "'" + library_reason());
    }
}

namespace {

void write_dataset(hid_t file, const std::string& path, const std::vector<std::int64_t>& shape, hid_t file_type,
                   hid_t memory_type, const void* values) {
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    const Id space(shape.empty() ? H5Screate(H5S_SCALAR)
                                 : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    if (!space.ok()) throw DataError("HDF5: cannot describe dataset '" + path + "'" + library_reason());
    const Id dataset(H5Dcreate2(file, path.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (!dataset.ok() || H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0) {
        throw DataError("HDF5: cannot write dataset '" + path + "'" + library_reason());
    }
}

}  // namespace

void FileWriter::dataset(const std::string& path, const std::vector<std::int64_t>& shape,
                         std::span<const float> values) {
    const Session session;
    std::int64_t count = 1;
    for (std::int64_t d : shape) count *= d;
    if (count != static_cast<std::int64_t>(values.size())) {
        throw DataError("HDF5: dataset '" + path + "' of shape " + shape_text(shape) + " given " +
                        std::to_string(values.size()) + " values");
    }
    write_dataset(file_, path, shape, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, values.data());
}

void FileWriter::scalar(const std::string& path, std::int64_t value) {
    const Session session;
    write_dataset(file_, path, {}, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void FileWriter::scalar(const std::string& path, float value) {
    const Session session;
    write_dataset(file_, path, {}, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, &value);
}

std::vector<std::uint8_t> FileWriter::finish() {
    const Session session;
    if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0) throw DataError("HDF5: cannot flush the file" + library_reason());
    const ssize_t size = H5Fget_file_image(file_, nullptr, 0);
    if (size < 0) throw DataError("HDF5: cannot size the file image" + library_reason());
    std::vector<std::uint8_t> image(static_cast<std::size_t>(size));
    if (H5Fget_file_image(file_, image.data(), image.size()) != size) {
        throw DataError("HDF5: cannot copy the file image" + library_reason());
    }
    H5Fclose(file_);
    file_ = -1;
    return image;
}

}  // namespace mirrorlab::hdf5
