#pragma once
// Builds Keras' Reuters newswire data set (`reuters.npz`: 11,228 wires, 46 topics, a vocabulary
// of 30,979 words) from the raw UCI Reuters-21578 "Distribution 1.0" SGML files
// (reut2-000.sgm ... reut2-021.sgm), offline.
//
// The recipe is Keras' original `make_reuters_dataset()` script (keras/datasets/reuters.py of
// Keras 0.2, run under Python 2.7 in 2015), quirks included. Applied to the 22 UCI files it gives
// exactly Keras' data: 11,228 wires, label 3 = 'earn' (3,972 wires, the largest class; per-class
// counts 67, 537, 94, 3972, 2423, ... equal Keras' train + test counts), and the same word index
// (checked against the real script under CPython 2.7.18: all 30,979 ranks agree, and so does
// x_train[0] of load_data(num_words=10000), all 87 ids).
//
//  1. Files: the regular files named `reut2-NNN.sgm` in the folder, in byte-wise name order
//     (Keras listed the folder; name order is what gives label 3 = 'earn'). Each file is read as
//     raw bytes, i.e. Latin-1: the files are ASCII except for one 0xFC byte ('ü') in
//     reut2-017.sgm, which is not valid UTF-8. No SGML entity is decoded: `&lt;` becomes the word
//     "lt", `&amp;` "amp", and the end-of-text mark `&#3;` after "Reuter" at the end of nearly
//     every body becomes the word "3" (rank 9 of the vocabulary, as in Keras' word index).
//  2. Wires: find `<TOPICS>`; its content is what follows, up to the next `</`. For
//     `<TOPICS><D>earn</D><D>acq</D></TOPICS>` that is `<D>earn`, so a wire with several topics
//     counts under its first one (1,873 of the 11,367 wires with topics). Empty content
//     (`<TOPICS></TOPICS>`) skips the wire. The topic name is the content with every `<D>`
//     removed. The next search for `<TOPICS>` starts right after this tag.
//  3. Text: whatever follows the next `<BODY>` after the `<TOPICS>` tag, up to the next `</`.
//     The 990 topic wires without a body of their own (TEXT TYPE="BRIEF"/"UNPROC") therefore
//     take the body of a later wire of the same file (one whose own topics may be empty). When
//     no `<BODY>` follows at all (one wire: the last topic wire of reut2-006.sgm), Python's
//     `find` returned -1 and the text starts 5 bytes after the `<TOPICS>` tag (-1 + len("<BODY>")),
//     again up to the next `</`: for `<D>earn</D>` that text is "rn".
//  4. Topics: count wires per topic over all wires with topics; keep the topics with at least
//     `min_wires_per_topic` (15) wires and the wires that carry them (11,228). Labels are
//     numbered by first appearance among the kept wires, in file order.
//  5. Tokens (the Tokenizer defaults of the time, text_to_word_sequence on Python 2 byte strings):
//     lower-case ASCII A-Z only (Python 2's str.lower; Latin-1 capitals stay as they are), replace
//     each of !"#$%&()*+,-./:;<=>?@[\]^_`{|}~ (Python's string.punctuation without the
//     apostrophe) and tab and newline by a space, split on single spaces, drop empty pieces.
//     Other bytes (apostrophe, digits, other control bytes) stay inside words.
//  6. Vocabulary: words counted over the kept wires only (counting over all 11,367 topic wires
//     would give 31,224 words) into a Python 2.7 dict, in text order (Tokenizer.fit_on_texts);
//     then `sorted(word_counts.items(), key=count, reverse=True)`, a stable sort, so words with
//     equal counts keep the dict's iteration order, i.e. CPython 2.7's hash-table slot order
//     (python2_dict_order.h emulates it; first-seen order, as a Python 3.7+ dict would give, ranks
//     e.g. "space" 3121 instead of 3092). Rank 1 = "the"; xs hold the ranks (1-based, no
//     start/OOV offsets: Keras' load_data adds those later).
//
// Where Python would have silently sliced with -1 (a `<TOPICS>` or a text without a following
// `</`, i.e. a truncated file) this reader throws DataError naming the file instead; so it does
// for a `<TOPICS>` whose content runs for more than 4 KiB (no Reuters-21578 file has one), and
// for a file whose wire texts add up to more than 8 times its size plus 1 MiB (many bodiless
// wires taking one long body; the UCI files' texts add up to less than half their size).
// Each file is read with the data-file size cap (core/util/file.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab {

// How step 6 orders words with equal counts.
enum class Reuters21578TieOrder {
    kPython2Dict,  // CPython 2.7 dict iteration order: Keras' word index
    kFirstSeen,    // order of first appearance (an insertion-ordered dict, Python 3.7+)
};

struct Reuters21578Options {
    // Topics with fewer wires are dropped along with their wires (Keras: 15).
    int min_wires_per_topic = 15;
    Reuters21578TieOrder tie_order = Reuters21578TieOrder::kPython2Dict;
};

struct Reuters21578Corpus {
    std::vector<std::vector<int64_t>> xs;  // per kept wire: word ranks (1 = most frequent word)
    std::vector<int64_t> labels;           // per kept wire: index into `topics`
    std::vector<std::string> topics;       // label -> topic name
    std::vector<std::string> words;        // rank - 1 -> word (UTF-8; index 0 holds rank 1)
    // Diagnostics over all files, before the topic filter:
    int64_t wires_with_topics = 0;  // wires whose <TOPICS> is not empty (11,367)
    int64_t multi_topic_wires = 0;  // of those, wires with more than one topic (1,873)
    int64_t wires_without_body =
        0;  // of those, wires with no <BODY> before the next <TOPICS> (990)
    // Bytes the tag searches of steps 2 and 3 looked at, over all files. The reader is linear:
    // this stays within a few times the files' total size (1.5 times on the UCI files),
    // however many wires lack a body of their own.
    int64_t bytes_searched = 0;
    // What makes the data differ from Keras': files of the UCI distribution missing, empty or cut
    // short (their article counts), other reut2-*.sgm names ignored.
    std::vector<std::string> warnings;
};

// The `reut2-NNN.sgm` files of `directory` (full paths), in name order; other `reut2-*.sgm` names
// (a browser's "reut2-003 (1).sgm") go to `ignored`. Throws DataError when the folder does not
// exist or holds no such file.
std::vector<std::string> reuters21578_file_names(const std::string& directory, std::vector<std::string>* ignored = nullptr);

// Reads and converts all files (see the recipe above). Throws DataError naming the folder or the
// file for a missing folder, no reut2-NNN.sgm files, an unreadable file or a truncated file.
Reuters21578Corpus read_reuters21578(const std::string& directory,
                                     const Reuters21578Options& options = {});

// Step 5 on one text: the words, as Latin-1 bytes (not converted to UTF-8).
std::vector<std::string> reuters21578_tokenize(std::string_view text);

}  // namespace mirrorlab
