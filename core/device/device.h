#pragma once
// Physical devices (what the machine has), the device configuration a person chooses, and the
// logical devices (one per replica) built from it. CPU logical devices are real: each replica has
// its own thread, arena and limit, so every path of mirrored training runs without a GPU.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/arena.h"
#include "core/backend/backend.h"
#include "core/device/collectives.h"

namespace mirrorlab {

enum class DeviceType { Invalid = 0, CPU, GPU };
std::string_view device_type_name(DeviceType type);  // "CPU", "GPU"

struct PhysicalDevice {
    DeviceType type = DeviceType::Invalid;
    int index = 0;
    std::string name;                     // "AMD EPYC 9654" / "NVIDIA H200"
    std::int64_t total_memory_bytes = 0;
    std::int64_t free_memory_bytes = 0;   // at discovery
    int cores = 0;                        // CPU: hardware threads; GPU: multiprocessors
    std::string compute_capability;       // GPU only, "9.0"
    std::string bus_id;                   // GPU only
    std::string id() const;               // "CPU:0", "GPU:1"
};

// A source of devices beyond the CPU: the CUDA plugin registers one when it loads.
class DeviceProvider {
public:
    virtual ~DeviceProvider() = default;
    virtual DeviceType type() const = 0;
    virtual std::vector<PhysicalDevice> devices() const = 0;
    virtual std::string status() const = 0;  // one line: "CUDA 13.0, 1 GPU" / "no CUDA driver found"
    virtual std::unique_ptr<Backend> create_backend(int physical_index) = 0;
    virtual std::shared_ptr<RawAllocator> create_allocator(int physical_index) = 0;
    // All-reduce over this provider's devices (NCCL); null when it has none.
    virtual bool supports_collectives() const { return false; }
    // The all-reduce for replicas that each own one of this provider's physical devices (NCCL);
    // null when the provider has none for these devices. Throws DeviceConfigError when it has
    // one but cannot start it (e.g. NCCL fails to create the communicators).
    virtual std::unique_ptr<CrossDeviceOps> create_all_reduce(const std::vector<LogicalDevice*>& devices) {
        (void)devices;
        return nullptr;
    }
    // The physical device's free memory now (0 when the provider cannot tell).
    virtual std::int64_t free_memory_bytes(int physical_index) const {
        (void)physical_index;
        return 0;
    }
};

class DeviceRegistry {
public:
    DeviceRegistry();  // the CPU is always there
    void add_provider(std::shared_ptr<DeviceProvider> provider);
    void set_gpu_status(std::string status) { gpu_status_ = std::move(status); }
    std::vector<PhysicalDevice> physical_devices() const;
    const PhysicalDevice* find(DeviceType type, int index) const;
    DeviceProvider* provider(DeviceType type) const;
    const std::string& gpu_status() const { return gpu_status_; }

private:
    PhysicalDevice cpu_;
    std::vector<std::shared_ptr<DeviceProvider>> providers_;
    std::vector<PhysicalDevice> devices_;  // the CPU, then every provider's; rebuilt by add_provider
    std::string gpu_status_ = "no GPU backend loaded";
};

PhysicalDevice detect_cpu();
// The first CPU's data and unified caches, from Linux's sysfs: "L1d 48 KiB, L2 2 MiB, L3 300 MiB"
// (each cache's whole size: a core's own for L1 and L2, the shared one for L3 on most CPUs); empty
// where the system does not say. Speed figures
// name it, as the caches decide how close a memory-bound pass comes to the FMA floor (issue #17).
std::string describe_cpu_caches();
// Memory a new allocation can get without swapping now: MemAvailable (free memory plus the page
// cache the kernel can drop), or free pages where /proc/meminfo has no such line; 0 if unknown.
std::int64_t host_available_memory_bytes();

// The most replicas one configuration may have, in all and on one physical device.
inline constexpr int kMaxReplicas = 64;
// Memory limits are chosen in MiB, as TensorFlow's memory_limit; "MB" in the device grammar means MiB.
inline constexpr std::int64_t kBytesPerMiB = 1024 * 1024;
constexpr std::int64_t mib_to_bytes(std::int64_t mib) { return mib * kBytesPerMiB; }

enum class MemoryMode {
    Invalid = 0,
    Whole,    // one logical device per replica, no limit
    Virtual,  // N virtual devices, each with its own memory limit
    Growth,   // one logical device that grows on demand (TensorFlow's set_memory_growth)
};

struct DeviceChoice {
    DeviceType type = DeviceType::Invalid;
    int index = 0;
    MemoryMode mode = MemoryMode::Whole;
    int replicas = 1;                                // Whole mode: replicas sharing the device
    std::vector<std::int64_t> memory_limits_mb;      // Virtual mode: one per virtual device (MiB)

