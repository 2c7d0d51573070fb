// Dense link storage (hdf5_format.h): a group's link messages kept as objects of a fractal heap
// (III.G) and found through the heap IDs in a version 2 B-tree indexed by name hash (III.A.2,
// record type 5). libhdf5 switches a new-style group to it past 8 links (libver "latest", or
// track_order). Every block and node is visited once per file, counts are checked against the
// bytes that hold them, and only managed heap objects are read (link messages are never "huge" or
// "tiny" in files libhdf5 writes: both are refused by name).
#include <algorithm>
#include <set>

#include "core/export/hdf5_format.h"

namespace mirrorlab::hdf5::format {

namespace {

constexpr int kMaxBtreeDepth = 16;
constexpr std::uint8_t kLinkNameRecord = 5;  // v2 B-tree record type: links of a group by name hash

int log2_exact(std::uint64_t value) {  // -1 unless a power of two
    if (value == 0 || (value & (value - 1)) != 0) return -1;
    int bits = 0;
    while (value > 1) value >>= 1, ++bits;
    return bits;
}

// Bytes that encode numbers up to `limit` (H5VM_limit_enc_size).
std::uint64_t limit_bytes(std::uint64_t limit) {
    int bits = 0;
    while (limit > 1) limit >>= 1, ++bits;
    return static_cast<std::uint64_t>(bits / 8 + 1);
}

struct FractalHeap {
    std::uint64_t id_bytes = 0;
    std::uint64_t offset_bytes = 0;  // of a heap offset (in IDs and block headers)
    std::uint64_t length_bytes = 0;  // of an object's length in an ID
    bool checksummed_blocks = false;
    std::uint64_t width = 0;
    std::uint64_t start_block_bytes = 0;
    std::uint64_t max_direct_block_bytes = 0;
    int max_direct_rows = 0;
    int first_row_bits = 0;
    std::vector<std::uint64_t> row_block_bytes;
    std::vector<std::uint64_t> row_offset;  // where each row of a table starts, from its own start

    struct DirectBlock {
        std::uint64_t heap_offset = 0;
        std::uint64_t position = 0;  // in the image
        std::uint64_t size = 0;
        std::uint64_t prefix_bytes = 0;  // the block's header: no object starts in it
    };
    std::vector<DirectBlock> blocks;  // sorted by heap_offset once read
};

class DenseLinks {
public:
    DenseLinks(const Image& image, const std::string& path, std::set<std::uint64_t>& visited)
        : image_(image), visited_(visited), where_("the links of " + group_name(path)) {}

    std::vector<Message> read(std::uint64_t heap_address, std::uint64_t index_address, std::size_t max_links) {
        read_heap_header(heap_address);
        std::vector<std::span<const std::uint8_t>> ids;
        read_btree(index_address, ids, max_links);
        std::vector<Message> messages;
        messages.reserve(ids.size());
        for (const auto id : ids) messages.push_back(object(id));
        return messages;
    }

private:
    void visit(std::uint64_t address, const std::string& what) {
        if (!visited_.insert(address).second) image_.corrupt(what + " is reached twice" + at_byte(address));
    }

