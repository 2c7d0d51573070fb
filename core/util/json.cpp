#include "core/util/json.h"
#include "core/util/file.h"
#include "core/util/utf8.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>
#include <unordered_map>

namespace mirrorlab::json {

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if it is not one. Follows
// Unicode table 3-7, so overlong forms, encoded surrogates and code points past U+10FFFF are
// all rejected, as RFC 8259 requires UTF-8 proper.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
    auto byte = [&](std::size_t k) -> unsigned {
        return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100u;
    };
    auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
    const unsigned b0 = byte(0);
    if (b0 < 0x80) return 1;
    if (in(b0, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
    if (in(b0, 0xE0, 0xEF)) {
        const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
        const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
        return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
    }
    if (in(b0, 0xF0, 0xF4)) {
        const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
        const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
        return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4
                                                                                       : 0;
    }
    return 0;
}

std::uint32_t utf8_decode(std::string_view s, std::size_t i, std::size_t len) {
    auto b = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i + k])); };
    switch (len) {
        case 1: return b(0);
        case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
        case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        default:
            return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) |
                   (b(3) & 0x3F);
    }
}


std::string hex(std::uint32_t v, int digits) {
    static constexpr char kDigits[] = "0123456789ABCDEF";
    std::string s(static_cast<std::size_t>(digits), '0');
    for (int i = digits - 1; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = kDigits[v & 0xF];
    return s;
}

// Keys and literals end up inside error messages; control characters there would garble a
// terminal or a log line.
std::string quoted_for_message(std::string_view s) {
    constexpr std::size_t kMaxShown = 60;
    std::string out = "'";
    for (std::size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) {
            out += "\\u" + hex(c, 4);
        } else {
            out += static_cast<char>(c);
        }
    }
    if (s.size() > kMaxShown) out += "...";
    return out + "'";
}

std::string number_to_string(double d) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, res.ptr);
}

class Parser {
public:
    Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {
        // RFC 8259 section 8.1 lets parsers ignore a BOM; Windows editors like to add one.
        if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
    }

    Value parse_document() {
        skip_whitespace();
        if (at_end()) fail(pos_, "empty input, expected a JSON value");
        Value v = parse_value();
        skip_whitespace();
        if (!at_end()) fail(pos_, "expected end of input after the JSON value, found " + describe(pos_));
        return v;
    }

private:
    struct Position {
        std::size_t line = 1;
        std::size_t column = 1;
    };

