#include "core/data/pipeline.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/data/dataset.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

void check(bool ok, const std::string& problem) {
    if (!ok) throw DataError("[pipeline] " + problem);
}

}  // namespace

Pipeline::Pipeline(std::shared_ptr<const PaddedSequences> ids,
                   std::shared_ptr<const std::vector<int32_t>> labels, PipelineOptions options)
    : ids_(std::move(ids)), labels_(std::move(labels)), options_(options) {
    check(ids_ != nullptr, "no token ids given");
    check(labels_ != nullptr, "no labels given");
    check(options_.batch_size > 0,
          "batch_size is " + std::to_string(options_.batch_size) + ", must be > 0");
    check(options_.shuffle_buffer_size >= 0, "shuffle_buffer_size is " +
                                                 std::to_string(options_.shuffle_buffer_size) +
                                                 ", must be >= 0 (0 = the whole data set)");
    check(options_.prefetch_batches >= 0,
          "prefetch_batches is " + std::to_string(options_.prefetch_batches) + ", must be >= 0");
    check(ids_->count >= 0 && ids_->length > 0, "padded sequences have count " +
                                                    std::to_string(ids_->count) + " and length " +
                                                    std::to_string(ids_->length));
    check(ids_->ids.size() == static_cast<size_t>(ids_->count) * static_cast<size_t>(ids_->length),
          "padded sequences hold " + std::to_string(ids_->ids.size()) +
              " ids, expected count x length = " + std::to_string(ids_->count) + " x " +
              std::to_string(ids_->length));
    check(labels_->size() == static_cast<size_t>(ids_->count),
          std::to_string(ids_->count) + " sequences but " + std::to_string(labels_->size()) +
              " labels; they must match");
    // Every batch that can be in flight at once (the queue, one being filled, one with the
    // consumer) is allocated here; recycled, they carry every later batch.
    queue_.resize(static_cast<size_t>(options_.prefetch_batches));
    const size_t in_flight = static_cast<size_t>(options_.prefetch_batches) + 2;
    max_spares_ = in_flight;
    spare_.resize(in_flight);
    for (Batch& batch : spare_) {
        batch.ids.reserve(static_cast<size_t>(options_.batch_size) * static_cast<size_t>(ids_->length));
        batch.labels.reserve(static_cast<size_t>(options_.batch_size));
    }
}

Pipeline::~Pipeline() {
    stop_producer();
}

int64_t Pipeline::sample_count() const {
    return ids_->count;
}

int64_t Pipeline::steps_per_epoch() const {
    return (ids_->count + options_.batch_size - 1) / options_.batch_size;
}

std::vector<int64_t> Pipeline::epoch_order(int32_t epoch) const {
    const int64_t n = ids_->count;
    std::vector<int64_t> order;
    order.reserve(static_cast<size_t>(n));
    if (!options_.shuffle) {
        for (int64_t i = 0; i < n; ++i) order.push_back(i);
        return order;
    }
    // Seed from (seed, epoch) only: reshuffle_each_iteration, yet reproducible.
    DataRandom rng(DataRandom::mix(options_.seed) ^
                   DataRandom::mix(0xE90C0000ull + static_cast<uint32_t>(epoch)));
    const int64_t capacity =
        options_.shuffle_buffer_size == 0 ? n : std::min(options_.shuffle_buffer_size, n);
    std::vector<int64_t> buffer;
    buffer.reserve(static_cast<size_t>(capacity));
    int64_t next_in = 0;
    while (next_in < n && static_cast<int64_t>(buffer.size()) < capacity)
        buffer.push_back(next_in++);
    while (!buffer.empty()) {
        const size_t slot = rng.below(buffer.size());
        order.push_back(buffer[slot]);
        if (next_in < n) {
            buffer[slot] = next_in++;
        } else {
            buffer[slot] = buffer.back();
            buffer.pop_back();
        }
    }
    return order;
}

