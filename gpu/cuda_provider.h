#pragma once
// Device discovery through the CUDA runtime, and the factory for what a logical device on a GPU
// needs: a CudaBackend (own stream), a CudaAllocator under its arena (which enforces the logical
// device's memory limit), and NCCL when every replica has a GPU of its own. Discovery and memory
// need only the CUDA runtime; the backend and NCCL come from the compute module, which the first
// of them loads (gpu/compute_loader.h), so listing the GPUs does not map cuBLAS, cuDNN or NCCL.
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/device/device.h"

namespace mirrorlab::cuda {

// cudaMalloc / cudaFree on one GPU. Returns null when the GPU is out of memory, so that the arena
// reports it with the device's name; other CUDA errors are reported the same way.
class CudaAllocator final : public RawAllocator {
public:
    explicit CudaAllocator(int device) : device_(device) {}
    void* allocate_raw(std::int64_t bytes) override;
    void free_raw(void* pointer) override;
    // Names the GPU and what it has free: on a shared GPU other programs may hold the memory
    // that the virtual devices' limits promised.
    std::string refusal(std::int64_t bytes, std::string_view what) const override;

private:
    int device_ = 0;
};

class CudaDeviceProvider final : public DeviceProvider {
public:
    CudaDeviceProvider();  // discovers; never throws (problems end up in status())

    DeviceType type() const override { return DeviceType::GPU; }
    std::vector<PhysicalDevice> devices() const override { return devices_; }
    // Discovery's line, and whether cuBLAS, cuDNN and NCCL (the compute module) are loaded yet.
    std::string status() const override;
    std::unique_ptr<Backend> create_backend(int physical_index) override;
    std::shared_ptr<RawAllocator> create_allocator(int physical_index) override;
    bool supports_collectives() const override;
    std::unique_ptr<CrossDeviceOps> create_all_reduce(const std::vector<LogicalDevice*>& devices) override;
    std::int64_t free_memory_bytes(int physical_index) const override;

private:
    int cuda_ordinal(int physical_index) const;  // throws DeviceConfigError for an unknown index

    std::vector<PhysicalDevice> devices_;  // index = CUDA ordinal; unusable GPUs are left out
    std::string status_;  // what discovery found; status() adds the compute module's state
    // The GPUs a backend was created on in this process (each holds a CUDA context from then on, so
    // the set never shrinks): peer access is turned on between them, and only them.
    mutable std::mutex in_use_mutex_;
    std::set<int> in_use_;
};

}  // namespace mirrorlab::cuda
