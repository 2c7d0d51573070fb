#include "core/distribute/mirrored.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <optional>

#include "core/util/error.h"

namespace mirrorlab {

namespace {
double elapsed_ms(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

double ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
}

// CPU devices only: the replicas share host memory, and nothing is bound to their threads.
bool all_cpu(const StrategyPlan& plan) {
    return std::all_of(plan.devices.begin(), plan.devices.end(),
                       [](const LogicalDevicePlan& device) { return device.type == DeviceType::CPU; });
}

ReplicaZero replica_zero_runs_on(const StrategyPlan& plan) {
    return all_cpu(plan) ? ReplicaZero::Caller : ReplicaZero::OwnThread;
}

}  // namespace

// FNV-1a (64-bit) over the variables' 32-bit words: bit-identical replicas give equal sums.
std::uint64_t fnv1a_checksum(Backend& backend, const TensorView& weights) {
    thread_local std::vector<std::uint32_t> host;
    host.resize(static_cast<std::size_t>(weights.numel()));
    backend.download(host.data(), weights);
    std::uint64_t hash = 14695981039346656037ull;
    for (const std::uint32_t word : host) {
        hash ^= word;
        hash *= 1099511628211ull;
    }
    return hash;
}

namespace {

// A backend with its own clock (CUDA events) times the phases on the device: the wall-clock
// numbers then also hold the launch and synchronisation overhead, which the device times do not.
void take_device_timings(Backend& backend, bool all_reduced, PhaseTimings& phase) {
    const double forward_ms = backend.mark_elapsed_ms(StepMark::ForwardBegin, StepMark::ForwardEnd);
    if (forward_ms < 0) return;
    const double backward_ms = backend.mark_elapsed_ms(StepMark::ForwardEnd, StepMark::BackwardEnd);
    const double allreduce_ms = all_reduced ? backend.mark_elapsed_ms(StepMark::AllReduceBegin, StepMark::AllReduceEnd) : 0.0;
    const double update_ms = backend.mark_elapsed_ms(StepMark::UpdateBegin, StepMark::UpdateEnd);
    if (backward_ms < 0 || allreduce_ms < 0 || update_ms < 0) return;
    phase.forward_ms = forward_ms;
    phase.backward_ms = backward_ms;
    if (all_reduced) phase.allreduce_ms = allreduce_ms;
    phase.update_ms = update_ms;
    phase.device_timed = true;
}

// Shard sizes into `sizes` (resized only when the replica count changes: no allocation per step).
void fill_shard_sizes(std::int32_t global_batch, int replicas, std::vector<std::int32_t>& sizes) {
    sizes.assign(static_cast<std::size_t>(replicas), global_batch / replicas);
    for (int r = 0; r < global_batch % replicas; ++r) ++sizes[static_cast<std::size_t>(r)];
}

// The plan's logical devices, made only when the plan can run.
std::vector<std::unique_ptr<LogicalDevice>> checked_devices(const StrategyPlan& plan, DeviceRegistry& registry) {
    plan.check();
    return create_logical_devices(plan.devices, registry);
}

// Where each replica's shard starts in the global batch.
void fill_shard_offsets(const std::vector<std::int32_t>& sizes, std::vector<std::int32_t>& offsets) {
    offsets.assign(sizes.size(), 0);
    for (std::size_t r = 1; r < sizes.size(); ++r) offsets[r] = offsets[r - 1] + sizes[r - 1];
}
}  // namespace

std::vector<std::int32_t> shard_sizes(std::int32_t global_batch, int replicas) {
    std::vector<std::int32_t> sizes;
    fill_shard_sizes(global_batch, replicas, sizes);
    return sizes;
}

MirroredStrategy::MirroredStrategy(const StrategyPlan& plan, DeviceRegistry& registry, const LogSink& log)
    : MirroredStrategy(plan, checked_devices(plan, registry), log) {}

MirroredStrategy::MirroredStrategy(const StrategyPlan& plan, DeviceRegistry& registry, const LogSink& log,
                                   WorkerCommunicator& workers)
    : MirroredStrategy(plan, checked_devices(plan, registry), log, &workers) {}

MirroredStrategy::MirroredStrategy(std::vector<std::unique_ptr<LogicalDevice>> devices, AllReduceAlgorithm algorithm,
                                   const LogSink& log)
    : MirroredStrategy(plan_strategy(devices, algorithm), std::move(devices), log) {}

MirroredStrategy::MirroredStrategy(StrategyPlan plan, std::vector<std::unique_ptr<LogicalDevice>>&& devices,
                                   const LogSink& log, WorkerCommunicator* workers)
    : plan_(std::move(plan)), devices_(std::move(devices)) {
    plan_.check();
    if (plan_.workers > 1) {
        if (workers == nullptr || workers->size() != plan_.workers) {
            throw DeviceConfigError("device configuration: a plan for " + std::to_string(plan_.workers) +
                                    " workers needs their communicator");
        }
        // Across workers the CrossWorkerAllReduce sums every replica, this worker's included.
        for (const PlanLogLine& line : plan_.log_lines()) log(line.level, line.text);
        cross_worker_ = std::make_unique<CrossWorkerAllReduce>(*workers, plan_.all_reduce, replica_count());
        log(LogLevel::Info, plan_.exchange_line());
        threads_ = std::make_unique<ReplicaThreads>(replica_count(), replica_zero_runs_on(plan_));
        return;
    }
    std::vector<LogicalDevice*> raw;
    for (auto& device : devices_) raw.push_back(device.get());
    // NCCL is the GPU provider's (the CUDA plugin's); it may still refuse to start.
    std::unique_ptr<CrossDeviceOps> collectives;
    if (plan_.all_reduce == AllReduceAlgorithm::Nccl) {
        DeviceProvider* provider = raw.front()->provider();
        std::string why = "the CUDA backend offers no NCCL all-reduce for these devices";
        try {
            if (provider != nullptr) collectives = provider->create_all_reduce(raw);
        } catch (const std::exception& error) {
            if (plan_.requested == AllReduceAlgorithm::Nccl) throw;
            why = error.what();
        }
        if (!collectives) plan_ = plan_.without_nccl(why);
    }
    for (const PlanLogLine& line : plan_.log_lines()) log(line.level, line.text);
    if (collectives) {
        cross_device_ops_ = std::move(collectives);
    } else if (plan_.all_reduce == AllReduceAlgorithm::ReduceToOneDevice) {
        // CPU devices share host memory, so every replica's thread can take a slice of the sum.
        cross_device_ops_ = std::make_unique<ReduceToOneDevice>(all_cpu(plan_), replica_count());
    } else if (plan_.all_reduce == AllReduceAlgorithm::Ring) {
        cross_device_ops_ = std::make_unique<RingAllReduce>();
    }
    if (cross_device_ops_) log(LogLevel::Info, cross_device_ops_->describe(raw));
    threads_ = std::make_unique<ReplicaThreads>(replica_count(), replica_zero_runs_on(plan_));
}

AllReduceAlgorithm MirroredStrategy::all_reduce_algorithm() const {
    if (cross_worker_) return cross_worker_->order();  // the order the workers reproduce
    return cross_device_ops_ ? cross_device_ops_->algorithm() : AllReduceAlgorithm::Invalid;
}

std::vector<std::string> MirroredStrategy::device_names() const {
    std::vector<std::string> names;
    for (const auto& device : devices_) names.push_back(device->name());
    return names;
}

void MirroredStrategy::check_memory(const Model& model, std::int32_t global_batch, const OptimizerConfig& optimizer,
                                    int host_weight_copies) const {
    const UpdateLayout layout = OptimizerSchedule(optimizer).update_layout();
    const int slots = layout.optimizer_slots;
    const std::int32_t max_shard = std::max(shard_sizes(global_batch, global_replica_count())[0], 1);
    const ReplicaMemory need = ModelReplica::memory_needed(model, max_shard, layout);
    const std::string params = format_thousands(model.total_params());
    // "4.00 GiB for the weights, gradients and Nadam's 2 slots of 1,000 parameters; 1.0 MiB for a shard of 16 samples"
    const std::string breakdown =
        format_bytes(need.state_bytes) + " for the weights, gradients" +
        (slots > 0 ? " and " + std::string(optimizer_name(optimizer.kind)) + "'s " + std::to_string(slots) +
                         (slots == 1 ? " slot" : " slots")
                   : std::string()) +
        " of " + params + " parameters; " + format_bytes(need.activation_bytes) + " for a shard of " +
        std::to_string(max_shard) + (max_shard == 1 ? " sample" : " samples");
    const std::string remedy =
        "; lower the batch size, use a smaller model (a smaller Embedding input_dim or output_dim, fewer filters or units)";
    const std::int64_t host_copies_bytes = host_weight_copies * MemoryArena::rounded_size(model.total_params() * 4);
    std::int64_t host_bytes = host_copies_bytes;
    std::vector<std::string> host_replicas;
    // A GPU without a limit is left to its allocator, whose refusal names the GPU's free memory and
    // the programs holding the rest; an unlimited CPU device is the host's own memory.
    for (const auto& device : devices_) {
        const std::int64_t limit = device->memory_limit_bytes();
        if (limit == 0 && device->physical().type == DeviceType::CPU) {
            host_bytes += need.total();
            host_replicas.push_back(device->name());
        }
        if (limit > 0 && need.total() > limit) {
            throw OutOfMemoryError("out of memory on " + device->name() + ": the model needs " + format_bytes(need.total()) +
                                   " on each replica (" + breakdown + "), over the device's limit of " +
                                   format_bytes(limit) + remedy + ", or raise the memory limit");
        }
    }
    const std::int64_t available = host_available_memory_bytes();
    if (available <= 0 || host_bytes <= available) return;
    std::string replicas_text;
    if (!host_replicas.empty()) {
        replicas_text = ", and " + format_bytes(need.total()) + " for each replica in host memory (" +
                        std::to_string(host_replicas.size()) + ", on " + host_replicas.front() +
                        (host_replicas.size() > 1 ? " ..." : "") + ": " + breakdown + ")";
    }
    throw OutOfMemoryError("out of memory on the host: the model needs " + format_bytes(host_bytes) +
                           " of this machine's memory and " + format_bytes(available) + " is available: " +
                           format_bytes(host_copies_bytes) + " for " + std::to_string(host_weight_copies) +
                           " host copies of its " + params + " parameters" + replicas_text + remedy +
                           ", or close other programs");
}

void MirroredStrategy::build(const Model& model, std::int32_t global_batch, const OptimizerConfig& optimizer,
                             const std::vector<float>& weights) {
    check_memory(model, global_batch, optimizer, 1);
    replicas_.clear();
    schedule_ = std::make_unique<OptimizerSchedule>(optimizer);
    input_length_ = model.input_length();
    const auto sizes = shard_sizes(global_batch, global_replica_count());
    for (int r = 0; r < replica_count(); ++r) {
        // Every replica holds at least one sample's buffers so evaluation can use any shard.
        const std::int32_t max_shard = std::max(sizes[0], 1);
        replicas_.push_back(std::make_unique<ModelReplica>(model, *devices_[static_cast<std::size_t>(r)], max_shard,
                                                           schedule_->update_layout()));
    }
    // Everything a step needs, sized once: steps reuse it and allocate nothing.
    const auto n = static_cast<std::size_t>(replica_count());
    scratch_ = StepScratch{};
    scratch_.counts.resize(static_cast<std::size_t>(global_replica_count()));
    scratch_.finite.resize(n);
    scratch_.updated.resize(n);
    scratch_.result.replicas.resize(n);
    scratch_.job_timings.resize(static_cast<std::size_t>(global_replica_count()));
    for (std::size_t r = 0; r < n; ++r) {
        scratch_.gradient_buffers.push_back(replicas_[r]->gradient_buffer());
        scratch_.backends.push_back(&devices_[r]->backend());
    }
    barrier_ = std::make_unique<StepBarrier>(replica_count());
    // New replicas hold new buffers: a backend's recorded steps (graphs) of earlier ones are void.
    static std::atomic<std::uint64_t> builds{0};
    step_group_ = StepGroup{scratch_.backends, barrier_.get(), ++builds, true};
    if (cross_worker_) cross_worker_->prepare(replicas_.front()->gradient_buffer().numel());
    set_weights(weights);
}

void MirroredStrategy::set_weights(const std::vector<float>& weights) {
    pending_copy_ms_.assign(static_cast<std::size_t>(replica_count()), 0.0);
    threads_->run([&](int r) {
        const auto start = std::chrono::steady_clock::now();
        replicas_[static_cast<std::size_t>(r)]->set_weights(weights);
        devices_[static_cast<std::size_t>(r)]->backend().synchronize();
        pending_copy_ms_[static_cast<std::size_t>(r)] = elapsed_ms(start);
    });
}

std::vector<float> MirroredStrategy::weights(int replica) const { return replicas_[static_cast<std::size_t>(replica)]->weights(); }

std::vector<float> MirroredStrategy::optimizer_slots() const { return replicas_.front()->optimizer_slots(); }

void MirroredStrategy::restore_optimizer(const OptimizerSchedule::State& state, const std::vector<float>& slots) {
    schedule_->restore(state);
    for (auto& replica : replicas_) replica->set_optimizer_slots(slots);
}

const TrainStepResult& MirroredStrategy::train_step(const std::int32_t* ids, const std::int32_t* labels,
                                                    std::int32_t batch, std::uint64_t step_seed) {
    if (replicas_may_differ_) {
        throw OpError("[train_step] an earlier step failed while the replicas were applying the optimizer update, so "
                      "their variables and optimizer state may differ; start a new run (the epochs already "
                      "finished are kept) to train on");
    }
    const auto step_start = std::chrono::steady_clock::now();
    StepScratch& s = scratch_;
    update_started_.store(false, std::memory_order_relaxed);
    fill_shard_sizes(batch, global_replica_count(), s.sizes);
    fill_shard_offsets(s.sizes, s.offsets);
    s.result.counts = {};
    s.result.finite = true;
    for (auto& phase : s.result.replicas) phase = PhaseTimings{};
    barrier_->reset();
    // The optimizer's scalars for this update; given back below if the step turns out non-finite.
    const OptimizerSchedule::State schedule_before = schedule_->state();
    const OptimizerStep update = schedule_->next_step();
    // Whether the replicas' host code waits for a device mid-step (Backend::begin_step).
    step_group_.host_waits_mid_step =
        detailed_stats_ || cross_worker_ != nullptr || (cross_device_ops_ && cross_device_ops_->waits_on_host());

    // One hand-off per step: each replica computes its gradients, meets the others for the
    // all-reduce, checks the result and applies the update, waiting only where it must.
    try {
        threads_->run([&](int r) {
            try {
                replica_step(r, ids, labels, batch, step_seed, step_start, update);
            } catch (const StepAborted&) {
                throw;
            } catch (...) {
                // Release the replicas waiting for this one at a barrier; they leave with StepAborted.
                barrier_->abort();
                throw;
            }
        });
    } catch (...) {
        for (Backend* backend : s.backends) backend->abandon_step();
        if (update_started_.load(std::memory_order_relaxed)) {
            // Some replicas may have updated and others not: the mirrored copies can no longer be
            // trusted, and the schedule already counts the update that some of them made.
            replicas_may_differ_ = true;
        } else {
            schedule_->restore(schedule_before);  // the update this step would have made did not happen
        }
        throw;
    }
    pending_copy_ms_.clear();
    // Every worker's counts, summed in global replica order as one process with all replicas sums
    // them (the counts reach the host only with the step's end, so they travel after it).
    if (cross_worker_) cross_worker_->gather_counts(s.counts);
    for (const auto& c : s.counts) s.result.counts += c;
    // Every replica decided on the same summed buffer; verdicts that differ mean the replicas'
    // variables now do too.
    const auto applied = std::count(s.finite.begin(), s.finite.end(), char{1});
    const auto local_replicas = static_cast<std::ptrdiff_t>(s.finite.size());
    if (applied != 0 && applied != local_replicas) {
        replicas_may_differ_ = true;
        throw OpError("[train_step] the replicas disagreed on whether the summed gradients were finite, so only some "
                      "applied the update; start a new run (the epochs already finished are kept)");
    }
    s.result.finite = applied == local_replicas;
    if (!s.result.finite) schedule_->restore(schedule_before);
    const auto step_end = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < s.result.replicas.size(); ++i) {
        s.result.replicas[i].finish_wait_ms = ms_between(s.updated[i], step_end);
    }
    return s.result;
}

