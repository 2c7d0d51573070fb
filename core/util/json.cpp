// JSON through nlohmann-json (Debian: nlohmann-json3-dev, header-only). nlohmann stays inside this
// file: json.h is core's own Value, so nothing else (the CUDA plugin's nvcc compile included) sees it.
#include "core/util/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/util/file.h"

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


// --- Reading: nlohmann's SAX parser does the lexing and parsing and builds our Value. ---------
// What is ours: the limits (depth, duplicate keys), and error messages that say what is wrong in
// words a person editing a model file understands, at the line and column of the mistake.

using Library = nlohmann::ordered_json;

// Hands the parser the text a byte at a time and counts them, so the builder knows where the
// parser is when it meets a key or opens a container (nlohmann reports positions only with
// errors). nlohmann reads a token's last byte just before it reports the token.
class CountingIterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    CountingIterator(const char* at, std::size_t* consumed) : at_(at), consumed_(consumed) {}
    reference operator*() const { return *at_; }
    CountingIterator& operator++() {
        ++at_;
        ++*consumed_;
        return *this;
    }
    CountingIterator operator++(int) {
        CountingIterator before = *this;
        ++*this;
        return before;
    }
    bool operator==(const CountingIterator& other) const { return at_ == other.at_; }

private:
    const char* at_;
    std::size_t* consumed_;
};

struct Position {
    std::size_t line = 1;
    std::size_t column = 1;
};

// Computed only when reporting, so the happy path does not track lines.
Position position_of(std::string_view text, std::size_t offset) {
    Position p;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n') {
            ++p.line;
            p.column = 1;
        } else if ((c & 0xC0) != 0x80) {  // continuation bytes belong to the previous character
            ++p.column;
        }
    }
    return p;
}

// The character at `offset` as a message shows it: "'x'", "end of input", "'é' (U+00E9)", ...
std::string describe(std::string_view text, std::size_t offset) {
    if (offset >= text.size()) return "end of input";
    const auto c = static_cast<unsigned char>(text[offset]);
    if (c == '\'') return "\"'\"";
    if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
    if (c < 0x80) return "control character U+" + hex(c, 4);
    const std::size_t len = utf8_sequence_length(text, offset);
    if (len == 0) return "invalid UTF-8 byte 0x" + hex(c, 2);
    return "'" + std::string(text.substr(offset, len)) + "' (U+" + hex(utf8_decode(text, offset, len), 4) + ")";
}

struct Failure {
    std::size_t offset = 0;
    std::string reason;
};

