// MirrorLab's own HDF5 reader (core/export/hdf5_reader.cpp) against files h5py wrote
// (tests/data/hdf5, made by tests/golden/make_hdf5_fixtures.py; tests/golden/README.md): it lists
// what h5py lists and reads the floats h5py reads, in both HDF5 formats h5py writes (with dense link
// storage too); what it does not read is refused by name; and damaged files (every byte of Keras'
// own weight file and of two of these changed, every length cut) end in a DataError, never a crash.
// Keras' files themselves: test_keras_file.
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "core/data/zip_reader.h"
#include "core/export/hdf5_file.h"
#include "core/util/error.h"
#include "core/util/file.h"
#include "core/util/json.h"
#include "core/util/little_endian.h"
#include "support/error_text.h"

using namespace mirrorlab;

namespace {

const std::string kHdf5Dir = std::string(MIRRORLAB_TEST_DATA_DIR) + "/hdf5";

std::vector<std::uint8_t> fixture(const std::string& name) {
    return read_file_binary(kHdf5Dir + "/" + name, 1 << 24, name, "a fixture");
}

std::vector<std::uint8_t> keras_weights() {
    const std::string path = std::string(MIRRORLAB_TEST_DATA_DIR) + "/keras/small.keras";
    const ZipReader archive(read_file_binary(path, 1 << 24, "small.keras", "a fixture"), "small.keras");
    return archive.read("model.weights.h5");
}

// A little-endian field of a fixture (.at() checks it lies within).
std::uint64_t field_at(const std::vector<std::uint8_t>& bytes, std::size_t at, std::size_t count) {
    (void)bytes.at(at + count - 1);
    return load_little_endian(bytes.data() + at, count);
}

// The image position of message `type`'s data in the version-1 object header at `header`.
std::size_t v1_message(const std::vector<std::uint8_t>& bytes, std::size_t header, int type) {
    const std::size_t size = field_at(bytes, header + 8, 4);  // the first chunk's size
    for (std::size_t at = header + 16; at + 8 <= header + 16 + size;) {
        const std::size_t found = field_at(bytes, at, 2);
        const std::size_t data_size = field_at(bytes, at + 2, 2);
        if (found == static_cast<std::size_t>(type)) return at + 8;
        at += 8 + data_size;
    }
    return 0;
}

}  // namespace

class TestHdf5Reader : public QObject {
    Q_OBJECT
private slots:
    void listsAndReadsWhatH5pyWrote_data();
    void listsAndReadsWhatH5pyWrote();
    void refusesWhatItDoesNotReadByName();
    void damagedMetadataNamesThePart();
    void everyDamagedByteEndsInADataError_data();
    void everyDamagedByteEndsInADataError();
};

void TestHdf5Reader::listsAndReadsWhatH5pyWrote_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("superblock 0, object header 1, symbol tables (h5py's default, as Keras)") << "earliest.h5";
    QTest::newRow("superblock 3, object header 2, link messages (libver latest)") << "latest.h5";
    QTest::newRow("dense link storage: fractal heaps, v2 B-tree name indexes (libver latest)") << "dense_links.h5";
}

void TestHdf5Reader::listsAndReadsWhatH5pyWrote() {
    QFETCH(QString, file);
    const json::Value expected = json::parse_file(kHdf5Dir + "/expected.json").at("files").at(file.toStdString());
    const hdf5::FileReader reader(fixture(file.toStdString()), file.toStdString());

    std::vector<std::string> groups;
    for (const json::Value& group : expected.at("groups").as_array()) groups.push_back(group.as_string());
    QCOMPARE(reader.groups(), groups);

    const auto& datasets = expected.at("datasets").as_array();
    QCOMPARE(reader.datasets().size(), datasets.size());
    std::size_t float_values = 0;
    for (std::size_t i = 0; i < datasets.size(); ++i) {
        const json::Value& want = datasets[i];
        const hdf5::DatasetInfo& got = reader.datasets()[i];
        QCOMPARE(got.path, want.at("path").as_string());
        QCOMPARE(got.dtype, want.at("dtype").as_string());
        std::vector<std::int64_t> shape;
        for (const json::Value& d : want.at("shape").as_array()) shape.push_back(d.as_int64());
        QCOMPARE(got.shape, shape);
        if (!want.contains("values")) continue;
        const std::vector<float> values = reader.read_floats(got.path, shape);
        const auto& want_values = want.at("values").as_array();
        QCOMPARE(values.size(), want_values.size());
        for (std::size_t k = 0; k < values.size(); ++k) {
            const json::Value& v = want_values[k];
            const float expected_value = v.is_string() ? std::strtof(v.as_string().c_str(), nullptr)
                                                       : static_cast<float>(v.as_double());
            if (std::isnan(expected_value)) {
                QVERIFY2(std::isnan(values[k]), got.path.c_str());
            } else {
                QVERIFY2(values[k] == expected_value,
                         qPrintable(QString("%1[%2]: %3, h5py read %4")
                                        .arg(got.path.c_str())
                                        .arg(k)
                                        .arg(values[k])
                                        .arg(expected_value)));
            }
            ++float_values;
        }
    }
    QVERIFY(float_values >= 20);  // every float dataset listed with values was read
}

