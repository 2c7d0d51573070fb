// The emulated CUDA runtime: devices, memory, streams, events (see include/cuda_runtime.h); stream
// capture and graphs are in graphs.cpp.
//
// Configuration, read once from the environment:
//   MIRRORLAB_CUDA_EMULATION_GPUS        number of GPUs (default 2; 0: "no CUDA-capable device")
//   MIRRORLAB_CUDA_EMULATION_MEMORY_MIB  memory of each GPU (default 4096)
//   MIRRORLAB_CUDA_EMULATION_OTHER_MIB   memory of each GPU that other programs hold (default 0)
//   MIRRORLAB_CUDA_EMULATION_DRIVER      "none": behave as a machine without a driver
//   MIRRORLAB_CUDA_EMULATION_FAIL        API calls that fail, e.g. "cudnnCreate,ncclCommInitAll"
//   MIRRORLAB_CUDA_EMULATION_CUDNN       the cuDNN version the library reports (default: the header's)
//   MIRRORLAB_CUDA_EMULATION_SEED        the seed of the block and thread order (default: a random one,
//                                        printed at the first launch)
//   MIRRORLAB_CUDA_EMULATION_WORKERS     host threads that run a kernel's blocks at once (default 1)
//
// Every mistake it catches is printed as "CUDA emulation: [rule] ..." (see report() in emulator.h;
// tests/test_cuda_emulator.cpp has a wrong program for each rule).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emulator.h"
#include "mirrorlab_emulation_counters.h"

