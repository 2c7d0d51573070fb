// Reading HDF5 files without libhdf5: a bounds-checked parser of the part of the format that h5py
// and libhdf5 write by default (hdf5_file.h says which). Field layouts follow the HDF5 File Format
// Specification 3.0; section numbers below are its. Every read goes through a Cursor that knows
// the bytes it may touch, every count read from the file is checked against the bytes that would
// have to hold it before anything is allocated, every structure that points elsewhere (object
// headers, B-tree nodes, continuation blocks, groups) is parsed once, object headers may not
// parse more bytes than a few times the file (overlapping headers), and names, paths and links are
// capped, so a damaged or hostile file ends in a DataError after work and memory bounded by its size.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/export/hdf5_file.h"
#include "core/export/hdf5_format.h"
#include "core/util/error.h"

namespace mirrorlab::hdf5 {

using namespace format;

static_assert(std::endian::native == std::endian::little, "little-endian values are copied as they are");

namespace {

constexpr int kMaxGroupDepth = 256;          // Keras nests 4 deep
constexpr std::size_t kMaxMessagesPerObject = 1 << 16;
constexpr std::size_t kMaxHeaderBlocks = 1 << 12;  // an object header's chunk and its continuations
constexpr std::size_t kMaxNameBytes = 1024;         // one link's name; Keras' are a few dozen
constexpr std::size_t kMaxPathBytes = 4096;         // a listed path
constexpr std::size_t kMaxListedPathBytes = std::size_t{64} << 20;  // all listed paths together

struct Link {
    std::string name;
    bool hard = false;
    std::uint64_t address = kUndefinedAddress;
};

// A parsed object, kept by header address: a dataset reached by several links is parsed once.
struct ObjectSummary {
    enum class Kind { Group, Dataset, Other } kind = Kind::Other;
    DatasetInfo dataset;  // path left empty
    DatasetStorage storage;
    std::vector<Message> group_messages;
};

class Parser {
public:
    struct TooManyObjects {};  // more than kHdf5MaxObjects links

    Parser(std::span<const std::uint8_t> bytes, const std::string& source) : image_(bytes, source) {}

    std::vector<DatasetInfo> datasets;
    std::vector<DatasetStorage> storage;
    std::vector<std::string> groups;

    void read() {
        const std::uint64_t root = superblock();
        // Through summarize, like every other object: a link back to the root finds it parsed.
        visit_group(root, summarize(root, "").group_messages, "", 0);
    }

private:
    // II.A: the root group's object header address. Also checks the file is not truncated.
    std::uint64_t superblock() {
        Cursor c(image_, 0, image_.bytes().size(), "the superblock");
        c.skip(8);  // the signature, checked by the caller
        const std::uint8_t version = c.u8();
        std::uint64_t root = kUndefinedAddress;
        std::uint64_t end_of_file = 0;
        auto sizes = [&](std::uint8_t offsets, std::uint8_t lengths) {
            if ((offsets != 2 && offsets != 4 && offsets != 8) || (lengths != 2 && lengths != 4 && lengths != 8)) {
                image_.corrupt("its superblock gives addresses of " + std::to_string(offsets) +
                               " bytes and lengths of " + std::to_string(lengths) + " (HDF5 uses 2, 4 or 8)");
            }
            image_.offset_bytes = offsets;
            image_.length_bytes = lengths;
        };
        if (version <= 1) {
            c.skip(3);  // free-space, root entry and (reserved) versions
            c.skip(1);  // shared header message format version
            const std::uint8_t offsets = c.u8();
            const std::uint8_t lengths = c.u8();
            sizes(offsets, lengths);
            c.skip(1 + 2 + 2 + 4);  // reserved, group leaf and internal node K, consistency flags
            if (version == 1) c.skip(4);  // indexed storage internal node K, reserved
            image_.base_address = c.address();
            c.address();  // free-space info
            end_of_file = c.address();
            c.address();  // driver information block
            // The root group's symbol table entry (III.C): name offset, then its object header.
            c.address();
            root = c.address();
        } else if (version <= 3) {
            const std::uint8_t offsets = c.u8();
            const std::uint8_t lengths = c.u8();
            sizes(offsets, lengths);
            c.skip(1);  // consistency flags
            image_.base_address = c.address();
            c.address();  // superblock extension
            end_of_file = c.address();
            root = c.address();
            c.checksum(0);
        } else {
            image_.unsupported("superblock version " + std::to_string(version));
        }
        if (image_.base_address == kUndefinedAddress || image_.base_address > image_.bytes().size()) {
            image_.corrupt("its superblock's base address lies outside the file");
        }
        if (end_of_file == kUndefinedAddress || end_of_file > image_.bytes().size() - image_.base_address) {
            image_.fail(" is truncated or corrupt: it has " + std::to_string(image_.bytes().size()) +
                        " bytes, but its superblock says the file ends at byte " +
                        (end_of_file == kUndefinedAddress ? std::string("(undefined)")
                                                          : std::to_string(end_of_file + image_.base_address)));
        }
        return root;
    }

