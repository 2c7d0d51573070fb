// libFuzzer target: read_delimited (CSV/TSV). read_delimited only reads a file, so the input is
// written to a private temporary file.
//
// Input layout: byte 0 picks the options, the rest is the file.
//   bit 0      quoting off (default: on)
//   bits 1-2   header: 0/3 Auto, 1 Present, 2 Absent
//   bit 3      file extension .tsv (tab) instead of .csv (',')
//   bit 4      explicit delimiter ';' (overrides the extension)
//   bits 5-7   columns: 0 default, 1 "label"/"text", 2 "0"/"1", 3 "1"/"0", 4 "topic"/"body",
//              5 "3"/"7", others default
// Only mirrorlab::Error may escape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/data/corpus.h"
#include "core/util/error.h"
#include "fuzz_common.h"

using namespace mirrorlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t flags = data[0];
    DelimitedOptions options;
    options.quoting = (flags & 1) == 0;
    switch ((flags >> 1) & 3) {
        case 1: options.header = HeaderMode::Present; break;
        case 2: options.header = HeaderMode::Absent; break;
        default: options.header = HeaderMode::Auto; break;
    }
    if (flags & 0x10) options.delimiter = ';';
    switch (flags >> 5) {
        case 1: options.label_column = "label"; options.text_column = "text"; break;
        case 2: options.label_column = "0"; options.text_column = "1"; break;
        case 3: options.label_column = "1"; options.text_column = "0"; break;
        case 4: options.label_column = "topic"; options.text_column = "body"; break;
        case 5: options.label_column = "3"; options.text_column = "7"; break;
        default: break;
    }
    const auto path = fuzz::temp_dir() / ((flags & 8) ? "fuzz.tsv" : "fuzz.csv");
    fuzz::write_file(path, data + 1, size - 1);
    try {
        const LabelledTexts corpus = read_delimited(path.string(), options);
        if (corpus.texts.size() != corpus.labels.size()) fuzz::invariant_failed("texts != labels");
        for (int32_t label : corpus.labels)
            if (label < 0 || label >= static_cast<int32_t>(corpus.class_names.size()))
                fuzz::invariant_failed("label out of range");
    } catch (const Error&) {
    }
    return 0;
}
