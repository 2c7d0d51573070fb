#pragma once
// What a training step's calls into CUDA cost the host, from counts of them (the CUDA host
// emulator's, mirrorlab_emulation_counters.h): an estimate of the launch and wait overhead only,
// not of the device's work, until the device check measures the real thing.
//
// The per-call figures are typical published ones, not this program's measurements:
//  - NVIDIA Developer Blog, "Getting Started with CUDA Graphs" (A. Gray, 2019): a short kernel
//    took 9.6 us per launch with a cudaStreamSynchronize after each, 3.8 us launched back to back
//    on one stream, 3.4 us from a graph; so ~3-4 us a launch and ~5-6 us more for each wait.
//  - CUDA C++ Best Practices Guide, "Data Transfer Between Host and Device" and "Asynchronous and
//    Overlapping Transfers with Computation": each synchronous transfer or stream synchronisation
//    stalls the host until the device drains, and small transfers are dominated by their fixed
//    overhead (several microseconds each), so batch them and keep the host ahead of the device.
//  - A graph launch: issue #21's working assumption of 5 us + ~1 us per node, of the order the blog
//    post's graph figures suggest; the device check should replace it with a measurement.
//  - cudaEventRecord and cudaStreamWaitEvent only append a marker or a dependency to a stream's
//    queue, no kernel: assumed at 2 us each, under a launch, until the device check measures them.
// A wait also costs the device work still queued when it starts: the model counts only the call.
#include <cstdint>

namespace mirrorlab::test {

struct HostCallCounts {
    double launches = 0.0;    // kernels and library calls (cuBLAS, cuDNN, NCCL) that launch kernels
    double copies = 0.0;      // async copies and memsets: a launch's cost each
    double host_syncs = 0.0;  // calls that block the host until the device is done
    double event_calls = 0.0;  // cudaEventRecord, cudaStreamWaitEvent
    double graph_launches = 0.0;
    double graph_nodes = 0.0;  // nodes in the graphs launched (0 while there are none)
};

struct HostCostModel {
    double launch_us = 3.0;        // typical: 2.5-4 us
    double sync_us = 7.5;          // typical: 5-10 us, plus whatever device work is still queued
    double graph_launch_us = 5.0;  // typical: ~5 us
    double graph_node_us = 1.0;    // typical: ~1 us per node
    double event_us = 2.0;         // assumed (see above)

    double host_us(const HostCallCounts& counts) const {
        return (counts.launches + counts.copies) * launch_us + counts.host_syncs * sync_us +
               counts.event_calls * event_us + counts.graph_launches * graph_launch_us +
               counts.graph_nodes * graph_node_us;
    }
};

// Issue #21's goal for the host's share of a step.
inline constexpr double kStepHostGoalUs = 500.0;

}  // namespace mirrorlab::test
