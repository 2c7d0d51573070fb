#pragma once
// The training input pipeline: tf.data's shuffle(buffer, reshuffle_each_iteration=True)
// -> batch(B) (last partial batch kept) -> prefetch(n), over data already padded to a matrix.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/data/sequence.h"

namespace mirrorlab {

struct Batch {
    int64_t step = 0;  // 0-based within the epoch
    int32_t size = 0;  // samples in this batch; the last one of an epoch may be smaller
    int32_t sequence_length = 0;
    std::vector<int32_t> ids;     // size x sequence_length, row-major
    std::vector<int32_t> labels;  // size
};

struct PipelineOptions {
    int32_t batch_size = 32;
    bool shuffle = true;
    // Elements held by the shuffle buffer; 0 = the whole data set (a uniform permutation).
    int64_t shuffle_buffer_size = 0;
    uint64_t seed = 0;
    // Batches prepared ahead on a producer thread; 0 = produce on the caller's thread.
    int32_t prefetch_batches = 2;
};

// One consumer thread calls start_epoch() and next(); any thread may call cancel().
// Shuffling follows tf.data's buffer: the first K elements fill a buffer, then each output is
// a random slot of it, refilled with the next element of the stream; at the end the buffer
// drains in random order. So an element never leaves more than K - 1 places before its
// position, and K >= count gives a uniform shuffle. The order is a function of (seed, epoch)
// alone, so a run can be repeated and mirrored replicas agree.
class Pipeline {
  public:
    // Throws DataError for a missing input, sizes that do not match, batch_size <= 0,
    // a negative shuffle buffer or prefetch count.
    Pipeline(std::shared_ptr<const PaddedSequences> ids,
             std::shared_ptr<const std::vector<int32_t>> labels, PipelineOptions options);
    ~Pipeline();  // cancels and joins the producer, also when the consumer stopped reading
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    int64_t steps_per_epoch() const;  // ceil(count / batch_size)
    int64_t sample_count() const;
    const PipelineOptions& options() const { return options_; }

    // Stops an epoch still running, fixes the order for `epoch` and starts producing.
    void start_epoch(int32_t epoch);
    // The next batch; blocks while the producer is behind. nullopt at the end of the epoch or
    // after cancel(). A producer exception is rethrown here, after the batches made before it.
    // Throws DataError if no epoch was started.
    std::optional<Batch> next();
    // Hands a batch's buffers back for a later batch: a consumer that recycles every batch keeps
    // the pipeline from allocating in the steady state. Optional; thread-safe.
    void recycle(Batch&& batch);
    // Stops the current epoch now and wakes a blocked next(). Thread-safe; a later
    // start_epoch() starts afresh.
    void cancel();

    // The sample order of an epoch (indices into the data), as next() will deliver it.
    std::vector<int64_t> epoch_order(int32_t epoch) const;

  private:
    void fill_batch(int64_t step, Batch& batch) const;  // reuses batch's buffers
    Batch take_spare();
    void produce();
    void stop_producer();

    std::shared_ptr<const PaddedSequences> ids_;
    std::shared_ptr<const std::vector<int32_t>> labels_;
    PipelineOptions options_;

    // Written by start_epoch() only while no producer runs; read-only while one does.
    std::vector<int64_t> order_;
    bool epoch_started_ = false;
    int64_t next_step_ = 0;  // consumer-thread production (prefetch_batches == 0)

    std::mutex mutex_;
    std::condition_variable not_empty_;  // a batch arrived, production ended or cancel()
    std::condition_variable not_full_;   // room in the queue or cancel()
    // The prefetched batches, a ring of prefetch_batches slots (a deque would allocate a node
    // every few batches).
    std::vector<Batch> queue_;
    size_t queue_head_ = 0, queue_size_ = 0;
    std::vector<Batch> spare_;  // recycled batches, their buffers ready for reuse
    size_t max_spares_ = 0;     // the batches that can be in flight at once
    bool producer_done_ = false;
    bool cancelled_ = false;
    std::exception_ptr error_;
    std::thread producer_;
};

}  // namespace mirrorlab