thread_local dim3 threadIdx;
thread_local dim3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace mirrorlab_emulation {

namespace {

constexpr std::size_t kAlignment = 256;  // of device addresses, and the granule memory limits count in

// Where the bytes of device memory live. Each allocation gets pages of its own in a reserved range,
// placed at the END of its pages, with an inaccessible page after them (which is also the next
// allocation's page before), so that:
//   - an overrun faults at the first byte past the allocation's size rounded up to kStorageAlignment
//     (16 bytes, so that every type a kernel uses stays aligned): one element past a buffer whose
//     size is a multiple of 16 bytes is caught (gpu/'s tensors are multiples of 64 bytes);
//   - an underrun faults once it leaves the allocation's first page: at once for a buffer of whole
//     pages, after up to a page minus the buffer's size for smaller ones;
//   - freed pages become inaccessible again and are never reused, so work that still touches a
//     freed buffer faults instead of reading its successor (they cost address space, not memory).
// Faults there, and host code touching a device address, are named by the SIGSEGV handler below.
constexpr std::size_t kStorageAlignment = 16;
constexpr std::size_t kStorageRangeBytes = std::size_t{1} << 40;

struct Allocation {
    std::uintptr_t address = 0;  // the device address
    std::size_t bytes = 0;
    int device = 0;
    unsigned char* storage = nullptr;  // where the bytes really are: host memory, kStorageAlignment-aligned
    unsigned char* pages = nullptr;    // the accessible pages that end where storage + padded bytes end
    std::size_t pages_bytes = 0;
};

std::size_t round_up(std::size_t bytes, std::size_t granule) { return (bytes + granule - 1) / granule * granule; }
std::size_t counted_bytes(std::size_t bytes) { return round_up(std::max<std::size_t>(bytes, 1), kAlignment); }
std::size_t padded_bytes(std::size_t bytes) { return round_up(std::max<std::size_t>(bytes, 1), kStorageAlignment); }

// Device addresses come from a reserved range of address space that is never readable or
// writable, and map to storage elsewhere; the emulated device translates them. Host code that
// dereferences a device pointer therefore crashes here as it would with a GPU, instead of quietly
// reading host memory. Addresses are not reused, so a stale pointer never aliases a new buffer.
constexpr std::size_t kAddressRangeBytes = std::size_t{1} << 40;
constexpr std::size_t kGuardBytes = 4096;  // between allocations: an overrun does not reach the next

struct Device {
    std::size_t capacity_bytes = 0;
    std::size_t used_bytes = 0;  // by this process, starting with what other programs hold
    std::set<int> peers_enabled;
    std::shared_ptr<Stream> default_stream;
    // Created streams, shared so that a device-wide synchronisation can still drain one that
    // another thread destroys meanwhile.
    std::map<Stream*, std::shared_ptr<Stream>> streams;
};

// Events, shared with the queued work that completes them (destroying an event whose record is
// still queued releases it when that work has run, as CUDA does).
std::mutex events_mutex;
std::map<Event*, std::shared_ptr<Event>> events;

// Freed allocations the fault handler can still name (older ones fault all the same, unnamed).
constexpr std::size_t kFreedRemembered = 4096;

struct State {
    std::mutex mutex;
    bool driver = true;
    std::uintptr_t address_begin = 0, next_address = 0, end_address = 0;
    std::uintptr_t storage_begin = 0, next_storage = 0, storage_end = 0;
    std::size_t page_bytes = 4096;
    std::vector<Device> devices;
    std::map<std::uintptr_t, Allocation> allocations;  // by base address
    std::deque<Allocation> freed;                      // the most recent last
    // Pinned host memory (cudaHostAlloc): base -> bytes, and how many queued copies use each.
    std::map<std::uintptr_t, std::size_t> pinned;
    std::map<std::uintptr_t, int> pinned_in_flight;
};

State* signal_state = nullptr;  // for the SIGSEGV handler, which cannot run state()'s initialisation
struct sigaction previous_segv_action;
void on_segv(int signal, siginfo_t* info, void* context);

long env_number(const char* name, long fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    return end != nullptr && *end == '\0' && value >= 0 ? value : fallback;
}

// An inaccessible range of up to `bytes` of address space, halved until the system grants one
// (ThreadSanitizer leaves a process far less than 1 TiB in one piece); `bytes` becomes its size.
// Even 1 GiB outlasts any test, since freed addresses are never reused.
void* reserve_address_space(std::size_t& bytes) {
    constexpr std::size_t kSmallestBytes = std::size_t{1} << 30;
    for (;; bytes /= 2) {
        void* range = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (range != MAP_FAILED || bytes <= kSmallestBytes) return range;
    }
}

State& state() {
    static State* s = [] {
        auto* made = new State();
        const char* driver = std::getenv("MIRRORLAB_CUDA_EMULATION_DRIVER");
        made->driver = driver == nullptr || std::string_view(driver) != "none";
        const long gpus = env_number("MIRRORLAB_CUDA_EMULATION_GPUS", 2);
        const long mebibytes = env_number("MIRRORLAB_CUDA_EMULATION_MEMORY_MIB", 4096);
        const long others = std::min(env_number("MIRRORLAB_CUDA_EMULATION_OTHER_MIB", 0), mebibytes);
        made->devices.resize(static_cast<std::size_t>(gpus));
        std::size_t range_bytes = kAddressRangeBytes, storage_bytes = kStorageRangeBytes;
        void* range = reserve_address_space(range_bytes);
        void* storage = reserve_address_space(storage_bytes);
        made->page_bytes = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        if (range != MAP_FAILED && storage != MAP_FAILED) {
            made->address_begin = made->next_address = reinterpret_cast<std::uintptr_t>(range);
            made->end_address = made->next_address + range_bytes;
            made->storage_begin = reinterpret_cast<std::uintptr_t>(storage);
            made->next_storage = made->storage_begin + made->page_bytes;  // the first allocation's page before
            made->storage_end = made->storage_begin + storage_bytes;
            signal_state = made;
            struct sigaction action {};
            action.sa_sigaction = on_segv;
            action.sa_flags = SA_SIGINFO | SA_ONSTACK;  // the alternate stack, where the thread has one
            sigemptyset(&action.sa_mask);
            sigaction(SIGSEGV, &action, &previous_segv_action);
        }
        for (int d = 0; d < gpus; ++d) {
            Device& device = made->devices[static_cast<std::size_t>(d)];
            device.capacity_bytes = static_cast<std::size_t>(mebibytes) << 20;
            device.used_bytes = static_cast<std::size_t>(others) << 20;
            device.default_stream = std::make_shared<Stream>();
            device.default_stream->device = d;
        }
        return made;
    }();
    return *s;
}

thread_local int tls_device = 0;
// The devices that hold this process's CUDA context (bit d: GPU d). cudaSetDevice makes one, as
// it does since CUDA 12, and so do the calls that use the current device without it.
std::atomic<std::uint64_t> context_devices{0};
void mark_context(int device) {
    if (device >= 0 && device < 64) context_devices.fetch_or(std::uint64_t{1} << device, std::memory_order_relaxed);
}
thread_local cudaError_t tls_last_error = cudaSuccess;

// The allocation that holds `pointer`; end() when none. Call with the state's mutex held.
std::map<std::uintptr_t, Allocation>::const_iterator find_allocation(const State& s, const void* pointer) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    auto it = s.allocations.upper_bound(address);
    if (it == s.allocations.begin()) return s.allocations.end();
    --it;
    const std::size_t extent = std::max<std::size_t>(it->second.bytes, 1);
    return address < it->first + extent ? it : s.allocations.end();
}

// The kernel a thread is running, for a fault report (set by run_grid on each thread that runs blocks).
struct RunningKernel {
    bool running = false;
    dim3 grid, block;
};
thread_local RunningKernel tls_kernel;

// " in block (..), thread (..) of a kernel ..." for a fault inside a kernel; `otherwise` outside one.
void describe_running(char* text, std::size_t size, const char* otherwise) {
    if (!tls_kernel.running) {
        std::snprintf(text, size, "%s", otherwise);
        return;
    }
    std::snprintf(text, size, " in block (%u, %u, %u), thread (%u, %u, %u) of a kernel launched with (%u, %u, %u) blocks "
                  "of (%u, %u, %u) threads", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
                  tls_kernel.grid.x, tls_kernel.grid.y, tls_kernel.grid.z, tls_kernel.block.x, tls_kernel.block.y,
                  tls_kernel.block.z);
}

// The report for a fault at `address`, which lies in the device address range or in storage.
// Runs in the SIGSEGV handler: it only try-locks the state (the faulting thread may hold it), and
// formats with snprintf, which is not async-signal-safe but serves a process about to die.
void describe_fault(State& s, std::uintptr_t address, char* text, std::size_t size) {
    const bool locked = s.mutex.try_lock();
    char where[256];
    const auto* at = reinterpret_cast<const void*>(address);
    if (address >= s.address_begin && address < s.end_address) {
        describe_running(where, sizeof where, "");
        char inside[160] = "";
        if (locked) {
            if (const auto it = find_allocation(s, at); it != s.allocations.end()) {
                std::snprintf(inside, sizeof inside, " (inside the %zu-byte allocation at %p on GPU:%d)", it->second.bytes,
                              reinterpret_cast<const void*>(it->first), it->second.device);
            }
        }
        std::snprintf(text, size, "CUDA emulation: [host-touches-device-address] %s device address %p%s%s: %s\n",
                      tls_kernel.running ? "a kernel touched" : "host code touched", at, inside, where,
                      tls_kernel.running ? "the emulator translates a kernel's pointer arguments only, not pointers "
                                           "stored in structs or arrays"
                                         : "device memory is not host memory; copy it with cudaMemcpy");
    } else {
        describe_running(where, sizeof where, " outside any kernel (in a copy, or a cuBLAS, cuDNN or NCCL call)");
        const Allocation* nearest = nullptr;
        std::size_t distance = 0;
        bool past_end = false;
        // An inaccessible page lies between two allocations' pages: a fault there is an overrun of
        // the one before or an underrun of the one after, whichever it is closer to.
        for (const auto& [base, a] : s.allocations) {
            if (!locked) break;
            const auto pages_begin = reinterpret_cast<std::uintptr_t>(a.pages), pages_end = pages_begin + a.pages_bytes;
            const auto user_end = reinterpret_cast<std::uintptr_t>(a.storage) + a.bytes;
            if (address >= pages_end && address < pages_end + s.page_bytes &&
                (nearest == nullptr || address - user_end < distance)) {
                nearest = &a, distance = address - user_end, past_end = true;
            }
            if (address < pages_begin && address + s.page_bytes >= pages_begin &&
                (nearest == nullptr || reinterpret_cast<std::uintptr_t>(a.storage) - address < distance)) {
                nearest = &a, distance = reinterpret_cast<std::uintptr_t>(a.storage) - address, past_end = false;
            }
        }
        const Allocation* freed = nullptr;
        for (const Allocation& a : s.freed) {
            if (!locked) break;
            const auto pages_begin = reinterpret_cast<std::uintptr_t>(a.pages);
            if (address >= pages_begin && address < pages_begin + a.pages_bytes) freed = &a;
        }
        if (freed != nullptr) {
            std::snprintf(text, size, "CUDA emulation: [use-after-free] emulated device memory at %p, inside the %zu-byte "
                          "allocation at device address %p (GPU:%d), was touched after cudaFree%s\n", at, freed->bytes,
                          reinterpret_cast<const void*>(freed->address), freed->device, where);
        } else if (nearest != nullptr) {
            std::snprintf(text, size, "CUDA emulation: [out-of-bounds] emulated device memory at %p was touched%s: %zu "
                          "bytes %s the %zu-byte allocation at device address %p (GPU:%d)\n", at, where, distance,
                          past_end ? "past the end of" : "before the start of", nearest->bytes,
                          reinterpret_cast<const void*>(nearest->address), nearest->device);
        } else {
            std::snprintf(text, size, "CUDA emulation: [out-of-bounds] emulated device memory at %p was touched%s, outside "
                          "every live allocation%s\n", at, where,
                          locked ? " (a wild pointer, or memory freed long ago)" : " (the emulator was busy: not named)");
        }
    }
    if (locked) s.mutex.unlock();
}

void on_segv(int signal, siginfo_t* info, void* context) {
    (void)signal, (void)context;
    State* s = signal_state;
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    const bool ours = s != nullptr && ((address >= s->address_begin && address < s->end_address) ||
                                       (address >= s->storage_begin && address < s->storage_end));
    if (!ours) {
        // Not the emulator's: the handler before ours (a sanitizer's, Qt Test's) or the default
        // action gets it when the access runs again on return.
        sigaction(SIGSEGV, &previous_segv_action, nullptr);
        return;
    }
    char text[1024];
    describe_fault(*s, address, text, sizeof text);
    ssize_t written = write(STDERR_FILENO, text, std::strlen(text));
    (void)written;
    // Die of the fault itself: the access runs again on return and meets the default action.
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(SIGSEGV, &fallback, nullptr);
}

// What queued work touches, per stream, by allocation. Nothing orders two streams here but the host
// waiting for one, or cudaStreamWaitEvent (which runs the recorded stream's work up to its event and
// so clears those uses), so work on one stream that touches bytes which
// another stream's queued work writes, or writes bytes it reads, races with it on a GPU: the result
// depends on which runs first. Touching different bytes of one buffer is fine (a ring all-reduce
// writes one chunk of a buffer while the next replica reads another).
std::mutex queued_mutex;  // taken after a stream's mutex, never before
std::map<Stream*, std::multimap<std::uintptr_t, Use>> queued_uses;

// The first use queued on another stream than `stream` that conflicts with `use`; null when none.
// Call with queued_mutex held.
const std::pair<Stream* const, std::multimap<std::uintptr_t, Use>>* find_conflict(const Stream* stream, const Use& use,
                                                                                 const Use** conflicting) {
    for (const auto& entry : queued_uses) {
        if (entry.first == stream) continue;
        const auto [first, last] = entry.second.equal_range(use.allocation);
        for (auto it = first; it != last; ++it) {
            if ((use.writes || it->second.writes) && use.overlaps(it->second)) {
                *conflicting = &it->second;
                return &entry;
            }
        }
    }
    return nullptr;
}

}  // namespace

