#include "gpu/cuda_provider.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

#include "core/util/error.h"
#include "gpu/compute_loader.h"
#include "gpu/cuda_errors.h"
#include "gpu/nvml.h"

#ifndef MIRRORLAB_CUDA_ARCHITECTURES
#define MIRRORLAB_CUDA_ARCHITECTURES ""
#endif

namespace mirrorlab::cuda {

namespace {

std::string cuda_version_text(int version) {  // 13000 -> "13.0"
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The oldest compute capability the kernels were compiled for ("75 80 86" -> 75); 0 when unknown.
int oldest_architecture() {
    std::istringstream list(MIRRORLAB_CUDA_ARCHITECTURES);
    int oldest = 0;
    for (std::string entry; list >> entry;) {
        int value = 0;
        std::size_t digits = 0;
        while (digits < entry.size() && std::isdigit(static_cast<unsigned char>(entry[digits])) != 0) {
            value = value * 10 + (entry[digits] - '0');
            ++digits;
        }
        if (digits > 0 && (oldest == 0 || value < oldest)) oldest = value;
    }
    return oldest;
}

// NVML's free memory of `device`, when NVML's view is the GPU CUDA sees: a MIG slice has its parent
// GPU's bus id, and NVML then answers for the whole GPU (a total far from the slice's). NVML's
// total also counts memory the driver keeps, so the device's total stays CUDA's.
std::optional<std::int64_t> nvml_free_bytes(const PhysicalDevice& device) {
    const std::optional<NvmlMemory> memory = nvml_memory(device.bus_id);
    if (!memory || device.total_memory_bytes <= 0) return std::nullopt;
    const double ratio = static_cast<double>(memory->total_bytes) / static_cast<double>(device.total_memory_bytes);
    if (ratio < 0.9 || ratio > 1.1 || memory->free_bytes < 0) return std::nullopt;
    return std::min(memory->free_bytes, device.total_memory_bytes);
}

// GPU `ordinal` as a PhysicalDevice, or none when its properties cannot be read or the kernels
// were not built for it (said in `notes`).
std::optional<PhysicalDevice> discover_gpu(int ordinal, int oldest, std::string& notes) {
    cudaDeviceProp properties{};
    if (const cudaError_t error = cudaGetDeviceProperties(&properties, ordinal); error != cudaSuccess) {
        cudaGetLastError();
        notes += "; GPU:" + std::to_string(ordinal) + " skipped (" + error_text(error) + ")";
        return std::nullopt;
    }
    const int capability = properties.major * 10 + properties.minor;
    const std::string capability_text = std::to_string(properties.major) + "." + std::to_string(properties.minor);
    if (oldest > 0 && capability < oldest) {
        notes += "; GPU:" + std::to_string(ordinal) + " (" + properties.name + ", compute capability " +
                 capability_text + ") skipped: the kernels need " + std::to_string(oldest / 10) + "." +
                 std::to_string(oldest % 10) + " or newer";
        return std::nullopt;
    }
    PhysicalDevice device;
    device.type = DeviceType::GPU;
    device.index = ordinal;
    device.name = properties.name;
    device.cores = properties.multiProcessorCount;
    device.compute_capability = capability_text;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal) == cudaSuccess) device.bus_id = bus_id;
    cudaGetLastError();
    device.total_memory_bytes = static_cast<std::int64_t>(properties.totalGlobalMem);
    if (const std::optional<std::int64_t> free_bytes = nvml_free_bytes(device)) {
        device.free_memory_bytes = *free_bytes;
        return device;
    }
    // Without NVML only a CUDA context on the GPU can tell (cudaSetDevice makes one since CUDA 12).
    if (nvml_problem().empty()) {
        notes += "; GPU:" + std::to_string(ordinal) + " free memory read through a CUDA context (NVML does not report this "
                 "GPU as CUDA sees it: a MIG slice?)";
    }
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(ordinal) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        device.free_memory_bytes = static_cast<std::int64_t>(free_bytes);
        device.total_memory_bytes = static_cast<std::int64_t>(total_bytes);
    } else {
        cudaGetLastError();
        notes += "; GPU:" + std::to_string(ordinal) + " free memory unknown";
    }
    return device;
}

