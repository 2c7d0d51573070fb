#pragma once
// What the emulated GPUs were asked to do, counted per process since the last reset: the calls a
// real GPU would charge the host for (tests/test_gpu_step_budget.cpp turns them into a step's host
// time). The emulator's own bookkeeping (NCCL draining the ranks' streams, a destroyed stream
// finishing its work) is not counted; only the calls gpu/ makes.
//
// Work issued to a capturing stream (cudaStreamBeginCapture) is not counted as a launch, copy or
// event call: it becomes a node of the captured graph (captured_nodes: kernels, copies, memsets,
// library calls and event record nodes, cudaEventRecordWithFlags with cudaEventRecordExternal), and
// each cudaGraphLaunch costs the host one graph launch (graph_launches) however many nodes it runs
// (graph_nodes_launched), and no kernel launch, library launch or copy. cudaEventRecord and
// cudaStreamWaitEvent in a capture add no node, only an order between its streams: they stay
// event calls. Refused calls (capture-unsupported) and work dropped by an invalidated capture count
// nowhere.
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct MirrorlabEmulationCounters {
    // Work a GPU runs as a launch: the emulated kernels (gpu/kernels.cu through MIRRORLAB_LAUNCH)
    // and the library calls that launch kernels (cublasSgemm, the three cuDNN convolution passes,
    // ncclAllReduce once per rank).
    uint64_t kernel_launches;
    uint64_t library_launches;
    // Copies and memsets queued on a stream (cudaMemcpyAsync host-to-device and device-to-device,
    // to pinned host memory, cudaMemcpyPeerAsync, cudaMemsetAsync): a launch's host cost each, no
    // wait. A host-to-device
    // copy from pageable memory is staged by the driver (host_to_device_pageable counts them):
    // fine for a few bytes, a hidden wait for large ones on a GPU.
    uint64_t copies;
    uint64_t host_to_device_pageable;
    // Calls that block the host until device work is done: cudaStreamSynchronize,
    // cudaDeviceSynchronize, cudaEventSynchronize, a copy to pageable host memory (cudaMemcpyAsync
    // device-to-host or host-to-host returns once the copy is complete) and cudaFree (waits for
    // its device).
    uint64_t host_syncs;
    uint64_t graph_launches;        // cudaGraphLaunch calls
    uint64_t graph_nodes_launched;  // the nodes those launches queued (counted at the launch)
    uint64_t captured_nodes;        // nodes made by capture (host cost paid once, at capture)
    // cudaEventRecord and cudaStreamWaitEvent: no wait, about a launch's host cost each (the
    // step's phase marks and the cross-replica ordering of the all-reduce).
    uint64_t event_calls;
    uint64_t malloc_calls;
    uint64_t malloc_bytes;  // as requested; an arena's one big block counts once, at start-up
    uint64_t free_calls;
};

// Exported by libmirrorlab_cuda_emulation.so.
__attribute__((visibility("default"))) void mirrorlab_emulation_counters(
    struct MirrorlabEmulationCounters* counters);
__attribute__((visibility("default"))) void mirrorlab_emulation_reset_counters(void);

// The emulated GPUs that hold a CUDA context of this process, bit d for GPU d: cudaSetDevice makes
// one (as it does since CUDA 12), and so do the calls that use the current device without it
// (cudaMalloc, cudaMemGetInfo, stream creation, the default stream, cudaDeviceSynchronize, peer
// access). A real context costs the GPU a few hundred MB and shows the program in nvidia-smi.
__attribute__((visibility("default"))) uint64_t mirrorlab_emulation_context_devices(void);
// 1 when cudaDeviceEnablePeerAccess(peer) was called on `device`, else 0.
__attribute__((visibility("default"))) int mirrorlab_emulation_peer_enabled(int device, int peer);

#ifdef __cplusplus
}
#endif
