#pragma once
// The little of HDF5 that Keras' weight files need. hdf5.h stays out of this header.
//
// Writing goes through the HDF5 C library (Debian: libhdf5-dev), entirely in memory (the "core"
// driver): groups with a string attribute, float32 datasets and int64/float32 scalars.
//
// Reading is our own bounds-checked parser (hdf5_reader.cpp, hdf5_messages.cpp,
// hdf5_dense_links.cpp, hdf5_format.h), not libhdf5: files are untrusted, and libhdf5 1.10 trusts a
// damaged file's metadata (the fuzzer found it dereferencing a null accumulator and malloc()ing
// exabytes). It reads what h5py and libhdf5 write: superblocks 0-3, object headers 1 and 2, groups
// as symbol tables (v1 B-tree, local heap), link messages or dense link storage (fractal heap, v2
// B-tree name index), and datasets of any dtype with contiguous or compact storage; float16/32/64
// values in either byte order read as float32. A part it does not read (chunked or external
// storage, shared messages, I/O filters on link storage) is named in a DataError; the checksums of
// the version-2 structures (fractal heap blocks included) are verified. Every failure is a
// DataError naming the source and the object. Links other than hard links (soft, external: an
// external link would open another file) are never followed, and a file with more than
// kHdf5MaxObjects objects is refused.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mirrorlab::hdf5 {

inline constexpr std::size_t kHdf5MaxObjects = 100000;

struct DatasetInfo {
    std::string path;                 // "layers/conv1d/vars/0", no leading slash
    std::vector<std::int64_t> shape;  // empty for a scalar
    std::string dtype;                // numpy's names: "float32", "float64", "int64", ...; "other"
    bool operator==(const DatasetInfo&) const = default;
};
std::string shape_text(const std::vector<std::int64_t>& shape);  // "(3, 4, 6)", "()" for a scalar

// An HDF5 file being built in memory. Paths are relative to the root; parents must exist.
class FileWriter {
public:
    FileWriter();
    ~FileWriter();
    FileWriter(const FileWriter&) = delete;
    FileWriter& operator=(const FileWriter&) = delete;

    void group(const std::string& path);
    // A scalar variable-length UTF-8 string attribute, as h5py writes a Python str.
    void string_attribute(const std::string& object_path, const std::string& name, const std::string& value);
    void dataset(const std::string& path, const std::vector<std::int64_t>& shape, std::span<const float> values);
    void scalar(const std::string& path, std::int64_t value);
    void scalar(const std::string& path, float value);
    // The complete file; the writer cannot be used afterwards.
    std::vector<std::uint8_t> finish();

private:
    std::int64_t file_ = -1;  // hid_t
};

// Where a listed dataset's values lie in the file being read (FileReader's bookkeeping).
struct DatasetStorage {
    std::uint64_t offset = 0;        // into the file's bytes
    std::uint64_t stored_bytes = 0;  // what the layout says is there
    std::uint32_t element_bytes = 0;
    bool big_endian = false;
    std::string unreadable;  // why the values cannot be read ("is stored in chunks ..."), else empty
};

// An HDF5 file read from memory (its bytes are kept). Every error names `source`.
class FileReader {
public:
    FileReader(std::vector<std::uint8_t> image, std::string source);

    const std::string& source() const { return source_; }
    // Every dataset and group reachable through hard links, sorted by path.
    const std::vector<DatasetInfo>& datasets() const { return datasets_; }
    const std::vector<std::string>& groups() const { return groups_; }
    const DatasetInfo* find(const std::string& path) const;
    // A float dataset (float16, float32 or float64) as float32, row-major; its shape must be `shape`.
    std::vector<float> read_floats(const std::string& path, const std::vector<std::int64_t>& shape) const;

private:
    std::vector<std::uint8_t> image_;
    std::string source_;
    std::vector<DatasetInfo> datasets_;
    std::vector<DatasetStorage> storage_;  // datasets_[i]'s values
    std::vector<std::string> groups_;
};

}  // namespace mirrorlab::hdf5
