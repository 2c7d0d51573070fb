#pragma once
// HDF5's on-disk structures as hdf5_reader.cpp and hdf5_messages.cpp read them: the file's bytes
// with the sizes its superblock chose (Image), a bounds-checked little-endian reader over part of
// them (Cursor), and the decoders of the header messages that describe a dataset. Internal to
// core/export; section numbers are the HDF5 File Format Specification 3.0's.
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/export/hdf5_file.h"
#include "core/util/error.h"
#include "core/util/little_endian.h"

namespace mirrorlab::hdf5::format {

constexpr std::uint64_t kUndefinedAddress = std::numeric_limits<std::uint64_t>::max();

// Header message types (IV.A.2).
enum : std::uint16_t {
    kDataspaceMessage = 0x01,
    kLinkInfoMessage = 0x02,
    kDatatypeMessage = 0x03,
    kLinkMessage = 0x06,
    kExternalFilesMessage = 0x07,
    kLayoutMessage = 0x08,
    kContinuationMessage = 0x10,
    kSymbolTableMessage = 0x11,
};
constexpr std::uint8_t kMessageIsShared = 0x02;

inline std::string at_byte(std::uint64_t position) { return " (at byte " + std::to_string(position) + ")"; }

// The checksum of the version-2 structures (superblock 2-3, OHDR, OCHK): Bob Jenkins' lookup3
// hash of the bytes, initial value 0, as HDF5 computes it.
std::uint32_t checksum_lookup3(std::span<const std::uint8_t> bytes);

// The file's bytes, the sizes its superblock chose, and the errors every reader of them raises.
class Image {
public:
    Image(std::span<const std::uint8_t> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

    std::span<const std::uint8_t> bytes() const { return bytes_; }
    int offset_bytes = 8;
    int length_bytes = 8;
    std::uint64_t base_address = 0;

    [[noreturn]] void corrupt(const std::string& what) const { fail(" is corrupt: " + what); }
    [[noreturn]] void fail(const std::string& text) const { throw DataError(source_ + text); }
    [[noreturn]] void unsupported(const std::string& what) const {
        throw DataError(source_ + " uses a part of HDF5 that MirrorLab does not read: " + what +
                        ". Keras and h5py do not write it by default; save the weights again with Keras");
    }
    // The image position of a file address (addresses count from the base address).
    std::uint64_t position_of(std::uint64_t address, const std::string& what) const {
        if (address == kUndefinedAddress) corrupt(what + " has no address");
        if (address > bytes_.size() || base_address > bytes_.size() - address) {
            corrupt(what + " lies past the end of the file (address " + std::to_string(address) + ", the file has " +
                    std::to_string(bytes_.size()) + " bytes)");
        }
        return base_address + address;
    }

private:
    std::span<const std::uint8_t> bytes_;
    const std::string& source_;
};

// Reads little-endian fields from [position, end) of the image; running past `end` is corruption
// of `what`.
class Cursor {
public:
    Cursor(const Image& image, std::uint64_t begin, std::uint64_t size, std::string what)
        : image_(&image), position_(begin), what_(std::move(what)) {
        if (begin > image.bytes().size() || size > image.bytes().size() - begin) {
            image.corrupt(what_ + " runs past the end of the file (" + std::to_string(size) + " bytes at byte " +
                          std::to_string(begin) + ", the file has " + std::to_string(image.bytes().size()) + ")");
        }
        end_ = begin + size;
    }
    // From a file address to the end of the file.
    static Cursor at_address(const Image& image, std::uint64_t address, const std::string& what) {
        const std::uint64_t position = image.position_of(address, what);
        return Cursor(image, position, image.bytes().size() - position, what);
    }

    std::uint64_t position() const { return position_; }
    std::uint64_t remaining() const { return end_ - position_; }
    const std::string& what() const { return what_; }

