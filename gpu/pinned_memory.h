#pragma once
// Page-locked host memory for the CUDA backend's traffic with the host (issue #21). A copy from
// pageable memory is staged by the driver, and one to pageable memory returns only once complete:
// each is a hidden wait. From pinned memory the copy is a DMA queued on the stream like a kernel,
// so the step's uploads and its one read-back cost the host no wait of their own.
#include <cuda_runtime.h>

#include <cstddef>
#include <deque>
#include <string_view>

#include "gpu/cuda_handles.h"

namespace mirrorlab::cuda {

// One block of pinned memory (cudaHostAlloc) that grows and never shrinks, contents not kept.
class PinnedBuffer : NonCopyable {
public:
    explicit PinnedBuffer(int device) : device_(device) {}
    ~PinnedBuffer();
    // Only while no queued copy uses the block (growing frees it).
    void* reserve(std::size_t bytes, std::string_view op);
    void* get() const { return data_; }

private:
    int device_ = 0;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

// Uploads through a ring of pinned memory on one stream: the host's bytes are copied into the
// ring and the copy to the device is queued, so upload() returns at once and the caller may reuse
// its own memory. The ring holds many steps' batches (the tutorial's shard is 19 KB of ids), so
// the next batch's copy lands beside the ones still in flight, never over them: double buffering
// with room to spare. Only when the ring comes round to a region whose copy the stream may not have
// run yet does it wait for the stream; a backend that waits for its stream every step (the step's
// one read-back) tells the ring so, and then it never waits.
class PinnedUploadRing : NonCopyable {
public:
    static constexpr std::size_t kRingBytes = std::size_t{1} << 20;
    // Larger uploads (a model's weights, at start-up) take the pageable path with a wait instead
    // of pinning more memory than a step needs.
    static constexpr std::size_t kLargestUpload = kRingBytes / 4;

    explicit PinnedUploadRing(int device) : device_(device), ring_(device) {}
    // Queues the copy of `bytes` from `host` to device memory `dst` on `stream`; false (and nothing
    // queued) when `bytes` exceeds kLargestUpload.
    bool upload(void* dst, const void* host, std::size_t bytes, cudaStream_t stream, std::string_view op);
    // Everything queued on the stream so far has run (the backend just waited for it).
    void stream_drained() { in_flight_.clear(); }

private:
    struct Region {
        std::size_t begin = 0, end = 0;
    };
    int device_ = 0;
    PinnedBuffer ring_;
    std::size_t head_ = 0;
    std::deque<Region> in_flight_;  // uploads queued since the stream was last drained, oldest first
};

}  // namespace mirrorlab::cuda
