// Keras' reuters.npz: the zip container, .npy arrays, numpy's object-array pickle, numpy's legacy
// RandomState, and keras.datasets.reuters.load_data() reproduced on small fixtures written by
// tests/golden/make_npz_fixtures.py (real numpy; load_data cross-checked with Keras itself).
#include <QtTest/QtTest>

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/keras_reuters.h"
#include "core/data/npy.h"
#include "core/data/numpy_random.h"
#include "core/data/pickle.h"
#include "core/data/source.h"
#include "core/data/zip_reader.h"
#include "core/util/error.h"
#include "support/real_data.h"
#include "support/zip_crc.h"

using namespace mirrorlab;
using mirrorlab::testing::zip_crc32;

namespace {

using Bytes = std::vector<uint8_t>;

// A string literal with embedded NULs, all of it.
#define PK(literal) std::string(literal, sizeof(literal) - 1)

std::string fixture(const std::string& name) {
    return std::string(MIRRORLAB_TEST_DATA_DIR) + "/npz/" + name;
}

Bytes read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Bytes bytes_of(const std::string& s) {
    return Bytes(s.begin(), s.end());
}

// Runs `f`, which must throw DataError whose message holds every one of `parts`; returns it.
std::string data_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
    try {
        f();
    } catch (const DataError& e) {
        const std::string message = e.what();
        for (const auto& part : parts) {
            if (message.find(part) == std::string::npos) {
                return "MISSING '" + part + "' IN: " + message;
            }
        }
        return message;
    } catch (const std::exception& e) {
        return std::string("WRONG EXCEPTION: ") + e.what();
    }
    return "NO EXCEPTION";
}

#define EXPECT_DATA_ERROR(expr, ...)                                                \
    do {                                                                            \
        const std::string message_ = data_error([&] { expr; }, {__VA_ARGS__});      \
        QVERIFY2(message_.rfind("MISSING", 0) != 0 && message_ != "NO EXCEPTION" && \
                     message_.rfind("WRONG EXCEPTION", 0) != 0,                     \
                 message_.c_str());                                                 \
    } while (0)

