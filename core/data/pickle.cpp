#include "core/data/pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "core/util/error.h"

namespace mirrorlab {

namespace {

// Python's names for every pickle opcode, so a refused one is named in the error. Long because it
// is a table: one case per opcode, in pickletools' order.
const char* opcode_name(uint8_t op) {
    switch (op) {
        case '(':
            return "MARK";
        case '.':
            return "STOP";
        case '0':
            return "POP";
        case '1':
            return "POP_MARK";
        case '2':
            return "DUP";
        case 'F':
            return "FLOAT";
        case 'I':
            return "INT";
        case 'J':
            return "BININT";
        case 'K':
            return "BININT1";
        case 'L':
            return "LONG";
        case 'M':
            return "BININT2";
        case 'N':
            return "NONE";
        case 'P':
            return "PERSID";
        case 'Q':
            return "BINPERSID";
        case 'R':
            return "REDUCE";
        case 'S':
            return "STRING";
        case 'T':
            return "BINSTRING";
        case 'U':
            return "SHORT_BINSTRING";
        case 'V':
            return "UNICODE";
        case 'X':
            return "BINUNICODE";
        case 'a':
            return "APPEND";
        case 'b':
            return "BUILD";
        case 'c':
            return "GLOBAL";
        case 'd':
            return "DICT";
        case '}':
            return "EMPTY_DICT";
        case 'e':
            return "APPENDS";
        case 'g':
            return "GET";
        case 'h':
            return "BINGET";
        case 'i':
            return "INST";
        case 'j':
            return "LONG_BINGET";
        case 'l':
            return "LIST";
        case ']':
            return "EMPTY_LIST";
        case 'o':
            return "OBJ";
        case 'p':
            return "PUT";
        case 'q':
            return "BINPUT";
        case 'r':
            return "LONG_BINPUT";
        case 's':
            return "SETITEM";
        case 't':
            return "TUPLE";
        case ')':
            return "EMPTY_TUPLE";
        case 'u':
            return "SETITEMS";
        case 'G':
            return "BINFLOAT";
        case 'B':
            return "BINBYTES";
        case 'C':
            return "SHORT_BINBYTES";
        case 0x80:
            return "PROTO";
        case 0x81:
            return "NEWOBJ";
        case 0x82:
            return "EXT1";
        case 0x83:
            return "EXT2";
        case 0x84:
            return "EXT4";
        case 0x85:
            return "TUPLE1";
        case 0x86:
            return "TUPLE2";
        case 0x87:
            return "TUPLE3";
        case 0x88:
            return "NEWTRUE";
        case 0x89:
            return "NEWFALSE";
        case 0x8a:
            return "LONG1";
        case 0x8b:
            return "LONG4";
        case 0x8c:
            return "SHORT_BINUNICODE";
        case 0x8d:
            return "BINUNICODE8";
        case 0x8e:
            return "BINBYTES8";
        case 0x8f:
            return "EMPTY_SET";
        case 0x90:
            return "ADDITEMS";
        case 0x91:
            return "FROZENSET";
        case 0x92:
            return "NEWOBJ_EX";
        case 0x93:
            return "STACK_GLOBAL";
        case 0x94:
            return "MEMOIZE";
        case 0x95:
            return "FRAME";
        case 0x96:
            return "BYTEARRAY8";
        case 0x97:
            return "NEXT_BUFFER";
        case 0x98:
            return "READONLY_BUFFER";
        default:
            return nullptr;
    }
}

std::string describe_opcode(uint8_t op) {
    char buf[48];
    const char* name = opcode_name(op);
    if (name == nullptr) {
        std::snprintf(buf, sizeof buf, "0x%02x (not a pickle opcode)", op);
    } else if (op >= 0x20 && op < 0x7f) {
        std::snprintf(buf, sizeof buf, "%s ('%c')", name, static_cast<char>(op));
    } else {
        std::snprintf(buf, sizeof buf, "%s (0x%02x)", name, op);
    }
    return buf;
}

// Text from the file, made safe and short for an error message.
std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 80)) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    if (s.size() > 80) out += "...";
    return out;
}

