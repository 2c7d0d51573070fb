// libFuzzer target: one TensorBoard event file in memory (parse_tensorboard_events): the TFRecord
// framing (lengths, masked CRC-32C) and every Event message protobuf parses. Only mirrorlab::Error
// may escape; a record the reader accepts must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/export/tensorboard.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto events = parse_tensorboard_events(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.tfevents");
        // Each record takes at least 16 bytes of framing.
        if (events.size() * 16 > size) fuzz::invariant_failed("more records than the input can frame");
    } catch (const Error&) {
    }
    return 0;
}