    // The logical devices (replicas) this choice makes: one per limit (Virtual), `replicas`
    // (Whole), one (Growth).
    int logical_device_count() const;
};

struct DeviceConfig {
    std::vector<DeviceChoice> devices;

    // The CLI grammar: "cpu", "cpu:2", "cpu:2x512MB", "gpu:0", "gpu:0,gpu:1", "gpu:0:2x1024MB",
    // "gpu:0:growth", "gpu:0:1024MB+2048MB". Throws DeviceConfigError naming the bad part.
    static DeviceConfig parse(std::string_view spec);
    std::string to_spec() const;
    // Every GPU the registry knows, else one CPU device.
    static DeviceConfig default_for(const DeviceRegistry& registry);

    // Checks the whole configuration against the machine before anything is allocated.
    void validate(const DeviceRegistry& registry) const;
    int replica_count() const;
};

// A logical device as create_logical_devices() will make it, before anything exists.
struct LogicalDevicePlan {
    std::string name;                     // "/device:GPU:1": numbered per device type, in configuration order
    DeviceType type = DeviceType::Invalid;
    int physical_index = 0;               // the physical device it lives on
    std::size_t choice = 0;               // its DeviceChoice in DeviceConfig::devices
    std::int64_t memory_limit_bytes = 0;  // 0: no limit (a whole device, or memory growth)
    std::string physical_id() const;      // "GPU:0"
};

// Every logical device of `config`, in replica order, with the names and limits the engine gives
// them. Pure, and defined for configurations that do not validate (a device the machine lacks, a
// limit too small), so a form can show them while it explains what is wrong.
std::vector<LogicalDevicePlan> plan_logical_devices(const DeviceConfig& config);

class LogicalDevice {
public:
    LogicalDevice(std::string name, PhysicalDevice physical, std::int64_t memory_limit_bytes,
                  std::unique_ptr<Backend> backend, std::shared_ptr<RawAllocator> allocator);
    LogicalDevice(const LogicalDevice&) = delete;
    LogicalDevice& operator=(const LogicalDevice&) = delete;

    const std::string& name() const { return name_; }  // "/device:CPU:1"
    const PhysicalDevice& physical() const { return physical_; }
    std::int64_t memory_limit_bytes() const { return arena_.limit_bytes(); }
    MemoryArena& arena() { return arena_; }
    const MemoryArena& arena() const { return arena_; }
    Backend& backend() { return *backend_; }
    // The provider that made this device's backend (null for CPU devices): its collectives.
    DeviceProvider* provider() const { return provider_; }
    void set_provider(DeviceProvider* provider) { provider_ = provider; }

private:
    std::string name_;
    PhysicalDevice physical_;
    MemoryArena arena_;  // before backend_: the backend's scratch returns to it on destruction
    std::unique_ptr<Backend> backend_;
    DeviceProvider* provider_ = nullptr;
};

// The CPU backend used for CPU logical devices (the fastest available implementation).
std::unique_ptr<Backend> make_cpu_backend();

// Validates, then builds one logical device per replica.
std::vector<std::unique_ptr<LogicalDevice>> create_logical_devices(const DeviceConfig& config,
                                                                   DeviceRegistry& registry);
// Builds the planned devices of a configuration that validate() accepted (see StrategyPlan).
std::vector<std::unique_ptr<LogicalDevice>> create_logical_devices(const std::vector<LogicalDevicePlan>& devices,
                                                                   DeviceRegistry& registry);

}  // namespace mirrorlab