enum class Global { Invalid = 0, Reconstruct, Ndarray, Dtype, CodecsEncode };

struct Text {
    std::string value;
    bool unicode = false;  // str in Python 3; Python 2's str and bytes are byte strings
};

// A Python list as numpy's pickle holds it: either ints (one element of the object array) or
// lists of ints (the array's data). A list put into another list or a tuple is frozen: pickle
// writes a list's items before using it, so a later append means something else is going on.
struct List {
    std::vector<int64_t> ints;
    std::vector<std::shared_ptr<List>> lists;
    bool frozen = false;
};

struct Tuple;

struct Dtype {
    std::string descr;
    bool built = false;
};

struct Array {
    bool built = false;
    std::vector<int64_t> shape;
    bool fortran_order = false;
    std::vector<std::vector<int64_t>> items;
};

struct None {};

// Every alternative is cheap to copy (memo gets), and none can hold a Value that holds it back,
// so there are no cycles and destruction never recurses deeply.
using Value = std::variant<None, bool, int64_t, std::shared_ptr<const Text>, std::shared_ptr<List>,
                           std::shared_ptr<const Tuple>, Global, std::shared_ptr<Dtype>,
                           std::shared_ptr<Array>>;

struct Tuple {
    std::vector<Value> items;
    int depth = 1;
};

constexpr int kMaxTupleDepth = 4;

const char* kind_name(const Value& v) {
    switch (v.index()) {
        case 0:
            return "None";
        case 1:
            return "a bool";
        case 2:
            return "an int";
        case 3:
            return std::get<3>(v)->unicode ? "a str" : "a byte string";
        case 4:
            return "a list";
        case 5:
            return "a tuple";
        case 6:
            return "a numpy global";
        case 7:
            return "a numpy dtype";
        case 8:
            return "a numpy array";
        default:
            return "a value";
    }
}

class Machine {
  public:
    Machine(std::span<const uint8_t> bytes, const std::string& source)
        : in_(bytes), source_(source) {}

    PickledObjectArray run();

  private:
    [[noreturn]] void fail(const std::string& problem) const {
        throw DataError(source_ + ": " + problem);
    }
    [[noreturn]] void fail_here(const std::string& problem) const {
        throw DataError(source_ + ": pickle " + problem + " (opcode " + describe_opcode(op_) +
                        " at offset " + std::to_string(op_pos_) + ")");
    }

    const uint8_t* take(uint64_t n) {
        if (in_.size() - pos_ < n) {
            fail("pickle is truncated inside opcode " + describe_opcode(op_) + " at offset " +
                 std::to_string(op_pos_) + " (needs " + std::to_string(n) + " more bytes, " +
                 std::to_string(in_.size() - pos_) + " left)");
        }
        const uint8_t* p = in_.data() + pos_;
        pos_ += n;
        return p;
    }
    uint64_t take_le(int n) {
        const uint8_t* p = take(static_cast<uint64_t>(n));
        uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
        return v;
    }
    std::string_view take_line() {
        const uint8_t* start = in_.data() + pos_;
        const void* nl = std::memchr(start, '\n', in_.size() - pos_);
        if (nl == nullptr) fail_here("text argument has no end of line (truncated)");
        const auto n = static_cast<size_t>(static_cast<const uint8_t*>(nl) - start);
        pos_ += n + 1;
        return {reinterpret_cast<const char*>(start), n};
    }
    std::shared_ptr<const Text> take_text(uint64_t n, bool unicode) {
        const uint8_t* p = take(n);
        return std::make_shared<const Text>(
            Text{std::string(reinterpret_cast<const char*>(p), n), unicode});
    }

