#include "core/util/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "core/util/cancellation.h"
#include "core/util/error.h"

namespace mirrorlab {

std::string byte_size(uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes) / 1024.0;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, value < 10.0 ? "%.1f %s" : "%.0f %s", value, units[unit]);
    return text;
}

namespace {

const char* kind_of(mode_t mode) {
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

class Descriptor {
  public:
    explicit Descriptor(int fd) : fd_(fd) {}
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_ = -1;
};

// The file's bytes as a std::string or a std::vector<uint8_t>.
template <class Buffer>
Buffer read_capped(const std::string& path, uint64_t max_bytes, std::string_view what,
                   std::string_view limit_name) {
    const std::string who(what);
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    const Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) throw DataError("cannot open " + who + ": " + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0)
        throw DataError("cannot read " + who + ": " + std::strerror(errno));
    if (S_ISDIR(info.st_mode)) throw DataError("cannot read " + who + ": " + std::strerror(EISDIR));
    if (!S_ISREG(info.st_mode)) {
        throw DataError("cannot read " + who + ": it is " + kind_of(info.st_mode) +
                        ", not a regular file; give the path of a file");
    }
    const std::string limit = byte_size(max_bytes) + " limit for " + std::string(limit_name);
    const auto size = static_cast<uint64_t>(info.st_size);
    if (size > max_bytes) {
        // Exact counts where rounding would make the two look equal ("2.0 GiB, more than 2.0 GiB").
        const bool same = byte_size(size) == byte_size(max_bytes);
        throw DataError("cannot read " + who + ": it is " +
                        (same ? std::to_string(size) + " bytes" : byte_size(size)) +
                        ", more than the " + limit);
    }
    // Regular files ignore O_NONBLOCK; clear it anyway so reads behave as usual.
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);

    Buffer out(static_cast<size_t>(size), 0);
    size_t filled = 0;
    const auto read_some = [&](void* into, size_t count) -> size_t {
        for (;;) {
            const ssize_t got = ::read(fd.get(), into, count);
            if (got >= 0) return static_cast<size_t>(got);
            if (errno != EINTR) throw DataError("cannot read " + who + ": " + std::strerror(errno));
        }
    };
    // A piece at a time, so that a load cancelled while a big file comes off a slow disk stops
    // within a piece.
    constexpr size_t kPieceBytes = size_t{64} << 20;
    while (filled < out.size()) {
        throw_if_cancelled();
        const size_t got = read_some(out.data() + filled, std::min(kPieceBytes, out.size() - filled));
        if (got == 0) break;  // it shrank while being read
        filled += got;
    }
    out.resize(filled);
    // It may also have grown (or, like files in /proc, report size 0): read on to its end, never
    // past the limit.
    char chunk[1 << 16];
    for (;;) {
        const size_t got = read_some(chunk, sizeof chunk);
        if (got == 0) break;
        if (out.size() + got > max_bytes) {
            throw DataError("cannot read " + who + ": it holds more than the " + limit);
        }
        out.insert(out.end(), chunk, chunk + got);
    }
    return out;
}

}  // namespace

std::string read_file_text(const std::string& path, uint64_t max_bytes, std::string_view what,
                           std::string_view limit_name) {
    return read_capped<std::string>(path, max_bytes, what, limit_name);
}

std::vector<uint8_t> read_file_binary(const std::string& path, uint64_t max_bytes,
                                      std::string_view what, std::string_view limit_name) {
    return read_capped<std::vector<uint8_t>>(path, max_bytes, what, limit_name);
}

std::optional<FileHead> regular_file_head(const std::string& path, std::size_t bytes) {
    // O_NONBLOCK: a FIFO is never waited on (fstat below turns it away).
    const Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    struct stat info {};
    if (fd.get() < 0 || ::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
    FileHead head;
    head.file_bytes = static_cast<uint64_t>(info.st_size);
    head.bytes.resize(static_cast<std::size_t>(std::min<uint64_t>(bytes, head.file_bytes)));
    std::size_t got = 0;
    while (got < head.bytes.size()) {
        const ssize_t n = ::read(fd.get(), head.bytes.data() + got, head.bytes.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::nullopt;
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    head.bytes.resize(got);
    return head;
}

std::optional<bool> regular_file_starts_with(const std::string& path, std::string_view prefix) {
    const std::optional<FileHead> head = regular_file_head(path, prefix.size());
    if (!head) return std::nullopt;
    return head->bytes == prefix;
}

std::optional<FileIdentity> file_identity(const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) return std::nullopt;
    return FileIdentity{static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
}

namespace {

std::string os_reason(int error) {
    std::string text = std::strerror(error);
    if (error == ENOSPC || error == EDQUOT) text += " (the disk is full)";
    return text;
}

}  // namespace

namespace {

// Where a new file for `path` goes: a symbolic link is followed (the file it names is replaced, the
// link stays); a folder, a device, a FIFO or a socket is refused, since renaming over it would
// replace it (as root, /dev/null itself).
std::string write_target(const std::string& path, const std::string& who) {
    std::string target = path;
    for (int links = 0;; ++links) {
        struct stat info {};
        if (::lstat(target.c_str(), &info) != 0) return target;  // nothing there yet
        if (S_ISREG(info.st_mode)) return target;
        if (S_ISDIR(info.st_mode)) throw DataError("cannot write " + who + ": it is a folder; give the path of a file in it");
        if (!S_ISLNK(info.st_mode)) {
            throw DataError("cannot write " + who + ": it is " + kind_of(info.st_mode) +
                            ", not a regular file; give the path of a file");
        }
        if (links == 40) throw DataError("cannot write " + who + ": " + std::strerror(ELOOP));
        std::error_code error;
        const std::filesystem::path next = std::filesystem::read_symlink(target, error);
        if (error) throw DataError("cannot write " + who + ": " + error.message());
        target = next.is_absolute() ? next.string() : (std::filesystem::path(target).parent_path() / next).string();
    }
}

}  // namespace

void write_file_atomically(const std::string& requested_path, std::string_view bytes, std::string_view what) {
    const std::string who = std::string(what) + " '" + requested_path + "'";
    const std::string path = write_target(requested_path, who);
    const std::string temporary = path + ".partial-" + std::to_string(::getpid());
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw DataError("cannot write " + who + ": " + os_reason(errno));
    auto give_up = [&](int error) {
        ::close(fd);
        ::unlink(temporary.c_str());
        throw DataError("cannot write " + who + ": " + os_reason(error));
    };
    std::size_t written = 0;
    while (written < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) give_up(n < 0 ? errno : ENOSPC);
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) give_up(errno);
    if (::close(fd) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw DataError("cannot write " + who + ": " + os_reason(error));
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw DataError("cannot write " + who + ": " + os_reason(error));
    }
    // The rename itself is only durable once the folder's entry is on the disk.
    const std::size_t slash = path.find_last_of('/');
    const std::string folder = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder_fd >= 0) {
        ::fsync(folder_fd);
        ::close(folder_fd);
    }
}

}  // namespace mirrorlab