std::string describe_stream(const Stream* stream) {
    char text[96];
    if (stream == state().devices[static_cast<std::size_t>(stream->device)].default_stream.get()) {
        std::snprintf(text, sizeof text, "GPU:%d's default stream", stream->device);
    } else {
        std::snprintf(text, sizeof text, "stream %p of GPU:%d", static_cast<const void*>(stream), stream->device);
    }
    return text;
}

// "writes 256 bytes at 0x..." or "reads through kernel argument 0x...".
std::string describe_use(const Use& use) {
    char text[96];
    const char* verb = use.writes ? "writes" : "reads";
    const auto* at = reinterpret_cast<const void*>(use.begin);
    if (use.kernel_argument) {
        std::snprintf(text, sizeof text, "%s through kernel argument %p", verb, at);
    } else {
        std::snprintf(text, sizeof text, "%s %zu bytes at %p", verb, static_cast<std::size_t>(use.end - use.begin), at);
    }
    return text;
}

// The device bytes `accesses` touch. An access of unknown extent (a kernel's pointer argument: what
// the kernel indexes from it is unknown) counts as the one byte it points to, so two kernels are
// seen to race when they get the same pointer, or a kernel and a copy when the copy covers it.
std::vector<Use> uses_of(const std::vector<Access>& accesses) {
    std::vector<Use> uses;
    State& s = state();
    std::lock_guard lock(s.mutex);
    for (const Access& access : accesses) {
        const auto it = find_allocation(s, access.pointer);
        if (it == s.allocations.end()) continue;
        const auto begin = reinterpret_cast<std::uintptr_t>(access.pointer);
        uses.push_back(Use{it->first, begin, begin + std::max<std::size_t>(access.bytes, 1), access.writes,
                           access.bytes == 0});
    }
    return uses;
}

namespace {

// The device that owns the allocation at `base` (-1 when none), for messages.
int allocation_device(std::uintptr_t base) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto it = s.allocations.find(base);
    return it == s.allocations.end() ? -1 : it->second.device;
}

// The seed of every launch's block and thread order; printed once so that a failure can be repeated.
std::uint64_t order_seed() {
    static const std::uint64_t seed = [] {
        const char* text = std::getenv("MIRRORLAB_CUDA_EMULATION_SEED");
        char* end = nullptr;
        std::uint64_t value = text != nullptr && *text != '\0' ? std::strtoull(text, &end, 10) : 0;
        if (end == nullptr || *end != '\0') {
            if (text != nullptr && *text != '\0') {
                std::fprintf(stderr, "CUDA emulation: MIRRORLAB_CUDA_EMULATION_SEED=%s is not a number; using a random "
                             "seed\n", text);
            }
            std::random_device entropy;
            value = (std::uint64_t{entropy()} << 32) ^ entropy();
        }
        std::fprintf(stderr, "CUDA emulation: kernel blocks and threads run in a shuffled order, seed %llu "
                     "(MIRRORLAB_CUDA_EMULATION_SEED=%llu repeats it)\n", static_cast<unsigned long long>(value),
                     static_cast<unsigned long long>(value));
        return value;
    }();
    return seed;
}

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finaliser
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

unsigned block_workers() {
    static const auto workers =
        static_cast<unsigned>(std::clamp(env_number("MIRRORLAB_CUDA_EMULATION_WORKERS", 1), 1L, 64L));
    return workers;
}

std::vector<std::uint64_t> shuffled(std::uint64_t count, std::mt19937_64& random) {
    std::vector<std::uint64_t> order(count);
    for (std::uint64_t i = 0; i < count; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), random);
    return order;
}

dim3 unflatten(std::uint64_t index, dim3 extent) {
    return dim3(static_cast<unsigned>(index % extent.x), static_cast<unsigned>(index / extent.x % extent.y),
                static_cast<unsigned>(index / (std::uint64_t{extent.x} * extent.y)));
}

void synchronize_device(int device) {
    for (const auto& stream : device_streams(device)) drain(stream.get());
}

bool overlapping(const void* a, const void* b, std::size_t bytes) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    return x < y + bytes && y < x + bytes;
}

cudaError_t no_driver_or(cudaError_t otherwise) { return state().driver ? otherwise : fail(cudaErrorInsufficientDriver); }

// Why a call is refused during a capture.
constexpr const char* kHostWaits = "it makes the host wait for the device";

}  // namespace

cudaError_t fail(cudaError_t error) {
    tls_last_error = error;
    return error;
}

std::vector<std::shared_ptr<Stream>> device_streams(int device) {
    std::vector<std::shared_ptr<Stream>> streams;
    State& s = state();
    std::lock_guard lock(s.mutex);
    Device& d = s.devices[static_cast<std::size_t>(device)];
    for (const auto& entry : d.streams) streams.push_back(entry.second);
    streams.push_back(d.default_stream);
    return streams;
}

namespace {
// Relaxed atomics: replica threads bump them at once; a reader takes them between steps.
struct AtomicCounters {
    std::atomic<std::uint64_t> kernel_launches{0}, library_launches{0}, copies{0}, host_to_device_pageable{0},
        host_syncs{0}, graph_launches{0}, graph_nodes_launched{0}, captured_nodes{0}, event_calls{0}, malloc_calls{0},
        malloc_bytes{0}, free_calls{0};
};
AtomicCounters counters;

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) { counter.fetch_add(by, std::memory_order_relaxed); }
}  // namespace

void count(Counted what, std::uint64_t by) {
    switch (what) {
        case Counted::LibraryLaunch: bump(counters.library_launches, by); return;
        case Counted::Copy: bump(counters.copies, by); return;
        case Counted::HostToDevicePageable:
            bump(counters.copies, by);
            bump(counters.host_to_device_pageable, by);
            return;
        case Counted::HostSync: bump(counters.host_syncs, by); return;
        case Counted::EventCall: bump(counters.event_calls, by); return;
        case Counted::CapturedNode: bump(counters.captured_nodes, by); return;
        case Counted::GraphLaunch: bump(counters.graph_launches, by); return;
        case Counted::GraphNodeLaunched: bump(counters.graph_nodes_launched, by); return;
        case Counted::Invalid: return;
    }
}

bool count_issued(Issued issued, Counted what) {
    if (issued == Issued::Queued) count(what);
    return issued != Issued::Dropped;
}

void count_kernel_launch() { bump(counters.kernel_launches); }

int current_device() { return tls_device; }