bool can_access_peer(int from, int to) {
    int can_access = 0;
    if (cudaDeviceCanAccessPeer(&can_access, from, to) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return can_access != 0;
}

// The pairs that could read each other's memory directly: "GPU:0<->GPU:1, ...". Asking makes no
// context; peer access itself is turned on only between the GPUs a run uses (create_backend).
std::string peer_pairs(const std::vector<PhysicalDevice>& devices) {
    std::string peers;
    for (const auto& from : devices) {
        for (const auto& to : devices) {
            if (from.index < to.index && can_access_peer(from.index, to.index) && can_access_peer(to.index, from.index)) {
                peers += (peers.empty() ? "" : ", ") + from.id() + "<->" + to.id();
            }
        }
    }
    return peers;
}

// Lets `from`'s kernels and copies read `to`'s buffers directly (a replica's copy from another
// GPU uses it); both already hold a context, as GPUs in use do.
void enable_peer_access(int from, int to) {
    if (!can_access_peer(from, to) || cudaSetDevice(from) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    cudaDeviceEnablePeerAccess(to, 0);  // cudaErrorPeerAccessAlreadyEnabled: as good
    cudaGetLastError();
}

}  // namespace

void* CudaAllocator::allocate_raw(std::int64_t bytes) {
    if (cudaSetDevice(device_) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    void* pointer = nullptr;
    if (cudaMalloc(&pointer, static_cast<std::size_t>(MemoryArena::rounded_size(bytes))) != cudaSuccess) {
        cudaGetLastError();  // out of memory is not sticky: clear it so later calls do not see it
        return nullptr;
    }
    return pointer;
}

std::string CudaAllocator::refusal(std::int64_t bytes, std::string_view what) const {
    std::size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaSetDevice(device_) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    cudaGetLastError();
    const std::string gpu = "GPU:" + std::to_string(device_);
    if (!known) {
        // Not even its free memory can be read: the GPU is in an error state, not merely full.
        return gpu + " refused " + format_bytes(bytes) + " for " + std::string(what) +
               " and does not answer (its CUDA context may have failed); restart MirrorLab, and check the GPU "
               "with nvidia-smi";
    }
    return gpu + " refused " + format_bytes(bytes) + " for " + std::string(what) + " with " +
           format_bytes(static_cast<std::int64_t>(free_bytes)) + " of its " +
           format_bytes(static_cast<std::int64_t>(total_bytes)) +
           " free (other programs and the CUDA libraries also use its memory). Close programs that use " + gpu +
           ", or lower the memory limits or the batch size.";
}

void CudaAllocator::free_raw(void* pointer) {
    if (pointer == nullptr) return;
    cudaSetDevice(device_);
    cudaFree(pointer);  // waits for the work that may still use it
}

CudaDeviceProvider::CudaDeviceProvider() {
    int runtime_version = 0, driver_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    cudaDriverGetVersion(&driver_version);  // 0 where no driver is installed
    const std::string versions = "CUDA runtime " + cuda_version_text(runtime_version) +
                                 (driver_version > 0 ? ", driver " + cuda_version_text(driver_version)
                                                     : std::string(", no driver"));
    int count = 0;  // cudaGetDeviceCount leaves it untouched when it fails
    const cudaError_t result = cudaGetDeviceCount(&count);
    if (result != cudaSuccess) {
        cudaGetLastError();
        if (result == cudaErrorInsufficientDriver && driver_version == 0) {
            status_ = "no CUDA driver found: cudaGetDeviceCount returned " + error_text(result) + "; " + versions;
        } else if (result == cudaErrorInsufficientDriver) {
            status_ = "CUDA driver too old: it supports CUDA " + cuda_version_text(driver_version) +
                      ", the CUDA backend needs " + cuda_version_text(runtime_version) + " (" + error_text(result) + ")";
        } else if (result == cudaErrorNoDevice) {
            status_ = "no CUDA GPU found: " + error_text(result) + "; " + versions;
        } else {
            status_ = "CUDA initialisation failed: cudaGetDeviceCount returned " + error_text(result) + "; " + versions;
        }
        return;
    }
    if (count == 0) {
        status_ = "no CUDA GPU found; " + versions;
        return;
    }
    const int oldest = oldest_architecture();
    std::string notes;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        if (auto device = discover_gpu(ordinal, oldest, notes)) devices_.push_back(*device);
    }

    // Discovery makes no CUDA context (NVML reads the free memory); say so where it had to.
    const std::string peers = peer_pairs(devices_);
    const std::size_t gpus = devices_.size();
    status_ = versions + ": " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s");
    if (gpus > 1) status_ += peers.empty() ? ", no peer access" : ", peer access " + peers + " when a run uses them";
    if (gpus > 0 && !nvml_problem().empty()) {
        status_ += "; free memory read through a CUDA context on every GPU (NVML: " + nvml_problem() + ")";
    }
    status_ += notes;
}

std::string CudaDeviceProvider::status() const {
    if (devices_.empty()) return status_;
    // cuBLAS, cuDNN and NCCL are the compute module's; it is opened by the first GPU that trains.
    const ComputeModuleState compute = compute_module_state();
    if (!compute.versions.empty()) return status_ + "; " + compute.versions + " loaded";
    if (!compute.failure.empty()) return status_ + "; the GPUs cannot train: " + compute.failure;
    return status_ + "; cuBLAS, cuDNN and NCCL load when a GPU trains";
}

int CudaDeviceProvider::cuda_ordinal(int physical_index) const {
    for (const auto& device : devices_) {
        if (device.index == physical_index) return device.index;
    }
    throw DeviceConfigError("device configuration: GPU:" + std::to_string(physical_index) +
                            " does not exist or is not usable (" + status_ + ")");
}

std::unique_ptr<Backend> CudaDeviceProvider::create_backend(int physical_index) {
    const int ordinal = cuda_ordinal(physical_index);
    const ComputeModuleApi& compute = compute_module("GPU:" + std::to_string(ordinal));
    try {
        std::unique_ptr<Backend> backend = compute.create_backend(ordinal);
        // Peer access between this GPU and the others this process has trained on, both ways, once a pair.
        std::lock_guard lock(in_use_mutex_);
        if (in_use_.insert(ordinal).second) {
            for (const int other : in_use_) {
                if (other == ordinal) continue;
                enable_peer_access(ordinal, other);
                enable_peer_access(other, ordinal);
            }
            cudaSetDevice(ordinal);
        }
        return backend;
    } catch (const OpError& error) {
        // A stream, cuBLAS or cuDNN that will not start is the machine's state, not the model's.
        throw DeviceConfigError("device configuration: GPU:" + std::to_string(ordinal) + " could not be set up: " +
                                error.what() + ". The GPU may be out of memory or held by another process, or its "
                                "driver may not suit this CUDA; check nvidia-smi, or train on the CPU (--devices cpu)");
    }
}

std::shared_ptr<RawAllocator> CudaDeviceProvider::create_allocator(int physical_index) {
    return std::make_shared<CudaAllocator>(cuda_ordinal(physical_index));
}

bool CudaDeviceProvider::supports_collectives() const {
#if MIRRORLAB_HAVE_NCCL
    return devices_.size() > 1;
#else
    return false;
#endif
}

std::unique_ptr<CrossDeviceOps> CudaDeviceProvider::create_all_reduce(const std::vector<LogicalDevice*>& devices) {
    if (!supports_collectives() || devices.size() < 2) return nullptr;
    std::vector<int> ordinals;
    std::set<int> seen;
    for (const LogicalDevice* device : devices) {
        if (device->physical().type != DeviceType::GPU) return nullptr;
        const int ordinal = cuda_ordinal(device->physical().index);
        if (!seen.insert(ordinal).second) return nullptr;  // virtual devices of one GPU: no NCCL
        ordinals.push_back(ordinal);
    }
    std::string gpus;
    for (int ordinal : ordinals) gpus += (gpus.empty() ? "NCCL over GPU:" : ", GPU:") + std::to_string(ordinal);
    return compute_module(gpus).create_nccl_all_reduce(std::move(ordinals));
}

std::int64_t CudaDeviceProvider::free_memory_bytes(int physical_index) const {
    for (const auto& device : devices_) {
        if (device.index != physical_index) continue;
        if (const std::optional<std::int64_t> free_bytes = nvml_free_bytes(device)) return *free_bytes;
    }
    {
        // Through the CUDA runtime only where this process holds a context already; 0 (unknown:
        // the caller keeps what discovery saw) rather than make one on a GPU no run uses.
        std::lock_guard lock(in_use_mutex_);
        if (in_use_.count(physical_index) == 0) return 0;
    }
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(physical_index) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return static_cast<std::int64_t>(free_bytes);
}

}  // namespace mirrorlab::cuda
