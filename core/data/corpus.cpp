#include "core/data/corpus.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <filesystem>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "core/util/cancellation.h"
#include "core/util/error.h"
#include "core/util/file.h"

namespace mirrorlab {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& problem) {
    throw DataError("[corpus] " + problem);
}

std::string in_quotes(std::string_view s) {
    return "'" + std::string(s) + "'";
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// A label as typed: ASCII spaces and Unicode's spaces and invisible marks trimmed (the no-break
// space spreadsheets paste, thin, ideographic and zero-width spaces, a stray byte-order mark), so
// that "sport\u00a0" or "\u3000sport" is the class "sport" and not another that prints the same.
std::string_view trim_label(std::string_view s) {
    static constexpr std::string_view kInvisible[] = {
        "\xC2\xA0",                                               // U+00A0 no-break space
        "\xC2\x85",                                               // U+0085 next line
        "\xE1\x9A\x80",                                           // U+1680 ogham space mark
        "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85",
        "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A",  // U+2000..U+200A
        "\xE2\x80\x8B", "\xE2\x80\x8C", "\xE2\x80\x8D",       // U+200B..U+200D zero-width
        "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF",       // line and paragraph separator, narrow no-break space
        "\xE2\x81\x9F", "\xE2\x81\xA0",                         // medium mathematical space, word joiner
        "\xE3\x80\x80",                                           // U+3000 ideographic space
        "\xEF\xBB\xBF",                                           // U+FEFF byte-order mark
    };
    for (;;) {
        s = trim(s);
        bool trimmed = false;
        for (const std::string_view mark : kInvisible) {
            if (s.starts_with(mark)) s.remove_prefix(mark.size()), trimmed = true;
            if (s.ends_with(mark)) s.remove_suffix(mark.size()), trimmed = true;
        }
        if (!trimmed) return s;
    }
}

bool is_blank(std::string_view s) {
    return trim(s).empty();
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A 0-based column index of all digits. More digits than any file has columns (stoull threw
// std::out_of_range; past a million, the row's field count + 1 could wrap) is refused here.
size_t column_index_of(std::string_view digits) {
    size_t index = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error != std::errc() || end != digits.data() + digits.size() || index > 1'000'000) {
        fail("column index " + std::string(digits) + " is past any row's columns; give a 0-based index such as 0 or 1");
    }
    return index;
}

std::optional<int64_t> parse_integer(std::string_view s) {
    s = trim(s);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    const std::string_view digits = (!s.empty() && s.front() == '-') ? s.substr(1) : s;
    if (!all_digits(digits)) return std::nullopt;
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return value;
}

std::string plural(int64_t n, const std::string& one, const std::string& many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The byte length of the valid (shortest-form, non-surrogate) UTF-8 sequence at `i`, or 0.
size_t utf8_sequence_length(std::string_view s, size_t i) {
    uint32_t code_point = 0;
    return utf8_code_point(s, i, code_point);
}

std::string read_bytes(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) fail("file " + in_quotes(path.string()) + " does not exist");
    if (fs::is_directory(path, ec)) fail(in_quotes(path.string()) + " is a folder, not a file");
    try {
        return read_file_text(path.string(), kMaxTextDataFileBytes,
                              "file " + in_quotes(path.string()), "one data file");
    } catch (const DataError& e) {
        fail(e.what());
    }
}

// Bytes to UTF-8 text: BOM dropped, universal newlines, and every byte that is not part of a valid
// UTF-8 sequence read as Latin-1 (so a Latin-1 file decodes as Latin-1, and a UTF-8 file with a few
// stray Latin-1 bytes keeps its UTF-8 characters). Returns whether any byte needed the fallback.
// `first_latin1_line`, when given, gets the line of the first such byte (1-based).
bool decode_text(std::string_view bytes, std::string& text, int64_t* first_latin1_line = nullptr) {
    if (bytes.substr(0, 3) == "\xEF\xBB\xBF") bytes.remove_prefix(3);

    bool latin1 = false;
    text.clear();
    text.reserve(bytes.size());
    for (size_t i = 0; i < bytes.size();) {
        const size_t length = utf8_sequence_length(bytes, i);
        if (length == 0) {
            if (!latin1 && first_latin1_line != nullptr)
                *first_latin1_line = 1 + std::count(text.begin(), text.end(), '\n');
            text += latin1_to_utf8(bytes.substr(i, 1));
            latin1 = true;
            ++i;
        } else if (bytes[i] == '\r') {
            text += '\n';
            i += (i + 1 < bytes.size() && bytes[i + 1] == '\n') ? 2 : 1;
        } else {
            text.append(bytes.substr(i, length));
            i += length;
        }
    }
    return latin1;
}

// The same for bytes this caller owns: UTF-8 (most files) becomes the text in place, its line ends
// made '\n' there; a large CSV was held twice while it was copied.
bool decode_text(std::string&& bytes, std::string& text, int64_t* first_latin1_line = nullptr) {
    if (!is_valid_utf8(bytes)) return decode_text(std::string_view(bytes), text, first_latin1_line);
    const size_t start = bytes.starts_with("\xEF\xBB\xBF") ? 3 : 0;
    size_t kept = 0;
    if (start > 0 || bytes.find('\r') != std::string::npos) {
        for (size_t i = start; i < bytes.size();) {
            if (bytes[i] == '\r') {  // "\r\n" and a lone '\r' both end a line
                bytes[kept++] = '\n';
                i += (i + 1 < bytes.size() && bytes[i + 1] == '\n') ? 2 : 1;
            } else {
                bytes[kept++] = bytes[i++];
            }
        }
        bytes.resize(kept);
    }
    text = std::move(bytes);
    return false;
}

// Bytes no text file holds: a NUL. UTF-16 without a byte-order mark (ASCII letters each beside a 0
// byte), a compressed file or a workbook, or a damaged file; read as text, their NULs ended up in
// labels and tokens (and cut the `data` summary short) without a word.
void refuse_binary(const std::string& path, std::string_view bytes) {
    const size_t first_nul = bytes.find('\0');
    if (first_nul == std::string_view::npos) return;
    if (bytes.rfind("\x1F\x8B", 0) == 0 || bytes.rfind("PK\x03\x04", 0) == 0) {
        fail(path + " is a compressed file (" + std::string(bytes[0] == 'P' ? "a zip archive, or a workbook such as .xlsx" : "gzip") +
             "), not text; unpack it (a workbook: save the sheet as \"CSV UTF-8\") and load that");
    }
    // UTF-16 of mostly ASCII text: in the first bytes, one of every two is 0, at even or odd offsets.
    const size_t sample = std::min<size_t>(bytes.size(), 4096);
    size_t zero_at[2] = {0, 0};
    for (size_t i = 0; i < sample; ++i) zero_at[i % 2] += bytes[i] == '\0';
    if (std::max(zero_at[0], zero_at[1]) * 10 >= sample / 2 * 9 && std::min(zero_at[0], zero_at[1]) * 10 < sample / 2) {
        fail(path + " is UTF-16 text without a byte-order mark (every other byte is 0); save it as UTF-8 (in Excel: \"CSV "
                    "UTF-8\"; in an editor: the encoding UTF-8) and load it again");
    }
    const int64_t line = 1 + std::count(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(first_nul), '\n');
    fail(path + ":" + std::to_string(line) + ": the file holds a NUL byte (byte " + std::to_string(first_nul) +
         "), which text never does: it is not a text file, or it is damaged; open it in an editor, or load another file");
}

// Excel's "Unicode Text" and Notepad's "Unicode" files: read as Latin-1 they were tokens full of NULs.
// Bytes that are not text, refused with what they are: UTF-16 (with or without its byte-order
// mark), compressed, binary.
void check_text_bytes(const std::string& path, std::string_view bytes) {
    if (bytes.rfind("\xFF\xFE", 0) == 0 || bytes.rfind("\xFE\xFF", 0) == 0) {
        fail(path + " is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8 (in Excel: \"CSV UTF-8\"; "
                    "in an editor: the encoding UTF-8) and load it again");
    }
    refuse_binary(path, bytes);
}

std::string read_text_bytes(const std::string& path) {
    std::string bytes = read_bytes(path);
    check_text_bytes(path, bytes);
    return bytes;
}

}  // namespace

std::string read_text_file(const std::string& path, std::uint64_t max_bytes, std::string_view limit_name, bool* latin1) {
    std::string bytes;
    try {
        bytes = read_file_text(path, max_bytes, "text file " + in_quotes(path), limit_name);
    } catch (const DataError& e) {
        fail(e.what());
    }
    check_text_bytes(path, bytes);
    std::string text;
    const bool was_latin1 = decode_text(bytes, text);
    if (latin1) *latin1 = was_latin1;
    return text;
}

namespace {

std::string latin1_warning(const std::string& path) {
    return "file " + path + " is not UTF-8; read as Latin-1";
}

// Labels to class ids: integers in numeric order when every label is one, else strings in byte
// order.
void assign_classes(const std::vector<std::string>& raw_labels, LabelledTexts& out) {
    bool integers = !raw_labels.empty();
    std::vector<int64_t> values;
    values.reserve(raw_labels.size());
    for (const auto& label : raw_labels) {
        const auto value = parse_integer(label);
        if (!value) {
            integers = false;
            break;
        }
        values.push_back(*value);
    }
    out.labels.clear();
    out.class_names.clear();
    if (integers) {
        const std::set<int64_t> distinct(values.begin(), values.end());
        std::map<int64_t, int32_t> ids;
        for (int64_t v : distinct) {
            ids.emplace(v, static_cast<int32_t>(out.class_names.size()));
            out.class_names.push_back(std::to_string(v));
        }
        for (int64_t v : values) out.labels.push_back(ids.at(v));
    } else {
        const std::set<std::string> distinct(raw_labels.begin(), raw_labels.end());
        std::map<std::string, int32_t> ids;
        for (const auto& name : distinct) {
            ids.emplace(name, static_cast<int32_t>(out.class_names.size()));
            out.class_names.push_back(name);
        }
        for (const auto& label : raw_labels) out.labels.push_back(ids.at(label));
    }
}

// ---------------------------------------------------------------------------------------------
// CSV / TSV

struct Row {
    std::vector<std::string> fields;
    int64_t line = 0;  // 1-based line where the row starts
    bool blank = false;
};

std::string delimiter_name(char d) {
    if (d == '\t') return "tab";
    if (d == ',') return "comma";
    return in_quotes(std::string(1, d));
}

// A quoted field that runs over lines and whose closing '"' is followed by more text, not by the
// delimiter or the line's end, or that no '"' closes before the file ends, was opened by a '"'
// that belongs to the text (a TSV line whose text starts with a quotation): read as quoted, it
// would take in the rows up to the next '"' in the file without a word, or refuse the file. Such a
// field is read as plain text from its '"' to the delimiter, and `literal_quote_lines` gets the
// line it starts on for a warning.
std::vector<Row> parse_rows(const std::string& text, char delimiter, bool quoting, std::vector<int64_t>& literal_quote_lines) {
    std::vector<Row> rows;
    size_t i = 0;
    int64_t line = 1;
    const size_t n = text.size();
    const auto at_field_end = [&](size_t at) {
        return at >= n || text[at] == delimiter || text[at] == '\n' || text[at] == '\r';
    };
    while (i < n) {
        throw_if_cancelled();
        Row row;
        row.line = line;
        bool any_quoted = false;
        while (true) {  // one field per pass
            std::string field;
            if (quoting && i < n && text[i] == '"') {
                const int64_t opened = line;
                const size_t opening_quote = i;
                ++i;
                bool closed = false;
                while (i < n) {
                    const char c = text[i];
                    if (c == '"') {
                        if (i + 1 < n && text[i + 1] == '"') {
                            field += '"';
                            i += 2;
                            continue;
                        }
                        ++i;
                        closed = true;
                        break;
                    }
                    if (c == '\n') ++line;
                    field += c;
                    ++i;
                }
                // Spaces after a closing quote, before the delimiter, are Python's csv's as well.
                size_t after = i;
                while (after < n && (text[after] == ' ' || (text[after] == '\t' && delimiter != '\t'))) ++after;
                if (!closed || (line != opened && !at_field_end(after))) {
                    literal_quote_lines.push_back(opened);
                    field.clear();
                    i = opening_quote;
                    line = opened;
                } else {
                    any_quoted = true;
                }
            }
            // Unquoted text, or (leniently, as Python's csv) text after a closing quote.
            while (i < n && text[i] != delimiter && text[i] != '\n') field += text[i++];
            row.fields.push_back(std::move(field));
            if (i < n && text[i] == delimiter) {
                ++i;
                continue;  // a delimiter at the end of a line still starts an (empty) field
            }
            if (i < n) {  // '\n'
                ++i;
                ++line;
            }
            break;
        }
        row.blank = !any_quoted && row.fields.size() == 1 && is_blank(row.fields[0]);
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string join_header(const std::vector<std::string>& header) {
    std::string out;
    for (size_t i = 0; i < header.size(); ++i) {
        if (i > 0) out += ", ";
        out += std::string(trim(header[i]));
    }
    return out;
}

std::optional<size_t> find_column(const std::vector<std::string>& header, std::string_view name) {
    for (size_t i = 0; i < header.size(); ++i) {
        if (header[i] == name) return i;
    }
    const std::string wanted = ascii_lower(trim(name));
    for (size_t i = 0; i < header.size(); ++i) {
        if (ascii_lower(trim(header[i])) == wanted) return i;
    }
    return std::nullopt;
}

struct Column {
    size_t index = 0;
    std::string what;  // "label" / "text", for messages
};

Column resolve_column(const std::string& spec, const std::string& what, size_t default_index,
                      const std::vector<std::string>* header, const std::string& path,
                      int64_t header_line, const std::string& header_reason) {
    Column column;
    column.what = what;
    const bool by_default = spec.empty();
    const std::string name = by_default ? what : spec;
    if (header == nullptr) {
        if (by_default) {
            column.index = default_index;
            return column;
        }
        if (all_digits(spec)) {
            column.index = column_index_of(spec);
            return column;
        }
        fail(path + ": the " + what + " column is named " + in_quotes(spec) +
             " but the file is read without a header row; give a 0-based column index instead, or "
             "let the "
             "first row be the header");
    }
    if (auto found = find_column(*header, name)) {
        // A second column of the same title: which one was meant cannot be told (label,text,text
        // read the first, short ids, as the texts without a word).
        std::vector<std::string> rest(*header);
        rest[*found] = std::string(1, '\0');
        if (auto second = find_column(rest, name)) {
            fail(path + ":" + std::to_string(header_line) + ": the header names two columns " + in_quotes(name) + " (columns " +
                 std::to_string(*found) + " and " + std::to_string(*second) + ", 0-based); rename one so that the " + what +
                 " column is named once");
        }
        column.index = *found;
        return column;
    }
    if (!by_default && all_digits(spec)) {
        column.index = column_index_of(spec);
        return column;
    }
    std::string message = path + ":" + std::to_string(header_line) + ": column " + in_quotes(name) +
                          " not found; the header has: " + join_header(*header);
    if (!header_reason.empty()) message += " (" + header_reason + ")";
    message += by_default ? "; title the label column label and the text column text"
                          : "; check the spelling, or give a 0-based column index";
    fail(message);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

size_t utf8_code_point(std::string_view s, size_t i, uint32_t& code_point) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    code_point = b0;
    if (b0 < 0x80) return 1;
    size_t length = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        length = 2, cp = b0 & 0x1Fu, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        length = 3, cp = b0 & 0x0Fu, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        length = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (i + length > s.size()) return 0;
    for (size_t k = 1; k < length; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    code_point = cp;
    return length;
}

bool is_valid_utf8(std::string_view bytes) {
    for (size_t i = 0; i < bytes.size();) {
        const size_t length = utf8_sequence_length(bytes, i);
        if (length == 0) return false;
        i += length;
    }
    return true;
}

std::string latin1_to_utf8(std::string_view bytes) {
    static constexpr uint16_t kWindows1252[32] = {
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
        0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};
    std::string out;
    out.reserve(bytes.size() + bytes.size() / 4);
    for (char ch : bytes) {
        const auto b = static_cast<unsigned char>(ch);
        const uint32_t cp = (b >= 0x80 && b < 0xA0) ? kWindows1252[b - 0x80] : b;
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------

namespace {

// Whether `path` is `base` or lies inside it (both canonical).
bool is_within(const fs::path& path, const fs::path& base) {
    auto p = path.begin();
    for (auto b = base.begin(); b != base.end(); ++b, ++p) {
        if (b->empty()) continue;  // a trailing separator
        if (p == path.end() || *p != *b) return false;
    }
    return true;
}

// Collects the text files of the class folders. Symbolic links are followed (people assemble
// corpora from links to data kept elsewhere), but every folder and file is read at most once, by
// (device, inode), so a link cycle cannot loop and a second link to the same place reads nothing
// twice. A link may lead out of the corpus folder, never back into it outside its own class
// folder, nor to a folder that holds the corpus or a class folder (a link to ".." or "/"): such a
// link would read another class's files under this class's name. Those links are skipped with a
// warning rather than failing the whole corpus: they are usually leftovers ("latest -> ..",
// a link made for another tool), the files they point to are still read under their own class,
// and the warning names each link so that it can be removed.
class FolderWalk {
  public:
    FolderWalk(fs::path root_real, std::vector<fs::path> class_reals)
        : root_real_(std::move(root_real)), class_reals_(std::move(class_reals)) {}

    // False (with a warning) when the class folder itself must be skipped.
    bool begin_class(const fs::path& class_dir, const fs::path& class_real) {
        class_real_ = class_real;
        std::error_code ec;
        if (fs::is_symlink(class_dir, ec) &&
            !check_link(class_dir, class_real, /*class_level=*/true))
            return false;
        const auto id = file_identity(class_dir.string());
        if (id && !dirs_.insert(*id).second) {
            skip(class_dir, "it is the same folder as an earlier class folder");
            return false;
        }
        return true;
    }

    // The text files under `dir` (.txt, or no extension), recursively; counts other files in `other_files`.
    void collect(const fs::path& dir, std::vector<fs::path>& files, int64_t& other_files) {
        std::vector<fs::directory_entry> entries;
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (!name.empty() && name.front() != '.') entries.push_back(*it);
        }
        if (ec) fail("cannot list folder " + in_quotes(dir.string()) + ": " + ec.message());
        // Name order, so that which of two paths to the same file is read does not depend on the
        // file system's listing order.
        std::sort(entries.begin(), entries.end(),
                  [](const auto& a, const auto& b) { return a.path() < b.path(); });
        for (const auto& entry : entries) {
            const fs::path& path = entry.path();
            std::error_code type_ec;
            const bool is_link = entry.is_symlink(type_ec);
            const fs::file_status status = fs::status(path, type_ec);  // follows links
            if (type_ec) {
                // Said, not passed over: a data set whose files were never fetched (git-annex, DVC
                // keep links to them), a folder without the x permission, a path too long.
                std::error_code target_ec;
                const fs::path target = is_link ? fs::read_symlink(path, target_ec) : fs::path();
                if (is_link && type_ec == std::errc::no_such_file_or_directory) {
                    skip(path, "it is a symbolic link to " + in_quotes(target.string()) +
                                   ", which is not there (a data set whose files were not fetched?)");
                } else {
                    skip(path, "cannot look at it: " + type_ec.message() +
                                   (type_ec == std::errc::permission_denied ? " (give yourself read access to its folder)" : ""));
                }
                continue;
            }
            if (is_link) {
                std::error_code real_ec;
                const fs::path real = fs::canonical(path, real_ec);
                if (real_ec || !check_link(path, real, /*class_level=*/false)) continue;
            }
            const auto id = file_identity(path.string());
            if (fs::is_directory(status)) {
                if (id && !dirs_.insert(*id).second) {
                    skip(path,
                         "it leads to a folder that was already read (a symlink loop, or "
                         "a second link to the same folder)");
                    continue;
                }
                collect(path, files, other_files);
            } else if (fs::is_regular_file(status)) {
                // .txt as Keras reads, and names without an extension: 20 Newsgroups' numbered files
                // (a folder's README or LICENSE is not a sample).
                static const std::set<std::string> kNotSamples = {"readme", "license", "licence", "copying", "notice",
                                                                  "authors", "changelog", "makefile"};
                const std::string extension = ascii_lower(path.extension().string());
                if ((extension != ".txt" && !extension.empty()) || (extension.empty() && kNotSamples.count(ascii_lower(path.filename().string())) > 0)) {
                    if (other_files++ == 0) first_other_file_ = path.string();
                } else if (id && !files_.insert(*id).second) {
                    ++duplicate_files_;
                } else {
                    files.push_back(path);
                }
            }
        }
    }

    void skip(const fs::path& path, const std::string& why) {
        skipped_.push_back("skipped " + in_quotes(path.string()) + ": " + why);
    }

    const std::vector<std::string>& skipped() const { return skipped_; }
    int64_t duplicate_files() const { return duplicate_files_; }
    const std::string& first_other_file() const { return first_other_file_; }

  private:
    // Whether the link `link` (whose target is `real`) may be followed from the current class
    // folder; `class_level`: the class folder itself is the link.
    bool check_link(const fs::path& link, const fs::path& real, bool class_level) {
        const std::string rule = "; a class folder's files must lie inside that class folder";
        // A folder that holds the corpus or a class folder ("..", "/"). The class folder itself is
        // not one: a link to it is a loop, which the (device, inode) check skips.
        const bool holds =
            is_within(root_real_, real) ||
            std::any_of(class_reals_.begin(), class_reals_.end(),
                        [&](const fs::path& c) { return is_within(c, real) && c != real; });
        if (holds) {
            skip(link, "it leads to " + in_quotes(real.string()) +
                           ", which holds the corpus folder or a class folder" + rule);
            return false;
        }
        // Into the corpus folder outside this class folder (another class, a stray folder), or
        // into another class folder kept outside the corpus.
        const bool in_other_class =
            std::any_of(class_reals_.begin(), class_reals_.end(),
                        [&](const fs::path& c) { return c != class_real_ && is_within(real, c); });
        const bool in_corpus = is_within(real, root_real_);
        const bool elsewhere = class_level
                                   ? in_corpus || in_other_class
                                   : (in_corpus && !is_within(real, class_real_)) || in_other_class;
        if (elsewhere) {
            skip(link, "it leads to " + in_quotes(real.string()) + ", " +
                           (class_level ? "inside the corpus folder" : "outside its class folder") +
                           ", so those files would be read under the wrong class (or twice)" +
                           rule);
            return false;
        }
        return true;
    }


    std::string first_other_file_;  // the first file collect() ignored for its extension
    fs::path root_real_;
    std::vector<fs::path> class_reals_;
    fs::path class_real_;
    std::set<FileIdentity> dirs_;
    std::set<FileIdentity> files_;
    std::vector<std::string> skipped_;
    int64_t duplicate_files_ = 0;
};

}  // namespace

namespace {

// The class folders of `root` (named `dir` in messages), sorted by name; files beside them are
// counted in `loose_files`.
std::vector<fs::path> class_folders(const fs::path& root, const std::string& dir, int64_t& loose_files) {
    std::error_code ec;
    std::vector<fs::path> class_dirs;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string entry_name = it->path().filename().string();
        if (entry_name.empty() || entry_name.front() == '.') continue;
        std::error_code type_ec;
        if (it->is_directory(type_ec))
            class_dirs.push_back(it->path());
        else
            ++loose_files;
    }
    if (ec) fail("cannot list folder " + in_quotes(dir) + ": " + ec.message());
    if (class_dirs.empty()) {
        fail("folder " + in_quotes(dir) +
             " has no subfolders; put each class's text files (.txt) in a subfolder named after the class "
             "(e.g. " +
             (root / "positive" / "0001.txt").string() + ")");
    }
    std::sort(class_dirs.begin(), class_dirs.end(), [](const fs::path& a, const fs::path& b) {
        return a.filename().string() < b.filename().string();
    });
    return class_dirs;
}

// folder:aclImdb instead of folder:aclImdb/train: the "classes" were the splits (train, test),
// each holding the real classes (neg, pos), and the model learned to tell the splits apart.
void refuse_split_folders(const std::vector<fs::path>& class_dirs, const std::string& dir) {
    static const std::set<std::string> kSplitNames = {"train", "training", "test", "testing", "val", "valid",
                                                      "validation", "dev", "eval", "evaluation"};
    if (class_dirs.size() < 2) return;
    std::optional<std::set<std::string>> common;
    for (const fs::path& class_dir : class_dirs) {
        if (kSplitNames.count(ascii_lower(class_dir.filename().string())) == 0) return;
        std::set<std::string> inside;
        std::error_code ec;
        for (fs::directory_iterator it(class_dir, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            std::error_code type_ec;
            if (!name.empty() && name.front() != '.' && it->is_directory(type_ec)) inside.insert(name);
        }
        if (!common) {
            common = std::move(inside);
            continue;
        }
        std::set<std::string> both;
        std::set_intersection(common->begin(), common->end(), inside.begin(), inside.end(), std::inserter(both, both.end()));
        common = std::move(both);
    }
    if (!common || common->size() < 2) return;
    std::string splits, classes;
    for (const fs::path& class_dir : class_dirs) splits += (splits.empty() ? "" : ", ") + in_quotes(class_dir.filename().string());
    for (const std::string& name : *common) classes += (classes.empty() ? "" : ", ") + in_quotes(name);
    const auto training = std::find_if(class_dirs.begin(), class_dirs.end(),
                                       [](const fs::path& p) { return ascii_lower(p.filename().string()).rfind("train", 0) == 0; });
    const fs::path train = training != class_dirs.end() ? *training : class_dirs.front();
    fail("folder " + in_quotes(dir) + ": its subfolders " + splits + " are a data set's splits, each holding the classes (" +
         classes + "), not classes themselves; give the split to train on, folder:" + train.string());
}

struct FolderCounts {
    int64_t empty_files = 0;
    int64_t other_files = 0;  // in class folders, not .txt
    int64_t loose_files = 0;  // beside the class folders
};

std::string ignored_files_text(int64_t other_files, const FolderWalk& walk) {
    return "ignored " + plural(other_files, "file", "files") + " in class folders that do not end in .txt (e.g. " +
           in_quotes(walk.first_other_file()) + "); a text file must end in .txt or have no extension";
}

// What reading the folder skipped or read as Latin-1, the first ten of each named.
void add_folder_warnings(LabelledTexts& out, const std::string& dir, const std::vector<std::string>& latin1_files,
                         const FolderWalk& walk, const FolderCounts& counts) {
    const int64_t empty_files = counts.empty_files, other_files = counts.other_files, loose_files = counts.loose_files;
    constexpr size_t kListed = 10;
    for (size_t i = 0; i < latin1_files.size() && i < kListed; ++i)
        out.warnings.push_back(latin1_warning(latin1_files[i]));
    if (latin1_files.size() > kListed) {
        out.warnings.push_back(
            "… and " +
            plural(static_cast<int64_t>(latin1_files.size() - kListed), "more file", "more files") +
            " are not UTF-8 and were read as Latin-1");
    }
    const auto& skipped = walk.skipped();
    for (size_t i = 0; i < skipped.size() && i < kListed; ++i) out.warnings.push_back(skipped[i]);
    if (skipped.size() > kListed) {
        out.warnings.push_back(
            "… and " +
            plural(static_cast<int64_t>(skipped.size() - kListed), "more link or file", "more links and files") +
            " skipped");
    }
    if (walk.duplicate_files() > 0) {
        out.warnings.push_back("skipped " +
                               plural(walk.duplicate_files(), "file that was", "files that were") +
                               " already read through another path (a symlink or hard link)");
    }
    if (empty_files > 0)
        out.warnings.push_back("skipped " + plural(empty_files, "empty file", "empty files"));
    if (other_files > 0) out.warnings.push_back(ignored_files_text(other_files, walk));
    if (loose_files > 0) {
        out.warnings.push_back("ignored " + plural(loose_files, "file", "files") + " directly in " +
                               in_quotes(dir) + "; only files inside class folders are read");
    }
}

}  // namespace

LabelledTexts read_text_folder(const std::string& dir) {
    const fs::path root(dir);
    std::error_code ec;
    if (!fs::exists(root, ec)) fail("folder " + in_quotes(dir) + " does not exist");
    if (!fs::is_directory(root, ec)) {
        fail(in_quotes(dir) +
             " is not a folder; a text corpus is a folder with one subfolder of text files (.txt) per "
             "class");
    }

    int64_t loose_files = 0;
    const std::vector<fs::path> class_dirs = class_folders(root, dir, loose_files);
    refuse_split_folders(class_dirs, dir);

    LabelledTexts out;
    out.source = dir;
    int64_t empty_files = 0;
    int64_t other_files = 0;
    std::vector<std::string> latin1_files;
    std::error_code real_ec;
    const fs::path root_real = fs::canonical(root, real_ec);
    if (real_ec) fail("cannot resolve folder " + in_quotes(dir) + ": " + real_ec.message());
    std::vector<fs::path> class_reals;
    for (const auto& class_dir : class_dirs) {
        const fs::path real = fs::canonical(class_dir, real_ec);
        class_reals.push_back(real_ec ? class_dir : real);
    }
    FolderWalk walk(root_real, class_reals);
    for (size_t c = 0; c < class_dirs.size(); ++c) {
        const fs::path& class_dir = class_dirs[c];
        std::vector<fs::path> files;
        if (!walk.begin_class(class_dir, class_reals[c])) continue;
        walk.collect(class_dir, files, other_files);
        std::sort(files.begin(), files.end());

        std::vector<std::string> texts;
        for (const auto& file : files) {
            throw_if_cancelled();
            std::string text;
            std::string bytes;
            try {
                bytes = read_text_bytes(file.string());
            } catch (const DataError& e) {
                // A file without an extension may be anything (macOS's "Icon\r", a stray binary): it
                // is passed over with the reason; a .txt that is not text is an error, as before.
                if (!file.extension().empty()) throw;
                walk.skip(file, std::string("not a text file: ") + e.what());
                continue;
            }
            if (decode_text(bytes, text)) latin1_files.push_back(file.string());
            if (is_blank(text)) {
                ++empty_files;
                continue;
            }
            texts.push_back(std::move(text));
        }
        const std::string class_name = class_dir.filename().string();
        if (texts.empty()) {
            out.warnings.push_back("folder " + in_quotes(class_dir.string()) + " has no " +
                                   (files.empty() ? "" : "non-empty ") +
                                   "text files (.txt or without an extension); it is not used as a class");
            continue;
        }
        const auto label = static_cast<int32_t>(out.class_names.size());
        out.class_names.push_back(class_name);
        for (auto& text : texts) {
            out.texts.push_back(std::move(text));
            out.labels.push_back(label);
        }
    }

    add_folder_warnings(out, dir, latin1_files, walk, FolderCounts{empty_files, other_files, loose_files});
    if (out.class_names.size() < 2) {
        // The warnings are not shown with an error: what was passed over goes into the message.
        std::string passed_over;
        if (other_files > 0) passed_over += "; " + ignored_files_text(other_files, walk);
        if (!walk.skipped().empty()) passed_over += "; " + walk.skipped().front();
        fail("folder " + in_quotes(dir) +
             " needs at least two classes (subfolders with text files: .txt or without an extension); found " +
             (out.class_names.empty() ? std::string("none")
                                      : "only " + in_quotes(out.class_names.front())) + passed_over);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------

namespace {

// The field delimiter: the option's, else a tab for .tsv / .tab files and a comma otherwise.
// The delimiter the first rows agree on, for a file named .csv (or anything else) that is not one
// (Excel in locales that write ';', its "Text (tab delimited)" .txt): every one of the first five
// non-blank lines holds the same number, above 0, of it outside quotes, and not so of commas.
std::optional<char> sniff_delimiter(std::string_view text) {
    // Per line: ',' ';' '\t' counted, and whether a comma came before the first ';' / tab (a label
    // rarely holds a comma: "1,Tom &amp; Jerry" is a comma file with an entity in its text).
    std::vector<std::array<int, 3>> lines;
    std::array<int, 3> counts{};
    bool quoted = false, blank = true, comma_first = false, comma_first_anywhere = false;
    for (size_t i = 0; i < text.size() && lines.size() < 5; ++i) {
        const char c = text[i];
        if (c == '"') quoted = !quoted;
        if (!quoted && c == '\n') {
            if (!blank) lines.push_back(counts);
            comma_first_anywhere = comma_first_anywhere || (!blank && comma_first);
            counts = {};
            blank = true;
            comma_first = false;
            continue;
        }
        if (c != ' ' && c != '\r') blank = false;
        if (quoted) continue;
        if (c == ',' && counts[1] == 0 && counts[2] == 0) comma_first = true;
        counts[c == ',' ? 0 : c == ';' ? 1 : 2] += c == ',' || c == ';' || c == '\t';
    }
    if (lines.size() < 5 && !blank) {
        lines.push_back(counts);
        comma_first_anywhere = comma_first_anywhere || comma_first;
    }
    const auto steady = [&](int which) {
        return !lines.empty() && lines.front()[which] > 0 &&
               std::all_of(lines.begin(), lines.end(), [&](const auto& line) { return line[which] == lines.front()[which]; });
    };
    // A comma before the first ';' or tab of any line: a comma file. Otherwise a tab or ';' that
    // every line holds as often splits the fields, even where each text holds a comma as steadily
    // (a headerless "Sport;Tor, 3:1" file: labels rarely hold commas).
    if (comma_first_anywhere) return std::nullopt;
    if (steady(2)) return '\t';
    if (steady(1)) return ';';
    return std::nullopt;
}

char choose_delimiter(const std::string& path, const DelimitedOptions& options, std::string_view text, std::string& note) {
    char delimiter = ',';
    if (options.delimiter) {
        delimiter = *options.delimiter;
    } else {
        const std::string ext = ascii_lower(fs::path(path).extension().string());
        if (ext == ".tsv" || ext == ".tab") {
            delimiter = '\t';
        } else if (const std::optional<char> sniffed = sniff_delimiter(text)) {
            delimiter = *sniffed;
            note = std::string("read with ") + (delimiter == ';' ? "';'" : "tabs") +
                   " as the delimiter: every one of the first rows is split by them, not by commas";
        }
    }
    if (delimiter == '\n' || delimiter == '\r' || (options.quoting && delimiter == '"')) {
        fail(path + ": " + delimiter_name(delimiter) + " cannot be the field delimiter");
    }
    return delimiter;
}

// Whether the first row is a header: as the option says, or (HeaderMode::Auto) when it names a
// column, or when its label looks unlike every other row's; `reason` says why for the latter.
// Column titles data sets use for their labels and their texts (Kaggle's, the BBC's, IMDB's, the
// UCI spam set's "v1"/"v2" aside): a first row holding one is a header, and such a column is read
// as the label or the text when the header has no "label" or "text".
constexpr std::string_view kLabelNames[] = {"label", "labels", "class", "category", "target", "topic", "sentiment", "tag", "y"};
constexpr std::string_view kTextNames[] = {"text", "review", "tweet", "content", "body", "sentence", "message", "description",
                                          "document", "abstract", "headline", "comment"};

template <size_t N>
bool usual_column_name(const std::string& field, const std::string_view (&names)[N]) {
    const std::string lower = ascii_lower(trim(field));
    return std::find(std::begin(names), std::end(names), lower) != std::end(names);
}

// A header without "label" or "text" (category,description; sentiment,review; v1,v2,,,): the label
// and text columns it most likely means, and a warning saying which were taken and why, so that a
// wrong guess is seen. A column named as usual wins; else the texts are the column with the longest
// fields and the labels the one with the fewest distinct values (at least two, most rows filled).
// Returns false when no two columns fit.
bool guess_columns(const std::vector<Row>& rows, const std::vector<std::string>& header, size_t& label, size_t& text,
                   std::string& warning) {
    const size_t columns = header.size();
    std::vector<double> mean_length(columns, 0.0);
    std::vector<std::set<std::string>> distinct(columns);
    std::vector<int64_t> filled(columns, 0);
    const size_t scanned = std::min<size_t>(rows.size(), 20001);  // the first 20,000 data rows tell
    int64_t data_rows = 0;
    for (size_t r = 1; r < scanned; ++r) {
        const std::vector<std::string>& fields = rows[r].fields;
        if (std::all_of(fields.begin(), fields.end(), [](const std::string& f) { return is_blank(f); })) continue;  // ",,"
        ++data_rows;
        for (size_t c = 0; c < columns && c < rows[r].fields.size(); ++c) {
            const std::string_view value = trim(rows[r].fields[c]);
            if (value.empty()) continue;
            ++filled[c];
            mean_length[c] += static_cast<double>(value.size());
            if (distinct[c].size() <= 100000) distinct[c].emplace(value);
        }
    }
    auto usable = [&](size_t c) { return filled[c] * 2 > data_rows; };  // Kaggle's empty extra columns are not
    // A column titled "label" / "text" first, then the usual titles in the lists' order.
    auto by_name = [&](const auto& names, size_t other) -> std::optional<size_t> {
        for (const std::string_view name : names) {
            for (size_t c = 0; c < columns; ++c) {
                if (c != other && usable(c) && ascii_lower(trim(header[c])) == name) return c;
            }
        }
        return std::nullopt;
    };
    std::string why_label, why_text;
    std::optional<size_t> found_label = by_name(kLabelNames, columns);
    std::optional<size_t> found_text = by_name(kTextNames, found_label.value_or(columns));
    if (found_label) why_label = "a usual name for labels";
    if (found_text) why_text = "a usual name for texts";
    if (!found_text) {
        for (size_t c = 0; c < columns; ++c) {
            if (c == found_label || !usable(c)) continue;
            // The longest fields; of equally long ones, the more varied.
            const auto key = [&](size_t k) { return std::pair{mean_length[k] / static_cast<double>(filled[k]), distinct[k].size()}; };
            if (!found_text || key(c) > key(*found_text)) found_text = c;
        }
        why_text = "the longest fields";
    }
    if (!found_label) {
        for (size_t c = 0; c < columns; ++c) {
            if (c == found_text || !usable(c) || distinct[c].size() < 2) continue;
            if (!found_label || distinct[c].size() < distinct[*found_label].size()) found_label = c;
        }
        if (found_label) why_label = std::to_string(distinct[*found_label].size()) + " distinct values, the fewest";
    }
    if (!found_label || !found_text) return false;
    label = *found_label;
    text = *found_text;
    const bool has_label = find_column(header, "label").has_value(), has_text = find_column(header, "text").has_value();
    warning = std::string("the header names no ") + (has_label ? "\"text\" column" : has_text ? "\"label\" column" : "\"label\" and \"text\" columns") +
              ": the labels are read from " + in_quotes(header[label]) +
              " (" + why_label + ") and the texts from " + in_quotes(header[text]) + " (" + why_text +
              "); if that is wrong, title the two columns label and text";
    return true;
}

bool has_header_row(const std::vector<Row>& rows, const DelimitedOptions& options, std::string& reason) {
    const bool label_named = !options.label_column.empty() && !all_digits(options.label_column);
    const bool text_named = !options.text_column.empty() && !all_digits(options.text_column);
    const size_t label_guess = all_digits(options.label_column)
                                   ? column_index_of(options.label_column)
                                   : 0;
    bool has_header = false;
    switch (options.header) {
        case HeaderMode::Present:
            has_header = true;
            break;
        case HeaderMode::Absent:
            has_header = false;
            break;
        case HeaderMode::Auto: {
            const Row& first = rows.front();
            // "label" or "text" anywhere; another usual title only where it is not also a value of
            // its column further down ("y" is a title, and a class in yes/no data).
            bool names_default = false;
            for (size_t c = 0; c < first.fields.size() && !names_default; ++c) {
                const std::string lower = ascii_lower(trim(first.fields[c]));
                if (lower == "label" || lower == "text") {
                    names_default = true;
                } else if (usual_column_name(first.fields[c], kLabelNames) || usual_column_name(first.fields[c], kTextNames)) {
                    names_default = std::none_of(rows.begin() + 1, rows.end(), [&](const Row& row) {
                        return c < row.fields.size() && ascii_lower(trim(row.fields[c])) == lower;
                    });
                }
            }
            if (label_named || text_named || names_default) {
                has_header = true;
                break;
            }
            std::vector<std::string> later;  // label fields of the other rows
            for (size_t r = 1; r < rows.size(); ++r) {
                if (label_guess < rows[r].fields.size())
                    later.emplace_back(trim(rows[r].fields[label_guess]));
            }
            if (label_guess >= first.fields.size() || later.empty()) break;
            const std::string first_label(trim(first.fields[label_guess]));
            const bool later_integers =
                std::all_of(later.begin(), later.end(),
                            [](const std::string& l) { return parse_integer(l).has_value(); });
            if (!parse_integer(first_label) && later_integers) {
                has_header = true;
                reason = "the first row was taken as a header because its label " +
                         in_quotes(first_label) + " is not an integer while all other labels are";
                break;
            }
            std::map<std::string, int64_t> counts;
            for (const auto& l : later) ++counts[l];
            const bool repeated = std::all_of(counts.begin(), counts.end(),
                                              [](const auto& kv) { return kv.second >= 2; });
            if (later.size() >= 4 && counts.size() >= 2 && repeated &&
                counts.count(first_label) == 0) {
                has_header = true;
                reason = "the first row was taken as a header because its label " +
                         in_quotes(first_label) +
                         " occurs nowhere else while every other label occurs at least twice";
            }
            break;
        }
    }
    return has_header;
}

}  // namespace

namespace {

// The label and text columns: as the options name them, else titled label and text in the header,
// else guessed from a header with other titles (said in `warnings`), else columns 0 and 1.
std::pair<Column, Column> choose_columns(const std::vector<Row>& rows, bool has_header, const DelimitedOptions& options,
                                         const std::string& path, const std::string& header_reason,
                                         std::vector<std::string>& warnings) {
    const std::vector<std::string>* header = has_header ? &rows.front().fields : nullptr;
    const int64_t header_line = rows.front().line;
    size_t guessed_label = 0, guessed_text = 0;
    std::string guess;
    if (header != nullptr && options.label_column.empty() && options.text_column.empty() &&
        !(find_column(*header, "label") && find_column(*header, "text")) &&
        guess_columns(rows, *header, guessed_label, guessed_text, guess)) {
        warnings.push_back(guess);
        return {Column{guessed_label, "label"}, Column{guessed_text, "text"}};
    }
    return {resolve_column(options.label_column, "label", 0, header, path, header_line, header_reason),
            resolve_column(options.text_column, "text", 1, header, path, header_line, header_reason)};
}

// The rows that are not blank. Files joined one after another (`cat a.csv b.csv`): the second
// one's byte-order mark began a label ("\uFEFFsport", a class of its own that prints as "sport"),
// and its header row became a sample of the class "label". The marks go before the rows are parsed
// (a quoted field after one would keep its quotes), counted in `joined_files`; read_delimited drops
// the repeated header. Quotes read as text are said in `warnings`.
std::vector<Row> non_blank_rows(std::string& text, char delimiter, bool quoting, int64_t& joined_files,
                                std::vector<std::string>& warnings) {
    for (size_t at = text.find("\n\xEF\xBB\xBF"); at != std::string::npos; at = text.find("\n\xEF\xBB\xBF", at + 1)) {
        text.erase(at + 1, 3);
        ++joined_files;
    }
    std::vector<Row> rows;
    std::vector<int64_t> literal_quote_lines;
    for (auto& row : parse_rows(text, delimiter, quoting, literal_quote_lines)) {
        if (!row.blank) rows.push_back(std::move(row));
    }
    if (!literal_quote_lines.empty()) {
        std::string lines;
        for (size_t k = 0; k < literal_quote_lines.size() && k < 5; ++k)
            lines += (k == 0 ? "" : ", ") + std::to_string(literal_quote_lines[k]);
        if (literal_quote_lines.size() > 5) lines += ", ...";
        warnings.push_back(
            plural(static_cast<int64_t>(literal_quote_lines.size()), "field starts", "fields start") + " with a '\"' that is " +
            "not closed on its line (line" + (literal_quote_lines.size() == 1 ? " " : "s ") + lines +
            "): read as a quoted field it would take in the next rows, so the '\"' is read as part of the text; "
            "if a field really holds line breaks, end it with '\"' followed by the delimiter or the line's end");
    }
    return rows;
}

[[noreturn]] void refuse_short_row(const std::string& where, size_t fields, const Column& widest, char delimiter, bool quoting) {
    fail(where + "the row has " + plural(static_cast<int64_t>(fields), "field", "fields") + ", but the " + widest.what +
         " column is column " + std::to_string(widest.index) + " (0-based), so it needs at least " +
         std::to_string(widest.index + 1) + "; the delimiter is " + delimiter_name(delimiter) +
         (quoting ? ", and fields containing it must be quoted" : ""));
}

// How the first row was taken when the file did not say: as a header (and why), or as data.
std::string header_guess_text(const std::string& reason, bool has_header) {
    if (!reason.empty()) return reason + "; if that is wrong, give the file a header row naming its columns label and text";
    return has_header ? std::string() : "no header row found; the first row is read as data";
}

// What files joined one after another left: header rows repeated, byte-order marks inside.
void add_joined_file_warnings(const std::vector<int64_t>& header_lines, int64_t joined_files, std::vector<std::string>& warnings) {
    if (!header_lines.empty()) {
        warnings.push_back("skipped " + plural(static_cast<int64_t>(header_lines.size()), "row that repeats", "rows that repeat") +
                           " the header row (line " + std::to_string(header_lines.front()) + (header_lines.size() > 1 ? ", ..." : "") +
                           "): files joined one after another?");
    }
    if (joined_files > 0) {
        warnings.push_back("dropped " + plural(joined_files, "byte-order mark", "byte-order marks") +
                           " at the start of a line (files joined one after another?)");
    }
}

// The first group of two or more labels that read alike (`how`), as a warning: one example is
// enough to see it.
template <typename Key>
void warn_of_alike_labels(const std::map<Key, std::vector<std::string>>& groups, const std::string& how, LabelledTexts& out) {
    for (const auto& [key, names] : groups) {
        if (names.size() < 2) continue;
        std::string listed;
        for (const std::string& name : names) listed += (listed.empty() ? "" : " and ") + name;
        out.warnings.push_back("the labels " + listed + " " + how + " and are different classes; write them alike if they are one");
        return;
    }
}

// The classes of the rows read, refused where they cannot be classes.
void assign_checked_classes(const std::vector<std::string>& raw_labels, size_t label_column, bool named_by_header,
                            const std::string& path, LabelledTexts& out) {
    if (out.texts.empty()) fail(path + ": no row has a text");
    assign_classes(raw_labels, out);
    // A label of its own on every row (IMDB's CSV read without its header, the text first): the
    // columns are the other way round, which the split would blame on a class with one sample.
    if (out.texts.size() >= 10 && out.class_names.size() == out.texts.size()) {
        const std::string where = std::to_string(out.texts.size()) + " distinct labels in column " + std::to_string(label_column) +
                                  ", e.g. " + in_quotes(out.class_names.front());
        if (named_by_header) {  // the header named the column: swapping columns is not the fix
            fail(path + ": every row has a label of its own (" + where +
                 "): a class needs several samples to be learned; give each class more rows, or label the rows by fewer classes");
        }
        fail(path + ": every row has a label of its own (" + where +
             "): that column holds texts, not classes; put the label column first, or give the file a header row "
             "naming the columns label and text");
    }
    if (out.class_names.size() < 2) {
        fail(path + ": needs at least two classes; every row has the label " + in_quotes(out.class_names.front()));
    }
    // "Sport" and "sport": two classes the model must tell apart, most likely meant as one.
    std::map<std::string, std::vector<std::string>> by_lower_case;
    for (const std::string& name : out.class_names) by_lower_case[ascii_lower(name)].push_back(in_quotes(name));
    warn_of_alike_labels(by_lower_case, "differ only in case", out);
    // "1" and "1.0" (or "01" once any label is not an integer): one number written two ways, two
    // classes, and the class order changed with them, without a word.
    // Keyed by the number's shortest text: integers exactly (codes beyond 2^53 stay apart), others
    // as doubles.
    std::map<std::string, std::vector<std::string>> by_value;
    for (const std::string& name : out.class_names) {
        const char* first = name.data();
        const char* last = name.data() + name.size();
        int64_t integer = 0;
        double value = 0.0;
        if (const auto [end, error] = std::from_chars(first, last, integer); error == std::errc() && end == last) {
            by_value[std::to_string(integer)].push_back(in_quotes(name));
        } else if (const auto [end2, error2] = std::from_chars(first, last, value);
                   error2 == std::errc() && end2 == last && std::isfinite(value)) {
            char key[40];
            const auto [key_end, key_error] = std::to_chars(key, key + sizeof key, value);
            if (key_error == std::errc()) by_value[std::string(key, key_end)].push_back(in_quotes(name));
        }
    }
    warn_of_alike_labels(by_value, "are one number written differently", out);
}

}  // namespace

LabelledTexts read_delimited(const std::string& path, const DelimitedOptions& options) {
    std::string text;
    int64_t first_latin1_line = 0;
    const bool latin1 = decode_text(read_text_bytes(path), text, &first_latin1_line);

    std::string delimiter_note;
    const char delimiter = choose_delimiter(path, options, text, delimiter_note);

    LabelledTexts out;
    out.source = path;
    // The line tells a UTF-8 file with one stray byte (fix that line) from a Latin-1 file.
    if (latin1) out.warnings.push_back(latin1_warning(path) + " (the first byte that is not UTF-8 is on line " +
                                       std::to_string(first_latin1_line) + ")");
    if (!delimiter_note.empty()) out.warnings.push_back(delimiter_note);

    int64_t joined_files = 0;
    std::vector<Row> rows = non_blank_rows(text, delimiter, options.quoting, joined_files, out.warnings);
    if (rows.empty())
        fail(path +
             ": the file is empty; expected one row per sample with a label and a text column");

    std::string reason;  // why a header was assumed (only for the heuristic rules)
    const bool has_header = has_header_row(rows, options, reason);
    const auto repeats_header = [&](const Row& row) {
        if (!has_header || row.fields.size() != rows.front().fields.size()) return false;
        for (size_t f = 0; f < row.fields.size(); ++f)
            if (trim(row.fields[f]) != trim(rows.front().fields[f])) return false;
        return true;
    };
    std::vector<int64_t> header_lines;
    if (const std::string guess = header_guess_text(reason, has_header); options.header == HeaderMode::Auto && !guess.empty())
        out.warnings.push_back(guess);

    if (rows.size() <= (has_header ? 1u : 0u)) fail(path + ": the file has a header row but no data rows");
    const auto [label, text_column] = choose_columns(rows, has_header, options, path, reason, out.warnings);
    if (label.index == text_column.index) {
        fail(path + ": the label and the text column are the same column (" +
             std::to_string(label.index) + "); choose two different columns");
    }
    const size_t needed = std::max(label.index, text_column.index) + 1;
    const Column& widest = label.index > text_column.index ? label : text_column;

    std::vector<std::string> raw_labels;
    int64_t empty_texts = 0, data_rows = 0, cut_texts = 0;
    const size_t first_data = has_header ? 1 : 0, columns = has_header ? rows.front().fields.size() : needed;
    for (size_t r = first_data; r < rows.size(); ++r) {
        Row& row = rows[r];
        const std::string where = path + ":" + std::to_string(row.line) + ": ";
        // ",", ",,": a spreadsheet's rows below the data, as blank as a blank line.
        if (std::all_of(row.fields.begin(), row.fields.end(), [](const std::string& f) { return is_blank(f); })) continue;
        if (repeats_header(row)) {
            header_lines.push_back(row.line);
            continue;
        }
        if (row.fields.size() < needed) refuse_short_row(where, row.fields.size(), widest, delimiter, options.quoting);
        const std::string label_value(trim_label(row.fields[label.index]));
        if (label_value.empty())
            fail(where + "the label (column " + std::to_string(label.index) + ") is empty");
        ++data_rows;
        cut_texts += text_column.index + 1 == columns &&  // a trailing delimiter alone cuts nothing
                     std::any_of(row.fields.begin() + std::min(columns, row.fields.size()), row.fields.end(), [](const std::string& f) { return !is_blank(f); });
        std::string& sample = row.fields[text_column.index];
        if (is_blank(sample)) {
            ++empty_texts;
            continue;
        }
        raw_labels.push_back(label_value);
        out.texts.push_back(std::move(sample));
    }
    if (empty_texts > 0)
        out.warnings.push_back("skipped " + plural(empty_texts, "row", "rows") +
                               " with an empty text");
    add_joined_file_warnings(header_lines, joined_files, out.warnings);
    // More fields than the columns, the text the last: an unquoted delimiter in the text cut it there
    // (the rest was dropped without a word). Without a header, only when some rows are longer.
    if (cut_texts > 0 && (has_header || cut_texts < data_rows)) {
        out.warnings.push_back(plural(cut_texts, "row has", "rows have") + " more than " + std::to_string(columns) +
                               " fields: the text, the last column, holds an unquoted " + delimiter_name(delimiter) +
                               " and is read up to it; quote such texts (\"...\")");
    }
    const bool named_by_header = has_header && label.index < rows.front().fields.size() &&
                                 usual_column_name(rows.front().fields[label.index], kLabelNames);
    assign_checked_classes(raw_labels, label.index, named_by_header, path, out);
    return out;
}

// ---------------------------------------------------------------------------------------------

namespace {

// The split and the corpus as build_dataset() needs them: texts and labels that match, labels in
// range; `who` names the corpus in the message.
void check_corpus(const LabelledTexts& corpus, double validation_split, const std::string& who) {
    if (!(validation_split >= 0.0 && validation_split < 1.0)) {
        std::ostringstream value;
        value << validation_split;
        fail("validation_split is " + value.str() +
             "; it must be at least 0 and less than 1 (e.g. 0.2)");
    }
    if (corpus.texts.size() != corpus.labels.size()) {
        fail(who + " has " + std::to_string(corpus.texts.size()) + " texts but " +
             std::to_string(corpus.labels.size()) + " labels; they must match");
    }
    if (corpus.texts.empty()) fail(who + " has no texts");
    if (corpus.class_names.empty()) fail(who + " has no class names");
    const auto num_classes = static_cast<int32_t>(corpus.class_names.size());
    for (size_t i = 0; i < corpus.labels.size(); ++i) {
        if (corpus.labels[i] < 0 || corpus.labels[i] >= num_classes) {
            fail(who + ": sample " + std::to_string(i) + " has label " +
                 std::to_string(corpus.labels[i]) + ", outside [0, " + std::to_string(num_classes) +
                 ")");
        }
    }
}

// Every class needs a training sample, or the model could never learn it.
void require_every_class_in_training(const LabelledTexts& corpus, const std::vector<int32_t>& train_labels,
                                     const std::string& who) {
    const auto num_classes = static_cast<int32_t>(corpus.class_names.size());
    std::vector<int64_t> train_counts(static_cast<size_t>(num_classes), 0);
    for (int32_t label : train_labels) ++train_counts[static_cast<size_t>(label)];
    for (int32_t c = 0; c < num_classes; ++c) {
        if (train_counts[static_cast<size_t>(c)] > 0) continue;
        const auto total = std::count(corpus.labels.begin(), corpus.labels.end(), c);
        fail(who + ": class " + in_quotes(corpus.class_names[static_cast<size_t>(c)]) +
             " has no training sample (" +
             (total == 0
                  ? std::string("it has no samples at all")
                  : "its " + plural(total, "sample went", "samples went") + " to validation") +
             "); add samples or lower validation_split");
    }
}

}  // namespace

namespace {

// Chinese, Japanese or Thai written without spaces between words (as they are): at least 20 of
// their characters, more than 10 per space.
bool unspaced_script(const std::string& text) {
    int64_t script = 0, spaces = 0;
    for (size_t i = 0; i < text.size();) {
        uint32_t cp = 0;
        const size_t length = utf8_code_point(text, i, cp);
        if (length == 0) {
            ++i;
            continue;
        }
        script += (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x0E00 && cp <= 0x0E7F) ||
                  (cp >= 0x3400 && cp <= 0x4DBF);
        spaces += cp == ' ' || cp == '\n' || cp == '\t';
        i += length;
    }
    return script >= 20 && script > 10 * (spaces + 1);
}

// What tokenizing did that a person would not expect: texts left with no word (only punctuation
// or symbols) trained as empty sequences, and scripts without spaces became one "word" per text,
// both without a word.
void add_tokenizing_warnings(DatasetSplit& split, const std::vector<std::string>& train_texts, const std::string& who) {
    int64_t empty = 0, texts = 0;
    for (const TextDataset* part : {&split.train, &split.validation}) {
        for (const auto& sequence : part->sequences) empty += sequence.empty();
        texts += static_cast<int64_t>(part->sequences.size());
    }
    if (empty == texts) {
        fail(who + ": no text has a word the tokenizer keeps (they hold only punctuation and symbols, which it drops as "
                   "Keras' does); check that the text column holds the texts");
    }
    if (empty > 0) {
        split.warnings.push_back(plural(empty, "text has", "texts have") +
                                 " no word the tokenizer keeps (only punctuation and symbols, which it drops as Keras' does): "
                                 "the model sees an empty sequence for them");
    }
    const auto unspaced = std::count_if(train_texts.begin(), train_texts.end(), unspaced_script);
    if (unspaced * 5 > static_cast<int64_t>(train_texts.size())) {
        split.warnings.push_back(plural(unspaced, "training text is", "training texts are") +
                                 " Chinese, Japanese or Thai without spaces between words: the tokenizer splits words at spaces "
                                 "(as Keras'), so each run of them is one word that seldom repeats; put spaces between the "
                                 "words first (a word segmenter such as jieba for Chinese or MeCab for Japanese)");
    }
}

}  // namespace

DatasetSplit build_dataset(LabelledTexts corpus, const TokenizerOptions& tokenizer_options,
                           double validation_split, uint64_t seed, std::string name,
                           Tokenizer* tokenizer_out) {
    const std::string who =
        corpus.source.empty() ? std::string("the corpus") : in_quotes(corpus.source);
    check_corpus(corpus, validation_split, who);
    const auto num_classes = static_cast<int32_t>(corpus.class_names.size());

    const size_t n = corpus.texts.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    DataRandom random(seed);
    for (size_t i = n; i > 1; --i)
        std::swap(order[i - 1], order[static_cast<size_t>(random.below(i))]);

    auto validation_count =
        static_cast<size_t>(std::floor(validation_split * static_cast<double>(n)));
    if (validation_split > 0.0 && validation_count == 0 && n >= 2) validation_count = 1;
    const size_t train_count = n - validation_count;

    // A class whose every sample fell into the validation split (one with a single sample, or a
    // few and bad luck) could never be learned, and the load failed on it: the first of them trains
    // instead, and a warning says so (the validation split is that much smaller).
    std::vector<bool> trains(n, false);
    std::vector<int64_t> train_counts(static_cast<size_t>(num_classes), 0);
    for (size_t k = 0; k < train_count; ++k) {
        trains[k] = true;
        ++train_counts[static_cast<size_t>(corpus.labels[order[k]])];
    }
    std::vector<std::string> moved;
    for (size_t k = train_count; k < n; ++k) {
        const auto label = static_cast<size_t>(corpus.labels[order[k]]);
        if (train_counts[label] > 0) continue;
        trains[k] = true;
        ++train_counts[label];
        moved.push_back(in_quotes(corpus.class_names[label]));
    }

    std::vector<std::string> train_texts;
    std::vector<std::string> validation_texts;
    DatasetSplit split;
    if (!moved.empty()) {
        std::string names;
        for (size_t m = 0; m < moved.size() && m < 10; ++m) names += (m == 0 ? "" : ", ") + moved[m];
        if (moved.size() > 10) names += ", ...";
        split.warnings.push_back(plural(static_cast<int64_t>(moved.size()), "class", "classes") + " (" + names +
                                 ") had every sample in the validation split; one sample of each trains instead, so that "
                                 "the model can learn it (add samples to validate it too)");
    }
    for (size_t k = 0; k < n; ++k) {
        const size_t i = order[k];
        if (trains[k]) {
            train_texts.push_back(std::move(corpus.texts[i]));
            split.train.labels.push_back(corpus.labels[i]);
        } else {
            validation_texts.push_back(std::move(corpus.texts[i]));
            split.validation.labels.push_back(corpus.labels[i]);
        }
    }

    require_every_class_in_training(corpus, split.train.labels, who);

    Tokenizer tokenizer(tokenizer_options);
    split.train.sequences = tokenizer.fit_on_texts_and_sequence(train_texts);
    split.validation.sequences = tokenizer.texts_to_sequences(validation_texts);
    add_tokenizing_warnings(split, train_texts, who);
    for (TextDataset* part : {&split.train, &split.validation}) {
        part->name = name;
        part->synthetic = false;
        part->num_classes = num_classes;
        part->vocabulary_size = tokenizer.vocabulary_size();
        part->class_names = corpus.class_names;
    }
    split.train.validate();
    if (!split.validation.sequences.empty()) split.validation.validate();
    if (tokenizer_out != nullptr) *tokenizer_out = std::move(tokenizer);
    return split;
}

}  // namespace mirrorlab