bool injected_failure(const char* call) {
    const char* list = std::getenv("MIRRORLAB_CUDA_EMULATION_FAIL");
    if (list == nullptr) return false;
    const std::string_view names(list), name(call);
    for (std::size_t start = 0; start <= names.size();) {
        const std::size_t end = std::min(names.find(',', start), names.size());
        if (names.substr(start, end - start) == name) return true;
        start = end + 1;
    }
    return false;
}

bool valid_device(int device) {
    return state().driver && device >= 0 && static_cast<std::size_t>(device) < state().devices.size();
}

bool driver_present() { return state().driver; }

bool device_memory(int device, std::size_t* free_bytes, std::size_t* total_bytes) {
    if (!valid_device(device)) return false;
    State& s = state();
    std::lock_guard lock(s.mutex);
    const Device& d = s.devices[static_cast<std::size_t>(device)];
    *free_bytes = d.capacity_bytes - d.used_bytes;
    *total_bytes = d.capacity_bytes;
    return true;
}

Stream* resolve(cudaStream_t stream) {
    if (stream != nullptr) return stream;
    mark_context(tls_device);
    return state().devices[static_cast<std::size_t>(tls_device)].default_stream.get();
}

int stream_device(cudaStream_t stream) { return resolve(stream)->device; }

void drain(cudaStream_t stream) {
    drain_until(stream, [] { return false; });
}

void drain_until(cudaStream_t stream, const std::function<bool()>& reached) {
    Stream* target = resolve(stream);
    std::lock_guard lock(target->mutex);
    while (!target->pending.empty() && !reached()) {
        if (const auto& stalled = target->pending.front().stalled; stalled && stalled->load()) {
            report_fatal("hang", "the host waits for %s, whose queued NCCL collective never completes (a peer stalled "
                         "or failed): on a GPU this wait would never return; poll with cudaStreamQuery and "
                         "ncclCommGetAsyncError under a timeout, then ncclCommAbort", describe_stream(target).c_str());
        }
        Work work = std::move(target->pending.front());
        target->pending.pop_front();
        work.run();
        if (work.uses.empty()) continue;
        std::lock_guard queued(queued_mutex);
        auto& uses = queued_uses[target];
        for (const Use& use : work.uses) {
            const auto [first, last] = uses.equal_range(use.allocation);
            const auto it = std::find_if(first, last, [&](const auto& entry) { return entry.second == use; });
            if (it != last) uses.erase(it);
        }
        if (uses.empty()) queued_uses.erase(target);
    }
}

Issued enqueue(cudaStream_t stream, std::function<void()> work, std::vector<Access> accesses) {
    return enqueue_made(stream, [work = std::move(work)](Stream*) { return work; }, std::move(accesses));
}

Issued enqueue_made(cudaStream_t stream, MakeWork make, std::vector<Access> accesses) {
    std::vector<Use> uses = uses_of(accesses);
    Stream* target = resolve(stream);
    if (const std::optional<Issued> captured = capture_work(target, make, uses)) return *captured;
    enqueue_uses(target, make(target), std::move(uses));
    return Issued::Queued;
}

void enqueue_stalled(cudaStream_t stream, std::function<void()> work, std::vector<Access> accesses,
                     std::shared_ptr<std::atomic<bool>> stalled) {
    Stream* target = resolve(stream);
    enqueue_uses(target, std::move(work), uses_of(accesses));
    std::lock_guard lock(target->mutex);
    target->pending.back().stalled = std::move(stalled);
}

void enqueue_uses(Stream* target, std::function<void()> work, std::vector<Use> uses) {
    std::lock_guard lock(target->mutex);
    if (!uses.empty()) {
        std::lock_guard queued(queued_mutex);
        for (const Use& use : uses) {
            const Use* other_use = nullptr;
            if (const auto* other = find_conflict(target, use, &other_use)) {
                report_fatal("cross-stream-race", "work queued on %s %s in the allocation at %p (GPU:%d), and work "
                             "still queued on %s %s there; nothing orders the two streams: synchronise %s first",
                             describe_stream(target).c_str(), describe_use(use).c_str(),
                             reinterpret_cast<const void*>(use.allocation), allocation_device(use.allocation),
                             describe_stream(other->first).c_str(), describe_use(*other_use).c_str(),
                             describe_stream(other->first).c_str());
            }
        }
        auto& mine = queued_uses[target];
        for (const Use& use : uses) mine.emplace(use.allocation, use);
    }
    target->pending.push_back(Work{std::move(work), std::move(uses)});
}

void report(const char* rule, const char* format, ...) {
    char text[1024];
    va_list arguments;
    va_start(arguments, format);
    std::vsnprintf(text, sizeof text, format, arguments);
    va_end(arguments);
    std::fprintf(stderr, "CUDA emulation: [%s] %s\n", rule, text);
}

void report_fatal(const char* rule, const char* format, ...) {
    char text[1024];
    va_list arguments;
    va_start(arguments, format);
    std::vsnprintf(text, sizeof text, format, arguments);
    va_end(arguments);
    report(rule, "%s", text);
    std::abort();
}

void check_host_read(const void* pointer, std::size_t bytes, const char* what) {
    const std::vector<Use> uses = uses_of({Access{pointer, false, bytes}});
    if (uses.empty()) return;
    std::lock_guard queued(queued_mutex);
    const Use* other_use = nullptr;
    if (const auto* other = find_conflict(nullptr, uses.front(), &other_use)) {
        report_fatal("read-before-wait", "%s reads %zu bytes at %p in the allocation at %p (GPU:%d) while work queued on "
                     "%s %s there: wait for that stream (cudaStreamSynchronize) first", what, bytes, pointer,
                     reinterpret_cast<const void*>(uses.front().allocation), allocation_device(uses.front().allocation),
                     describe_stream(other->first).c_str(), describe_use(*other_use).c_str());
    }
}

std::uint64_t next_launch_key() {
    thread_local std::uint64_t launches = 0;
    return mix(order_seed() ^ mix(++launches));
}

void run_grid(dim3 grid, dim3 block, std::uint64_t launch_key, const std::function<void()>& thread_body) {
    const std::uint64_t blocks = std::uint64_t{grid.x} * grid.y * grid.z;
    std::mt19937_64 random(launch_key);
    const std::vector<std::uint64_t> block_order = shuffled(blocks, random);
    // One order of threads for all the launch's blocks: as good at breaking a dependency between
    // threads as one per block, for a fraction of the cost.
    const std::vector<std::uint64_t> thread_order = shuffled(std::uint64_t{block.x} * block.y * block.z, random);
    std::atomic<std::uint64_t> next_block{0};
    auto run_blocks = [&] {
        gridDim = grid;
        blockDim = block;
        tls_kernel = RunningKernel{true, grid, block};
        for (std::uint64_t i = next_block++; i < blocks; i = next_block++) {
            blockIdx = unflatten(block_order[i], grid);
            for (const std::uint64_t thread : thread_order) {
                threadIdx = unflatten(thread, block);
                thread_body();
            }
        }
        tls_kernel.running = false;
    };
    std::vector<std::jthread> helpers;
    const std::uint64_t workers = std::min<std::uint64_t>(block_workers(), blocks);
    for (std::uint64_t w = 1; w < workers; ++w) helpers.emplace_back(run_blocks);
    run_blocks();
}

void* device_to_host(const void* pointer) {
    if (pointer == nullptr) return nullptr;
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto it = find_allocation(s, pointer);
    if (it == s.allocations.end()) return nullptr;
    return it->second.storage + (reinterpret_cast<std::uintptr_t>(pointer) - it->first);
}

