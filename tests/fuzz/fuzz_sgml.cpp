// libFuzzer target: one Reuters-21578 SGML file. read_reuters21578 only reads a folder, so the
// input is written as reut2-000.sgm into a private temporary folder and the folder is read
// (min_wires_per_topic = 1, so every topic survives and steps 4-6 run on fuzzed data too).
// reuters21578_tokenize is also run on the raw bytes. Only mirrorlab::Error may escape.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/data/reuters21578.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)reuters21578_tokenize(std::string_view(reinterpret_cast<const char*>(data), size));

    fuzz::write_file(fuzz::temp_dir() / "reut2-000.sgm", data, size);
    try {
        Reuters21578Options options;
        options.min_wires_per_topic = 1;
        const Reuters21578Corpus corpus = read_reuters21578(fuzz::temp_dir().string(), options);
        for (const auto& xs : corpus.xs)
            for (int64_t rank : xs)
                if (rank < 1 || rank > static_cast<int64_t>(corpus.words.size()))
                    fuzz::invariant_failed("word rank out of range");
        for (int64_t label : corpus.labels)
            if (label < 0 || label >= static_cast<int64_t>(corpus.topics.size()))
                fuzz::invariant_failed("label out of range");
    } catch (const Error&) {
    }
    return 0;
}
