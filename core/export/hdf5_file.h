#pragma once
// The little of HDF5 that Keras' weight files need, through the HDF5 C library (Debian:
// libhdf5-dev), entirely in memory (the "core" driver): groups with a string attribute, float32
// datasets and int64/float32 scalars to write; the hard-linked datasets, their shapes and dtypes to
// read. hdf5.h stays out of this header.
//
// Files are untrusted. HDF5's automatic error printing is switched off for every call made here;
// each failure becomes a DataError naming the source, the object and HDF5's own reason. Links
// other than hard links (soft, external: an external link would open another file) are never
// followed, and a file with more than kHdf5MaxObjects objects is refused.
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

// An HDF5 file read from memory. Every error names `source`.
class FileReader {
public:
    FileReader(const std::vector<std::uint8_t>& image, std::string source);
    ~FileReader();
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;

    const std::string& source() const { return source_; }
    // Every dataset and group reachable through hard links, sorted by path.
    const std::vector<DatasetInfo>& datasets() const { return datasets_; }
    const std::vector<std::string>& groups() const { return groups_; }
    const DatasetInfo* find(const std::string& path) const;
    // A float dataset (float32 or float64) as float32, row-major; its shape must be `shape`.
    std::vector<float> read_floats(const std::string& path, const std::vector<std::int64_t>& shape) const;

private:
    std::int64_t file_ = -1;  // hid_t
    std::string source_;
    std::vector<DatasetInfo> datasets_;
    std::vector<std::string> groups_;
};

}  // namespace mirrorlab::hdf5