int device_of_range(const void* pointer, std::size_t bytes) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto it = find_allocation(s, pointer);
    if (it == s.allocations.end()) return -1;
    const auto offset = reinterpret_cast<std::uintptr_t>(pointer) - it->first;
    return offset + bytes <= it->second.bytes ? it->second.device : -1;
}

bool check_launch_configuration(cudaStream_t stream, dim3 grid, dim3 block) {
    const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
    const bool ok = threads >= 1 && threads <= 1024 && block.z <= 64 && grid.x >= 1 && grid.y >= 1 && grid.z >= 1 &&
                    grid.x <= 2147483647u && grid.y <= 65535 && grid.z <= 65535;
    if (!ok) {
        report("launch-configuration", "a launch of (%u, %u, %u) blocks of (%u, %u, %u) threads: a block holds 1 to "
               "1024 threads (at most 64 in z), a grid at least one block in each dimension", grid.x, grid.y, grid.z,
               block.x, block.y, block.z);
        fail(cudaErrorInvalidConfiguration);
        return false;
    }
    if (resolve(stream)->device != tls_device) {
        // Launching on another device's stream: the runtime refuses it.
        report("launch-on-other-device", "a launch on %s while GPU:%d is current",
               describe_stream(resolve(stream)).c_str(), tls_device);
        fail(cudaErrorInvalidResourceHandle);
        return false;
    }
    return true;
}

bool check_kernel_pointer(cudaStream_t stream, const void* pointer) {
    if (device_of_range(pointer, 0) == resolve(stream)->device) return true;
    report("kernel-pointer", "a kernel got %p, which is not device memory of GPU:%d (a host pointer, a freed buffer or "
           "another GPU's memory)", pointer, resolve(stream)->device);
    fail(cudaErrorIllegalAddress);
    return false;
}

}  // namespace mirrorlab_emulation

using namespace mirrorlab_emulation;

cudaError_t cudaGetDeviceCount(int* count) {
    State& s = state();
    if (!s.driver) return fail(cudaErrorInsufficientDriver);
    if (s.devices.empty()) return fail(cudaErrorNoDevice);
    *count = static_cast<int>(s.devices.size());
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
    *version = state().driver ? 13000 : 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device) {
    if (!valid_device(device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    *properties = cudaDeviceProp{};
    std::snprintf(properties->name, sizeof properties->name, "CUDA host emulator (CPU, not a GPU)");
    properties->totalGlobalMem = state().devices[static_cast<std::size_t>(device)].capacity_bytes;
    properties->major = 9;
    properties->minor = 0;
    properties->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int length, int device) {
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    std::snprintf(bus_id, static_cast<std::size_t>(length), "0000:%02x:00.0", 0x10 + device);
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer) {
    if (!valid_device(device) || !valid_device(peer)) return fail(cudaErrorInvalidDevice);
    *can_access = device != peer ? 1 : 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags) {
    if (!valid_device(peer) || peer == tls_device || flags != 0) return fail(cudaErrorInvalidDevice);
    mark_context(tls_device);
    mark_context(peer);  // the peer's memory is mapped through its context
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.devices[static_cast<std::size_t>(tls_device)].peers_enabled.insert(peer).second) {
        return fail(cudaErrorPeerAccessAlreadyEnabled);
    }
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (!valid_device(device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    tls_device = device;
    mark_context(device);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    mark_context(tls_device);
    if (const cudaError_t refused = refuse_if_device_captures(tls_device, "cudaDeviceSynchronize", kHostWaits)) {
        return refused;
    }
    synchronize_device(tls_device);
    count(Counted::HostSync);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    mark_context(tls_device);
    device_memory(tls_device, free_bytes, total_bytes);  // what NVML's stand-in answers too
    return cudaSuccess;
}

cudaError_t cudaGetLastError() {
    const cudaError_t error = tls_last_error;
    tls_last_error = cudaSuccess;
    return error;
}

const char* cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
        case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
        case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
        case cudaErrorNotReady: return "cudaErrorNotReady";
        case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
        case cudaErrorPeerAccessAlreadyEnabled: return "cudaErrorPeerAccessAlreadyEnabled";
        case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
        case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
        case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
        case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    }
    return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
        case cudaErrorNoDevice: return "no CUDA-capable device is detected";
        case cudaErrorInvalidDevice: return "invalid device ordinal";
        case cudaErrorInvalidResourceHandle: return "invalid resource handle";
        case cudaErrorNotReady: return "device not ready";
        case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
        case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
        case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
        case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
        case cudaErrorStreamCaptureUnjoined: return "capture was not joined back to the origin stream";
        case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    }
    return "unknown error";
}

namespace mirrorlab_emulation {
namespace {

// The pinned allocation (cudaHostAlloc) that holds [pointer, pointer + bytes): its base, or 0.
std::uintptr_t pinned_base(const void* pointer, std::size_t bytes) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    auto it = s.pinned.upper_bound(address);
    if (it == s.pinned.begin()) return 0;
    --it;
    return address + std::max<std::size_t>(bytes, 1) <= it->first + it->second ? it->first : 0;
}

// Queued copies that use the pinned allocation at `base` (cudaFreeHost waits for them).
void pinned_in_flight(std::uintptr_t base, int change) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    if ((s.pinned_in_flight[base] += change) == 0) s.pinned_in_flight.erase(base);
}

// The stream as a shared pointer, so that an event can hold on to where it was recorded.
std::shared_ptr<Stream> shared_stream(Stream* stream) {
    State& s = state();
    std::lock_guard lock(s.mutex);
    Device& device = s.devices[static_cast<std::size_t>(stream->device)];
    if (device.default_stream.get() == stream) return device.default_stream;
    const auto it = device.streams.find(stream);
    return it == device.streams.end() ? nullptr : it->second;
}

}  // namespace

std::shared_ptr<Event> find_event(cudaEvent_t event) {
    std::lock_guard lock(events_mutex);
    const auto it = events.find(event);
    return it == events.end() ? nullptr : it->second;
}

std::function<void()> mark_recorded(const std::shared_ptr<Event>& event, Stream* stream) {
    std::shared_ptr<Stream> recorded_on = shared_stream(stream);
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(event->mutex);
        generation = ++event->generation;
        event->recorded = true;
        event->done = false;
        event->stream = std::move(recorded_on);
        event->capture = nullptr;
        event->capture_follows.clear();
    }
    return [event, generation] {
        std::lock_guard lock(event->mutex);
        if (event->generation != generation) return;  // recorded again since
        event->done = true;
        event->at = std::chrono::steady_clock::now();
    };
}