    size_t frame_base() const { return marks_.empty() ? 0 : marks_.back(); }
    void push(Value v) { stack_.push_back(std::move(v)); }
    Value pop() {
        if (stack_.size() <= frame_base()) fail_here("stack underflow");
        Value v = std::move(stack_.back());
        stack_.pop_back();
        return v;
    }
    Value& top() {
        if (stack_.size() <= frame_base()) fail_here("stack underflow");
        return stack_.back();
    }
    std::vector<Value> pop_mark() {
        if (marks_.empty()) fail_here("has no MARK to pop to");
        const size_t base = marks_.back();
        marks_.pop_back();
        std::vector<Value> items(
            std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(base)),
            std::make_move_iterator(stack_.end()));
        stack_.resize(base);
        return items;
    }

    void push_int(int64_t v) { push(Value(v)); }
    int64_t decode_long(const uint8_t* p, uint64_t n);
    void push_tuple(std::vector<Value> items);
    void append(const std::shared_ptr<List>& list, Value item);
    void push_global(std::string_view module, std::string_view name);
    void reduce();
    void build();
    void memo_put(uint64_t index);
    void memo_get(uint64_t index);

    std::span<const uint8_t> in_;
    const std::string& source_;
    uint64_t pos_ = 0;
    uint64_t op_pos_ = 0;
    uint8_t op_ = 0;
    int protocol_ = 0;
    std::vector<Value> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<uint64_t, Value> memo_;
    uint64_t output_ints_ = 0;
};

int64_t Machine::decode_long(const uint8_t* p, uint64_t n) {
    // Little-endian two's complement, any length; it must fit in 64 bits.
    if (n == 0) return 0;
    const bool negative = (p[n - 1] & 0x80) != 0;
    uint64_t v = negative ? ~uint64_t{0} : 0;
    for (uint64_t i = n; i-- > 0;) {
        if (i >= 8) {
            if (p[i] != (negative ? 0xff : 0x00))
                fail_here("holds an integer that does not fit in 64 bits");
            continue;
        }
        v = (v << 8) | p[i];
    }
    // A 9+ byte encoding whose 64-bit part flips sign is out of range too (e.g. 2^63).
    if (n > 8 && ((v >> 63) != 0) != negative)
        fail_here("holds an integer that does not fit in 64 bits");
    return static_cast<int64_t>(v);
}

void Machine::push_tuple(std::vector<Value> items) {
    auto t = std::make_shared<Tuple>();
    for (const Value& v : items) {
        if (const auto* inner = std::get_if<std::shared_ptr<const Tuple>>(&v)) {
            t->depth = std::max(t->depth, (*inner)->depth + 1);
        } else if (const auto* list = std::get_if<std::shared_ptr<List>>(&v)) {
            (*list)->frozen = true;
        }
    }
    if (t->depth > kMaxTupleDepth) fail_here("nests tuples deeper than numpy writes");
    t->items = std::move(items);
    push(Value(std::shared_ptr<const Tuple>(std::move(t))));
}

void Machine::append(const std::shared_ptr<List>& list, Value item) {
    if (list->frozen)
        fail_here("appends to a list after storing it elsewhere (not what numpy writes)");
    if (const auto* i = std::get_if<int64_t>(&item)) {
        if (!list->lists.empty()) fail_here("mixes ints and lists in one list");
        list->ints.push_back(*i);
        return;
    }
    if (const auto* inner = std::get_if<std::shared_ptr<List>>(&item)) {
        if (inner->get() == list.get()) fail_here("appends a list to itself");
        if (!list->ints.empty()) fail_here("mixes ints and lists in one list");
        if (!(*inner)->lists.empty())
            fail_here("nests lists deeper than an object array of lists of ints");
        (*inner)->frozen = true;
        list->lists.push_back(*inner);
        return;
    }
    fail_here(std::string("appends ") + kind_name(item) +
              " to a list; only ints and lists of ints are accepted");
}

void Machine::push_global(std::string_view module, std::string_view name) {
    Global g = Global::Invalid;
    if ((module == "numpy.core.multiarray" || module == "numpy._core.multiarray") &&
        name == "_reconstruct") {
        g = Global::Reconstruct;
    } else if (module == "numpy" && name == "ndarray") {
        g = Global::Ndarray;
    } else if (module == "numpy" && name == "dtype") {
        g = Global::Dtype;
    } else if (module == "_codecs" && name == "encode") {
        g = Global::CodecsEncode;
    }
    if (g == Global::Invalid) {
        fail("pickle global '" + printable(module) + "." + printable(name) +
             "' is not allowed (offset " + std::to_string(op_pos_) +
             "; only numpy array reconstruction is)");
    }
    push(Value(g));
}