void Pipeline::fill_batch(int64_t step, Batch& batch) const {
    const int64_t first = step * options_.batch_size;
    const auto width = static_cast<size_t>(ids_->length);
    batch.step = step;
    batch.size = static_cast<int32_t>(std::min<int64_t>(options_.batch_size, ids_->count - first));
    batch.sequence_length = ids_->length;
    batch.ids.resize(static_cast<size_t>(batch.size) * width);
    batch.labels.resize(static_cast<size_t>(batch.size));
    for (int32_t r = 0; r < batch.size; ++r) {
        const auto sample = static_cast<size_t>(order_[static_cast<size_t>(first + r)]);
        const auto row = ids_->ids.begin() + static_cast<std::ptrdiff_t>(sample * width);
        std::copy(row, row + static_cast<std::ptrdiff_t>(width),
                  batch.ids.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * width));
        batch.labels[static_cast<size_t>(r)] = (*labels_)[sample];
    }
}

Batch Pipeline::take_spare() {
    std::lock_guard lock(mutex_);
    if (spare_.empty()) return Batch{};
    Batch batch = std::move(spare_.back());
    spare_.pop_back();
    return batch;
}

void Pipeline::recycle(Batch&& batch) {
    std::lock_guard lock(mutex_);
    // Enough for the batches in flight (queue, producer, consumer); more would only hold memory.
    if (spare_.size() < max_spares_) spare_.push_back(std::move(batch));
}

void Pipeline::start_epoch(int32_t epoch) {
    stop_producer();
    order_ = epoch_order(epoch);
    next_step_ = 0;
    {
        std::lock_guard lock(mutex_);
        // Batches left in the queue by a stopped epoch become spares.
        for (; queue_size_ > 0; --queue_size_, queue_head_ = (queue_head_ + 1) % queue_.size()) {
            if (spare_.size() < max_spares_) spare_.push_back(std::move(queue_[queue_head_]));
        }
        queue_head_ = 0;
        producer_done_ = false;
        cancelled_ = false;
        error_ = nullptr;
    }
    epoch_started_ = true;
    if (options_.prefetch_batches > 0) producer_ = std::thread(&Pipeline::produce, this);
}

void Pipeline::produce() {
    const auto capacity = static_cast<size_t>(options_.prefetch_batches);
    try {
        const int64_t steps = steps_per_epoch();
        for (int64_t step = 0; step < steps; ++step) {
            Batch batch = take_spare();
            fill_batch(step, batch);  // outside the lock: the consumer keeps reading
            std::unique_lock lock(mutex_);
            not_full_.wait(lock, [&] { return cancelled_ || queue_size_ < capacity; });
            if (cancelled_) {
                if (spare_.size() < max_spares_) spare_.push_back(std::move(batch));  // kept for the next epoch
                break;
            }
            queue_[(queue_head_ + queue_size_) % capacity] = std::move(batch);
            ++queue_size_;
            lock.unlock();
            not_empty_.notify_one();
        }
    } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
    }
    {
        std::lock_guard lock(mutex_);
        producer_done_ = true;
    }
    not_empty_.notify_all();
}

std::optional<Batch> Pipeline::next() {
    // Not check(): its message would be built (and allocated) on every call.
    if (!epoch_started_) throw DataError("[pipeline] next() called before start_epoch()");
    if (options_.prefetch_batches == 0) {
        {
            std::lock_guard lock(mutex_);
            if (cancelled_) return std::nullopt;
        }
        if (next_step_ >= steps_per_epoch()) return std::nullopt;
        Batch batch = take_spare();
        fill_batch(next_step_++, batch);
        return batch;
    }
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return cancelled_ || queue_size_ > 0 || producer_done_; });
    if (cancelled_) return std::nullopt;
    if (queue_size_ > 0) {
        Batch batch = std::move(queue_[queue_head_]);
        queue_head_ = (queue_head_ + 1) % queue_.size();
        --queue_size_;
        lock.unlock();
        not_full_.notify_one();
        return batch;
    }
    if (error_) {
        // Once: the epoch is over after the failure, later calls just report its end.
        std::exception_ptr error = std::exchange(error_, nullptr);
        std::rethrow_exception(error);
    }
    return std::nullopt;
}

void Pipeline::cancel() {
    {
        std::lock_guard lock(mutex_);
        cancelled_ = true;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
}

void Pipeline::stop_producer() {
    cancel();
    if (producer_.joinable()) producer_.join();
}

}  // namespace mirrorlab