namespace {

// cudaErrorCapturedEvent, reported, for an event whose last record was in a capture: it has no
// completion or time of its own (a graph's event record node gives it one: cudaEventRecordWithFlags).
cudaError_t refuse_captured_event(const std::shared_ptr<Event>& event, const char* call) {
    {
        std::lock_guard lock(event->mutex);
        if (event->capture == nullptr) return cudaSuccess;
    }
    report("captured-event", "%s of an event last recorded on a capturing stream (cudaEventRecord during "
           "cudaStreamBeginCapture): it orders the capture's work, it is never reached itself; record it with "
           "cudaEventRecordWithFlags(..., cudaEventRecordExternal) to time a graph's work", call);
    return fail(cudaErrorCapturedEvent);
}

// Runs the work queued on the stream where `event` was last recorded, up to that record; false
// when the event was never recorded or is complete already (nothing to run).
bool run_until_reached(const std::shared_ptr<Event>& event, Stream* waiting) {
    std::uint64_t generation = 0;
    std::shared_ptr<Stream> recorded_on;
    {
        std::lock_guard lock(event->mutex);
        if (!event->recorded || event->done) return false;
        generation = event->generation;
        recorded_on = event->stream;
    }
    if (recorded_on == nullptr || recorded_on.get() == waiting) return false;  // a stream's own order
    drain_until(recorded_on.get(), [&] {
        std::lock_guard lock(event->mutex);
        return event->done || event->generation != generation;
    });
    return true;
}

// A graph's copy node may outlive the pinned memory it was captured with.
void check_pinned_alive(const void* pointer, std::size_t bytes, std::uintptr_t base) {
    if (pinned_base(pointer, bytes) == base) return;
    report_fatal("use-after-free", "a launched graph copies %zu bytes of pinned memory at %p, which cudaFreeHost freed "
                 "after the copy was captured", bytes, pointer);
}

// Pinned source: the device reads it when the copy runs, as a GPU's DMA does; what it held when
// queued (for a graph: launched) is kept to catch host code that changed it in between.
Issued queue_upload_from_pinned(void* dst, const void* src, std::size_t bytes, std::uintptr_t base,
                                cudaStream_t stream) {
    auto make = [to = device_to_host(dst), src, bytes, base](Stream*) -> std::function<void()> {
        check_pinned_alive(src, bytes, base);
        auto queued = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                                   static_cast<const unsigned char*>(src) + bytes);
        pinned_in_flight(base, +1);
        return [to, src, queued, base] {
            if (std::memcmp(src, queued->data(), queued->size()) != 0) {
                report_fatal("pinned-overwritten-in-flight", "host code changed %zu bytes of pinned memory at %p "
                             "that a queued cudaMemcpyAsync to the device (or a launched graph's copy) had not read "
                             "yet: wait for the copy (an event, or the stream) before reusing the buffer",
                             queued->size(), src);
            }
            std::memcpy(to, src, queued->size());
            pinned_in_flight(base, -1);
        };
    };
    return enqueue_made(stream, std::move(make), {Access{dst, true, bytes}});
}

// Pinned destination: queued, complete once the stream is waited for; until then it holds all
// ones, so a host that reads it early sees garbage, as it may on a GPU.
Issued queue_download_to_pinned(void* dst, const void* src, std::size_t bytes, std::uintptr_t base,
                                cudaStream_t stream) {
    auto make = [dst, from = device_to_host(src), bytes, base](Stream*) -> std::function<void()> {
        check_pinned_alive(dst, bytes, base);
        std::memset(dst, 0xff, bytes);
        pinned_in_flight(base, +1);
        return [dst, from, bytes, base] {
            std::memcpy(dst, from, bytes);
            pinned_in_flight(base, -1);
        };
    };
    return enqueue_made(stream, std::move(make), {Access{src, false, bytes}});
}

}  // namespace
}  // namespace mirrorlab_emulation

cudaError_t cudaHostAlloc(void** pointer, std::size_t bytes, unsigned flags) {
    *pointer = nullptr;
    if (flags != cudaHostAllocDefault || bytes == 0) return fail(cudaErrorInvalidValue);
    if (!state().driver) return fail(cudaErrorInsufficientDriver);
    mark_context(tls_device);  // pinned memory belongs to the current device's context
    const std::size_t page = state().page_bytes;
    void* memory = std::aligned_alloc(page, round_up(bytes, page));
    if (memory == nullptr) return fail(cudaErrorMemoryAllocation);
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        s.pinned[reinterpret_cast<std::uintptr_t>(memory)] = bytes;
    }
    *pointer = memory;
    bump(counters.malloc_calls);
    bump(counters.malloc_bytes, bytes);
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void* pointer) {
    if (pointer == nullptr) return cudaSuccess;
    const auto base = reinterpret_cast<std::uintptr_t>(pointer);
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        if (s.pinned.count(base) == 0) {
            report("free-unknown-pointer", "cudaFreeHost(%p): not an address cudaHostAlloc returned", pointer);
            return fail(cudaErrorInvalidValue);
        }
    }
    if (const cudaError_t refused = refuse_if_device_captures(-1, "cudaFreeHost", kHostWaits)) return refused;
    // Like cudaFree it waits for the device's work, here every device's: a queued copy may use it.
    for (std::size_t d = 0; d < state().devices.size(); ++d) synchronize_device(static_cast<int>(d));
    bump(counters.free_calls);
    count(Counted::HostSync);
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.pinned_in_flight.count(base) != 0) {
        report_fatal("free-while-in-use", "cudaFreeHost(%p) while a copy queued on a stream of another thread still "
                     "uses it", pointer);
    }
    s.pinned.erase(base);
    std::free(pointer);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
    *pointer = nullptr;
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    mark_context(tls_device);
    if (const cudaError_t refused = refuse_if_device_captures(tls_device, "cudaMalloc", "it may make the host wait for "
                                                             "the device, and a step allocates from its arenas only")) {
        return refused;
    }
    const std::size_t counted = counted_bytes(bytes), padded = padded_bytes(bytes);
    State& s = state();
    std::lock_guard lock(s.mutex);
    Device& device = s.devices[static_cast<std::size_t>(tls_device)];
    if (device.used_bytes + counted > device.capacity_bytes) {
        report("memory-limit", "cudaMalloc of %zu bytes on GPU:%d, which has %zu of its %zu bytes free", bytes,
               tls_device, device.capacity_bytes - device.used_bytes, device.capacity_bytes);
        return fail(cudaErrorMemoryAllocation);
    }
    const std::size_t pages_bytes = round_up(padded, s.page_bytes);
    if (s.next_address == 0 || s.end_address - s.next_address < counted + kGuardBytes ||
        s.storage_end - s.next_storage < pages_bytes + s.page_bytes) {
        std::fprintf(stderr, "CUDA emulation: the reserved device address range is used up\n");
        return fail(cudaErrorMemoryAllocation);
    }
    auto* pages = reinterpret_cast<unsigned char*>(s.next_storage);
    if (mprotect(pages, pages_bytes, PROT_READ | PROT_WRITE) != 0) return fail(cudaErrorMemoryAllocation);
    s.next_storage += pages_bytes + s.page_bytes;  // the page after stays inaccessible
    unsigned char* storage = pages + pages_bytes - padded;
    // Fresh device memory holds garbage, not zeros: all bits set (NaN as float, -1 as int), so
    // code that reads before it writes shows it in the results.
    std::memset(storage, 0xff, padded);
    device.used_bytes += counted;
    const std::uintptr_t address = s.next_address;
    s.next_address += round_up(counted + kGuardBytes, kAlignment);
    s.allocations[address] = Allocation{address, bytes, tls_device, storage, pages, pages_bytes};
    *pointer = reinterpret_cast<void*>(address);
    bump(counters.malloc_calls);
    bump(counters.malloc_bytes, bytes);
    return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
    if (pointer == nullptr) return cudaSuccess;
    int device = -1;
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
        if (it == s.allocations.end()) {
            report("free-unknown-pointer", "cudaFree(%p): not an address cudaMalloc returned (freed already, or "
                   "inside an allocation)", pointer);
            return fail(cudaErrorInvalidValue);
        }
        device = it->second.device;
    }
    if (const cudaError_t refused = refuse_if_device_captures(device, "cudaFree", kHostWaits)) return refused;
    synchronize_device(device);  // cudaFree waits for the device's work
    bump(counters.free_calls);
    count(Counted::HostSync);
    {
        // ...but not for other devices' streams: a peer copy queued there may still read the buffer.
        std::lock_guard queued(queued_mutex);
        for (const auto& [stream, uses] : queued_uses) {
            const auto use = uses.find(reinterpret_cast<std::uintptr_t>(pointer));
            if (use == uses.end()) continue;
            report_fatal("free-while-in-use", "cudaFree(%p) of GPU:%d while work queued on %s still %s it: cudaFree "
                         "waits for its own device's work only; synchronise that stream first", pointer, device,
                         describe_stream(stream).c_str(), use->second.writes ? "writes" : "reads");
        }
    }
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == s.allocations.end()) return fail(cudaErrorInvalidValue);  // freed by another thread meanwhile
    const Allocation& freed = it->second;
    s.devices[static_cast<std::size_t>(device)].used_bytes -= counted_bytes(freed.bytes);
    // Inaccessible again (anything still holding the storage address faults), and the memory goes back.
    mprotect(freed.pages, freed.pages_bytes, PROT_NONE);
    madvise(freed.pages, freed.pages_bytes, MADV_DONTNEED);
    s.freed.push_back(freed);
    if (s.freed.size() > kFreedRemembered) s.freed.pop_front();
    s.allocations.erase(it);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer) {
    *attributes = cudaPointerAttributes{};
    const int device = device_of_range(pointer, 0);
    if (device >= 0) {
        attributes->type = cudaMemoryTypeDevice;
        attributes->device = device;
        attributes->devicePointer = const_cast<void*>(pointer);
    } else if (pinned_base(pointer, 0) != 0) {
        attributes->type = cudaMemoryTypeHost;
        attributes->device = 0;
        attributes->devicePointer = const_cast<void*>(pointer);  // unified addressing
        attributes->hostPointer = const_cast<void*>(pointer);
    } else {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        attributes->hostPointer = const_cast<void*>(pointer);
    }
    return cudaSuccess;
}

