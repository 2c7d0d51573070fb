// People's own corpora: the Keras Tokenizer, the text-folder and CSV/TSV loaders, build_dataset,
// and the data statistics and lints. Fixtures are written into a QTemporaryDir at run time.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/data/corpus.h"
#include "core/data/dataset.h"
#include "core/data/statistics.h"
#include "core/data/tokenizer.h"
#include "core/util/error.h"
#include "support/error_text.h"

using namespace mirrorlab;

namespace {

using Ids = std::vector<std::vector<int32_t>>;
using Strings = std::vector<std::string>;

// Writes bytes to dir/relative, creating folders on the way; returns the full path.
std::string write_file(const QTemporaryDir& dir, const QString& relative, const QByteArray& bytes) {
    const QString path = dir.filePath(relative);
    if (!QDir().mkpath(QFileInfo(path).absolutePath())) throw std::runtime_error("mkpath failed");
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size()) throw std::runtime_error("write failed");
    return path.toStdString();
}

std::string make_dir(const QTemporaryDir& dir, const QString& relative) {
    const QString path = dir.filePath(relative);
    if (!QDir().mkpath(path)) throw std::runtime_error("mkpath failed");
    return path.toStdString();
}

bool has_warning(const LabelledTexts& texts, const std::string& part) {
    for (const auto& w : texts.warnings) {
        if (w.find(part) != std::string::npos) return true;
    }
    return false;
}

QString joined(const Strings& warnings) {
    QStringList list;
    for (const auto& w : warnings) list << QString::fromStdString(w);
    return list.join(" | ");
}

// The Keras parity sentences; the expected values below come from the real Keras 2.15 source.
const Strings kTexts = {"The cat sat on the mat.", "The dog ate my homework!", "A cat, a dog; and THE bird?",
                        "Ünïcode Straße: ÉCOLE école", "tabs\tand\nnewlines--dashes_underscores"};
const Strings kQueries = {"The cat sat on the mat.",
                          "The dog ate my homework!",
                          "A cat, a dog; and THE bird?",
                          "Ünïcode Straße: ÉCOLE école",
                          "tabs\tand\nnewlines--dashes_underscores",
                          "unknown words the cat"};

TextDataset hand_made(const std::vector<int32_t>& lengths, const std::vector<int32_t>& labels, int32_t classes) {
    TextDataset data;
    data.name = "hand-made";
    data.num_classes = classes;
    data.vocabulary_size = 50;
    for (int32_t length : lengths) data.sequences.emplace_back(static_cast<size_t>(length), 7);
    data.labels = labels;
    return data;
}

LabelledTexts numbered_corpus(int count) {
    LabelledTexts corpus;
    corpus.source = "numbered";
    corpus.class_names = {"even", "odd"};
    for (int i = 0; i < count; ++i) {
        corpus.texts.push_back("common word" + std::string(i % 3 == 0 ? " frequent" : "") + " uniq" + std::to_string(i));
        corpus.labels.push_back(i % 2);
    }
    return corpus;
}

}  // namespace

class TestCorpus : public QObject {
    Q_OBJECT

private slots:
    // ---- tokenizer ----------------------------------------------------------------------------

    void tokenizerMatchesKeras() {
        // Expected values printed by keras 2.15.0's keras/src/preprocessing/text.py (run with a
        // stub for tensorflow's keras_export; `pip download --no-deps keras==2.15.0`):
        //   t = Tokenizer(); t.fit_on_texts(texts); t.word_index; t.texts_to_sequences(queries)
        Tokenizer tokenizer;
        tokenizer.fit_on_texts(kTexts);
        const Strings expected_words = {"",         "the",      "cat",    "dog",    "a",           "and",     "école",
                                        "sat",      "on",       "mat",    "ate",    "my",          "homework", "bird",
                                        "ünïcode",  "straße",   "tabs",   "newlines", "dashes",    "underscores"};
        QCOMPARE(tokenizer.index_word(), expected_words);
        QCOMPARE(tokenizer.word_count(), int64_t{19});
        QCOMPARE(tokenizer.vocabulary_size(), 20);
        QCOMPARE(tokenizer.document_count(), int64_t{5});
        const Ids expected = {{1, 2, 7, 8, 1, 9}, {1, 3, 10, 11, 12}, {4, 2, 4, 3, 5, 1, 13},
                              {14, 15, 6, 6},     {16, 5, 17, 18, 19}, {1, 2}};
        QCOMPARE(tokenizer.texts_to_sequences(kQueries), expected);
        QCOMPARE(tokenizer.index_of("école"), 6);
        QCOMPARE(tokenizer.index_of("missing"), 0);
        QCOMPARE(tokenizer.count_of("the"), int64_t{4});
        QCOMPARE(tokenizer.decode({1, 2, 0, 99, 9}), std::string("the cat mat"));
    }

    void tokenizerNumWordsAndOov() {
        // Keras: Tokenizer(num_words=5, oov_token="<unk>") on the same texts.
        Tokenizer with_oov(TokenizerOptions{5, std::string("<unk>")});
        with_oov.fit_on_texts(kTexts);
        QCOMPARE(with_oov.index_word()[1], std::string("<unk>"));
        QCOMPARE(with_oov.index_word()[2], std::string("the"));
        QCOMPARE(with_oov.index_word().size(), size_t{21});  // every word keeps an index
        QCOMPARE(with_oov.vocabulary_size(), 5);
        const Ids expected_oov = {{2, 3, 1, 1, 2, 1}, {2, 4, 1, 1, 1}, {1, 3, 1, 4, 1, 2, 1},
                                  {1, 1, 1, 1},       {1, 1, 1, 1, 1}, {1, 1, 2, 3}};
        QCOMPARE(with_oov.texts_to_sequences(kQueries), expected_oov);
        // Keras sequences_to_texts([[2, 3, 4, 5, 6, 99, 1]]) -> 'the cat dog <unk> <unk> <unk> <unk>'
        QCOMPARE(with_oov.decode({2, 3, 4, 5, 6, 99, 1}), std::string("the cat dog <unk> <unk> <unk> <unk>"));

        // Keras: Tokenizer(num_words=5): words with index >= 5 are dropped.
        Tokenizer cut(TokenizerOptions{5, std::nullopt});
        cut.fit_on_texts(kTexts);
        const Ids expected_cut = {{1, 2, 1}, {1, 3}, {4, 2, 4, 3, 1}, {}, {}, {1, 2}};
        QCOMPARE(cut.texts_to_sequences(kQueries), expected_cut);
        QCOMPARE(cut.vocabulary_size(), 5);

        // num_words larger than the vocabulary: the vocabulary decides.
        Tokenizer roomy(TokenizerOptions{1000, std::nullopt});
        roomy.fit_on_texts(kTexts);
        QCOMPARE(roomy.vocabulary_size(), 20);

        // Before fitting: padding (and OOV) only.
        QCOMPARE(Tokenizer().vocabulary_size(), 1);
        QCOMPARE(Tokenizer(TokenizerOptions{0, std::string("oov")}).vocabulary_size(), 2);
        QVERIFY(error_of<DataError>([] { Tokenizer(TokenizerOptions{-1, std::nullopt}); }).contains("num_words is -1"));
    }

    void tokenizerTiesAndRepeatedFits() {
        // Ties keep the order of first appearance; counts add up over fit_on_texts calls (as Keras).
        Tokenizer tokenizer;
        tokenizer.fit_on_texts({"b a c", "c"});
        QCOMPARE(tokenizer.index_word(), (Strings{"", "c", "b", "a"}));
        tokenizer.fit_on_texts({"a a"});
        QCOMPARE(tokenizer.index_word(), (Strings{"", "a", "c", "b"}));
        QCOMPARE(tokenizer.document_count(), int64_t{3});

        // A word equal to the OOV token is the OOV token (index 1), not a second entry.
        Tokenizer oov(TokenizerOptions{0, std::string("unk")});
        oov.fit_on_texts({"unk cat unk dog cat"});
        QCOMPARE(oov.index_word(), (Strings{"", "unk", "cat", "dog"}));
        QCOMPARE(oov.text_to_sequence("unk cat bird"), (std::vector<int32_t>{1, 2, 1}));
    }

