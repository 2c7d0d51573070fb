#include "core/data/npy.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "core/data/pickle.h"
#include "core/data/zip_reader.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// The header dict as numpy writes it: str keys; values are str, True/False or a tuple of ints
// (Python 2 on some platforms wrote longs as "3L"). Nothing else is accepted.
class HeaderParser {
  public:
    HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

    void parse(NpyArray& out) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        skip_space();
        expect('{');
        for (;;) {
            skip_space();
            if (peek() == '}') break;
            const std::string key = string_literal();
            skip_space();
            expect(':');
            skip_space();
            if (key == "descr") {
                if (peek() == '[')
                    fail("has a structured dtype (a list 'descr'), which is not supported");
                out.descr = string_literal();
                have_descr = true;
            } else if (key == "fortran_order") {
                out.fortran_order = boolean();
                have_fortran = true;
            } else if (key == "shape") {
                out.shape = int_tuple();
                have_shape = true;
            } else {
                fail("has an unexpected key '" + key + "'");
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            skip_space();
            if (peek() != '}')
                fail("is malformed: expected ',' or '}' at position " + std::to_string(pos_));
        }
        ++pos_;
        skip_space();
        if (pos_ != s_.size()) fail("has text after the closing '}'");
        if (!have_descr || !have_fortran || !have_shape) {
            fail("lacks one of the keys 'descr', 'fortran_order' and 'shape'");
        }
    }

  private:
    [[noreturn]] void fail(const std::string& problem) const {
        throw DataError(source_ + ": .npy header " + problem);
    }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
            ++pos_;
    }
    void expect(char c) {
        if (peek() != c)
            fail(std::string("is malformed: expected '") + c + "' at position " +
                 std::to_string(pos_));
        ++pos_;
    }
    std::string string_literal() {
        const char quote = peek();
        if (quote != '\'' && quote != '"')
            fail("is malformed: expected a string at position " + std::to_string(pos_));
        ++pos_;
        std::string out;
        while (pos_ < s_.size() && s_[pos_] != quote) {
            if (s_[pos_] == '\\' || s_[pos_] == '\n')
                fail("has an escaped or multi-line string, which numpy never writes");
            out += s_[pos_++];
        }
        expect(quote);
        return out;
    }
    bool boolean() {
        if (s_.substr(pos_, 4) == "True") {
            pos_ += 4;
            return true;
        }
        if (s_.substr(pos_, 5) == "False") {
            pos_ += 5;
            return false;
        }
        fail("has a 'fortran_order' that is not True or False");
    }
    std::vector<int64_t> int_tuple() {
        expect('(');
        std::vector<int64_t> dims;
        for (;;) {
            skip_space();
            if (peek() == ')') break;
            if (peek() < '0' || peek() > '9')
                fail("has a 'shape' that is not a tuple of non-negative ints");
            int64_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                const int digit = peek() - '0';
                if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
                    fail("has a dimension that overflows");
                v = v * 10 + digit;
                ++pos_;
            }
            if (peek() == 'L') ++pos_;
            dims.push_back(v);
            if (dims.size() > 32) fail("has more than 32 dimensions");
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            skip_space();
            if (peek() != ')') fail("has a malformed 'shape'");
        }
        ++pos_;
        return dims;
    }

    std::string_view s_;
    const std::string& source_;
    size_t pos_ = 0;
};

void parse_descr(NpyArray& a) {
    const std::string& d = a.descr;
    auto bad = [&]() -> void {
        throw DataError(a.source + ": dtype '" + d +
                        "' is not supported (integer, bool, float or object arrays only)");
    };
    if (d.size() < 2) bad();
    const char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') bad();
    a.big_endian = order == '>';
    const char type = d[1];
    const std::string_view size = std::string_view(d).substr(2);
    if (type == 'O') {
        if (!size.empty() && size != "8" && size != "4") bad();
        a.kind = NpyKind::Object;
        a.item_bytes = 0;
        return;
    }
    if (size.size() != 1) bad();
    a.item_bytes = size[0] - '0';
    switch (type) {
        case 'b':
            a.kind = NpyKind::Bool;
            if (a.item_bytes != 1) bad();
            break;
        case 'i':
        case 'u':
            a.kind = type == 'i' ? NpyKind::Int : NpyKind::UInt;
            if (a.item_bytes != 1 && a.item_bytes != 2 && a.item_bytes != 4 && a.item_bytes != 8)
                bad();
            break;
        case 'f':
            a.kind = NpyKind::Float;
            if (a.item_bytes != 4 && a.item_bytes != 8) bad();
            break;
        default:
            bad();
    }
}

}  // namespace