namespace mirrorlab_emulation {
namespace {

// The copy's kind (cudaMemcpyDefault resolved), or cudaMemcpyDefault after reporting a copy that
// does not match where its pointers are or reaches outside an allocation.
cudaMemcpyKind checked_copy_kind(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    const bool dst_device = device_of_range(dst, 0) >= 0, src_device = device_of_range(src, 0) >= 0;
    if (kind == cudaMemcpyDefault) {
        kind = dst_device ? (src_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                          : (src_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    }
    // The kind must match where the pointers are, and a device range must lie inside one allocation.
    const bool dst_wants_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool src_wants_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (dst_wants_device != dst_device || src_wants_device != src_device) {
        report("copy-kind-mismatch", "cudaMemcpyAsync (kind %d) from %s %p to %s %p", static_cast<int>(kind),
               src_device ? "device memory" : "host memory", src, dst_device ? "device memory" : "host memory", dst);
        return cudaMemcpyDefault;
    }
    if ((dst_device && device_of_range(dst, bytes) < 0) || (src_device && device_of_range(src, bytes) < 0)) {
        report("copy-outside-allocation", "cudaMemcpyAsync of %zu bytes from %p to %p reaches past the end of an "
               "allocation", bytes, src, dst);
        return cudaMemcpyDefault;
    }
    return kind;
}

// A copy to or from pageable host memory during a capture: the driver stages it through the host
// (and a copy to the host returns once it is complete), which a graph cannot replay.
cudaError_t refuse_pageable_in_capture(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                                       cudaStream_t stream) {
    const bool pageable = kind == cudaMemcpyHostToHost ||
                          (kind == cudaMemcpyHostToDevice && pinned_base(src, bytes) == 0) ||
                          (kind == cudaMemcpyDeviceToHost && pinned_base(dst, bytes) == 0);
    if (!pageable) return cudaSuccess;
    return refuse_if_capturing(stream, "cudaMemcpyAsync to or from pageable host memory",
                               "a graph can copy to and from pinned memory (cudaHostAlloc) only");
}

cudaError_t issued_copy(Issued issued) {
    return count_issued(issued, Counted::Copy) ? cudaSuccess : cudaErrorStreamCaptureInvalidated;
}

cudaError_t copy_from_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
    if (const std::uintptr_t base = pinned_base(src, bytes)) {
        return issued_copy(queue_upload_from_pinned(dst, src, bytes, base, stream));
    }
    // Pageable source: copied to staging at once, so the caller may reuse it on return.
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + bytes);
    enqueue(
        stream, [to = device_to_host(dst), staged] { std::memcpy(to, staged->data(), staged->size()); },
        {Access{dst, true, bytes}});
    count(Counted::HostToDevicePageable);
    return cudaSuccess;
}

cudaError_t copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
    if (const std::uintptr_t base = pinned_base(dst, bytes)) {
        return issued_copy(queue_download_to_pinned(dst, src, bytes, base, stream));
    }
    // Pageable destination: the copy is complete when the call returns.
    drain(stream);
    check_host_read(src, bytes, "cudaMemcpyAsync to the host");
    std::memcpy(dst, device_to_host(src), bytes);
    count(Counted::HostSync);
    return cudaSuccess;
}

}  // namespace
}  // namespace mirrorlab_emulation

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    kind = checked_copy_kind(dst, src, bytes, kind);
    if (kind == cudaMemcpyDefault) return fail(cudaErrorInvalidValue);
    if (const cudaError_t refused = refuse_pageable_in_capture(dst, src, bytes, kind, stream)) return refused;
    switch (kind) {
        case cudaMemcpyHostToDevice: return copy_from_host(dst, src, bytes, stream);
        case cudaMemcpyDeviceToHost: return copy_to_host(dst, src, bytes, stream);
        case cudaMemcpyDeviceToDevice:
            if (overlapping(dst, src, bytes)) {  // undefined on a GPU
                report("overlapping-copy", "cudaMemcpyAsync of %zu bytes from %p to %p: the ranges overlap", bytes, src,
                       dst);
                return fail(cudaErrorInvalidValue);
            }
            return issued_copy(enqueue(
                stream, [to = device_to_host(dst), from = device_to_host(src), bytes] { std::memcpy(to, from, bytes); },
                {Access{src, false, bytes}, Access{dst, true, bytes}}));
        case cudaMemcpyHostToHost:
            drain(stream);
            std::memcpy(dst, src, bytes);
            count(Counted::HostSync);
            return cudaSuccess;
        case cudaMemcpyDefault: break;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                                cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    mark_context(dst_device);
    mark_context(src_device);
    if (device_of_range(dst, bytes) != dst_device || device_of_range(src, bytes) != src_device) {
        report("copy-outside-allocation", "cudaMemcpyPeerAsync of %zu bytes from %p (GPU:%d) to %p (GPU:%d) is not "
               "inside one allocation of each of those devices", bytes, src, src_device, dst, dst_device);
        return fail(cudaErrorInvalidValue);
    }
    if (overlapping(dst, src, bytes)) {
        report("overlapping-copy", "cudaMemcpyPeerAsync of %zu bytes from %p to %p: the ranges overlap", bytes, src,
               dst);
        return fail(cudaErrorInvalidValue);
    }
    return issued_copy(enqueue(
        stream, [to = device_to_host(dst), from = device_to_host(src), bytes] { std::memcpy(to, from, bytes); },
        {Access{src, false, bytes}, Access{dst, true, bytes}}));
}