void Machine::reduce() {
    Value args_value = pop();
    Value callable = pop();
    const auto* args_ptr = std::get_if<std::shared_ptr<const Tuple>>(&args_value);
    if (args_ptr == nullptr)
        fail_here(std::string("calls with ") + kind_name(args_value) +
                  " instead of an argument tuple");
    const std::vector<Value>& args = (*args_ptr)->items;
    const auto* g = std::get_if<Global>(&callable);
    if (g == nullptr)
        fail_here(std::string("calls ") + kind_name(callable) + ", which is not allowed");
    auto text_arg = [&](size_t i) -> const Text* {
        if (i >= args.size()) return nullptr;
        const auto* t = std::get_if<std::shared_ptr<const Text>>(&args[i]);
        return t ? t->get() : nullptr;
    };
    switch (*g) {
        case Global::Reconstruct: {
            // _reconstruct(ndarray, (0,), b'b'): an empty array that BUILD fills in.
            if (args.size() != 3 || !std::holds_alternative<Global>(args[0]) ||
                std::get<Global>(args[0]) != Global::Ndarray ||
                !std::holds_alternative<std::shared_ptr<const Tuple>>(args[1]) ||
                text_arg(2) == nullptr) {
                fail_here(
                    "calls _reconstruct with arguments other than (numpy.ndarray, shape, bytes)");
            }
            push(Value(std::make_shared<Array>()));
            return;
        }
        case Global::Dtype: {
            // dtype('O8', False, True); numpy 1.x on Python 2 passes the ints 0 and 1.
            const Text* descr = text_arg(0);
            if (args.size() != 3 || descr == nullptr)
                fail_here("calls numpy.dtype with unexpected arguments");
            for (size_t i = 1; i < 3; ++i) {
                if (!std::holds_alternative<bool>(args[i]) &&
                    !std::holds_alternative<int64_t>(args[i])) {
                    fail_here("calls numpy.dtype with unexpected arguments");
                }
            }
            if (descr->value != "O8" && descr->value != "O4" && descr->value != "O") {
                fail("pickled array has dtype '" + printable(descr->value) +
                     "', expected an object array ('O')");
            }
            push(Value(std::make_shared<Dtype>(Dtype{descr->value, false})));
            return;
        }
        case Global::CodecsEncode: {
            // _codecs.encode('b', 'latin1'): how Python 3 writes bytes under protocol 2. Latin-1
            // maps code points 0-255 to one byte each; the str arrives as UTF-8.
            const Text* text = text_arg(0);
            const Text* codec = text_arg(1);
            if (args.size() != 2 || text == nullptr || codec == nullptr || !text->unicode ||
                (codec->value != "latin1" && codec->value != "latin-1")) {
                fail_here("calls _codecs.encode with arguments other than (str, 'latin1')");
            }
            std::string out;
            const std::string& s = text->value;
            for (size_t i = 0; i < s.size(); ++i) {
                const auto c = static_cast<unsigned char>(s[i]);
                if (c < 0x80) {
                    out += static_cast<char>(c);
                } else if ((c == 0xc2 || c == 0xc3) && i + 1 < s.size() &&
                           (static_cast<unsigned char>(s[i + 1]) & 0xc0) == 0x80) {
                    out += static_cast<char>(((c & 0x03) << 6) |
                                             (static_cast<unsigned char>(s[i + 1]) & 0x3f));
                    ++i;
                } else {
                    fail_here("encodes a str that is not Latin-1 text");
                }
            }
            push(Value(std::make_shared<const Text>(Text{std::move(out), false})));
            return;
        }
        case Global::Ndarray:
        case Global::Invalid:
            break;
    }
    fail_here("calls numpy.ndarray directly, which is not allowed");
}