// Where nlohmann's current token starts. `token` is the token as nlohmann shows it (control
// characters written as "<U+000A>", eight characters for one byte) and ends at `end`. nlohmann
// restarts it at each string and number only, so only those tokens can be measured this way.
std::size_t token_start(std::string_view text, std::size_t end, const std::string& token) {
    std::size_t shown = 0;
    std::size_t start = std::min(end, text.size());
    while (start > 0 && shown < token.size()) {
        --start;
        shown += static_cast<unsigned char>(text[start]) <= 0x1F ? 8 : 1;
    }
    return start;
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::size_t previous_non_space(std::string_view text, std::size_t offset) {
    while (offset > 0) {
        const char c = text[--offset];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return offset;
    }
    return std::string_view::npos;
}

// The "\u" escape that a surrogate complaint is about: the nearest before `offset`, or the nearest
// high surrogate (D800-DBFF) when `high`.
std::size_t escape_before(std::string_view text, std::size_t offset, bool high) {
    std::size_t at = offset;
    while (at > 0 && (at = text.rfind("\\u", at - 1)) != std::string_view::npos) {
        if (!high) return at;
        const std::string_view digits = text.substr(at + 2, 2);
        if (digits.size() == 2 && (digits[0] == 'D' || digits[0] == 'd') &&
            std::string_view("89abAB").find(digits[1]) != std::string_view::npos) {
            return at;
        }
    }
    return offset;
}

// nlohmann's lexer found a bad string or number; `bad` is the byte it stopped at.
Failure lexical_failure(std::string_view text, std::size_t bad, const std::string& complaint, std::size_t start) {
    const auto found = [&] { return describe(text, bad); };
    if (complaint.starts_with("invalid string: missing closing quote") ||
        (complaint.starts_with("invalid string: forbidden character after backslash") && bad >= text.size())) {
        return {start, "unterminated string, missing closing '\"'"};
    }
    if (complaint.starts_with("invalid string: control character")) {
        const auto c = static_cast<unsigned char>(text[bad]);
        return {bad, "control character U+" + hex(c, 4) + " must be escaped in a string" +
                         // A raw line break inside a string is nearly always a forgotten closing quote.
                         (c == '\n' || c == '\r' ? " (missing closing '\"'?)" : "")};
    }
    if (complaint.starts_with("invalid string: ill-formed UTF-8")) {
        std::size_t at = start;
        while (at < bad && utf8_sequence_length(text, at) > 0) at += utf8_sequence_length(text, at);
        return {at, "invalid UTF-8 in string (byte 0x" + hex(static_cast<unsigned char>(text[at]), 2) +
                        "); JSON text must be UTF-8"};
    }
    if (complaint.starts_with("invalid string: forbidden character after backslash")) {
        return {bad - 1, "invalid escape sequence in string: backslash followed by " + found()};
    }
    if (complaint.starts_with("invalid string: '\\u' must be followed by 4 hex digits")) {
        return {escape_before(text, bad, false), "expected 4 hex digits after '\\u'"};
    }
    if (complaint.starts_with("invalid string: surrogate U+D800")) {
        const std::size_t at = escape_before(text, bad, true);
        return {at, "unpaired high surrogate " + std::string(text.substr(at, 6)) +
                        " in string (must be followed by a low surrogate \\uDC00-\\uDFFF)"};
    }
    if (complaint.starts_with("invalid string: surrogate U+DC00")) {
        const std::size_t at = escape_before(text, bad, false);
        return {at, "unpaired low surrogate " + std::string(text.substr(at, 6)) + " in string"};
    }
    if (complaint.starts_with("invalid number; expected digit after '-'")) {
        return {bad, "expected a digit after '-', found " + found()};
    }
    if (complaint.starts_with("invalid number; expected digit after '.'")) {
        return {bad, "expected a digit after the decimal point, found " + found()};
    }
    if (complaint.starts_with("invalid number")) return {bad, "expected a digit in the exponent, found " + found()};
    return {0, "expected a JSON value, found " + describe(text, 0)};  // "invalid BOM": a stray 0xEF first
}

// nlohmann's complaint, in pieces: "syntax error while parsing <context> - <detail>".
struct Complaint {
    std::string context;  // "value", "object key", "object separator", "array" or "object"
    std::string lexer;    // what the lexer said ("invalid literal", ...); empty: an unexpected token
    std::string token;    // the unexpected token's name ("number literal", "']'", ...)
    bool end_expected = false;  // a whole value was read and more followed
};

Complaint split(const std::string& message) {
    Complaint c;
    constexpr std::string_view kPrefix = "syntax error while parsing ";
    const std::size_t at = message.find(kPrefix);
    if (at == std::string::npos) return c;
    const std::size_t dash = message.find(" - ", at);
    c.context = message.substr(at + kPrefix.size(), dash - at - kPrefix.size());
    const std::string detail = dash == std::string::npos ? std::string() : message.substr(dash + 3);
    c.end_expected = detail.ends_with("; expected end of input");
    if (detail.starts_with("unexpected ")) {
        c.token = detail.substr(11, detail.find("; expected") - 11);
    } else {
        c.lexer = detail.substr(0, detail.find("; last read:"));
    }
    return c;
}

// Where the unexpected token begins.
std::size_t unexpected_token_at(std::string_view text, std::size_t end, const std::string& shown,
                                const std::string& token) {
    if (token == "number literal" || token == "string literal") return token_start(text, end, shown);
    if (token == "true literal" || token == "null literal") return end - std::min<std::size_t>(end, 4);
    if (token == "false literal") return end - std::min<std::size_t>(end, 5);
    return end > 0 ? end - 1 : 0;  // one character, or the end of input
}

// "[01]": nlohmann reads 0 and then another number.
bool after_leading_zero(std::string_view text, std::size_t at) {
    if (at == 0 || text[at - 1] != '0') return false;
    return at < 2 || std::string_view("0123456789.eE+").find(text[at - 2]) == std::string_view::npos;
}

// A literal nlohmann could not read (`word_start` is where its letters begin), or what a value
// cannot start with.
Failure bad_value(std::string_view text, std::size_t found, std::size_t word_start) {
    if (is_letter(text[word_start])) {
        std::size_t end = word_start;
        while (end < text.size() && (is_letter(text[end]) || (text[end] >= '0' && text[end] <= '9') || text[end] == '_')) {
            ++end;
        }
        const std::string_view word = text.substr(word_start, end - word_start);
        if (word == "NaN" || word == "Infinity") return {word_start, "NaN and Infinity are not valid JSON numbers"};
        return {word_start, "invalid literal " + quoted_for_message(word) +
                                ", expected a JSON value (true, false, null, a number, a string, an array or an "
                                "object)"};
    }
    const char c = text[found];
    if (c == '\'') return {found, "strings must be enclosed in double quotes, found " + describe(text, found)};
    if (c == '+' || c == '.') return {found, "a number must start with a digit or '-', found " + describe(text, found)};
    return {found, "expected a JSON value, found " + describe(text, found)};
}

Failure syntax_failure(std::string_view text, std::size_t end, const std::string& shown, const Complaint& c) {
    std::size_t found = c.lexer.empty() ? unexpected_token_at(text, end, shown, c.token) : end - 1;
    std::size_t word_start = found;
    if (!c.lexer.empty()) {
        while (word_start > 0 && is_letter(text[word_start - 1])) --word_start;
    }
    const bool in_word = word_start < found;  // "nul]", "truex": letters nlohmann began as a literal
    found = word_start;
    const std::string what = describe(text, found);
    if (found < text.size() && text[found] == '/' && found + 1 < text.size() &&
        (text[found + 1] == '/' || text[found + 1] == '*')) {
        return {found, "comments are not allowed in JSON"};  // "found '/'" would leave people guessing
    }
    const std::size_t before = previous_non_space(text, found);
    if (found < text.size() && (text[found] == ']' || text[found] == '}') && before != std::string_view::npos &&
        text[before] == ',' && (c.context == "object key" || (c.context == "value" && !c.end_expected))) {
        return {before, std::string("trailing comma before '") + text[found] + "' is not allowed"};
    }
    if (c.token == "number literal" && after_leading_zero(text, found)) {
        return {found - 1 - (found >= 2 && text[found - 2] == '-'), "leading zeros are not allowed in numbers"};
    }
    if (c.context == "object key") {
        if (found < text.size() && text[found] == '\'') return {found, "object keys must be enclosed in double quotes, found " + what};
        const bool first = before != std::string_view::npos && text[before] == '{';
        return {found, std::string(first ? "expected a string key or '}'" : "expected a string key") + " in object, found " + what};
    }
    if (in_word) return bad_value(text, found, word_start);
    if (c.end_expected) {
        if (before == std::string_view::npos && found >= text.size()) return {found, "empty input, expected a JSON value"};
        return {found, "expected end of input after the JSON value, found " + what};
    }
    if (c.context == "object separator") return {found, "expected ':' after object key, found " + what};
    if (c.context == "array") return {found, "expected ',' or ']' after array element, found " + what};
    if (c.context == "object") return {found, "expected ',' or '}' after object member, found " + what};
    if (found >= text.size() && before == std::string_view::npos) return {found, "empty input, expected a JSON value"};
    if (found >= text.size()) return {found, "expected a JSON value, found end of input"};
    return bad_value(text, found, word_start);
}

// Turns nlohmann's complaint (a byte count and a sentence about tokens) into ours.
Failure diagnose(std::string_view text, std::size_t position, const std::string& shown, const std::exception& error) {
    const std::size_t end = std::min(position, text.size() + 1);
    const std::string message = error.what();
    if (message.find("number overflow") != std::string::npos) {
        const std::size_t start = token_start(text, end, shown);
        return {start, "number " + quoted_for_message(text.substr(start, std::min(end, text.size()) - start)) +
                           " is too large for a double"};
    }
    const Complaint c = split(message);
    if (!c.lexer.empty() && c.lexer != "invalid literal") {
        return lexical_failure(text, std::min(end - 1, text.size()), c.lexer, token_start(text, end, shown));
    }
    return syntax_failure(text, end, shown, c);
}

// Builds a Value from nlohmann's SAX events, refusing what nlohmann accepts but we do not:
// duplicate keys, and nesting deeper than max_depth (so hostile input cannot exhaust the stack
// of whoever walks or destroys the tree recursively).
class Builder {
public:
    Builder(std::string_view text, const std::size_t& consumed) : text_(text), consumed_(consumed) {}

    bool null() { return put(Value()); }
    bool boolean(bool b) { return put(Value(b)); }
    bool number_integer(std::int64_t i) { return put(Value(i)); }
    // Past int64: still a JSON number, kept as the nearest double.
    bool number_unsigned(std::uint64_t u) {
        return put(u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                       ? Value(static_cast<std::int64_t>(u))
                       : Value(static_cast<double>(u)));
    }
    bool number_float(double d, const std::string&) { return put(Value(d)); }
    bool string(std::string& s) { return put(Value(std::move(s))); }
    bool binary(Library::binary_t&) { return false; }  // JSON text has none
    bool start_object(std::size_t) { return open(Value::object()); }
    bool start_array(std::size_t) { return open(Value::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(std::string& name);
    bool parse_error(std::size_t position, const std::string& shown, const nlohmann::detail::exception& error) {
        failure = diagnose(text_, position, shown, error);
        return false;
    }

    Value result;
    std::optional<Failure> failure;

private:
    struct Frame {
        Value* container = nullptr;
        std::string key;                       // the member whose value comes next
        std::vector<std::size_t> key_offsets;  // parallel to the members, for "first defined at"
        // Linear search is fastest for the small objects configs are made of; big ones switch to
        // a hash index so parsing stays linear.
        std::unordered_map<std::string, std::size_t> index;
    };

    Value* put(Value v);
    bool open(Value v);
    bool close() {
        frames_.pop_back();
        return true;
    }

    std::string_view text_;
    const std::size_t& consumed_;
    std::vector<Frame> frames_;
};

Value* Builder::put(Value v) {
    if (frames_.empty()) {
        result = std::move(v);
        return &result;
    }
    Frame& frame = frames_.back();
    if (frame.container->is_array()) {
        frame.container->as_array().push_back(std::move(v));
        return &frame.container->as_array().back();
    }
    Value::Object& members = frame.container->as_object();
    members.emplace_back(std::move(frame.key), std::move(v));
    return &members.back().second;
}

bool Builder::open(Value v) {
    if (frames_.size() >= static_cast<std::size_t>(max_depth)) {
        failure = Failure{consumed_ - 1, "arrays and objects nested deeper than " + std::to_string(max_depth) + " levels"};
        return false;
    }
    Value* container = put(std::move(v));
    frames_.push_back(Frame{container, {}, {}, {}});
    return true;
}

bool Builder::key(std::string& name) {
    // The key's closing quote was the last byte read; its opening quote is the nearest one before
    // that is not escaped (inside a string every other quote is).
    std::size_t at = consumed_ - 1;
    for (;;) {
        at = text_.rfind('"', at - 1);
        std::size_t backslashes = 0;
        while (backslashes < at && text_[at - 1 - backslashes] == '\\') ++backslashes;
        if (backslashes % 2 == 0) break;
    }
    Frame& frame = frames_.back();
    const Value::Object& members = frame.container->as_object();
    constexpr std::size_t kIndexFrom = 16;
    std::size_t previous = members.size();
    if (members.size() < kIndexFrom) {
        for (std::size_t k = 0; k < members.size(); ++k) {
            if (members[k].first == name) previous = k;
        }
    } else {
        if (frame.index.empty()) {
            for (std::size_t k = 0; k < members.size(); ++k) frame.index.emplace(members[k].first, k);
        }
        if (auto it = frame.index.find(name); it != frame.index.end()) previous = it->second;
        frame.index.emplace(name, members.size());
    }
    if (previous != members.size()) {
        const Position first = position_of(text_, frame.key_offsets[previous]);
        failure = Failure{at, "duplicate key " + quoted_for_message(name) + " in object (first defined at line " +
                                  std::to_string(first.line) + ", column " + std::to_string(first.column) + ")"};
        return false;
    }
    frame.key_offsets.push_back(at);
    frame.key = std::move(name);
    return true;
}

// --- Writing: our Value as nlohmann's, which nlohmann writes. --------------------------------

Library to_library(const Value& v) {
    switch (v.type()) {
        case Value::Type::Null: return nullptr;
        case Value::Type::Boolean: return v.as_bool();
        case Value::Type::Number: return v.is_integer() ? Library(v.as_int64()) : Library(v.as_double());
        case Value::Type::String: return v.as_string();
        case Value::Type::Array: {
            Library out = Library::array();
            for (const Value& element : v.as_array()) out.push_back(to_library(element));
            return out;
        }
        case Value::Type::Object: {
            Library out = Library::object();
            for (const auto& [key, member] : v.as_object()) out.emplace(key, to_library(member));
            return out;
        }
    }
    return nullptr;
}

std::size_t invalid_utf8_at(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t len = utf8_sequence_length(s, i);
        if (len == 0) return i;
        i += len;
    }
    return std::string_view::npos;
}

// The first string in `v`, key or value, that is not UTF-8; nullptr when there is none.
const std::string* invalid_utf8_string(const Value& v) {
    if (v.is_string()) return invalid_utf8_at(v.as_string()) != std::string_view::npos ? &v.as_string() : nullptr;
    if (v.is_array()) {
        for (const Value& element : v.as_array()) {
            if (const std::string* s = invalid_utf8_string(element)) return s;
        }
    }
    if (v.is_object()) {
        for (const auto& [key, member] : v.as_object()) {
            if (invalid_utf8_at(key) != std::string_view::npos) return &key;
            if (const std::string* s = invalid_utf8_string(member)) return s;
        }
    }
    return nullptr;
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
    // RFC 8259 section 8.1 lets parsers ignore a BOM; Windows editors like to add one.
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    // Windows' "Unicode" (UTF-16, with or without its byte-order mark) and UTF-32: every JSON text
    // starts with an ASCII character, so one of its first two bytes is 0 there. The parser would
    // name a byte 0xFF or a control character U+0000, which says nothing of the fix.
    if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF") ||
        (text.size() >= 2 && (text[0] == '\0' || text[1] == '\0'))) {
        throw ParseError(std::string(source_name), 1, 1,
                         "the text is UTF-16 or UTF-32, not UTF-8 as JSON files are; save it with the encoding UTF-8");
    }
    std::size_t consumed = 0;
    Builder builder(text, consumed);
    const CountingIterator first(text.data(), &consumed);
    const CountingIterator last(text.data() + text.size(), &consumed);
    if (!Library::sax_parse(first, last, &builder, Library::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false)) {
        const Failure failure = builder.failure.value_or(Failure{consumed, "not a JSON text"});
        const Position p = position_of(text, failure.offset);
        throw ParseError(std::string(source_name), p.line, p.column, failure.reason);
    }
    return std::move(builder.result);
}

Value parse_file(const std::string& path) {
    return parse(read_file_text(path, kMaxJsonFileBytes, "JSON file '" + path + "'", "a JSON file"),
                 path);
}

std::string dump(const Value& value, int indent, InvalidUtf8 invalid) {
    const auto on_invalid = invalid == InvalidUtf8::Replace ? Library::error_handler_t::replace
                                                            : Library::error_handler_t::strict;
    try {
        return to_library(value).dump(indent, ' ', /*ensure_ascii=*/false, on_invalid);
    } catch (const Library::type_error& error) {
        // nlohmann names the byte but not the string; a person needs both.
        const std::string* bad = invalid_utf8_string(value);
        if (bad == nullptr) throw Error(std::string("cannot write JSON: ") + error.what());
        const std::size_t at = invalid_utf8_at(*bad);
        throw Error("cannot write JSON: string " + quoted_for_message(*bad) + " is not valid UTF-8 (byte 0x" +
                    hex(static_cast<unsigned char>((*bad)[at]), 2) + " at offset " + std::to_string(at) + ")");
    }
}

}  // namespace mirrorlab::json
