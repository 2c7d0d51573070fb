#pragma once
// The .npy array format (versions 1.0, 2.0 and 3.0): the magic "\x93NUMPY", a header that is a
// Python dict literal {'descr': '<i8', 'fortran_order': False, 'shape': (11228,), }, then the
// raw data, or for object arrays ('|O') a pickle (see pickle.h).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mirrorlab {

// Zero is the invalid kind, as everywhere in MirrorLab.
enum class NpyKind { Invalid = 0, Bool, Int, UInt, Float, Object };

struct NpyArray {
    std::string source;  // file or "archive: entry 'x.npy'", for error messages
    int version_major = 0;
    std::string descr;  // as written: "<i8", "|u1", "|O"
    NpyKind kind = NpyKind::Invalid;
    int item_bytes = 0;  // 0 for Object
    bool big_endian = false;
    bool fortran_order = false;
    std::vector<int64_t> shape;
    // Numeric arrays: the element bytes as stored (file byte order, C or Fortran order).
    std::vector<uint8_t> data;
    // Object arrays: each element, a list of ints, in the pickled order.
    std::vector<std::vector<int64_t>> objects;
    int pickle_protocol = 0;  // Object arrays only

    // Product of the shape (1 for a 0-d array).
    uint64_t element_count() const;
    // Bool and integer arrays as int64 in storage order. DataError (naming `source`) for other
    // dtypes and for uint64 values above INT64_MAX.
    std::vector<int64_t> to_int64() const;
};

// Parses a whole .npy file already in memory. Wrong magic, an unsupported version, a malformed
// header, an unsupported dtype or short data -> DataError starting with `source_name`. Bytes
// after the data are ignored, as numpy does.
NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& source_name);

// Reads and parses a .npy file.
NpyArray read_npy_file(const std::string& path);

}  // namespace mirrorlab