void MirroredStrategy::replica_step(int r, const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                    std::uint64_t step_seed, std::chrono::steady_clock::time_point step_start,
                                    const OptimizerStep& update) {
    const auto i = static_cast<std::size_t>(r);
    const int n = replica_count();
    // Where this replica sits among every worker's: its shard, its counts, its dropout stream.
    const int global_index = first_global_replica() + r;
    const auto g = static_cast<std::size_t>(global_index);
    StepScratch& s = scratch_;
    ModelReplica& replica = *replicas_[i];
    Backend& backend = devices_[i]->backend();
    PhaseTimings& phase = s.result.replicas[i];

    // 1. Local gradients, queued: nothing here waits for the device (issue #21).
    backend.begin_step(step_group_, r, static_cast<std::uint64_t>(batch));
    const auto begin = std::chrono::steady_clock::now();
    ReplicaTimings timings;
    const std::int64_t offset = s.offsets[g];
    replica.compute_gradients(ids + offset * input_length_, labels + offset, s.sizes[g], batch,
                              step_seed * 1000003ull + static_cast<std::uint64_t>(global_index), &timings);
    phase.shard_size = s.sizes[g];
    phase.forward_ms = timings.forward_ms;
    phase.backward_ms = timings.backward_ms;
    phase.split_ms = ms_between(step_start, begin);
    if (!pending_copy_ms_.empty()) phase.copy_model_ms = pending_copy_ms_[i];
    if (detailed_stats_) {
        phase.grad_norm_before = std::sqrt(backend.sum_of_squares(replica.variable_gradients()));
        if (n == 1 && !cross_worker_) phase.grad_norm_after = phase.grad_norm_before;  // already the global gradient
    }

    // 2. All-reduce: every replica ends with the sum of all gradients (and of the loss markers),
    // across every worker's replicas where there are several workers.
    std::optional<bool> summed_all_finite;  // known here where the all-reduce checked as it summed
    if (cross_device_ops_ || cross_worker_) {
        backend.mark_ready();  // what the others' reads of this replica's buffer must follow
        const auto grads_done = std::chrono::steady_clock::now();
        barrier_->arrive_and_wait();  // every replica's gradients are queued and marked
        const auto start = std::chrono::steady_clock::now();
        backend.mark(StepMark::AllReduceBegin);
        if (cross_worker_) {
            cross_worker_->all_reduce(r, s.gradient_buffers, s.backends, *barrier_);
        } else {
            cross_device_ops_->all_reduce(r, s.gradient_buffers, s.backends, *barrier_);
            summed_all_finite = cross_device_ops_->sum_all_finite();
        }
        backend.mark(StepMark::AllReduceEnd);
        phase.allreduce_ms = elapsed_ms(start);
        phase.allreduce_begin_ms = ms_between(step_start, start);
        phase.barrier_wait_ms = ms_between(grads_done, start);
        if (detailed_stats_) phase.grad_norm_after = std::sqrt(backend.sum_of_squares(replica.variable_gradients()));
    }

    // 3. The same update on every replica keeps the mirrored variables identical. A non-finite
    // loss or gradient must change no variable: the backend checks the summed buffer (identical on
    // every replica, each replica's loss marker included) where it lives and skips the update
    // there, so no replica waits for the verdict, and all reach the same one. (Through host memory
    // the all-reduce has checked the sum as it made it: the same verdict without another pass.)
    const auto start = std::chrono::steady_clock::now();
    update_started_.store(true, std::memory_order_relaxed);
    backend.mark(StepMark::UpdateBegin);
    replica.apply_update_if_finite(update, summed_all_finite);
    backend.mark(StepMark::UpdateEnd);

    // 4. The step's one wait: the loss counts and the verdict, together.
    const StepReadback readback = replica.finish_step();
    s.updated[i] = std::chrono::steady_clock::now();
    s.counts[g] = readback.counts;
    s.finite[i] = readback.update_applied ? 1 : 0;
    phase.local_loss = s.sizes[g] > 0 ? s.counts[g].loss_sum / s.sizes[g] : 0.0;
    phase.update_ms = ms_between(start, s.updated[i]);
    phase.update_begin_ms = ms_between(step_start, start);
    take_device_timings(backend, cross_device_ops_ != nullptr || cross_worker_ != nullptr, phase);
    // After the update's end: with detailed stats the checksum pass counts as waiting.
    if (detailed_stats_) phase.weights_checksum = fnv1a_checksum(backend, replica.weight_buffer());
}