void TestHdf5Reader::refusesWhatItDoesNotReadByName() {
    const hdf5::FileReader earliest(fixture("earliest.h5"), "earliest.h5");
    // Listed with its dtype and shape, but its compressed chunks are not read.
    QVERIFY(earliest.find("others/chunked") != nullptr);
    verify_contains(error_of<DataError>([&] { earliest.read_floats("others/chunked", {10}); }),
                    {"earliest.h5", "'others/chunked'", "stored in chunks", "contiguous"});
    verify_contains(error_of<DataError>([&] { earliest.read_floats("others/i64", {}); }),
                    {"earliest.h5", "'others/i64'", "int64", "not float32"});
    verify_contains(error_of<DataError>([&] { earliest.read_floats("floats/f64", {3, 2}); }),
                    {"'floats/f64'", "(2, 3)", "expected (3, 2)"});
    verify_contains(error_of<DataError>([&] { earliest.read_floats("elsewhere/soft", {}); }),
                    {"has no dataset 'elsewhere/soft'"});  // a soft link is never followed
}

// What libhdf5 1.10 crashed on (the fuzzer's finding): the root group's local heap at the
// undefined address. And a dataset whose values lie past the end of the file.
void TestHdf5Reader::damagedMetadataNamesThePart() {
    std::vector<std::uint8_t> bytes = keras_weights();
    const std::size_t root = static_cast<std::size_t>(field_at(bytes, 64, 8));  // superblock 0's root entry
    const std::size_t table = v1_message(bytes, root, 0x11);
    QVERIFY2(table != 0, "the root group has a symbol table message");
    std::vector<std::uint8_t> no_heap = bytes;
    const auto heap_address = no_heap.begin() + static_cast<std::ptrdiff_t>(table + 8);
    std::fill(heap_address, heap_address + 8, 0xff);
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(no_heap, "w.h5"); }),
                    {"w.h5 is corrupt", "local heap of the root group", "no address"});

    // Version-2 structures carry checksums: a changed byte in latest.h5's superblock (its end of
    // file address) or in its root group's object header is caught by them.
    const std::vector<std::uint8_t> latest = fixture("latest.h5");
    std::vector<std::uint8_t> changed = latest;
    changed[30] ^= 0x01;
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(changed, "l.h5"); }),
                    {"l.h5 is corrupt", "the superblock fails its checksum"});
    changed = latest;
    const std::size_t root_header = static_cast<std::size_t>(field_at(latest, 36, 8));  // superblock 3's root address
    QCOMPARE(std::string(latest.begin() + static_cast<std::ptrdiff_t>(root_header),
                         latest.begin() + static_cast<std::ptrdiff_t>(root_header) + 4),
             std::string("OHDR"));
    changed[root_header + 12] ^= 0x01;
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(changed, "l.h5"); }),
                    {"l.h5 is corrupt", "the object header of the root group fails its checksum"});

    // ... as do the heap blocks holding dense links: a changed byte among a direct block's objects.
    std::vector<std::uint8_t> dense = fixture("dense_links.h5");
    const std::string fhdb = "FHDB";
    const auto block = std::search(dense.begin(), dense.end(), fhdb.begin(), fhdb.end());
    QVERIFY(block != dense.end());
    block[40] ^= 0x01;
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(dense, "d.h5"); }),
                    {"d.h5 is corrupt", "a direct block of the links of group", "fails its checksum"});

    // Hostile structures a libFuzzer input cannot reach in seconds (tests/fuzz/regressions/fuzz_keras,
    // byte 0 choosing the .weights.h5 reader): object headers sharing one continuation block (work
    // would grow with objects x block), and one 4000-byte name behind many links (memory likewise).
    const std::string regressions = std::string(MIRRORLAB_SOURCE_DIR) + "/tests/fuzz/regressions/fuzz_keras/";
    auto regression = [&](const std::string& name) {
        std::vector<std::uint8_t> input = read_file_binary(regressions + name, 1 << 24, name, "a fuzz regression");
        input.erase(input.begin());
        return input;
    };
    const std::vector<std::uint8_t> shared = regression("hdf5_shared_continuation_block.bin");
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(shared, "s.h5"); }),
                    {"s.h5 is corrupt", "object header of 'n1'", "continues into a block already read"});
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(regression("hdf5_long_heap_name.bin"), "n.h5"); }),
                    {"n.h5 is corrupt", "a name in the root group", "past 1024 bytes"});

    const hdf5::FileReader intact(bytes, "w.h5");
    const hdf5::DatasetInfo* kernel = intact.find("layers/dense/vars/0");
    QVERIFY(kernel != nullptr);
    std::vector<std::uint8_t> cut = bytes;
    cut.resize(cut.size() - 1);
    verify_contains(error_of<DataError>([&] { hdf5::FileReader(cut, "w.h5"); }),
                    {"w.h5 is truncated or corrupt", std::to_string(cut.size()).c_str()});
}

