// Keras 3 .keras import and export against files real Keras wrote (tests/data/keras, made by
// tests/golden/make_keras_fixture.py; see tests/golden/README.md): Keras' model opens with its
// summary, parameter count and predictions; our archive has Keras' members, config and HDF5
// layout; bad files give one error naming the part. testExportForKeras leaves an export and our
// probabilities for the optional real-Keras check (keras_load_ours_py in tests/CMakeLists.txt).
#include <QtTest>

#include <cmath>
#include <fstream>

#include "core/data/synthetic.h"
#include "core/data/source.h"
#include "core/data/zip_reader.h"
#include "core/export/hdf5_file.h"
#include "core/export/keras_file.h"
#include "core/export/zip_writer.h"
#include "core/train/callbacks.h"
#include "core/train/inference.h"
#include "core/train/trainer.h"
#include "core/util/error.h"
#include "core/util/file.h"
#include "core/util/json.h"
#include "support/error_text.h"

using namespace mirrorlab;

namespace {

const std::string kKerasDir = std::string(MIRRORLAB_TEST_DATA_DIR) + "/keras";

json::Value expected_small() { return json::parse_file(kKerasDir + "/small_expected.json"); }

std::vector<std::uint8_t> small_bytes() {
    return read_file_binary(kKerasDir + "/small.keras", 1 << 24, "small.keras", "a fixture");
}

std::string text(const std::vector<std::uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

// Keras' members with one replaced (or removed, when `value` is empty and `remove` is set).
std::vector<std::uint8_t> repack(const std::string& member, const std::string& value, bool remove = false) {
    const ZipReader zip(small_bytes(), "small.keras", ".keras");
    std::vector<std::string> texts;
    texts.reserve(zip.entries().size());  // the views below point into it
    std::vector<std::pair<std::string, std::string_view>> members;
    for (const ZipEntry& entry : zip.entries()) {
        if (entry.name == member && remove) continue;
        texts.push_back(entry.name == member ? value : text(zip.read(entry)));
        members.emplace_back(entry.name, texts.back());
    }
    return write_stored_zip(members);
}

std::string keras_member(const std::string& member) { return text(ZipReader(small_bytes(), "small.keras").read(member)); }

PaddedSequences ids_of(const json::Value& rows) {
    PaddedSequences ids;
    ids.count = static_cast<std::int64_t>(rows.size());
    ids.length = static_cast<std::int32_t>(rows[0].size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t j = 0; j < rows[i].size(); ++j) ids.ids.push_back(static_cast<std::int32_t>(rows[i][j].as_int64()));
    }
    return ids;
}

Predictions predict(const Model& model, const std::vector<float>& weights, const PaddedSequences& ids,
                    const std::vector<std::int32_t>* labels) {
    DeviceRegistry registry;
    return run_inference(model, weights, ids, labels, registry, DeviceConfig::parse("cpu"), 32);
}

// Keras' serialization with what differs between two saves of one model taken out: object ids
// of shared objects and the automatic name of the InputLayer.
void normalise(json::Value& value) {
    if (value.is_object()) {
        auto& members = value.as_object();
        std::erase_if(members, [](const auto& member) { return member.first == "shared_object_id"; });
        const json::Value* cls = value.find("class_name");
        if (cls != nullptr && cls->is_string() && cls->as_string() == "InputLayer") value["config"].set("name", "input_layer");
        for (auto& member : value.as_object()) normalise(member.second);
    } else if (value.is_array()) {
        for (auto& element : value.as_array()) normalise(element);
    }
}

// The first path where two JSON values differ, or "" when they are equal.
std::string difference(const json::Value& ours, const json::Value& keras, const std::string& path = "") {
    if (ours.is_object() && keras.is_object()) {
        for (const auto& [key, value] : keras.as_object()) {
            const json::Value* mine = ours.find(key);
            if (mine == nullptr) return path + "/" + key + ": missing in ours";
            if (std::string d = difference(*mine, value, path + "/" + key); !d.empty()) return d;
        }
        for (const auto& [key, value] : ours.as_object()) {
            if (!keras.contains(key)) return path + "/" + key + ": not in Keras'";
        }
        return "";
    }
    if (ours.is_array() && keras.is_array() && ours.size() == keras.size()) {
        for (std::size_t i = 0; i < ours.size(); ++i) {
            if (std::string d = difference(ours[i], keras[i], path + "/" + std::to_string(i)); !d.empty()) return d;
        }
        return "";
    }
    return ours == keras ? "" : path + ": ours " + json::dump(ours) + ", Keras " + json::dump(keras);
}

OptimizerConfig optimizer_of(const json::Value& keras_config) {
    const json::Value& keras = keras_config.at("compile_config").at("optimizer");
    OptimizerConfig optimizer = OptimizerConfig::defaults(optimizer_kind_from_name(keras.at("class_name").as_string()));
    const json::Value& config = keras.at("config");
    optimizer.learning_rate = config.at("learning_rate").as_double();
    if (const json::Value* m = config.find("momentum")) optimizer.momentum = m->as_double();
    if (const json::Value* n = config.find("nesterov")) optimizer.nesterov = n->as_bool();
    return optimizer;
}

// The run's whole state at its end, as a checkpoint would keep it.
struct SnapshotAtEnd final : Callback {
    std::optional<TrainingState> state;
    std::string name() const override { return "test_snapshot"; }
    void on_epoch_end(FitContext& context, const EpochRecord&) override { state = context.snapshot(); }
};

}  // namespace