cudaError_t cudaMemsetAsync(void* pointer, int value, std::size_t bytes, cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    if (device_of_range(pointer, bytes) < 0) {
        report("copy-outside-allocation", "cudaMemsetAsync of %zu bytes at %p is not inside one allocation", bytes,
               pointer);
        return fail(cudaErrorInvalidValue);
    }
    return issued_copy(enqueue(
        stream, [to = device_to_host(pointer), value, bytes] { std::memset(to, value, bytes); },
        {Access{pointer, true, bytes}}));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
    (void)flags;
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    if (injected_failure("cudaStreamCreateWithFlags")) return fail(cudaErrorMemoryAllocation);
    mark_context(tls_device);
    auto made = std::make_shared<Stream>();
    made->device = tls_device;
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.devices[static_cast<std::size_t>(tls_device)].streams[made.get()] = made;
    *stream = made.get();
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (stream == nullptr) return fail(cudaErrorInvalidResourceHandle);
    if (const cudaError_t refused = refuse_if_capturing(stream, "cudaStreamDestroy", kHostWaits)) return refused;
    drain(stream);  // queued work still completes
    State& s = state();
    std::lock_guard lock(s.mutex);
    auto& streams = s.devices[static_cast<std::size_t>(stream->device)].streams;
    if (streams.erase(stream) == 0) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    if (const cudaError_t refused = refuse_if_capturing(stream, "cudaStreamQuery", kHostWaits)) return refused;
    Stream* target = resolve(stream);
    bool stalled = false;
    drain_until(stream, [&] {  // called with the stream's mutex held
        const auto& front = target->pending.front();
        stalled = front.stalled && front.stalled->load();
        return stalled;
    });
    if (stalled) return cudaErrorNotReady;
    count(Counted::HostSync);  // the poll that finds the work done ends a wait, as a synchronisation does
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    if (const cudaError_t refused = refuse_if_capturing(stream, "cudaStreamSynchronize", kHostWaits)) return refused;
    drain(stream);
    count(Counted::HostSync);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
    (void)flags;
    mark_context(tls_device);
    auto made = std::make_shared<Event>();
    std::lock_guard lock(events_mutex);
    events[made.get()] = made;
    *event = made.get();
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    std::lock_guard lock(events_mutex);
    return events.erase(event) == 1 ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

namespace mirrorlab_emulation {
namespace {

cudaError_t record_event(cudaEvent_t event, cudaStream_t stream, bool external) {
    const std::shared_ptr<Event> shared = find_event(event);
    if (shared == nullptr) return fail(cudaErrorInvalidResourceHandle);
    Stream* target = resolve(stream);
    if (const std::optional<cudaError_t> captured = record_in_capture(shared, target, external)) return *captured;
    count(Counted::EventCall);
    std::function<void()> complete = mark_recorded(shared, target);
    // On a GPU an event recorded on an idle stream is reached at once; here too, so that the time
    // between two marks around host-side work (an all-reduce on other streams) is that work's time.
    std::lock_guard lock(target->mutex);
    if (target->pending.empty()) {
        complete();
    } else {
        target->pending.push_back(Work{std::move(complete), {}});
    }
    return cudaSuccess;
}

}  // namespace
}  // namespace mirrorlab_emulation

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { return record_event(event, stream, false); }

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned flags) {
    if (flags != cudaEventRecordDefault && flags != cudaEventRecordExternal) return fail(cudaErrorInvalidValue);
    return record_event(event, stream, flags == cudaEventRecordExternal);
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
    const std::shared_ptr<Event> start_event = find_event(start), end_event = find_event(end);
    if (start_event == nullptr || end_event == nullptr) return fail(cudaErrorInvalidResourceHandle);
    for (const auto& event : {start_event, end_event}) {
        if (const cudaError_t refused = refuse_captured_event(event, "cudaEventElapsedTime")) return refused;
    }
    auto snapshot = [](Event* event) {
        std::lock_guard lock(event->mutex);
        return std::tuple(event->recorded, event->done, event->at);
    };
    const auto [start_recorded, start_done, start_at] = snapshot(start);
    const auto [end_recorded, end_done, end_at] = snapshot(end);
    if (!start_recorded || !end_recorded) return fail(cudaErrorInvalidResourceHandle);
    if (!start_done || !end_done) return fail(cudaErrorNotReady);
    *milliseconds = std::chrono::duration<float, std::milli>(end_at - start_at).count();
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    const std::shared_ptr<Event> shared = find_event(event);
    if (shared == nullptr) return fail(cudaErrorInvalidResourceHandle);
    if (const cudaError_t refused = refuse_captured_event(shared, "cudaEventSynchronize")) return refused;
    run_until_reached(shared, nullptr);
    count(Counted::HostSync);
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    const std::shared_ptr<Event> shared = find_event(event);
    if (shared == nullptr) return fail(cudaErrorInvalidResourceHandle);
    if (const cudaError_t refused = refuse_captured_event(shared, "cudaEventQuery")) return refused;
    // Work here runs only when something waits for it: an event behind queued work stays not
    // ready until then, which is what a host that polls instead of waiting must be ready for.
    std::lock_guard lock(shared->mutex);
    return !shared->recorded || shared->done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
    const std::shared_ptr<Event> shared = find_event(event);
    if (shared == nullptr || flags != 0) return fail(cudaErrorInvalidResourceHandle);
    if (const auto captured = wait_in_capture(shared, resolve(stream), stream == nullptr)) {
        if (*captured == cudaSuccess) count(Counted::EventCall);
        return *captured;
    }
    count(Counted::EventCall);
    // Later work on `stream` must follow the recorded stream's work up to the event: running that
    // work now gives exactly that order (and clears its queued uses, so nothing after the event is
    // seen as a race; work recorded after the event still is).
    run_until_reached(shared, resolve(stream));
    return cudaSuccess;
}

void mirrorlab_emulation_counters(MirrorlabEmulationCounters* out) {
    const auto read = [](const std::atomic<std::uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
    *out = MirrorlabEmulationCounters{};
    out->kernel_launches = read(counters.kernel_launches);
    out->library_launches = read(counters.library_launches);
    out->copies = read(counters.copies);
    out->host_to_device_pageable = read(counters.host_to_device_pageable);
    out->host_syncs = read(counters.host_syncs);
    out->graph_launches = read(counters.graph_launches);
    out->graph_nodes_launched = read(counters.graph_nodes_launched);
    out->captured_nodes = read(counters.captured_nodes);
    out->event_calls = read(counters.event_calls);
    out->malloc_calls = read(counters.malloc_calls);
    out->malloc_bytes = read(counters.malloc_bytes);
    out->free_calls = read(counters.free_calls);
}

void mirrorlab_emulation_reset_counters() {
    for (auto* counter : {&counters.kernel_launches, &counters.library_launches, &counters.copies,
                          &counters.host_to_device_pageable, &counters.host_syncs, &counters.graph_launches,
                          &counters.graph_nodes_launched, &counters.captured_nodes, &counters.event_calls,
                          &counters.malloc_calls, &counters.malloc_bytes, &counters.free_calls}) {
        counter->store(0, std::memory_order_relaxed);
    }
}

std::uint64_t mirrorlab_emulation_context_devices() { return context_devices.load(std::memory_order_relaxed); }

int mirrorlab_emulation_peer_enabled(int device, int peer) {
    if (!valid_device(device) || !valid_device(peer)) return 0;
    State& s = state();
    std::lock_guard lock(s.mutex);
    return s.devices[static_cast<std::size_t>(device)].peers_enabled.count(peer) > 0 ? 1 : 0;
}
