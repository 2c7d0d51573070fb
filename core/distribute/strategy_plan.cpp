#include "core/distribute/strategy_plan.h"

#include <algorithm>
#include <map>

#include "core/distribute/cross_worker.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

// TensorFlow's words for the fallback it makes on virtual GPUs.
constexpr const char* kNoNcclOnVirtualGpus =
    "NCCL is not supported when using virtual GPUs, falling back to reduction to one device";
constexpr const char* kRingBetweenOwnDevices = "each replica has its own device; a ring keeps the traffic per device flat";

std::string joined(const std::vector<std::string>& names) {
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i) text += (i > 0 ? ", " : "") + names[i];
    return text;
}

// The all-reduce for devices that passed validation; `gpu_provider` is the provider of GPU
// replicas (null for CPU replicas, or when no GPU backend is loaded).
void choose_all_reduce(StrategyPlan& plan, const DeviceProvider* gpu_provider) {
    if (plan.replica_count() < 2) return;
    std::map<std::string, int> replicas_on;
    for (const LogicalDevicePlan& device : plan.devices) ++replicas_on[device.physical_id()];
    bool shared = false, shared_virtual = false;
    for (const LogicalDevicePlan& device : plan.devices) {
        if (replicas_on[device.physical_id()] < 2) continue;
        shared = true;
        shared_virtual = shared_virtual || device.memory_limit_bytes > 0;
    }
    const bool gpus = plan.devices.front().type == DeviceType::GPU;
    const bool nccl = gpus && gpu_provider != nullptr && gpu_provider->supports_collectives();
    auto choose = [&](AllReduceAlgorithm algorithm, std::string why) {
        plan.all_reduce = algorithm;
        plan.all_reduce_reason = std::move(why);
    };
    switch (plan.requested) {
        case AllReduceAlgorithm::Invalid:
        case AllReduceAlgorithm::Auto:
            if (shared) {
                if (gpus) plan.warnings.push_back(kNoNcclOnVirtualGpus);
                choose(AllReduceAlgorithm::ReduceToOneDevice,
                       std::string(shared_virtual ? "virtual devices" : "replicas") +
                           " share one physical device, so a reduction on one of them moves no data between chips");
            } else if (nccl) {
                choose(AllReduceAlgorithm::Nccl, "each replica has its own GPU; NCCL moves the gradients between the GPUs directly");
            } else {
                choose(AllReduceAlgorithm::Ring, kRingBetweenOwnDevices);
            }
            return;
        case AllReduceAlgorithm::ReduceToOneDevice:
        case AllReduceAlgorithm::Ring: choose(plan.requested, "chosen explicitly"); return;
        case AllReduceAlgorithm::Nccl:
            if (!gpus) {
                plan.error = "device configuration: NCCL all-reduce needs GPUs; use ring or reduce on CPU devices";
            } else if (shared) {
                plan.warnings.push_back(kNoNcclOnVirtualGpus);
                choose(AllReduceAlgorithm::ReduceToOneDevice, "NCCL cannot run between virtual devices of one GPU");
            } else if (gpu_provider == nullptr) {
                plan.error = "device configuration: NCCL all-reduce is provided by the CUDA backend, which is not loaded";
            } else if (!nccl) {
                plan.error = "device configuration: the CUDA backend offers no NCCL all-reduce for these devices (" +
                             gpu_provider->status() + "); use ring or reduce";
            } else {
                choose(AllReduceAlgorithm::Nccl, "chosen explicitly");
            }
            return;
    }
}

}  // namespace

std::string StrategyPlan::strategy_name() const {
    if (workers > 1) return "MultiWorkerMirroredStrategy";
    return replica_count() == 1 ? "OneDeviceStrategy" : "MirroredStrategy";
}

std::vector<std::string> StrategyPlan::global_device_names() const {
    if (workers <= 1) return device_names();
    std::vector<std::string> names;
    for (int worker = 0; worker < workers; ++worker) {
        for (const LogicalDevicePlan& device : devices) {
            // "/device:CPU:1" -> "/job:worker/task:2/device:CPU:1"
            names.push_back("/job:worker/task:" + std::to_string(worker) + device.name);
        }
    }
    return names;
}

std::vector<std::string> StrategyPlan::device_names() const {
    std::vector<std::string> names;
    for (const LogicalDevicePlan& device : devices) names.push_back(device.name);
    return names;
}

std::string StrategyPlan::strategy_line() const {
    if (devices.empty()) return {};
    if (workers > 1) {
        return "Using MultiWorkerMirroredStrategy with " + std::to_string(workers) + " workers × " +
               std::to_string(replica_count()) + (replica_count() == 1 ? " device" : " devices") + " (" +
               joined(global_device_names()) + ")";
    }
    if (replica_count() == 1) return "Using OneDeviceStrategy on " + devices.front().name;
    return "Using MirroredStrategy with devices (" + joined(device_names()) + ")";
}

