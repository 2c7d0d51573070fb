// Decoders of the header messages that describe a dataset: its sizes, its type and where its
// values lie (hdf5_format.h). Every field is read through a Cursor bounded by the message.
#include "core/export/hdf5_format.h"

#include <algorithm>

namespace mirrorlab::hdf5::format {

namespace {
constexpr int kMaxRank = 32;  // H5S_MAX_RANK
}  // namespace

// IV.A.2.b. The element count, or none for a null dataspace.
std::optional<std::uint64_t> decode_dataspace(const Image& image, const Message& message, const std::string& path,
                                              std::vector<std::int64_t>& shape) {
    Cursor data = message_data(image, message, "the dataspace of " + quoted(path));
    const std::uint8_t version = data.u8();
    if (version != 1 && version != 2) image.unsupported("dataspace version " + std::to_string(version));
    const std::uint8_t rank = data.u8();
    data.u8();  // flags: whether maximum sizes follow the sizes; they do not change what is stored
    bool null_space = false;
    if (version == 1) {
        data.skip(5);
    } else {
        null_space = data.u8() == 2;
    }
    if (rank > kMaxRank) {
        image.corrupt("dataset " + quoted(path) + " has " + std::to_string(rank) + " dimensions (HDF5 allows " +
                      std::to_string(kMaxRank) + ")");
    }
    std::uint64_t count = 1;
    for (int i = 0; i < rank; ++i) {
        const std::uint64_t dim = data.length();
        if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / dim)) {
            image.corrupt("dataset " + quoted(path) + " has a dimension of " + std::to_string(dim) + " values");
        }
        count *= dim;
        shape.push_back(static_cast<std::int64_t>(dim));
    }
    if (null_space) return std::nullopt;
    return count;
}

// IV.A.2.d: numpy's name for the type, and what reading floats needs of it.
Datatype decode_datatype(const Image& image, const Message& message, const std::string& path) {
    Cursor data = message_data(image, message, "the datatype of " + quoted(path));
    const std::uint8_t class_and_version = data.u8();
    const int type_class = class_and_version & 0x0f;
    const int type_version = class_and_version >> 4;
    if (type_version < 1 || type_version > 5) {
        image.corrupt("the datatype of " + quoted(path) + " has version " + std::to_string(type_version));
    }
    const std::uint8_t bits0 = data.u8();
    const std::uint8_t bits1 = data.u8();
    data.u8();
    Datatype type;
    type.element_bytes = data.u32();
    type.big_endian = (bits0 & 0x01) != 0;
    const std::uint32_t size = type.element_bytes;
    if (type_class == 0) {  // fixed-point
        const std::uint16_t offset = data.u16();
        const std::uint16_t precision = data.u16();
        if ((size == 1 || size == 2 || size == 4 || size == 8) && offset == 0 && precision == size * 8) {
            type.name = std::string((bits0 & 0x08) ? "int" : "uint") + std::to_string(size * 8);
        }
    } else if (type_class == 1) {  // floating-point: only IEEE 754 half, single and double count as floats
        const std::uint16_t offset = data.u16();
        const std::uint16_t precision = data.u16();
        const std::uint8_t exponent_location = data.u8();
        const std::uint8_t exponent_bits = data.u8();
        const std::uint8_t mantissa_location = data.u8();
        const std::uint8_t mantissa_bits = data.u8();
        const std::uint32_t bias = data.u32();
        struct Ieee {
            std::uint32_t size, exponent_bits, mantissa_bits, bias;
        };
        for (const Ieee ieee : {Ieee{2, 5, 10, 15}, Ieee{4, 8, 23, 127}, Ieee{8, 11, 52, 1023}}) {
            if (size == ieee.size && offset == 0 && precision == size * 8 && mantissa_location == 0 &&
                mantissa_bits == ieee.mantissa_bits && exponent_location == ieee.mantissa_bits &&
                exponent_bits == ieee.exponent_bits && bias == ieee.bias && bits1 == size * 8 - 1 &&
                (bits0 & 0x40) == 0 && ((bits0 >> 4) & 0x03) == 2) {
                // bits1: the sign bit's place; 0x40: VAX order; bits 4-5: 2, the implied leading 1
                type.name = "float" + std::to_string(size * 8);
            }
        }
    } else if (type_class == 3 || (type_class == 9 && (bits0 & 0x0f) == 1)) {  // fixed or variable string
        type.name = "string";
    }
    return type;
}

