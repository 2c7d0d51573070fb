#include "core/device/device.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "core/backend/cpu_fast.h"
#include "core/backend/cpu_reference.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

constexpr std::int64_t kMinVirtualLimitMb = 16;

std::string trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return std::string(text);
}

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t end = text.find(separator, start);
        parts.push_back(trim(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return parts;
}

bool parse_int(std::string_view text, std::int64_t& value) {
    if (text.empty()) return false;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size();
}

[[noreturn]] void fail(const std::string& why) { throw DeviceConfigError("device configuration: " + why); }

[[noreturn]] void bad_spec(std::string_view spec, const std::string& why) {
    throw DeviceConfigError("device spec '" + std::string(spec) + "': " + why +
                            ". Examples: cpu, cpu:2, cpu:2x512MB, gpu:0, gpu:0,gpu:1, gpu:0:2x1024MB, gpu:0:growth");
}

// "1024MB" -> 1024, "2GB" -> 2048 (TensorFlow's memory_limit is in MiB; MB means MiB here).
std::int64_t parse_size_mb(std::string_view spec, std::string_view text, bool after_count) {
    std::string lower;
    for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::int64_t scale = 1;
    std::string_view number = lower;
    for (auto [suffix, factor] : {std::pair{"mib", 1}, {"gib", 1024}, {"mb", 1}, {"gb", 1024}, {"m", 1}, {"g", 1024}}) {
        const std::string_view s(suffix);
        if (number.size() > s.size() && number.substr(number.size() - s.size()) == s) {
            number.remove_suffix(s.size());
            scale = factor;
            break;
        }
    }
    std::int64_t value = 0;
    constexpr std::int64_t kMaxMb = std::int64_t{1} << 30;  // 1 PiB: far above any device, far below overflow
    if (parse_int(number, value) && value > kMaxMb / scale) {
        bad_spec(spec, "'" + std::string(text) + "' is larger than any device's memory");
    }
    if (!parse_int(number, value) || value <= 0) {
        // After "2x" it can only be a size: say what about it is wrong.
        if (after_count && text.empty()) bad_spec(spec, "a memory limit must follow the 'x', e.g. 2x512MB");
        if (after_count && parse_int(number, value)) bad_spec(spec, "'" + std::string(text) + "' is no memory: a limit is at least 1MB");
        if (after_count) {
            bad_spec(spec, "'" + std::string(text) + "' is not a memory limit: give whole MB or GB (MiB and GiB, as TensorFlow's "
                                                     "memory_limit), e.g. 512MB or 2GB");
        }
        bad_spec(spec, "'" + std::string(text) +
                             "' is neither a replica count (2), a split into virtual devices (2x512MB, 512MB+1024MB) "
                             "nor 'growth'");
    }
    return value * scale;
}

std::string read_cpu_name() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return trim(std::string_view(line).substr(colon + 1));
        }
    }
    return "CPU";
}

// One line of a sysfs file ("48K\n" -> "48K"), or empty.
std::string read_sysfs_line(const std::string& path) {
    std::ifstream file(path);
    std::string line;
    if (!std::getline(file, line)) return {};
    return trim(line);
}

// sysfs writes cache sizes as "48K" or "32768K" (KiB); shown in the largest whole unit.
std::string cache_size_text(const std::string& size) {
    std::int64_t kib = 0;
    std::string_view digits(size);
    if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'k')) digits.remove_suffix(1);
    if (!parse_int(digits, kib) || kib <= 0) return size;
    if (kib % (1024 * 1024) == 0) return std::to_string(kib / (1024 * 1024)) + " GiB";
    if (kib % 1024 == 0) return std::to_string(kib / 1024) + " MiB";
    return std::to_string(kib) + " KiB";
}

}  // namespace

std::string describe_cpu_caches() {
    std::string text;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        const std::string level = read_sysfs_line(dir + "level"), type = read_sysfs_line(dir + "type");
        const std::string size = read_sysfs_line(dir + "size");
        if (level.empty() || size.empty()) continue;
        if (type == "Instruction") continue;  // the code's cache says nothing about the data's traffic
        text += (text.empty() ? "" : ", ") + std::string("L") + level + (type == "Data" ? "d" : "") + " " +
                cache_size_text(size);
    }
    return text;
}

std::string_view device_type_name(DeviceType type) {
    switch (type) {
        case DeviceType::CPU: return "CPU";
        case DeviceType::GPU: return "GPU";
        case DeviceType::Invalid: break;
    }
    return "invalid";
}

std::string PhysicalDevice::id() const { return std::string(device_type_name(type)) + ":" + std::to_string(index); }