void put16(Bytes& b, uint64_t v) {
    for (int i = 0; i < 2; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put32(Bytes& b, uint64_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put64(Bytes& b, uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A stored-only zip writer for hand-made archives; `zip64` puts every size and offset in zip64
// extra fields and adds the zip64 end records, as numpy's writer does for huge arrays.
Bytes make_zip(const std::vector<std::pair<std::string, Bytes>>& entries, bool zip64 = false) {
    Bytes out, central;
    for (const auto& [name, data] : entries) {
        const uint64_t offset = out.size();
        const uint32_t crc = zip_crc32(data);
        put32(out, 0x04034b50);
        put16(out, 45);
        put16(out, 0);
        put16(out, 0);
        put32(out, 0);
        put32(out, crc);
        put32(out, zip64 ? 0xffffffff : data.size());
        put32(out, zip64 ? 0xffffffff : data.size());
        put16(out, name.size());
        put16(out, zip64 ? 20 : 0);
        out.insert(out.end(), name.begin(), name.end());
        if (zip64) {
            put16(out, 1);
            put16(out, 16);
            put64(out, data.size());
            put64(out, data.size());
        }
        out.insert(out.end(), data.begin(), data.end());

        put32(central, 0x02014b50);
        put16(central, 45);
        put16(central, 45);
        put16(central, 0);
        put16(central, 0);
        put32(central, 0);
        put32(central, crc);
        put32(central, zip64 ? 0xffffffff : data.size());
        put32(central, zip64 ? 0xffffffff : data.size());
        put16(central, name.size());
        put16(central, zip64 ? 28 : 0);
        put16(central, 0);
        put16(central, 0);
        put16(central, 0);
        put32(central, 0);
        put32(central, zip64 ? 0xffffffff : offset);
        central.insert(central.end(), name.begin(), name.end());
        if (zip64) {
            put16(central, 1);
            put16(central, 24);
            put64(central, data.size());
            put64(central, data.size());
            put64(central, offset);
        }
    }
    const uint64_t cd_offset = out.size();
    out.insert(out.end(), central.begin(), central.end());
    if (zip64) {
        const uint64_t z64 = out.size();
        put32(out, 0x06064b50);
        put64(out, 44);
        put16(out, 45);
        put16(out, 45);
        put32(out, 0);
        put32(out, 0);
        put64(out, entries.size());
        put64(out, entries.size());
        put64(out, central.size());
        put64(out, cd_offset);
        put32(out, 0x07064b50);
        put32(out, 0);
        put64(out, z64);
        put32(out, 1);
    }
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, zip64 ? 0xffff : entries.size());
    put16(out, zip64 ? 0xffff : entries.size());
    put32(out, zip64 ? 0xffffffff : central.size());
    put32(out, zip64 ? 0xffffffff : cd_offset);
    put16(out, 0);
    return out;
}

// Raw deflate (as zip stores it) of `data` at `level`.
Bytes deflate_raw(const Bytes& data, int level) {
    z_stream zs{};
    if (deflateInit2(&zs, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
    Bytes out(deflateBound(&zs, static_cast<uLong>(data.size())));
    zs.next_in = const_cast<Bytef*>(data.data());
    zs.avail_in = static_cast<uInt>(data.size());
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&zs, Z_FINISH);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return rc == Z_STREAM_END ? out : Bytes{};
}

// A zip with one deflate entry whose headers declare `declared_size` uncompressed bytes and `crc`.
Bytes make_deflated_zip(const std::string& name, const Bytes& compressed, uint32_t crc,
                        uint64_t declared_size) {
    Bytes out, central;
    for (Bytes* header : {&out, &central}) {
        const bool local = header == &out;
        put32(*header, local ? 0x04034b50 : 0x02014b50);
        if (!local) put16(*header, 20);
        put16(*header, 20);
        put16(*header, 0);
        put16(*header, 8);
        put32(*header, 0);
        put32(*header, crc);
        put32(*header, compressed.size());
        put32(*header, declared_size);
        put16(*header, name.size());
        put16(*header, 0);
        if (!local) {
            for (int i = 0; i < 3; ++i) put16(*header, 0);  // comment length, disk, attributes
            put32(*header, 0);                               // external attributes
            put32(*header, 0);                               // local header offset
        }
        header->insert(header->end(), name.begin(), name.end());
        if (local) out.insert(out.end(), compressed.begin(), compressed.end());
    }
    const uint64_t cd_offset = out.size();
    out.insert(out.end(), central.begin(), central.end());
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, 1);
    put16(out, 1);
    put32(out, central.size());
    put32(out, cd_offset);
    put16(out, 0);
    return out;
}

// A .npy v1.0 file with the given header dict text and payload.
Bytes make_npy(const std::string& dict, const Bytes& payload) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    Bytes out = bytes_of(PK("\x93NUMPY\x01\x00"));
    put16(out, header.size());
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

Bytes int64_payload(const std::vector<int64_t>& values) {
    Bytes out;
    for (int64_t v : values) put64(out, static_cast<uint64_t>(v));
    return out;
}

Bytes y_npy(const std::vector<int64_t>& labels) {
    return make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (" +
                        std::to_string(labels.size()) + ",), }",
                    int64_payload(labels));
}

// The x.npy member of a fixture archive, and its pickle (after the .npy header).
Bytes entry_of(const std::string& archive, const std::string& name) {
    return ZipReader::open_file(fixture(archive)).read(name);
}
Bytes pickle_of(const Bytes& npy) {
    const size_t header_len = static_cast<size_t>(npy[8] | (npy[9] << 8));
    return Bytes(npy.begin() + static_cast<std::ptrdiff_t>(10 + header_len), npy.end());
}

// A protocol-2 pickle of an object array, as Python 2's numpy wrote it, with `body` (the data
// list's opcodes) spliced in; used to build hostile variants around a valid frame.
std::string py2_array_pickle(const std::string& list_ops, int count) {
    std::string p = PK("\x80\x02");
    p += "cnumpy.core.multiarray\n_reconstruct\n";
    p += "cnumpy\nndarray\n";
    p += PK("K\x00\x85");
    p += "U\x01"
         "b";
    p += "\x87R(K\x01K";
    p += static_cast<char>(count);
    p += "\x85";
    p += "cnumpy\ndtype\nU\x02O8";
    p += PK("K\x00K\x01\x87R(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89");
    p += list_ops;
    p += "tb.";
    return p;
}

std::vector<std::vector<int64_t>> unpickle(const std::string& p) {
    const Bytes b = bytes_of(p);
    return unpickle_object_array(b, "test.npy").items;
}

struct ExpectedRun {
    KerasLoadOptions options;
    std::vector<std::vector<int32_t>> train_x, test_x;
    std::vector<int32_t> train_y, test_y;
};

// expected_load_data.txt, see make_npz_fixtures.py.
std::vector<ExpectedRun> read_expected() {
    std::ifstream in(fixture("expected_load_data.txt"));
    std::vector<ExpectedRun> runs;
    std::string line;
    std::vector<std::vector<int32_t>>* xs = nullptr;
    std::vector<int32_t>* ys = nullptr;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string head;
        words >> head;
        if (head == "options") {
            runs.emplace_back();
            std::map<std::string, std::string> kv;
            std::string item;
            while (words >> item)
                kv[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
            KerasLoadOptions& o = runs.back().options;
            o.num_words = std::stoll(kv.at("num_words"));
            o.skip_top = std::stoll(kv.at("skip_top"));
            o.maxlen = std::stoll(kv.at("maxlen"));
            o.test_split = std::stod(kv.at("test_split"));
            o.seed = std::stoull(kv.at("seed"));
            o.start_char = std::stoi(kv.at("start_char"));
            o.oov_char = std::stoi(kv.at("oov_char"));
            o.index_from = std::stoi(kv.at("index_from"));
        } else if (head == "train" || head == "test") {
            xs = head == "train" ? &runs.back().train_x : &runs.back().test_x;
            ys = head == "train" ? &runs.back().train_y : &runs.back().test_y;
        } else {
            ys->push_back(std::stoi(head));
            xs->emplace_back();
            int32_t id = 0;
            while (words >> id) xs->back().push_back(id);
        }
    }
    return runs;
}

const char* const kArchives[] = {"reuters_small_savez.npz", "reuters_small_compressed.npz",
                                 "reuters_small_p2.npz",    "reuters_small_p3.npz",
                                 "reuters_small_py2.npz",   "reuters_small_stream.npz"};

}  // namespace

class TestKerasData : public QObject {
    Q_OBJECT

  private slots:
    // --- numpy's legacy RandomState ----------------------------------------------------------

    void randomStateMatchesNumpy() {
        // python3 -c "import numpy as np; print(np.random.RandomState(113).randint(0, 2**32,
        // size=4, dtype=np.uint64))"
        NumpyRandomState a(113);
        const uint32_t first[] = {3659249829u, 529109724u, 317413538u, 548173386u};
        for (uint32_t v : first) QCOMPARE(a.next_uint32(), v);
        NumpyRandomState zero(0);  // ... RandomState(0) ...: 2357136044 2546248239
        QCOMPARE(zero.next_uint32(), 2357136044u);
        QCOMPARE(zero.next_uint32(), 2546248239u);
        // np.random.RandomState(113).randint(0, 1001, size=6, dtype=np.uint32): masked rejection
        // on 32-bit draws, the same as random_interval(1000).
        NumpyRandomState b(113);
        for (uint64_t v : {165, 732, 162, 586, 876, 770}) QCOMPARE(b.random_interval(1000), v);
        // np.random.RandomState(113).randint(0, 2**40 + 1, size=4, dtype=np.uint64): 64-bit draws.
        NumpyRandomState c(113);
        for (uint64_t v : {709198713564ull, 696332875338ull, 645287314199ull, 1088366229744ull}) {
            QCOMPARE(c.random_interval(uint64_t{1} << 40), v);
        }
    }

    void shuffleMatchesNumpy() {
        // for n, seed in ...: a = np.arange(n); np.random.RandomState(seed).shuffle(a);
        // print(list(a))
        struct Case {
            size_t n;
            uint32_t seed;
            std::vector<int64_t> expected;
        };
        const Case cases[] = {
            {10, 113, {9, 3, 6, 1, 0, 7, 4, 8, 2, 5}},
            {17, 0, {1, 6, 8, 9, 13, 4, 2, 14, 10, 7, 16, 11, 3, 0, 5, 15, 12}},
            {25, 1, {14, 13, 17, 3, 21, 10, 18, 19, 4, 2,  20, 6, 7,
                     22, 1,  16, 0, 15, 24, 23, 9,  8, 12, 11, 5}},
            {12, 4294967295u, {11, 8, 5, 9, 1, 10, 6, 0, 4, 7, 2, 3}},
            {2, 113, {0, 1}},
            {33, 2024, {31, 20, 32, 19, 28, 25, 16, 24, 13, 21, 6, 7,  18, 12, 11, 14, 22,
                        15, 17, 5,  29, 2,  10, 3,  1,  9,  23, 4, 27, 30, 0,  26, 8}},
            {1, 5, {0}},
            {0, 5, {}},
        };
        for (const Case& c : cases) {
            NumpyRandomState rng(c.seed);
            QCOMPARE(rng.shuffled_indices(c.n), c.expected);
        }
        // The real data set's size: a = np.arange(11228); np.random.RandomState(113).shuffle(a)
        // a[:8], a[-4:], sum(i * a[i]) % (2**61 - 1)
        NumpyRandomState rng(113);
        const std::vector<int64_t> perm = rng.shuffled_indices(11228);
        const std::vector<int64_t> head(perm.begin(), perm.begin() + 8),
            tail(perm.end() - 4, perm.end());
        QCOMPARE(head, (std::vector<int64_t>{1341, 4427, 5095, 2044, 3024, 1792, 1931, 2375}));
        QCOMPARE(tail, (std::vector<int64_t>{2710, 11010, 6306, 4828}));
        __extension__ typedef unsigned __int128 u128;
        u128 weighted = 0;
        for (size_t i = 0; i < perm.size(); ++i)
            weighted += static_cast<u128>(i) * static_cast<uint64_t>(perm[i]);
        QCOMPARE(static_cast<uint64_t>(weighted % ((uint64_t{1} << 61) - 1)),
                 uint64_t{354672646129});
    }

    // --- zip container -----------------------------------------------------------------------

    void zipFixturesListBothArrays() {
        for (const char* name : kArchives) {
            const ZipReader zip = ZipReader::open_file(fixture(name));
            QCOMPARE(zip.entries().size(), size_t{2});
            QCOMPARE(zip.entries()[0].name, std::string("x.npy"));
            QCOMPARE(zip.entries()[1].name, std::string("y.npy"));
        }
        const ZipReader stored = ZipReader::open_file(fixture("reuters_small_savez.npz"));
        const ZipReader deflated = ZipReader::open_file(fixture("reuters_small_compressed.npz"));
        QCOMPARE(stored.entries()[0].method, uint16_t{0});
        QCOMPARE(deflated.entries()[0].method, uint16_t{8});
        QVERIFY(deflated.entries()[0].compressed_size < deflated.entries()[0].uncompressed_size);
        QCOMPARE(stored.read("x.npy"), deflated.read("x.npy"));
        QCOMPARE(stored.read("y.npy"), deflated.read("y.npy"));
        // np.savez into an unseekable stream: data descriptors (flag bit 3 of the local header).
        const Bytes stream_bytes = read_bytes(fixture("reuters_small_stream.npz"));
        QVERIFY(stream_bytes[6] & 0x08);
        const ZipReader stream = ZipReader::open_file(fixture("reuters_small_stream.npz"));
        QCOMPARE(stream.read("x.npy"), stored.read("x.npy"));
        EXPECT_DATA_ERROR(stored.read("z.npy"), "reuters_small_savez.npz", "no entry 'z.npy'",
                          "'x.npy', 'y.npy'");
    }

    void zip64RecordsAreRead() {
        const Bytes x = entry_of("reuters_small_savez.npz", "x.npy");
        const Bytes y = entry_of("reuters_small_savez.npz", "y.npy");
        for (bool zip64 : {false, true}) {
            const ZipReader zip(make_zip({{"x.npy", x}, {"y.npy", y}}, zip64), "built.npz");
            QCOMPARE(zip.entries().size(), size_t{2});
            QCOMPARE(zip.read("x.npy"), x);
            QCOMPARE(zip.entries()[1].uncompressed_size, uint64_t{y.size()});
            const RawReuters raw =
                read_reuters_npz_bytes(make_zip({{"x.npy", x}, {"y.npy", y}}, zip64), "built.npz");
            QCOMPARE(raw.xs.size(), size_t{60});
        }
    }

    void zipDamageIsReported() {
        EXPECT_DATA_ERROR(ZipReader(Bytes{}, "reuters.npz"), "reuters.npz", "empty");
        EXPECT_DATA_ERROR(ZipReader(bytes_of("hello"), "reuters.npz"), "reuters.npz", "too short");
        EXPECT_DATA_ERROR(ZipReader(Bytes(100, 0), "reuters.npz"), "reuters.npz",
                          "no zip end-of-central-directory");
        EXPECT_DATA_ERROR(ZipReader(read_bytes(fixture("numeric_v1.npy")), "a.npz"), "a.npz",
                          "single .npy array");
        EXPECT_DATA_ERROR(ZipReader::open_file(fixture("does_not_exist.npz")), "does_not_exist.npz",
                          "cannot open");

        const Bytes x = entry_of("reuters_small_savez.npz", "x.npy");
        const Bytes good = make_zip({{"x.npy", x}});
        // Central directory says more bytes than the entry has: claim 1000 extra. libzip compares
        // every local header with the directory when it opens the archive.
        {
            Bytes b = good;
            const size_t cd = b.size() - 22 - 46 - 5;
            const uint32_t claimed = static_cast<uint32_t>(x.size() + 1000);
            for (int i = 0; i < 4; ++i)
                b[cd + 20 + i] = b[cd + 24 + i] = static_cast<uint8_t>(claimed >> (8 * i));
            EXPECT_DATA_ERROR(ZipReader(b, "reuters.npz").read("x.npy"),
                              "reuters.npz: is corrupt: its central directory does not match the entries it lists");
        }
        // The file cut inside the entry's data, its directory kept: the entry is truncated.
        {
            Bytes b(good.begin(), good.begin() + 30 + 5 + 100);
            b.insert(b.end(), good.end() - 22 - 46 - 5, good.end());
            EXPECT_DATA_ERROR(ZipReader(b, "reuters.npz").read("x.npy"), "reuters.npz", "corrupt");
        }
        // A flipped data byte: CRC.
        {
            Bytes b = good;
            b[30 + 5 + 100] ^= 0x40;
            EXPECT_DATA_ERROR(ZipReader(b, "reuters.npz").read("x.npy"), "reuters.npz", "'x.npy'",
                              "CRC-32");
        }
        // Unsupported compression method, encryption (said by both headers: where they disagree
        // the archive is corrupt), a local name that differs from the directory's, duplicates.
        {
            Bytes b = good;
            const size_t cd = b.size() - 22 - 46 - 5;
            b[8] = b[cd + 10] = 12;  // bzip2
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz").read("x.npy"), "r.npz",
                              "compression method 12");
            b = good;
            b[cd + 10] = 12;
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz").read("x.npy"), "r.npz",
                              "central directory does not match the entries it lists");
            b = good;
            b[6] = b[cd + 8] = 1;
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz").read("x.npy"), "r.npz", "encrypted");
            b = good;
            b[30] = 'z';
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz").read("x.npy"), "r.npz",
                              "central directory does not match the entries it lists");
            EXPECT_DATA_ERROR(ZipReader(make_zip({{"x.npy", x}, {"x.npy", x}}), "r.npz"), "r.npz",
                              "two entries with the same name");
        }
        // Entry count that cannot fit the directory, directory outside the file.
        {
            Bytes b = good;
            b[b.size() - 22 + 10] = 0xfe;
            b[b.size() - 22 + 8] = 0xfe;
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz"), "r.npz: is corrupt: its central directory");
            b = good;
            b[b.size() - 22 + 19] = 0x7f;
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz"), "r.npz: is corrupt: its central directory");
        }
        // A deflate entry claiming far more than deflate can produce (a zip bomb header).
        {
            const Bytes d = read_bytes(fixture("reuters_small_compressed.npz"));
            Bytes b = d;
            // Find x.npy's central header and claim 3 GiB uncompressed there and in the local
            // header's zip64 field (at 30 + 5 + 4: numpy writes zip64 local headers), so that the
            // two agree and the archive opens.
            const std::string sig("PK\x01\x02", 4);
            const auto it = std::search(b.begin(), b.end(), sig.begin(), sig.end());
            const size_t cd = static_cast<size_t>(it - b.begin());
            constexpr size_t kLocalZip64Size = 30 + 5 + 4;
            b[cd + 24] = b[kLocalZip64Size] = 0x00;
            b[cd + 25] = b[kLocalZip64Size + 1] = 0x00;
            b[cd + 26] = b[kLocalZip64Size + 2] = 0x00;
            b[cd + 27] = b[kLocalZip64Size + 3] = 0xc0;
            EXPECT_DATA_ERROR(ZipReader(b, "r.npz").read("x.npy"), "r.npz",
                              "more than deflate can produce");
            for (const uint8_t flip : {0x01, 0xff}) {  // a few bytes fewer or more than it inflates to
                b = d;
                b[cd + 24] ^= flip;
                b[kLocalZip64Size] ^= flip;
                EXPECT_DATA_ERROR(ZipReader(b, "r.npz").read("x.npy"), "r.npz", "'x.npy'");
            }
        }
    }

    // Every truncation of every fixture fails cleanly, and every single-byte flip either fails
    // cleanly or still reads the same arrays (bytes zip does not check, e.g. timestamps).
    void everyTruncationAndByteFlipIsSafe() {
        for (const char* name : kArchives) {
            const Bytes good = read_bytes(fixture(name));
            const RawReuters expected = read_reuters_npz_bytes(good, name);
            for (size_t n = 0; n < good.size(); ++n) {
                const std::string m = data_error(
                    [&] {
                        read_reuters_npz_bytes(
                            Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)),
                            name);
                    },
                    {name});
                QVERIFY2(
                    m.rfind("MISSING", 0) != 0 && m != "NO EXCEPTION" && m.rfind("WRONG", 0) != 0,
                    (std::to_string(n) + ": " + m).c_str());
            }
            int failures = 0;
            for (size_t i = 0; i < good.size(); ++i) {
                Bytes b = good;
                b[i] ^= 0xff;
                try {
                    const RawReuters raw = read_reuters_npz_bytes(std::move(b), name);
                    QVERIFY2(raw.xs == expected.xs && raw.labels == expected.labels,
                             (std::string(name) + ": flipping byte " + std::to_string(i) +
                              " changed the data silently")
                                 .c_str());
                } catch (const DataError& e) {
                    ++failures;
                    QVERIFY(std::string(e.what()).find(name) != std::string::npos);
                }
            }
            QVERIFY(failures > static_cast<int>(good.size()) / 2);
        }
    }

    // --- .npy --------------------------------------------------------------------------------

    void npyNumericVersions() {
        const NpyArray v1 = read_npy_file(fixture("numeric_v1.npy"));
        QCOMPARE(v1.version_major, 1);
        QCOMPARE(v1.descr, std::string("<i4"));
        QCOMPARE(v1.shape, (std::vector<int64_t>{2, 3}));
        QCOMPARE(v1.to_int64(), (std::vector<int64_t>{1, -2, 3, 4, 5, -6}));
        const NpyArray v2 = read_npy_file(fixture("numeric_v2.npy"));
        QCOMPARE(v2.version_major, 2);
        QVERIFY(v2.big_endian);
        QCOMPARE(v2.to_int64(), (std::vector<int64_t>{1, 2, 513, 65535}));
        const NpyArray v3 = read_npy_file(fixture("numeric_v3.npy"));
        QCOMPARE(v3.version_major, 3);
        QCOMPARE(v3.to_int64(), (std::vector<int64_t>{7, 0, 255}));
        const NpyArray y = parse_npy(entry_of("reuters_small_savez.npz", "y.npy"), "y.npy");
        QCOMPARE(y.descr, std::string("<i8"));
        QCOMPARE(y.kind, NpyKind::Int);
        QCOMPARE(y.shape, (std::vector<int64_t>{60}));
    }

    void npyDamageIsReported() {
        const Bytes good = read_bytes(fixture("numeric_v1.npy"));
        Bytes b = good;
        b[1] = 'X';
        EXPECT_DATA_ERROR(parse_npy(b, "a.npy"), "a.npy", "wrong magic");
        b = good;
        b[6] = 9;
        EXPECT_DATA_ERROR(parse_npy(b, "a.npy"), "a.npy", "version 9.0");
        b = good;
        b[8] = 0xff;
        b[9] = 0xff;
        EXPECT_DATA_ERROR(parse_npy(b, "a.npy"), "a.npy", "header is truncated");
        EXPECT_DATA_ERROR(parse_npy(Bytes(good.begin(), good.end() - 3), "a.npy"), "a.npy",
                          "data is truncated (expected 24 bytes, found 21)");
        EXPECT_DATA_ERROR(parse_npy(Bytes{}, "a.npy"), "a.npy", "empty");
        EXPECT_DATA_ERROR(
            parse_npy(
                make_npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", Bytes(16)),
                "a.npy"),
            "a.npy", "dtype '<c16' is not supported");
        EXPECT_DATA_ERROR(
            parse_npy(make_npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }",
                               Bytes(4)),
                      "a.npy"),
            "a.npy", "structured dtype");
        EXPECT_DATA_ERROR(
            parse_npy(make_npy("{'descr': '<i4', 'shape': (1,), }", Bytes(4)), "a.npy"), "a.npy",
            "lacks one of the keys");
        EXPECT_DATA_ERROR(
            parse_npy(make_npy("{'descr': '<i4', 'fortran_order': 0, 'shape': (1,), }", Bytes(4)),
                      "a.npy"),
            "a.npy", "'fortran_order'");
        EXPECT_DATA_ERROR(
            parse_npy(
                make_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }", Bytes(4)),
                "a.npy"),
            "a.npy", "'shape'");
        EXPECT_DATA_ERROR(parse_npy(make_npy("{'descr': '<i4', 'fortran_order': False, 'shape': "
                                             "(4294967296, 4294967296, 4294967296), }",
                                             Bytes(4)),
                                    "a.npy"),
                          "a.npy", "overflows");
        EXPECT_DATA_ERROR(
            parse_npy(make_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), } junk",
                               Bytes(4)),
                      "a.npy"),
            "a.npy", "after the closing");
        EXPECT_DATA_ERROR(
            parse_npy(
                make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", Bytes(8)),
                "a.npy")
                .to_int64(),
            "a.npy", "expected integers");
        // Python 2 on some platforms wrote shape dimensions as longs.
        QCOMPARE(parse_npy(make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }",
                                    Bytes(16)),
                           "a.npy")
                     .shape,
                 (std::vector<int64_t>{2}));
    }

    // --- numpy's object-array pickle ---------------------------------------------------------

    void pickleProtocolsGiveTheSameLists() {
        // savez: numpy 2's own protocol 4; p2/p3: Python 3 protocols 2 and 3; py2: Python 2.7.
        const std::pair<const char*, int> cases[] = {{"reuters_small_savez.npz", 4},
                                                     {"reuters_small_p2.npz", 2},
                                                     {"reuters_small_p3.npz", 3},
                                                     {"reuters_small_py2.npz", 2}};
        std::vector<std::vector<int64_t>> first;
        for (const auto& [archive, protocol] : cases) {
            const NpyArray x = parse_npy(entry_of(archive, "x.npy"), archive);
            QCOMPARE(x.kind, NpyKind::Object);
            QCOMPARE(x.pickle_protocol, protocol);
            QCOMPARE(x.objects.size(), size_t{60});
            if (first.empty()) first = x.objects;
            QCOMPARE(x.objects, first);
        }
        QVERIFY(first[7].empty());                        // the empty wire
        QCOMPARE(first[11], (std::vector<int64_t>{45}));  // a one-word wire (APPEND, not APPENDS)
    }

    void pickleIntegersOfEveryWidth() {
        // Python 3, protocol 2: BININT1/BININT2/BININT and LONG1 for ints beyond 32 bits.
        const NpyArray big = read_npy_file(fixture("bigints_p2.npy"));
        QCOMPARE(big.pickle_protocol, 2);
        const std::vector<std::vector<int64_t>> expected = {
            {int64_t{1} << 31, -1, (int64_t{1} << 40) + 5, -(int64_t{1} << 33)},
            {},
            {INT64_MAX, INT64_MIN},
            {255, 256, 65535, 65536, -129},
            {0}};
        QCOMPARE(big.objects, expected);
        // Python 2's INT text opcode (ints beyond 32 bits) and LONG1 beyond 64 bits.
        QCOMPARE(unpickle(py2_array_pickle("](](I-5000000000\nI7\ne]e", 2)),
                 (std::vector<std::vector<int64_t>>{{-5000000000, 7}, {}}));
        EXPECT_DATA_ERROR(
            unpickle(py2_array_pickle(PK("]]\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"
                                         "aa"),
                                      1)),
            "test.npy", "does not fit in 64 bits");
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("]]I99999999999999999999\naa", 1)), "test.npy",
                          "does not fit in 64 bits");
    }

    void pickleRefusesEverythingElse() {
        const std::string ok = py2_array_pickle(
            "]]K\x05"
            "aa",
            1);
        QCOMPARE(unpickle(ok), (std::vector<std::vector<int64_t>>{{5}}));

        // The classic gadget: GLOBAL os.system, REDUCE.
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02"
                                      "cos\nsystem\nX\x02\x00\x00\x00idq\x00\x85R.")),
                          "test.npy", "global 'os.system' is not allowed");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x04\x8c\x08"
                                      "builtins\x8c\x04"
                                      "eval\x93.")),
                          "test.npy", "global 'builtins.eval' is not allowed");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02"
                                      "c__builtin__\nopen\n.")),
                          "test.npy", "'__builtin__.open'");
        // Opcodes outside the set: INST, OBJ, an undefined byte, EMPTY_DICT, PERSID.
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02(ios\nsystem\n.")), "test.npy",
                          "pickle opcode INST ('i') at offset 3 is not allowed");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02\xff.")), "test.npy",
                          "opcode 0xff (not a pickle opcode) at offset 2 is not allowed");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02}.")), "test.npy", "EMPTY_DICT");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02Pabc\n.")), "test.npy", "PERSID");
        // Protocols 0/1 and 6+.
        EXPECT_DATA_ERROR(unpickle("(lp0\n."), "test.npy", "does not start with a PROTO opcode");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x06.")), "test.npy", "protocol 6 is not supported");
        // Not an object array, or not lists of ints.
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02K\x01.")), "test.npy",
                          "holds an int, not a numpy object array");
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("](NNe", 2)), "test.npy",
                          "appends None to a list");
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("](K\x01K\x02"
                                                    "e",
                                                    2)),
                          "test.npy", "holds ints, expected lists");
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("]]](K\x01"
                                                    "eaa",
                                                    1)),
                          "test.npy", "nests lists deeper");
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("](]]e", 3)), "test.npy",
                          "gives 2 items for an array of 3 elements");
        // Self-reference and frozen lists: no cycles can be built.
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("]q\x01h\x01"
                                                    "a",
                                                    1)),
                          "test.npy", "appends a list to itself");
        EXPECT_DATA_ERROR(unpickle(py2_array_pickle("](]q\x01"
                                                    "eh\x01K\x01"
                                                    "a",
                                                    1)),
                          "test.npy", "after storing it elsewhere");
        // Memo and stack misuse.
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02h\x07.")), "test.npy",
                          "memo entry 7, which was never stored");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02R.")), "test.npy", "stack underflow");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02K\x01K\x02.")), "test.npy", "unbalanced stack");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02"
                                      "e.")),
                          "test.npy", "no MARK");
        // Deeply nested tuples are refused before they can exhaust anything.
        EXPECT_DATA_ERROR(unpickle(std::string("\x80\x02)") + std::string(100000, '\x85') + "."),
                          "test.npy", "nests tuples deeper");
        // Calling anything but the reconstruct/dtype/encode functions; wrong dtype.
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02"
                                      "cnumpy\nndarray\n)R.")),
                          "test.npy", "calls numpy.ndarray directly");
        EXPECT_DATA_ERROR(unpickle(PK("\x80\x02"
                                      "cnumpy\ndtype\nU\x02i8K\x00K\x01\x87R.")),
                          "test.npy", "dtype 'i8'");
        // A shared list referenced over and over cannot multiply the output.
        {
            std::string inner = "]q\x01(";
            for (int i = 0; i < 100; ++i) inner += "K\x01";
            inner += "e";
            std::string many = "](" + inner;
            for (int i = 0; i < 250; ++i) many += "h\x01";
            many += "e";
            EXPECT_DATA_ERROR(unpickle(py2_array_pickle(many, 251)), "test.npy",
                              "more ints than it has bytes");
        }
    }

    void pickleTruncationsAndFlipsAreSafe() {
        const Bytes p = pickle_of(entry_of("reuters_small_py2.npz", "x.npy"));
        for (size_t n = 0; n < p.size(); ++n) {
            const std::string m = data_error(
                [&] { unpickle_object_array(std::span<const uint8_t>(p.data(), n), "x.npy"); },
                {"x.npy"});
            QVERIFY2(m.rfind("MISSING", 0) != 0 && m != "NO EXCEPTION" && m.rfind("WRONG", 0) != 0,
                     m.c_str());
        }
        for (const char* archive :
             {"reuters_small_py2.npz", "reuters_small_p2.npz", "reuters_small_savez.npz"}) {
            const Bytes good = pickle_of(entry_of(archive, "x.npy"));
            for (size_t i = 0; i < good.size(); ++i) {
                for (uint8_t mask : {uint8_t{0xff}, uint8_t{0x01}}) {
                    Bytes b = good;
                    b[i] ^= mask;
                    try {
                        (void)unpickle_object_array(b, "x.npy");
                    } catch (const DataError&) {
                    }
                }
            }
        }
    }

    // --- reuters.npz and load_data -----------------------------------------------------------

    void readsEveryArchiveVariantAlike() {
        const RawReuters first = read_reuters_npz(fixture(kArchives[0]));
        QCOMPARE(first.xs.size(), size_t{60});
        QCOMPARE(first.labels.size(), size_t{60});
        QCOMPARE(first.labels[3], int64_t{4});
        for (const char* name : kArchives) {
            const RawReuters raw = read_reuters_npz(fixture(name));
            QCOMPARE(raw.xs, first.xs);
            QCOMPARE(raw.labels, first.labels);
        }
    }

    void loadDataMatchesKeras() {
        const std::vector<ExpectedRun> runs = read_expected();
        QCOMPARE(runs.size(), size_t{6});
        const RawReuters raw = read_reuters_npz(fixture("reuters_small_py2.npz"));
        for (const ExpectedRun& run : runs) {
            const DatasetSplit split = keras_load_data(raw, run.options);
            QCOMPARE(split.train.sequences, run.train_x);
            QCOMPARE(split.train.labels, run.train_y);
            QCOMPARE(split.validation.sequences, run.test_x);
            QCOMPARE(split.validation.labels, run.test_y);
            int32_t largest_label = 0, largest_train_id = 0;
            for (int32_t y : run.train_y) largest_label = std::max(largest_label, y);
            for (int32_t y : run.test_y) largest_label = std::max(largest_label, y);
            for (const auto& s : run.train_x) {
                for (int32_t id : s) largest_train_id = std::max(largest_train_id, id);
            }
            for (const TextDataset* part : {&split.train, &split.validation}) {
                QCOMPARE(part->name, std::string("Keras Reuters (reuters.npz)"));
                QVERIFY(!part->synthetic);
                QCOMPARE(part->num_classes, largest_label + 1);
                QCOMPARE(part->vocabulary_size, largest_train_id + 1);
            }
        }
        // Defaults: 60 wires split 48 / 12, ids start with start_char 1.
        const DatasetSplit d = keras_load_data(raw, KerasLoadOptions{}, "custom");
        QCOMPARE(d.train.size(), size_t{48});
        QCOMPARE(d.validation.size(), size_t{12});
        QCOMPARE(d.train.name, std::string("custom"));
        QCOMPARE(d.train.sequences[0][0], 1);
    }

    void loadDataRejectsBadOptions() {
        const RawReuters raw = read_reuters_npz(fixture("reuters_small_savez.npz"));
        KerasLoadOptions o;
        o.test_split = 1.5;
        EXPECT_DATA_ERROR(keras_load_data(raw, o), "test_split");
        o = {};
        o.seed = uint64_t{1} << 32;
        EXPECT_DATA_ERROR(keras_load_data(raw, o), "seed must be between 0 and 2**32 - 1");
        o = {};
        o.maxlen = 1;  // every wire has length >= 1 (the start char)
        EXPECT_DATA_ERROR(keras_load_data(raw, o), "max() of an empty sequence");
        o.num_words = 10;  // with num_words given, Keras returns empty arrays
        const DatasetSplit empty = keras_load_data(raw, o);
        QCOMPARE(empty.train.size() + empty.validation.size(), size_t{0});
        o = {};
        o.start_char = -1;  // None: the empty wire makes Keras' max() fail
        EXPECT_DATA_ERROR(keras_load_data(raw, o), "a wire is empty");
        RawReuters bad = raw;
        bad.labels.pop_back();
        EXPECT_DATA_ERROR(keras_load_data(bad, KerasLoadOptions{}), "60 wires but 59 labels");
    }

    void reutersArchiveProblemsNameTheFileAndIndex() {
        const Bytes x = entry_of("reuters_small_savez.npz", "x.npy");
        std::vector<int64_t> labels(60, 1);
        labels[17] = -3;
        EXPECT_DATA_ERROR(read_reuters_npz_bytes(make_zip({{"x.npy", x}, {"y.npy", y_npy(labels)}}),
                                                 "reuters.npz"),
                          "reuters.npz: label -3 at index 17 is negative");
        EXPECT_DATA_ERROR(
            read_reuters_npz_bytes(
                make_zip({{"x.npy", x}, {"y.npy", y_npy(std::vector<int64_t>(59, 0))}}),
                "reuters.npz"),
            "reuters.npz: x has 60 wires but y has 59 labels");
        EXPECT_DATA_ERROR(read_reuters_npz_bytes(make_zip({{"x.npy", x}}), "reuters.npz"),
                          "reuters.npz", "no 'y.npy' entry");
        EXPECT_DATA_ERROR(
            read_reuters_npz_bytes(make_zip({{"x.npy", y_npy({1, 2})}, {"y.npy", y_npy({1, 2})}}),
                                   "reuters.npz"),
            "reuters.npz: entry 'x.npy'", "expected a 1-D object array");
        Bytes wrong_magic = x;
        wrong_magic[0] = 'P';
        EXPECT_DATA_ERROR(
            read_reuters_npz_bytes(make_zip({{"x.npy", wrong_magic}, {"y.npy", y_npy(labels)}}),
                                   "reuters.npz"),
            "reuters.npz: entry 'x.npy'", "wrong magic");
        // A hostile pickle inside an otherwise valid archive.
        const Bytes evil = make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
                                    bytes_of(PK("\x80\x02"
                                                "cos\nsystem\nX\x02\x00\x00\x00idq\x00\x85R.")));
        EXPECT_DATA_ERROR(read_reuters_npz_bytes(make_zip({{"x.npy", evil}, {"y.npy", y_npy({0})}}),
                                                 "reuters.npz"),
                          "reuters.npz: entry 'x.npy'", "global 'os.system' is not allowed",
                          "save x as Keras' reuters.npz holds it: an object array of Python lists of int ids");
        // No wires at all: "[keras_load_data] no wire is left ... max() of an empty sequence" named
        // neither the file nor what it lacks.
        const Bytes no_wires = make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (0,), }", bytes_of(py2_array_pickle("]", 0)));
        EXPECT_DATA_ERROR(read_reuters_npz_bytes(make_zip({{"x.npy", no_wires}, {"y.npy", y_npy({})}}), "reuters.npz"),
                          "reuters.npz: x holds no wires; save the wires' word-id lists in x and their labels in y");
        EXPECT_DATA_ERROR(read_reuters_npz(fixture("missing.npz")), "missing.npz", "cannot open");
        // An empty file on disk.
        const std::string empty = QDir::tempPath().toStdString() + "/mirrorlab_empty_reuters.npz";
        { std::ofstream create(empty, std::ios::binary); }
        EXPECT_DATA_ERROR(read_reuters_npz(empty), empty + ": is empty");
        std::filesystem::remove(empty);
    }

    // Issue #13: a 689-byte npz with the label 2000000000 made the class count 2e9 + 1, and the
    // per-class tables asked for 16 GB. Labels are class numbers; more than kMaxClasses classes is
    // a DataError naming the label and its index.
    void hugeLabelsAreRefused() {
        const Bytes x = entry_of("reuters_small_savez.npz", "x.npy");
        std::vector<int64_t> labels(60, 1);
        labels[5] = 2000000000;
        const Bytes archive = make_zip({{"x.npy", x}, {"y.npy", y_npy(labels)}});
        qInfo("archive with label 2000000000: %zu bytes", archive.size());
        EXPECT_DATA_ERROR(read_reuters_npz_bytes(archive, "reuters.npz"),
                          "reuters.npz: label 2000000000 at index 5 is too large",
                          "at most 100000 classes", "renumber the classes from 0");
        RawReuters raw = read_reuters_npz(fixture("reuters_small_savez.npz"));
        raw.labels[7] = 2000000000;
        EXPECT_DATA_ERROR(keras_load_data(raw, KerasLoadOptions{}),
                          "label 2000000000 at index 7 is too large");
        // The largest label allowed gives kMaxClasses classes.
        labels[5] = kMaxClasses - 1;
        const DatasetSplit split = keras_load_data(
            read_reuters_npz_bytes(make_zip({{"x.npy", x}, {"y.npy", y_npy(labels)}}), "r.npz"),
            KerasLoadOptions{});
        QCOMPARE(split.train.num_classes, kMaxClasses);
        QCOMPARE(split.train.class_counts().size(), static_cast<size_t>(kMaxClasses));
        TextDataset too_many = split.train;
        too_many.num_classes = kMaxClasses + 1;
        EXPECT_DATA_ERROR(too_many.validate(), "num_classes is 100001");
    }

    // Issue #13: a 3 MB zip bomb made the reader inflate 2 GB. What an entry may inflate to is
    // decided by the declared sizes, relative to the compressed size, before anything is
    // inflated; and an entry never inflates past its declared size.
    void zipBombsAreRefusedBeforeInflating() {
        const Bytes zeros(size_t{128} << 20, 0);  // 128 MiB of one byte: ~230:1 at level 1
        const Bytes compressed = deflate_raw(zeros, 1);
        QVERIFY(!compressed.empty());
        const uint32_t crc = zip_crc32(zeros);
        qInfo("%zu bytes inflating to %zu", compressed.size(), zeros.size());
        const Bytes bomb = make_deflated_zip("y.npy", compressed, crc, zeros.size());
        EXPECT_DATA_ERROR(ZipReader(bomb, "bomb.npz").read("y.npy"), "bomb.npz: entry 'y.npy'",
                          "would inflate " + std::to_string(compressed.size()) +
                              " compressed bytes to 134217728, more than 100 times as many",
                          "zip bomb");
        // Declaring less than it inflates to: stops at the declared size.
        const Bytes liar = make_deflated_zip("y.npy", compressed, crc, compressed.size() * 20);
        EXPECT_DATA_ERROR(ZipReader(liar, "liar.npz").read("y.npy"), "liar.npz: entry 'y.npy'",
                          "inflates to more than the " + std::to_string(compressed.size() * 20) +
                              " bytes its header says");
        // Small entries may compress as well as deflate allows (64 MiB whatever the ratio).
        const Bytes small(size_t{1} << 20, 0);
        const Bytes small_zip = make_deflated_zip("y.npy", deflate_raw(small, 9), zip_crc32(small), small.size());
        QCOMPARE(ZipReader(small_zip, "small.npz").read("y.npy").size(), small.size());
    }

    // Devices and FIFOs are refused by name instead of being read until memory runs out (or, for
    // a FIFO, waiting for a writer forever).
    void nonRegularFilesAreRefused() {
        EXPECT_DATA_ERROR(read_reuters_npz("/dev/zero"), "cannot read '/dev/zero'",
                          "it is a character device, not a regular file");
        EXPECT_DATA_ERROR(read_npy_file("/dev/zero"), "/dev/zero", "not a regular file");
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string fifo = dir.filePath("reuters.npz").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        EXPECT_DATA_ERROR(read_reuters_npz(fifo), fifo, "it is a FIFO (named pipe), not a regular file");
    }

    void outOfVocabularyIdsAreMapped() {
        TextDataset data;
        data.name = "Keras Reuters (reuters.npz)";
        data.sequences = {{1, 5, 30982, 7}, {1, 30985}, {1, 2}};
        data.labels = {0, 1, 2};
        data.num_classes = 3;
        data.vocabulary_size = 40000;
        TextDataset copy = data;
        EXPECT_DATA_ERROR(map_ids_to_oov(copy, 30982, 2, true),
                          "2 token ids are outside the vocabulary of 30982", "largest id 30985",
                          "Keras Reuters (reuters.npz)");
        QCOMPARE(copy.sequences, data.sequences);  // unchanged on error
        const OovReport report = map_ids_to_oov(data, 30982, 2, false);
        QCOMPARE(report.replaced, int64_t{2});
        QCOMPARE(report.largest_id, 30985);
        QCOMPARE(data.sequences, (std::vector<std::vector<int32_t>>{{1, 5, 2, 7}, {1, 2}, {1, 2}}));
        QCOMPARE(data.vocabulary_size, 30982);
        data.validate();
        const OovReport none = map_ids_to_oov(data, 30982, 2, true);
        QCOMPARE(none.replaced, int64_t{0});
        QCOMPARE(none.largest_id, 0);
        EXPECT_DATA_ERROR(map_ids_to_oov(data, 10, 10, false), "OOV id 10");

        // On a load_data split: the validation half may hold ids the training half never has.
        const RawReuters raw = read_reuters_npz(fixture("reuters_small_savez.npz"));
        DatasetSplit split = keras_load_data(raw, KerasLoadOptions{});
        map_ids_to_oov(split.validation, split.train.vocabulary_size, 2, false);
        split.train.validate();
        split.validation.validate();
    }

    void wordIndexAndDecoding() {
        const WordIndex index = read_reuters_word_index(fixture("reuters_small_word_index.json"));
        QCOMPARE(index.size(), size_t{46});
        QCOMPARE(index.at("word1"), int64_t{1});
        QCOMPARE(index.at("caf\xc3\xa9"), int64_t{46});
        // reverse_word_index.get(i - 3, '?'): 0/1/2 (pad, start, OOV) and 3 (rank 0) read '?'.
        QCOMPARE(decode_wire({1, 4, 5, 2, 0, 3, 49, 1000}, index),
                 std::string("? word1 word2 ? ? ? caf\xc3\xa9 ?"));
        QCOMPARE(decode_wire({1, 3, 4}, index, 2), std::string("? word1 word2"));
        QCOMPARE(decode_wire({}, index), std::string());

        const std::string dir = QDir::tempPath().toStdString();
        const std::string bad_json = dir + "/mirrorlab_bad_word_index.json";
        {
            std::ofstream out(bad_json);
            out << "{\"the\": 1, \"of\": 2.5}";
        }
        EXPECT_DATA_ERROR(read_reuters_word_index(bad_json), bad_json, "'of'",
                          "expected an integer");
        {
            std::ofstream out(bad_json);
            out << "{\"the\": 1,";
        }
        EXPECT_DATA_ERROR(read_reuters_word_index(bad_json), bad_json);
        {
            std::ofstream out(bad_json);
            out << "[1, 2]";
        }
        EXPECT_DATA_ERROR(read_reuters_word_index(bad_json), bad_json, "expected an object");
        std::filesystem::remove(bad_json);
    }

    // A word index as TextDataset::words: rank r is id r + 3, ties read as the alphabetically first
    // word (as decode_wire()), and it writes and reads back unchanged.
    void rankedWordsAndKerasIds() {
        const WordIndex index = read_reuters_word_index(fixture("reuters_small_word_index.json"));
        const std::vector<std::string> ranked = ranked_words(index);
        QCOMPARE(ranked.size(), size_t{46});
        QCOMPARE(ranked[0], std::string("word1"));
        QCOMPARE(ranked[45], std::string("caf\xc3\xa9"));
        const std::vector<std::string> words = keras_id_words(ranked);
        QCOMPARE(words.size(), size_t{50});
        QCOMPARE((std::vector<std::string>(words.begin(), words.begin() + 5)),
                 (std::vector<std::string>{"", "<start>", "<oov>", "<unused>", "word1"}));
        TextDataset data;
        data.words = words;
        QCOMPARE(decode_sequence(data, {1, 4, 5, 2, 49}),
                 std::string("<start> word1 word2 <oov> caf\xc3\xa9"));
        QCOMPARE(ranked_words({{"b", 2}, {"a", 2}, {"z", 4}, {"never", 0}}),
                 (std::vector<std::string>{"", "a", "", "z"}));
        EXPECT_DATA_ERROR(ranked_words({{"huge", int64_t{1} << 40}}), "huge", "rank");
        QCOMPARE(word_index_of(ranked), index);

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path =
            dir.filePath(QStringLiteral("sub/reuters_word_index.json")).toStdString();
        write_reuters_word_index(path, index);
        QCOMPARE(read_reuters_word_index(path), index);
        QVERIFY(!std::filesystem::exists(path + ".part"));
        EXPECT_DATA_ERROR(
            write_reuters_word_index("/proc/mirrorlab/no/reuters_word_index.json", index),
            "/proc/mirrorlab/no/reuters_word_index.json");
    }

    // reuters.npz holds ids only: load_dataset() takes the words from reuters_word_index.json
    // beside it (or in Keras' folders), else from the index derived from the Reuters-21578 files,
    // and says which; with neither, the samples stay ids.
    void npzFindsItsWordIndex() {
        const QByteArray old_home = qgetenv("HOME"), old_xdg = qgetenv("XDG_CACHE_HOME");
        const bool had_xdg = qEnvironmentVariableIsSet("XDG_CACHE_HOME");
        const bool had_keras = qEnvironmentVariableIsSet("KERAS_HOME");
        const QByteArray old_keras = qgetenv("KERAS_HOME");
        QTemporaryDir root;
        QVERIFY(root.isValid());
        const std::string base = root.path().toStdString();
        qputenv("HOME", QByteArray::fromStdString(base + "/home"));
        qputenv("XDG_CACHE_HOME", QByteArray::fromStdString(base + "/xdg"));
        qunsetenv("KERAS_HOME");
        std::filesystem::create_directories(base + "/data");
        const std::string npz = base + "/data/reuters.npz";
        std::filesystem::copy_file(fixture("reuters_small_savez.npz"), npz);

        DatasetSplit split = load_dataset("keras:" + npz);
        QVERIFY(split.train.words.empty());
        QCOMPARE(split.words_origin.kind, WordsOrigin::Kind::None);
        auto shows_ids = [](const std::string& text) {
            for (size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at + 1)) {
                if (at + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[at + 1])))
                    return true;
            }
            return false;
        };
        QVERIFY(shows_ids(decode_sequence(split.train, split.train.sequences[0])));

        // The derived index in the app cache.
        QCOMPARE(mirrorlab_cache_dir(), base + "/xdg/mirrorlab");
        const std::vector<WordIndexFile> candidates = find_reuters_word_index_candidates(npz);
        QCOMPARE(candidates.front().path, base + "/data/reuters_word_index.json");
        QVERIFY(!candidates.front().derived);
        QCOMPARE(candidates.back().path, base + "/xdg/mirrorlab/" + kDerivedWordIndexName);
        QVERIFY(candidates.back().derived);
        const WordIndex index = read_reuters_word_index(fixture("reuters_small_word_index.json"));
        write_reuters_word_index(candidates.back().path, index);
        split = load_dataset("keras:" + npz);
        QCOMPARE(split.words_origin.kind, WordsOrigin::Kind::DerivedWordIndex);
        QCOMPARE(split.words_origin.path, candidates.back().path);
        QCOMPARE(split.train.words.size(), size_t{50});
        QCOMPARE(split.validation.words, split.train.words);

        // Keras' own file beside the npz comes first; every id of the data reads as a word.
        std::filesystem::copy_file(fixture("reuters_small_word_index.json"),
                                   base + "/data/reuters_word_index.json");
        split = load_dataset("keras:" + npz);
        QCOMPARE(split.words_origin.kind, WordsOrigin::Kind::KerasWordIndex);
        QCOMPARE(split.words_origin.path, base + "/data/reuters_word_index.json");
        for (const auto& sequence : split.train.sequences) {
            const std::string text = decode_sequence(split.train, sequence, 1000);
            QVERIFY2(!shows_ids(text), text.c_str());
            // The tutorial's decoding says the same, with '?' for the start and OOV marks.
            std::string tutorial = decode_wire(sequence, index);
            std::string ours = text;
            for (const char* mark : {"<start>", "<oov>"}) {
                for (size_t at = ours.find(mark); at != std::string::npos; at = ours.find(mark))
                    ours.replace(at, std::strlen(mark), "?");
            }
            QCOMPARE(ours, tutorial);
        }

        qputenv("HOME", old_home);
        if (had_xdg)
            qputenv("XDG_CACHE_HOME", old_xdg);
        else
            qunsetenv("XDG_CACHE_HOME");
        if (had_keras) qputenv("KERAS_HOME", old_keras);
    }

    void candidatesFollowKerasAndXdg() {
        const QByteArray old_home = qgetenv("HOME"), old_keras = qgetenv("KERAS_HOME"),
                         old_xdg = qgetenv("XDG_CACHE_HOME");
        const bool had_keras = qEnvironmentVariableIsSet("KERAS_HOME"),
                   had_xdg = qEnvironmentVariableIsSet("XDG_CACHE_HOME");
        const std::string root = QDir::tempPath().toStdString() + "/mirrorlab_keras_candidates";
        std::filesystem::remove_all(root);
        qputenv("HOME", QByteArray::fromStdString(root + "/home"));
        qputenv("KERAS_HOME", QByteArray::fromStdString(root + "/kh"));
        qputenv("XDG_CACHE_HOME", QByteArray::fromStdString(root + "/xdg"));
        QCOMPARE(find_keras_reuters_candidates(),
                 (std::vector<std::string>{root + "/kh/datasets/reuters.npz",
                                           root + "/home/.keras/datasets/reuters.npz",
                                           root + "/xdg/mirrorlab/reuters.npz"}));
        QVERIFY(!find_keras_reuters().has_value());
        std::filesystem::create_directories(root + "/xdg/mirrorlab");
        std::filesystem::copy_file(fixture("reuters_small_savez.npz"),
                                   root + "/xdg/mirrorlab/reuters.npz");
        QCOMPARE(find_keras_reuters().value_or(""), root + "/xdg/mirrorlab/reuters.npz");
        std::filesystem::create_directories(
            root + "/home/.keras/datasets/reuters.npz");  // a directory is not the file
        QCOMPARE(find_keras_reuters().value_or(""), root + "/xdg/mirrorlab/reuters.npz");
        qunsetenv("KERAS_HOME");
        qunsetenv("XDG_CACHE_HOME");
        QCOMPARE(find_keras_reuters_candidates(),
                 (std::vector<std::string>{root + "/home/.keras/datasets/reuters.npz",
                                           root + "/home/.cache/mirrorlab/reuters.npz"}));
        std::filesystem::remove_all(root);
        qputenv("HOME", old_home);
        if (had_keras) qputenv("KERAS_HOME", old_keras);
        if (had_xdg) qputenv("XDG_CACHE_HOME", old_xdg);
    }

    // The real file, where one has been downloaded (keras.datasets.reuters.load_data()). It cannot
    // be downloaded on the project's machines, so MIRRORLAB_REQUIRE_REAL_DATA (the SGML files) does
    // not require it; MIRRORLAB_REQUIRE_KERAS_NPZ=1 does (tests/support/real_data.h).
    void realReutersWhenPresent() {
        const std::optional<std::string> path = find_keras_reuters();
        if (!path)
            KERAS_NPZ_MISSING(
                "no reuters.npz in ~/.keras/datasets, $KERAS_HOME/datasets or the MirrorLab cache");
        const RawReuters raw = read_reuters_npz(*path);
        QCOMPARE(raw.xs.size(), size_t{11228});
        const DatasetSplit split = keras_load_data(raw, KerasLoadOptions{});
        QCOMPARE(split.train.size(), size_t{8982});
        QCOMPARE(split.validation.size(), size_t{2246});
        QCOMPARE(split.train.num_classes, 46);
        QCOMPARE(split.train.vocabulary_size, 30982);
        QCOMPARE(keras_reuters_label_names().size(), size_t{46});
    }
};

QTEST_APPLESS_MAIN(TestKerasData)
#include "test_keras_data.moc"
