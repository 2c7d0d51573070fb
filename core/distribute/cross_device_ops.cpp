#include "core/distribute/cross_device_ops.h"

#include <algorithm>

#include "core/device/device.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {
std::vector<std::string> names_of(const std::vector<LogicalDevice*>& devices) {
    std::vector<std::string> names;
    for (const LogicalDevice* device : devices) names.push_back(device->name());
    return names;
}
}  // namespace

std::string describe_reduce_to_one_device(const std::vector<std::string>& devices) {
    std::string list;
    for (std::size_t i = 0; i < devices.size(); ++i) list += (i > 0 ? ", " : "") + devices[i];
    return "Reduce to " + devices.front() + " then broadcast to (" + list + ").";
}

std::string describe_ring(const std::vector<std::string>& devices) {
    std::string ring;
    for (const std::string& device : devices) ring += device + " -> ";
    ring += devices.front();
    return "Ring all-reduce (reduce-scatter then all-gather in " + std::to_string(devices.size()) + " chunks) over " +
           ring + ".";
}

std::string ReduceToOneDevice::describe(const std::vector<LogicalDevice*>& devices) const {
    return describe_reduce_to_one_device(names_of(devices));
}

void ReduceToOneDevice::all_reduce(int replica, const std::vector<TensorView>& buffers,
                                   const std::vector<Backend*>& backends, StepBarrier& barrier) {
    const auto r = static_cast<std::size_t>(replica);
    if (split_across_replicas_) {
        // Replica r owns slice r of every buffer: it sums the slice into replica 0's buffer and
        // copies the sum out to the others. No replica touches another's slice, so one barrier
        // at the end suffices, and every replica does the same share of the work.
        const int n = static_cast<int>(buffers.size());
        const auto [begin, end] = chunk_range(buffers[0].numel(), n, replica);
        const Shape slice{end - begin};
        const TensorView sum = buffers[0].slice(begin, slice);
        const bool check = !slice_finite_.empty();
        if (check && slice_finite_.size() != buffers.size()) {
            throw OpError("[all_reduce] built for " + std::to_string(slice_finite_.size()) + " replicas, called with " +
                          std::to_string(buffers.size()) + " buffers");
        }
        // The last add leaves the sum in the last buffer too (and checks it): one pass fewer.
        const std::size_t last = buffers.size() - 1;
        for (std::size_t s = 1; s < last; ++s) backends[r]->add_inplace(sum, buffers[s].slice(begin, slice));
        if (last > 0) {
            const bool finite = backends[r]->add_into_both_all_finite(sum, buffers[last].slice(begin, slice));
            if (check) slice_finite_[r] = finite ? 1 : 0;
        } else if (check) {
            slice_finite_[r] = backends[r]->all_finite(sum) ? 1 : 0;
        }
        // Host memory: add_inplace and copy are complete when they return, no wait on top.
        for (std::size_t s = 1; s < last; ++s) backends[r]->copy(buffers[s].slice(begin, slice), sum);
        barrier.arrive_and_wait();
        return;
    }
    // Replica 0 adds each buffer once its producer's work is done (wait_for orders it on the
    // devices), then marks the sum; every other replica copies the sum out after that mark. The
    // barrier only orders the host's calls (the mark before the waits), never a device.
    if (replica == 0) {
        for (std::size_t s = 1; s < buffers.size(); ++s) backends[0]->wait_for(*backends[s]);
        for (std::size_t s = 1; s < buffers.size(); ++s) backends[0]->add_inplace(buffers[0], buffers[s]);
        backends[0]->mark_ready();
    }
    barrier.arrive_and_wait();
    if (replica != 0) {
        backends[r]->wait_for(*backends[0]);
        backends[r]->copy(buffers[r], buffers[0]);
    }
    // From here replica 0's buffer is only read, by the copies and by replica 0's own check and
    // update, until every replica has finished the step (CrossDeviceOps::all_reduce).
}

std::optional<bool> ReduceToOneDevice::sum_all_finite() const {
    if (slice_finite_.empty()) return std::nullopt;
    return std::all_of(slice_finite_.begin(), slice_finite_.end(), [](char finite) { return finite != 0; });
}

std::int64_t ReduceToOneDevice::bytes_sent_per_replica(std::int64_t bytes, int replicas) const {
    // Every other replica sends its buffer once; the reducing device sends the result N-1 times.
    return replicas <= 1 ? 0 : bytes;
}

std::pair<std::int64_t, std::int64_t> chunk_range(std::int64_t count, int parts, int chunk) {
    const std::int64_t base = count / parts, extra = count % parts;
    const std::int64_t begin = chunk * base + std::min<std::int64_t>(chunk, extra);
    return {begin, begin + base + (chunk < extra ? 1 : 0)};
}

std::string RingAllReduce::describe(const std::vector<LogicalDevice*>& devices) const {
    return describe_ring(names_of(devices));
}

void RingAllReduce::all_reduce(int replica, const std::vector<TensorView>& buffers,
                               const std::vector<Backend*>& backends, StepBarrier& barrier) {
    const int n = static_cast<int>(buffers.size());
    if (n == 1) return;
    const auto r = static_cast<std::size_t>(replica);
    const std::size_t left = static_cast<std::size_t>((replica + n - 1) % n);
    const std::int64_t count = buffers[r].numel();
    auto chunk_view = [&](std::size_t owner, int chunk) {
        const auto [begin, end] = chunk_range(count, n, chunk);
        return buffers[owner].slice(begin, Shape{end - begin});
    };
    // Each replica pulls from its left neighbour; in every step the chunk a replica writes is not
    // the chunk its right neighbour reads, so the steps need only a barrier between them, once each
    // replica's device has done its part (synchronize: the buffers arrive still being computed).
    backends[r]->synchronize();
    barrier.arrive_and_wait();
    for (int step = 0; step < n - 1; ++step) {
        const int chunk = ((replica - 1 - step) % n + n) % n;
        backends[r]->add_inplace(chunk_view(r, chunk), chunk_view(left, chunk));
        backends[r]->synchronize();
        barrier.arrive_and_wait();
    }
    for (int step = 0; step < n - 1; ++step) {
        const int chunk = ((replica - step) % n + n) % n;
        backends[r]->copy(chunk_view(r, chunk), chunk_view(left, chunk));
        backends[r]->synchronize();
        barrier.arrive_and_wait();
    }
}

std::int64_t RingAllReduce::bytes_sent_per_replica(std::int64_t bytes, int replicas) const {
    return replicas <= 1 ? 0 : 2 * bytes * (replicas - 1) / replicas;
}

}  // namespace mirrorlab