uint64_t NpyArray::element_count() const {
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return n;
}

std::vector<int64_t> NpyArray::to_int64() const {
    if (kind != NpyKind::Bool && kind != NpyKind::Int && kind != NpyKind::UInt) {
        throw DataError(source + ": holds '" + descr + "' values, expected integers");
    }
    const uint64_t n = element_count();
    std::vector<int64_t> out(static_cast<size_t>(n));
    const auto bytes = static_cast<size_t>(item_bytes);
    for (size_t i = 0; i < out.size(); ++i) {
        const uint8_t* p = data.data() + i * bytes;
        uint64_t v = 0;
        for (size_t b = 0; b < bytes; ++b) {
            const uint8_t byte = big_endian ? p[b] : p[bytes - 1 - b];
            v = (v << 8) | byte;
        }
        if (kind == NpyKind::Int && bytes < 8 && (v >> (bytes * 8 - 1)) != 0) {
            v |= ~uint64_t{0} << (bytes * 8);  // sign-extend
        }
        if (kind == NpyKind::UInt && bytes == 8 && (v >> 63) != 0) {
            throw DataError(source + ": value " + std::to_string(v) + " at index " +
                            std::to_string(i) + " does not fit in int64");
        }
        out[i] = static_cast<int64_t>(v);
    }
    return out;
}

NpyArray parse_npy(std::span<const uint8_t> bytes, const std::string& source_name) {
    NpyArray a;
    a.source = source_name;
    auto fail = [&](const std::string& problem) -> void {
        throw DataError(source_name + ": " + problem);
    };
    if (bytes.empty()) fail("is empty (0 bytes), not a .npy array");
    if (bytes.size() < 6 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
        fail("is not a .npy array (wrong magic; expected \\x93NUMPY)");
    }
    if (bytes.size() < 10) fail("is truncated inside the .npy preamble");
    const int major = bytes[6], minor = bytes[7];
    if (major < 1 || major > 3 || minor != 0) {
        fail(".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
             " is not supported (1.0, 2.0 and 3.0 are)");
    }
    a.version_major = major;
    uint64_t header_len = 0, header_start = 0;
    if (major == 1) {
        header_len = static_cast<uint64_t>(bytes[8] | (bytes[9] << 8));
        header_start = 10;
    } else {
        if (bytes.size() < 12) fail("is truncated inside the .npy preamble");
        header_len = static_cast<uint64_t>(bytes[8]) | (static_cast<uint64_t>(bytes[9]) << 8) |
                     (static_cast<uint64_t>(bytes[10]) << 16) |
                     (static_cast<uint64_t>(bytes[11]) << 24);
        header_start = 12;
    }
    if (header_len > bytes.size() - header_start) {
        fail(".npy header is truncated (expected " + std::to_string(header_len) + " bytes, found " +
             std::to_string(bytes.size() - header_start) + ")");
    }
    const std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_start),
                                  header_len);
    HeaderParser(header, source_name).parse(a);
    parse_descr(a);

    uint64_t count = 1;
    for (int64_t d : a.shape) {
        const auto dim = static_cast<uint64_t>(d);
        if (dim != 0 && count > std::numeric_limits<uint64_t>::max() / dim)
            fail("has a shape whose size overflows");
        count *= dim;
    }
    const std::span<const uint8_t> payload =
        bytes.subspan(static_cast<size_t>(header_start + header_len));
    if (a.kind == NpyKind::Object) {
        PickledObjectArray p = unpickle_object_array(payload, source_name);
        if (p.items.size() != count) {
            fail("header says " + std::to_string(count) + " elements but the pickle holds " +
                 std::to_string(p.items.size()));
        }
        a.objects = std::move(p.items);
        a.pickle_protocol = p.protocol;
        return a;
    }
    const auto item = static_cast<uint64_t>(a.item_bytes);
    if (count > payload.size() / item) {
        // Compare before multiplying: count * item could overflow.
        const std::string expected = count > std::numeric_limits<uint64_t>::max() / item
                                         ? std::string("more than 2^64")
                                         : std::to_string(count * item);
        fail("data is truncated (expected " + expected + " bytes, found " +
             std::to_string(payload.size()) + ")");
    }
    a.data.assign(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(count * item));
    return a;
}

NpyArray read_npy_file(const std::string& path) {
    return parse_npy(read_archive_file(path), path);
}

}  // namespace mirrorlab