    // --- object headers (IV.A) -------------------------------------------------------------------

    std::vector<Message> object_header(std::uint64_t address, const std::string& path) {
        const std::string what = "the object header of " + quoted(path);
        Cursor c = Cursor::at_address(image_, address, what);
        std::vector<Message> messages;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;  // continuation (address, length)
        std::size_t blocks_of_this_object = 0;
        bool version_2 = false;
        bool creation_order = false;
        const std::uint8_t first = Cursor(c).u8();  // version 1's version, or version 2's "OHDR"
        if (first == 1) {  // IV.A.1.a
            c.skip(2);     // version, reserved
            c.u16();       // message count (what the chunks hold is what counts)
            c.u32();       // reference count
            const std::uint32_t size = c.u32();
            c.skip(4);  // alignment of the messages to 8 bytes
            Cursor chunk = c.sub(size, what);
            read_messages(chunk, false, false, messages, blocks);
        } else if (first == 'O') {  // IV.A.1.b
            const std::uint64_t header_start = c.position();
            c.signature("OHDR");
            if (c.u8() != 2) image_.unsupported(what + " has an object header version other than 1 and 2");
            const std::uint8_t flags = c.u8();
            if (flags & 0x20) c.skip(16);  // access, modification, change and birth times
            if (flags & 0x10) c.skip(4);   // attribute storage phase change values
            creation_order = (flags & 0x04) != 0;
            version_2 = true;
            const std::uint64_t size = c.unsigned_bytes(std::uint64_t{1} << (flags & 0x03));
            Cursor chunk = c.sub(size, what);
            c.checksum(header_start);
            read_messages(chunk, true, creation_order, messages, blocks);
        } else {
            image_.corrupt(what + " has version " + std::to_string(first) + at_byte(c.position()) +
                           " (HDF5 object headers are version 1 or 2)");
        }
        for (std::size_t i = 0; i < blocks.size(); ++i) {  // grows while continuation blocks name more
            const auto [block_address, block_length] = blocks[i];
            if (!seen_blocks_.insert(block_address).second) {
                image_.corrupt(what + " continues into a block already read" + at_byte(block_address));
            }
            if (++blocks_of_this_object > kMaxHeaderBlocks) {
                image_.corrupt(what + " continues through more than " + std::to_string(kMaxHeaderBlocks) + " blocks");
            }
            const std::string continuation = "a continuation of " + what;
            Cursor block(image_, image_.position_of(block_address, continuation), block_length, continuation);
            if (version_2) {
                const std::uint64_t block_start = block.position();
                block.signature("OCHK");
                if (block.remaining() < 4) image_.corrupt(continuation + " has no room for its checksum");
                Cursor messages_only = block.sub(block.remaining() - 4, continuation);
                block.checksum(block_start);
                read_messages(messages_only, true, creation_order, messages, blocks);
            } else {
                read_messages(block, false, false, messages, blocks);
            }
        }
        return messages;
    }