class TestKerasFile : public QObject {
    Q_OBJECT

private slots:
    void importsKerasFile();
    void optimizerFromCompileConfig();
    void configMatchesKeras();
    void exportHasKerasLayout();
    void exportCarriesOptimizerState();
    void weightsFileRoundTrip();
    void badInputsNameThePart();
    void exportForKeras();
};

void TestKerasFile::importsKerasFile() {
    const json::Value expected = expected_small();
    const KerasModel imported = load_keras_file(kKerasDir + "/small.keras");
    QCOMPARE(imported.keras_version, std::string("3.15.1"));
    QCOMPARE(imported.model.total_params(), expected.at("params").as_int64());
    QCOMPARE(imported.model.layers().size(), std::size_t{8});
    const std::string summary = imported.model.summary();
    for (const char* row : {"embedding (Embedding)", "(None, 12, 4)", "conv1d_1 (Conv1D)", "global_max_pooling1d",
                            "dense_1 (Dense)", "(None, 5)"}) {
        QVERIFY2(summary.find(row) != std::string::npos, row);
    }
    QCOMPARE(imported.weights.size(), static_cast<std::size_t>(imported.model.total_params()));

    const PaddedSequences ids = ids_of(expected.at("input_ids"));
    std::vector<std::int32_t> labels;
    for (const auto& label : expected.at("labels").as_array()) labels.push_back(static_cast<std::int32_t>(label.as_int64()));
    const Predictions ours = predict(imported.model, imported.weights, ids, &labels);
    const json::Value& probs = expected.at("probs");
    double worst = 0.0;
    for (std::size_t i = 0; i < probs.size(); ++i) {
        for (std::size_t j = 0; j < probs[i].size(); ++j) {
            worst = std::max(worst, std::abs(ours.probabilities[i * probs[i].size() + j] - probs[i][j].as_double()));
        }
    }
    qInfo("largest |ours - Keras| probability: %.3g", worst);
    QVERIFY(worst < 1e-5);
    const json::Value& evaluate = expected.at("evaluate");
    qInfo("evaluate: ours loss %.7f accuracy %.4f, Keras loss %.7f accuracy %.4f", ours.metrics.loss,
          ours.metrics.accuracy, evaluate.at("loss").as_double(), evaluate.at("sparse_categorical_accuracy").as_double());
    QVERIFY(std::abs(ours.metrics.loss - evaluate.at("loss").as_double()) < 1e-5);
    QVERIFY(std::abs(ours.metrics.accuracy - evaluate.at("sparse_categorical_accuracy").as_double()) < 1e-6);

    // The optimizer Keras compiled it with, ready to fine-tune as Keras 3 would.
    QVERIFY2(imported.optimizer.has_value(), imported.optimizer_note.c_str());
    QCOMPARE(imported.optimizer->kind, OptimizerKind::Nadam);
    QCOMPARE(imported.optimizer->learning_rate, 0.001);  // Keras' float32 0.0010000000474974513, as typed
    QCOMPARE(imported.optimizer->beta_2, 0.999);
    QCOMPARE(imported.optimizer->embedding_update, EmbeddingUpdate::Keras3);
}

