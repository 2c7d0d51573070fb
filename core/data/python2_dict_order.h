#pragma once
// An emulation of CPython 2.7's dict (Objects/dictobject.c) for byte-string keys on a 64-bit
// build, made to reproduce the order in which such a dict iterates its keys (keys(), items(), a
// for loop). Keras' Reuters word index was built in 2015 by Python 2.7 code that sorted
// `word_counts.items()` by count with a stable sort, so ties between words kept this order.
//
// What is emulated (CPython 2.7.x, unchanged across the 2.7 releases):
//  - string_hash (Objects/stringobject.c) without hash randomization (the default in 2.7):
//    x = byte0 << 7; for each byte x = (1000003 * x) ^ byte; x ^= length; -1 becomes -2; the empty
//    string hashes to 0. Arithmetic on a 64-bit C long, wrapping.
//  - open addressing: slot i = hash & mask; on a collision perturb = (size_t)hash, then repeatedly
//    i = 5 * i + perturb + 1 (slot i & mask), perturb >>= 5.
//  - growth: after an insert that added a key, if fill * 3 >= (mask + 1) * 2 the table is resized
//    to the smallest power of two above (used > 50000 ? 2 : 4) * used, at least 8, re-inserting the
//    entries in their old slot order.
//  - iteration in slot order.
// Keys are only ever added (no deletion, hence no dummy slots), which is all the tokenizer does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mirrorlab {

// hash(s) of a Python 2.7 `str` (bytes) on 64-bit Linux, e.g. hash('abc') == 1453079729188098211.
int64_t python2_string_hash(std::string_view bytes);

class Python2StringDict {
  public:
    Python2StringDict();

    // d[key] lookup; inserts `key` when absent. Returns {id, inserted}; ids count the keys in order
    // of insertion (0, 1, 2, ...).
    std::pair<size_t, bool> find_or_insert(std::string_view key);
    // The id of `key`, or -1 when it is absent.
    int64_t find(std::string_view key) const;

    size_t size() const { return keys_.size(); }
    const std::string& key(size_t id) const { return keys_[id]; }
    // mask + 1: 8, 32, 128, ...
    size_t table_size() const { return table_.size(); }
    // The ids in the order Python 2.7 iterates the dict (table slot order).
    std::vector<size_t> iteration_order() const;

  private:
    static constexpr uint32_t kEmpty = UINT32_MAX;
    struct Slot {
        uint32_t id = kEmpty;
        uint64_t hash = 0;
    };
    // The slot holding `key`, or the empty slot where it would go.
    size_t probe(std::string_view key, uint64_t hash) const;
    void resize(size_t min_used);

    std::vector<Slot> table_;
    std::vector<std::string> keys_;
};

// The order of `keys` after `dict(zip(keys, values))` in Python 2.7, as indices into `keys` (a
// repeated key counts once, at its first position): e.g. the key order of Keras'
// reuters_word_index.json.
std::vector<size_t> python2_dict_order(const std::vector<std::string>& keys);

}  // namespace mirrorlab
