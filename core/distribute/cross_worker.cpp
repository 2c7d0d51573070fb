#include "core/distribute/cross_worker.h"

#include <algorithm>
#include <type_traits>

#include "core/distribute/cross_device_ops.h"

namespace mirrorlab {


std::string describe_cross_worker(AllReduceAlgorithm order, const std::vector<std::string>& global_devices,
                                  const std::string& library, int workers) {
    const std::string replicas = std::to_string(global_devices.size());
    const std::string how =
        order == AllReduceAlgorithm::Ring
            ? "add each chunk around the ring " + global_devices.front() + " -> ... -> " + global_devices.back() +
                  " as a ring all-reduce of " + replicas + " replicas would"
            : "reduce in replica order (" + global_devices.front() + " + ... + " + global_devices.back() +
                  ") as reduce_to_one_device over " + replicas + " replicas would";
    return "Gather every replica's gradient from " + std::to_string(workers) + " workers over " + library + ", then " + how +
           ": the same sums, bit for bit, as one process with " + replicas + " replicas.";
}

CrossWorkerAllReduce::CrossWorkerAllReduce(WorkerCommunicator& communicator, AllReduceAlgorithm order, int local_replicas)
    : communicator_(communicator), order_(order), local_replicas_(local_replicas) {}

void CrossWorkerAllReduce::prepare(std::int64_t elements) {
    elements_ = elements;
    gathered_.assign(static_cast<std::size_t>(elements * global_replicas()), 0.0f);
}

TensorView CrossWorkerAllReduce::gathered_view(int global_replica, std::int64_t begin, std::int64_t end) const {
    float* first = const_cast<float*>(gathered_.data()) + static_cast<std::int64_t>(global_replica) * elements_ + begin;
    return TensorView{first, Shape{end - begin}, DType::F32};
}

void CrossWorkerAllReduce::fold(std::int64_t begin, std::int64_t end, const TensorView& sum, Backend& backend) const {
    const int n = global_replicas();
    // The element range splits where the ring's chunks do: each chunk's fold starts at its own
    // replica (reduce-to-one-device starts every element at replica 0).
    std::int64_t at = begin;
    while (at < end) {
        int start = 0;
        std::int64_t piece_end = end;
        if (order_ == AllReduceAlgorithm::Ring) {
            while (chunk_range(elements_, n, start).second <= at) ++start;
            piece_end = std::min(end, chunk_range(elements_, n, start).second);
        }
        const TensorView target = sum.slice(at - begin, Shape{piece_end - at});
        backend.copy(target, gathered_view(start, at, piece_end));
        for (int step = 1; step < n; ++step) backend.add_inplace(target, gathered_view((start + step) % n, at, piece_end));
        at = piece_end;
    }
}

void CrossWorkerAllReduce::all_reduce(int replica, const std::vector<TensorView>& buffers, const std::vector<Backend*>& backends,
                                      StepBarrier& barrier) {
    const auto r = static_cast<std::size_t>(replica);
    Backend& backend = *backends[r];
    // 1. Each replica puts its gradient in its place among all workers' (parallel copies).
    backend.copy(gathered_view(first_replica() + replica, 0, elements_), buffers[r]);
    barrier.arrive_and_wait();
    // 2. One thread talks to the other workers; the rest wait for the gathered gradients.
    if (replica == 0) {
        try {
            communicator_.all_gather_in_place(gathered_.data(), elements_ * local_replicas_ * static_cast<std::int64_t>(sizeof(float)));
        } catch (...) {
            barrier.abort();  // the other replicas leave with StepAborted
            throw;
        }
    }
    barrier.arrive_and_wait();
    // 3. Each replica sums its slice of the elements into replica 0's buffer and copies that slice
    // of the sum to the others, as ReduceToOneDevice does across one process's replicas.
    const auto [begin, end] = chunk_range(elements_, local_replicas_, replica);
    if (end > begin) {
        const TensorView sum = buffers[0].slice(begin, Shape{end - begin});
        fold(begin, end, sum, backend);
        for (std::size_t other = 1; other < buffers.size(); ++other) backend.copy(buffers[other].slice(begin, Shape{end - begin}), sum);
    }
    barrier.arrive_and_wait();
}

template <typename T>
void CrossWorkerAllReduce::gather_entries(std::vector<T>& entries) {
    static_assert(std::is_trivially_copyable_v<T>, "entries travel between workers as bytes");
    communicator_.all_gather_in_place(entries.data(), static_cast<std::int64_t>(sizeof(T)) * local_replicas_);
}

void CrossWorkerAllReduce::gather_counts(std::vector<LossCounts>& counts) { gather_entries(counts); }

void CrossWorkerAllReduce::gather_timings(std::vector<PhaseTimings>& timings) { gather_entries(timings); }

void CrossWorkerAllReduce::gather_memory(std::vector<DeviceMemoryCounts>& memory) { gather_entries(memory); }

bool CrossWorkerAllReduce::any(bool mine) { return any_bits(mine ? 1 : 0) != 0; }

std::uint64_t CrossWorkerAllReduce::any_bits(std::uint64_t mine) {
    std::uint64_t all = 0;
    for (const std::uint64_t value : gather(mine)) all |= value;
    return all;
}

std::vector<std::uint64_t> CrossWorkerAllReduce::gather(std::uint64_t value) {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(workers()), 0);
    all[static_cast<std::size_t>(communicator_.rank())] = value;
    communicator_.all_gather_in_place(all.data(), sizeof(std::uint64_t));
    return all;
}

}  // namespace mirrorlab