    void read_messages(Cursor& chunk, bool version_2, bool creation_order, std::vector<Message>& messages,
                       std::vector<std::pair<std::uint64_t, std::uint64_t>>& blocks) {
        const std::uint64_t header_bytes = version_2 ? (creation_order ? 6 : 4) : 8;
        // Headers are parsed once each, but hostile ones may overlap: a budget of a few times the
        // file keeps the work proportional to it.
        header_bytes_parsed_ += chunk.remaining();
        if (header_bytes_parsed_ > 4 * image_.bytes().size() + (std::uint64_t{1} << 20)) {
            image_.corrupt("its object headers overlap (more header bytes than the file holds)");
        }
        while (chunk.remaining() >= header_bytes) {  // fewer bytes left: a gap (version 2) or padding
            Message message;
            message.type = version_2 ? chunk.u8() : chunk.u16();
            const std::uint16_t size = chunk.u16();
            message.flags = chunk.u8();
            chunk.skip(version_2 ? (creation_order ? 2 : 0) : 3);
            message.position = chunk.position();
            message.size = size;
            chunk.skip(size);
            if (messages.size() >= kMaxMessagesPerObject) {
                image_.corrupt(chunk.what() + " holds more than " + std::to_string(kMaxMessagesPerObject) +
                               " messages");
            }
            if (message.type == kContinuationMessage) {
                Cursor data = message_data(image_, message, chunk.what());
                const std::uint64_t address = data.address();
                const std::uint64_t length = data.length();
                blocks.emplace_back(address, length);
            }
            messages.push_back(message);
        }
    }

    static const Message* find_message(const std::vector<Message>& messages, std::uint16_t type) {
        for (const Message& message : messages) {
            if (message.type == type) return &message;
        }
        return nullptr;
    }

    // --- groups -----------------------------------------------------------------------------------

    // Lists every hard link below the group, as H5Lvisit does: a dataset reached through two links
    // is listed under both paths; a group's members only under the first path that reaches it.
    void visit_group(std::uint64_t address, const std::vector<Message>& messages, const std::string& path, int depth) {
        if (depth > kMaxGroupDepth) {
            image_.corrupt("groups nest more than " + std::to_string(kMaxGroupDepth) + " deep at " + quoted(path));
        }
        if (!visited_groups_.insert(address).second) return;  // reached again through another link
        const std::vector<Link> links = links_of(messages, path);
        std::set<std::string_view> names;
        for (const Link& link : links) {
            if (!names.insert(link.name).second) {
                image_.corrupt(group_name(path) + " has two links named '" + link.name + "'");
            }
        }
        for (const Link& link : links) {
            if (!link.hard) continue;  // soft and external links are never followed
            const std::string child = path.empty() ? link.name : path + "/" + link.name;
            if (child.size() > kMaxPathBytes) {
                image_.corrupt("a path is longer than " + std::to_string(kMaxPathBytes) + " bytes: " +
                               child.substr(0, 80) + "...");
            }
            listed_path_bytes_ += child.size();
            if (listed_path_bytes_ > kMaxListedPathBytes) {
                image_.corrupt("its paths add up to more than " + std::to_string(kMaxListedPathBytes >> 20) +
                               " MiB (links repeated through deep groups)");
            }
            const ObjectSummary& summary = summarize(link.address, child);
            if (summary.kind == ObjectSummary::Kind::Group) {
                groups.push_back(child);
                visit_group(link.address, summary.group_messages, child, depth + 1);
            } else if (summary.kind == ObjectSummary::Kind::Dataset) {
                datasets.push_back(summary.dataset);
                datasets.back().path = child;
                storage.push_back(summary.storage);
            }
        }
    }

    // Every link of every group counts, followed or not, before the links are kept.
    void count_link() {
        if (++links_seen_ > kHdf5MaxObjects) throw TooManyObjects{};
    }