// compile_config's optimizer: ours round-trips; none, another optimizer or odd settings leave the
// import without one and say why.
void TestKerasFile::optimizerFromCompileConfig() {
    OptimizerConfig sgd = OptimizerConfig::defaults(OptimizerKind::SGD);
    sgd.learning_rate = 0.05;
    sgd.momentum = 0.9;
    sgd.nesterov = true;
    const Model model = Model::reference();
    std::string note;
    const std::optional<OptimizerConfig> back = optimizer_from_keras_config(json::dump(keras_config(model, sgd)), note);
    QVERIFY2(back.has_value(), note.c_str());
    QCOMPARE(back->kind, OptimizerKind::SGD);
    QCOMPARE(back->learning_rate, 0.05);
    QCOMPARE(back->momentum, 0.9);
    QVERIFY(back->nesterov);

    QVERIFY(!optimizer_from_keras_config(R"({"class_name": "Sequential", "config": {}})", note));
    QCOMPARE(note, std::string("the model was saved without compile()"));
    QVERIFY(!optimizer_from_keras_config(
        R"({"compile_config": {"optimizer": {"class_name": "Adafactor", "config": {}}}})", note));
    QVERIFY2(note.find("'Adafactor' is not one MirrorLab has") != std::string::npos, note.c_str());
    QVERIFY(!optimizer_from_keras_config(
        R"({"compile_config": {"optimizer": {"class_name": "Adam", "config": {"learning_rate": -1}}}})", note));
    QVERIFY2(note.find("cannot be used") != std::string::npos, note.c_str());
    QVERIFY(!optimizer_from_keras_config("not json", note));
}

void TestKerasFile::configMatchesKeras() {
    // The small model (Nadam) and the two config-only models of every layer type (Adam, SGD).
    std::vector<json::Value> configs{json::parse(keras_member("config.json"))};
    const json::Value all = json::parse_file(kKerasDir + "/all_layers_config.json");
    for (const auto& config : all.as_array()) configs.push_back(config);
    for (json::Value& keras : configs) {
        const Model model = model_from_keras_config(json::dump(keras), "keras config");
        json::Value ours = keras_config(model, optimizer_of(keras));
        normalise(keras);
        normalise(ours);
        const std::string d = difference(ours, keras);
        QVERIFY2(d.empty(), d.c_str());
    }
}

void TestKerasFile::exportHasKerasLayout() {
    const KerasModel imported = load_keras_file(kKerasDir + "/small.keras");
    const json::Value keras_config_json = json::parse(keras_member("config.json"));
    const std::vector<std::uint8_t> archive =
        keras_archive(imported.model, imported.weights, optimizer_of(keras_config_json));

    const ZipReader ours(archive, "ours.keras", ".keras");
    const ZipReader keras(small_bytes(), "small.keras", ".keras");
    QCOMPARE(ours.entries().size(), keras.entries().size());
    for (std::size_t i = 0; i < keras.entries().size(); ++i) {
        QCOMPARE(ours.entries()[i].name, keras.entries()[i].name);
        QCOMPARE(ours.entries()[i].method, keras.entries()[i].method);  // stored, as Keras does
    }
    const json::Value our_metadata = json::parse(text(ours.read("metadata.json")));
    const json::Value keras_metadata = json::parse(text(keras.read("metadata.json")));
    for (const auto& [key, value] : keras_metadata.as_object()) {
        QVERIFY2(our_metadata.contains(key), key.c_str());
        QCOMPARE(our_metadata.at(key).type(), value.type());
    }

    const hdf5::FileReader our_h5(ours.read("model.weights.h5"), "ours");
    const hdf5::FileReader keras_h5(keras.read("model.weights.h5"), "Keras'");
    QCOMPARE(our_h5.groups(), keras_h5.groups());
    // Keras' file holds the optimizer's moments after training; ours its first two variables only.
    std::vector<hdf5::DatasetInfo> keras_datasets;
    for (const auto& dataset : keras_h5.datasets()) {
        if (dataset.path.rfind("optimizer/", 0) != 0 || dataset.path == "optimizer/vars/0" ||
            dataset.path == "optimizer/vars/1") {
            keras_datasets.push_back(dataset);
        }
    }
    QCOMPARE(our_h5.datasets().size(), keras_datasets.size());
    for (std::size_t i = 0; i < keras_datasets.size(); ++i) {
        QCOMPARE(our_h5.datasets()[i].path, keras_datasets[i].path);
        QCOMPARE(our_h5.datasets()[i].shape, keras_datasets[i].shape);
        QCOMPARE(our_h5.datasets()[i].dtype, keras_datasets[i].dtype);
    }
    const KerasModel again = read_keras_archive(archive, "ours.keras");
    QCOMPARE(again.weights, imported.weights);
    QCOMPARE(again.model.to_json_text(), imported.model.to_json_text());
}

