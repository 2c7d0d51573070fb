#pragma once
// Calibrating the what-if step model (core/distribute/step_cost_model.h) from runs measured here:
// `mirrorlab-cli bench --json` results (the CLI's `whatif`) or a scaling experiment (the GUI's
// Scaling panel), and the predictions it makes for a range of clusters.
#include <optional>
#include <string>
#include <vector>

#include "core/distribute/step_cost_model.h"
#include "core/train/bench.h"
#include "core/train/scaling.h"

namespace mirrorlab {

struct WhatIfCalibration {
    ComputeProfile profile;
    std::vector<ComputeSample> compute_samples;  // one-replica runs
    std::optional<LinkModel> measured_link;      // from a multi-worker bench's link probe
    std::vector<std::string> sources;            // what was read, for the report
    bool host_known = false;                     // the profile's host figures are set
    struct IndependentRun {
        int copies = 0;
        double shard = 0.0;               // samples per copy per step
        double samples_per_second = 0.0;  // all copies together
    };
    std::optional<IndependentRun> independent;  // a bench's independent trainings on every core
    std::string capacity_source = "the kernel probe";  // where profile.parallel_capacity comes from
};

// Adds one bench result, as `bench --json` prints it (`name` says where it came from in errors):
// a one-worker one-replica run gives a compute sample (forward + backward, update, the rest) and
// the host (cores; parallel capacity from its scaling table's independent trainings, else from
// the kernel probe; add speed; gradient bytes); a multi-worker run gives its link probe. Throws mirrorlab::Error for a text that is not such a result or gives neither.
void add_bench_json(WhatIfCalibration& calibration, const std::string& json_text, const std::string& name);
void add_bench_result(WhatIfCalibration& calibration, const BenchResult& result, const std::string& name);

// From a scaling experiment: each row's slowest replica's compute at its largest shard, the rest of
// the step from the one-replica row, the intra-worker link from the multi-replica rows'
// communication. Throws mirrorlab::Error without a completed one-replica row.
// `parallel_capacity` 0: not measured (every core counted whole).
void add_scaling_experiment(WhatIfCalibration& calibration, const ScalingExperiment& experiment, int cores,
                            double parallel_capacity = 0.0);

// Fits the compute line; throws as fit_compute does. Call after the last add_*.
void finish_calibration(WhatIfCalibration& calibration);

// One row per worker count × global batch, in that order; a combination with fewer samples than
// devices is left out, and said in `left_out` where given ("64 workers x 1 at global batch 32").
std::vector<StepPrediction> predict_range(const ComputeProfile& profile, ClusterShape shape,
                                          const std::vector<int>& worker_counts,
                                          const std::vector<std::int64_t>& global_batches, bool all_on_one_host,
                                          std::vector<std::string>* left_out = nullptr);

}  // namespace mirrorlab