void Machine::build() {
    Value state = pop();
    Value& target = top();
    const auto* tuple_ptr = std::get_if<std::shared_ptr<const Tuple>>(&state);
    if (auto* dtype = std::get_if<std::shared_ptr<Dtype>>(&target)) {
        // (3, '|', None, None, None, -1, -1, 63): version, byte order, subarray, names, fields,
        // item size, alignment, flags. Only the shape of the tuple is checked: the dtype was
        // already fixed to 'O' by its constructor arguments.
        if (tuple_ptr == nullptr || (*tuple_ptr)->items.size() < 2 ||
            !std::holds_alternative<int64_t>((*tuple_ptr)->items[0]) ||
            !std::holds_alternative<std::shared_ptr<const Text>>((*tuple_ptr)->items[1])) {
            fail_here("sets a dtype's state to something other than numpy's state tuple");
        }
        if ((*dtype)->built) fail_here("sets a dtype's state twice");
        (*dtype)->built = true;
        return;
    }
    auto* array_ptr = std::get_if<std::shared_ptr<Array>>(&target);
    if (array_ptr == nullptr)
        fail_here(std::string("sets the state of ") + kind_name(target) + ", which is not allowed");
    Array& array = **array_ptr;
    if (array.built) fail_here("sets an array's state twice");
    if (tuple_ptr == nullptr) fail_here("sets an array's state to something other than a tuple");
    // (version, shape, dtype, is_fortran, data), or the same without the version.
    const std::vector<Value>& s = (*tuple_ptr)->items;
    if (s.size() != 5 && s.size() != 4)
        fail_here("sets an array's state to a tuple of the wrong size");
    const size_t o = s.size() == 5 ? 1 : 0;
    if (o == 1 && !std::holds_alternative<int64_t>(s[0]))
        fail_here("gives an array state version that is not an int");
    const auto* shape = std::get_if<std::shared_ptr<const Tuple>>(&s[o]);
    const auto* dtype = std::get_if<std::shared_ptr<Dtype>>(&s[o + 1]);
    const Value& fortran = s[o + 2];
    const auto* data = std::get_if<std::shared_ptr<List>>(&s[o + 3]);
    if (shape == nullptr || dtype == nullptr ||
        (!std::holds_alternative<bool>(fortran) && !std::holds_alternative<int64_t>(fortran))) {
        fail_here("sets an array's state that is not (shape, dtype, fortran_order, data)");
    }
    if (data == nullptr) {
        fail_here(std::string("gives an object array's data as ") + kind_name(s[o + 3]) +
                  " instead of a list");
    }
    uint64_t count = 1;
    for (const Value& d : (*shape)->items) {
        const auto* dim = std::get_if<int64_t>(&d);
        if (dim == nullptr || *dim < 0)
            fail_here("gives an array shape that is not a tuple of non-negative ints");
        array.shape.push_back(*dim);
        if (*dim != 0 &&
            count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(*dim)) {
            fail_here("gives an array shape whose size overflows");
        }
        count *= static_cast<uint64_t>(*dim);
    }
    const List& list = **data;
    if (!list.ints.empty()) {
        fail("pickled object array holds ints, expected lists of ints (one list per element)");
    }
    if (list.lists.size() != count) {
        fail_here("gives " + std::to_string(list.lists.size()) + " items for an array of " +
                  std::to_string(count) + " elements");
    }
    array.fortran_order = std::holds_alternative<bool>(fortran) ? std::get<bool>(fortran)
                                                                : std::get<int64_t>(fortran) != 0;
    // Lists shared through the memo would be copied once per use: bound the output by the
    // input, which no real pickle comes near (each int takes at least two bytes there).
    for (const auto& item : list.lists) {
        output_ints_ += item->ints.size() + 1;
        if (output_ints_ > in_.size())
            fail_here("expands to more ints than it has bytes (shared lists)");
    }
    array.items.reserve(list.lists.size());
    for (const auto& item : list.lists) array.items.push_back(item->ints);
    array.built = true;
}

void Machine::memo_put(uint64_t index) {
    memo_[index] = top();
}

void Machine::memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end())
        fail_here("refers to memo entry " + std::to_string(index) + ", which was never stored");
    push(it->second);
}