LossCounts MirroredStrategy::evaluate(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch) {
    StepScratch& s = scratch_;
    const int first = first_global_replica();
    fill_shard_sizes(batch, global_replica_count(), s.sizes);
    fill_shard_offsets(s.sizes, s.offsets);
    // Evaluation shards may exceed the training shard (the last partial training batch is
    // smaller), so split into chunks no larger than what the replicas were built for.
    threads_->run([&](int r) {
        ModelReplica& replica = *replicas_[static_cast<std::size_t>(r)];
        const auto g = static_cast<std::size_t>(first + r);
        s.counts[g] = {};
        for (std::int32_t done = 0; done < s.sizes[g];) {
            const std::int32_t chunk = std::min(replica.max_batch(), s.sizes[g] - done);
            const std::int64_t offset = s.offsets[g] + done;
            s.counts[g] += replica.evaluate(ids + offset * input_length_, labels + offset, chunk);
            done += chunk;
        }
    });
    // Summed in global replica order on every worker, as one process with all replicas sums them.
    if (cross_worker_) cross_worker_->gather_counts(s.counts);
    LossCounts total;
    for (const auto& c : s.counts) total += c;
    return total;
}

std::vector<std::string> MirroredStrategy::kernel_choices() const {
    std::vector<std::string> lines;
    for (const auto& device : devices_) {
        for (const std::string& line : device->backend().kernel_choices()) {
            lines.push_back(device->name() + ": " + line);
        }
    }
    return lines;
}