    // Computed only when reporting, so the happy path does not track lines.
    Position position_of(std::size_t offset) const {
        Position p;
        for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
            const auto c = static_cast<unsigned char>(text_[i]);
            if (c == '\n') {
                ++p.line;
                p.column = 1;
            } else if ((c & 0xC0) != 0x80) {  // continuation bytes belong to the previous character
                ++p.column;
            }
        }
        return p;
    }

    [[noreturn]] void fail(std::size_t offset, std::string reason) const {
        const Position p = position_of(offset);
        throw ParseError(std::string(source_), p.line, p.column, std::move(reason));
    }

    std::string describe(std::size_t offset) const {
        if (offset >= text_.size()) return "end of input";
        const auto c = static_cast<unsigned char>(text_[offset]);
        if (c == '\'') return "\"'\"";
        if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
        if (c < 0x80) return "control character U+" + hex(c, 4);
        const std::size_t len = utf8_sequence_length(text_, offset);
        if (len == 0) return "invalid UTF-8 byte 0x" + hex(c, 2);
        return "'" + std::string(text_.substr(offset, len)) + "' (U+" +
               hex(utf8_decode(text_, offset, len), 4) + ")";
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }
    bool peek_digit() const { return !at_end() && text_[pos_] >= '0' && text_[pos_] <= '9'; }

    void skip_whitespace() {
        while (!at_end()) {
            const char c = text_[pos_];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++pos_;
            } else if (c == '/' && pos_ + 1 < text_.size() &&
                       (text_[pos_ + 1] == '/' || text_[pos_ + 1] == '*')) {
                // Named explicitly because "found '/'" would leave people guessing.
                fail(pos_, "comments are not allowed in JSON");
            } else {
                return;
            }
        }
    }

    void enter_container(std::size_t open) {
        if (++depth_ > max_depth)
            fail(open, "arrays and objects nested deeper than " + std::to_string(max_depth) +
                           " levels");
    }

    Value parse_value() {
        if (at_end()) fail(pos_, "expected a JSON value, found end of input");
        const char c = text_[pos_];
        switch (c) {
            case '{': return parse_object();
            case '[': return parse_array();
            case '"': return Value(parse_string());
            case '-': return parse_number();
            case '+':
            case '.':
                fail(pos_, "a number must start with a digit or '-', found " + describe(pos_));
            case '\'':
                fail(pos_, "strings must be enclosed in double quotes, found " + describe(pos_));
            default: break;
        }
        if (c >= '0' && c <= '9') return parse_number();
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return parse_literal();
        fail(pos_, "expected a JSON value, found " + describe(pos_));
    }

    Value parse_literal() {
        const std::size_t start = pos_;
        while (!at_end()) {
            const char c = text_[pos_];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_'))
                break;
            ++pos_;
        }
        const std::string_view word = text_.substr(start, pos_ - start);
        if (word == "true") return Value(true);
        if (word == "false") return Value(false);
        if (word == "null") return Value(nullptr);
        if (word == "NaN" || word == "Infinity")
            fail(start, "NaN and Infinity are not valid JSON numbers");
        fail(start, "invalid literal " + quoted_for_message(word) +
                        ", expected a JSON value (true, false, null, a number, a string, an "
                        "array or an object)");
    }

    Value parse_number() {
        const std::size_t start = pos_;
        if (peek() == '-') ++pos_;
        if (!peek_digit()) fail(pos_, "expected a digit after '-', found " + describe(pos_));
        if (peek() == '0') {
            ++pos_;
            if (peek_digit()) fail(start, "leading zeros are not allowed in numbers");
        } else {
            while (peek_digit()) ++pos_;
        }
        bool integral = true;
        if (peek() == '.') {
            integral = false;
            ++pos_;
            if (!peek_digit())
                fail(pos_, "expected a digit after the decimal point, found " + describe(pos_));
            while (peek_digit()) ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!peek_digit()) fail(pos_, "expected a digit in the exponent, found " + describe(pos_));
            while (peek_digit()) ++pos_;
        }
        const std::string_view literal = text_.substr(start, pos_ - start);
        const char* first = literal.data();
        const char* last = first + literal.size();
        if (integral) {
            std::int64_t i = 0;
            const auto res = std::from_chars(first, last, i);
            if (res.ec == std::errc{} && res.ptr == last) return Value(i);
            // Too big for int64: still a valid JSON number, kept as the nearest double.
        }
        double d = 0.0;
        const auto res = std::from_chars(first, last, d);
        if (res.ec == std::errc::result_out_of_range) {
            if (magnitude_overflows(literal))
                fail(start, "number " + quoted_for_message(literal) + " is too large for a double");
            d = literal.front() == '-' ? -0.0 : 0.0;  // underflow: the nearest double is zero
        } else if (res.ec != std::errc{} || res.ptr != last) {
            fail(start, "invalid number " + quoted_for_message(literal));
        }
        return Value(d);
    }

    // from_chars reports overflow and underflow alike; the decimal exponent of the leading
    // significant digit tells them apart.
    static bool magnitude_overflows(std::string_view literal) {
        std::size_t i = literal.front() == '-' ? 1 : 0;
        long int_digits = 0;         // significant digits before the point
        long zeros_after_point = 0;  // zeros between the point and the first nonzero digit
        bool seen_point = false;
        bool found = false;
        for (; i < literal.size() && literal[i] != 'e' && literal[i] != 'E'; ++i) {
            const char c = literal[i];
            if (c == '.') {
                seen_point = true;
                continue;
            }
            if (c != '0') found = true;
            if (!seen_point && found) ++int_digits;
            if (seen_point && !found) ++zeros_after_point;
        }
        const long magnitude = int_digits > 0 ? int_digits - 1 : -(zeros_after_point + 1);
        long exponent = 0;
        if (i < literal.size()) {
            ++i;
            bool negative = false;
            if (literal[i] == '+' || literal[i] == '-') negative = literal[i++] == '-';
            for (; i < literal.size(); ++i) {
                // Saturate: anything this far out is out of range either way.
                if (exponent < 1'000'000) exponent = exponent * 10 + (literal[i] - '0');
            }
            if (negative) exponent = -exponent;
        }
        return magnitude + exponent > 0;
    }

    std::uint32_t parse_hex4(std::size_t escape_start) {
        if (text_.size() - pos_ < 4) fail(escape_start, "expected 4 hex digits after '\\u'");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = text_[pos_ + static_cast<std::size_t>(k)];
            std::uint32_t digit = 0;
            if (c >= '0' && c <= '9') digit = static_cast<std::uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') digit = static_cast<std::uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') digit = static_cast<std::uint32_t>(c - 'A' + 10);
            else fail(escape_start, "expected 4 hex digits after '\\u'");
            v = v * 16 + digit;
        }
        pos_ += 4;
        return v;
    }

    void parse_escape(std::string& out, std::size_t open) {
        const std::size_t escape_start = pos_;
        ++pos_;  // the backslash
        if (at_end()) fail(open, "unterminated string, missing closing '\"'");
        const char c = text_[pos_++];
        switch (c) {
            case '"': out += '"'; return;
            case '\\': out += '\\'; return;
            case '/': out += '/'; return;
            case 'b': out += '\b'; return;
            case 'f': out += '\f'; return;
            case 'n': out += '\n'; return;
            case 'r': out += '\r'; return;
            case 't': out += '\t'; return;
            case 'u': break;
            default:
                fail(escape_start, "invalid escape sequence in string: backslash followed by " +
                                       describe(pos_ - 1));
        }
        std::uint32_t cp = parse_hex4(escape_start);
        const std::string written = "\\u" + std::string(text_.substr(escape_start + 2, 4));
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            fail(escape_start, "unpaired low surrogate " + written + " in string");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u")
                fail(escape_start, "unpaired high surrogate " + written +
                                       " in string (must be followed by a low surrogate "
                                       "\\uDC00-\\uDFFF)");
            const std::size_t low_start = pos_;
            pos_ += 2;
            const std::uint32_t low = parse_hex4(low_start);
            if (low < 0xDC00 || low > 0xDFFF)
                fail(escape_start, "unpaired high surrogate " + written +
                                       " in string (must be followed by a low surrogate "
                                       "\\uDC00-\\uDFFF)");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
    }

    std::string parse_string() {
        const std::size_t open = pos_;
        ++pos_;
        std::string out;
        for (;;) {
            if (at_end()) fail(open, "unterminated string, missing closing '\"'");
            const auto c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c == '\\') {
                parse_escape(out, open);
            } else if (c < 0x20) {
                std::string why = "control character U+" + hex(c, 4) + " must be escaped in a string";
                // A raw line break inside a string is nearly always a forgotten closing quote.
                if (c == '\n' || c == '\r') why += " (missing closing '\"'?)";
                fail(pos_, std::move(why));
            } else if (c < 0x80) {
                const std::size_t run = pos_;
                while (!at_end()) {
                    const auto d = static_cast<unsigned char>(text_[pos_]);
                    if (d == '"' || d == '\\' || d < 0x20 || d >= 0x80) break;
                    ++pos_;
                }
                out.append(text_.substr(run, pos_ - run));
            } else {
                const std::size_t len = utf8_sequence_length(text_, pos_);
                if (len == 0)
                    fail(pos_, "invalid UTF-8 in string (byte 0x" + hex(c, 2) +
                                   "); JSON text must be UTF-8");
                out.append(text_.substr(pos_, len));
                pos_ += len;
            }
        }
    }

    Value parse_array() {
        enter_container(pos_);
        ++pos_;
        Value result = Value::array();
        Value::Array& elements = result.as_array();
        skip_whitespace();
        if (peek() == ']') {
            ++pos_;
            --depth_;
            return result;
        }
        for (;;) {
            skip_whitespace();
            elements.push_back(parse_value());
            skip_whitespace();
            if (peek() == ']') {
                ++pos_;
                break;
            }
            if (peek() != ',')
                fail(pos_, "expected ',' or ']' after array element, found " + describe(pos_));
            const std::size_t comma = pos_++;
            skip_whitespace();
            if (peek() == ']') fail(comma, "trailing comma before ']' is not allowed");
        }
        --depth_;
        return result;
    }

    Value parse_object() {
        enter_container(pos_);
        ++pos_;
        Value result = Value::object();
        Value::Object& members = result.as_object();
        // Offsets of the keys, parallel to `members`, so a duplicate can point at the first.
        std::vector<std::size_t> key_offsets;
        // Linear search is fastest for the small objects configs are made of; big ones switch
        // to a hash index so parsing stays linear.
        constexpr std::size_t kIndexFrom = 16;
        std::unordered_map<std::string, std::size_t> index;
        skip_whitespace();
        if (peek() == '}') {
            ++pos_;
            --depth_;
            return result;
        }
        for (bool first = true;; first = false) {
            skip_whitespace();
            if (peek() != '"') {
                if (peek() == '\'')
                    fail(pos_, "object keys must be enclosed in double quotes, found " + describe(pos_));
                fail(pos_, std::string(first ? "expected a string key or '}'" : "expected a string key") +
                               " in object, found " + describe(pos_));
            }
            const std::size_t key_at = pos_;
            std::string key = parse_string();
            std::size_t previous = key_offsets.size();
            if (members.size() < kIndexFrom) {
                for (std::size_t k = 0; k < members.size(); ++k)
                    if (members[k].first == key) previous = k;
            } else {
                if (index.empty())
                    for (std::size_t k = 0; k < members.size(); ++k) index.emplace(members[k].first, k);
                if (auto it = index.find(key); it != index.end()) previous = it->second;
            }
            if (previous != key_offsets.size()) {
                const Position first_at = position_of(key_offsets[previous]);
                fail(key_at, "duplicate key " + quoted_for_message(key) +
                                 " in object (first defined at line " +
                                 std::to_string(first_at.line) + ", column " +
                                 std::to_string(first_at.column) + ")");
            }
            skip_whitespace();
            if (peek() != ':')
                fail(pos_, "expected ':' after object key, found " + describe(pos_));
            ++pos_;
            skip_whitespace();
            Value v = parse_value();
            if (!index.empty()) index.emplace(key, members.size());
            key_offsets.push_back(key_at);
            members.emplace_back(std::move(key), std::move(v));
            skip_whitespace();
            if (peek() == '}') {
                ++pos_;
                break;
            }
            if (peek() != ',')
                fail(pos_, "expected ',' or '}' after object member, found " + describe(pos_));
            const std::size_t comma = pos_++;
            skip_whitespace();
            if (peek() == '}') fail(comma, "trailing comma before '}' is not allowed");
        }
        --depth_;
        return result;
    }

    std::string_view text_;
    std::string_view source_;
    std::size_t pos_ = 0;
    int depth_ = 0;
};