std::string StrategyPlan::all_reduce_line() const {
    if (all_reduce == AllReduceAlgorithm::Invalid) return {};
    return "All-reduce: " + std::string(all_reduce_name(all_reduce)) + " (" + all_reduce_reason + ")";
}

std::vector<PlanLogLine> StrategyPlan::log_lines() const {
    std::vector<PlanLogLine> lines;
    if (!ok() || devices.empty()) return lines;
    for (const std::string& warning : warnings) lines.push_back({LogLevel::Warning, warning});
    lines.push_back({LogLevel::Info, strategy_line()});
    if (all_reduce != AllReduceAlgorithm::Invalid) lines.push_back({LogLevel::Info, all_reduce_line()});
    return lines;
}

std::string StrategyPlan::exchange_line() const {
    if (workers > 1 && all_reduce != AllReduceAlgorithm::Invalid) {
        return describe_cross_worker(all_reduce, global_device_names(), worker_library, workers);
    }
    switch (all_reduce) {
        case AllReduceAlgorithm::ReduceToOneDevice: return describe_reduce_to_one_device(device_names());
        case AllReduceAlgorithm::Ring: return describe_ring(device_names());
        default: return {};
    }
}

void StrategyPlan::check() const {
    if (!ok()) throw DeviceConfigError(error);
}

StrategyPlan StrategyPlan::without_nccl(const std::string& why) const {
    if (requested == AllReduceAlgorithm::Nccl) {
        throw DeviceConfigError("device configuration: NCCL could not be started (" + why + "); use ring or reduce");
    }
    StrategyPlan ring = *this;
    ring.warnings.push_back("NCCL could not be started (" + why + "); using a ring instead");
    ring.all_reduce = AllReduceAlgorithm::Ring;
    ring.all_reduce_reason = kRingBetweenOwnDevices;
    return ring;
}

StrategyPlan plan_strategy(const DeviceConfig& config, const DeviceRegistry& registry, AllReduceAlgorithm requested) {
    StrategyPlan plan;
    plan.requested = requested;
    plan.devices = plan_logical_devices(config);
    try {
        config.validate(registry);
    } catch (const DeviceConfigError& error) {
        plan.error = error.what();
        return plan;
    }
    choose_all_reduce(plan, registry.provider(DeviceType::GPU));
    return plan;
}

StrategyPlan plan_strategy(const std::vector<std::unique_ptr<LogicalDevice>>& devices, AllReduceAlgorithm requested) {
    StrategyPlan plan;
    plan.requested = requested;
    if (devices.empty()) {
        plan.error = "device configuration: no logical devices to train on";
        return plan;
    }
    std::map<std::string, std::size_t> choice_of;  // one choice per physical device, in order
    for (const auto& device : devices) {
        LogicalDevicePlan planned;
        planned.name = device->name();
        planned.type = device->physical().type;
        planned.physical_index = device->physical().index;
        planned.choice = choice_of.emplace(planned.physical_id(), choice_of.size()).first->second;
        planned.memory_limit_bytes = device->memory_limit_bytes();
        plan.devices.push_back(std::move(planned));
    }
    choose_all_reduce(plan, devices.front()->provider());
    return plan;
}

StrategyPlan plan_across_workers(StrategyPlan local, int workers, int rank, std::string library) {
    StrategyPlan plan = std::move(local);
    plan.workers = workers;
    plan.worker_rank = rank;
    plan.worker_library = std::move(library);
    plan.warnings.clear();
    if (!plan.ok() || workers <= 1) return plan;
    const bool cpus = std::all_of(plan.devices.begin(), plan.devices.end(),
                                  [](const LogicalDevicePlan& device) { return device.type == DeviceType::CPU; });
    if (!cpus) {
        plan.error = "device configuration: multi-worker training runs on CPU devices for now (NCCL across workers "
                     "is not built yet); give every worker --devices cpu or cpu:N";
        return plan;
    }
    const std::string replicas = std::to_string(plan.global_replica_count());
    switch (plan.requested) {
        case AllReduceAlgorithm::Ring:
            plan.all_reduce = AllReduceAlgorithm::Ring;
            plan.all_reduce_reason = "chosen explicitly; across " + std::to_string(workers) + " workers in the ring's order";
            break;
        case AllReduceAlgorithm::Nccl:
            plan.error = "device configuration: NCCL all-reduce needs GPUs; use ring or reduce on CPU devices";
            break;
        default:
            plan.all_reduce = AllReduceAlgorithm::ReduceToOneDevice;
            plan.all_reduce_reason = (plan.requested == AllReduceAlgorithm::ReduceToOneDevice ? std::string("chosen explicitly")
                                                                                                : "as one process with " + replicas +
                                                                                                      " CPU replicas would choose") +
                                     "; across " + std::to_string(workers) + " workers in the same order";
            break;
    }
    return plan;
}

}  // namespace mirrorlab