    std::vector<Link> links_of(const std::vector<Message>& messages, const std::string& path) {
        std::vector<Link> links;
        if (const Message* table = find_message(messages, kSymbolTableMessage)) {
            if (table->flags & kMessageIsShared) image_.unsupported("a shared symbol table message in " + quoted(path));
            Cursor data = message_data(image_, *table, "the symbol table message of " + quoted(path));
            const std::uint64_t btree = data.address();
            const std::uint64_t heap = data.address();
            symbol_table_links(btree, heap, path, links);
            return links;
        }
        if (const Message* info = find_message(messages, kLinkInfoMessage)) {  // IV.A.2.c
            Cursor data = message_data(image_, *info, "the link info message of " + quoted(path));
            if (data.u8() != 0) image_.unsupported("a link info message version other than 0 in " + quoted(path));
            const std::uint8_t flags = data.u8();
            if (flags & 0x01) data.skip(8);  // maximum creation index
            const std::uint64_t heap = data.address();
            const std::uint64_t name_index = data.address();
            if (heap != kUndefinedAddress) {  // dense storage: the links are objects of a fractal heap
                const std::size_t links_left = kHdf5MaxObjects - links_seen_;
                for (const Message& message :
                     dense_link_messages(image_, heap, name_index, path, dense_blocks_, links_left)) {
                    count_link();
                    links.push_back(link_message(message, path));
                }
            }
        }
        for (const Message& message : messages) {
            if (message.type != kLinkMessage) continue;
            if (message.flags & kMessageIsShared) image_.unsupported("a shared link message in " + quoted(path));
            count_link();
            links.push_back(link_message(message, path));
        }
        return links;
    }

    // IV.A.2.g
    Link link_message(const Message& message, const std::string& path) {
        Cursor data = message_data(image_, message, "a link message of " + quoted(path));
        if (data.u8() != 1) image_.unsupported("a link message version other than 1 in " + quoted(path));
        const std::uint8_t flags = data.u8();
        const std::uint8_t type = (flags & 0x08) ? data.u8() : 0;
        if (flags & 0x04) data.skip(8);  // creation order
        if (flags & 0x10) data.skip(1);  // name character set
        const std::uint64_t name_length = data.unsigned_bytes(std::uint64_t{1} << (flags & 0x03));
        if (name_length > kMaxNameBytes) {
            image_.corrupt("a link in " + group_name(path) + " has a name of " + std::to_string(name_length) +
                           " bytes (MirrorLab reads names of up to " + std::to_string(kMaxNameBytes) + ")");
        }
        const auto name = data.take(name_length);
        Link link;
        link.name = checked_name(std::string(name.begin(), name.end()), path);
        link.hard = type == 0;
        if (link.hard) link.address = data.address();
        return link;
    }

    std::string checked_name(std::string name, const std::string& path) const {
        if (name.empty() || name.find('/') != std::string::npos || name.find('\0') != std::string::npos ||
            name == "." || name == "..") {
            image_.corrupt(group_name(path) + " has a link named \"" + name.substr(0, 64) +
                           "\" (HDF5 names are not empty and hold no '/')");
        }
        return name;
    }

