#pragma once
// Reading whole files that people point MirrorLab at. Every reader of a model, a word index or a
// data set goes through here, so one place decides what a file may make the engine allocate:
// only regular files are read (a device such as /dev/zero, a FIFO or a socket would never end or
// would block), and a file larger than its kind's limit is refused before anything is allocated.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab {

// Model JSON and word indexes: the tutorial model is 1 KB, Keras' reuters_word_index.json 550 KB.
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;
// One data file (a CSV/TSV, one .txt of a folder corpus, one Reuters-21578 .sgm): text is decoded
// and split after reading, so it takes a few times its size in memory.
inline constexpr uint64_t kMaxTextDataFileBytes = uint64_t{2} << 30;

// The whole of the regular file at `path`. `what` names the file in messages, e.g. "JSON file
// 'model.json'" or "'reuters.npz'". DataError:
//   "cannot open <what>: <OS reason>"
//   "cannot read <what>: Is a directory"
//   "cannot read <what>: it is a character device, not a regular file; give the path of a file"
//   "cannot read <what>: it is 3.0 GiB, more than the 2.0 GiB limit for <limit_name>"
// A FIFO is recognised without waiting for a writer.
std::string read_file_text(const std::string& path, uint64_t max_bytes, std::string_view what,
                           std::string_view limit_name);
std::vector<uint8_t> read_file_binary(const std::string& path, uint64_t max_bytes,
                                      std::string_view what, std::string_view limit_name);

// Whether the regular file at `path` starts with `prefix`: false when it is shorter or starts
// otherwise; nullopt when it is not a regular file or cannot be read (the full reader then says
// why). Lets a reader refuse a large file of another kind before reading it whole.
std::optional<bool> regular_file_starts_with(const std::string& path, std::string_view prefix);

// The first `bytes` bytes of the regular file at `path` (fewer when it is shorter) and its whole
// size; nullopt when it is not a regular file or cannot be read. For readers whose header says how
// large the file must be.
struct FileHead {
    std::string bytes;
    uint64_t file_bytes = 0;
};
std::optional<FileHead> regular_file_head(const std::string& path, std::size_t bytes);

// "512 bytes", "1.5 KiB", "12 MiB", "3.2 GiB": a size as messages give it.
std::string byte_size(uint64_t bytes);

// Which file or folder a path names, after following symbolic links: two paths name the same one
// exactly when their identities are equal (symlinks, hard links, bind mounts). Walks of folders
// keep the identities they have seen so that they never loop and read nothing twice.
struct FileIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    auto operator<=>(const FileIdentity&) const = default;
};
// nullopt when the path cannot be examined (missing, a dangling link, no permission).
std::optional<FileIdentity> file_identity(const std::string& path);

// Replaces the file at `path` with `bytes` so that a reader (or a crash, or a full disk) only ever
// sees the old file or the complete new one: written to a temporary file beside it, flushed to the
// disk (fsync), renamed over `path`, and the folder flushed. On failure the temporary file is
// removed, the old file is untouched, and DataError says what failed, e.g.
//   "cannot write checkpoint 'last.mlckpt': No space left on device (the disk is full)".
// A symbolic link at `path` is followed (its file is replaced, the link stays); a folder, device,
// FIFO or socket there is refused by name, never replaced.
void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view what);

}  // namespace mirrorlab