    std::uint64_t unsigned_bytes(std::uint64_t count) {  // at most 8 bytes count; more are skipped
        need(count);
        const std::uint64_t value = load_little_endian(image_->bytes().data() + position_, count);
        position_ += count;
        return value;
    }
    std::uint8_t u8() { return static_cast<std::uint8_t>(unsigned_bytes(1)); }
    std::uint16_t u16() { return static_cast<std::uint16_t>(unsigned_bytes(2)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(unsigned_bytes(4)); }
    // An address: all bits set is HDF5's "undefined".
    std::uint64_t address() {
        const int bytes = image_->offset_bytes;
        const std::uint64_t value = unsigned_bytes(static_cast<std::uint64_t>(bytes));
        const std::uint64_t all_ones = bytes == 8 ? kUndefinedAddress : (std::uint64_t{1} << (8 * bytes)) - 1;
        return value == all_ones ? kUndefinedAddress : value;
    }
    std::uint64_t length() { return unsigned_bytes(static_cast<std::uint64_t>(image_->length_bytes)); }
    void skip(std::uint64_t count) {
        need(count);
        position_ += count;
    }
    std::span<const std::uint8_t> take(std::uint64_t count) {
        need(count);
        const auto view = image_->bytes().subspan(position_, count);
        position_ += count;
        return view;
    }
    void signature(const char (&expected)[5]) {
        const auto found = take(4);
        if (std::memcmp(found.data(), expected, 4) != 0) {
            image_->corrupt(what_ + " does not start with its signature \"" + expected + "\"" + at_byte(position_ - 4));
        }
    }
    // The checksum that follows [begin, here) matches it; else `what` is corrupt.
    void checksum(std::uint64_t begin) {
        const std::uint64_t end = position_;
        const std::uint32_t stored = static_cast<std::uint32_t>(unsigned_bytes(4));
        if (stored != checksum_lookup3(image_->bytes().subspan(begin, end - begin))) {
            image_->corrupt(what_ + " fails its checksum" + at_byte(end));
        }
    }
    // The next `size` bytes as a cursor of their own, skipped here.
    Cursor sub(std::uint64_t size, std::string what) {
        need(size);
        Cursor inner(*image_, position_, size, std::move(what));
        position_ += size;
        return inner;
    }

private:
    void need(std::uint64_t count) const {
        if (count > remaining()) {
            image_->corrupt(what_ + " ends early" + at_byte(position_) + ": " + std::to_string(count) +
                            " more bytes expected, " + std::to_string(remaining()) + " left");
        }
    }

    const Image* image_;
    std::uint64_t position_;
    std::uint64_t end_ = 0;
    std::string what_;
};

inline std::string quoted(const std::string& path) {
    return path.empty() ? std::string("the root group") : "'" + path + "'";
}
inline std::string group_name(const std::string& path) { return path.empty() ? quoted(path) : "group " + quoted(path); }

struct Message {
    std::uint16_t type = 0;
    std::uint8_t flags = 0;
    std::uint64_t position = 0;  // of its data in the image
    std::uint64_t size = 0;
};

inline Cursor message_data(const Image& image, const Message& message, const std::string& what) {
    return Cursor(image, message.position, message.size, what);
}

// Numpy's name for a dataset's type ("float32", "int64", "string", "other") and what reading
// floats needs of it.
struct Datatype {
    std::string name = "other";
    std::uint32_t element_bytes = 0;
    bool big_endian = false;
};

// Dense link storage (IV.A.2.c's fractal heap and name index): the group's link messages, to decode
// as compact ones are. `visited` holds every block and node read so far in the file: none may be
// reached twice. Past `max_links` links it stops, returning max_links + 1 (the caller's limit).
std::vector<Message> dense_link_messages(const Image& image, std::uint64_t heap_address,
                                         std::uint64_t name_index_address, const std::string& path,
                                         std::set<std::uint64_t>& visited, std::size_t max_links);

// IV.A.2.b: the dataspace's sizes into `shape`; the element count, or none for a null dataspace.
std::optional<std::uint64_t> decode_dataspace(const Image& image, const Message& message, const std::string& path,
                                              std::vector<std::int64_t>& shape);
// IV.A.2.d
Datatype decode_datatype(const Image& image, const Message& message, const std::string& path);
// IV.A.2.i: where the values are, or why they cannot be read (storage.unreadable).
void decode_layout(const Image& image, const Message& message, const std::string& path, DatasetStorage& storage);

}  // namespace mirrorlab::hdf5::format