    // III.D: a local heap; names are NUL-terminated strings in its data segment.
    struct LocalHeap {
        std::uint64_t data_position = 0;
        std::uint64_t data_size = 0;
    };
    LocalHeap local_heap(std::uint64_t address, const std::string& path) {
        const std::string what = "the local heap of " + quoted(path);
        Cursor c = Cursor::at_address(image_, address, what);
        c.signature("HEAP");
        if (c.u8() != 0) image_.unsupported(what + " has a version other than 0");
        c.skip(3);
        LocalHeap heap;
        heap.data_size = c.length();
        c.length();  // free list
        const std::uint64_t data_address = c.address();
        heap.data_position = image_.position_of(data_address, "the data of " + what);
        // Throws unless the data segment lies within the file.
        (void)Cursor(image_, heap.data_position, heap.data_size, "the data of " + what);
        return heap;
    }
    std::string heap_string(const LocalHeap& heap, std::uint64_t offset, const std::string& path) const {
        if (offset >= heap.data_size) {
            image_.corrupt("a name in " + group_name(path) + " lies outside its local heap (offset " +
                           std::to_string(offset) + " of " + std::to_string(heap.data_size) + " bytes)");
        }
        const auto data = image_.bytes().subspan(heap.data_position + offset,
                                                 std::min<std::uint64_t>(heap.data_size - offset, kMaxNameBytes + 1));
        const auto end = std::find(data.begin(), data.end(), std::uint8_t{0});
        if (end == data.end()) {
            image_.corrupt("a name in " + group_name(path) + " runs off its local heap or past " +
                           std::to_string(kMaxNameBytes) + " bytes");
        }
        return checked_name(std::string(data.begin(), end), path);
    }

    // III.A.1 (a version 1 B-tree of group nodes) and III.B (symbol table nodes).
    void symbol_table_links(std::uint64_t btree, std::uint64_t heap_address, const std::string& path,
                            std::vector<Link>& links) {
        const LocalHeap heap = local_heap(heap_address, path);
        btree_node(btree, -1, heap, path, links);
    }

    void btree_node(std::uint64_t address, int expected_level, const LocalHeap& heap, const std::string& path,
                    std::vector<Link>& links) {
        const std::string what = "a B-tree node of " + group_name(path);
        if (!visited_nodes_.insert(address).second) image_.corrupt(what + " is reached twice" + at_byte(address));
        Cursor c = Cursor::at_address(image_, address, what);
        c.signature("TREE");
        if (c.u8() != 0) image_.corrupt(what + " is not a group node");
        const int level = c.u8();
        if (expected_level >= 0 && level != expected_level) {
            image_.corrupt(what + " is at level " + std::to_string(level) + ", below a node of level " +
                           std::to_string(expected_level + 1));
        }
        const std::uint16_t entries = c.u16();
        c.address();  // left sibling
        c.address();  // right sibling
        std::vector<std::uint64_t> children;
        for (std::uint16_t i = 0; i < entries; ++i) {
            c.length();  // key: the heap offset of the child's greatest name
            children.push_back(c.address());
        }
        for (const std::uint64_t child : children) {
            if (level > 0) {
                btree_node(child, level - 1, heap, path, links);
            } else {
                symbol_node(child, heap, path, links);
            }
        }
    }

    void symbol_node(std::uint64_t address, const LocalHeap& heap, const std::string& path, std::vector<Link>& links) {
        const std::string what = "a symbol table node of " + group_name(path);
        if (!visited_nodes_.insert(address).second) image_.corrupt(what + " is reached twice" + at_byte(address));
        Cursor c = Cursor::at_address(image_, address, what);
        c.signature("SNOD");
        if (c.u8() != 1) image_.unsupported(what + " has a version other than 1");
        c.skip(1);
        const std::uint16_t symbols = c.u16();
        for (std::uint16_t i = 0; i < symbols; ++i) {  // III.C: a symbol table entry
            const std::uint64_t name_offset = c.length();
            Link link;
            link.address = c.address();
            const std::uint32_t cache_type = c.u32();
            c.skip(4 + 16);  // reserved, scratch pad
            count_link();
            link.name = heap_string(heap, name_offset, path);
            link.hard = cache_type != 2;  // 2: a soft link, its value in the heap
            links.push_back(std::move(link));
        }
    }

    // --- datasets ---------------------------------------------------------------------------------

