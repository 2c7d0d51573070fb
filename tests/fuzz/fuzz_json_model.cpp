// libFuzzer target: json::parse and Model::from_json_text on the same text.
// Invariants checked besides "only mirrorlab::Error escapes":
//   - what parse() accepts, dump() either writes as JSON that parse() accepts again (and that
//     dumps to the same text), or refuses with mirrorlab::Error (json.h: invalid UTF-8);
//   - a model that loads writes a to_json_text() that loads again to the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/model.h"
#include "core/util/error.h"
#include "core/util/json.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const json::Value value = json::parse(text, "fuzz.json");
        std::string dumped;
        try {
            dumped = json::dump(value);
        } catch (const Error&) {
            dumped.clear();
        }
        if (!dumped.empty()) {
            try {
                const std::string again = json::dump(json::parse(dumped, "dumped.json"));
                if (again != dumped) fuzz::invariant_failed("json dump/parse/dump differs", dumped);
            } catch (const Error& e) {
                fuzz::invariant_failed("json::parse rejects json::dump output", e.what());
            }
            (void)json::dump(value, 2);
        }
    } catch (const Error&) {
    }
    try {
        const Model model = Model::from_json_text(text, "fuzz.json");
        const std::string written = model.to_json_text();
        try {
            const Model again = Model::from_json_text(written, "written.json");
            if (again.to_json_text() != written)
                fuzz::invariant_failed("Model to_json_text round trip differs", written);
        } catch (const Error& e) {
            fuzz::invariant_failed("Model::from_json_text rejects to_json_text output", e.what());
        }
    } catch (const Error&) {
    }
    return 0;
}
