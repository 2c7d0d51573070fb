#pragma once
// Helpers shared by the libFuzzer targets in tests/fuzz/ (not part of the main build).
//
// Convention: a target catches mirrorlab::Error (and its subclasses DataError, ModelError,
// json::ParseError) and nothing else. Any other exception escaping LLVMFuzzerTestOneInput
// (std::bad_alloc, std::out_of_range, std::length_error, ...) terminates the process, which
// libFuzzer reports as a crash: the parser's contract is "mirrorlab::Error or success".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace fuzz {

// A private temporary folder for this fuzzer process. Parsers that only read files
// (read_delimited, read_reuters21578) get their input through it. libFuzzer ends with _Exit, so
// the atexit clean-up only runs when a reproducer run returns normally; run-fuzzers.sh points
// TMPDIR at a folder of its own and removes that. The path is never destroyed: the atexit
// clean-up runs after the destructors of statics made later, and would read a destroyed path.
inline const std::filesystem::path& temp_dir() {
    static const std::filesystem::path* const dir = [] {
        // $TMPDIR when set, else /dev/shm (memory: tens of thousands of writes per second), else
        // the system temporary folder.
        std::filesystem::path base;
        std::error_code ec;
        if (std::getenv("TMPDIR") == nullptr && ::access("/dev/shm", W_OK | X_OK) == 0 &&
            std::filesystem::is_directory("/dev/shm", ec))
            base = "/dev/shm";
        else
            base = std::filesystem::temp_directory_path();
        std::string pattern = (base / "mirrorlab-fuzz-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            std::perror("mirrorlab fuzz: mkdtemp");
            std::abort();
        }
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(temp_dir(), ignored);
        });
        return new std::filesystem::path(pattern);
    }();
    return *dir;
}

// Writes the bytes to `path` (truncating); aborts when the disk refuses, which is not a parser bug
// but would make every later result meaningless.
inline void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (size > 0) out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) {
        std::fprintf(stderr, "mirrorlab fuzz: cannot write %s\n", path.c_str());
        std::abort();
    }
}

// A broken invariant that is not an exception (e.g. a round trip that does not round-trip).
[[noreturn]] inline void invariant_failed(const char* what, std::string_view detail = {}) {
    const std::string text(detail);  // never a null pointer for %s
    std::fprintf(stderr, "mirrorlab fuzz: invariant violated: %s\n%s\n", what, text.c_str());
    std::abort();
}

}  // namespace fuzz