// A trained model's optimizer goes along in Keras 3's layout: the same optimizer variables, shapes
// and dtypes as Keras' own file written after fit(), each of our slots where Keras keeps that moment
// (per variable its momentum, then its velocity; Nadam's u_product last).
void TestKerasFile::exportCarriesOptimizerState() {
    const KerasModel imported = load_keras_file(kKerasDir + "/small.keras");
    const OptimizerConfig nadam = optimizer_of(json::parse(keras_member("config.json")));
    QCOMPARE(nadam.kind, OptimizerKind::Nadam);
    const std::size_t total = imported.weights.size();
    std::vector<float> slot_values(2 * total);  // slot 0 of every weight, then slot 1: each value its index
    for (std::size_t i = 0; i < slot_values.size(); ++i) slot_values[i] = static_cast<float>(i);
    const KerasOptimizerState state{17, slot_values, 0.25};

    const ZipReader ours(keras_archive(imported.model, imported.weights, nadam, &state), "ours.keras", ".keras");
    const ZipReader keras(small_bytes(), "small.keras", ".keras");
    const hdf5::FileReader our_h5(ours.read("model.weights.h5"), "ours");
    const hdf5::FileReader keras_h5(keras.read("model.weights.h5"), "Keras'");
    QCOMPARE(our_h5.datasets().size(), keras_h5.datasets().size());
    for (std::size_t i = 0; i < keras_h5.datasets().size(); ++i) {
        QCOMPARE(our_h5.datasets()[i].path, keras_h5.datasets()[i].path);
        QCOMPARE(our_h5.datasets()[i].shape, keras_h5.datasets()[i].shape);
        QCOMPARE(our_h5.datasets()[i].dtype, keras_h5.datasets()[i].dtype);
    }
    std::size_t offset = 0;
    int index = 2;  // after iteration and learning_rate
    for (const VariableInfo& variable : imported.model.variables()) {
        const auto count = static_cast<std::size_t>(variable.shape.numel());
        const std::vector<std::int64_t> shape(variable.shape.dims().begin(), variable.shape.dims().end());
        for (std::size_t slot : {std::size_t{0}, std::size_t{1}}) {
            const std::vector<float> values = our_h5.read_floats("optimizer/vars/" + std::to_string(index++), shape);
            const std::vector<float> expected(slot_values.begin() + static_cast<std::ptrdiff_t>(slot * total + offset),
                                              slot_values.begin() + static_cast<std::ptrdiff_t>(slot * total + offset + count));
            QCOMPARE(values, expected);
        }
        offset += count;
    }
    QCOMPARE(our_h5.read_floats("optimizer/vars/" + std::to_string(index), {}), std::vector<float>{0.25f});
    QCOMPARE(our_h5.find("optimizer/vars/" + std::to_string(index + 1)), nullptr);

    // Slots that do not fit the model and optimizer are refused, naming both.
    const KerasOptimizerState half{17, std::span<const float>(slot_values).first(total), 1.0};
    verify_contains(error_of<DataError>([&] { keras_archive(imported.model, imported.weights, nadam, &half); }),
                    {"optimizer state holds " + QString::number(total), "Nadam", "2 per weight"});
}

void TestKerasFile::weightsFileRoundTrip() {
    const KerasModel imported = load_keras_file(kKerasDir + "/small.keras");
    // Keras' own model.weights.h5 read as a bare .weights.h5 for the same model.
    const ZipReader keras(small_bytes(), "small.keras");
    QCOMPARE(keras_weights_from_h5(keras.read("model.weights.h5"), imported.model, "weights.h5"), imported.weights);
    const std::string path = QDir(QDir::tempPath()).filePath("mirrorlab_test_keras.weights.h5").toStdString();
    save_keras_weights_file(path, imported.model, imported.weights, OptimizerConfig::defaults(OptimizerKind::Nadam));
    QCOMPARE(load_keras_weights_file(path, imported.model), imported.weights);
    // A weight that is NaN or infinite (a diverged model saved anyway) answered every evaluation
    // with "loss: nan" without naming it.
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> diverged = imported.weights;
        diverged[diverged.size() - 2] = bad;  // in the last layer's bias
        save_keras_weights_file(path, imported.model, diverged, OptimizerConfig::defaults(OptimizerKind::Nadam));
        verify_contains(error_of<DataError>([&] { load_keras_weights_file(path, imported.model); }),
                        {QString::fromStdString(path), "layers/dense_1/vars/1",
                         std::isnan(bad) ? "holds NaN at element 3" : "holds an infinite value at element 3", "had diverged"});
    }
    std::remove(path.c_str());
}