void write_string(std::string& out, std::string_view s, InvalidUtf8 invalid) {
    out += '"';
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    out += "\\u" + hex(c, 4);
                } else if (c < 0x80) {
                    out += static_cast<char>(c);
                } else {
                    const std::size_t len = utf8_sequence_length(s, i);
                    if (len == 0 && invalid == InvalidUtf8::Replace) {
                        out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER, one per bad byte
                        ++i;
                        continue;
                    }
                    if (len == 0)
                        throw Error("cannot write JSON: string " + quoted_for_message(s) +
                                    " is not valid UTF-8 (byte 0x" + hex(c, 2) + " at offset " +
                                    std::to_string(i) + ")");
                    out.append(s.substr(i, len));
                    i += len;
                    continue;
                }
        }
        ++i;
    }
    out += '"';
}

void write_number(std::string& out, double d) {
    if (!std::isfinite(d)) {
        out += "null";  // JSON has no NaN or infinity; null is what browsers write too
        return;
    }
    std::string s = number_to_string(d);
    // Keeps 3.0 a double after a round trip instead of turning it into the integer 3.
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    out += s;
}

void newline(std::string& out, int indent, int level) {
    out += '\n';
    out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(level), ' ');
}

void write_value(std::string& out, const Value& v, int indent, int level, InvalidUtf8 invalid) {
    switch (v.type()) {
        case Value::Type::Null: out += "null"; return;
        case Value::Type::Boolean: out += v.as_bool() ? "true" : "false"; return;
        case Value::Type::Number:
            if (v.is_integer()) {
                out += std::to_string(v.as_int64());
            } else {
                write_number(out, v.as_double());
            }
            return;
        case Value::Type::String: write_string(out, v.as_string(), invalid); return;
        case Value::Type::Array: {
            const auto& elements = v.as_array();
            out += '[';
            for (std::size_t i = 0; i < elements.size(); ++i) {
                if (i > 0) out += ',';
                if (indent >= 0) newline(out, indent, level + 1);
                write_value(out, elements[i], indent, level + 1, invalid);
            }
            if (indent >= 0 && !elements.empty()) newline(out, indent, level);
            out += ']';
            return;
        }
        case Value::Type::Object: {
            const auto& members = v.as_object();
            out += '{';
            for (std::size_t i = 0; i < members.size(); ++i) {
                if (i > 0) out += ',';
                if (indent >= 0) newline(out, indent, level + 1);
                write_string(out, members[i].first, invalid);
                out += indent >= 0 ? ": " : ":";
                write_value(out, members[i].second, indent, level + 1, invalid);
            }
            if (indent >= 0 && !members.empty()) newline(out, indent, level);
            out += '}';
            return;
        }
    }
}