// IV.A.2.i: where the values are.
void decode_layout(const Image& image, const Message& message, const std::string& path, DatasetStorage& storage) {
    Cursor data = message_data(image, message, "the data layout of " + quoted(path));
    const std::uint8_t version = data.u8();
    const std::string chunked =
        "is stored in chunks (HDF5's layout for compressed or resizable data); MirrorLab reads the contiguous and "
        "compact datasets Keras writes";
    auto contiguous = [&](std::uint64_t address, std::uint64_t size) {
        if (address == kUndefinedAddress) {
            storage.unreadable = "was never written (no values are stored)";
            return;
        }
        storage.offset = image.position_of(address, "the values of dataset " + quoted(path));
        storage.stored_bytes = size;
    };
    auto compact = [&](std::uint64_t size) {
        storage.offset = data.position();
        storage.stored_bytes = size;
        data.skip(size);
    };
    if (version == 1 || version == 2) {
        const std::uint8_t rank = data.u8();
        const std::uint8_t layout_class = data.u8();
        data.skip(5);
        const std::uint64_t address = layout_class != 0 ? data.address() : kUndefinedAddress;
        data.skip(std::uint64_t{4} * rank);  // sizes, cut to 32 bits
        if (layout_class == 0) {
            compact(data.u32());
        } else if (layout_class == 1) {
            // Versions 1 and 2 record no size: the values take what the dataspace needs, and
            // read_floats checks that against the end of the file.
            contiguous(address, std::numeric_limits<std::uint64_t>::max());
        } else if (layout_class == 2) {
            storage.unreadable = chunked;
        } else {
            image.corrupt("dataset " + quoted(path) + " has layout class " + std::to_string(layout_class));
        }
    } else if (version == 3 || version == 4) {
        const std::uint8_t layout_class = data.u8();
        if (layout_class == 0) {
            compact(data.u16());
        } else if (layout_class == 1) {
            const std::uint64_t address = data.address();
            contiguous(address, data.length());
        } else if (layout_class == 2) {
            storage.unreadable = chunked;
        } else if (layout_class == 3 && version == 4) {
            storage.unreadable = "is a virtual dataset (its values lie in other datasets or files)";
        } else {
            image.corrupt("dataset " + quoted(path) + " has layout class " + std::to_string(layout_class));
        }
    } else {
        image.unsupported("data layout version " + std::to_string(version) + " in dataset " + quoted(path));
    }
}

std::uint32_t checksum_lookup3(std::span<const std::uint8_t> bytes) {
    auto rotate = [](std::uint32_t x, int k) { return (x << k) | (x >> (32 - k)); };
    std::uint32_t a = 0xdeadbeefu + static_cast<std::uint32_t>(bytes.size());
    std::uint32_t b = a;
    std::uint32_t c = a;
    auto word = [&](std::size_t at, std::size_t available) {  // short words zero-padded
        return static_cast<std::uint32_t>(load_little_endian(bytes.data() + at, std::min<std::size_t>(available, 4)));
    };
    std::size_t at = 0;
    std::size_t left = bytes.size();
    while (left > 12) {
        a += word(at, 4);
        b += word(at + 4, 4);
        c += word(at + 8, 4);
        a -= c, a ^= rotate(c, 4), c += b;
        b -= a, b ^= rotate(a, 6), a += c;
        c -= b, c ^= rotate(b, 8), b += a;
        a -= c, a ^= rotate(c, 16), c += b;
        b -= a, b ^= rotate(a, 19), a += c;
        c -= b, c ^= rotate(b, 4), b += a;
        at += 12;
        left -= 12;
    }
    if (left == 0) return c;
    a += word(at, left);
    if (left > 4) b += word(at + 4, left - 4);
    if (left > 8) c += word(at + 8, left - 8);
    c ^= b, c -= rotate(b, 14);
    a ^= c, a -= rotate(c, 11);
    b ^= a, b -= rotate(a, 25);
    c ^= b, c -= rotate(b, 16);
    a ^= c, a -= rotate(c, 4);
    b ^= a, b -= rotate(a, 14);
    c ^= b, c -= rotate(b, 24);
    return c;
}

}  // namespace mirrorlab::hdf5::format