    const ObjectSummary& summarize(std::uint64_t address, const std::string& path) {
        if (const auto found = summaries_.find(address); found != summaries_.end()) return found->second;
        const std::vector<Message> messages = object_header(address, path);
        ObjectSummary summary;
        if (find_message(messages, kSymbolTableMessage) != nullptr ||
            find_message(messages, kLinkInfoMessage) != nullptr ||
            find_message(messages, kLinkMessage) != nullptr) {
            summary.kind = ObjectSummary::Kind::Group;
            summary.group_messages = messages;
        } else if (const Message* layout = find_message(messages, kLayoutMessage)) {
            summary.kind = ObjectSummary::Kind::Dataset;
            const Message* space = find_message(messages, kDataspaceMessage);
            const Message* type = find_message(messages, kDatatypeMessage);
            if (space == nullptr || type == nullptr) {
                image_.corrupt("dataset " + quoted(path) + " has no " + (space == nullptr ? "dataspace" : "datatype") +
                               " message");
            }
            for (const Message* message : {layout, space, type}) {
                if (message->flags & kMessageIsShared) {
                    image_.unsupported("dataset " + quoted(path) + " shares a message with other objects (a committed "
                                       "datatype or a shared message table)");
                }
            }
            const std::optional<std::uint64_t> count = decode_dataspace(image_, *space, path, summary.dataset.shape);
            const Datatype datatype = decode_datatype(image_, *type, path);
            summary.dataset.dtype = datatype.name;
            summary.storage.element_bytes = datatype.element_bytes;
            summary.storage.big_endian = datatype.big_endian;
            decode_layout(image_, *layout, path, summary.storage);
            if (count == std::uint64_t{0}) {
                summary.storage = DatasetStorage{0, 0, datatype.element_bytes, false, ""};  // nothing to read
            } else if (!count) {
                summary.storage.unreadable = "holds no values (an HDF5 null dataspace)";
            } else if (find_message(messages, kExternalFilesMessage) != nullptr) {
                summary.storage.unreadable = "keeps its values in an external file, which MirrorLab does not open";
            }
        }
        return summaries_.emplace(address, std::move(summary)).first->second;
    }

    Image image_;
    std::set<std::uint64_t> visited_groups_;
    std::set<std::uint64_t> visited_nodes_;
    std::set<std::uint64_t> seen_blocks_;  // continuation blocks: no two objects share one
    std::set<std::uint64_t> dense_blocks_;  // dense link storage's heap blocks and index nodes
    std::unordered_map<std::uint64_t, ObjectSummary> summaries_;
    std::uint64_t header_bytes_parsed_ = 0;
    std::size_t links_seen_ = 0;
    std::size_t listed_path_bytes_ = 0;
};

// A big-endian value in the host's (little-endian) order.
template <typename Bits>
Bits byte_swapped(Bits value) {
    Bits swapped = 0;
    for (std::size_t i = 0; i < sizeof(Bits); ++i) {
        swapped = static_cast<Bits>((swapped << 8) | (value & 0xff));
        value = static_cast<Bits>(value >> 8);
    }
    return swapped;
}

// IEEE 754 half to single precision, exactly: every half is a float.
float half_to_float(std::uint16_t half) {
    const std::uint32_t sign = std::uint32_t{half & 0x8000u} << 16;
    const std::uint32_t exponent = (half >> 10) & 0x1f;
    std::uint32_t mantissa = half & 0x3ffu;
    std::uint32_t bits = 0;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // infinity or NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa != 0) {  // subnormal: normalise
        int shift = 0;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            ++shift;
        }
        bits = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
    } else {
        bits = sign;
    }
    return std::bit_cast<float>(bits);
}

}  // namespace