// The interpreter's loop, one case per opcode the strict reader accepts. Long because the machine
// is: each case is a few lines on the stack, the marks and the memo, and they read best side by
// side with pickletools' list; split into functions, the same switch would only move elsewhere.
PickledObjectArray Machine::run() {
    if (in_.empty()) fail("pickle is empty");
    for (;;) {
        if (pos_ >= in_.size()) fail("pickle is truncated (it ends without a STOP opcode)");
        op_pos_ = pos_;
        op_ = in_[pos_++];
        if (op_pos_ == 0 && op_ != 0x80) {
            fail(
                "pickle does not start with a PROTO opcode (numpy writes protocol 2 or later; "
                "found " +
                describe_opcode(op_) + ")");
        }
        switch (op_) {
            case 0x80: {  // PROTO
                const auto p = static_cast<int>(take_le(1));
                if (op_pos_ != 0) fail_here("repeats PROTO");
                if (p < 2 || p > 5)
                    fail("pickle protocol " + std::to_string(p) +
                         " is not supported (numpy writes 2 to 5)");
                protocol_ = p;
                break;
            }
            case 0x95: {  // FRAME: only a buffering hint for the reader
                const uint64_t n = take_le(8);
                if (n > in_.size() - pos_)
                    fail_here("announces a frame longer than the data that is left");
                break;
            }
            case '.': {  // STOP
                if (!marks_.empty() || stack_.size() != 1)
                    fail_here("stops with an unbalanced stack");
                const auto* array = std::get_if<std::shared_ptr<Array>>(&stack_.back());
                if (array == nullptr)
                    fail(std::string("pickle holds ") + kind_name(stack_.back()) +
                         ", not a numpy object array");
                if (!(*array)->built)
                    fail("pickle builds a numpy array but never sets its contents");
                PickledObjectArray out;
                out.shape = std::move((*array)->shape);
                out.fortran_order = (*array)->fortran_order;
                out.items = std::move((*array)->items);
                out.protocol = protocol_;
                return out;
            }
            case '(':  // MARK
                marks_.push_back(stack_.size());
                break;
            case 'N':
                push(Value(None{}));
                break;
            case 0x88:
                push(Value(true));
                break;
            case 0x89:
                push(Value(false));
                break;
            case 'J':
                push_int(static_cast<int32_t>(static_cast<uint32_t>(take_le(4))));
                break;
            case 'K':
                push_int(static_cast<int64_t>(take_le(1)));
                break;
            case 'M':
                push_int(static_cast<int64_t>(take_le(2)));
                break;
            case 0x8a: {  // LONG1
                const uint64_t n = take_le(1);
                push_int(decode_long(take(n), n));
                break;
            }
            case 0x8b: {  // LONG4
                const auto n = static_cast<int32_t>(static_cast<uint32_t>(take_le(4)));
                if (n < 0) fail_here("has a negative length");
                push_int(decode_long(take(static_cast<uint64_t>(n)), static_cast<uint64_t>(n)));
                break;
            }
            case 'I': {  // INT: Python 2 writes ints beyond 32 bits as decimal text
                const std::string_view line = take_line();
                if (line == "00" || line == "01") {
                    push(Value(line == "01"));
                    break;
                }
                size_t i = line.starts_with('-') ? 1 : 0;
                if (i == line.size() || line.size() > 20) fail_here("holds malformed decimal text");
                const uint64_t limit = i ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
                uint64_t v = 0;
                for (; i < line.size(); ++i) {
                    if (line[i] < '0' || line[i] > '9') fail_here("holds malformed decimal text");
                    const auto digit = static_cast<uint64_t>(line[i] - '0');
                    if (v > (limit - digit) / 10)
                        fail_here("holds an integer that does not fit in 64 bits");
                    v = v * 10 + digit;
                }
                push_int(line.starts_with('-') ? static_cast<int64_t>(0 - v)
                                               : static_cast<int64_t>(v));
                break;
            }
            case 'U':
                push(Value(take_text(take_le(1), false)));
                break;   // SHORT_BINSTRING
            case 'T': {  // BINSTRING
                const auto n = static_cast<int32_t>(static_cast<uint32_t>(take_le(4)));
                if (n < 0) fail_here("has a negative length");
                push(Value(take_text(static_cast<uint64_t>(n), false)));
                break;
            }
            case 'C':
                push(Value(take_text(take_le(1), false)));
                break;  // SHORT_BINBYTES
            case 'B':
                push(Value(take_text(take_le(4), false)));
                break;  // BINBYTES
            case 0x8e:
                push(Value(take_text(take_le(8), false)));
                break;  // BINBYTES8
            case 0x8c:
                push(Value(take_text(take_le(1), true)));
                break;  // SHORT_BINUNICODE
            case 'X':
                push(Value(take_text(take_le(4), true)));
                break;  // BINUNICODE
            case 0x8d:
                push(Value(take_text(take_le(8), true)));
                break;   // BINUNICODE8
            case 'c': {  // GLOBAL
                const std::string_view module = take_line();
                const std::string_view name = take_line();
                push_global(module, name);
                break;
            }
            case 0x93: {  // STACK_GLOBAL
                Value name = pop();
                Value module = pop();
                const auto* n = std::get_if<std::shared_ptr<const Text>>(&name);
                const auto* m = std::get_if<std::shared_ptr<const Text>>(&module);
                if (n == nullptr || m == nullptr || !(*n)->unicode || !(*m)->unicode) {
                    fail_here("names a global with something other than two strs");
                }
                push_global((*m)->value, (*n)->value);
                break;
            }
            case 'R':
                reduce();
                break;
            case 'b':
                build();
                break;
            case ']':
                push(Value(std::make_shared<List>()));
                break;
            case 'a': {  // APPEND
                Value item = pop();
                auto* list = std::get_if<std::shared_ptr<List>>(&top());
                if (list == nullptr)
                    fail_here(std::string("appends to ") + kind_name(top()) + ", not a list");
                append(*list, std::move(item));
                break;
            }
            case 'e': {  // APPENDS: the items above the last MARK go into the list below it
                if (marks_.empty()) fail_here("has no MARK to pop to");
                const size_t base = marks_.back();
                marks_.pop_back();
                if (base == 0 || base <= frame_base()) fail_here("stack underflow");
                auto* list = std::get_if<std::shared_ptr<List>>(&stack_[base - 1]);
                if (list == nullptr)
                    fail_here(std::string("appends to ") + kind_name(stack_[base - 1]) +
                              ", not a list");
                const std::shared_ptr<List> target = *list;
                if (const size_t n = stack_.size() - base;
                    n > 0 && std::holds_alternative<int64_t>(stack_[base])) {
                    target->ints.reserve(target->ints.size() + n);
                }
                for (size_t i = base; i < stack_.size(); ++i) append(target, std::move(stack_[i]));
                stack_.resize(base);
                break;
            }
            case ')':
                push_tuple({});
                break;
            case 't':
                push_tuple(pop_mark());
                break;
            case 0x85:
            case 0x86:
            case 0x87: {  // TUPLE1..3
                const size_t n = static_cast<size_t>(op_ - 0x84);
                std::vector<Value> items(n);
                for (size_t i = n; i-- > 0;) items[i] = pop();
                push_tuple(std::move(items));
                break;
            }
            case 'q':
                memo_put(take_le(1));
                break;  // BINPUT
            case 'r':
                memo_put(take_le(4));
                break;  // LONG_BINPUT
            case 0x94:
                memo_put(memo_.size());
                break;  // MEMOIZE
            case 'h':
                memo_get(take_le(1));
                break;  // BINGET
            case 'j':
                memo_get(take_le(4));
                break;  // LONG_BINGET
            default:
                fail("pickle opcode " + describe_opcode(op_) + " at offset " +
                     std::to_string(op_pos_) + " is not allowed");
        }
    }
}

}  // namespace

PickledObjectArray unpickle_object_array(std::span<const uint8_t> bytes,
                                         const std::string& source_name) {
    return Machine(bytes, source_name).run();
}

}  // namespace mirrorlab