PhysicalDevice detect_cpu() {
    PhysicalDevice cpu;
    cpu.type = DeviceType::CPU;
    cpu.index = 0;
    cpu.name = read_cpu_name();
    cpu.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    cpu.total_memory_bytes = pages > 0 && page_size > 0 ? std::int64_t{pages} * page_size : 0;
    const long free_pages = sysconf(_SC_AVPHYS_PAGES);
    cpu.free_memory_bytes = free_pages > 0 && page_size > 0 ? std::int64_t{free_pages} * page_size : 0;
    return cpu;
}

std::int64_t host_available_memory_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::int64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit) {
        if (key == "MemAvailable:") return kib * 1024;
    }
    const long free_pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    return free_pages > 0 && page_size > 0 ? std::int64_t{free_pages} * page_size : 0;
}

DeviceRegistry::DeviceRegistry() : cpu_(detect_cpu()), devices_{cpu_} {}

void DeviceRegistry::add_provider(std::shared_ptr<DeviceProvider> provider) {
    gpu_status_ = provider->status();
    auto devices = provider->devices();
    devices_.insert(devices_.end(), devices.begin(), devices.end());
    providers_.push_back(std::move(provider));
}

std::vector<PhysicalDevice> DeviceRegistry::physical_devices() const { return devices_; }

const PhysicalDevice* DeviceRegistry::find(DeviceType type, int index) const {
    for (const auto& device : devices_) {
        if (device.type == type && device.index == index) return &device;
    }
    return nullptr;
}

DeviceProvider* DeviceRegistry::provider(DeviceType type) const {
    for (const auto& provider : providers_) {
        if (provider->type() == type) return provider.get();
    }
    return nullptr;
}

DeviceConfig DeviceConfig::parse(std::string_view spec) {
    DeviceConfig config;
    if (trim(spec).empty()) bad_spec(spec, "it is empty");
    for (const std::string& part : split(spec, ',')) {
        const std::vector<std::string> fields = split(part, ':');
        DeviceChoice choice;
        std::string kind;
        for (char c : fields[0]) kind += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::size_t next = 1;
        if (kind == "cpu") {
            choice.type = DeviceType::CPU;
            // "cpu:0" names the CPU; "cpu:2" asks for two replicas (there is only one CPU).
            if (fields.size() >= 2 && fields[1] == "0") next = 2;
        } else if (kind == "gpu") {
            choice.type = DeviceType::GPU;
            if (fields.size() < 2) bad_spec(spec, "'gpu' needs an index, e.g. gpu:0");
            std::int64_t index = 0;
            // Bounded before it narrows to int: gpu:99999999999 must not become GPU:1215752191.
            if (!parse_int(fields[1], index) || index < 0 || index > 4095) {
                bad_spec(spec, "'" + fields[1] + "' is not a GPU index (0, 1, ...; see mirrorlab-cli devices)");
            }
            choice.index = static_cast<int>(index);
            next = 2;
        } else {
            bad_spec(spec, "'" + fields[0] + "' is not a device type (cpu or gpu)");
        }
        if (fields.size() > next + 1) bad_spec(spec, "'" + part + "' has too many ':' parts");
        if (fields.size() == next + 1) {
            std::string option = fields[next];
            if (option.size() == 6) {
                std::string lower;
                for (char c : option) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                if (lower == "growth") option = lower;
            }
            std::int64_t count = 0;
            const auto x = option.find_first_of("xX");
            if (option == "growth") {
                choice.mode = MemoryMode::Growth;
            } else if (parse_int(option, count)) {
                if (count <= 0 || count > kMaxReplicas) {
                    bad_spec(spec, "the replica count must be between 1 and " + std::to_string(kMaxReplicas));
                }
                choice.mode = MemoryMode::Whole;
                choice.replicas = static_cast<int>(count);
            } else if (x != std::string::npos && parse_int(option.substr(0, x), count)) {
                if (count <= 0 || count > kMaxReplicas) {
                    bad_spec(spec, "the virtual device count must be between 1 and " + std::to_string(kMaxReplicas));
                }
                choice.mode = MemoryMode::Virtual;
                choice.memory_limits_mb.assign(static_cast<std::size_t>(count), parse_size_mb(spec, option.substr(x + 1), true));
            } else {
                choice.mode = MemoryMode::Virtual;
                for (const std::string& size : split(option, '+')) choice.memory_limits_mb.push_back(parse_size_mb(spec, size, false));
            }
        }
        config.devices.push_back(choice);
    }
    return config;
}