    // III.G.1: the header, and the doubling table it describes.
    void read_heap_header(std::uint64_t address) {
        const std::string what = "the fractal heap of " + where_;
        visit(address, what);
        heap_address_ = address;
        Cursor c = Cursor::at_address(image_, address, what);
        const std::uint64_t start = c.position();
        c.signature("FRHP");
        if (c.u8() != 0) image_.unsupported(what + " has a version other than 0");
        heap_.id_bytes = c.u16();
        const std::uint16_t filter_bytes = c.u16();
        const std::uint8_t flags = c.u8();
        heap_.checksummed_blocks = (flags & 0x02) != 0;
        const std::uint32_t max_managed_bytes = c.u32();
        c.length();   // next huge object ID
        c.address();  // v2 B-tree of huge objects
        c.length();   // free space in managed blocks
        c.address();  // free space manager
        c.length();   // managed space
        c.length();   // allocated managed space
        c.length();   // direct block allocation iterator
        c.length();   // managed objects
        c.length();   // huge objects' size
        c.length();   // huge objects
        c.length();   // tiny objects' size
        c.length();   // tiny objects
        heap_.width = c.u16();
        heap_.start_block_bytes = c.length();
        heap_.max_direct_block_bytes = c.length();
        const std::uint16_t max_heap_bits = c.u16();
        c.u16();  // starting rows of the root indirect block
        const std::uint64_t root = c.address();
        const std::uint16_t root_rows = c.u16();
        if (filter_bytes != 0) image_.unsupported(what + " filters its blocks (I/O filters on link storage)");
        c.checksum(start);

        const int width_bits = log2_exact(heap_.width);
        const int start_bits = log2_exact(heap_.start_block_bytes);
        const int max_direct_bits = log2_exact(heap_.max_direct_block_bytes);
        if (width_bits < 0 || start_bits < 0 || max_direct_bits < start_bits || max_heap_bits > 64 ||
            max_heap_bits < start_bits + width_bits) {
            image_.corrupt(what + " has an impossible doubling table (width " + std::to_string(heap_.width) +
                           ", blocks of " + std::to_string(heap_.start_block_bytes) + " to " +
                           std::to_string(heap_.max_direct_block_bytes) + " bytes, " + std::to_string(max_heap_bits) +
                           "-bit offsets)");
        }
        heap_.first_row_bits = start_bits + width_bits;
        heap_.max_direct_rows = max_direct_bits - start_bits + 2;
        heap_.offset_bytes = (static_cast<std::uint64_t>(max_heap_bits) + 7) / 8;
        const std::uint64_t direct_offset_bytes = (static_cast<std::uint64_t>(max_direct_bits) + 7) / 8;
        heap_.length_bytes = std::min(direct_offset_bytes, limit_bytes(max_managed_bytes));
        if (1 + heap_.offset_bytes + heap_.length_bytes > heap_.id_bytes) {
            image_.corrupt(what + " has heap IDs of " + std::to_string(heap_.id_bytes) +
                           " bytes, too few for its offsets");
        }
        // Rows: the first two of the starting size, then doubling, up to the heap's address space.
        const int max_rows = max_heap_bits - heap_.first_row_bits + 1;
        std::uint64_t size = heap_.start_block_bytes;
        std::uint64_t offset = 0;
        for (int row = 0; row < max_rows; ++row) {
            if (row >= 2) size *= 2;
            heap_.row_block_bytes.push_back(size);
            heap_.row_offset.push_back(offset);
            offset += size * heap_.width;
        }

        if (root == kUndefinedAddress) return;  // an empty heap
        if (root_rows == 0) {
            direct_block(root, 0, heap_.start_block_bytes);
        } else {
            indirect_block(root, 0, root_rows);
        }
        std::sort(heap_.blocks.begin(), heap_.blocks.end(),
                  [](const auto& a, const auto& b) { return a.heap_offset < b.heap_offset; });
    }

    // III.G.3
    // What FHDB and FHIB start with: signature, version 0, the heap header's address and the
    // block's own heap offset, both checked against where the block was reached from.
    void block_prefix(Cursor& c, const char (&signature)[5], std::uint64_t heap_offset, const std::string& what) {
        const std::uint64_t start = c.position();
        c.signature(signature);
        if (c.u8() != 0) image_.unsupported(what + " has a version other than 0");
        if (c.address() != heap_address_) image_.corrupt(what + " names another heap header" + at_byte(start));
        const std::uint64_t stored_offset = c.unsigned_bytes(heap_.offset_bytes);
        if (stored_offset != heap_offset) {
            image_.corrupt(what + " says it starts at heap offset " + std::to_string(stored_offset) + ", not " +
                           std::to_string(heap_offset) + at_byte(start));
        }
    }

    void direct_block(std::uint64_t address, std::uint64_t heap_offset, std::uint64_t size) {
        const std::string what = "a direct block of " + where_;
        visit(address, what);
        Cursor c(image_, image_.position_of(address, what), size, what);
        const std::uint64_t start = c.position();
        block_prefix(c, "FHDB", heap_offset, what);
        if (heap_.checksummed_blocks) {
            // Over the whole block, its own 4 bytes counted as zeros (as libhdf5 computes it).
            const std::uint64_t checksum_at = c.position();
            const auto stored = static_cast<std::uint32_t>(c.unsigned_bytes(4));
            const auto bytes = image_.bytes().subspan(start, size);
            std::vector<std::uint8_t> zeroed(bytes.begin(), bytes.end());
            std::fill_n(zeroed.begin() + static_cast<std::ptrdiff_t>(checksum_at - start), 4, std::uint8_t{0});
            if (checksum_lookup3(zeroed) != stored) image_.corrupt(what + " fails its checksum" + at_byte(checksum_at));
        }
        heap_.blocks.push_back({heap_offset, start, size, c.position() - start});
    }