    // The one-pass fit the data sets use gives what fitting and then sequencing the same texts
    // gives: every option (OOV token in the texts, num_words cutting with and without it), after an
    // earlier fit, on the Keras texts and a synthetic corpus.
    void tokenizerOnePassFitMatchesTwoPasses() {
        std::vector<std::string> zipf;
        for (int text = 0; text < 300; ++text) {
            std::string words;
            for (int w = 0; w < 1 + text % 23; ++w) words += "w" + std::to_string((text * 7 + w * w) % (5 + text % 97)) + " ";
            if (text % 11 == 0) words += "unk ";
            zipf.push_back(words);
        }
        for (const TokenizerOptions& options :
             {TokenizerOptions{}, TokenizerOptions{5, std::string("unk")}, TokenizerOptions{7, std::nullopt},
              TokenizerOptions{0, std::string("unk")}}) {
            for (const std::vector<std::string>& texts : {kTexts, zipf}) {
                Tokenizer two_passes(options);
                Tokenizer one_pass(options);
                two_passes.fit_on_texts({"unk the the cat zz"});
                one_pass.fit_on_texts({"unk the the cat zz"});
                two_passes.fit_on_texts(texts);
                const Ids expected = two_passes.texts_to_sequences(texts);
                QCOMPARE(one_pass.fit_on_texts_and_sequence(texts), expected);
                QCOMPARE(one_pass.index_word(), two_passes.index_word());
                QCOMPARE(one_pass.document_count(), two_passes.document_count());
                QCOMPARE(one_pass.count_of("the"), two_passes.count_of("the"));
            }
        }
    }

    void tokenizerSplitting() {
        // Keras: text_to_word_sequence("Hello, World!  x\r\ny İstanbul") ->
        //   ['hello', 'world', 'x\r', 'y', 'i̇stanbul']  ('\r' is not a filter; 'İ' -> 'i' + U+0307)
        QCOMPARE(text_to_word_sequence("Hello, World!  x\r\ny İstanbul"),
                 (Strings{"hello", "world", "x\r", "y", "i\xCC\x87stanbul"}));
        QCOMPARE(text_to_word_sequence("KEEP Case", kKerasDefaultFilters, false), (Strings{"KEEP", "Case"}));
        QCOMPARE(text_to_word_sequence("a-b c", ""), (Strings{"a-b", "c"}));
        QCOMPARE(text_to_word_sequence("x→y z", "→"), (Strings{"x", "y", "z"}));  // non-ASCII filter
        QCOMPARE(text_to_word_sequence("   "), Strings{});
        // Greek, Cyrillic, Latin-1 and Latin Extended-A as Python's str.lower().
        QCOMPARE(utf8_to_lower("ΑΒΓ ПРИВЕТ ÀÉÎÕÜ ŸŁŒ Ж"), std::string("αβγ привет àéîõü ÿłœ ж"));
        // Invalid UTF-8 bytes pass through untouched (never mangled, never split).
        QCOMPARE(text_to_word_sequence("CAF\xE9 Ok\xFF!"), (Strings{"caf\xE9", "ok\xFF"}));
        QCOMPARE(utf8_to_lower("A\xC3"), std::string("a\xC3"));
    }

    // ---- text folder --------------------------------------------------------------------------

    void folderHappyPath() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        write_file(tmp, "corpus/neg/a.txt", "Bad movie.\r\nReally bad.");
        write_file(tmp, "corpus/neg/b.txt", "awful");
        write_file(tmp, "corpus/neg/empty.txt", "");
        write_file(tmp, "corpus/neg/blank.TXT", "  \n ");
        write_file(tmp, "corpus/neg/notes.md", "not a sample");
        write_file(tmp, "corpus/neg/sub/c.txt", "nested bad");
        write_file(tmp, "corpus/neg/sub/51060", "numbered bad");  // 20 Newsgroups names its files so
        write_file(tmp, "corpus/neg/README", "about this folder");     // not a sample
        write_file(tmp, "corpus/pos/Icon\r", QByteArray("\0\0\x01", 3));  // macOS's folder icon: not text
        write_file(tmp, "corpus/pos/a.TXT", "\xEF\xBB\xBFGreat film");
        write_file(tmp, "corpus/pos/latin.txt", "caf\xE9 cr\xE8me \x93quoted\x94");
        write_file(tmp, "corpus/pos/mixed.txt", "na\xC3\xAFve caf\xE9");
        write_file(tmp, "corpus/pos/.hidden.txt", "hidden");
        write_file(tmp, "corpus/.git/x.txt", "ignored");
        write_file(tmp, "corpus/unsup/readme.md", "stray folder");
        write_file(tmp, "corpus/README.md", "loose");
        const std::string dir = tmp.filePath("corpus").toStdString();