FileReader::FileReader(std::vector<std::uint8_t> image, std::string source)
    : image_(std::move(image)), source_(std::move(source)) {
    static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    if (image_.size() < 8 || std::memcmp(kSignature, image_.data(), 8) != 0) {
        // HDF5 may also find a signature at 512, 1024, ... (a user block); Keras never writes one.
        if (image_.empty()) throw DataError(source_ + " is empty (0 bytes), not an HDF5 file");
        throw DataError(source_ + " is not an HDF5 file (no HDF5 signature at its start)");
    }
    Parser parser(image_, source_);
    try {
        parser.read();
    } catch (const Parser::TooManyObjects&) {
        throw DataError(source_ + " holds more than " + std::to_string(kHdf5MaxObjects) +
                        " objects; a Keras weight file holds a few per layer");
    }
    std::vector<std::size_t> order(parser.datasets.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return parser.datasets[a].path < parser.datasets[b].path; });
    for (const std::size_t i : order) {
        datasets_.push_back(std::move(parser.datasets[i]));
        storage_.push_back(std::move(parser.storage[i]));
    }
    groups_ = std::move(parser.groups);
    std::sort(groups_.begin(), groups_.end());
}

const DatasetInfo* FileReader::find(const std::string& path) const {
    const auto at = std::lower_bound(datasets_.begin(), datasets_.end(), path,
                                     [](const DatasetInfo& dataset, const std::string& key) {
                                         return dataset.path < key;
                                     });
    return at != datasets_.end() && at->path == path ? &*at : nullptr;
}

std::vector<float> FileReader::read_floats(const std::string& path, const std::vector<std::int64_t>& shape) const {
    const DatasetInfo* info = find(path);
    if (info == nullptr) throw DataError(source_ + " has no dataset '" + path + "'");
    if (info->dtype != "float32" && info->dtype != "float64" && info->dtype != "float16") {
        throw DataError(source_ + ": dataset '" + path + "' holds " + info->dtype + ", not float32");
    }
    if (info->shape != shape) {
        throw DataError(source_ + ": dataset '" + path + "' has shape " + shape_text(info->shape) + ", expected " +
                        shape_text(shape));
    }
    const DatasetStorage& stored = storage_[static_cast<std::size_t>(info - datasets_.data())];
    if (!stored.unreadable.empty()) throw DataError(source_ + ": dataset '" + path + "' " + stored.unreadable);
    std::uint64_t count = 1;
    for (const std::int64_t d : shape) count *= static_cast<std::uint64_t>(d);  // the listing checked overflow
    const std::uint64_t element_bytes = stored.element_bytes;
    // Nothing is allocated for values the file does not hold.
    if (count > stored.stored_bytes / element_bytes) {
        throw DataError(source_ + ": dataset '" + path + "' has " + std::to_string(stored.stored_bytes) +
                        " bytes stored for " + std::to_string(count) + " values (corrupt, or not written by Keras)");
    }
    if (stored.offset > image_.size() || count > (image_.size() - stored.offset) / element_bytes) {
        throw DataError(source_ + " is corrupt: the values of dataset '" + path + "' run past the end of the file (" +
                        std::to_string(count * element_bytes) + " bytes at byte " + std::to_string(stored.offset) +
                        " of " + std::to_string(image_.size()) + ")");
    }
    const std::uint8_t* bytes = image_.data() + stored.offset;
    std::vector<float> values(static_cast<std::size_t>(count));
    if (values.empty()) return values;  // (memcpy takes no null pointers, even for 0 bytes)
    if (element_bytes == 4 && !stored.big_endian) {  // what Keras writes: the bytes as they are
        std::memcpy(values.data(), bytes, values.size() * sizeof(float));
        return values;
    }
    auto element = [&](std::size_t i, auto type_tag) {
        using Bits = decltype(type_tag);
        Bits raw;
        std::memcpy(&raw, bytes + i * sizeof(Bits), sizeof(Bits));
        return stored.big_endian ? byte_swapped(raw) : raw;
    };
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (element_bytes == 4) {
            values[i] = std::bit_cast<float>(element(i, std::uint32_t{}));
        } else if (element_bytes == 8) {
            values[i] = static_cast<float>(std::bit_cast<double>(element(i, std::uint64_t{})));
        } else {
            values[i] = half_to_float(element(i, std::uint16_t{}));
        }
    }
    return values;
}

}  // namespace mirrorlab::hdf5