std::vector<DeviceMemory> MirroredStrategy::memory() const {
    std::vector<DeviceMemory> all;
    all.reserve(devices_.size());
    for (const auto& device : devices_) {
        const MemoryStats stats = device->arena().stats();
        DeviceProvider* provider = device->provider();
        const std::int64_t physical_free = provider != nullptr ? provider->free_memory_bytes(device->physical().index) : 0;
        all.push_back({device->name(), stats.bytes_in_use, stats.peak_bytes_in_use, stats.limit_bytes, physical_free});
    }
    return all;
}

std::vector<DeviceMemory> MirroredStrategy::job_memory() {
    std::vector<DeviceMemory> local = memory();
    if (!cross_worker_) return local;
    // One device per local replica: the job's devices are the workers' replicas in rank order.
    std::vector<DeviceMemoryCounts> counts(static_cast<std::size_t>(global_replica_count()));
    const auto first = static_cast<std::size_t>(first_global_replica());
    for (std::size_t d = 0; d < local.size(); ++d) {
        counts[first + d] = {local[d].bytes_in_use, local[d].peak_bytes, local[d].limit_bytes, local[d].physical_free_bytes};
    }
    cross_worker_->gather_memory(counts);
    const std::vector<std::string> names = plan_.global_device_names();
    std::vector<DeviceMemory> job;
    job.reserve(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) {
        job.push_back({names[r], counts[r].bytes_in_use, counts[r].peak_bytes, counts[r].limit_bytes, counts[r].physical_free_bytes});
    }
    return job;
}