        const LabelledTexts corpus = read_text_folder(dir);
        QCOMPARE(corpus.source, dir);
        QCOMPARE(corpus.class_names, (Strings{"neg", "pos"}));
        QCOMPARE(corpus.texts, (Strings{"Bad movie.\nReally bad.", "awful", "numbered bad", "nested bad", "Great film",
                                        "café crème “quoted”", "naïve café"}));
        QCOMPARE(corpus.labels, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1}));
        const QString warnings = joined(corpus.warnings);
        QVERIFY2(has_warning(corpus, "file " + dir + "/pos/latin.txt is not UTF-8; read as Latin-1"), qPrintable(warnings));
        QVERIFY2(has_warning(corpus, "file " + dir + "/pos/mixed.txt is not UTF-8; read as Latin-1"), qPrintable(warnings));
        QVERIFY2(has_warning(corpus, "skipped 2 empty files"), qPrintable(warnings));
        QVERIFY2(has_warning(corpus, "ignored 3 files in class folders that do not end in .txt (e.g. '" + dir +
                                         "/neg/README'); a text file must end in .txt or have no extension"),
                 qPrintable(warnings));
        QVERIFY2(has_warning(corpus, "skipped '" + dir + "/pos/Icon\r': not a text file: "), qPrintable(warnings));
        QVERIFY2(has_warning(corpus, "/unsup' has no text files (.txt or without an extension); it is not used as a class"),
                 qPrintable(warnings));
        QVERIFY2(has_warning(corpus, "ignored 1 file directly in"), qPrintable(warnings));
        QCOMPARE(corpus.warnings.size(), size_t{7});
    }

    void folderErrors() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string missing = tmp.filePath("nope").toStdString();
        QString e = error_of<DataError>([&] { read_text_folder(missing); });
        QVERIFY2(e.contains(QString::fromStdString("folder '" + missing + "' does not exist")), qPrintable(e));

        const std::string file = write_file(tmp, "file.txt", "x");
        e = error_of<DataError>([&] { read_text_folder(file); });
        QVERIFY2(e.contains(QString::fromStdString("'" + file + "' is not a folder")), qPrintable(e));

        write_file(tmp, "flat/a.txt", "no class folders");
        const std::string flat = tmp.filePath("flat").toStdString();
        e = error_of<DataError>([&] { read_text_folder(flat); });
        QVERIFY2(e.contains(QString::fromStdString("folder '" + flat + "' has no subfolders")), qPrintable(e));

        write_file(tmp, "one/pos/a.txt", "only one class");
        write_file(tmp, "one/neg/empty.txt", "");
        const std::string one = tmp.filePath("one").toStdString();
        e = error_of<DataError>([&] { read_text_folder(one); });
        QVERIFY2(e.contains(QString::fromStdString("folder '" + one + "' needs at least two classes")), qPrintable(e));
        QVERIFY2(e.contains("found only 'pos'"), qPrintable(e));

        // folder:aclImdb for folder:aclImdb/train: the splits were taken for the classes.
        for (const char* review : {"imdb/train/pos/1.txt", "imdb/train/neg/2.txt", "imdb/train/unsup/3.txt", "imdb/test/pos/4.txt",
                                 "imdb/test/neg/5.txt", "imdb/train/urls_pos.txt"})
            write_file(tmp, review, "a review");
        e = error_of<DataError>([&] { read_text_folder(tmp.filePath("imdb").toStdString()); });
        QVERIFY2(e.contains("its subfolders 'test', 'train' are a data set's splits, each holding the classes ('neg', 'pos')") &&
                     e.contains("folder:" + tmp.filePath("imdb/train")),
                 qPrintable(e));
        QCOMPARE(read_text_folder(tmp.filePath("imdb/train").toStdString()).class_names, (Strings{"neg", "pos", "unsup"}));

        make_dir(tmp, "none/a");
        make_dir(tmp, "none/b");
        e = error_of<DataError>([&] { read_text_folder(tmp.filePath("none").toStdString()); });
        QVERIFY2(e.contains("needs at least two classes") && e.contains("found none"), qPrintable(e));

        // Files that are not read: the error said "found none" only, the warning naming them was lost.
        write_file(tmp, "docs/a/x.html", "<p>a</p>");
        write_file(tmp, "docs/b/y.html", "<p>b</p>");
        e = error_of<DataError>([&] { read_text_folder(tmp.filePath("docs").toStdString()); });
        QVERIFY2(e.contains("found none; ignored 2 files in class folders that do not end in .txt (e.g. '" +
                            tmp.filePath("docs/a/x.html") + "')"),
                 qPrintable(e));
    }

    void folderManyLatin1FilesAreSummarised() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        for (int i = 0; i < 12; ++i) write_file(tmp, QString("c/a/%1.txt").arg(i, 2, 10, QChar('0')), "r\xE9sum\xE9");
        write_file(tmp, "c/b/x.txt", "plain");
        const LabelledTexts corpus = read_text_folder(tmp.filePath("c").toStdString());
        QCOMPARE(corpus.texts.front(), std::string("résumé"));
        QVERIFY2(has_warning(corpus, "… and 2 more files are not UTF-8 and were read as Latin-1"),
                 qPrintable(joined(corpus.warnings)));
        QCOMPARE(corpus.warnings.size(), size_t{11});
    }

    // Issue #13: symbolic links were followed blindly. One self-link read every file 41 times (into
    // both splits), two self-links never finished (the walk grew until memory ran out), and a
    // link to ".." read the other classes' files under the linking class's name.
    void folderSymlinkCyclesAreReadOnce() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        for (const char* name : {"a", "b", "c"}) write_file(tmp, QString("c/pos/%1.txt").arg(name), QByteArray("good ") + name);
        write_file(tmp, "c/pos/sub/d.txt", "good d");
        write_file(tmp, "c/neg/x.txt", "bad x");
        write_file(tmp, "c/neg/y.txt", "bad y");
        const fs::path root = tmp.filePath("c").toStdString();
        fs::create_directory_symlink(".", root / "pos" / "self");        // one self-link
        fs::create_directory_symlink("..", root / "pos" / "sub" / "up");  // back to its class folder
        fs::create_directory_symlink(".", root / "neg" / "loop1");       // two self-links: 2^40 paths
        fs::create_directory_symlink(".", root / "neg" / "loop2");

        const LabelledTexts corpus = read_text_folder(root.string());
        QCOMPARE(corpus.class_names, (Strings{"neg", "pos"}));
        QCOMPARE(corpus.texts, (Strings{"bad x", "bad y", "good a", "good b", "good c", "good d"}));
        QCOMPARE(corpus.labels, (std::vector<int32_t>{0, 0, 1, 1, 1, 1}));
        const QString warnings = joined(corpus.warnings);
        for (const char* link : {"/neg/loop1'", "/neg/loop2'", "/pos/self'", "/pos/sub/up'"}) {
            QVERIFY2(warnings.contains(QString("skipped '%1%2: it leads to a folder that was already read")
                                           .arg(QString::fromStdString(root.string()), link)),
                     qPrintable(warnings));
        }
        QCOMPARE(corpus.warnings.size(), size_t{4});

        // Built into a data set, every text is in exactly one split.
        const DatasetSplit split = build_dataset(corpus, {}, 0.5, 1, "links");
        QCOMPARE(split.train.size() + split.validation.size(), size_t{6});
    }

    // A class folder's files must lie inside that class folder: links that lead to the corpus
    // folder or above, into another class, or elsewhere in the corpus are skipped with a warning
    // naming them; links out of the corpus (data kept elsewhere) are followed; a file reached
    // twice (hard link) is read once.
    void folderLinksOutOfTheirClassAreSkipped() {
        namespace fs = std::filesystem;
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        write_file(tmp, "c/neg/x.txt", "bad x");
        write_file(tmp, "c/pos/a.txt", "good a");
        write_file(tmp, "c/unsup/u.md", "not a class");
        write_file(tmp, "elsewhere/more/e.txt", "good e");
        write_file(tmp, "elsewhere/neutral/n.txt", "so so");
        const fs::path root = tmp.filePath("c").toStdString();
        const fs::path pos = root / "pos";
        fs::create_directory_symlink("..", pos / "up");                 // the corpus folder
        fs::create_directory_symlink("../..", pos / "upup");            // above it
        fs::create_directory_symlink("../neg", pos / "neg_link");       // another class
        fs::create_directory_symlink("../unsup", pos / "stray");        // elsewhere in the corpus
        fs::create_symlink("../neg/x.txt", pos / "x_link.txt");         // another class's file
        fs::create_directory_symlink("../../elsewhere/more", pos / "more");  // out of the corpus: read
        fs::create_symlink("nowhere.txt", pos / "dangling.txt");        // nothing to read
        QCOMPARE(::link((root / "neg" / "x.txt").c_str(), (pos / "hard.txt").c_str()), 0);
        fs::create_directory_symlink("neg", root / "alias");                   // a class that is another
        fs::create_directory_symlink("../elsewhere/neutral", root / "neutral");  // a class kept elsewhere

        const LabelledTexts corpus = read_text_folder(root.string());
        QCOMPARE(corpus.class_names, (Strings{"neg", "neutral", "pos"}));
        QCOMPARE(corpus.texts, (Strings{"bad x", "so so", "good a", "good e"}));
        QCOMPARE(corpus.labels, (std::vector<int32_t>{0, 1, 2, 2}));
        const QString warnings = joined(corpus.warnings);
        const QString r = QString::fromStdString(root.string());
        const QString rr = QDir(r).canonicalPath();  // where links lead is named by its real path
        const QString rule = "; a class folder's files must lie inside that class folder";
        const QString wrong = ", so those files would be read under the wrong class (or twice)" + rule;
        const QStringList expected = {
            "skipped '" + r + "/alias': it leads to '" + rr + "/neg', inside the corpus folder" + wrong,
            "skipped '" + r + "/pos/neg_link': it leads to '" + rr + "/neg', outside its class folder" + wrong,
            "skipped '" + r + "/pos/stray': it leads to '" + rr + "/unsup', outside its class folder" + wrong,
            "skipped '" + r + "/pos/up': it leads to '" + rr + "', which holds the corpus folder or a class folder" + rule,
            "skipped '" + r + "/pos/upup': it leads to '" + QDir(tmp.path()).canonicalPath() +
                "', which holds the corpus folder or a class folder" + rule,
            "skipped '" + r + "/pos/x_link.txt': it leads to '" + rr + "/neg/x.txt', outside its class folder" + wrong,
            "skipped 1 file that was already read through another path (a symlink or hard link)",
        };
        for (const QString& warning : expected) QVERIFY2(warnings.contains(warning), qPrintable(warning + "\nin: " + warnings));
        QVERIFY2(has_warning(corpus, "/unsup' has no text files"), qPrintable(warnings));
        // A link to nothing (a data set whose files git-annex or DVC never fetched) was passed over without a word.
        QVERIFY2(has_warning(corpus, "skipped '" + r.toStdString() +
                                         "/pos/dangling.txt': it is a symbolic link to 'nowhere.txt', which is not there"),
                 qPrintable(warnings));
        QCOMPARE(corpus.warnings.size(), static_cast<size_t>(expected.size()) + 3);  // + unsup, dangling, "ignored 1 file ... .txt"
    }

    // ---- CSV / TSV ----------------------------------------------------------------------------

    void csvQuotingAndHeader() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string path = write_file(tmp, "quotes.csv",
                                            "\xEF\xBB\xBFLabel,Text\r\n"
                                            "pos,\"Hello, world\"\r\n"
                                            "neg,\"She said \"\"no\"\"\"\r\n"
                                            "pos,\"line one\r\nline two\"\r\n"
                                            "\r\n"
                                            "neg, plain text ,extra,fields\r\n"
                                            "neg,\"   \"\r\n"
                                            "pos,\"\"\"quoted\"\" start\",");
        const LabelledTexts corpus = read_delimited(path);
        QCOMPARE(corpus.source, path);
        QCOMPARE(corpus.class_names, (Strings{"neg", "pos"}));
        QCOMPARE(corpus.texts, (Strings{"Hello, world", "She said \"no\"", "line one\nline two", " plain text ",
                                        "\"quoted\" start"}));
        QCOMPARE(corpus.labels, (std::vector<int32_t>{1, 0, 1, 0, 1}));
        QCOMPARE(corpus.warnings, (Strings{"skipped 1 row with an empty text",
                                           "1 row has more than 2 fields: the text, the last column, holds an unquoted comma and "
                                           "is read up to it; quote such texts (\"...\")"}));
    }

    void csvIntegerLabelsWithoutHeader() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string path = write_file(tmp, "ints.csv", "3,alpha beta\n1,gamma\n10,delta\n 3 ,epsilon\n");
        const LabelledTexts corpus = read_delimited(path);
        QCOMPARE(corpus.class_names, (Strings{"1", "3", "10"}));  // numeric order, not "1" < "10" < "3"
        QCOMPARE(corpus.labels, (std::vector<int32_t>{1, 0, 2, 1}));
        QCOMPARE(corpus.texts.front(), std::string("alpha beta"));
        QVERIFY(has_warning(corpus, "no header row found"));

        // Forcing a header drops the first row.
        DelimitedOptions forced;
        forced.header = HeaderMode::Present;
        forced.label_column = "0";
        forced.text_column = "1";
        const LabelledTexts skipped = read_delimited(path, forced);
        QCOMPARE(skipped.texts.size(), size_t{3});
        QVERIFY(skipped.warnings.empty());
    }

    void tsvAndNamedColumns() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string path = write_file(tmp, "news.tsv",
                                            "id\tbody\ttopic\n"
                                            "1\tstocks rally, again\tmarkets\n"
                                            "2\t\"quoted\ttab\"\tsports\n"
                                            "3\tgoal!\tsports\n");
        DelimitedOptions named;
        named.label_column = "topic";
        named.text_column = "BODY ";  // case and spaces are forgiven
        const LabelledTexts corpus = read_delimited(path, named);
        QCOMPARE(corpus.class_names, (Strings{"markets", "sports"}));
        QCOMPARE(corpus.texts, (Strings{"stocks rally, again", "quoted\ttab", "goal!"}));
        QCOMPARE(corpus.labels, (std::vector<int32_t>{0, 1, 1}));
        QVERIFY(corpus.warnings.empty());

        // The same columns by index, with the header forced.
        DelimitedOptions indexed;
        indexed.label_column = "2";
        indexed.text_column = "1";
        indexed.header = HeaderMode::Present;
        QCOMPARE(read_delimited(path, indexed).texts, corpus.texts);

        // An explicit delimiter, and quoting switched off (quotes are ordinary characters).
        const std::string semi = write_file(tmp, "semi.txt", "a;\"x\n b;y\nb;z\n");
        DelimitedOptions semicolon;
        semicolon.delimiter = ';';
        semicolon.quoting = false;
        const LabelledTexts plain = read_delimited(semi, semicolon);
        QCOMPARE(plain.texts, (Strings{"\"x", "y", "z"}));
        QCOMPARE(plain.class_names, (Strings{"a", "b"}));
    }

    // A TSV text that starts with a quotation and has no closing '"' on its line: read as a quoted
    // field it swallowed every row up to the next '"' in the file without a word (here 4 rows became 1).
    void tsvQuotationAtTheStartOfATextKeepsItsRows() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string path = write_file(tmp, "quotes.tsv",
                                            "label\ttext\n"
                                            "world\t\"We will not give in, the minister said\n"
                                            "sport\tthe match ended 2-1\n"
                                            "world\tpeace talks resume\n"
                                            "sport\tthe coach said \"no comment\" again\n"
                                            "world\t\"two\nlines\"\n");
        const LabelledTexts corpus = read_delimited(path);
        QCOMPARE(corpus.texts, (Strings{"\"We will not give in, the minister said", "the match ended 2-1", "peace talks resume",
                                        "the coach said \"no comment\" again", "two\nlines"}));
        QCOMPARE(corpus.labels, (std::vector<int32_t>{1, 0, 1, 0, 1}));
        QCOMPARE(corpus.warnings,
                 (Strings{"1 field starts with a '\"' that is not closed on its line (line 2): read as a quoted field it would "
                          "take in the next rows, so the '\"' is read as part of the text; if a field really holds line "
                          "breaks, end it with '\"' followed by the delimiter or the line's end"}));
    }

    void csvHeaderHeuristics() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        // Rule 3: a non-integer first label over integer labels is a header.
        const std::string ints = write_file(tmp, "kinds.csv", "kind,words\n1,a\n2,b\n1,c\n");
        // A header without "label" and "text": the columns are guessed and the guess is said (the
        // file was refused, and nothing let a person name the columns).
        LabelledTexts guessed = read_delimited(ints);
        QCOMPARE(guessed.texts, (Strings{"a", "b", "c"}));
        QCOMPARE(guessed.class_names, (Strings{"1", "2"}));
        QVERIFY(has_warning(guessed, "is not an integer while all other labels are"));
        QVERIFY(has_warning(guessed, "the header names no \"label\" and \"text\" columns: the labels are read from 'kind' (2 distinct "
                                     "values, the fewest) and the texts from 'words' (the longest fields)"));
        const std::string named = write_file(tmp, "category.csv", "headline,category\nshares fall sharply,1\ngoal in the last minute,2\n");
        guessed = read_delimited(named);
        QCOMPARE(guessed.texts, (Strings{"shares fall sharply", "goal in the last minute"}));
        QVERIFY(has_warning(guessed, "the labels are read from 'category' (a usual name for labels) and the texts from 'headline' "
                                     "(a usual name for texts)"));
        // A header and no rows: said as such. A header whose columns cannot be guessed (no texts):
        // the message says how to title them.
        const std::string header_only = write_file(tmp, "header.csv", "sentiment,review\n");
        QString e = error_of<DataError>([&] { read_delimited(header_only); });
        QVERIFY2(e.contains("the file has a header row but no data rows"), qPrintable(e));
        const std::string no_texts = write_file(tmp, "no_texts.csv", "kind,words\nx,\ny,\n");
        DelimitedOptions with_header;
        with_header.header = HeaderMode::Present;
        e = error_of<DataError>([&] { read_delimited(no_texts, with_header); });
        QVERIFY2(e.contains(QString::fromStdString(no_texts + ":1: column 'label' not found; the header has: kind, words; title "
                                                              "the label column label and the text column text")),
                 qPrintable(e));
        // A title that is also a value of its column is data: yes/no labels keep their first row.
        const std::string yes_no = write_file(tmp, "yn.csv", "y,I agree with this\nn,no way\ny,sure\nn,never\ny,yes\nn,nope\n");
        QCOMPARE(read_delimited(yes_no).texts.size(), size_t{6});
        // Columns titled label and text win over other usual titles, wherever they are.
        const std::string titled = write_file(tmp, "titled.csv", "id,topic,label,review\n1,a,pos,good film\n2,b,neg,bad film\n");
        guessed = read_delimited(titled);
        QCOMPARE(guessed.class_names, (Strings{"neg", "pos"}));
        QVERIFY(has_warning(guessed, "the header names no \"text\" column: the labels are read from 'label'"));
        // Spreadsheet rows of only delimiters do not count against a column.
        const std::string sheet =
            write_file(tmp, "sheet.csv", "category,description,\nsport,goal in the last minute,\nfinance,shares fall,\n,,\n,,\n,,\n,,\n,,\n");
        QCOMPARE(read_delimited(sheet).texts, (Strings{"goal in the last minute", "shares fall"}));
        DelimitedOptions by_index;
        by_index.label_column = "0";
        by_index.text_column = "1";
        LabelledTexts corpus = read_delimited(ints, by_index);
        QCOMPARE(corpus.texts, (Strings{"a", "b", "c"}));
        QVERIFY(has_warning(corpus, "the first row was taken as a header"));

        // Rule 4: a first label that never recurs over repeated labels is a header.
        const std::string topics =
            write_file(tmp, "topics.csv", "kind,words\nsports,a\nsports,b\npolitics,c\npolitics,d\n");
        corpus = read_delimited(topics, by_index);
        QCOMPARE(corpus.class_names, (Strings{"politics", "sports"}));
        QCOMPARE(corpus.texts.size(), size_t{4});
        QVERIFY(has_warning(corpus, "occurs nowhere else"));

        // Without those signs, the first row is data; forcing "absent" keeps it too.
        const std::string data = write_file(tmp, "data.csv", "spam,buy now\nham,hello\nspam,cheap\n");
        QCOMPARE(read_delimited(data).texts.size(), size_t{3});
        DelimitedOptions absent;
        absent.header = HeaderMode::Absent;
        QCOMPARE(read_delimited(ints, absent).class_names, (Strings{"1", "2", "kind"}));
        // An index past any row (it wrapped the fields a row needs and read past them).
        DelimitedOptions far;
        far.label_column = "99999999999999999999";
        e = error_of<DataError>([&] { read_delimited(ints, far); });
        QVERIFY2(e.contains("column index 99999999999999999999 is past any row's columns"), qPrintable(e));
        absent.text_column = "headline";
        e = error_of<DataError>([&] { read_delimited(ints, absent); });
        QVERIFY2(e.contains("the text column is named 'headline' but the file is read without a header row"), qPrintable(e));
    }

    // What spreadsheets and editors write: rows of only delimiters below the data (they stopped the
    // load: "the label is empty"), UTF-16 (read as Latin-1 into tokens full of NULs), and a file
    // whose first column holds the texts (blamed on a class with one sample by the split).
    void csvFilesAsSpreadsheetsWriteThem() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string trailing = write_file(tmp, "excel.csv", "label,text\r\nsport,goal\r\nfinance,shares\r\nsport,match\r\n,\r\n,\r\n");
        const LabelledTexts corpus = read_delimited(trailing);
        QCOMPARE(corpus.texts, (Strings{"goal", "shares", "match"}));
        // Excel's ';' (some locales) and its "Text (tab delimited)": read as one field each row before.
        const std::string semicolons = write_file(tmp, "excel_de.csv", "Label;Text\nSport;Tor, 3:1\nPolitik;Wahl heute\nSport;Sieg\n");
        LabelledTexts read = read_delimited(semicolons);
        QCOMPARE(read.texts, (Strings{"Tor, 3:1", "Wahl heute", "Sieg"}));
        QVERIFY(has_warning(read, "read with ';' as the delimiter"));
        const std::string tabs = write_file(tmp, "export.txt", "label\ttext\nsport\tgoal, again\nfinance\tshares\nsport\tmatch\n");
        read = read_delimited(tabs);
        QCOMPARE(read.texts, (Strings{"goal, again", "shares", "match"}));
        QVERIFY(has_warning(read, "read with tabs as the delimiter"));
        QVERIFY(!has_warning(read_delimited(trailing), "as the delimiter"));  // commas stay commas
        // No header, and one comma in every text as well: the ';' comes first on every line, so it
        // splits the fields (the comma count agreed too, and the texts were cut at their commas).
        const std::string semicolons_only = write_file(tmp, "headerless_de.csv",
                                                       "Sport;Tor, 3:1\nPolitik;Wahl, heute\nSport;Sieg, knapp\nWirtschaft;Kurs, hoch\n"
                                                       "Politik;Rede, lang\n");
        read = read_delimited(semicolons_only);
        QCOMPARE(read.class_names, (Strings{"Politik", "Sport", "Wirtschaft"}));
        QCOMPARE(read.texts.front(), std::string("Tor, 3:1"));
        QVERIFY(has_warning(read, "read with ';' as the delimiter"));
        // A comma before the first ';' of a line: a comma file whose texts hold "&amp;" and commas.
        const std::string entities = write_file(tmp, "entities.csv",
                                                "1,Tom &amp; Jerry, again\n2,Salt &amp; pepper\n1,Rock &amp; roll, loud, late\n"
                                                "2,Bread &amp; butter\n1,Fish &amp; chips, hot\n");
        read = read_delimited(entities);
        QCOMPARE(read.class_names, (Strings{"1", "2"}));
        QVERIFY(!has_warning(read, "as the delimiter"));
        // Labels a spreadsheet makes look alike: a trailing no-break space is trimmed; case is said.
        const std::string alike = write_file(tmp, "alike.csv", "label,text\nsport\xC2\xA0,goal\nsport,match\nSport,cup\nfinance,shares\n");
        read = read_delimited(alike);
        QCOMPARE(read.class_names, (Strings{"Sport", "finance", "sport"}));
        QVERIFY(has_warning(read, "the labels 'Sport' and 'sport' differ only in case and are different classes"));
        // Spaces a keyboard does not show (thin, ideographic, zero-width) made classes that print as
        // "sport"; one number written two ways made two classes without a word.
        const std::string spaces = write_file(tmp, "spaces.csv", "label,text\nsport\xE2\x80\x89,goal\n\xE3\x80\x80sport,match\n"
                                                                  "sport\xE2\x80\x8B,cup\nfinance,shares\n");
        QCOMPARE(read_delimited(spaces).class_names, (Strings{"finance", "sport"}));
        const std::string numbers = write_file(tmp, "numbers.csv", "label,text\n1,goal\n1.0,match\n2,cup\n2,shares\nx,other\n");
        read = read_delimited(numbers);
        QVERIFY2(has_warning(read, "the labels '1' and '1.0' are one number written differently and are different classes"),
                 qPrintable(joined(read.warnings)));
        // Codes beyond 2^53 are different numbers, not one number written twice.
        const std::string codes = write_file(tmp, "codes.csv", "label,text\n9007199254740993,a\n9007199254740992,b\nx,c\n");
        QVERIFY(!has_warning(read_delimited(codes), "one number written differently"));
        // A header that names the label column: swapping the columns is not the fix for a class per row.
        QByteArray unique_rows = "label,text\n";
        for (int i = 0; i < 12; ++i) unique_rows += "topic" + QByteArray::number(i) + ",some text\n";
        const std::string unique = write_file(tmp, "unique.csv", unique_rows);
        QString unique_error = error_of<DataError>([&] { read_delimited(unique); });
        QVERIFY2(unique_error.contains("every row has a label of its own") && unique_error.contains("a class needs several samples") &&
                     !unique_error.contains("header row"),
                 qPrintable(unique_error));
        // An unquoted comma in a text cut it there without a word.
        const std::string commas = write_file(tmp, "commas.csv", "label,text\nsport,won 3, then lost\nfinance,shares\nsport,\"quoted, whole\"\n");
        read = read_delimited(commas);
        QCOMPARE(read.texts, (Strings{"won 3", "shares", "quoted, whole"}));
        QVERIFY(has_warning(read, "1 row has more than 2 fields: the text, the last column, holds an unquoted comma"));
        const std::string utf16 = write_file(tmp, "unicode.csv", QByteArray("\xFF\xFEl\0a\0b\0e\0l\0", 12));
        QString e = error_of<DataError>([&] { read_delimited(utf16); });
        QVERIFY2(e.contains(QString::fromStdString(utf16 + " is UTF-16 text")) && e.contains("save it as UTF-8"), qPrintable(e));
        // Two files joined (`cat a.csv b.csv`): the second header was a sample of the class "label",
        // and without headers the second byte-order mark made "\uFEFFsport" a class next to "sport".
        const std::string joined = write_file(tmp, "joined.csv", "\xEF\xBB\xBFlabel,text\nsport,won\nnews,talks\n"
                                                                 "\xEF\xBB\xBFlabel,text\nsport,lost\nnews,vote\n");
        read = read_delimited(joined);
        QCOMPARE(read.class_names, (Strings{"news", "sport"}));
        QCOMPARE(read.texts, (Strings{"won", "talks", "lost", "vote"}));
        QVERIFY(has_warning(read, "skipped 1 row that repeats the header row (line 4): files joined one after another?"));
        QVERIFY(has_warning(read, "dropped 1 byte-order mark at the start of a line (files joined one after another?)"));
        const std::string headerless = write_file(tmp, "headerless.csv", "\xEF\xBB\xBFsport,won\nnews,talks\n"
                                                                         "\xEF\xBB\xBFsport,lost\nnews,vote\n");
        QCOMPARE(read_delimited(headerless).class_names, (Strings{"news", "sport"}));
        // NUL bytes were read into labels and texts without a word (and cut `data`'s summary at the
        // first): UTF-16 without its byte-order mark, a compressed file, a damaged one.
        QByteArray rows = "label,text\n";
        for (int i = 0; i < 20; ++i) rows += (i % 2 ? "sport,the match" : "news,the talks") + QByteArray::number(i) + "\n";
        QByteArray little_endian;
        for (const char c : rows) little_endian.append(c).append('\0');
        const std::string no_bom = write_file(tmp, "nobom.csv", little_endian);
        e = error_of<DataError>([&] { read_delimited(no_bom); });
        QVERIFY2(e.contains(QString::fromStdString(no_bom + " is UTF-16 text without a byte-order mark")), qPrintable(e));
        const std::string gzip = write_file(tmp, "data.csv", QByteArray("\x1F\x8B\x08\0\0\0\0\0", 8) + rows);
        e = error_of<DataError>([&] { read_delimited(gzip); });
        QVERIFY2(e.contains(QString::fromStdString(gzip + " is a compressed file (gzip), not text; unpack it")), qPrintable(e));
        const std::string nul = write_file(tmp, "nul.csv", rows + QByteArray("news,ne\0ws\n", 12));
        e = error_of<DataError>([&] { read_delimited(nul); });
        QVERIFY2(e.contains(QString::fromStdString(nul + ":22: the file holds a NUL byte (byte 358)")), qPrintable(e));
        write_file(tmp, "nul/a/x.txt", "fine");
        const std::string nul_text = write_file(tmp, "nul/b/y.txt", QByteArray("ab\0cd", 5));
        e = error_of<DataError>([&] { read_text_folder(tmp.filePath("nul").toStdString()); });
        QVERIFY2(e.contains(QString::fromStdString(nul_text + ":1: the file holds a NUL byte")), qPrintable(e));
        QByteArray reviews;
        for (int i = 0; i < 12; ++i) reviews += QByteArray("a review numbered ") + QByteArray::number(i) + (i % 2 ? ",pos\n" : ",neg\n");
        const std::string swapped = write_file(tmp, "reviews.csv", reviews);
        e = error_of<DataError>([&] { read_delimited(swapped); });
        QVERIFY2(e.contains("every row has a label of its own (12 distinct labels in column 0") &&
                     e.contains("put the label column first"),
                 qPrintable(e));
    }

    void csvErrors() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string missing = tmp.filePath("missing.csv").toStdString();
        QString e = error_of<DataError>([&] { read_delimited(missing); });
        QVERIFY2(e.contains(QString::fromStdString("file '" + missing + "' does not exist")), qPrintable(e));

        const std::string columns = write_file(tmp, "columns.csv", "id,body,topic\n1,hello,a\n2,bye,b\n");
        DelimitedOptions topic;
        topic.label_column = "topic";
        e = error_of<DataError>([&] { read_delimited(columns, topic); });
        QVERIFY2(e.contains(QString::fromStdString(columns + ":1: column 'text' not found; the header has: id, body, topic")),
                 qPrintable(e));
        topic.text_column = "bdy";
        e = error_of<DataError>([&] { read_delimited(columns, topic); });
        QVERIFY2(e.contains("column 'bdy' not found; the header has: id, body, topic; check the spelling"), qPrintable(e));

        // Two columns of one title: the first (short ids) was read as the texts without a word.
        const std::string two_texts = write_file(tmp, "twice.csv", "label,text,text\npos,1,good\nneg,2,bad\n");
        e = error_of<DataError>([&] { read_delimited(two_texts); });
        QVERIFY2(e.contains(QString::fromStdString(two_texts + ":1: the header names two columns 'text' (columns 1 and 2, 0-based)")),
                 qPrintable(e));

        const std::string short_row = write_file(tmp, "short.csv", "label,text\npos,good\nneg\n");
        e = error_of<DataError>([&] { read_delimited(short_row); });
        QVERIFY2(e.contains(QString::fromStdString(short_row + ":3: the row has 1 field, but the text column is column 1")),
                 qPrintable(e));

        // A quote no '"' closes before the end: the file was refused; the '"' is read as text, said.
        const std::string open_quote = write_file(tmp, "open.csv", "label,text\npos,fine\nneg,\"never closed\nneg,bad\n");
        const LabelledTexts opened = read_delimited(open_quote);
        QCOMPARE(opened.texts, (Strings{"fine", "\"never closed", "bad"}));
        QVERIFY2(has_warning(opened, "1 field starts with a '\"' that is not closed on its line (line 3)"), qPrintable(joined(opened.warnings)));
        // Spaces after a closing quote (Python's csv reads them): the field was read unquoted and the
        // next row failed.
        const std::string spaced = write_file(tmp, "spaced.csv", "label,text\npos,\"line one\nline two\"  \nneg,bad\n");
        QCOMPARE(read_delimited(spaced).texts, (Strings{"line one\nline two  ", "bad"}));
        // A header after a byte-order mark inside the file, quoted: it kept its quotes and became a class.
        const std::string quoted_join = write_file(tmp, "qjoin.csv", "\"label\",\"text\"\nsport,won\nnews,talks\n"
                                                                     "\xEF\xBB\xBF\"label\",\"text\"\nsport,lost\n");
        QCOMPARE(read_delimited(quoted_join).class_names, (Strings{"news", "sport"}));

        for (const char* bytes : {"", "\n\n  \r\n", "\xEF\xBB\xBF"}) {
            const std::string empty = write_file(tmp, "empty.csv", bytes);
            e = error_of<DataError>([&] { read_delimited(empty); });
            QVERIFY2(e.contains(QString::fromStdString(empty + ": the file is empty")), qPrintable(e));
        }

        const std::string header_only = write_file(tmp, "header.csv", "label,text\n");
        e = error_of<DataError>([&] { read_delimited(header_only); });
        QVERIFY2(e.contains("has a header row but no data rows"), qPrintable(e));

        const std::string one_class = write_file(tmp, "one.csv", "label,text\nspam,a\nspam,b\n");
        e = error_of<DataError>([&] { read_delimited(one_class); });
        QVERIFY2(e.contains(QString::fromStdString(one_class + ": needs at least two classes; every row has the label 'spam'")),
                 qPrintable(e));

        const std::string empty_label = write_file(tmp, "nolabel.csv", "label,text\nspam,a\n ,b\n");
        e = error_of<DataError>([&] { read_delimited(empty_label); });
        QVERIFY2(e.contains(QString::fromStdString(empty_label + ":3: the label (column 0) is empty")), qPrintable(e));

        const std::string same = write_file(tmp, "same.csv", "a,b\nc,d\n");
        DelimitedOptions twice;
        twice.label_column = "1";
        twice.text_column = "1";
        e = error_of<DataError>([&] { read_delimited(same, twice); });
        QVERIFY2(e.contains("the label and the text column are the same column"), qPrintable(e));
    }

    // Issue #13: CSV and text files were read without a size cap: csv:/dev/zero grew until memory
    // ran out. Only regular files of at most kMaxTextDataFileBytes (2 GiB) are read.
    void csvNonRegularAndHugeFilesAreRefused() {
        QString e = error_of<DataError>([&] { read_delimited("/dev/zero"); });
        QVERIFY2(e.contains("[corpus] cannot read file '/dev/zero': it is a character device, not a regular file"),
                 qPrintable(e));
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string fifo = tmp.filePath("data.csv").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        e = error_of<DataError>([&] { read_delimited(fifo); });
        QVERIFY2(e.contains(QString::fromStdString("cannot read file '" + fifo + "': it is a FIFO (named pipe)")),
                 qPrintable(e));
        // Sparse: 2 GiB + 1 byte long, nothing on disk, refused before a byte is read.
        const std::string huge = write_file(tmp, "huge.tsv", "");
        QCOMPARE(::truncate(huge.c_str(), (off_t{2} << 30) + 1), 0);
        e = error_of<DataError>([&] { read_delimited(huge); });
        QVERIFY2(e.contains(QString::fromStdString("cannot read file '" + huge +
                                                   "': it is 2147483649 bytes, more than the 2.0 GiB limit for one data file")),
                 qPrintable(e));
        // A .txt of a folder corpus goes through the same reader.
        write_file(tmp, "c/a/x.txt", "fine");
        write_file(tmp, "c/b/y.txt", "");
        QCOMPARE(::truncate(tmp.filePath("c/b/y.txt").toLocal8Bit().constData(), (off_t{2} << 30) + 1), 0);
        e = error_of<DataError>([&] { read_text_folder(tmp.filePath("c").toStdString()); });
        QVERIFY2(e.contains("/c/b/y.txt': it is 2147483649 bytes, more than the 2.0 GiB limit"), qPrintable(e));
    }

    void csvLatin1() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const std::string path = write_file(tmp, "latin.csv", "label,text\nfr,caf\xE9\nde,Stra\xDF" "e\n");
        const LabelledTexts corpus = read_delimited(path);
        QCOMPARE(corpus.texts, (Strings{"café", "Straße"}));
        QCOMPARE(corpus.warnings, (Strings{"file " + path + " is not UTF-8; read as Latin-1 (the first byte that is not UTF-8 is on line 2)"}));
        QVERIFY(is_valid_utf8("naïve"));
        QVERIFY(!is_valid_utf8("\xC0\x80"));      // overlong
        QVERIFY(!is_valid_utf8("\xED\xA0\x80"));  // surrogate
        QCOMPARE(latin1_to_utf8("\x80\xA0\xFF"), std::string("€\xC2\xA0ÿ"));
    }

    // ---- build_dataset ------------------------------------------------------------------------

    void buildDatasetSplits() {
        const LabelledTexts corpus = numbered_corpus(20);
        Tokenizer tokenizer;
        const DatasetSplit split = build_dataset(corpus, TokenizerOptions{0, std::string("<oov>")}, 0.25, 7, "mine", &tokenizer);
        QCOMPARE(split.train.size(), size_t{15});
        QCOMPARE(split.validation.size(), size_t{5});
        for (const TextDataset* part : {&split.train, &split.validation}) {
            QCOMPARE(part->name, std::string("mine"));
            QVERIFY(!part->synthetic);
            QCOMPARE(part->num_classes, 2);
            QCOMPARE(part->class_names, (Strings{"even", "odd"}));
            QCOMPARE(part->vocabulary_size, tokenizer.vocabulary_size());
            part->validate();
        }
        // 1 OOV + "common", "word", "frequent" + 15 unique training words, + padding.
        QCOMPARE(tokenizer.vocabulary_size(), 20);
        QCOMPARE(tokenizer.document_count(), int64_t{15});
        QCOMPARE(tokenizer.index_word()[2], std::string("common"));

        // The tokenizer saw the training texts only: each validation text's unique word is OOV.
        for (size_t i = 0; i < split.train.size(); ++i) {
            const std::string text = tokenizer.decode(split.train.sequences[i]);
            QVERIFY2(text.find("<oov>") == std::string::npos, text.c_str());
            const std::string uniq = text.substr(text.rfind(' ') + 1);
            const int number = std::stoi(uniq.substr(4));
            QCOMPARE(split.train.labels[i], number % 2);  // labels travelled with their texts
        }
        for (size_t i = 0; i < split.validation.size(); ++i) {
            QCOMPARE(split.validation.sequences[i].back(), 1);
            QCOMPARE(tokenizer.decode(split.validation.sequences[i]).substr(0, 11), std::string("common word"));
        }

        // Deterministic for a seed, different for another.
        const DatasetSplit again = build_dataset(corpus, TokenizerOptions{0, std::string("<oov>")}, 0.25, 7, "mine");
        QCOMPARE(again.train.sequences, split.train.sequences);
        QCOMPARE(again.validation.labels, split.validation.labels);
        const DatasetSplit other = build_dataset(corpus, TokenizerOptions{0, std::string("<oov>")}, 0.25, 8, "mine");
        QVERIFY(other.train.sequences != split.train.sequences);

        // No validation; and a tiny share still gives one validation sample.
        const DatasetSplit all = build_dataset(corpus, TokenizerOptions{}, 0.0, 1, "all");
        QCOMPARE(all.train.size(), size_t{20});
        QCOMPARE(all.validation.size(), size_t{0});
        QCOMPARE(all.train.vocabulary_size, 24);  // padding + 3 shared words + 20 unique
        QCOMPARE(build_dataset(corpus, TokenizerOptions{}, 0.01, 1, "tiny").validation.size(), size_t{1});
        // num_words caps the ids.
        const DatasetSplit capped = build_dataset(corpus, TokenizerOptions{3, std::nullopt}, 0.5, 1, "capped");
        QCOMPARE(capped.train.vocabulary_size, 3);
        for (const auto& seq : capped.validation.sequences) QCOMPARE(seq, (std::vector<int32_t>{1, 2}));
    }

    void buildDatasetErrors() {
        const LabelledTexts corpus = numbered_corpus(6);
        for (double bad : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
            const QString e = error_of<DataError>([&] { build_dataset(corpus, TokenizerOptions{}, bad, 1, "x"); });
            QVERIFY2(e.contains("validation_split is") && e.contains("at least 0 and less than 1"), qPrintable(e));
        }

        LabelledTexts unused = corpus;
        unused.class_names.push_back("rare");
        QString e = error_of<DataError>([&] { build_dataset(unused, TokenizerOptions{}, 0.0, 1, "x"); });
        QVERIFY2(e.contains("class 'rare' has no training sample (it has no samples at all)"), qPrintable(e));

        // One 'rare' sample: for some seeds it lands in validation, and the load failed ("class
        // 'rare' has no training sample"). It now trains, and a warning says so.
        LabelledTexts single = numbered_corpus(20);
        single.class_names.push_back("rare");
        single.texts.push_back("rare text");
        single.labels.push_back(2);
        int moved = 0;
        for (uint64_t seed = 0; seed < 40; ++seed) {
            const DatasetSplit s = build_dataset(single, TokenizerOptions{}, 0.2, seed, "x");
            QCOMPARE(s.train.class_counts()[2], int64_t{1});
            QCOMPARE(s.train.size() + s.validation.size(), single.texts.size());
            const bool warned = std::any_of(s.warnings.begin(), s.warnings.end(), [](const std::string& w) {
                return w.find("1 class ('rare') had every sample in the validation split; one sample of each trains instead") !=
                       std::string::npos;
            });
            QCOMPARE(warned, s.validation.size() == 3);  // 21 samples: 4 validate, or 3 when 'rare' moved
            moved += warned ? 1 : 0;
        }
        QVERIFY(moved > 0 && moved < 40);

        LabelledTexts mismatch = corpus;
        mismatch.labels.pop_back();
        QVERIFY(error_of<DataError>([&] { build_dataset(mismatch, TokenizerOptions{}, 0.0, 1, "x"); }).contains("6 texts but 5 labels"));
        LabelledTexts out_of_range = corpus;
        out_of_range.labels[3] = 5;
        QVERIFY(error_of<DataError>([&] { build_dataset(out_of_range, TokenizerOptions{}, 0.0, 1, "x"); }).contains("sample 3 has label 5"));

        // Texts the tokenizer leaves without a word trained as empty sequences without a word; when
        // every text is so, training on nothing.
        LabelledTexts punctuation = corpus;
        punctuation.texts[1] = "!!! ??? ...";
        const DatasetSplit some = build_dataset(punctuation, TokenizerOptions{}, 0.0, 1, "x");
        QVERIFY2(std::any_of(some.warnings.begin(), some.warnings.end(),
                             [](const std::string& w) { return w.find("1 text has no word the tokenizer keeps") == 0; }),
                 qPrintable(QString::fromStdString(some.warnings.empty() ? "" : some.warnings.front())));
        for (std::string& text : punctuation.texts) text = "-- !!";
        QVERIFY(error_of<DataError>([&] { build_dataset(punctuation, TokenizerOptions{}, 0.0, 1, "x"); })
                    .contains("no text has a word the tokenizer keeps"));
        // Chinese without spaces: each text one "word" that never repeats, without a hint.
        LabelledTexts chinese = corpus;
        for (size_t i = 0; i < chinese.texts.size(); ++i)
            chinese.texts[i] = "今天的天气非常好我们一起去公园散步然后吃午饭再回家休息一下" + std::to_string(i);
        const DatasetSplit unspaced = build_dataset(chinese, TokenizerOptions{}, 0.0, 1, "x");
        QVERIFY(std::any_of(unspaced.warnings.begin(), unspaced.warnings.end(), [](const std::string& w) {
            return w.find("6 training texts are Chinese, Japanese or Thai without spaces between words") == 0;
        }));
        QVERIFY(build_dataset(corpus, TokenizerOptions{}, 0.0, 1, "x").warnings.empty());
    }

    void buildDatasetFromFolder() {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        for (int i = 0; i < 5; ++i) {
            write_file(tmp, QString("c/neg/%1.txt").arg(i), QByteArray("bad awful film ") + QByteArray::number(i));
            write_file(tmp, QString("c/pos/%1.txt").arg(i), QByteArray("great lovely film ") + QByteArray::number(i));
        }
        const DatasetSplit split = build_dataset(read_text_folder(tmp.filePath("c").toStdString()), TokenizerOptions{}, 0.2, 3, "folder");
        QCOMPARE(split.train.size(), size_t{8});
        QCOMPARE(split.validation.size(), size_t{2});
        QCOMPARE(split.train.class_names, (Strings{"neg", "pos"}));
    }

    // ---- statistics and lints -----------------------------------------------------------------

    void statisticsNumbers() {
        TextDataset data = hand_made({1, 2, 3, 4, 10}, {0, 0, 1, 1, 0}, 3);
        data.class_names = {"a", "b", "c"};
        const DatasetStatistics stats = compute_statistics(data, 3, 4);
        QCOMPARE(stats.samples, int64_t{5});
        QCOMPARE(stats.classes, 3);
        QCOMPARE(stats.class_counts, (std::vector<int64_t>{3, 2, 0}));
        QCOMPARE(stats.class_names, (Strings{"a", "b", "c"}));
        QCOMPARE(stats.vocabulary_size, 50);
        QCOMPARE(stats.tokens, int64_t{20});
        QCOMPARE(stats.min_length, 1);
        QCOMPARE(stats.median_length, 3);
        QCOMPARE(stats.max_length, 10);
        QCOMPARE(stats.mean_length, 4.0);
        QCOMPARE(stats.histogram_bin_width, 3);  // ceil(11 / 4)
        QCOMPARE(stats.length_histogram, (std::vector<int64_t>{2, 2, 0, 1}));
        QCOMPARE(stats.truncated_share, 0.4);
        QCOMPARE(stats.sequence_length, 3);

        const QString text = QString::fromStdString(format_statistics(stats));
        QVERIFY2(text.contains("Samples:     5\n"), qPrintable(text));
        QVERIFY2(text.contains("Classes:     3\n"), qPrintable(text));
        QVERIFY2(text.contains("  a  3   60.0 %\n"), qPrintable(text));
        QVERIFY2(text.contains("Vocabulary:  50 ids\n"), qPrintable(text));
        QVERIFY2(text.contains("Length:      min 1 · median 3 · mean 4.0 · max 10 tokens\n"), qPrintable(text));
        QVERIFY2(text.contains("Lengths (bins of 3 tokens):\n"), qPrintable(text));
        QVERIFY2(text.contains("  9–11  ###############                 1\n"), qPrintable(text));
        QVERIFY2(text.contains("40.0 % of samples are longer than 3 tokens and will be truncated."), qPrintable(text));

        // Even count: the median is the mean of the middle two, rounded down; no names -> numbers.
        const DatasetStatistics even = compute_statistics(hand_made({9, 2, 5, 4}, {0, 1, 0, 1}, 2), 300);
        QCOMPARE(even.median_length, 4);
        QCOMPARE(even.class_names, (Strings{"0", "1"}));
        QCOMPARE(even.histogram_bin_width, 1);
        QCOMPARE(even.length_histogram.size(), size_t{10});
        QVERIFY(format_statistics(even).find("No sample is longer than 300 tokens") != std::string::npos);

        // Many classes: the ten largest, then a summary line.
        std::vector<int32_t> labels;
        for (int32_t c = 0; c < 12; ++c) labels.insert(labels.end(), static_cast<size_t>(c + 1), c);
        const DatasetStatistics many = compute_statistics(
            hand_made(std::vector<int32_t>(labels.size(), 3), labels, 12), 300);
        const std::string many_text = format_statistics(many);
        QVERIFY2(many_text.find("  … 2 more classes with 3 samples\n") != std::string::npos, many_text.c_str());
        QVERIFY2(many_text.find("  11  12") != std::string::npos, many_text.c_str());  // largest first

        const DatasetStatistics empty = compute_statistics(TextDataset{}, 300);
        QCOMPARE(empty.samples, int64_t{0});
        QVERIFY(empty.length_histogram.empty());
        QVERIFY(error_of<DataError>([&] { compute_statistics(data, 0); }).contains("sequence_length is 0"));
        QVERIFY(error_of<DataError>([&] { compute_statistics(data, 3, 0); }).contains("histogram_bins is 0"));
    }

    void lints() {
        DatasetStatistics stats;
        stats.samples = 100;
        stats.sequence_length = 300;
        stats.median_length = 412;
        stats.max_length = 2376;
        stats.truncated_share = 0.62;
        const std::string truncation = lint_truncation(stats);
        QVERIFY2(truncation.rfind("most sequences are truncated at 300 tokens (62 %); consider a longer sequence length", 0) == 0,
                 truncation.c_str());
        QVERIFY(truncation.find("412") != std::string::npos);
        stats.truncated_share = 0.5;
        QCOMPARE(lint_truncation(stats), std::string());

        const std::string uneven = lint_uneven_batch(33, 2);
        QVERIFY2(uneven.rfind("the global batch of 33 does not divide evenly over 2 replicas (17 + 16); ", 0) == 0, uneven.c_str());
        QVERIFY2(uneven.find("e.g. 32 or 34") != std::string::npos, uneven.c_str());
        QVERIFY(lint_uneven_batch(32, 3).find("(11 + 11 + 10)") != std::string::npos);
        QVERIFY(lint_uneven_batch(1, 2).find("(1 + 0); 1 of them get no samples") != std::string::npos);
        QVERIFY(lint_uneven_batch(33, 10).find("(3 × 4 + 7 × 3)") != std::string::npos);
        QCOMPARE(lint_uneven_batch(32, 2), std::string());
        QCOMPARE(lint_uneven_batch(33, 1), std::string());

        const std::string cache = lint_cache_after_shuffle(true);
        QVERIFY(cache.find("cache() is placed after shuffle()") != std::string::npos);
        QVERIFY(cache.find("first epoch's shuffled order") != std::string::npos);
        QVERIFY(cache.find("tutorial") != std::string::npos);
        QVERIFY(cache.find("MirrorLab always reshuffles every epoch") != std::string::npos);
        QCOMPARE(lint_cache_after_shuffle(false), std::string());
    }
};

QTEST_APPLESS_MAIN(TestCorpus)
#include "test_corpus.moc"
