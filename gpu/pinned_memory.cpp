#include "gpu/pinned_memory.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace mirrorlab::cuda {

PinnedBuffer::~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
}

void* PinnedBuffer::reserve(std::size_t bytes, std::string_view op) {
    if (bytes <= bytes_ && data_ != nullptr) return data_;
    use_device(device_, op);
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    bytes_ = 0;
    const std::size_t rounded = (std::max<std::size_t>(bytes, 4096) + 4095) / 4096 * 4096;
    check(cudaHostAlloc(&data_, rounded, cudaHostAllocDefault), op,
          "cudaHostAlloc of " + std::to_string(rounded) + " pinned bytes", device_);
    bytes_ = rounded;
    return data_;
}

bool PinnedUploadRing::upload(void* dst, const void* host, std::size_t bytes, cudaStream_t stream,
                              std::string_view op) {
    if (bytes > kLargestUpload) return false;
    auto* ring = static_cast<unsigned char*>(ring_.reserve(kRingBytes, op));
    constexpr std::size_t kAlignment = 256;
    std::size_t begin = (head_ + kAlignment - 1) / kAlignment * kAlignment;
    if (begin + bytes > kRingBytes) begin = 0;
    const Region region{begin, begin + bytes};
    // Come round to a copy the stream may not have run yet: wait for it (never in a steady step,
    // which drains the stream at its end long before the ring comes round).
    for (const Region& queued : in_flight_) {
        if (queued.begin < region.end && region.begin < queued.end) {
            check(cudaStreamSynchronize(stream), op, "cudaStreamSynchronize", device_);
            in_flight_.clear();
            break;
        }
    }
    std::memcpy(ring + begin, host, bytes);
    check(cudaMemcpyAsync(dst, ring + begin, bytes, cudaMemcpyHostToDevice, stream), op, "cudaMemcpyAsync", device_);
    in_flight_.push_back(region);
    head_ = region.end;
    return true;
}

}  // namespace mirrorlab::cuda
