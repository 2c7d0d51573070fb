#include "core/backend/arena.h"

#include <cstdio>
#include <cstdlib>

#include "core/util/error.h"

namespace mirrorlab {

namespace {
constexpr std::int64_t kAlignment = 64;
}

void* HostAllocator::allocate_raw(std::int64_t bytes) {
    return std::aligned_alloc(kAlignment, static_cast<std::size_t>(MemoryArena::rounded_size(bytes)));
}

void HostAllocator::free_raw(void* pointer) { std::free(pointer); }

std::string format_bytes(std::int64_t bytes) {
    char text[64];
    const double value = static_cast<double>(bytes);
    if (bytes >= (std::int64_t{1} << 30)) {
        std::snprintf(text, sizeof text, "%.2f GiB", value / (1 << 30));
    } else if (bytes >= (1 << 20)) {
        std::snprintf(text, sizeof text, "%.1f MiB", value / (1 << 20));
    } else if (bytes >= (1 << 10)) {
        std::snprintf(text, sizeof text, "%.1f KiB", value / (1 << 10));
    } else {
        std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
    }
    return text;
}

MemoryArena::MemoryArena(std::string device_name, std::int64_t limit_bytes,
                         std::shared_ptr<RawAllocator> raw)
    : device_name_(std::move(device_name)), limit_bytes_(limit_bytes), raw_(std::move(raw)) {
    stats_.limit_bytes = limit_bytes_;
}

MemoryArena::~MemoryArena() {
    std::lock_guard lock(mutex_);
    release_cache_locked();
    // Tensors outliving their arena would be a bug; free their blocks rather than leak them.
    for (auto& [pointer, size] : live_) raw_->free_raw(pointer);
}

std::int64_t MemoryArena::rounded_size(std::int64_t bytes) {
    if (bytes <= 0) return kAlignment;
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

void MemoryArena::release_cache_locked() {
    for (auto& [size, pointer] : cached_) {
        raw_->free_raw(pointer);
        stats_.bytes_reserved -= size;
    }
    cached_.clear();
}

std::string RawAllocator::refusal(std::int64_t bytes, std::string_view what) const {
    return "the system refused " + format_bytes(bytes) + " for " + std::string(what) +
           ". Close other programs or lower the batch size.";
}

void* MemoryArena::allocate(std::int64_t bytes, std::string_view what) {
    const std::int64_t size = rounded_size(bytes);
    std::lock_guard lock(mutex_);
    if (limit_bytes_ > 0 && stats_.bytes_in_use + size > limit_bytes_) {
        throw OutOfMemoryError(
            "out of memory on " + device_name_ + ": allocating " + format_bytes(bytes) + " for " +
            std::string(what) + " would exceed the device's limit of " + format_bytes(limit_bytes_) +
            " (" + format_bytes(stats_.bytes_in_use) + " already in use). Raise the memory limit " +
            "of this device, use fewer virtual devices per GPU, or lower the batch size.");
    }
    void* pointer = nullptr;
    if (auto it = cached_.find(size); it != cached_.end()) {
        pointer = it->second;
        cached_.erase(it);
    } else {
        // Keep the reserved total under the limit too, so a device limit bounds real memory.
        if (limit_bytes_ > 0 && stats_.bytes_reserved + size > limit_bytes_) release_cache_locked();
        pointer = raw_->allocate_raw(size);
        if (pointer == nullptr && !cached_.empty()) {
            release_cache_locked();
            pointer = raw_->allocate_raw(size);
        }
        if (pointer == nullptr) {
            std::string reason;
            try {
                reason = raw_->refusal(bytes, what);
            } catch (const std::exception&) {
                reason = raw_->RawAllocator::refusal(bytes, what);  // still an out-of-memory error
            }
            throw OutOfMemoryError("out of memory on " + device_name_ + ": " + reason);
        }
        stats_.bytes_reserved += size;
        ++stats_.raw_allocation_calls;
    }
    live_.emplace(pointer, size);
    stats_.bytes_in_use += size;
    ++stats_.allocation_count;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
    return pointer;
}

void MemoryArena::deallocate(void* pointer) noexcept {
    if (pointer == nullptr) return;
    std::lock_guard lock(mutex_);
    auto it = live_.find(pointer);
    if (it == live_.end()) return;
    stats_.bytes_in_use -= it->second;
    --stats_.allocation_count;
    cached_.emplace(it->second, pointer);
    live_.erase(it);
}

MemoryStats MemoryArena::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void MemoryArena::reset_peak() {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

}  // namespace mirrorlab
