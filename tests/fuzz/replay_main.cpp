// Replays inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer, so every input
// that once crashed a target (tests/fuzz/regressions/<target>/) runs in the normal build's CTest.
//
//   replay_<target> PATH...     each PATH a file, or a folder whose files are all replayed
//
// A regression input passes when the entry function returns: the targets themselves abort on an
// exception other than mirrorlab::Error or a broken invariant (see fuzz_common.h), and a crash
// ends the process, which CTest reports with the file being replayed printed just before.
// A missing folder counts as empty (a target nothing has been found in yet).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int replay(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
        return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
    std::fflush(stderr);
    // Exactly `size` bytes on the heap, as libFuzzer passes them, so that under ASan a read past
    // the end of the input is reported.
    const std::unique_ptr<uint8_t[]> data(new uint8_t[std::max<std::size_t>(bytes.size(), 1)]);
    std::copy(bytes.begin(), bytes.end(), data.get());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int failures = 0;
    std::size_t count = 0;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path path(argv[i]);
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            std::vector<std::filesystem::path> files;
            for (const auto& entry : std::filesystem::directory_iterator(path))
                if (entry.is_regular_file() && entry.path().filename().string().front() != '.') files.push_back(entry.path());
            std::sort(files.begin(), files.end());
            for (const auto& file : files) {
                failures += replay(file);
                ++count;
            }
        } else if (std::filesystem::exists(path, ec)) {
            failures += replay(path);
            ++count;
        }
    }
    std::printf("replay: %zu input%s, %d unreadable\n", count, count == 1 ? "" : "s", failures);
    return failures == 0 ? 0 : 1;
}