// Every byte of Keras' own weight file, latest.h5 and dense_links.h5 changed (1-2 ways) and each cut
// at many lengths: each read either succeeds or ends in a DataError. A crash here fails the suite; the
// sanitizer build (tests/sanitizers/run.sh) also catches reads out of bounds that happen not to crash.
void TestHdf5Reader::everyDamagedByteEndsInADataError_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("Keras' model.weights.h5 (superblock 0, symbol tables)") << "";
    QTest::newRow("latest.h5 (superblock 3, OHDR, link messages, checksums)") << "latest.h5";
    QTest::newRow("dense_links.h5 (fractal heaps, v2 B-trees)") << "dense_links.h5";
}

void TestHdf5Reader::everyDamagedByteEndsInADataError() {
    QFETCH(QString, file);
    const std::vector<std::uint8_t> bytes = file.isEmpty() ? keras_weights() : fixture(file.toStdString());
    std::size_t refused = 0;
    std::size_t read = 0;
    auto attempt = [&](const std::vector<std::uint8_t>& damaged) {
        try {
            const hdf5::FileReader reader(damaged, "damaged.h5");
            for (const hdf5::DatasetInfo& dataset : reader.datasets()) {  // 601 of dense_links.h5's are one
                if (&dataset - reader.datasets().data() >= 40) break;
                try {
                    (void)reader.read_floats(dataset.path, dataset.shape);
                } catch (const DataError&) {
                }
            }
            ++read;
        } catch (const DataError&) {
            ++refused;
        }
    };
    std::vector<std::uint8_t> damaged = bytes;
    for (std::size_t at = 0; at < bytes.size(); ++at) {
        for (const std::uint8_t change : {std::uint8_t{0x01}, std::uint8_t{0xff}}) {
            if (change == 0xff && file == "dense_links.h5") break;  // 601 links a parse: one change a byte
            damaged[at] = static_cast<std::uint8_t>(bytes[at] ^ change);
            attempt(damaged);
        }
        damaged[at] = bytes[at];
    }
    for (std::size_t size = 0; size < bytes.size(); size += 37) {
        attempt(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size)));
    }
    qInfo("%zu damaged files refused, %zu read (a change in data or padding)", refused, read);
    QVERIFY(refused > 1000);
    QVERIFY(read > 100);
}

QTEST_GUILESS_MAIN(TestHdf5Reader)
#include "test_hdf5_reader.moc"