const char* with_article(Value::Type t) {
    switch (t) {
        case Value::Type::Null: return "null";
        case Value::Type::Boolean: return "a boolean";
        case Value::Type::Number: return "a number";
        case Value::Type::String: return "a string";
        case Value::Type::Array: return "an array";
        case Value::Type::Object: return "an object";
    }
    return "an unknown value";
}

bool numbers_equal(const Value& a, const Value& b) {
    if (a.is_integer() && b.is_integer()) return a.as_int64() == b.as_int64();
    if (!a.is_integer() && !b.is_integer()) return a.as_double() == b.as_double();
    // Mixed: compare exactly rather than through double, which would make 2^53 == 2^53 + 1.
    const Value& i = a.is_integer() ? a : b;
    const double d = (a.is_integer() ? b : a).as_double();
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || std::trunc(d) != d)
        return false;
    return static_cast<std::int64_t>(d) == i.as_int64();
}

}  // namespace

ParseError::ParseError(std::string source_name, std::size_t line_number, std::size_t column_number,
                       std::string why)
    : Error(source_name + ":" + std::to_string(line_number) + ":" + std::to_string(column_number) +
            ": " + why),
      source(std::move(source_name)),
      line(line_number),
      column(column_number),
      reason(std::move(why)) {}

Value::Type Value::type() const noexcept {
    switch (data_.index()) {
        case 0: return Type::Null;
        case 1: return Type::Boolean;
        case 2:
        case 3: return Type::Number;
        case 4: return Type::String;
        case 5: return Type::Array;
        default: return Type::Object;
    }
}