std::int64_t MirroredStrategy::gradient_bytes() const {
    return replicas_.empty() ? 0 : replicas_.front()->parameter_count() * static_cast<std::int64_t>(sizeof(float));
}

const std::vector<PhaseTimings>& MirroredStrategy::gather_job_timings(double data_wait_ms) {
    StepScratch& s = scratch_;
    const auto first = static_cast<std::size_t>(first_global_replica());
    for (std::size_t r = 0; r < s.result.replicas.size(); ++r) {
        s.job_timings[first + r] = s.result.replicas[r];
        s.job_timings[first + r].data_wait_ms = data_wait_ms;
    }
    if (cross_worker_) cross_worker_->gather_timings(s.job_timings);
    return s.job_timings;
}

std::int64_t MirroredStrategy::allreduce_buffer_bytes() const {
    return replicas_.empty() ? 0 : replicas_.front()->gradient_buffer().numel() * static_cast<std::int64_t>(sizeof(float));
}

std::int64_t MirroredStrategy::allreduce_bytes_total() const {
    // Across workers every replica's gradient goes to each of the other workers.
    if (cross_worker_) return static_cast<std::int64_t>(global_replica_count()) * (workers() - 1) * gradient_bytes();
    return cross_device_ops_ ? 2 * static_cast<std::int64_t>(replica_count() - 1) * gradient_bytes() : 0;
}

std::int64_t MirroredStrategy::allreduce_bytes_per_replica() const {
    if (cross_worker_) return static_cast<std::int64_t>(workers() - 1) * gradient_bytes();
    if (!cross_device_ops_ || replicas_.empty()) return 0;
    return cross_device_ops_->bytes_sent_per_replica(replicas_.front()->parameter_count() * 4, replica_count());
}

}  // namespace mirrorlab
