#pragma once
// A strict JSON (RFC 8259) value for model descriptions, configs and checkpoints' metadata.
// nlohmann-json reads and writes the text (only json.cpp includes it); on top of it we refuse
// duplicate keys and deep nesting and say what is wrong in words. Strict on purpose: a typo in a
// hand-edited model file should be an error pointing at the line and column, never a silently
// different model.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/util/error.h"

namespace mirrorlab::json {

// Arrays and objects nested deeper than this are rejected, so hostile or broken input cannot
// overflow the stack of the recursive parser.
inline constexpr int max_depth = 256;

// A text that is not valid JSON. `what()` reads "model.json:3:14: expected ',' or '}' after
// object member, found 'x'"; the pieces are kept so a UI can highlight the spot.
class ParseError : public Error {
public:
    ParseError(std::string source_name, std::size_t line_number, std::size_t column_number,
               std::string why);

    std::string source;  // file name or "<json>"
    std::size_t line;    // 1-based
    std::size_t column;  // 1-based, in characters (UTF-8 code points), tabs count as one
    std::string reason;  // the message without the "source:line:column: " prefix
};

class Value {
public:
    using Array = std::vector<Value>;
    using Member = std::pair<std::string, Value>;
    // Members keep the order they were parsed or inserted in, so files we write stay
    // diff-friendly. Keys are unique as long as the object is changed through Value's own
    // helpers; the mutable as_object() leaves that to the caller.
    using Object = std::vector<Member>;

    enum class Type { Null, Boolean, Number, String, Array, Object };

    Value() noexcept = default;  // null
    Value(std::nullptr_t) noexcept {}
    Value(bool b) : data_(b) {}
    // One template instead of int/long/long long/size_t overloads, which would be ambiguous
    // for whichever of them int64_t is not. Characters are excluded so 'a' is not 97.
    template <std::integral T>
        requires(!std::same_as<T, bool> && !std::same_as<T, char> &&
                 !std::same_as<T, wchar_t> && !std::same_as<T, char8_t> &&
                 !std::same_as<T, char16_t> && !std::same_as<T, char32_t>)
    Value(T i) : data_(checked_int64(i)) {}
    Value(double d) : data_(d) {}
    Value(const char* s) : data_(std::string(s)) {}
    Value(std::string s) : data_(std::move(s)) {}
    Value(std::string_view s) : data_(std::string(s)) {}
    explicit Value(Array a) : data_(std::move(a)) {}
    explicit Value(Object o) : data_(std::move(o)) {}

    static Value array() { return Value(Array{}); }
    static Value object() { return Value(Object{}); }

    Type type() const noexcept;
    // "object", "array", "string", "number", "boolean" or "null", for error messages.
    const char* type_name() const noexcept { return type_name(type()); }
    static const char* type_name(Type t) noexcept;

    bool is_null() const noexcept { return std::holds_alternative<std::nullptr_t>(data_); }
    bool is_bool() const noexcept { return std::holds_alternative<bool>(data_); }
    bool is_number() const noexcept { return is_integer() || std::holds_alternative<double>(data_); }
    // True for numbers held exactly as int64: integer literals (no fraction, no exponent) that
    // fit, and values constructed from integers. 1.0, 1e2 and 2^63 are numbers, not integers.
    bool is_integer() const noexcept { return std::holds_alternative<std::int64_t>(data_); }
    bool is_string() const noexcept { return std::holds_alternative<std::string>(data_); }
    bool is_array() const noexcept { return std::holds_alternative<Array>(data_); }
    bool is_object() const noexcept { return std::holds_alternative<Object>(data_); }

    // Each throws mirrorlab::Error ("expected a string, got a number") on the wrong type.
    bool as_bool() const;
    double as_double() const;  // any number; int64 beyond 2^53 rounds
    // Integers, and doubles with an integral value in range; anything else throws.
    std::int64_t as_int64() const;
    const std::string& as_string() const;
    const Array& as_array() const;
    Array& as_array();
    const Object& as_object() const;
    Object& as_object();

    // Object helpers. They throw on a non-object, except that operator[] and set() turn a null
    // into an empty object first, so `Value v; v["a"] = 1;` builds one.
    const Value* find(std::string_view key) const;
    Value* find(std::string_view key);
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    Value& operator[](std::string_view key);       // inserts null at the end if missing
    const Value& at(std::string_view key) const;   // throws Error "missing key 'x'"
    Value& at(std::string_view key);
    void set(std::string key, Value v);            // replaces in place, or appends

    // Array helpers. push_back turns a null into an empty array first; indexing is checked.
    void push_back(Value v);
    std::size_t size() const;  // elements of an array or members of an object
    const Value& operator[](std::size_t index) const;
    Value& operator[](std::size_t index);

    // JSON equality: numbers by value (1 == 1.0, int64 compared exactly), objects regardless of
    // member order, arrays element by element.
    friend bool operator==(const Value& a, const Value& b);

private:
    template <std::integral T>
    static std::int64_t checked_int64(T i) {
        if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
            if (i > static_cast<T>(std::numeric_limits<std::int64_t>::max()))
                throw_unsigned_out_of_range(static_cast<unsigned long long>(i));
        }
        return static_cast<std::int64_t>(i);
    }
    [[noreturn]] static void throw_unsigned_out_of_range(unsigned long long i);
    [[noreturn]] void throw_type_error(const char* expected) const;

    std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> data_;
};

// Parses one JSON text (a leading UTF-8 byte order mark is ignored). Throws ParseError whose
// message starts with "source_name:line:column: ".
Value parse(std::string_view text, std::string_view source_name = "<json>");

// Reads and parses a file; parse errors name `path`. A file that cannot be opened or read, is not
// a regular file (/dev/zero, a FIFO) or is larger than kMaxJsonFileBytes (64 MiB) throws
// mirrorlab::DataError naming the path and the reason (see core/util/file.h).
Value parse_file(const std::string& path);

// Compact when indent < 0, otherwise one member or element per line indented by `indent`
// spaces per level. Integers are written exactly, doubles in the shortest form that reads
// back to the same bits (always with a '.' or exponent, so they stay doubles), NaN and
// infinities as null. A string that is not valid UTF-8 throws Error (Refuse), since the result
// would not be JSON that parse() accepts, or has each bad byte written as U+FFFD (Replace: for
// reports, whose text quotes file names and contents as found and must never fail to go out).
enum class InvalidUtf8 { Refuse, Replace };
std::string dump(const Value& value, int indent = -1, InvalidUtf8 invalid = InvalidUtf8::Refuse);

}  // namespace mirrorlab::json