void TestKerasFile::badInputsNameThePart() {
    verify_contains(error_of<DataError>([] { read_keras_archive({'h', 'e', 'l', 'l', 'o'}, "x.keras"); }),
                    {"x.keras", "not a .keras archive"});
    std::vector<std::uint8_t> cut = small_bytes();
    cut.resize(cut.size() / 2);
    verify_contains(error_of<DataError>([&] { read_keras_archive(cut, "cut.keras"); }), {"cut.keras", "truncated"});
    verify_contains(error_of<DataError>([] { read_keras_archive(repack("model.weights.h5", "", true), "x.keras"); }),
                    {"x.keras", "model.weights.h5"});
    verify_contains(error_of<DataError>([] { read_keras_archive(repack("config.json", "", true), "x.keras"); }),
                    {"x.keras", "config.json"});

    // Unsupported layers: every one named at once.
    std::string config = keras_member("config.json");
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string out = config;
        const auto at = out.find(from);
        out.replace(at, from.size(), to);
        return out;
    };
    std::string two_unknown = replaced("\"class_name\": \"Conv1D\"", "\"class_name\": \"LSTM\"");
    two_unknown.replace(two_unknown.find("\"class_name\": \"Dropout\""), 23, "\"class_name\": \"Bidirectional\"");
    verify_contains(error_of<ModelError>([&] { read_keras_archive(repack("config.json", two_unknown), "x.keras"); }),
                    {"x.keras/config.json", "\"LSTM\" 'conv1d'", "\"Bidirectional\" 'dropout'", "not supported", "Conv1D"});
    verify_contains(error_of<ModelError>([&] {
                        read_keras_archive(repack("config.json", replaced("\"mask_zero\": false", "\"mask_zero\": true")),
                                           "x.keras");
                    }),
                    {"config.json", "'embedding'", "mask_zero true"});
    // A weight of the wrong shape: the last Dense made wider than the weights Keras saved.
    verify_contains(
        error_of<DataError>([&] {
            read_keras_archive(repack("config.json", replaced("\"units\": 5", "\"units\": 6")), "x.keras");
        }),
        {"x.keras/model.weights.h5", "layers/dense_1/vars/0", "(8, 5)", "(8, 6)"});
    verify_contains(error_of<ModelError>([&] { read_keras_archive(repack("config.json", "{\"config\": "), "x.keras"); }),
                    {"x.keras/config.json", "cannot read"});

    // HDF5: truncated, not HDF5 at all, damaged in its metadata.
    const std::string weights = keras_member("model.weights.h5");
    verify_contains(error_of<DataError>([&] {
                        read_keras_archive(repack("model.weights.h5", weights.substr(0, weights.size() / 2)), "x.keras");
                    }),
                    {"x.keras/model.weights.h5", "truncated or corrupt"});
    verify_contains(error_of<DataError>([&] { read_keras_archive(repack("model.weights.h5", "not hdf5"), "x.keras"); }),
                    {"model.weights.h5", "not an HDF5 file"});
    std::string damaged = weights;
    for (std::size_t i = 96; i < 2048 && i < damaged.size(); i += 7) damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    verify_contains(error_of<DataError>([&] { read_keras_archive(repack("model.weights.h5", damaged), "x.keras"); }),
                    {"x.keras/model.weights.h5"});
}

