// The emulated CUDA runtime: devices, memory, streams, events (see include/cuda_runtime.h).
//
// Configuration, read once from the environment:
//   MIRRORLAB_CUDA_EMULATION_GPUS        number of GPUs (default 2; 0: "no CUDA-capable device")
//   MIRRORLAB_CUDA_EMULATION_MEMORY_MIB  memory of each GPU (default 4096)
//   MIRRORLAB_CUDA_EMULATION_OTHER_MIB   memory of each GPU that other programs hold (default 0)
//   MIRRORLAB_CUDA_EMULATION_DRIVER      "none": behave as a machine without a driver
//   MIRRORLAB_CUDA_EMULATION_FAIL        API calls that fail, e.g. "cudnnCreate,ncclCommInitAll"
//   MIRRORLAB_CUDA_EMULATION_CUDNN       the cuDNN version the library reports (default: the header's)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include <sys/mman.h>

#include "emulator.h"

thread_local dim3 threadIdx;
thread_local dim3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace mirrorlab_emulation {

struct Stream {
    int device = 0;
    std::mutex mutex;
    std::deque<std::function<void()>> pending;
};

struct Event {
    std::mutex mutex;
    std::uint64_t generation = 0;  // which record() the pending completion belongs to
    bool recorded = false;
    bool done = false;
    std::chrono::steady_clock::time_point at;
};

namespace {

constexpr std::size_t kAlignment = 256;

struct Allocation {
    std::size_t bytes = 0;
    int device = 0;
    unsigned char* storage = nullptr;  // where the bytes really are (host memory)
};

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

struct State {
    std::mutex mutex;
    bool driver = true;
    std::uintptr_t next_address = 0, end_address = 0;
    std::vector<Device> devices;
    std::map<std::uintptr_t, Allocation> allocations;  // by base address
};

long env_number(const char* name, long fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    return end != nullptr && *end == '\0' && value >= 0 ? value : fallback;
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
        void* range = mmap(nullptr, kAddressRangeBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (range != MAP_FAILED) {
            made->next_address = reinterpret_cast<std::uintptr_t>(range);
            made->end_address = made->next_address + kAddressRangeBytes;
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

void synchronize_device(int device) {
    std::vector<std::shared_ptr<Stream>> streams;
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        Device& d = s.devices[static_cast<std::size_t>(device)];
        for (const auto& entry : d.streams) streams.push_back(entry.second);
        streams.push_back(d.default_stream);
    }
    for (const auto& stream : streams) drain(stream.get());
}

bool overlapping(const void* a, const void* b, std::size_t bytes) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    return x < y + bytes && y < x + bytes;
}

cudaError_t no_driver_or(cudaError_t otherwise) { return state().driver ? otherwise : fail(cudaErrorInsufficientDriver); }

}  // namespace

cudaError_t fail(cudaError_t error) {
    tls_last_error = error;
    return error;
}

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

Stream* resolve(cudaStream_t stream) {
    if (stream != nullptr) return stream;
    return state().devices[static_cast<std::size_t>(tls_device)].default_stream.get();
}

int stream_device(cudaStream_t stream) { return resolve(stream)->device; }

void drain(cudaStream_t stream) {
    Stream* target = resolve(stream);
    std::lock_guard lock(target->mutex);
    while (!target->pending.empty()) {
        std::function<void()> work = std::move(target->pending.front());
        target->pending.pop_front();
        work();
    }
}

void enqueue(cudaStream_t stream, std::function<void()> work) {
    Stream* target = resolve(stream);
    std::lock_guard lock(target->mutex);
    target->pending.push_back(std::move(work));
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
        fail(cudaErrorInvalidConfiguration);
        return false;
    }
    if (resolve(stream)->device != tls_device) {
        // Launching on another device's stream: the runtime refuses it.
        fail(cudaErrorInvalidResourceHandle);
        return false;
    }
    return true;
}

bool check_kernel_pointer(cudaStream_t stream, const void* pointer) {
    if (device_of_range(pointer, 0) == resolve(stream)->device) return true;
    std::fprintf(stderr, "CUDA emulation: a kernel got %p, which is not device memory of GPU:%d\n", pointer,
                 resolve(stream)->device);
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
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    synchronize_device(tls_device);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    State& s = state();
    std::lock_guard lock(s.mutex);
    const Device& device = s.devices[static_cast<std::size_t>(tls_device)];
    *free_bytes = device.capacity_bytes - device.used_bytes;
    *total_bytes = device.capacity_bytes;
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
    }
    return "unknown error";
}

cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
    *pointer = nullptr;
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    State& s = state();
    std::lock_guard lock(s.mutex);
    Device& device = s.devices[static_cast<std::size_t>(tls_device)];
    if (device.used_bytes + rounded > device.capacity_bytes) return fail(cudaErrorMemoryAllocation);
    if (s.next_address == 0 || s.end_address - s.next_address < rounded + kGuardBytes) {
        std::fprintf(stderr, "CUDA emulation: the reserved device address range is used up\n");
        return fail(cudaErrorMemoryAllocation);
    }
    auto* storage = static_cast<unsigned char*>(std::aligned_alloc(kAlignment, rounded));
    if (storage == nullptr) return fail(cudaErrorMemoryAllocation);
    // Fresh device memory holds garbage, not zeros: all bits set (NaN as float, -1 as int), so
    // code that reads before it writes shows it in the results.
    std::memset(storage, 0xff, rounded);
    device.used_bytes += rounded;
    const std::uintptr_t address = s.next_address;
    s.next_address += (rounded + kGuardBytes + kAlignment - 1) / kAlignment * kAlignment;
    s.allocations[address] = Allocation{bytes, tls_device, storage};
    *pointer = reinterpret_cast<void*>(address);
    return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
    if (pointer == nullptr) return cudaSuccess;
    int device = -1;
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
        if (it == s.allocations.end()) return fail(cudaErrorInvalidValue);
        device = it->second.device;
    }
    synchronize_device(device);  // cudaFree waits for the device's work
    State& s = state();
    std::lock_guard lock(s.mutex);
    const auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == s.allocations.end()) return fail(cudaErrorInvalidValue);  // freed by another thread meanwhile
    const std::size_t rounded = (std::max<std::size_t>(it->second.bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    s.devices[static_cast<std::size_t>(device)].used_bytes -= rounded;
    std::free(it->second.storage);
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
    } else {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        attributes->hostPointer = const_cast<void*>(pointer);
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    const bool dst_device = device_of_range(dst, 0) >= 0, src_device = device_of_range(src, 0) >= 0;
    if (kind == cudaMemcpyDefault) {
        kind = dst_device ? (src_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                          : (src_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
    }
    // The kind must match where the pointers are, and a device range must lie inside one allocation.
    const bool dst_ok = (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
                            ? device_of_range(dst, bytes) >= 0
                            : !dst_device;
    const bool src_ok = (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice)
                            ? device_of_range(src, bytes) >= 0
                            : !src_device;
    if (!dst_ok || !src_ok) {
        std::fprintf(stderr, "CUDA emulation: cudaMemcpyAsync of %zu bytes from %p to %p (kind %d) is outside device memory\n",
                     bytes, src, dst, static_cast<int>(kind));
        return fail(cudaErrorInvalidValue);
    }
    switch (kind) {
        case cudaMemcpyHostToDevice: {
            // Pageable source: copied to staging at once, so the caller may reuse it on return.
            auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                                       static_cast<const unsigned char*>(src) + bytes);
            enqueue(stream, [to = device_to_host(dst), staged] { std::memcpy(to, staged->data(), staged->size()); });
            break;
        }
        case cudaMemcpyDeviceToHost:
            // Pageable destination: the copy is complete when the call returns.
            drain(stream);
            std::memcpy(dst, device_to_host(src), bytes);
            break;
        case cudaMemcpyDeviceToDevice:
            if (overlapping(dst, src, bytes)) return fail(cudaErrorInvalidValue);  // undefined on a GPU
            enqueue(stream, [to = device_to_host(dst), from = device_to_host(src), bytes] { std::memcpy(to, from, bytes); });
            break;
        case cudaMemcpyHostToHost:
            drain(stream);
            std::memcpy(dst, src, bytes);
            break;
        case cudaMemcpyDefault: break;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                                cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    if (device_of_range(dst, bytes) != dst_device || device_of_range(src, bytes) != src_device) {
        std::fprintf(stderr, "CUDA emulation: cudaMemcpyPeerAsync of %zu bytes from %p (GPU:%d) to %p (GPU:%d) is "
                     "outside those devices' memory\n", bytes, src, src_device, dst, dst_device);
        return fail(cudaErrorInvalidValue);
    }
    if (overlapping(dst, src, bytes)) return fail(cudaErrorInvalidValue);
    enqueue(stream, [to = device_to_host(dst), from = device_to_host(src), bytes] { std::memcpy(to, from, bytes); });
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* pointer, int value, std::size_t bytes, cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    if (device_of_range(pointer, bytes) < 0) {
        std::fprintf(stderr, "CUDA emulation: cudaMemsetAsync of %zu bytes at %p is outside device memory\n", bytes, pointer);
        return fail(cudaErrorInvalidValue);
    }
    enqueue(stream, [to = device_to_host(pointer), value, bytes] { std::memset(to, value, bytes); });
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
    (void)flags;
    if (!valid_device(tls_device)) return no_driver_or(fail(cudaErrorInvalidDevice));
    if (injected_failure("cudaStreamCreateWithFlags")) return fail(cudaErrorMemoryAllocation);
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
    drain(stream);  // queued work still completes
    State& s = state();
    std::lock_guard lock(s.mutex);
    auto& streams = s.devices[static_cast<std::size_t>(stream->device)].streams;
    if (streams.erase(stream) == 0) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    drain(stream);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
    (void)flags;
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

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    std::shared_ptr<Event> shared;
    {
        std::lock_guard lock(events_mutex);
        const auto it = events.find(event);
        if (it == events.end()) return fail(cudaErrorInvalidResourceHandle);
        shared = it->second;
    }
    std::uint64_t generation = 0;
    {
        std::lock_guard lock(event->mutex);
        generation = ++event->generation;
        event->recorded = true;
        event->done = false;
    }
    auto complete = [shared, generation] {
        std::lock_guard lock(shared->mutex);
        if (shared->generation != generation) return;  // recorded again since
        shared->done = true;
        shared->at = std::chrono::steady_clock::now();
    };
    // On a GPU an event recorded on an idle stream is reached at once; here too, so that the time
    // between two marks around host-side work (an all-reduce on other streams) is that work's time.
    Stream* target = resolve(stream);
    std::lock_guard lock(target->mutex);
    if (target->pending.empty()) {
        complete();
    } else {
        target->pending.push_back(std::move(complete));
    }
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
    if (start == nullptr || end == nullptr) return fail(cudaErrorInvalidResourceHandle);
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