const char* Value::type_name(Type t) noexcept {
    switch (t) {
        case Type::Null: return "null";
        case Type::Boolean: return "boolean";
        case Type::Number: return "number";
        case Type::String: return "string";
        case Type::Array: return "array";
        case Type::Object: return "object";
    }
    return "unknown";
}

void Value::throw_unsigned_out_of_range(unsigned long long i) {
    throw Error("integer " + std::to_string(i) + " does not fit in a JSON int64");
}

void Value::throw_type_error(const char* expected) const {
    throw Error(std::string("expected ") + expected + ", got " + with_article(type()));
}

bool Value::as_bool() const {
    if (const bool* b = std::get_if<bool>(&data_)) return *b;
    throw_type_error("a boolean");
}

double Value::as_double() const {
    if (const double* d = std::get_if<double>(&data_)) return *d;
    if (const std::int64_t* i = std::get_if<std::int64_t>(&data_)) return static_cast<double>(*i);
    throw_type_error("a number");
}

std::int64_t Value::as_int64() const {
    if (const std::int64_t* i = std::get_if<std::int64_t>(&data_)) return *i;
    if (const double* d = std::get_if<double>(&data_)) {
        if (std::trunc(*d) != *d)  // also catches NaN and infinities
            throw Error("expected an integer, got the non-integral number " + number_to_string(*d));
        // 2^63 is exactly representable; anything at or above it is not an int64.
        if (!(*d >= -9223372036854775808.0 && *d < 9223372036854775808.0))
            throw Error("number " + number_to_string(*d) + " is out of range for a 64-bit integer");
        return static_cast<std::int64_t>(*d);
    }
    throw_type_error("an integer");
}

