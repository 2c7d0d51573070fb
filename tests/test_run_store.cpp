// Keeping what is trained: checkpoints (round trip, damage, mismatch, a failing disk), the
// bit-identical resume, the run store across processes (interrupted runs, a locked database)
// and the recorder that feeds it from the event stream.
#include <QtTest/QtTest>

#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/data/source.h"
#include "core/data/synthetic.h"
#include "core/device/device.h"
#include "core/model/model.h"
#include "core/store/checkpoint.h"
#include "core/store/recorded_run.h"
#include "core/util/crc32c.h"
#include "core/store/model_checkpoint.h"
#include "core/store/run_recorder.h"
#include "core/store/run_store.h"
#include "core/train/trainer.h"

using namespace mirrorlab;

namespace {

constexpr std::int32_t kVocabulary = 1500;
constexpr std::int32_t kInputLength = 40;

// With Dropout, so that a resumed run must also continue dropout's random stream exactly.
Model small_model(int filters = 12) {
    return Model::from_json_text(
        "{\"name\": \"small\", \"input_length\": " + std::to_string(kInputLength) +
            ", \"layers\": ["
            "{\"class_name\": \"Embedding\", \"config\": {\"input_dim\": " + std::to_string(kVocabulary) + ", \"output_dim\": 8}},"
            "{\"class_name\": \"Conv1D\", \"config\": {\"filters\": " + std::to_string(filters) +
            ", \"kernel_size\": 5, \"activation\": \"relu\"}},"
            "{\"class_name\": \"GlobalMaxPooling1D\", \"config\": {}},"
            "{\"class_name\": \"Dropout\", \"config\": {\"rate\": 0.3}},"
            "{\"class_name\": \"Dense\", \"config\": {\"units\": 46, \"activation\": \"softmax\"}}]}",
        "small model");
}

TrainData small_data(std::uint64_t seed = 113, std::int32_t train_samples = 256) {
    SyntheticReutersOptions options;
    options.train_samples = train_samples;
    options.validation_samples = 64;
    options.vocabulary_size = kVocabulary;
    options.seed = seed;
    return make_train_data(make_synthetic_reuters(options), kInputLength);
}

TrainConfig config_for(int epochs) {
    TrainConfig config;
    config.epochs = epochs;
    config.batch_size = 32;
    config.seed = 7;
    config.emit_step_events = true;
    return config;
}

struct Folder {
    std::string path;
    Folder() {
        char pattern[] = "/tmp/mirrorlab_store_XXXXXX";
        path = ::mkdtemp(pattern);
    }
    ~Folder() { std::filesystem::remove_all(path); }
};

Checkpoint base_checkpoint(const Model& model, const TrainConfig& config, const TrainData& data, const std::string& devices) {
    Checkpoint base;
    base.model_json = model.to_json_text();
    base.config = config;
    base.device_spec = devices;
    base.data = fingerprint_of(data);
    return base;
}

struct Trained {
    FitResult result;
    std::vector<float> weights;
    History history;
    std::vector<std::string> warnings;
};

Trained train(const Model& model, const TrainConfig& config, const TrainData& data, const std::string& devices,
              const std::string& checkpoint_folder = {}, const Checkpoint* resume = nullptr) {
    Trainer trainer(model, DeviceConfig::parse(devices), config, data);
    Trained trained;
    trainer.set_event_sink([&](const Event& event) {
        if (const auto* warning = std::get_if<WarningEvent>(&event)) trained.warnings.push_back(warning->text);
    });
    if (!checkpoint_folder.empty()) {
        trainer.add_callback(std::make_shared<ModelCheckpoint>(CheckpointOptions{checkpoint_folder},
                                                               base_checkpoint(model, config, data, devices)));
    }
    if (resume) trainer.set_resume_state(resume->state);
    trained.result = trainer.run();
    trained.weights = trainer.weights();
    trained.history = trainer.history();
    return trained;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A run with nothing but the model: what the store's id tests begin.
RunInfo a_run() {
    RunInfo run;
    run.settings_json = "{}";
    run.model_json = small_model().to_json_text();
    return run;
}

// `bytes` written to `path` and read back as a checkpoint: the refusal's message, or "accepted".
std::string refusal_of_checkpoint(const std::string& path, const std::string& bytes) {
    write_bytes(path, bytes);
    try {
        load_checkpoint(path);
    } catch (const CheckpointError& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

class TestRunStore : public QObject {
    Q_OBJECT

private slots:
    void checkpointRoundTrip();
    void damagedCheckpointsAreRefused();
    void checkpointOfAnotherModelOrDataIsRefused();
    void resumeContinuesBitForBit();
    void resumeFromInsideAnEpochContinuesBitForBit();
    void resumeOnOtherReplicasSaysSo();
    void failedCheckpointWriteKeepsThePreviousFile();
    void storeKeepsRunsAcrossInstances();
    void idsSetAsideAreNotGiven();
    void impossibleCheckpointContentsAreNamed();
    void everyOptimizersCheckpointsLoad();
    void noMemoryForACheckpointKeepsTheRunGoing();
    void runFoldersTheDatabaseForgotKeepTheirIds();
    void aMissingLastCheckpointIsSaid();
    void aDatabaseThatCannotBeOpenedIsNamed();
    void deadProcessLeavesRunInterrupted();
    void lockedDatabaseSaysSo();
    void recorderWritesTheEventStream();
    void recorderWaitsOutALockedStore();
};

void TestRunStore::checkpointRoundTrip() {
    Folder folder;
    const Model model = small_model();
    const TrainData data = small_data();
    const Trained trained = train(model, config_for(2), data, "cpu:2", folder.path);
    QVERIFY(trained.result.ok);
    const Checkpoint loaded = load_checkpoint(ModelCheckpoint::last_path(folder.path));
    QCOMPARE(loaded.state.epochs_done, 2);
    QCOMPARE(loaded.state.global_step, 16);  // 256 samples / 32 per batch * 2 epochs
    QCOMPARE(loaded.state.replicas, 2);
    QCOMPARE(loaded.device_spec, std::string("cpu:2"));
    QVERIFY(loaded.state.weights == trained.weights);  // bit for bit
    QCOMPARE(loaded.state.optimizer_state.iterations, 16);
    QCOMPARE(loaded.state.history.epochs.size(), std::size_t{2});
    QCOMPARE(loaded.state.history.epochs[1].validation.loss, trained.history.epochs[1].validation.loss);
    QVERIFY(loaded.state.callbacks.count("overfitting_monitor") == 1);
    QVERIFY(loaded.data == fingerprint_of(data));
    QCOMPARE(loaded.config.seed, std::uint64_t{7});
    // A best checkpoint exists too (val_loss improved at least at epoch 1).
    QVERIFY(std::filesystem::exists(ModelCheckpoint::best_path(folder.path)));
    // And serialising what was read gives the same bytes: nothing is lost on the way.
    QCOMPARE(serialize_checkpoint(loaded), read_bytes(ModelCheckpoint::last_path(folder.path)));
}

void TestRunStore::damagedCheckpointsAreRefused() {
    Folder folder;
    const Trained trained = train(small_model(), config_for(1), small_data(), "cpu", folder.path);
    QVERIFY(trained.result.ok);
    const std::string path = ModelCheckpoint::last_path(folder.path);
    const std::string good = read_bytes(path);
    auto refusal = [&](const std::string& bytes) { return refusal_of_checkpoint(path, bytes); };
    QVERIFY2(refusal(good.substr(0, good.size() / 2)).find("is truncated") != std::string::npos,
             refusal(good.substr(0, good.size() / 2)).c_str());
    std::string flipped = good;
    flipped[flipped.size() - 100] ^= 0x01;  // one bit of one weight
    QVERIFY(refusal(flipped).find("is damaged: its checksum does not match") != std::string::npos);
    // Grown (a 10 GB file was read whole before its checksum was looked at): refused by its size.
    const std::string grown = refusal(good + std::string(4096, '\0'));
    QVERIFY2(grown.find("bytes, more than the " + std::to_string(good.size()) + " its manifest describes") != std::string::npos, grown.c_str());
    QVERIFY(refusal("{\"not\": \"a checkpoint\"}").find("is not a MirrorLab checkpoint") != std::string::npos);
    std::string future = good;
    future[8] = 9;  // version 9
    QVERIFY(refusal(future).find("is a version 9 checkpoint; this MirrorLab reads version 1") != std::string::npos);
    write_bytes(path, good);
    QCOMPARE(load_checkpoint(path).state.epochs_done, 1);
}

// Contents no run writes, with a valid checksum (a checkpoint edited by hand, or by a bug): each is
// named with the file when it is read. Before, evaluate, export and resume failed later without the
// file's name ("optimizer slots do not fit this model"), after a resume had dropped the run's later
// epochs; an epoch of -3 trained "Epoch -2"; a tensor count of 2^62 + n wrapped to n and asked for an
// impossible vector ("unexpected failure").
void TestRunStore::impossibleCheckpointContentsAreNamed() {
    Folder folder;
    QVERIFY(train(small_model(), config_for(1), small_data(), "cpu", folder.path).result.ok);
    const std::string path = ModelCheckpoint::last_path(folder.path);
    const Checkpoint good = load_checkpoint(path);
    auto refusal = [&](const std::string& bytes) { return refusal_of_checkpoint(path, bytes); };
    auto edited = [&](auto&& edit) {
        Checkpoint checkpoint = good;
        edit(checkpoint);
        return refusal(serialize_checkpoint(checkpoint));
    };
    const std::string named = "checkpoint '" + path + "' is damaged: ";
    std::string said = edited([](Checkpoint& c) { c.state.optimizer_slots.resize(10); });
    QVERIFY2(said.find(named + "its optimizer state holds 10 numbers where Nadam(learning_rate=0.001") != std::string::npos, said.c_str());
    said = edited([](Checkpoint& c) { c.state.weights.resize(10); });
    QVERIFY2(said.find(named + "it holds 10 weights for a model of") != std::string::npos, said.c_str());
    said = edited([](Checkpoint& c) { c.state.optimizer_state.iterations = -1; });
    QVERIFY2(said.find(named + "[optimizer] cannot restore a negative iteration count (-1)") != std::string::npos, said.c_str());
    said = edited([](Checkpoint& c) { c.state.epochs_done = -3; });
    QVERIFY2(said.find(named + "its 'epoch' is -3, outside 0..2147483647") != std::string::npos, said.c_str());
    said = edited([](Checkpoint& c) { c.state.replicas = 0; });
    QVERIFY2(said.find("its 'replicas' is 0") != std::string::npos, said.c_str());

    // A tensor count past any file (2^62 + the real one), the manifest's length and the checksum
    // made to match.
    const std::string bytes = serialize_checkpoint(good);
    const std::size_t header = sizeof kCheckpointMagic + 8;
    std::uint32_t manifest_bytes = 0;
    std::memcpy(&manifest_bytes, bytes.data() + sizeof kCheckpointMagic + 4, 4);
    std::string manifest = bytes.substr(header, manifest_bytes);
    const std::size_t key = manifest.find("\"count\": ");
    QVERIFY(key != std::string::npos);
    const std::size_t digits = key + 9, digits_end = manifest.find_first_not_of("0123456789", digits);
    const std::uint64_t real_count = std::stoull(manifest.substr(digits, digits_end - digits));
    manifest.replace(digits, digits_end - digits, std::to_string((std::uint64_t{1} << 62) + real_count));
    std::string huge = bytes.substr(0, sizeof kCheckpointMagic + 4);
    const auto length = static_cast<std::uint32_t>(manifest.size());
    huge.append(reinterpret_cast<const char*>(&length), 4);
    huge += manifest;
    huge += bytes.substr(header + manifest_bytes, bytes.size() - header - manifest_bytes - 4);
    const std::uint32_t crc = mirrorlab::crc32c(huge.data(), huge.size());
    huge.append(reinterpret_cast<const char*>(&crc), 4);
    said = refusal(huge);
    QVERIFY2(said.find(named + "its manifest cannot be read (tensor 'weights' has an impossible size (461168601") != std::string::npos,
             said.c_str());
    write_bytes(path, serialize_checkpoint(good));
    QCOMPARE(load_checkpoint(path).state.epochs_done, 1);
}

// Each optimizer's last and best checkpoints read back (the checks on what a checkpoint holds
// refused SGD's without momentum, which keeps no slots and writes one unused number).
void TestRunStore::everyOptimizersCheckpointsLoad() {
    const std::pair<OptimizerKind, double> optimizers[] = {{OptimizerKind::SGD, 0.0},     {OptimizerKind::SGD, 0.9},
                                                          {OptimizerKind::RMSprop, 0.0}, {OptimizerKind::RMSprop, 0.5},
                                                          {OptimizerKind::Adam, 0.0},    {OptimizerKind::Nadam, 0.0}};
    for (const auto& [kind, momentum] : optimizers) {
        Folder folder;
        TrainConfig config = config_for(2);
        config.optimizer = OptimizerConfig::defaults(kind);
        config.optimizer.momentum = momentum;
        QVERIFY(train(small_model(), config, small_data(), "cpu", folder.path).result.ok);
        for (const std::string& path : {ModelCheckpoint::last_path(folder.path), ModelCheckpoint::best_path(folder.path)}) {
            try {
                QCOMPARE(load_checkpoint(path).config.optimizer.kind, kind);
            } catch (const CheckpointError& e) {
                QFAIL(e.what());
            }
        }
    }
}

// Out of memory for a checkpoint's copy of the weights and slots at an epoch's end: the epoch was
// trained and validated, so the run goes on with a warning and the last checkpoint stays (the run
// failed with "std::bad_alloc" and lost it all).
void TestRunStore::noMemoryForACheckpointKeepsTheRunGoing() {
    struct NoMemoryInEpoch2 final : Callback {
        std::string name() const override { return "test_no_memory"; }
        void on_epoch_end(FitContext& context, const EpochRecord& record) override {
            if (record.epoch == 2) context.snapshot = []() -> TrainingState { throw std::bad_alloc(); };
        }
    };
    Folder folder;
    const TrainConfig config = config_for(3);
    const TrainData data = small_data();
    Trainer trainer(small_model(), DeviceConfig::parse("cpu"), config, data);
    std::vector<std::string> warnings;
    trainer.set_event_sink([&](const Event& event) {
        if (const auto* warning = std::get_if<WarningEvent>(&event)) warnings.push_back(warning->text);
    });
    trainer.add_callback(std::make_shared<NoMemoryInEpoch2>());
    std::vector<SavedCheckpoint> saved;
    trainer.add_callback(std::make_shared<ModelCheckpoint>(CheckpointOptions{folder.path}, base_checkpoint(small_model(), config, data, "cpu"),
                                                           [&](const SavedCheckpoint& checkpoint) { saved.push_back(checkpoint); }));
    const FitResult result = trainer.run();
    QVERIFY2(result.ok, result.failed ? result.failed->reason.c_str() : "not ok");
    QCOMPARE(trainer.history().epochs.size(), std::size_t{3});
    const auto said = std::find_if(warnings.begin(), warnings.end(), [](const std::string& text) {
        return text.find("Epoch 2: not enough memory to copy the weights and optimizer state") != std::string::npos;
    });
    QVERIFY2(said != warnings.end(), warnings.empty() ? "no warning" : warnings.front().c_str());
    QVERIFY(said->find("the previous checkpoint is kept as it was") != std::string::npos);
    QCOMPARE(saved.size(), std::size_t{4});  // epochs 1 and 3, last and best: none for epoch 2
    QCOMPARE(load_checkpoint(ModelCheckpoint::last_path(folder.path)).state.epochs_done, 3);
}

void TestRunStore::checkpointOfAnotherModelOrDataIsRefused() {
    Folder folder;
    const TrainData data = small_data();
    QVERIFY(train(small_model(), config_for(1), data, "cpu", folder.path).result.ok);
    const Checkpoint checkpoint = load_checkpoint(ModelCheckpoint::last_path(folder.path));
    check_checkpoint_fits(checkpoint, small_model(), fingerprint_of(data), "checkpoint 'last'");  // fits
    try {
        check_checkpoint_fits(checkpoint, small_model(24), fingerprint_of(data), "checkpoint 'last'");
        QFAIL("another model was accepted");
    } catch (const CheckpointError& e) {
        QVERIFY2(std::string(e.what()).find("holds another model: its variable 'conv1d/kernel' has shape [5, 8, 12]") !=
                     std::string::npos,
                 e.what());
    }
    try {
        check_checkpoint_fits(checkpoint, small_model(), fingerprint_of(small_data(999)), "checkpoint 'last'");
        QFAIL("other data was accepted");
    } catch (const CheckpointError& e) {
        QVERIFY2(std::string(e.what()).find("was trained on other data") != std::string::npos &&
                     std::string(e.what()).find("same sizes, other contents") != std::string::npos,
                 e.what());
    }
}

// The test: 3 epochs straight == 1 epoch, stop, resume for 2 more — weight bytes and metrics.
void TestRunStore::resumeContinuesBitForBit() {
    Folder folder;
    const Model model = small_model();
    const TrainData data = small_data();
    const Trained straight = train(model, config_for(3), data, "cpu:2");
    QVERIFY(straight.result.ok);
    QVERIFY(train(model, config_for(1), data, "cpu:2", folder.path).result.ok);
    const Checkpoint checkpoint = load_checkpoint(ModelCheckpoint::last_path(folder.path));
    const Trained resumed = train(model, config_for(3), data, "cpu:2", folder.path, &checkpoint);
    QVERIFY(resumed.result.ok);
    QCOMPARE(resumed.result.finished->epochs_completed, 3);
    QCOMPARE(resumed.weights.size(), straight.weights.size());
    QVERIFY2(std::memcmp(resumed.weights.data(), straight.weights.data(), straight.weights.size() * sizeof(float)) == 0,
             "the resumed run's weights differ from the uninterrupted run's");
    for (std::size_t epoch = 0; epoch < 3; ++epoch) {
        QCOMPARE(resumed.history.epochs[epoch].train.loss, straight.history.epochs[epoch].train.loss);
        QCOMPARE(resumed.history.epochs[epoch].validation.accuracy, straight.history.epochs[epoch].validation.accuracy);
    }
    QCOMPARE(resumed.result.finished->best_epoch, straight.result.finished->best_epoch);
    // Negative control: resuming from the checkpoint without its optimizer slots is not the same run.
    Checkpoint without_slots = checkpoint;
    std::fill(without_slots.state.optimizer_slots.begin(), without_slots.state.optimizer_slots.end(), 0.0f);
    const Trained wrong = train(model, config_for(3), data, "cpu:2", {}, &without_slots);
    QVERIFY(std::memcmp(wrong.weights.data(), straight.weights.data(), straight.weights.size() * sizeof(float)) != 0);
}

// ModelCheckpoint(every_steps=5): the checkpoint taken after step 5 of epoch 1 resumes in the
// middle of that epoch — the same batches from step 6 on, the same running means — and ends where
// the uninterrupted run ends, bit for bit.
void TestRunStore::resumeFromInsideAnEpochContinuesBitForBit() {
    Folder folder, aside;
    const Model model = small_model();
    const TrainData data = small_data();
    const Trained straight = train(model, config_for(2), data, "cpu:2");
    QVERIFY(straight.result.ok);
    Trainer trainer(model, DeviceConfig::parse("cpu:2"), config_for(2), data);
    CheckpointOptions options{folder.path};
    options.every_steps = 5;
    trainer.add_callback(std::make_shared<ModelCheckpoint>(options, base_checkpoint(model, config_for(2), data, "cpu:2")));
    const std::string kept = aside.path + "/step5.mlckpt";
    trainer.set_event_sink([&](const Event& event) {
        // Step 6 has ended: last.mlckpt still holds step 5 (6 is not a multiple of 5).
        if (const auto* step = std::get_if<StepEndEvent>(&event); step && step->global_step == 6) {
            std::filesystem::copy_file(ModelCheckpoint::last_path(folder.path), kept);
        }
    });
    QVERIFY(trainer.run().ok);
    const Checkpoint mid = load_checkpoint(kept);
    QCOMPARE(mid.state.epochs_done, 0);
    QCOMPARE(mid.state.steps_into_epoch, 5);
    QCOMPARE(mid.state.global_step, 5);
    QCOMPARE(mid.state.running.samples, 5 * 32);
    Trainer resumed(model, DeviceConfig::parse("cpu:2"), config_for(2), data);
    std::vector<std::string> logs;
    resumed.set_event_sink([&](const Event& event) {
        if (const auto* log = std::get_if<LogEvent>(&event)) logs.push_back(log->text);
    });
    resumed.set_resume_state(mid.state);
    QVERIFY(resumed.run().ok);
    QVERIFY(std::any_of(logs.begin(), logs.end(),
                        [](const std::string& text) { return text.find("Resuming in epoch 1 after its step 5 (step 5)") != std::string::npos; }));
    const std::vector<float> weights = resumed.weights();
    QVERIFY2(std::memcmp(weights.data(), straight.weights.data(), weights.size() * sizeof(float)) == 0,
             "resuming inside an epoch did not reach the uninterrupted run's weights");
    QCOMPARE(resumed.history().epochs[0].train.loss, straight.history.epochs[0].train.loss);  // running sums carried over
    QCOMPARE(resumed.history().epochs[1].validation.loss, straight.history.epochs[1].validation.loss);

    // The same checkpoint on an epoch of 3 steps (fewer steps per epoch than it was taken at):
    // skipping its 5 steps ran out of batches and ended epoch 1 untrained on the checkpoint's numbers.
    TrainConfig shorter = config_for(2);
    shorter.max_steps_per_epoch = 3;
    Trainer cut(model, DeviceConfig::parse("cpu:2"), shorter, data);
    cut.set_resume_state(mid.state);
    const FitResult refused = cut.run();
    QVERIFY(!refused.ok);
    QVERIFY2(refused.failed->reason.find("the checkpoint was taken after step 5 of epoch 1, but an epoch here has 3 steps") !=
                 std::string::npos,
             refused.failed->reason.c_str());
}

void TestRunStore::resumeOnOtherReplicasSaysSo() {
    Folder folder;
    const Model model = small_model();
    const TrainData data = small_data();
    QVERIFY(train(model, config_for(1), data, "cpu:2", folder.path).result.ok);
    const Checkpoint checkpoint = load_checkpoint(ModelCheckpoint::last_path(folder.path));
    Trainer trainer(model, DeviceConfig::parse("cpu"), config_for(2), data);
    std::vector<std::string> logs;
    trainer.set_event_sink([&](const Event& event) {
        if (const auto* log = std::get_if<LogEvent>(&event)) logs.push_back(log->text);
    });
    trainer.set_resume_state(checkpoint.state);
    QVERIFY(trainer.run().ok);
    QVERIFY(std::any_of(logs.begin(), logs.end(), [](const std::string& text) {
        return text.find("Resuming after epoch 1 (step 8); it was trained on 2 replicas and continues on 1") != std::string::npos;
    }));
    // Asking for no more epochs than the checkpoint has is a clear error, not a silent no-op.
    Trainer done(model, DeviceConfig::parse("cpu"), config_for(1), data);
    done.set_resume_state(checkpoint.state);
    const FitResult result = done.run();
    QVERIFY(!result.ok);
    QVERIFY(result.failed->reason.find("already trained 1 epoch; ask for more than 1 epochs") != std::string::npos);
}

// A disk that fills up (here: a file size limit, EFBIG) must not replace a good checkpoint with a
// partial one; the run goes on and says so.
void TestRunStore::failedCheckpointWriteKeepsThePreviousFile() {
    Folder folder;
    const Model model = small_model();
    const TrainData data = small_data();
    QVERIFY(train(model, config_for(1), data, "cpu", folder.path).result.ok);
    const std::string last = ModelCheckpoint::last_path(folder.path);
    const std::string before = read_bytes(last);
    QVERIFY(before.size() > 20000);
    struct rlimit old_limit {};
    ::getrlimit(RLIMIT_FSIZE, &old_limit);
    struct rlimit small_limit = old_limit;
    small_limit.rlim_cur = 4096;
    ::signal(SIGXFSZ, SIG_IGN);
    ::setrlimit(RLIMIT_FSIZE, &small_limit);
    const Trained trained = train(model, config_for(2), data, "cpu", folder.path);
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    QVERIFY(trained.result.ok);
    QCOMPARE(trained.history.epochs.size(), std::size_t{2});
    QVERIFY(!trained.warnings.empty());
    QVERIFY2(trained.warnings.front().find("cannot write checkpoint '" + last + "'") != std::string::npos &&
                 trained.warnings.front().find("Training continues; the previous checkpoint is kept as it was.") != std::string::npos,
             trained.warnings.front().c_str());
    QCOMPARE(read_bytes(last), before);
    for (const auto& entry : std::filesystem::directory_iterator(folder.path)) {
        QVERIFY2(entry.path().string().find(".partial") == std::string::npos, "a partial file was left behind");
    }

    // A first checkpoint that cannot be written: there is no previous one to speak of.
    Folder empty;
    ::setrlimit(RLIMIT_FSIZE, &small_limit);
    const Trained first = train(model, config_for(1), data, "cpu", empty.path);
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    QVERIFY(first.result.ok);
    QVERIFY(!first.warnings.empty());
    QVERIFY2(first.warnings.front().find("no checkpoint is kept yet") != std::string::npos &&
                 first.warnings.front().find("previous checkpoint") == std::string::npos,
             first.warnings.front().c_str());
}

// A window's runs that the store does not keep take their numbers out of the store's: a kept run
// begun later, by this process or another, is never numbered as one of them.
void TestRunStore::idsSetAsideAreNotGiven() {
    Folder folder;
    const RunInfo run = a_run();
    {
        RunStore store(folder.path);
        QCOMPARE(store.last_id(), std::int64_t{0});
        store.set_ids_aside_through(2);  // before any run: the first kept one is 3
        QCOMPARE(store.last_id(), std::int64_t{2});
        QCOMPARE(store.begin_run(run).id, std::int64_t{3});
        store.set_ids_aside_through(1);  // never lowers
        QCOMPARE(store.last_id(), std::int64_t{3});
        store.set_ids_aside_through(5);
    }
    RunStore other(folder.path);  // another process's view of the same store
    QCOMPARE(other.last_id(), std::int64_t{5});
    QCOMPARE(other.begin_run(run).id, std::int64_t{6});
    QCOMPARE(other.list().size(), std::size_t{2});
}

// runs.sqlite emptied or deleted (or an older copy put back) while the runs' folders stay: the
// next run was given id 1 again and replaced run 1's checkpoints. Folders on disk keep their ids.
void TestRunStore::runFoldersTheDatabaseForgotKeepTheirIds() {
    Folder folder;
    const RunInfo run = a_run();
    {
        RunStore store(folder.path);
        for (int i = 0; i < 3; ++i) store.finish_run(store.begin_run(run).id, RunStatus::Finished, "done", 1, 1);
    }
    write_bytes(folder.path + "/runs/3/last.mlckpt", "run 3's");
    std::filesystem::remove(folder.path + "/runs.sqlite");
    std::filesystem::remove(folder.path + "/runs.sqlite-wal");
    std::filesystem::remove(folder.path + "/runs.sqlite-shm");
    std::filesystem::create_directories(folder.path + "/runs/not-a-run");
    RunStore store(folder.path);
    QVERIFY(store.list().empty());
    QCOMPARE(store.begin_run(run).id, std::int64_t{4});
    QCOMPARE(read_bytes(folder.path + "/runs/3/last.mlckpt"), std::string("run 3's"));

    // A folder named with the largest id leaves none to give: SQLite's "database or disk is full"
    // sent the user to free space that was there.
    std::filesystem::create_directories(folder.path + "/runs/9223372036854775807");
    RunStore reopened(folder.path);  // opening sets the folders' ids aside
    try {
        reopened.begin_run(run);
        QFAIL("a run was begun without an id");
    } catch (const StoreError& e) {
        const std::string text = e.what();
        QVERIFY2(text.find("has no run id left: its highest is 9223372036854775807") != std::string::npos &&
                     text.find("disk") == std::string::npos && text.find("--store DIR") != std::string::npos,
                 e.what());
    }
    QCOMPARE(reopened.list().size(), std::size_t{1});
}

// last.mlckpt moved away while best.mlckpt stays: the best one answered for "last" without a word
// (resume retrained the epochs after it). Only a run that kept best.mlckpt alone answers so, and a
// run recorded before that was written down (no "save_best_only" in its settings), as before.
void TestRunStore::aMissingLastCheckpointIsSaid() {
    Folder folder;
    RunInfo run;
    run.id = 7;
    run.folder = folder.path;
    write_bytes(ModelCheckpoint::best_path(folder.path), "best");
    const std::pair<std::string, bool> cases[] = {
        {"{\"save_best_only\": true}", true}, {"{}", true}, {"{\"save_best_only\": false}", false}};
    for (const auto& [settings, answers] : cases) {
        run.settings_json = settings;
        if (answers) {
            QCOMPARE(checkpoint_path_of(run), ModelCheckpoint::best_path(folder.path));
            continue;
        }
        try {
            checkpoint_path_of(run);
            QFAIL("best.mlckpt answered for a missing last.mlckpt");
        } catch (const CheckpointError& e) {
            QVERIFY2(std::string(e.what()).find("run 7's last checkpoint '" + ModelCheckpoint::last_path(folder.path) +
                                                "' is missing (moved or deleted)") != std::string::npos,
                     e.what());
        }
    }
    // A run in its first epoch (in another MirrorLab) has not ended: "train it again" was the advice.
    Folder empty;
    run.folder = empty.path;
    for (const auto& [status, said] : {std::pair{RunStatus::Running, "run 7 is training now and has no checkpoint yet"},
                                       std::pair{RunStatus::Interrupted, "(it ended before its first epoch finished"}}) {
        run.status = status;
        try {
            checkpoint_path_of(run);
            QFAIL("a run without checkpoints answered");
        } catch (const CheckpointError& e) {
            QVERIFY2(std::string(e.what()).find(said) != std::string::npos, e.what());
        }
    }
}

// runs.sqlite as a folder, a link to nothing or a loop of links: SQLite says only "unable to open
// database file". The message names what the path is and what to do.
void TestRunStore::aDatabaseThatCannotBeOpenedIsNamed() {
    const std::pair<std::function<void(const std::string&)>, std::string> cases[] = {
        {[](const std::string& path) { std::filesystem::create_directories(path); }, "is a folder or another kind of file, not a database"},
        {[](const std::string& path) { std::filesystem::create_symlink("/nonexistent/runs.sqlite", path); },
         "is a symbolic link to a file that is not there"},
        {[](const std::string& path) { std::filesystem::create_symlink("runs.sqlite", path); }, "Too many levels of symbolic links"},
    };
    for (const auto& [make, said] : cases) {
        Folder folder;
        const std::string database = folder.path + "/runs.sqlite";
        make(database);
        try {
            RunStore store(folder.path);
            QFAIL("the store opened");
        } catch (const StoreError& e) {
            const std::string text = e.what();
            QVERIFY2(text.find("the run store's database '" + database + "' ") != std::string::npos, e.what());
            QVERIFY2(text.find(said) != std::string::npos && text.find("--store DIR") != std::string::npos, e.what());
        }
    }
}

void TestRunStore::storeKeepsRunsAcrossInstances() {
    Folder folder;
    std::int64_t id = 0;
    {
        RunStore store(folder.path);
        RunInfo run;
        run.settings_json = "{}";
        run.model_json = small_model().to_json_text();
        run.devices = "/device:CPU:0";
        run.data_name = "synthetic";
        run.epochs_planned = 3;
        run = store.begin_run(run);
        id = run.id;
        QCOMPARE(run.name, std::string("Run 1"));
        QVERIFY(std::filesystem::is_directory(run.folder));
        store.append_steps(id, {StepRow{1, 1, 1, Metrics{3.8, 0.1, 0.3}, 5.0}, StepRow{2, 1, 2, Metrics{3.7, 0.12, 0.31}, 4.0}});
        store.append_epoch(id, EpochRow{1, Metrics{3.7, 0.12, 0.31}, Metrics{3.6, 0.2, 0.4}, true, 1.5});
        store.finish_run(id, RunStatus::Finished, "Training finished after 1 epoch.", 1, 1);
        store.rename(id, "tutorial, lr 1e-3");
        store.annotate(id, "baseline");
    }
    RunStore again(folder.path);
    const std::vector<RunInfo> runs = again.list();
    QCOMPARE(runs.size(), std::size_t{1});
    QCOMPARE(runs[0].name, std::string("tutorial, lr 1e-3"));
    QCOMPARE(runs[0].note, std::string("baseline"));
    QCOMPARE(runs[0].status, RunStatus::Finished);
    QCOMPARE(runs[0].steps_recorded, 2);
    QCOMPARE(runs[0].epochs_completed, 1);
    QCOMPARE(again.epochs(id).front().validation.loss, 3.6);
    QCOMPARE(again.list(RunFilter{"BASELINE", std::nullopt}).size(), std::size_t{1});
    QCOMPARE(again.list(RunFilter{"", RunStatus::Failed}).size(), std::size_t{0});
    again.remove(id);
    QVERIFY(again.list().empty());
    QVERIFY(!std::filesystem::exists(folder.path + "/runs/" + std::to_string(id)));
    try {
        again.get(id);
        QFAIL("a deleted run was found");
    } catch (const StoreError& e) {
        QVERIFY(std::string(e.what()).find("there is no run 1 in") != std::string::npos);
    }
}

// The process recording a run dies without a word (as with kill -9): the next store to open marks
// the run interrupted and keeps every committed step.
void TestRunStore::deadProcessLeavesRunInterrupted() {
    Folder folder;
    const pid_t child = ::fork();
    if (child == 0) {
        RunStore store(folder.path);
        RunInfo run;
        run.settings_json = run.model_json = "{}";
        const RunInfo begun = store.begin_run(run);
        std::vector<StepRow> steps;
        for (int i = 1; i <= 7; ++i) steps.push_back(StepRow{i, 1, i, Metrics{4.0 - 0.1 * i, 0.1, 0.2}, 3.0});
        store.append_steps(begun.id, steps);
        write_bytes(begun.folder + "/last.mlckpt.partial-" + std::to_string(::getpid()), "half a checkpoint");
        write_bytes(begun.folder + "/last.mlckpt", "the last one");
        ::kill(::getpid(), SIGKILL);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    RunStore store(folder.path);
    const RunInfo run = store.get(1);
    QCOMPARE(run.status, RunStatus::Interrupted);
    QVERIFY(run.status_text.find("ended without finishing") != std::string::npos);
    QCOMPARE(run.steps_recorded, 7);
    QCOMPARE(store.steps(1).back().running.loss, 4.0 - 0.7);
    // The checkpoint it was writing when it died is gone; the last whole one stays.
    std::size_t partial = 0;
    for (const auto& entry : std::filesystem::directory_iterator(run.folder)) {
        partial += entry.path().filename().string().find(".partial-") != std::string::npos ? 1 : 0;
    }
    QCOMPARE(partial, std::size_t{0});
    QCOMPARE(read_bytes(run.folder + "/last.mlckpt"), std::string("the last one"));
}

void TestRunStore::lockedDatabaseSaysSo() {
    Folder folder;
    { RunStore create(folder.path); }
    sqlite3* other = nullptr;
    QCOMPARE(sqlite3_open((folder.path + "/runs.sqlite").c_str(), &other), SQLITE_OK);
    QCOMPARE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    RunStore store(folder.path, 200);
    RunInfo run;
    run.settings_json = run.model_json = "{}";
    try {
        store.begin_run(run);
        QFAIL("a locked database was written");
    } catch (const StoreError& e) {
        QVERIFY2(std::string(e.what()).find("is locked by another MirrorLab") != std::string::npos, e.what());
    }
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    QCOMPARE(store.begin_run(run).id, 1);  // usable once the other lets go
}

void TestRunStore::recorderWritesTheEventStream() {
    Folder folder;
    RunStore store(folder.path);
    const Model model = small_model();
    const TrainData data = small_data();
    RunInfo info;
    info.settings_json = "{}";
    info.model_json = model.to_json_text();
    info = store.begin_run(info);
    std::vector<std::string> warnings;
    Trainer trainer(model, DeviceConfig::parse("cpu:2"), config_for(2), data);
    {
        RunRecorder recorder(store, info.id, [&](const std::string& text) { warnings.push_back(text); });
        trainer.set_event_sink([&](const Event& event) { recorder.consume(event); });
        trainer.add_callback(std::make_shared<ModelCheckpoint>(
            CheckpointOptions{info.folder}, base_checkpoint(model, config_for(2), data, "cpu:2"),
            [&](const SavedCheckpoint& saved) { recorder.checkpoint_saved(saved); }));
        QVERIFY(trainer.run().ok);
    }
    QVERIFY(warnings.empty());
    const RunInfo run = store.get(info.id);
    QCOMPARE(run.status, RunStatus::Finished);
    QCOMPARE(run.epochs_completed, 2);
    QCOMPARE(run.steps_recorded, 16);
    const std::vector<EpochRow> epochs = store.epochs(info.id);
    QCOMPARE(epochs.size(), std::size_t{2});
    QCOMPARE(epochs[1].validation.loss, trainer.history().epochs[1].validation.loss);
    const std::vector<CheckpointRow> checkpoints = store.checkpoints(info.id);
    QVERIFY(!checkpoints.empty());
    QCOMPARE(checkpoints.front().kind, std::string("last"));
    QCOMPARE(checkpoints.front().epoch, 2);
    QCOMPARE(checkpoints.front().path, ModelCheckpoint::last_path(info.folder));

    // A copy of the store names its own files, not the original's (cp -a, a backup put back).
    Folder copy;
    std::filesystem::copy(folder.path, copy.path, std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
    const RunStore copied(copy.path);
    QCOMPARE(copied.checkpoints(info.id).front().path, ModelCheckpoint::last_path(copied.get(info.id).folder));
    QVERIFY(copied.checkpoints(info.id).front().path.rfind(copy.path, 0) == 0);
}

// Another MirrorLab holding the store a few seconds (its own run's rows, a long delete) stopped the
// recording for good: the run's later epochs were lost and a finished run was listed as
// interrupted. The rows wait in memory now and are written once the store is free.
void TestRunStore::recorderWaitsOutALockedStore() {
    Folder folder;
    { RunStore create(folder.path); }
    RunStore store(folder.path, 100);  // waits 0.1 s for a lock, not 5
    RunInfo run;
    run.settings_json = run.model_json = "{}";
    run = store.begin_run(run);
    std::vector<std::string> warnings;
    std::mutex warnings_mutex;
    auto said = [&](const std::string& part) {
        std::lock_guard lock(warnings_mutex);
        return std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
    };
    {
        RunRecorder recorder(store, run.id, [&](const std::string& text) {
            std::lock_guard lock(warnings_mutex);
            warnings.push_back(text);
        }, std::chrono::milliseconds(10));
        auto step = [&](std::int64_t global_step, int epoch) {
            StepEndEvent event;
            event.global_step = global_step;
            event.epoch = epoch;
            event.step = global_step;
            recorder.consume(event);
        };
        auto epoch_end = [&](int epoch) {
            EpochEndEvent end;
            end.epoch = epoch;
            end.train.loss = 1.0 / epoch;
            recorder.consume(end);
        };
        step(1, 1);
        epoch_end(1);
        recorder.flush();
        sqlite3* other = nullptr;
        QCOMPARE(sqlite3_open((folder.path + "/runs.sqlite").c_str(), &other), SQLITE_OK);
        QCOMPARE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
        step(2, 2);
        epoch_end(2);
        QTRY_VERIFY_WITH_TIMEOUT(said("Recording waits: the run store"), 10000);
        recorder.flush();  // returns while the store is locked: a checkpoint does not wait for the other process
        step(3, 3);
        epoch_end(3);
        sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(other);
        FinishedEvent finished;
        finished.reason = FinishReason::Completed;
        finished.epochs_completed = 3;
        recorder.consume(finished);
        QTRY_VERIFY_WITH_TIMEOUT(said("The run store is free again"), 10000);
        recorder.flush();
    }
    QVERIFY(!said("Recording the run stopped"));

    // A resume on other devices refused before its first step leaves the run as it was, its
    // devices included (reopen_run lists the new ones).
    const RunInfo before = store.get(run.id);
    store.reopen_run(run.id, 3, 3, 5, "cpu:4", 4);
    QCOMPARE(store.get(run.id).devices, std::string("cpu:4"));
    {
        RunRecorder recorder(store, run.id);
        recorder.end_as_before(before);
        recorder.flush();
    }
    QCOMPARE(store.get(run.id).devices, before.devices);
    QCOMPARE(store.get(run.id).replicas, before.replicas);
    const RunInfo kept = store.get(run.id);
    QCOMPARE(kept.status, RunStatus::Finished);
    QCOMPARE(store.epochs(run.id).size(), std::size_t{3});
    QCOMPARE(kept.steps_recorded, 3);
}

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_run_store.moc"
