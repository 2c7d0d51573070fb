#pragma once
// A strict reader for the one pickle numpy writes into a .npy file for an object array whose
// elements are lists of ints (how Keras' reuters.npz and imdb.npz store ragged sequences).
//
// It is not an unpickler: it never imports or calls anything. It runs the pickle machine over a
// closed set of opcodes and recognises exactly these globals, as numpy writes them from Python
// 2.7 (protocol 2) and Python 3 (protocols 2 to 5):
//   numpy.core.multiarray._reconstruct / numpy._core.multiarray._reconstruct, numpy.ndarray,
//   numpy.dtype, and _codecs.encode (Python 3 writes bytes as _codecs.encode(str, 'latin1')
//   under protocol 2).
// Any other opcode or global is a DataError: "x.npy: pickle opcode INST ('i') at offset 12 is
// not allowed", "x.npy: pickle global 'os.system' is not allowed".
//
// Everything the pickle can build is bounded: lists hold ints or (one level down) lists of
// ints, tuples nest at most a few levels, no object can contain itself, and the output never
// holds more ints than the pickle has bytes.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mirrorlab {

struct PickledObjectArray {
    std::vector<int64_t> shape;  // as pickled; the product equals items.size()
    bool fortran_order = false;
    // Element i of the array (in the order pickled) as a list of ints.
    std::vector<std::vector<int64_t>> items;
    int protocol = 0;  // the pickle's PROTO: 2 to 5
};

// `source_name` starts every error message ("reuters.npz: entry 'x.npy'"). Bytes after STOP are
// ignored, as pickle.load does.
PickledObjectArray unpickle_object_array(std::span<const uint8_t> bytes,
                                         const std::string& source_name);

}  // namespace mirrorlab