    // III.G.2: direct blocks for the first rows, indirect blocks (smaller tables) for the rest.
    void indirect_block(std::uint64_t address, std::uint64_t heap_offset, std::uint64_t rows) {
        const std::string what = "an indirect block of " + where_;
        visit(address, what);
        if (rows > heap_.row_block_bytes.size()) {
            image_.corrupt(what + " has " + std::to_string(rows) + " rows; the heap's offsets allow " +
                           std::to_string(heap_.row_block_bytes.size()));
        }
        Cursor c = Cursor::at_address(image_, address, what);
        const std::uint64_t start = c.position();
        block_prefix(c, "FHIB", heap_offset, what);
        struct Child {
            std::uint64_t address, heap_offset, row;
        };
        std::vector<Child> direct;
        std::vector<Child> indirect;
        const auto direct_rows = std::min<std::uint64_t>(rows, static_cast<std::uint64_t>(heap_.max_direct_rows));
        for (std::uint64_t row = 0; row < rows; ++row) {
            for (std::uint64_t column = 0; column < heap_.width; ++column) {
                const std::uint64_t child_offset =
                    heap_offset + heap_.row_offset[row] + column * heap_.row_block_bytes[row];
                (row < direct_rows ? direct : indirect).push_back({c.address(), child_offset, row});
            }
        }
        c.checksum(start);
        for (const Child& child : direct) {
            if (child.address != kUndefinedAddress) {
                direct_block(child.address, child.heap_offset, heap_.row_block_bytes[child.row]);
            }
        }
        for (const Child& child : indirect) {
            if (child.address == kUndefinedAddress) continue;
            // A smaller doubling table spanning one block of this row.
            const int child_rows = log2_exact(heap_.row_block_bytes[child.row]) - heap_.first_row_bits + 1;
            if (child_rows <= 0 || static_cast<std::uint64_t>(child_rows) >= rows) {
                image_.corrupt(what + " nests a table of " + std::to_string(child_rows) + " rows in row " +
                               std::to_string(child.row));
            }
            indirect_block(child.address, child.heap_offset, static_cast<std::uint64_t>(child_rows));
        }
    }

    // III.A.2: the header, then the nodes from the root down; each record's heap ID.
    void read_btree(std::uint64_t address, std::vector<std::span<const std::uint8_t>>& ids, std::size_t max_links) {
        const std::string what = "the name index of " + where_;
        visit(address, what);
        Cursor c = Cursor::at_address(image_, address, what);
        const std::uint64_t start = c.position();
        c.signature("BTHD");
        if (c.u8() != 0) image_.unsupported(what + " has a version other than 0");
        if (c.u8() != kLinkNameRecord) image_.corrupt(what + " is not an index of links by name");
        node_bytes_ = c.u32();
        record_bytes_ = c.u16();
        const std::uint16_t depth = c.u16();
        c.skip(2);  // split and merge percentages
        const std::uint64_t root = c.address();
        const std::uint16_t root_records = c.u16();
        c.length();  // all records
        c.checksum(start);
        // Records are a name's hash and a heap ID, nothing more; nodes as libhdf5 sizes them (512
        // bytes for links) or up to 64 KiB: no node can make the checksums hash far more than the file.
        if (record_bytes_ != 4 + heap_.id_bytes || node_bytes_ < 10 + record_bytes_ || node_bytes_ > (1u << 16) ||
            depth > kMaxBtreeDepth) {
            image_.corrupt(what + " has nodes of " + std::to_string(node_bytes_) + " bytes, records of " +
                           std::to_string(record_bytes_) + " and depth " + std::to_string(depth));
        }
        // What each level's child pointers hold (H5B2_hdr_init): a child's record count in as many
        // bytes as a leaf's most records need, and below level 1 its subtree's total.
        const std::uint64_t leaf_records = (node_bytes_ - 10) / record_bytes_;
        count_bytes_ = limit_bytes(leaf_records);
        total_bytes_.assign(depth + 1u, 0);
        std::uint64_t subtree_records = leaf_records;
        for (std::uint16_t level = 1; level <= depth; ++level) {
            const std::uint64_t pointer = static_cast<std::uint64_t>(image_.offset_bytes) + count_bytes_ +
                                          (level > 1 ? total_bytes_[level - 1] : 0);
            // H5B2_NUM_INT_REC: room for one more child pointer than records.
            if (node_bytes_ < 10 + pointer + record_bytes_ + pointer) {
                image_.corrupt(what + " has internal nodes too small for one record");
            }
            const std::uint64_t node_records = (node_bytes_ - 10 - pointer) / (record_bytes_ + pointer);
            subtree_records = (node_records + 1) * subtree_records + node_records;
            total_bytes_[level] = limit_bytes(subtree_records);
        }
        if (root == kUndefinedAddress) return;
        btree_node(root, depth, root_records, ids, max_links);
    }

