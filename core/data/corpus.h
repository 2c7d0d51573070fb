#pragma once
// People's own text corpora: a folder of class folders, or a CSV/TSV file, read into labelled raw
// texts, then tokenized (Keras Tokenizer) and split into a training and a validation set.
//
// Both loaders return UTF-8 text. In a file that is not valid UTF-8, every byte that is not part of
// a valid UTF-8 sequence is read as Latin-1 (0x80..0x9F as Windows-1252, which is what "Latin-1"
// files almost always are) and a warning names the file ("file X is not UTF-8; read as Latin-1"):
// a Latin-1 file decodes as Latin-1, a UTF-8 file with stray Latin-1 bytes keeps its UTF-8
// characters, and mixed encodings never fail. A leading UTF-8 byte-order mark is dropped, and line
// ends are normalised as Python's text mode does ("\r\n" and "\r" become "\n"). A file holding a
// NUL byte is refused, named as UTF-16 (with or without its byte-order mark), as a gzip or zip
// file, or as not text, with the line of the first NUL. Errors are
// DataError with a message that names the path (and the line for CSV/TSV) and how to fix it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/tokenizer.h"

namespace mirrorlab {

struct LabelledTexts {
    std::vector<std::string> texts;
    std::vector<int32_t> labels;           // index into class_names
    std::vector<std::string> class_names;  // sorted (see the loaders)
    std::vector<std::string> warnings;     // for people: skipped files, encodings, header guesses
    std::string source;                    // the folder or file read
};

// One folder per class (class names = subfolder names, sorted by bytes), with text files inside:
// .txt (in any case, searched recursively like Keras' text_dataset_from_directory; files sorted by
// path), and files without an extension (20 Newsgroups' numbered files). Ignored: folders and files
// whose names start with '.'; README, LICENSE and the like; a file without an extension that is
// not text (skipped with a warning naming it); other files (a counted warning naming the first, and
// named in the error when too few classes remain). Empty files (nothing but whitespace) are skipped
// with a counted warning. A link to nothing (files git-annex or DVC never fetched) and an entry
// that cannot be looked at (no permission) are skipped with a warning. A subfolder with no
// non-empty text file is not a class: it is skipped with a warning (stray folders such as IMDB's
// "unsup" or "__MACOSX" are common). Symbolic links are followed, but every folder and file is read
// at most once (a link loop ends, a second link reads nothing twice), and a link that leads back
// into the corpus outside its own class folder, or to a folder that holds the corpus or a class
// folder (".."), is skipped with a warning naming it: its files would be read under the wrong
// class. Errors: the folder is missing or not a folder, it has no subfolders, its subfolders are a
// data set's splits (train, test, ...) each holding the same class folders, a .txt file cannot be
// read, is not text or is larger than 2 GiB, or fewer than two classes remain ("needs at least two
// classes").
LabelledTexts read_text_folder(const std::string& dir);

// One text from a file, read as a folder corpus reads its files (UTF-8, stray bytes as Latin-1 with
// `latin1` set; NUL bytes and UTF-16 refused), of at most `max_bytes` (`limit_name` says what the
// limit is for).
std::string read_text_file(const std::string& path, std::uint64_t max_bytes, std::string_view limit_name, bool* latin1 = nullptr);

enum class HeaderMode { Auto, Present, Absent };

struct DelimitedOptions {
    // Field separator; unset = by extension: ".tsv" and ".tab" -> tab, anything else -> ','.
    std::optional<char> delimiter;
    // RFC 4180 quoting: a field that starts with '"' runs to the next lone '"', may hold the
    // delimiter and line breaks, and "" inside it is one '"'. A field whose '"' is not closed on its
    // line and whose closing '"' is followed by more text (or that no '"' closes) is read unquoted,
    // with a warning: its '"' opened a quotation in the text, and quoting would swallow the rows up
    // to the next '"'.
    // Off = quotes are ordinary characters.
    bool quoting = true;
    // Auto: the first row is a header when
    //   1. a column is chosen by name (it must then be in the first row), or
    //   2. the first row has a field named "label" or "text" (any case), or
    //   3. its label field is not an integer while every later label field is, or
    //   4. its label field never occurs again while every later label value occurs at least twice
    //      (needs at least four later rows): a column title, not a class.
    // The warnings say which rule decided (or that no header was found).
    HeaderMode header = HeaderMode::Auto;
    // A column name or a 0-based index ("0", "3"); a name that is all digits is matched against
    // the header first. Empty = "label" / "text" when there is a header, else columns 0 / 1.
    // Names match exactly, else ignoring case and surrounding spaces.
    std::string label_column;
    std::string text_column;
};

// CSV or TSV with one sample per row. Labels are trimmed; when every label is an integer the
// classes are the distinct integers in numeric order (names "1", "2", "10"), else the distinct
// strings in byte order. Blank lines are ignored; rows whose text is empty are skipped with a
// counted warning; extra fields are ignored. Errors (naming file and line): the file is missing,
// not a regular file, larger than 2 GiB or empty, a named column is not in the header ("column
// 'text' not found; the header has: id, body, topic"), a row has too few fields, an empty label,
// a quote still open at the end of the file (naming the line where it opened), no data rows, or
// only one class.
LabelledTexts read_delimited(const std::string& path, const DelimitedOptions& options = {});

// Shuffles the samples deterministically (DataRandom(seed), Fisher-Yates), keeps the last
// floor(validation_split * n) of them for validation (at least one when validation_split > 0 and
// there are two or more samples; Keras' text_dataset_from_directory also takes the tail), fits a
// Tokenizer on the training texts only, and converts both parts with it. Ids are the tokenizer's
// (0 = padding, 1 = OOV when options.oov_token is set; no start id), vocabulary_size =
// tokenizer.vocabulary_size(), synthetic = false, both parts are called `name`. A text may become
// an empty sequence (all words unknown or cut by num_words). Throws DataError when
// validation_split is not in [0, 1), the texts and labels disagree, a label is out of range, or a
// class has no training sample (naming the class). `tokenizer_out`, when given, receives the
// fitted tokenizer (for decoding and for converting new texts the same way).
// `corpus` by value: its texts move into the splits (a large CSV's texts are hundreds of MB).
DatasetSplit build_dataset(LabelledTexts corpus, const TokenizerOptions& tokenizer_options,
                           double validation_split, uint64_t seed, std::string name,
                           Tokenizer* tokenizer_out = nullptr);

// Encoding helpers the loaders use (exposed for tests and for the UI's previews).
bool is_valid_utf8(std::string_view bytes);
// The valid (shortest-form, non-surrogate) UTF-8 sequence at byte `i`: its length in bytes, and
// its code point in `code_point`; 0 when the bytes there are not one (`code_point` is then the byte).
size_t utf8_code_point(std::string_view s, size_t i, uint32_t& code_point);
// Latin-1 with 0x80..0x9F as Windows-1252 (the five bytes it leaves undefined stay U+0080..U+009F).
std::string latin1_to_utf8(std::string_view bytes);

}  // namespace mirrorlab
