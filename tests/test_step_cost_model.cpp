// The what-if scaling model (core/distribute/step_cost_model.h, core/train/what_if.h): each
// all-reduce algorithm's α-β cost against hand-computed values, the fits recovering known lines,
// the predictions a user reads in the Scaling panel and `mirrorlab-cli whatif` (slower links
// scale worse, cores shared by too many workers slow each one), and clear refusals of what cannot
// run or was never calibrated.
#include <QtTest/QtTest>

#include <cmath>
#include <string>

#include "core/distribute/step_cost_model.h"
#include "core/train/what_if.h"
#include "core/util/error.h"
#include "support/error_text.h"

using namespace mirrorlab;

namespace {

const LinkModel kTestLink{"test link", 10.0, 1.0, "test"};  // 10 us, 1 GB/s
constexpr double kAdd = 10.0;                               // GB/s

ComputeProfile gpu_profile() {
    ComputeProfile profile;
    profile.device = "test GPU";
    profile.shares_host_cores = false;
    profile.fixed_ms = 1.0;
    profile.per_sample_ms = 0.1;
    profile.update_ms = 0.5;
    profile.other_ms = 0.2;
    profile.gradient_bytes = 1e6;
    profile.add_gbytes_per_second = kAdd;
    profile.intra_link = kTestLink;
    return profile;
}

// A `bench --json` result of one replica, as the CLI prints it (the fields the calibration reads).
std::string one_replica_bench(int batch, double forward_ms, double backward_ms, double samples_per_second = 1000.0,
                              const std::string& scaling_rows = "") {
    return "{\"cpu\": \"Test CPU\", \"cores\": 2, \"workers\": 1, \"parallel_capacity\": 1.8, \"kernel_isa\": \"avx2\","
           " \"add_gbytes_per_second\": 8.0, \"batch_size\": " +
           std::to_string(batch) + ", \"scaling\": [" + scaling_rows + "]" +
           ", \"run\": {\"devices\": \"cpu\", \"threads\": 1, \"replicas\": 1, \"allreduce_buffer_bytes\": 1455356, \"samples_per_second\": " +
           std::to_string(samples_per_second) + ", \"phases\": {\"data_wait_ms\": 0.01,"
           " \"forward_ms\": " +
           std::to_string(forward_ms) + ", \"backward_ms\": " + std::to_string(backward_ms) +
           ", \"allreduce_ms\": 0.0, \"update_ms\": 0.4, \"other_ms\": 0.09}}}";
}

}  // namespace

