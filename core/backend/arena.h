#pragma once
// A logical device's memory arena: every tensor of a replica is allocated here, so the limit a
// person sets for a (virtual) device is enforced on everything that replica holds, and the UI can
// show bytes in use, peak and limit per device.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mirrorlab {

// Where the arena's blocks come from: host memory for CPU devices, device memory for GPUs.
class RawAllocator {
public:
    virtual ~RawAllocator() = default;
    virtual void* allocate_raw(std::int64_t bytes) = 0;  // nullptr when the system has no memory
    virtual void free_raw(void* pointer) = 0;
    // After allocate_raw refused `bytes` for `what`: the sentence that says so and what to do, for
    // the out-of-memory message ("the system refused 16.4 MiB for ... Close other programs ...").
    virtual std::string refusal(std::int64_t bytes, std::string_view what) const;
};

// 64-byte aligned host memory.
class HostAllocator final : public RawAllocator {
public:
    void* allocate_raw(std::int64_t bytes) override;
    void free_raw(void* pointer) override;
};

struct MemoryStats {
    std::int64_t bytes_in_use = 0;       // live tensors
    std::int64_t peak_bytes_in_use = 0;  // since creation or the last reset_peak()
    std::int64_t limit_bytes = 0;        // 0 = no limit (memory growth / whole device)
    std::int64_t bytes_reserved = 0;     // in use + cached for reuse
    std::int64_t allocation_count = 0;   // live tensors
    std::int64_t raw_allocation_calls = 0;  // how often the arena asked the system (steady state: flat)
};

class MemoryArena {
public:
    // `limit_bytes` 0 means unlimited. The arena does not own `raw` when it is passed in.
    MemoryArena(std::string device_name, std::int64_t limit_bytes,
                std::shared_ptr<RawAllocator> raw = std::make_shared<HostAllocator>());
    ~MemoryArena();
    MemoryArena(const MemoryArena&) = delete;
    MemoryArena& operator=(const MemoryArena&) = delete;

    // Throws OutOfMemoryError naming the device, its limit, the request and `what` when the live
    // bytes would exceed the limit. Freed blocks are cached by size, so a training loop that
    // allocates the same shapes every step stops calling the system after the first step.
    void* allocate(std::int64_t bytes, std::string_view what);
    void deallocate(void* pointer) noexcept;

    MemoryStats stats() const;
    void reset_peak();
    const std::string& device_name() const { return device_name_; }
    std::int64_t limit_bytes() const { return limit_bytes_; }

    static std::int64_t rounded_size(std::int64_t bytes);

private:
    void release_cache_locked();

    std::string device_name_;
    std::int64_t limit_bytes_ = 0;
    std::shared_ptr<RawAllocator> raw_;
    mutable std::mutex mutex_;
    std::unordered_map<void*, std::int64_t> live_;    // pointer -> rounded size
    std::multimap<std::int64_t, void*> cached_;       // rounded size -> free block
    MemoryStats stats_;
};

std::string format_bytes(std::int64_t bytes);  // "1.00 GiB", "512.0 MiB", "12.3 KiB", "17 B"

}  // namespace mirrorlab
