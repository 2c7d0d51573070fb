// libFuzzer target: one .npy file in memory (parse_npy), then NpyArray::to_int64 and
// element_count on what it accepted. Only mirrorlab::Error may escape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "core/data/npy.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const NpyArray array = parse_npy(std::span<const uint8_t>(data, size), "fuzz.npy");
        const uint64_t count = array.element_count();
        if (array.kind == NpyKind::Object) {
            if (array.objects.size() != count)
                fuzz::invariant_failed("object array: items != product of shape");
        } else if (array.item_bytes > 0 && array.data.size() != count * uint64_t(array.item_bytes)) {
            fuzz::invariant_failed("numeric array: data bytes != count * item size");
        }
        try {
            (void)array.to_int64();
        } catch (const Error&) {
        }
    } catch (const Error&) {
    }
    return 0;
}
