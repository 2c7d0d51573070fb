// libFuzzer target: a whole .npz archive in memory.
//   1. ZipReader over the bytes: central directory, every entry read (inflate + CRC check), and
//      each "*.npy" entry parsed with parse_npy.
//   2. read_reuters_npz_bytes on the same bytes (Keras' reuters.npz layout: x.npy, y.npy).
// Only mirrorlab::Error may escape the parsers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/keras_reuters.h"
#include "core/data/npy.h"
#include "core/data/zip_reader.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<uint8_t> bytes(data, data + size);
    try {
        const ZipReader zip(bytes, "fuzz.npz");
        for (const ZipEntry& entry : zip.entries()) {
            try {
                const std::vector<uint8_t> content = zip.read(entry);
                if (content.size() != entry.uncompressed_size)
                    fuzz::invariant_failed("ZipReader::read size differs from the entry's size");
                if (entry.name.size() >= 4 && entry.name.ends_with(".npy")) {
                    const NpyArray array = parse_npy(content, "fuzz.npz: entry '" + entry.name + "'");
                    try {
                        (void)array.to_int64();
                    } catch (const Error&) {
                    }
                }
            } catch (const Error&) {
            }
        }
        (void)zip.find("x.npy");
    } catch (const Error&) {
    }
    try {
        const RawReuters raw = read_reuters_npz_bytes(bytes, "fuzz.npz");
        (void)raw;
    } catch (const Error&) {
    }
    return 0;
}
