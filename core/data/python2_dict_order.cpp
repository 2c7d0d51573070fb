#include "core/data/python2_dict_order.h"

#include <stdexcept>

namespace mirrorlab {

namespace {

constexpr size_t kMinSize = 8;    // PyDict_MINSIZE
constexpr int kPerturbShift = 5;  // PERTURB_SHIFT

}  // namespace

int64_t python2_string_hash(std::string_view bytes) {
    if (bytes.empty()) return 0;
    // C long arithmetic, wrapping (done unsigned to keep it defined).
    uint64_t x = static_cast<uint64_t>(static_cast<unsigned char>(bytes.front())) << 7;
    for (char ch : bytes) x = (1000003u * x) ^ static_cast<unsigned char>(ch);
    x ^= static_cast<uint64_t>(bytes.size());
    const auto hash = static_cast<int64_t>(x);
    return hash == -1 ? -2 : hash;
}

Python2StringDict::Python2StringDict() : table_(kMinSize) {}

size_t Python2StringDict::probe(std::string_view key, uint64_t hash) const {
    const size_t mask = table_.size() - 1;
    size_t i = static_cast<size_t>(hash) & mask;
    size_t perturb = static_cast<size_t>(hash);
    while (true) {
        const Slot& slot = table_[i & mask];
        if (slot.id == kEmpty || (slot.hash == hash && keys_[slot.id] == key)) return i & mask;
        i = (i << 2) + i + perturb + 1;
        perturb >>= kPerturbShift;
    }
}

std::pair<size_t, bool> Python2StringDict::find_or_insert(std::string_view key) {
    const auto hash = static_cast<uint64_t>(python2_string_hash(key));
    const size_t at = probe(key, hash);
    if (table_[at].id != kEmpty) return {table_[at].id, false};
    if (keys_.size() >= kEmpty) throw std::length_error("Python2StringDict: too many keys");
    const size_t id = keys_.size();
    keys_.emplace_back(key);
    table_[at] = Slot{static_cast<uint32_t>(id), hash};
    // PyDict_SetItem: fill == used here (no deletions).
    const size_t used = keys_.size();
    if (used * 3 >= table_.size() * 2) resize((used > 50000 ? 2 : 4) * used);
    return {id, true};
}

int64_t Python2StringDict::find(std::string_view key) const {
    const auto hash = static_cast<uint64_t>(python2_string_hash(key));
    const Slot& slot = table_[probe(key, hash)];
    return slot.id == kEmpty ? -1 : static_cast<int64_t>(slot.id);
}

void Python2StringDict::resize(size_t min_used) {
    size_t new_size = kMinSize;
    while (new_size <= min_used) new_size <<= 1;
    std::vector<Slot> old(new_size);
    old.swap(table_);
    const size_t mask = new_size - 1;
    for (const Slot& entry : old) {  // insertdict_clean, in old slot order
        if (entry.id == kEmpty) continue;
        size_t i = static_cast<size_t>(entry.hash) & mask;
        size_t perturb = static_cast<size_t>(entry.hash);
        while (table_[i & mask].id != kEmpty) {
            i = (i << 2) + i + perturb + 1;
            perturb >>= kPerturbShift;
        }
        table_[i & mask] = entry;
    }
}

std::vector<size_t> Python2StringDict::iteration_order() const {
    std::vector<size_t> order;
    order.reserve(keys_.size());
    for (const Slot& slot : table_) {
        if (slot.id != kEmpty) order.push_back(slot.id);
    }
    return order;
}

std::vector<size_t> python2_dict_order(const std::vector<std::string>& keys) {
    Python2StringDict dict;
    std::vector<size_t> position;  // id -> index into keys
    position.reserve(keys.size());
    for (size_t k = 0; k < keys.size(); ++k) {
        if (dict.find_or_insert(keys[k]).second) position.push_back(k);
    }
    std::vector<size_t> order = dict.iteration_order();
    for (auto& id : order) id = position[id];
    return order;
}

}  // namespace mirrorlab