class StepCostModelTest : public QObject {
    Q_OBJECT

private slots:
    void allReduceCostsMatchTheTextbook() {
        // p = 4, n = 10^6 bytes, α = 10 us, β = 1 ns/byte, γ = 0.1 ns/byte.
        QVERIFY(std::abs(all_reduce_seconds(CollectiveAlgorithm::Ring, 4, 1e6, kTestLink, kAdd) - 1.635e-3) < 1e-9);
        QVERIFY(std::abs(all_reduce_seconds(CollectiveAlgorithm::Tree, 4, 1e6, kTestLink, kAdd) - 4.24e-3) < 1e-9);
        QVERIFY(std::abs(all_reduce_seconds(CollectiveAlgorithm::ReduceToOne, 4, 1e6, kTestLink, kAdd) - 6.36e-3) < 1e-9);
        QVERIFY(std::abs(all_reduce_seconds(CollectiveAlgorithm::GatherThenFold, 4, 1e6, kTestLink, kAdd, 2) - 6.53e-3) < 1e-9);
        for (auto algorithm : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree, CollectiveAlgorithm::ReduceToOne,
                               CollectiveAlgorithm::GatherThenFold}) {
            QCOMPARE(all_reduce_seconds(algorithm, 1, 1e6, kTestLink, kAdd), 0.0);  // alone: nothing to send
        }
    }

    void ringWinsLargeMessagesTreeWinsSmallOnes() {
        // 16 participants: the ring's bandwidth term stays ~2n β while the tree's grows with log p;
        // for 8 bytes the latency terms decide, 2(p-1) = 30 messages against 2 log2 p = 8.
        const double ring_large = all_reduce_seconds(CollectiveAlgorithm::Ring, 16, 64e6, kTestLink, kAdd);
        const double tree_large = all_reduce_seconds(CollectiveAlgorithm::Tree, 16, 64e6, kTestLink, kAdd);
        const double reduce_large = all_reduce_seconds(CollectiveAlgorithm::ReduceToOne, 16, 64e6, kTestLink, kAdd);
        QVERIFY(ring_large < tree_large);
        QVERIFY(tree_large < reduce_large);
        QVERIFY(all_reduce_seconds(CollectiveAlgorithm::Tree, 16, 8, kTestLink, kAdd) <
                all_reduce_seconds(CollectiveAlgorithm::Ring, 16, 8, kTestLink, kAdd));
    }

    void linkFitRecoversLatencyAndBandwidth() {
        // All-gathers among 3 workers on a 4 us, 5 GB/s link: t = 2 (α + m β).
        std::vector<LinkSample> samples;
        for (double bytes : {8.0, 16384.0, 1048576.0, 2097152.0}) samples.push_back({bytes, 3, 2.0 * (4e-6 + bytes / 5e9)});
        const LinkModel link = fit_link(samples, "fitted");
        QVERIFY2(std::abs(link.latency_us - 4.0) < 1e-6, qPrintable(QString::number(link.latency_us)));
        QVERIFY2(std::abs(link.gbytes_per_second - 5.0) < 1e-6, qPrintable(QString::number(link.gbytes_per_second)));
        // Noise that puts the intercept below zero: latency 0, the bandwidth still from the slope.
        const LinkModel noisy = fit_link({{1000.0, 2, 0.1e-6}, {2e6, 2, 1.0e-3}, {1e6, 2, 0.45e-3}}, "noisy");
        QCOMPARE(noisy.latency_us, 0.0);
        QVERIFY2(noisy.gbytes_per_second > 1.5 && noisy.gbytes_per_second < 2.5, qPrintable(QString::number(noisy.gbytes_per_second)));
        // A probe like this machine's (loopback shared memory): the small message sets the latency
        // near its own 1.3 us, where an unweighted fit would let the 2 MiB one push it to zero.
        const LinkModel loopback = fit_link({{8, 2, 1.35e-6}, {16384, 2, 4.6e-6}, {131072, 2, 12.7e-6}, {524288, 2, 42.0e-6},
                                             {1048576, 2, 109.5e-6}, {2097152, 2, 264.3e-6}},
                                            "loopback");
        QVERIFY2(loopback.latency_us > 0.5 && loopback.latency_us < 2.0, qPrintable(QString::number(loopback.latency_us)));
        QVERIFY2(loopback.gbytes_per_second > 5.0 && loopback.gbytes_per_second < 15.0,
                 qPrintable(QString::number(loopback.gbytes_per_second)));
        QVERIFY(error_of([] { fit_link({{1e6, 2, 1e-3}, {1e6, 2, 1.1e-3}}, "x"); }).contains("two different sizes"));
        QVERIFY(error_of([] { fit_link({{8, 2, 2e-3}, {1e6, 2, 1e-3}}, "x"); }).contains("do not grow"));
    }

    void computeFitRecoversTheLine() {
        ComputeProfile profile;
        fit_compute(profile, {{32, 1.0 + 0.1 * 32, 0.5, 0.2}, {16, 1.0 + 0.1 * 16, 0.7, 0.4}});
        QVERIFY(std::abs(profile.fixed_ms - 1.0) < 1e-9);
        QVERIFY(std::abs(profile.per_sample_ms - 0.1) < 1e-9);
        QVERIFY(std::abs(profile.update_ms - 0.6) < 1e-9);
        QVERIFY(std::abs(profile.other_ms - 0.3) < 1e-9);
        fit_compute(profile, {{32, 3.2, 0.5, 0.2}});  // one batch size: proportional
        QCOMPARE(profile.fixed_ms, 0.0);
        QVERIFY(std::abs(profile.per_sample_ms - 0.1) < 1e-12);
        QVERIFY(error_of([&] { fit_compute(profile, {}); }).contains("bench --devices cpu"));
    }

    void sharedCoresSlowEveryThread() {
        QCOMPARE(core_sharing_slowdown(1, 2, 1.9), 1.0);
        QCOMPARE(core_sharing_slowdown(2, 2, 2.0), 1.0);
        QVERIFY(std::abs(core_sharing_slowdown(2, 2, 1.9) - 2.0 / 1.9) < 1e-12);
        // Three lock-step threads on two cores: two turns per step, not one and a half.
        QVERIFY(std::abs(core_sharing_slowdown(3, 2, 1.9) - 2.0 * 2.0 / 1.9) < 1e-12);
        QVERIFY(std::abs(core_sharing_slowdown(4, 2, 2.0) - 2.0) < 1e-12);
        QVERIFY(std::abs(core_sharing_slowdown(5, 2, 2.0) - 3.0) < 1e-12);
        QVERIFY(std::abs(core_sharing_slowdown(3, 4, 4.0) - 1.0) < 1e-12);
    }

    void predictionAddsThePhases() {
        ClusterShape shape;
        shape.workers = 4;
        shape.global_batch = 32;
        shape.inter_link = kTestLink;
        shape.inter_algorithm = CollectiveAlgorithm::Ring;
        const StepPrediction p = predict_step(gpu_profile(), shape);
        QCOMPARE(p.per_device_batch, std::int64_t{8});
        QVERIFY(std::abs(p.compute_ms - 1.8) < 1e-9);
        QVERIFY(std::abs(p.inter_all_reduce_ms - 1.635) < 1e-9);
        QCOMPARE(p.intra_all_reduce_ms, 0.0);
        QVERIFY(std::abs(p.step_ms - 4.135) < 1e-9);
        QVERIFY(std::abs(p.samples_per_second - 32e3 / 4.135) < 1e-6);
        QVERIFY(std::abs(p.efficiency - 4.9 / 4.135 / 4.0) < 1e-9);

        // One device alone is the baseline: efficiency exactly 1.
        shape.workers = 1;
        QVERIFY(std::abs(predict_step(gpu_profile(), shape).efficiency - 1.0) < 1e-12);

        // Two levels: 2 workers x 4 devices, an all-reduce inside each worker, then one across.
        shape.workers = 2;
        shape.devices_per_worker = 4;
        shape.intra_algorithm = CollectiveAlgorithm::Ring;
        const StepPrediction two_level = predict_step(gpu_profile(), shape);
        QVERIFY(std::abs(two_level.intra_all_reduce_ms - 1.635) < 1e-9);
        QVERIFY(two_level.inter_all_reduce_ms > 0.0);
    }

    void slowerLinksScaleWorse() {
        ComputeProfile profile = gpu_profile();
        ClusterShape shape;
        shape.workers = 8;
        shape.global_batch = 256;
        shape.inter_algorithm = CollectiveAlgorithm::Ring;
        double previous = 1.0;
        for (const char* name : {"NVLink 4", "InfiniBand HDR", "10 GbE", "1 GbE"}) {
            const LinkModel* link = find_standard_link(name);
            QVERIFY2(link != nullptr, name);
            shape.inter_link = *link;
            const double efficiency = predict_step(profile, shape).efficiency;
            QVERIFY2(efficiency < previous, name);
            previous = efficiency;
        }
        QVERIFY(find_standard_link("10gbe") != nullptr);  // names are matched loosely
        QVERIFY(find_standard_link("carrier pigeon") == nullptr);
        // A larger global batch amortises the same all-reduce: better efficiency on the same link.
        shape.inter_link = *find_standard_link("10 GbE");
        const double small = predict_step(profile, shape).efficiency;
        shape.global_batch = 4096;
        QVERIFY(predict_step(profile, shape).efficiency > small);
    }

    void workersOnOneHostShareItsCores() {
        ComputeProfile cpu = gpu_profile();
        cpu.shares_host_cores = true;
        cpu.cores_per_host = 2;
        cpu.parallel_capacity = 2.0;
        ClusterShape shape;
        shape.workers = 3;
        shape.global_batch = 30;
        shape.inter_link = kTestLink;
        shape.workers_per_host = 3;  // loopback: three workers on two cores
        const StepPrediction crowded = predict_step(cpu, shape);
        QVERIFY(std::abs(crowded.slowdown - 2.0) < 1e-12);
        QVERIFY(std::abs(crowded.compute_ms - 2.0 * (1.0 + 0.1 * 10)) < 1e-9);
        shape.workers_per_host = 1;  // a host each: neither compute nor the all-reduce's adds are shared
        const StepPrediction apart = predict_step(cpu, shape);
        QCOMPARE(apart.slowdown, 1.0);
        QVERIFY(std::abs(crowded.inter_all_reduce_ms - 2.0 * apart.inter_all_reduce_ms) < 1e-9);
    }

    void impossibleShapesAreRefused() {
        ClusterShape shape;
        shape.workers = 4;
        shape.devices_per_worker = 2;
        shape.global_batch = 4;
        shape.inter_link = kTestLink;
        const QString small_batch = error_of([&] { predict_step(gpu_profile(), shape); });
        QVERIFY2(small_batch.contains("global batch of 4") && small_batch.contains("8 devices"), qPrintable(small_batch));
        shape.global_batch = 32;
        QVERIFY(error_of([&] { predict_step(ComputeProfile{}, shape); }).contains("calibrate"));
        shape.inter_link = LinkModel{};
        QVERIFY(error_of([&] { predict_step(gpu_profile(), shape); }).contains("link"));
        shape.workers = 0;
        QVERIFY(error_of([&] { predict_step(gpu_profile(), shape); }).contains("at least one worker"));
        QVERIFY(error_of([] { collective_algorithm_from_name("butterfly"); }).contains("ring, tree"));
    }

    void calibratesFromBenchResults() {
        WhatIfCalibration calibration;
        add_bench_json(calibration, one_replica_bench(32, 2.0, 3.0), "b32.json");  // 5.0 ms at 32
        add_bench_json(calibration, one_replica_bench(16, 1.2, 1.8), "b16.json");  // 3.0 ms at 16
        const std::string probe =
            "{\"workers\": 2, \"run\": {\"replicas\": 2, \"allreduce_buffer_bytes\": 1455356}, \"link_probe\": {\"samples\": ["
            "{\"bytes_per_worker\": 8, \"participants\": 2, \"seconds\": 0.000003},"
            "{\"bytes_per_worker\": 1048576, \"participants\": 2, \"seconds\": 0.000213}]}}";
        add_bench_json(calibration, probe, "two.json");
        finish_calibration(calibration);
        const ComputeProfile& p = calibration.profile;
        QVERIFY(std::abs(p.fixed_ms - 1.0) < 1e-9);
        QVERIFY(std::abs(p.per_sample_ms - 0.125) < 1e-9);
        QCOMPARE(p.cores_per_host, 2);
        QCOMPARE(p.parallel_capacity, 1.8);
        QCOMPARE(p.add_gbytes_per_second, 8.0);
        QCOMPARE(p.gradient_bytes, 1455356.0);
        QVERIFY(p.device.find("Test CPU (avx2)") != std::string::npos);
        QVERIFY(calibration.measured_link.has_value());
        QVERIFY(std::abs(calibration.measured_link->gbytes_per_second - 1048568.0 / 210e-6 / 1e9) < 1e-3);
        QCOMPARE(calibration.sources.size(), std::size_t{3});

        ClusterShape shape;
        shape.inter_link = *calibration.measured_link;
        const auto rows = predict_range(p, shape, {1, 2, 3}, {32, 64}, true);
        QCOMPARE(rows.size(), std::size_t{6});
        QCOMPARE(rows[4].shape.workers, 3);
        QCOMPARE(rows[4].shape.global_batch, std::int64_t{32});
        QCOMPARE(rows[4].shape.workers_per_host, 3);
        QVERIFY(rows[4].slowdown > 1.5);  // three workers on two cores of capacity 1.8
        // A combination that leaves devices without a sample is left out, and named.
        std::vector<std::string> left_out;
        QCOMPARE(predict_range(p, shape, {2, 64}, {32, 128}, false, &left_out).size(), std::size_t{3});
        QCOMPARE(left_out.size(), std::size_t{1});
        QCOMPARE(left_out.front(), std::string("64 workers x 1 at global batch 32"));
    }

    // The host's capacity for training itself: the bench's independent trainings on both cores
    // (each at batch 16) over one training alone at batch 16, not the in-cache kernel probe's 1.8.
    void capacityFromIndependentTrainings() {
        const std::string rows =
            "{\"replicas\": 1, \"threads\": 1, \"samples_per_second\": 9000, \"efficiency\": 1.0, \"independent_copies\": false},"
            "{\"replicas\": 2, \"threads\": 2, \"samples_per_second\": 15300, \"efficiency\": 0.85, \"independent_copies\": true}";
        WhatIfCalibration calibration;
        add_bench_json(calibration, one_replica_bench(32, 2.0, 3.0, 6000.0, rows), "b32.json");
        finish_calibration(calibration);
        QCOMPARE(calibration.profile.parallel_capacity, 1.8);  // no one-replica run at batch 16 yet
        add_bench_json(calibration, one_replica_bench(16, 1.2, 1.8, 9000.0), "b16.json");
        finish_calibration(calibration);
        QVERIFY(std::abs(calibration.profile.parallel_capacity - 1.7) < 1e-9);
        QVERIFY(calibration.capacity_source.find("independent trainings at batch 16") != std::string::npos);
    }

    void badCalibrationFilesAreNamed() {
        WhatIfCalibration calibration;
        const QString not_bench = error_of([&] { add_bench_json(calibration, "{\"name\": \"model\"}", "model.json"); });
        QVERIFY2(not_bench.contains("model.json") && not_bench.contains("not a bench result"), qPrintable(not_bench));
        const QString broken = error_of([&] { add_bench_json(calibration, "{\"run\": ", "cut.json"); });
        QVERIFY2(broken.startsWith("cut.json:1:"), qPrintable(broken));
        const QString two_replicas = error_of([&] {
            add_bench_json(calibration, "{\"workers\": 1, \"run\": {\"replicas\": 2}}", "cpu2.json");
        });
        QVERIFY2(two_replicas.contains("calibrates nothing") && two_replicas.contains("bench --devices cpu"),
                 qPrintable(two_replicas));
        QVERIFY(error_of([&] { finish_calibration(calibration); }).contains("one-replica bench"));
        // A link probe spoilt by load (the larger message faster) is refused, naming the file.
        const QString spoilt = error_of([&] {
            add_bench_json(calibration,
                           "{\"workers\": 2, \"run\": {\"replicas\": 2}, \"link_probe\": {\"samples\": ["
                           "{\"bytes_per_worker\": 8, \"participants\": 2, \"seconds\": 0.002},"
                           "{\"bytes_per_worker\": 1048576, \"participants\": 2, \"seconds\": 0.0001}]}}",
                           "two.json");
        });
        QVERIFY2(spoilt.startsWith("two.json: ") && spoilt.contains("do not grow"), qPrintable(spoilt));
        const QString no_samples = error_of([&] {
            add_bench_json(calibration, "{\"workers\": 2, \"run\": {\"replicas\": 2}, \"link_probe\": {}}", "two.json");
        });
        QVERIFY2(no_samples.startsWith("two.json: ") && no_samples.contains("no samples"), qPrintable(no_samples));
        // A one-replica CPU run on two threads would make every prediction too fast.
        std::string two_threads = one_replica_bench(32, 2.0, 3.0);
        const std::string one_thread = "\"threads\": 1";
        two_threads.replace(two_threads.find(one_thread), one_thread.size(), "\"threads\": 2");
        const QString threads = error_of([&] { add_bench_json(calibration, two_threads, "b32.json"); });
        QVERIFY2(threads.contains("b32.json") && threads.contains("--threads 1"), qPrintable(threads));
        // Edited numbers: a negative update time made the step faster, 1e308 printed "inf" and
        // "-nan%", a capacity beyond the cores halved the compute time.
        const std::pair<std::pair<std::string, std::string>, std::string> edits[] = {
            {{"\"update_ms\": 0.4", "\"update_ms\": -1"}, "edited.json: run.phases.update_ms is -1, outside the 0 to 1e+09 a bench result can hold"},
            {{"\"forward_ms\": ", "\"forward_ms\": 1e308, \"x\": "}, "edited.json: run.phases.forward_ms is 1e+308"},
            {{"\"parallel_capacity\": 1.8", "\"parallel_capacity\": 40"}, "edited.json: parallel_capacity is 40, outside the 0 to 4 a bench result can hold"},
            {{"\"cores\": 2", "\"cores\": 0"}, "edited.json: cores is 0"},
            {{"\"batch_size\": ", "\"batch_size\": -5, \"y\": "}, "edited.json: batch_size is -5"},
        };
        for (const auto& [edit, said] : edits) {
            std::string edited = one_replica_bench(32, 2.0, 3.0);
            edited.replace(edited.find(edit.first), edit.first.size(), edit.second);
            WhatIfCalibration fresh;
            const QString message = error_of([&] { add_bench_json(fresh, edited, "edited.json"); });
            QVERIFY2(message.startsWith(QString::fromStdString(said)) && message.contains("run `mirrorlab-cli bench --json` again"),
                     qPrintable(message + " | expected: " + QString::fromStdString(said)));
        }
    }
};

QTEST_GUILESS_MAIN(StepCostModelTest)
#include "test_step_cost_model.moc"