std::string DeviceConfig::to_spec() const {
    std::string spec;
    for (const auto& choice : devices) {
        if (!spec.empty()) spec += ",";
        spec += choice.type == DeviceType::GPU ? "gpu:" + std::to_string(choice.index) : std::string("cpu");
        switch (choice.mode) {
            case MemoryMode::Whole:
                if (choice.replicas != 1) spec += ":" + std::to_string(choice.replicas);
                break;
            case MemoryMode::Growth: spec += ":growth"; break;
            case MemoryMode::Virtual: {
                const auto& limits = choice.memory_limits_mb;
                const bool uniform = std::all_of(limits.begin(), limits.end(), [&](auto v) { return v == limits.front(); });
                if (uniform && !limits.empty()) {
                    spec += ":" + std::to_string(limits.size()) + "x" + std::to_string(limits.front()) + "MB";
                } else {
                    spec += ":";
                    for (std::size_t i = 0; i < limits.size(); ++i) {
                        spec += (i > 0 ? "+" : "") + std::to_string(limits[i]) + "MB";
                    }
                }
                break;
            }
            case MemoryMode::Invalid: break;
        }
    }
    return spec;
}

DeviceConfig DeviceConfig::default_for(const DeviceRegistry& registry) {
    DeviceConfig config;
    for (const auto& device : registry.physical_devices()) {
        if (device.type == DeviceType::GPU) config.devices.push_back({DeviceType::GPU, device.index, MemoryMode::Whole, 1, {}});
    }
    if (config.devices.empty()) config.devices.push_back({DeviceType::CPU, 0, MemoryMode::Whole, 1, {}});
    return config;
}

int DeviceChoice::logical_device_count() const {
    switch (mode) {
        case MemoryMode::Virtual: return static_cast<int>(memory_limits_mb.size());
        case MemoryMode::Whole: return replicas;
        case MemoryMode::Growth: return 1;
        case MemoryMode::Invalid: break;
    }
    return 0;
}

int DeviceConfig::replica_count() const {
    int count = 0;
    for (const auto& choice : devices) count += choice.logical_device_count();
    return count;
}

void DeviceConfig::validate(const DeviceRegistry& registry) const {
    if (devices.empty()) fail("no device is selected; choose at least one CPU or GPU");
    std::set<std::pair<DeviceType, int>> seen;
    bool has_cpu = false, has_gpu = false;
    for (const auto& choice : devices) {
        const std::string id = std::string(device_type_name(choice.type)) + ":" + std::to_string(choice.index);
        if (choice.type == DeviceType::Invalid) fail("a device has no type");
        if (!seen.insert({choice.type, choice.index}).second) {
            fail(id + " is listed twice; list each physical device once (use " +
                 (choice.type == DeviceType::CPU ? std::string("cpu:2") : "gpu:0:2x1024MB") + " for several replicas on it)");
        }
        const PhysicalDevice* physical = registry.find(choice.type, choice.index);
        if (physical == nullptr) {
            if (choice.type == DeviceType::GPU) {
                int gpus = 0;
                for (const auto& d : registry.physical_devices()) gpus += d.type == DeviceType::GPU ? 1 : 0;
                fail(id + " does not exist: this machine has " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") +
                     " (" + registry.gpu_status() + "); use --devices cpu or cpu:2 to train on the CPU");
            }
            fail(id + " does not exist; the CPU is cpu (or cpu:0)");
        }
        (choice.type == DeviceType::CPU ? has_cpu : has_gpu) = true;
        switch (choice.mode) {
            case MemoryMode::Invalid: fail(id + " has no memory mode");
            case MemoryMode::Whole:
                if (choice.replicas < 1 || choice.replicas > kMaxReplicas) {
                    fail(id + ": " + std::to_string(choice.replicas) + " replicas; choose between 1 and " + std::to_string(kMaxReplicas));
                }
                break;
            case MemoryMode::Growth:
                if (!choice.memory_limits_mb.empty()) {
                    fail(id + ": memory growth cannot be combined with virtual devices (TensorFlow forbids it too); "
                              "choose either growth or N virtual devices with limits");
                }
                break;
            case MemoryMode::Virtual: {
                if (choice.memory_limits_mb.empty()) fail(id + ": split into 0 virtual devices; choose at least 1");
                if (static_cast<int>(choice.memory_limits_mb.size()) > kMaxReplicas) {
                    fail(id + ": at most " + std::to_string(kMaxReplicas) + " virtual devices");
                }
                std::int64_t total_mb = 0;
                for (auto limit : choice.memory_limits_mb) {
                    if (limit < kMinVirtualLimitMb) {
                        fail(id + ": a virtual device of " + std::to_string(limit) + " MB is too small; give each at least " +
                             std::to_string(kMinVirtualLimitMb) + " MB");
                    }
                    // Capping each limit keeps the sum and the byte counts far from overflow.
                    total_mb += std::min<std::int64_t>(limit, std::int64_t{1} << 30);
                }
                if (physical->total_memory_bytes > 0 && total_mb > physical->total_memory_bytes / kBytesPerMiB) {
                    fail(id + ": the virtual devices ask for " + std::to_string(total_mb) + " MB in all, but " + physical->name +
                         " has only " + std::to_string(physical->total_memory_bytes / kBytesPerMiB) +
                         " MB; lower the limits or use fewer virtual devices");
                }
                break;
            }
        }
    }
    if (has_cpu && has_gpu) {
        fail("mixing CPU and GPU replicas is not supported: the CPU replica would hold every step back and "
             "the GPUs' all-reduce cannot include it; train on the GPUs alone (gpu:0,...) or on the CPU alone (cpu:2)");
    }
    if (replica_count() > kMaxReplicas) fail("at most " + std::to_string(kMaxReplicas) + " replicas in all");
}