const std::string& Value::as_string() const {
    if (const std::string* s = std::get_if<std::string>(&data_)) return *s;
    throw_type_error("a string");
}

const Value::Array& Value::as_array() const {
    if (const Array* a = std::get_if<Array>(&data_)) return *a;
    throw_type_error("an array");
}

Value::Array& Value::as_array() {
    if (Array* a = std::get_if<Array>(&data_)) return *a;
    throw_type_error("an array");
}

const Value::Object& Value::as_object() const {
    if (const Object* o = std::get_if<Object>(&data_)) return *o;
    throw_type_error("an object");
}

Value::Object& Value::as_object() {
    if (Object* o = std::get_if<Object>(&data_)) return *o;
    throw_type_error("an object");
}

const Value* Value::find(std::string_view key) const {
    for (const Member& m : as_object())
        if (m.first == key) return &m.second;
    return nullptr;
}

Value* Value::find(std::string_view key) {
    return const_cast<Value*>(std::as_const(*this).find(key));
}

Value& Value::operator[](std::string_view key) {
    if (is_null()) data_ = Object{};
    if (Value* v = find(key)) return *v;
    Object& members = as_object();
    members.emplace_back(std::string(key), Value());
    return members.back().second;
}

const Value& Value::at(std::string_view key) const {
    if (const Value* v = find(key)) return *v;
    throw Error("missing key " + quoted_for_message(key));
}

Value& Value::at(std::string_view key) {
    return const_cast<Value&>(std::as_const(*this).at(key));
}

void Value::set(std::string key, Value v) {
    if (is_null()) data_ = Object{};
    if (Value* existing = find(key)) {
        *existing = std::move(v);
        return;
    }
    as_object().emplace_back(std::move(key), std::move(v));
}

void Value::push_back(Value v) {
    if (is_null()) data_ = Array{};
    as_array().push_back(std::move(v));
}

std::size_t Value::size() const {
    if (const Array* a = std::get_if<Array>(&data_)) return a->size();
    if (const Object* o = std::get_if<Object>(&data_)) return o->size();
    throw_type_error("an array or an object");
}

const Value& Value::operator[](std::size_t index) const {
    const Array& elements = as_array();
    if (index >= elements.size())
        throw Error("index " + std::to_string(index) + " is out of range for an array of " +
                    std::to_string(elements.size()) + " elements");
    return elements[index];
}

Value& Value::operator[](std::size_t index) {
    return const_cast<Value&>(std::as_const(*this)[index]);
}

bool operator==(const Value& a, const Value& b) {
    if (a.type() != b.type()) return false;
    switch (a.type()) {
        case Value::Type::Null: return true;
        case Value::Type::Boolean: return a.as_bool() == b.as_bool();
        case Value::Type::Number: return numbers_equal(a, b);
        case Value::Type::String: return a.as_string() == b.as_string();
        case Value::Type::Array: return a.as_array() == b.as_array();
        case Value::Type::Object: {
            const auto& am = a.as_object();
            if (am.size() != b.as_object().size()) return false;
            for (const auto& [key, value] : am) {
                const Value* other = b.find(key);
                if (other == nullptr || !(*other == value)) return false;
            }
            return true;
        }
    }
    return false;
}

Value parse(std::string_view text, std::string_view source_name) {
    return Parser(text, source_name).parse_document();
}

Value parse_file(const std::string& path) {
    return parse(read_file_text(path, kMaxJsonFileBytes, "JSON file '" + path + "'", "a JSON file"),
                 path);
}

std::string dump(const Value& value, int indent, InvalidUtf8 invalid) {
    std::string out;
    write_value(out, value, indent, 0, invalid);
    return out;
}

}  // namespace mirrorlab::json