    void btree_node(std::uint64_t address, std::uint16_t depth, std::uint64_t records,
                    std::vector<std::span<const std::uint8_t>>& ids, std::size_t max_links) {
        const std::string what = "a name index node of " + where_;
        visit(address, what);
        Cursor c(image_, image_.position_of(address, what), node_bytes_, what);
        const std::uint64_t start = c.position();
        if (depth == 0) {
            c.signature("BTLF");
        } else {
            c.signature("BTIN");
        }
        if (c.u8() != 0) image_.unsupported(what + " has a version other than 0");
        if (c.u8() != kLinkNameRecord) image_.corrupt(what + " is not a node of links by name");
        for (std::uint64_t i = 0; i < records; ++i) {
            const auto record = c.take(record_bytes_);
            ids.push_back(record.subspan(4, heap_.id_bytes));  // after the name's hash
            if (ids.size() > max_links) return;  // the caller counts them and stops at its limit
        }
        if (depth == 0) {
            c.checksum(start);
            return;
        }
        std::vector<std::pair<std::uint64_t, std::uint64_t>> children;  // address, records
        for (std::uint64_t i = 0; i <= records; ++i) {
            const std::uint64_t child = c.address();
            const std::uint64_t child_records = c.unsigned_bytes(count_bytes_);
            if (depth > 1) c.unsigned_bytes(total_bytes_[depth - 1]);
            children.emplace_back(child, child_records);
        }
        c.checksum(start);
        for (const auto& [child, child_records] : children) {
            if (ids.size() > max_links) return;
            btree_node(child, depth - 1, child_records, ids, max_links);
        }
    }

    // A managed object's bytes, from its heap ID, as a link message to decode.
    Message object(std::span<const std::uint8_t> id) {
        const int type = (id[0] >> 4) & 0x03;
        if ((id[0] >> 6) != 0 || (id[0] & 0x0f) != 0 || type == 3) {
            image_.corrupt("a heap ID in " + where_ + " has flags " + std::to_string(id[0]) +
                           " (version 0, types 0-2)");
        }
        if (type != 0) {
            image_.unsupported(where_ + " keeps a link as a " + (type == 1 ? "huge" : "tiny") + " heap object");
        }
        // The ID's widths were checked against its size with the heap's header.
        const std::uint64_t offset = load_little_endian(id.data() + 1, heap_.offset_bytes);
        const std::uint64_t length = load_little_endian(id.data() + 1 + heap_.offset_bytes, heap_.length_bytes);
        // The block holding it: the last one starting at or before it.
        auto block = std::upper_bound(heap_.blocks.begin(), heap_.blocks.end(), offset,
                                      [](std::uint64_t value, const auto& b) { return value < b.heap_offset; });
        if (block == heap_.blocks.begin()) image_.corrupt("a heap object among " + where_ + " lies in no heap block");
        --block;
        const std::uint64_t inside = offset - block->heap_offset;
        if (inside < block->prefix_bytes || inside >= block->size || length > block->size - inside || length == 0) {
            image_.corrupt("a heap object among " + where_ + " (heap offset " + std::to_string(offset) + ", " +
                           std::to_string(length) + " bytes) lies outside the objects of its block");
        }
        Message message;
        message.type = kLinkMessage;
        message.position = block->position + inside;
        message.size = length;
        return message;
    }

    const Image& image_;
    std::set<std::uint64_t>& visited_;
    std::string where_;
    FractalHeap heap_;
    std::uint64_t heap_address_ = kUndefinedAddress;
    std::uint64_t node_bytes_ = 0;
    std::uint64_t record_bytes_ = 0;
    std::uint64_t count_bytes_ = 0;
    std::vector<std::uint64_t> total_bytes_;
};

}  // namespace

std::vector<Message> dense_link_messages(const Image& image, std::uint64_t heap_address,
                                         std::uint64_t name_index_address, const std::string& path,
                                         std::set<std::uint64_t>& visited, std::size_t max_links) {
    return DenseLinks(image, path, visited).read(heap_address, name_index_address, max_links);
}

}  // namespace mirrorlab::hdf5::format