LogicalDevice::LogicalDevice(std::string name, PhysicalDevice physical, std::int64_t memory_limit_bytes,
                             std::unique_ptr<Backend> backend, std::shared_ptr<RawAllocator> allocator)
    : name_(std::move(name)),
      physical_(std::move(physical)),
      arena_(name_, memory_limit_bytes, allocator ? std::move(allocator) : std::make_shared<HostAllocator>()),
      backend_(std::move(backend)) {
    backend_->attach_arena(&arena_);
}

// The fast kernels unless MIRRORLAB_CPU_KERNELS=reference asks for the plain reference ones
// (to compare speed, or to rule the fast kernels out when hunting a numerical difference).
std::unique_ptr<Backend> make_cpu_backend() {
    const char* kernels = std::getenv("MIRRORLAB_CPU_KERNELS");
    if (kernels != nullptr && std::string_view(kernels) == "reference") return std::make_unique<CpuReferenceBackend>();
    return std::make_unique<CpuFastBackend>();
}

std::string LogicalDevicePlan::physical_id() const {
    return std::string(device_type_name(type)) + ":" + std::to_string(physical_index);
}

std::vector<LogicalDevicePlan> plan_logical_devices(const DeviceConfig& config) {
    std::vector<LogicalDevicePlan> planned;
    int next_cpu = 0, next_gpu = 0;
    for (std::size_t c = 0; c < config.devices.size(); ++c) {
        const DeviceChoice& choice = config.devices[c];
        int& next = choice.type == DeviceType::GPU ? next_gpu : next_cpu;
        for (int i = 0; i < std::max(0, choice.logical_device_count()); ++i) {
            LogicalDevicePlan device;
            device.name = "/device:" + std::string(device_type_name(choice.type)) + ":" + std::to_string(next++);
            device.type = choice.type;
            device.physical_index = choice.index;
            device.choice = c;
            if (choice.mode == MemoryMode::Virtual) {
                device.memory_limit_bytes = mib_to_bytes(choice.memory_limits_mb[static_cast<std::size_t>(i)]);
            }
            planned.push_back(std::move(device));
        }
    }
    return planned;
}

std::vector<std::unique_ptr<LogicalDevice>> create_logical_devices(const DeviceConfig& config, DeviceRegistry& registry) {
    config.validate(registry);
    return create_logical_devices(plan_logical_devices(config), registry);
}

std::vector<std::unique_ptr<LogicalDevice>> create_logical_devices(const std::vector<LogicalDevicePlan>& devices,
                                                                   DeviceRegistry& registry) {
    std::vector<std::unique_ptr<LogicalDevice>> logical;
    for (const LogicalDevicePlan& device : devices) {
        const PhysicalDevice* physical = registry.find(device.type, device.physical_index);
        if (physical == nullptr) {
            throw DeviceConfigError("device configuration: " + device.physical_id() + " does not exist");
        }
        if (device.type == DeviceType::CPU) {
            logical.push_back(std::make_unique<LogicalDevice>(device.name, *physical, device.memory_limit_bytes,
                                                              make_cpu_backend(), nullptr));
        } else {
            DeviceProvider* provider = registry.provider(DeviceType::GPU);
            logical.push_back(std::make_unique<LogicalDevice>(device.name, *physical, device.memory_limit_bytes,
                                                              provider->create_backend(device.physical_index),
                                                              provider->create_allocator(device.physical_index)));
            logical.back()->set_provider(provider);
        }
    }
    return logical;
}

}  // namespace mirrorlab
