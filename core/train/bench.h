#pragma once
// The reference-workload benchmark behind `mirrorlab-cli bench`: trains the tutorial model with
// the real fit loop (pipeline, mirrored steps, validation) for a device configuration and
// reports what a person tuning speed needs: ms per step, samples per second, epoch seconds
// (training + validation, median over epochs), per-phase medians, peak RSS, and a scaling table
// of 1..N replicas with one thread each (plus one replica on every thread), and how far the epoch
// is from what the FMA units allow: the epoch's floating-point work over a measured FMA peak.
// The CLI only prints the result; scripts read `bench_to_json`.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/distribute/step_cost_model.h"
#include "core/distribute/worker_communicator.h"
#include "core/optim/optimizer.h"
#include "core/train/step_parts.h"

namespace mirrorlab {

class Model;

struct BenchConfig {
    std::string devices = "cpu:2";  // a DeviceConfig spec (`--devices`)
    std::string data =
        "synthetic";         // a load_dataset spec (`--data`): synthetic, reuters21578:DIR, ...
    int epochs = 3;          // measured epochs; the medians are over these
    std::int64_t steps = 0;  // training steps per epoch (0: the whole epoch)
    int threads = 0;         // CPU threads in all (0: one per core)
    std::int32_t batch_size = 32;
    int scaling_replicas = -1;        // table rows 1..N replicas; -1: the core count, 0: no table
    std::int64_t scaling_steps = 400;  // timed steps per table row, over all rounds
    // Nadam as which Keras (`--keras-semantics`; OptimizerConfig::follow_keras): the Embedding
    // update's cost differs (TF2's row counts, Keras 3's squared slices, none for dense).
    EmbeddingUpdate keras_semantics = EmbeddingUpdate::TF2;
    // Under mpirun: this process is one worker of several (MultiWorkerMirroredStrategy); `devices`
    // are its own, the numbers the job's (global batch per step), and there is no scaling table.
    WorkerCommunicator* workers = nullptr;
    // Timed steps of the layer-by-layer breakdown (step_parts.h; 0: none). Not under mpirun.
    int step_parts_steps = 60;
};

// Medians over the timed steps; a step's phase time is its slowest replica's.
struct PhaseTimes {
    double data_wait_ms = 0.0;
    double forward_ms = 0.0;
    double backward_ms = 0.0;
    double allreduce_ms = 0.0;  // includes waiting for the slowest replica
    double update_ms = 0.0;
    double other_ms = 0.0;  // step time not in any phase: hand-offs between threads, events
};

struct BenchRun {
    std::string devices;
    int replicas = 0;
    int threads = 0;  // CPU threads in all
    std::int64_t steps_per_epoch = 0;
    std::int64_t validation_steps = 0;
    double ms_per_step = 0.0;         // median over all timed steps
    double samples_per_second = 0.0;  // global batch / ms_per_step
    double epoch_seconds = 0.0;       // median epoch: training pass + validation
    double train_seconds = 0.0;       // median training pass
    double validation_seconds = 0.0;  // median validation pass
    // CPU time of the whole process per epoch (all threads, user + system): the work done,
    // which unlike wall time hardly depends on what else the machine runs.
    double cpu_seconds_per_epoch = 0.0;
    std::vector<double> epoch_seconds_each;
    PhaseTimes phases;
    // The snapshot a checkpoint starts with, taken at each epoch's end (median): weights and
    // optimizer slots, the deferred moment decays paid. The replicas wait for it.
    double epoch_end_snapshot_ms = 0.0;
    double peak_rss_mib = 0.0;  // of this run alone where the kernel can reset the peak
    std::int64_t allreduce_buffer_bytes = 0;  // what one replica's all-reduce sums
    double final_loss = 0.0;    // training loss of the last epoch (a sanity check)
};

struct ScalingRow {
    int replicas = 0;
    int threads = 0;  // in all
    double samples_per_second = 0.0;
    double ms_per_step = 0.0;
    // Median over the rounds of samples/s over (replicas x the same round's 1-replica-1-thread
    // samples/s); for the 1-replica-N-thread row, its speed-up over that row.
    double efficiency = 0.0;
    // Not a mirrored run: `replicas` independent one-thread trainings at once, each on one
    // replica's shard; its efficiency is the machine's parallel capacity for this very work.
    bool independent_copies = false;
};

// The floating-point work of a model's GEMM-shaped layers (Conv1D and Dense), per sample; the
// elementwise ops (activations, pooling, softmax, the embedding lookup, the optimizer) are left
// out. A layer that maps P positions of D inputs to U outputs (Conv1D: P output steps,
// D = kernel_size x input channels, U = filters; Dense: P = 1 for a flat input, D its width,
// U = units) does one multiply-add per (position, input, output):
//   forward  F = 2 P D U
//   backward F for the weight gradient, + F for the input gradient except in the first layer
//            (whose input is the token ids); the bias gradients (P U adds) are left out.
// The tutorial model: conv1 2 x 296 x 35 x 64, conv2 2 x 146 x 192 x 32, dense 2 x 2,336 x 46,
// 3.34 MFLOP forward and 10.0 MFLOP forward + backward per sample; an epoch of Reuters' 8,982
// training and 2,246 validation samples is 8,982 x 10.0 M + 2,246 x 3.34 M = 97.4 GFLOP.
struct ModelFlops {
    double forward_per_sample = 0.0;
    double training_per_sample = 0.0;  // forward + backward
};
ModelFlops model_flops(const Model& model);
// training_per_sample x the samples trained + forward_per_sample x the samples validated.
double epoch_flops(const Model& model, std::int64_t trained_samples, std::int64_t validated_samples);

// What the FMA units of this machine give the instruction set of the fast kernels
// (fast::KernelTable::fma_probe): one thread alone, and one thread per core all at once (the
// best ~2 ms slice of each thread while all run, summed; a shared machine's neighbours lower it).
struct FmaPeak {
    std::string isa;  // "avx512", "avx2", "generic"
    int threads = 0;  // of the all-core figure
    double one_core_gflops = 0.0;
    double all_core_gflops = 0.0;
};
// About `seconds` in all (a third on one thread, the rest on all of them).
FmaPeak measure_fma_peak(int threads, double seconds = 0.09);

struct BenchResult {
    BenchConfig config;
    int workers = 1;  // processes training together (mpirun -np K)
    std::string cpu;
    std::string cpu_caches;  // describe_cpu_caches(): "L1d 48 KiB, L2 2 MiB, L3 300 MiB", or empty
    int cores = 0;
    // What the machine gives parallel work right now: the throughput of one copy of the model's
    // convolution kernel per core, all running at once, over one copy alone (2.0 on two idle
    // cores). Replicas cannot scale beyond it; on a shared machine it explains a low efficiency.
    double parallel_capacity = 0.0;
    int parallel_capacity_threads = 0;  // the threads it was measured with (0: not measured)
    std::string backend;                // "cpu-fast (avx512)", "cpu-reference"
    std::string kernel_isa;             // the fast kernels' instruction set ("" for the reference)
    std::string data;                   // the data set's name
    std::int64_t train_samples = 0, validation_samples = 0;
    BenchRun run;
    // The epoch against the machine: its GEMM work (model_flops) for the samples one epoch of the
    // run trains and validates, that over the median epoch, the peak of the FMA units on every
    // core, and the floor = epoch_flops / all-core peak: no epoch of this work can be shorter.
    FmaPeak fma_peak;
    double epoch_flops = 0.0;
    double achieved_gflops = 0.0;  // epoch_flops / run.epoch_seconds
    double floor_seconds = 0.0;
    double floor_ratio = 0.0;  // run.epoch_seconds / floor_seconds (1.0 would be the floor)
    // The same in CPU time, which a shared machine's neighbours hardly move: the work at one
    // core's peak, and run.cpu_seconds_per_epoch over it (barrier and pool spinning included).
    double cpu_floor_seconds = 0.0;
    double cpu_floor_ratio = 0.0;
    // What a user sees of the process (resident memory, MiB): at the start of the bench (the
    // program, its libraries and whatever the CUDA probe loaded), what loading and encoding the
    // data set added, and the whole process's peak through the main run, never reset.
    double startup_rss_mib = 0.0;
    double data_rss_mib = 0.0;
    double process_peak_rss_mib = 0.0;
    // One replica's step on one thread, layer by layer (step_parts.h), on the run's shard.
    StepParts step_parts;
    std::vector<ScalingRow> scaling;
    int scaling_rounds = 0;
    // For the what-if scaling model (mirrorlab-cli whatif): how fast this thread adds gradients
    // (GB/s of one operand), and under mpirun the link probe between the workers (timed
    // all-gathers before training) with the α-β line fitted to it.
    double add_gbytes_per_second = 0.0;
    std::vector<LinkSample> link_samples;
    LinkModel link;  // empty name: no probe (one worker)  // each row was measured once per round, interleaved with the others
};

// Runs the benchmark; `progress` gets a line per finished part. Throws mirrorlab::Error for
// a bad device spec or data set.
BenchResult run_bench(const BenchConfig& config,
                      const std::function<void(const std::string&)>& progress = {});

std::string bench_to_json(const BenchResult& result);

}  // namespace mirrorlab
