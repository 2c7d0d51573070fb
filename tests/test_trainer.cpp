// The fit loop: event stream, determinism, mirrored == single device, pause/resume/stop, and the
// failures a person can cause (NaN loss, out of memory, bad devices, model/data mismatch), plus
// EarlyStopping, the overfitting monitor and the tutorial's pitfalls the app warns about.
#include <QtTest/QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "core/backend/cpu_reference.h"
#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"
#include "core/train/events.h"
#include "core/train/trainer.h"
#include "core/util/error.h"

using namespace mirrorlab;

namespace {

constexpr std::int32_t kVocabulary = 2000;
constexpr std::int32_t kInputLength = 60;

// Embedding -> Conv1D(16, 5, relu) -> GlobalMaxPooling1D -> Dense(units, activation): small
// enough for many runs per second on a slow core.
std::string model_json(std::int64_t vocabulary = kVocabulary, int units = 46, const std::string& activation = "softmax",
                       int input_length = kInputLength) {
    return "{\"name\": \"small\", \"input_length\": " + std::to_string(input_length) +
           ", \"layers\": ["
           "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": " + std::to_string(vocabulary) +
           ", \"output_dim\": 8}},"
           "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": 16, \"kernel_size\": 5, \"activation\": \"relu\"}},"
           "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
           "{\"class_name\": \"Dense\", \"config\": {\"units\": " + std::to_string(units) +
           ", \"activation\": \"" + activation + "\"}}]}";
}

Model small_model(std::int64_t vocabulary = kVocabulary, int units = 46, const std::string& activation = "softmax") {
    return Model::from_json_text(model_json(vocabulary, units, activation), "small model");
}

TrainData small_data(std::int32_t train_samples = 400, std::int32_t validation_samples = 100) {
    SyntheticReutersOptions options;
    options.train_samples = train_samples;
    options.validation_samples = validation_samples;
    options.vocabulary_size = kVocabulary;
    return make_train_data(make_synthetic_reuters(options), kInputLength);
}

TrainConfig small_config(int epochs = 3) {
    TrainConfig config;
    config.epochs = epochs;
    config.batch_size = 32;
    config.seed = 7;
    config.optimizer = OptimizerConfig::defaults(OptimizerKind::Adam);
    config.optimizer.learning_rate = 0.01;
    config.prefetch_batches = 1;
    return config;
}

// A setting that memorises its 64 training wires within a few epochs, so validation loss turns up.
TrainConfig overfitting_config(int epochs) {
    TrainConfig config = small_config(epochs);
    config.batch_size = 16;
    config.optimizer.learning_rate = 0.02;
    return config;
}
TrainData overfitting_data() { return small_data(64, 100); }

// Collects what the trainer emits (on its thread) for the test thread to read.
class EventLog {
public:
    Trainer::EventSink sink() {
        return [this](const Event& event) {
            std::function<void(const Event&)> hook;
            {
                std::lock_guard lock(mutex_);
                events_.push_back(event);
                hook = hook_;
            }
            if (hook) hook(event);
        };
    }
    void set_hook(std::function<void(const Event&)> hook) {
        std::lock_guard lock(mutex_);
        hook_ = std::move(hook);
    }
    std::vector<Event> all() const {
        std::lock_guard lock(mutex_);
        return events_;
    }
    template <class T>
    std::vector<T> of() const {
        std::lock_guard lock(mutex_);
        std::vector<T> out;
        for (const auto& event : events_) {
            if (const T* typed = std::get_if<T>(&event)) out.push_back(*typed);
        }
        return out;
    }
    template <class T>
    int count() const {
        return static_cast<int>(of<T>().size());
    }

private:
    mutable std::mutex mutex_;
    std::vector<Event> events_;
    std::function<void(const Event&)> hook_;
};

struct Run {
    FitResult result;
    History history;
    std::vector<float> weights;
};

Run train(const Model& model, const std::string& devices, const TrainConfig& config, const TrainData& data,
          EventLog* log = nullptr) {
    Trainer trainer(model, DeviceConfig::parse(devices), config, data);
    if (log != nullptr) trainer.set_event_sink(log->sink());
    Run run;
    run.result = trainer.run();
    run.history = trainer.history();
    run.weights = trainer.weights();
    return run;
}

bool same_metrics(const Metrics& a, const Metrics& b) {
    return a.loss == b.loss && a.accuracy == b.accuracy && a.top5 == b.top5;
}

bool close_metrics(const Metrics& a, const Metrics& b, double tolerance) {
    return std::abs(a.loss - b.loss) <= tolerance && std::abs(a.accuracy - b.accuracy) <= tolerance &&
           std::abs(a.top5 - b.top5) <= tolerance;
}

QString describe(const Metrics& m) {
    return QStringLiteral("loss %1 accuracy %2 top5 %3").arg(m.loss, 0, 'g', 10).arg(m.accuracy).arg(m.top5);
}

int argmin_val_loss(const History& history, std::size_t up_to_epoch) {
    int best = 0;
    double best_loss = INFINITY;
    for (std::size_t i = 0; i < std::min(up_to_epoch, history.epochs.size()); ++i) {
        if (history.epochs[i].validation.loss < best_loss) {
            best_loss = history.epochs[i].validation.loss;
            best = history.epochs[i].epoch;
        }
    }
    return best;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Polls without an event loop (the suite has no QCoreApplication).
bool wait_until(const std::function<bool()>& condition, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

// A "GPU" (host memory, CPU reference ops) that can be lost: once `lost` is set, its next step
// fails and so does every download of its weights, as a GPU that fell off the bus would.
class LosableGpuBackend final : public CpuReferenceBackend {
public:
    explicit LosableGpuBackend(std::shared_ptr<std::atomic<bool>> lost) : lost_(std::move(lost)) {}
    void embedding_forward(const TensorView& ids, const TensorView& table, const TensorView& out) override {
        if (*lost_) throw OpError("[embedding] the device was lost (test)");
        CpuReferenceBackend::embedding_forward(ids, table, out);
    }
    void download(void* host, const TensorView& src) override {
        if (*lost_) throw OpError("[download] the device is gone (test)");
        CpuReferenceBackend::download(host, src);
    }

private:
    std::shared_ptr<std::atomic<bool>> lost_;
};

class LosableGpuProvider final : public DeviceProvider {
public:
    DeviceType type() const override { return DeviceType::GPU; }
    std::vector<PhysicalDevice> devices() const override {
        PhysicalDevice gpu;
        gpu.type = DeviceType::GPU;
        gpu.name = "Losable test GPU";
        gpu.total_memory_bytes = std::int64_t{4096} * 1024 * 1024;
        gpu.cores = 8;
        gpu.compute_capability = "9.0";
        return {gpu};
    }
    std::string status() const override { return "test provider, 1 GPU"; }
    std::unique_ptr<Backend> create_backend(int) override { return std::make_unique<LosableGpuBackend>(lost); }
    std::shared_ptr<RawAllocator> create_allocator(int) override { return std::make_shared<HostAllocator>(); }

    std::shared_ptr<std::atomic<bool>> lost = std::make_shared<std::atomic<bool>>(false);
};

// Runs `trainer` on this thread (run()) or on its own (start()/wait(), where an exception escaping
// the training thread would std::terminate the test); an exception out of run() lands in `escaped`.
FitResult run_here_or_on_thread(Trainer& trainer, bool on_thread, std::string& escaped) {
    if (on_thread) {
        trainer.start();
        trainer.wait();
        return trainer.result();
    }
    try {
        return trainer.run();
    } catch (const std::exception& error) {
        escaped = error.what();
        return {};
    }
}

}  // namespace

class TestTrainer : public QObject {
    Q_OBJECT

private slots:
    void shortRunEmitsEventsInOrder();
    void sameSeedIsDeterministic();
    void mirroredEqualsSingleDevice();
    void pauseResumeStop();
    void nanLossKeepsLastGoodWeights();
    void outOfMemoryNamesDeviceAndLimit();
    void badDeviceConfigFails();
    void modelDataMismatchFails();
    void earlyStoppingRestoresBestWeights();
    void earlyStoppingTakesKerasNames();
    void overfittingMonitorWarns();
    void unevenBatchWarns();
    void fromLogitsOnSoftmaxWarns();
    void failureWhileKeepingWeightsReportsTheFirstError();
    void failureReportSurvivesAThrowingSink();
    void stopSaysExactlyWhereItLanded();
    void detailedStatsAreSampled();
};

void TestTrainer::shortRunEmitsEventsInOrder() {
    const TrainData data = small_data();
    EventLog log;
    const TrainConfig config = small_config(3);
    const Run run = train(small_model(), "cpu:2", config, data, &log);
    QVERIFY2(run.result.ok, run.result.failed ? run.result.failed->reason.c_str() : "no result");
    QVERIFY(run.result.finished);
    QCOMPARE(run.result.finished->reason, FinishReason::Completed);
    QCOMPARE(run.result.finished->epochs_completed, 3);

    // The training lifecycle, ignoring logs, memory and warnings.
    const auto begins = log.of<TrainBeginEvent>();
    QCOMPARE(begins.size(), std::size_t{1});
    const TrainBeginEvent& begin = begins.front();
    QCOMPARE(begin.replicas, 2);
    QCOMPARE(begin.global_batch, 32);
    QCOMPARE(begin.steps_per_epoch, std::int64_t{13});  // ceil(400 / 32)
    QCOMPARE(begin.validation_steps, std::int64_t{4});  // ceil(100 / 32)
    QCOMPARE(begin.strategy, std::string("MirroredStrategy"));
    QCOMPARE(begin.devices, (std::vector<std::string>{"/device:CPU:0", "/device:CPU:1"}));
    QCOMPARE(begin.parameters, small_model().total_params());

    std::string sequence;
    int epoch = 0;
    std::int64_t expected_step = 0;
    std::int64_t global_step = 0;
    std::optional<StepEndEvent> last_step;
    for (const Event& event : log.all()) {
        if (std::holds_alternative<TrainBeginEvent>(event)) {
            sequence += "T";
        } else if (const auto* epoch_begin = std::get_if<EpochBeginEvent>(&event)) {
            sequence += "B";
            QCOMPARE(epoch_begin->epoch, ++epoch);
            QCOMPARE(epoch_begin->epochs, 3);
            expected_step = 0;
        } else if (const auto* step = std::get_if<StepEndEvent>(&event)) {
            if (sequence.empty() || sequence.back() != 's') sequence += "s";
            QCOMPARE(step->epoch, epoch);
            QCOMPARE(step->step, ++expected_step);
            QCOMPARE(step->global_step, ++global_step);
            QCOMPARE(step->steps, std::int64_t{13});
            // One timing entry per replica; the shards add up to this step's batch (the last is 400 - 12 * 32).
            QCOMPARE(step->replicas.size(), std::size_t{2});
            std::int32_t shard_total = 0;
            for (const auto& replica : step->replicas) {
                QVERIFY(replica.shard_size > 0);
                QVERIFY(std::isfinite(replica.local_loss));
                shard_total += replica.shard_size;
            }
            QCOMPARE(shard_total, step->step < 13 ? 32 : 16);
            QVERIFY(std::isfinite(step->running.loss));
            last_step = *step;
        } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
            sequence += "E";
            QCOMPARE(end->epoch, epoch);
            QCOMPARE(expected_step, std::int64_t{13});
            QVERIFY(last_step.has_value());
            // The last running mean of the epoch is the epoch's training metrics, as Keras shows them.
            QVERIFY2(same_metrics(last_step->running, end->train),
                     qPrintable(describe(last_step->running) + " vs " + describe(end->train)));
            QVERIFY(end->has_validation);
            QVERIFY(std::isfinite(end->validation.loss));
            QVERIFY(end->epoch_seconds > 0.0);
        } else if (const auto* finished = std::get_if<FinishedEvent>(&event)) {
            sequence += "F";
            QCOMPARE(finished->reason, FinishReason::Completed);
        } else if (std::holds_alternative<FailedEvent>(event)) {
            sequence += "X";
        }
    }
    QCOMPARE(QString::fromStdString(sequence), QStringLiteral("TBsEBsEBsEF"));

    // Loss falls over three epochs; the history matches the events.
    QCOMPARE(run.history.epochs.size(), std::size_t{3});
    const auto losses = run.history.series("loss");
    QVERIFY2(losses[1] < losses[0] && losses[2] < losses[1],
             qPrintable(QStringLiteral("%1 %2 %3").arg(losses[0]).arg(losses[1]).arg(losses[2])));
    const auto ends = log.of<EpochEndEvent>();
    for (std::size_t i = 0; i < ends.size(); ++i) {
        QVERIFY(same_metrics(ends[i].train, run.history.epochs[i].train));
        QVERIFY(same_metrics(ends[i].validation, run.history.epochs[i].validation));
    }

    // One memory entry per logical device.
    const auto memory = log.of<MemoryEvent>();
    QVERIFY(!memory.empty());
    for (const auto& m : memory) {
        QCOMPARE(m.devices.size(), std::size_t{2});
        QCOMPARE(m.devices[0].device, std::string("/device:CPU:0"));
        QCOMPARE(m.devices[1].device, std::string("/device:CPU:1"));
        for (const auto& d : m.devices) {
            QVERIFY(d.bytes_in_use > 0);
            QVERIFY(d.peak_bytes >= d.bytes_in_use);
        }
    }
    QVERIFY(!run.weights.empty());
    QCOMPARE(static_cast<std::int64_t>(run.weights.size()), small_model().total_params());
}

void TestTrainer::sameSeedIsDeterministic() {
    const TrainData data = small_data(300, 100);
    const Model model = small_model();
    const TrainConfig config = small_config(2);
    const Run a = train(model, "cpu:2", config, data);
    const Run b = train(model, "cpu:2", config, data);
    QVERIFY(a.result.ok && b.result.ok);
    QCOMPARE(a.history.epochs.size(), std::size_t{2});
    QCOMPARE(b.history.epochs.size(), a.history.epochs.size());
    for (std::size_t i = 0; i < a.history.epochs.size(); ++i) {
        QVERIFY2(same_metrics(a.history.epochs[i].train, b.history.epochs[i].train),
                 qPrintable(describe(a.history.epochs[i].train) + " vs " + describe(b.history.epochs[i].train)));
        QVERIFY(same_metrics(a.history.epochs[i].validation, b.history.epochs[i].validation));
    }
    QVERIFY(!a.weights.empty());
    QVERIFY(a.weights == b.weights);

    TrainConfig other = config;
    other.seed = config.seed + 1;
    const Run c = train(model, "cpu:2", other, data);
    QVERIFY(c.result.ok);
    QVERIFY(!same_metrics(a.history.epochs[0].train, c.history.epochs[0].train));
    QVERIFY(a.weights != c.weights);
}

void TestTrainer::mirroredEqualsSingleDevice() {
    const TrainData data = small_data(300, 100);
    const Model model = small_model();
    const TrainConfig config = small_config(2);
    const Run mirrored = train(model, "cpu:2", config, data);
    const Run single = train(model, "cpu", config, data);
    QVERIFY(mirrored.result.ok && single.result.ok);
    QCOMPARE(single.history.epochs.size(), mirrored.history.epochs.size());
    for (std::size_t i = 0; i < single.history.epochs.size(); ++i) {
        const EpochRecord& m = mirrored.history.epochs[i];
        const EpochRecord& s = single.history.epochs[i];
        QVERIFY2(close_metrics(m.train, s.train, 1e-4), qPrintable(describe(m.train) + " vs " + describe(s.train)));
        QVERIFY2(close_metrics(m.validation, s.validation, 1e-4),
                 qPrintable(describe(m.validation) + " vs " + describe(s.validation)));
    }
    QCOMPARE(mirrored.weights.size(), single.weights.size());
    float max_difference = 0.0f;
    for (std::size_t i = 0; i < single.weights.size(); ++i) {
        max_difference = std::max(max_difference, std::abs(mirrored.weights[i] - single.weights[i]));
    }
    QVERIFY2(max_difference < 1e-3f, qPrintable(QStringLiteral("max weight difference %1").arg(max_difference)));
}

void TestTrainer::pauseResumeStop() {
    const TrainData data = small_data(300, 100);
    EventLog log;
    Trainer trainer(small_model(), DeviceConfig::parse("cpu:2"), small_config(200), data);
    trainer.set_event_sink(log.sink());
    // Pausing from the sink puts the pause exactly after the first step, without racing the loop.
    bool paused_once = false;
    log.set_hook([&](const Event& event) {
        if (std::holds_alternative<StepEndEvent>(event) && !paused_once) {
            paused_once = true;
            trainer.pause();
        }
    });
    trainer.start();
    QVERIFY(wait_until([&] { return log.count<StepEndEvent>() >= 1 && trainer.paused(); }, 60000));
    QVERIFY(trainer.running());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    QCOMPARE(log.count<StepEndEvent>(), 1);
    QVERIFY(trainer.running());

    trainer.resume();
    QVERIFY(!trainer.paused());
    QVERIFY(wait_until([&] { return log.count<EpochEndEvent>() >= 1; }, 60000));
    QVERIFY(log.count<StepEndEvent>() > 1);
    trainer.request_stop();
    trainer.wait();
    QVERIFY(!trainer.running());

    const FitResult result = trainer.result();
    QVERIFY(result.ok);
    QVERIFY(result.finished);
    QCOMPARE(result.finished->reason, FinishReason::StoppedByUser);
    const auto finished = log.of<FinishedEvent>();
    QCOMPARE(finished.size(), std::size_t{1});
    QCOMPARE(finished.front().reason, FinishReason::StoppedByUser);
    const History history = trainer.history();
    QVERIFY(!history.epochs.empty());
    QVERIFY(history.epochs.size() < 200);
    QCOMPARE(static_cast<int>(history.epochs.size()), log.count<EpochEndEvent>());
    QCOMPARE(result.finished->epochs_completed, static_cast<int>(history.epochs.size()));
    QVERIFY(!trainer.weights().empty());
}

void TestTrainer::nanLossKeepsLastGoodWeights() {
    const TrainData data = small_data(300, 0);  // no validation: the first NaN is a step's
    EventLog log;
    TrainConfig config = small_config(5);
    config.optimizer = OptimizerConfig::defaults(OptimizerKind::SGD);
    config.optimizer.learning_rate = 1e30;
    // One step per epoch: the first update blows the weights up, epoch 1 still completes, and the
    // loss of the next step is no longer finite.
    config.max_steps_per_epoch = 1;
    Trainer trainer(small_model(), DeviceConfig::parse("cpu:2"), config, data);
    trainer.set_event_sink(log.sink());
    const FitResult result = trainer.run();
    QVERIFY(!result.ok);
    QVERIFY(result.failed);
    const FailedEvent& failed = *result.failed;
    QCOMPARE(failed.kind, std::string("nan_loss"));
    QVERIFY(failed.epoch >= 1);
    QVERIFY(failed.step >= 1);
    QVERIFY2(contains(failed.reason, "epoch " + std::to_string(failed.epoch) + ", step " + std::to_string(failed.step)),
             failed.reason.c_str());
    QVERIFY2(contains(failed.reason, "Lower the learning rate"), failed.reason.c_str());
    const auto failures = log.of<FailedEvent>();
    QCOMPARE(failures.size(), std::size_t{1});
    QCOMPARE(failures.front().kind, std::string("nan_loss"));
    QCOMPARE(log.count<FinishedEvent>(), 0);

    const std::vector<float> weights = trainer.weights();
    QCOMPARE(static_cast<std::int64_t>(weights.size()), small_model().total_params());
    for (float w : weights) QVERIFY(std::isfinite(w));
    // The epochs completed before the failure stay in the history.
    const History history = trainer.history();
    QCOMPARE(static_cast<int>(history.epochs.size()), failed.epoch - 1);
    QVERIFY2(!history.epochs.empty(), "the NaN should appear after the first epoch in this setting");

    // With validation data the same blown-up weights make epoch 1's validation loss NaN: the epoch
    // was kept (and checkpointed) with weights that answer nothing. The run stops there instead,
    // and the epoch is not kept.
    EventLog validated_log;
    Trainer validated(small_model(), DeviceConfig::parse("cpu:2"), config, small_data(300, 100));
    validated.set_event_sink(validated_log.sink());
    const FitResult validated_result = validated.run();
    QVERIFY(validated_result.failed.has_value());
    QCOMPARE(validated_result.failed->kind, std::string("nan_loss"));
    QVERIFY2(contains(validated_result.failed->reason, "the validation loss became NaN at epoch 1 (training loss ") &&
                 contains(validated_result.failed->reason, "epoch 1 is not kept. Lower the learning rate (now 1e+30)"),
             validated_result.failed->reason.c_str());
    QVERIFY(validated.history().epochs.empty());
    QCOMPARE(validated_log.count<EpochEndEvent>(), 0);
    QVERIFY(validated.weights().empty());  // not the epoch's blown-up weights: no epoch left any

    // Keras allows epsilon = 0; a weight whose gradient is 0 then gets 0/0, and the advice names
    // epsilon, not the learning rate.
    TrainConfig no_epsilon = small_config(3);
    no_epsilon.optimizer.epsilon = 0.0;
    Trainer zero(small_model(), DeviceConfig::parse("cpu"), no_epsilon, data);
    const FitResult zero_result = zero.run();
    QVERIFY(zero_result.failed.has_value());
    QCOMPARE(zero_result.failed->kind, std::string("nan_loss"));
    QVERIFY2(contains(zero_result.failed->reason, "epsilon is 0") && contains(zero_result.failed->reason, "1e-07") &&
                 contains(zero_result.failed->reason, "else lower the learning rate"),
             zero_result.failed->reason.c_str());
}

void TestTrainer::outOfMemoryNamesDeviceAndLimit() {
    const TrainData data = small_data(200, 50);
    {
        EventLog log;
        // Embedding(2,000,000, 8): 61 MiB of weights per replica, over a 16 MiB virtual device.
        const Run run = train(small_model(2000000), "cpu:2x16MB", small_config(1), data, &log);
        QVERIFY(!run.result.ok);
        QVERIFY(run.result.failed);
        const std::string& reason = run.result.failed->reason;
        QCOMPARE(run.result.failed->kind, std::string("out_of_memory"));
        QVERIFY2(contains(reason, "/device:CPU:0"), reason.c_str());
        QVERIFY2(contains(reason, "16.0 MiB"), reason.c_str());
        // Refused before anything is allocated, with what one replica needs.
        QVERIFY2(contains(reason, "the model needs"), reason.c_str());
        QVERIFY2(contains(reason, "on each replica"), reason.c_str());
        QCOMPARE(log.count<FailedEvent>(), 1);
        QCOMPARE(log.count<StepEndEvent>(), 0);
        QVERIFY(run.history.epochs.empty());
    }
    // The process stays usable: the same devices with a model that fits train normally.
    EventLog log;
    const Run run = train(small_model(), "cpu:2x16MB", small_config(1), data, &log);
    QVERIFY2(run.result.ok, run.result.failed ? run.result.failed->reason.c_str() : "no result");
    QCOMPARE(run.history.epochs.size(), std::size_t{1});
    const auto memory = log.of<MemoryEvent>();
    QVERIFY(!memory.empty());
    for (const auto& d : memory.back().devices) {
        QCOMPARE(d.limit_bytes, std::int64_t{16} * 1024 * 1024);
        QVERIFY(d.peak_bytes <= d.limit_bytes);
    }
    // A batch far beyond the 200 samples takes them all in one step, as in Keras: buffers sized for
    // the batch asked needed GiB and the run was refused as out of memory.
    TrainConfig huge_batch = small_config(1);
    huge_batch.batch_size = 1000000;
    EventLog all_log;
    const Run all_at_once = train(small_model(), "cpu:2x16MB", huge_batch, data, &all_log);
    QVERIFY2(all_at_once.result.ok, all_at_once.result.failed ? all_at_once.result.failed->reason.c_str() : "no result");
    QCOMPARE(all_log.count<StepEndEvent>(), 1);
    const auto logs = all_log.of<LogEvent>();
    QVERIFY(std::any_of(logs.begin(), logs.end(), [](const LogEvent& e) {
        return contains(e.text, "The batch size of 1000000 is more than the 200 samples: every step takes them all");
    }));
}

void TestTrainer::badDeviceConfigFails() {
    DeviceRegistry registry;
    if (registry.find(DeviceType::GPU, 0) != nullptr) QSKIP("this machine has a GPU:0");
    EventLog log;
    const Run run = train(small_model(), "gpu:0", small_config(1), small_data(100, 20), &log);
    QVERIFY(!run.result.ok);
    QVERIFY(run.result.failed);
    QCOMPARE(run.result.failed->kind, std::string("device_config"));
    QVERIFY(!run.result.failed->reason.empty());
    QCOMPARE(log.count<StepEndEvent>(), 0);
    QCOMPARE(log.count<FailedEvent>(), 1);
}

void TestTrainer::modelDataMismatchFails() {
    EventLog log;
    const Run run = train(small_model(kVocabulary, 10), "cpu", small_config(1), small_data(100, 20), &log);
    QVERIFY(!run.result.ok);
    QVERIFY(run.result.failed);
    const std::string& reason = run.result.failed->reason;
    QCOMPARE(run.result.failed->kind, std::string("data"));
    QVERIFY2(contains(reason, "label"), reason.c_str());
    QVERIFY2(contains(reason, "10 units"), reason.c_str());
    QVERIFY2(contains(reason, "(46)"), reason.c_str());
    QCOMPARE(log.count<StepEndEvent>(), 0);
}

void TestTrainer::earlyStoppingRestoresBestWeights() {
    const TrainData data = overfitting_data();
    const Model model = small_model();
    TrainConfig config = overfitting_config(40);
    config.early_stopping.enabled = true;
    config.early_stopping.patience = 1;
    config.early_stopping.restore_best_weights = true;
    EventLog log;
    const Run run = train(model, "cpu:2", config, data, &log);
    QVERIFY2(run.result.ok, run.result.failed ? run.result.failed->reason.c_str() : "no result");
    const FinishedEvent& finished = *run.result.finished;
    QCOMPARE(finished.reason, FinishReason::EarlyStopping);
    QVERIFY(run.history.epochs.size() < 40);
    const int best = argmin_val_loss(run.history, run.history.epochs.size());
    QVERIFY(best >= 1);
    QCOMPARE(finished.restored_epoch, best);
    QCOMPARE(finished.best_epoch, best);
    // Patience 1: the run stops at the first epoch after the best one.
    QCOMPARE(static_cast<int>(run.history.epochs.size()), best + 1);
    const auto stops = log.of<WarningEvent>();
    QVERIFY(std::any_of(stops.begin(), stops.end(), [&](const WarningEvent& w) {
        return w.code == "early_stopping" && w.best_epoch == best;
    }));

    // The same seed retraces the same trajectory, so a run of `best` epochs ends with the best weights.
    TrainConfig until_best = overfitting_config(best);
    const Run reference = train(model, "cpu:2", until_best, data);
    QVERIFY(reference.result.ok);
    QCOMPARE(reference.history.epochs.size(), static_cast<std::size_t>(best));
    QVERIFY(same_metrics(reference.history.epochs.back().validation, run.history.epochs[static_cast<std::size_t>(best - 1)].validation));
    QCOMPARE(run.weights.size(), reference.weights.size());
    QVERIFY(run.weights == reference.weights);
}

// Keras' metric names, as the progress lines print them, monitor the same values; a run without
// validation data is told once that it will not stop early, and how to make it.
void TestTrainer::earlyStoppingTakesKerasNames() {
    const TrainData data = overfitting_data();
    TrainConfig config = overfitting_config(40);
    config.early_stopping.enabled = true;
    config.early_stopping.patience = 1;
    config.early_stopping.monitor = "val_sparse_categorical_accuracy";
    const Run by_accuracy = train(small_model(), "cpu:2", config, data);
    QVERIFY(by_accuracy.result.ok);
    QCOMPARE(by_accuracy.result.finished->reason, FinishReason::EarlyStopping);
    QCOMPARE(canonical_monitor("val_sparse_categorical_accuracy"), std::string("val_accuracy"));
    QCOMPARE(canonical_monitor("sparse_top_k_categorical_accuracy"), std::string("top5"));
    QCOMPARE(canonical_monitor("val_acc"), std::string());

    TrainData no_validation = data;
    no_validation.validation_ids.reset();
    no_validation.validation_labels.reset();
    config = overfitting_config(4);
    config.early_stopping.enabled = true;
    EventLog log;
    const Run blind = train(small_model(), "cpu:2", config, no_validation, &log);
    QVERIFY(blind.result.ok);
    const auto warnings = log.of<WarningEvent>();
    const auto said = std::count_if(warnings.begin(), warnings.end(), [](const WarningEvent& w) {
        return w.code == "early_stopping_monitor" && w.text.find("this run has no validation data: it will not stop early; give data "
                                                         "with a validation split, or monitor 'loss'") != std::string::npos;
    });
    QCOMPARE(said, 1);  // once, not at each of the 4 epochs
}

void TestTrainer::overfittingMonitorWarns() {
    const TrainData data = overfitting_data();
    EventLog log;
    const Run run = train(small_model(), "cpu:2", overfitting_config(12), data, &log);
    QVERIFY(run.result.ok);
    const History& history = run.history;
    QCOMPARE(history.epochs.size(), std::size_t{12});
    int warnings = 0;
    for (const WarningEvent& warning : log.of<WarningEvent>()) {
        if (warning.code != "overfitting") continue;
        ++warnings;
        QVERIFY(warning.epoch >= 2 && warning.epoch <= 12);
        const EpochRecord& now = history.epochs[static_cast<std::size_t>(warning.epoch - 1)];
        const EpochRecord& before = history.epochs[static_cast<std::size_t>(warning.epoch - 2)];
        QVERIFY2(now.validation.loss > before.validation.loss, warning.text.c_str());
        QVERIFY2(now.train.loss < before.train.loss, warning.text.c_str());
        const int best = argmin_val_loss(history, static_cast<std::size_t>(warning.epoch));
        QCOMPARE(warning.best_epoch, best);
        QVERIFY2(contains(warning.text, "Best epoch so far: " + std::to_string(best)), warning.text.c_str());
    }
    // Every epoch with rising validation and falling training loss is reported.
    int expected = 0;
    for (std::size_t i = 1; i < history.epochs.size(); ++i) {
        if (history.epochs[i].validation.loss > history.epochs[i - 1].validation.loss &&
            history.epochs[i].train.loss < history.epochs[i - 1].train.loss) {
            ++expected;
        }
    }
    QVERIFY2(expected > 0, "the setting should overfit within 12 epochs");
    QCOMPARE(warnings, expected);
}

void TestTrainer::unevenBatchWarns() {
    EventLog log;
    TrainConfig config = small_config(1);
    config.batch_size = 33;
    config.max_steps_per_epoch = 2;
    const Run run = train(small_model(), "cpu:2", config, small_data(200, 40), &log);
    QVERIFY(run.result.ok);
    const auto warnings = log.of<WarningEvent>();
    const auto it = std::find_if(warnings.begin(), warnings.end(),
                                 [](const WarningEvent& w) { return w.code == "uneven_batch"; });
    QVERIFY(it != warnings.end());
    QVERIFY2(contains(it->text, "17 + 16"), it->text.c_str());
    for (const auto& step : log.of<StepEndEvent>()) {
        QCOMPARE(step.replicas.size(), std::size_t{2});
        QCOMPARE(step.replicas[0].shard_size, 17);
        QCOMPARE(step.replicas[1].shard_size, 16);
    }
}

void TestTrainer::fromLogitsOnSoftmaxWarns() {
    EventLog log;
    TrainConfig config = small_config(1);
    config.from_logits = true;
    config.max_steps_per_epoch = 2;
    const Run run = train(small_model(), "cpu", config, small_data(100, 20), &log);
    QVERIFY(run.result.ok);
    const auto logs = log.of<LogEvent>();
    QVERIFY(std::any_of(logs.begin(), logs.end(), [](const LogEvent& e) {
        return e.level == LogLevel::Warning && contains(e.text, "from_logits");
    }));
}

// A device lost in epoch 2: its step fails, and fetching the weights after that failure fails
// too. The run must end with the first error (what the person needs to see), note the second,
// keep epoch 1's weights and history, and never throw out of run() or terminate the process from
// the training thread.
void TestTrainer::failureWhileKeepingWeightsReportsTheFirstError() {
    const TrainData data = small_data(100, 20);
    TrainConfig config = small_config(5);
    config.max_steps_per_epoch = 2;
    for (const bool on_thread : {false, true}) {
        auto provider = std::make_shared<LosableGpuProvider>();
        auto registry = std::make_shared<DeviceRegistry>();
        registry->add_provider(provider);
        EventLog log;
        Trainer trainer(small_model(), DeviceConfig::parse("gpu:0:2x512MB"), config, data, registry);
        trainer.set_event_sink(log.sink());
        std::vector<float> epoch1_weights;
        log.set_hook([&](const Event& event) {
            const auto* begin = std::get_if<EpochBeginEvent>(&event);
            if (begin != nullptr && begin->epoch == 2) {
                epoch1_weights = trainer.weights();
                *provider->lost = true;
            }
        });
        std::string escaped;
        const FitResult result = run_here_or_on_thread(trainer, on_thread, escaped);
        QVERIFY2(escaped.empty(), qPrintable(QStringLiteral("run() threw: ") + QString::fromStdString(escaped)));
        QVERIFY(!result.ok);
        QVERIFY(result.failed);
        const FailedEvent& failed = *result.failed;
        QVERIFY2(contains(failed.reason, "[embedding] the device was lost"), failed.reason.c_str());
        QVERIFY2(!contains(failed.reason, "[download]"), failed.reason.c_str());
        QCOMPARE(failed.epoch, 2);
        QCOMPARE(failed.step, std::int64_t{1});
        const auto failures = log.of<FailedEvent>();
        QCOMPARE(failures.size(), std::size_t{1});
        QCOMPARE(failures.front().reason, failed.reason);
        QCOMPARE(log.count<FinishedEvent>(), 0);
        // The second failure is only noted.
        const auto logs = log.of<LogEvent>();
        QVERIFY(std::any_of(logs.begin(), logs.end(), [](const LogEvent& e) {
            return e.level == LogLevel::Warning && contains(e.text, "[download] the device is gone");
        }));
        QCOMPARE(trainer.history().epochs.size(), std::size_t{1});
        QVERIFY(!epoch1_weights.empty());
        QVERIFY(trainer.weights() == epoch1_weights);
        QVERIFY(!trainer.running());
    }
}

// A sink that throws (a full disk behind the CLI's output, a GUI queue out of memory) while the
// trainer reports a failure must not turn the report into an escaping exception either.
void TestTrainer::failureReportSurvivesAThrowingSink() {
    for (const bool on_thread : {false, true}) {
        Trainer trainer(small_model(kVocabulary, 10), DeviceConfig::parse("cpu"), small_config(1), small_data(100, 20));
        int reports = 0;
        trainer.set_event_sink([&](const Event& event) {
            const auto* log = std::get_if<LogEvent>(&event);
            if (std::holds_alternative<FailedEvent>(event) || (log != nullptr && log->level == LogLevel::Error)) {
                ++reports;
                throw std::runtime_error("the sink cannot take this");
            }
        });
        std::string escaped;
        const FitResult result = run_here_or_on_thread(trainer, on_thread, escaped);
        QVERIFY2(escaped.empty(), qPrintable(QStringLiteral("run() threw: ") + QString::fromStdString(escaped)));
        QVERIFY(reports >= 1);
        QVERIFY(!result.ok);
        QVERIFY(result.failed);
        QCOMPARE(result.failed->kind, std::string("data"));
        QVERIFY2(contains(result.failed->reason, "10 units"), result.failed->reason.c_str());
        QVERIFY(!trainer.running());
    }
}

// A stop asked for from the sink lands at a known point: after step 3 of epoch 2 (3 steps ran, and
// the log says 3), or at the start of epoch 2's validation pass (no validation batch runs, and the
// epoch whose validation was cut short is not kept).
void TestTrainer::stopSaysExactlyWhereItLanded() {
    const TrainData data = small_data(400, 100);  // 13 steps, 4 validation steps
    for (const bool in_validation : {false, true}) {
        EventLog log;
        Trainer trainer(small_model(), DeviceConfig::parse("cpu:2"), small_config(5), data);
        trainer.set_event_sink(log.sink());
        log.set_hook([&](const Event& event) {
            const auto* step = std::get_if<StepEndEvent>(&event);
            const auto* validation = std::get_if<ValidationBeginEvent>(&event);
            if (!in_validation && step != nullptr && step->epoch == 2 && step->step == 3) trainer.request_stop();
            if (in_validation && validation != nullptr && validation->epoch == 2) trainer.request_stop();
        });
        const FitResult result = trainer.run();
        QVERIFY(result.ok);
        QVERIFY(result.finished);
        const FinishedEvent& finished = *result.finished;
        QCOMPARE(finished.reason, FinishReason::StoppedByUser);
        QCOMPARE(finished.epochs_completed, 1);
        QCOMPARE(trainer.history().epochs.size(), std::size_t{1});
        QCOMPARE(log.count<EpochEndEvent>(), 1);
        QCOMPARE(finished.stop.epoch, 2);
        QCOMPARE(finished.stop.steps, std::int64_t{13});
        const auto logs = log.of<LogEvent>();
        if (in_validation) {
            QCOMPARE(finished.stop.phase, StopPhase::Validation);
            QCOMPARE(finished.stop.step, std::int64_t{13});
            QCOMPARE(finished.stop.validation_step, std::int64_t{0});
            QCOMPARE(finished.stop.validation_steps, std::int64_t{4});
            QCOMPARE(log.count<ValidationBeginEvent>(), 2);
            QVERIFY(std::any_of(logs.begin(), logs.end(), [](const LogEvent& e) {
                return contains(e.text, "during the validation of epoch 2 after 0 of 4 validation steps");
            }));
        } else {
            QCOMPARE(finished.stop.phase, StopPhase::Training);
            QCOMPARE(finished.stop.step, std::int64_t{3});
            std::int64_t steps_in_epoch_2 = 0;
            for (const auto& step : log.of<StepEndEvent>()) steps_in_epoch_2 += step.epoch == 2 ? 1 : 0;
            QCOMPARE(steps_in_epoch_2, std::int64_t{3});
            QVERIFY(std::any_of(logs.begin(), logs.end(),
                                [](const LogEvent& e) { return contains(e.text, "during epoch 2 after 3 of 13 steps"); }));
        }
    }
}

// The step view's details (gradient norms, checksums) every 10^9 ms: only the first step, each
// epoch's last and the first after a pause carry them; every 0 ms (the default): every step.
void TestTrainer::detailedStatsAreSampled() {
    const TrainData data = small_data(300, 100);
    TrainConfig config = small_config(2);
    config.detailed_step_stats = true;
    config.detailed_step_stats_interval_ms = 1e9;
    EventLog log;
    Trainer trainer(small_model(), DeviceConfig::parse("cpu:2"), config, data);
    trainer.set_event_sink(log.sink());
    log.set_hook([&](const Event& event) {
        if (const auto* step = std::get_if<StepEndEvent>(&event); step != nullptr && step->global_step == 3) trainer.pause();
    });
    trainer.start();
    QVERIFY(wait_until([&] { return trainer.paused(); }, 60000));
    trainer.resume();
    trainer.wait();
    QVERIFY(trainer.result().ok);
    std::vector<std::int64_t> detailed;
    std::int64_t steps_per_epoch = 0;
    for (const StepEndEvent& step : log.of<StepEndEvent>()) {
        steps_per_epoch = step.steps;
        const bool has = step.replicas.front().weights_checksum != 0;
        QCOMPARE(step.replicas.back().weights_checksum != 0, has);
        QCOMPARE(std::isnan(step.replicas.front().grad_norm_before), !has);
        if (has) {
            detailed.push_back(step.global_step);
            QCOMPARE(step.replicas.front().weights_checksum, step.replicas.back().weights_checksum);
        }
    }
    QVERIFY(steps_per_epoch > 4);
    QCOMPARE(detailed, (std::vector<std::int64_t>{1, 4, steps_per_epoch, 2 * steps_per_epoch}));

    // A pause resumed before the loop got to wait for it (a quick "next step", or a resume that
    // beats a slow training thread) still makes the next step the first after a pause.
    EventLog quick_log;
    Trainer quick(small_model(), DeviceConfig::parse("cpu:2"), config, data);
    quick.set_event_sink(quick_log.sink());
    quick_log.set_hook([&](const Event& event) {
        if (const auto* step = std::get_if<StepEndEvent>(&event); step != nullptr && step->global_step == 3) {
            quick.pause();
            quick.resume();
        }
    });
    quick.start();
    quick.wait();
    QVERIFY(quick.result().ok);
    std::vector<std::int64_t> quick_detailed;
    for (const StepEndEvent& step : quick_log.of<StepEndEvent>()) {
        if (step.replicas.front().weights_checksum != 0) quick_detailed.push_back(step.global_step);
    }
    QCOMPARE(quick_detailed, detailed);

    config.detailed_step_stats_interval_ms = 0.0;
    config.epochs = 1;
    EventLog every_log;
    const Run every = train(small_model(), "cpu:2", config, data, &every_log);
    QVERIFY(every.result.ok);
    for (const StepEndEvent& step : every_log.of<StepEndEvent>()) QVERIFY(step.replicas.front().weights_checksum != 0);
    QCOMPARE(every_log.count<StepEndEvent>(), static_cast<int>(steps_per_epoch));
}

QTEST_APPLESS_MAIN(TestTrainer)
#include "test_trainer.moc"