void TestKerasFile::exportForKeras() {
    // A model trained in MirrorLab, exported, and its probabilities on the validation split: the
    // optional test keras_load_ours_py loads the file in Keras and compares its predict().
    const Model model = Model::from_json_text(R"({"name": "mirrored", "input_length": 12, "layers": [
        {"class_name": "Embedding", "config": {"input_dim": 1000, "output_dim": 4}},
        {"class_name": "Conv1D", "config": {"filters": 6, "kernel_size": 3, "activation": "relu"}},
        {"class_name": "MaxPooling1D", "config": {"pool_size": 2}},
        {"class_name": "Conv1D", "config": {"filters": 5, "kernel_size": 2, "padding": "same", "activation": "relu"}},
        {"class_name": "Flatten"}, {"class_name": "Dropout", "config": {"rate": 0.2}},
        {"class_name": "Dense", "config": {"units": 8, "activation": "relu"}},
        {"class_name": "Dense", "config": {"units": 5, "activation": "softmax"}}]})",
                                              "export model");
    SyntheticReutersOptions options;
    options.train_samples = 128;
    options.validation_samples = 40;
    options.vocabulary_size = 1000;
    options.num_classes = 5;
    const TrainData data = make_train_data(make_synthetic_reuters(options), model.input_length(), model.vocabulary_size());
    TrainConfig config;
    config.epochs = 1;
    config.seed = 5;
    config.optimizer.follow_keras(EmbeddingUpdate::Keras3);  // Keras 3's Nadam, as the file will say
    Trainer trainer(model, DeviceConfig::parse("cpu:2"), config, data);
    auto final_state = std::make_shared<SnapshotAtEnd>();
    trainer.add_callback(final_state);
    QVERIFY(trainer.run().ok);
    QVERIFY(final_state->state.has_value());
    const TrainingState& trained = *final_state->state;
    QCOMPARE(trained.weights, trainer.weights());
    const Predictions ours = predict(model, trainer.weights(), *data.validation_ids, nullptr);

    const QString folder = QString(MIRRORLAB_KERAS_EXPORT_DIR);
    QVERIFY(QDir().mkpath(folder));
    const KerasOptimizerState optimizer_state = keras_optimizer_state(trained);
    QCOMPARE(optimizer_state.iterations, std::int64_t{4});  // 128 samples, batch 16 x 2 replicas
    save_keras_file((folder + "/ours.keras").toStdString(), model, trainer.weights(), config.optimizer, &optimizer_state);
    json::Value out = json::Value::object();
    json::Value ids = json::Value::array();
    for (std::int64_t i = 0; i < data.validation_ids->count; ++i) {
        json::Value row = json::Value::array();
        for (std::int32_t j = 0; j < data.validation_ids->length; ++j) {
            row.push_back(data.validation_ids->ids[static_cast<std::size_t>(i * data.validation_ids->length + j)]);
        }
        ids.push_back(std::move(row));
    }
    json::Value probs = json::Value::array();
    for (float p : ours.probabilities) probs.push_back(static_cast<double>(p));
    out.set("input_ids", std::move(ids));
    out.set("probs", std::move(probs));
    // The optimizer Keras should hold: per model variable (in order) its momentum and velocity.
    json::Value momentum = json::Value::array();
    json::Value velocity = json::Value::array();
    const std::size_t total = trained.weights.size();
    std::size_t offset = 0;
    for (const VariableInfo& variable : model.variables()) {
        json::Value m = json::Value::array();
        json::Value v = json::Value::array();
        for (std::int64_t i = 0; i < variable.shape.numel(); ++i) {
            m.push_back(static_cast<double>(trained.optimizer_slots[offset + static_cast<std::size_t>(i)]));
            v.push_back(static_cast<double>(trained.optimizer_slots[total + offset + static_cast<std::size_t>(i)]));
        }
        momentum.push_back(std::move(m));
        velocity.push_back(std::move(v));
        offset += static_cast<std::size_t>(variable.shape.numel());
    }
    json::Value optimizer = json::Value::object();
    optimizer.set("iterations", optimizer_state.iterations);
    optimizer.set("u_product", optimizer_state.nadam_u_product);
    optimizer.set("momentum", std::move(momentum));
    optimizer.set("velocity", std::move(velocity));
    out.set("optimizer", std::move(optimizer));
    out.set("num_classes", std::int64_t{ours.num_classes});
    std::ofstream((folder + "/ours_expected.json").toStdString()) << json::dump(out) << "\n";
    // And it reads back as it was written.
    QCOMPARE(load_keras_file((folder + "/ours.keras").toStdString()).weights, trainer.weights());
}

QTEST_GUILESS_MAIN(TestKerasFile)
#include "test_keras_file.moc"
