// Golden end-to-end test against Keras, in the manner of llm.c's test_gpt2: two tiny fixed
// models (tests/data/keras_golden_{a,b}), their Keras 3 activations, logits, probabilities, loss
// and every gradient for one batch, and 10-step trajectories of six Keras 3 optimizers as a user
// runs them (IndexedSlices embedding gradients) and fed dense gradients; plus tf.keras 2's
// optimizer_v2 trajectories (keras_golden_{a,b}_tf2.txt: the tutorial's Nadam and the other
// sparse updates that move only the Embedding rows in the batch); and GlobalAveragePooling1D,
// alone and in a third model, against tf.keras 2.15 (keras_golden_c). The numbers come from
// TensorFlow/Keras (tests/golden/make_keras_golden.py, make_tf2_golden.py and make_gap_golden.py,
// which check themselves against independent numpy transcriptions); nothing here is computed by
// the code under test.
//
// Every comparison is printed as a table row (max |a - e|, max |a - e| / |e|, tolerance), so a
// failure says which tensor drifted and by how much.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend/cpu_reference.h"
#include "core/device/device.h"
#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/util/error.h"
#include "support/fixture.h"
#include "support/thread_limit.h"

using namespace mirrorlab;
using testsupport::Fixture;
using testsupport::FixtureTensor;

namespace {

// An element passes when |actual - expected| <= atol + rtol * |expected|. The absolute floor
// only matters for values near zero (ReLU outputs, tiny gradients), where float32 rounding of a
// sum of terms of size ~1 leaves ~1e-7 of noise that relative error would magnify.
struct Tolerance {
    double rtol = 0.0;
    double atol = 0.0;
};
constexpr Tolerance kForwardTolerance{1e-5, 1e-6};
constexpr Tolerance kLossTolerance{1e-5, 1e-6};
constexpr Tolerance kGradientTolerance{1e-5, 1e-7};
// Ten optimizer steps compound rounding differences (and Adam-family updates divide by
// sqrt(v) + eps, which amplifies them for tiny gradients).
constexpr Tolerance kTrajectoryTolerance{1e-4, 1e-5};

struct Comparison {
    std::string name;
    std::int64_t count = 0;
    double max_abs = 0.0;
    double max_rel = 0.0;      // over elements with expected != 0
    double worst_ratio = 0.0;  // max |a - e| / (atol + rtol |e|); <= 1 passes
    std::int64_t worst_index = -1;
    double worst_actual = 0.0, worst_expected = 0.0;
    Tolerance tolerance;
    std::string problem;  // shape mismatch or non-finite values
    bool ok() const { return problem.empty() && worst_ratio <= 1.0; }
};

Comparison compare(const std::string& name, const std::vector<float>& actual,
                   const std::vector<float>& expected, Tolerance tolerance) {
    Comparison result;
    result.name = name;
    result.tolerance = tolerance;
    result.count = static_cast<std::int64_t>(expected.size());
    if (actual.size() != expected.size()) {
        result.problem = "engine has " + std::to_string(actual.size()) + " values, Keras " +
                         std::to_string(expected.size());
        return result;
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double a = actual[i], e = expected[i];
        if (!std::isfinite(a) || !std::isfinite(e)) {
            if (result.problem.empty()) {
                result.problem = "non-finite value at " + std::to_string(i) + ": engine " +
                                 std::to_string(a) + ", Keras " + std::to_string(e);
            }
            continue;
        }
        const double diff = std::abs(a - e);
        result.max_abs = std::max(result.max_abs, diff);
        if (e != 0.0) result.max_rel = std::max(result.max_rel, diff / std::abs(e));
        const double ratio = diff / (tolerance.atol + tolerance.rtol * std::abs(e));
        if (ratio > result.worst_ratio || result.worst_index < 0) {
            result.worst_ratio = ratio;
            result.worst_index = static_cast<std::int64_t>(i);
            result.worst_actual = a;
            result.worst_expected = e;
        }
    }
    return result;
}

Comparison compare(const std::string& name, const std::vector<float>& actual,
                   const FixtureTensor& expected, Tolerance tolerance) {
    if (expected.is_int) {
        Comparison result;
        result.name = name;
        result.problem = "fixture tensor '" + expected.name + "' is i32, expected f32";
        return result;
    }
    return compare(name, actual, expected.f32, tolerance);
}

// Collects comparisons, prints them as one table and says which failed.
class Report {
  public:
    explicit Report(std::string title) : title_(std::move(title)) {}

    const Comparison& add(Comparison comparison) {
        rows_.push_back(std::move(comparison));
        return rows_.back();
    }

    bool all_ok() const {
        for (const auto& row : rows_) {
            if (!row.ok()) return false;
        }
        return true;
    }

    void print() const {
        qInfo("%s", title_.c_str());
        // "worst/tol" is the largest |a - e| / (atol + rtol |e|): the margin left (<= 1 passes).
        qInfo("  %-46s %6s %10s %10s %8s %8s %9s  %s", "tensor", "n", "max abs", "max rel", "rtol",
              "atol", "worst/tol", "result");
        for (const auto& row : rows_) {
            qInfo("  %-46s %6lld %10.3e %10.3e %8.1e %8.1e %9.3f  %s", row.name.c_str(),
                  static_cast<long long>(row.count), row.max_abs, row.max_rel, row.tolerance.rtol,
                  row.tolerance.atol, row.worst_ratio, row.ok() ? "ok" : "FAIL");
        }
    }

    std::string failures() const {
        std::string text;
        for (const auto& row : rows_) {
            if (row.ok()) continue;
            text += "\n  " + row.name + ": ";
            if (!row.problem.empty()) {
                text += row.problem;
            } else {
                text += "element " + std::to_string(row.worst_index) + " engine " +
                        QString::number(row.worst_actual, 'g', 9).toStdString() + " vs Keras " +
                        QString::number(row.worst_expected, 'g', 9).toStdString() + " (" +
                        QString::number(row.worst_ratio, 'g', 3).toStdString() + "x the tolerance)";
            }
        }
        return text;
    }

  private:
    std::string title_;
    std::vector<Comparison> rows_;
};

std::string data_path(const std::string& file) {
    return std::string(MIRRORLAB_TEST_DATA_DIR) + "/" + file;
}

// One fixture with its model, batch and initial weights, in the engine's flat variable order.
struct Golden {
    explicit Golden(const std::string& key)
        : fixture(Fixture::read(data_path("keras_golden_" + key + ".txt"))),
          model(Model::from_json_file(data_path("keras_golden_" + key + ".json"))) {
        const FixtureTensor& id_tensor = fixture.at("input_ids");
        const FixtureTensor& label_tensor = fixture.at("labels");
        if (!id_tensor.is_int || !label_tensor.is_int || id_tensor.shape.size() != 2) {
            throw std::runtime_error(fixture.path() +
                                     ": input_ids and labels must be i32, ids [batch, length]");
        }
        batch = static_cast<std::int32_t>(id_tensor.shape[0]);
        if (id_tensor.shape[1] != model.input_length() || label_tensor.numel() != batch) {
            throw std::runtime_error(fixture.path() + ": the batch " + id_tensor.shape_text() +
                                     " does not fit the model's input_length " +
                                     std::to_string(model.input_length()));
        }
        ids = id_tensor.i32;
        labels = label_tensor.i32;
        initial_weights = flatten_variables("weights/");
    }

    // Concatenates "<prefix><layer>/<var>" in Model::variables() order, checking each shape.
    std::vector<float> flatten_variables(const std::string& prefix) const {
        std::vector<float> flat;
        for (const auto& variable : model.variables()) {
            const FixtureTensor& tensor = fixture.at(prefix + variable.name);
            if (!std::ranges::equal(tensor.shape, variable.shape.dims())) {
                throw std::runtime_error(fixture.path() + ": '" + tensor.name + "' is " +
                                         tensor.shape_text() + " but the engine's variable is " +
                                         variable.shape.to_string());
            }
            flat.insert(flat.end(), tensor.f32.begin(), tensor.f32.end());
        }
        return flat;
    }

    // Splits the engine's flat buffer back into variables and compares each with "<prefix><var>"
    // of `expected` (this fixture or a trajectory fixture made from it).
    void compare_variables(Report& report, const std::vector<float>& flat, const std::string& prefix,
                           Tolerance tolerance) const {
        compare_variables(report, flat, fixture, prefix, tolerance);
    }
    void compare_variables(Report& report, const std::vector<float>& flat, const Fixture& expected,
                           const std::string& prefix, Tolerance tolerance) const {
        std::size_t offset = 0;
        for (const auto& variable : model.variables()) {
            const auto count = static_cast<std::size_t>(variable.shape.numel());
            const std::vector<float> part(
                flat.begin() + static_cast<std::ptrdiff_t>(std::min(offset, flat.size())),
                flat.begin() + static_cast<std::ptrdiff_t>(std::min(offset + count, flat.size())));
            report.add(compare(prefix + variable.name, part, expected.at(prefix + variable.name),
                               tolerance));
            offset += count;
        }
    }

    Fixture fixture;
    Model model;
    std::int32_t batch = 0;
    std::vector<std::int32_t> ids, labels;
    std::vector<float> initial_weights;
};

std::unique_ptr<LogicalDevice> cpu_device() {
    return std::make_unique<LogicalDevice>("/device:CPU:0", detect_cpu(), 0, make_cpu_backend(),
                                           nullptr);
}

// Forward, loss and gradients of one batch, compared with the fixture.
void check_step(const Golden& golden, ModelReplica& replica, Report& report) {
    const LossCounts counts = replica.forward_backward(golden.ids.data(), golden.labels.data(),
                                                       golden.batch, golden.batch, 0, nullptr);
    const auto& layers = golden.model.layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const bool last = i + 1 == layers.size();
        // The engine fuses the output softmax into the loss, so its last layer holds the logits;
        // the probabilities are checked through evaluate() below.
        const bool fused_softmax = last && layers[i].config.activation == ActivationKind::Softmax;
        const std::string name = fused_softmax ? "logits" : "activation/" + layers[i].config.name;
        report.add(compare(name, replica.layer_output(i, golden.batch), golden.fixture.at(name),
                           kForwardTolerance));
    }
    report.add(compare("loss", {static_cast<float>(counts.loss_sum / golden.batch)},
                       golden.fixture.at("loss"), kLossTolerance));
    golden.compare_variables(report, replica.gradients(), "grad/", kGradientTolerance);

    std::vector<float> probabilities;
    const LossCounts evaluated =
        replica.evaluate(golden.ids.data(), golden.labels.data(), golden.batch, &probabilities);
    report.add(
        compare("probs (evaluate)", probabilities, golden.fixture.at("probs"), kForwardTolerance));
    const std::string last_name = "activation/" + layers.back().config.name;
    report.add(compare(last_name + " (evaluate)", probabilities, golden.fixture.at(last_name),
                       kForwardTolerance));
    report.add(compare("loss (evaluate)", {static_cast<float>(evaluated.loss_sum / golden.batch)},
                       golden.fixture.at("loss"), kLossTolerance));
}

// ---- Optimizer hyper-parameters from the fixture header ------------------------------------

double parse_number(const std::string& run, const std::string& key, const std::string& text) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') {
        throw std::runtime_error("optimizer " + run + ": " + key + "=" + text + " is not a number");
    }
    return value;
}

bool parse_bool(const std::string& run, const std::string& key, const std::string& text) {
    if (text == "True") return true;
    if (text == "False") return false;
    throw std::runtime_error("optimizer " + run + ": " + key + "=" + text + " is not True/False");
}

bool header_says(const Fixture& fixture, const std::string& text) {
    for (const auto& comment : fixture.comments()) {
        if (comment.find(text) != std::string::npos) return true;
    }
    return false;
}
bool fixture_is_keras_3(const Fixture& fixture) { return header_says(fixture, "keras 3."); }
// tests/golden/make_tf2_golden.py: tf.keras 2 with its optimizer_v2 ("legacy") optimizers.
bool fixture_is_tf2(const Fixture& fixture) { return header_says(fixture, "keras 2.") && header_says(fixture, "legacy"); }

// Builds the engine's config from Keras' get_config() as the fixture header records it, so the
// test cannot run with other hyper-parameters than Keras did. Every key must be understood:
// features the engine lacks (weight decay, clipping, EMA, AMSGrad, centered RMSprop, loss
// scaling, gradient accumulation) must be switched off in the run, or the test fails here.
OptimizerConfig config_from_header(const Fixture& fixture, const std::string& run) {
    const auto it = fixture.optimizer_runs().find(run);
    if (it == fixture.optimizer_runs().end()) {
        throw std::runtime_error(fixture.path() + ": no '# optimizer " + run + " ...' header line");
    }
    // Keras 3 passes the Embedding gradient as IndexedSlices ("<opt>"); "<opt>_densegrad" runs fed
    // it dense gradients instead (what Keras 3 on JAX or PyTorch does).
    const bool tf2 = fixture_is_tf2(fixture);
    if (!tf2 && !fixture_is_keras_3(fixture)) {
        throw std::runtime_error(fixture.path() + ": the header names neither Keras 3 nor tf.keras 2's legacy "
                                                  "optimizers; the optimizers' semantics depend on it");
    }
    std::string base = run;
    EmbeddingUpdate embedding_update = tf2 ? EmbeddingUpdate::TF2 : EmbeddingUpdate::Keras3;
    if (const auto pos = base.find("_densegrad"); pos != std::string::npos) {
        base.erase(pos);
        embedding_update = EmbeddingUpdate::Dense;
    }
    OptimizerConfig config;
    config.embedding_update = embedding_update;
    std::vector<std::string> required{"learning_rate"};
    if (base == "sgd" || base == "sgd_momentum" || base == "sgd_nesterov") {
        config.kind = OptimizerKind::SGD;
        required.insert(required.end(), {"momentum", "nesterov"});
    } else if (base == "adam" || base == "nadam") {
        config.kind = base == "adam" ? OptimizerKind::Adam : OptimizerKind::Nadam;
        required.insert(required.end(), {"beta_1", "beta_2", "epsilon"});
    } else if (base == "rmsprop" || base == "rmsprop_momentum") {
        config.kind = OptimizerKind::RMSprop;
        required.insert(required.end(), {"rho", "momentum", "epsilon"});
    } else {
        throw std::runtime_error(fixture.path() + ": unknown optimizer run '" + run + "'");
    }
    // tf.keras 2's `decay`: Nadam's momentum-schedule decay; for the others a learning-rate decay
    // the engine does not have (so it must be 0).
    if (tf2) required.push_back("decay");
    const auto& keys = it->second;
    for (const auto& key : required) {
        if (keys.count(key) == 0)
            throw std::runtime_error("optimizer " + run + ": the header lacks " + key);
    }
    for (const auto& [key, value] : keys) {
        if (key == "learning_rate") {
            config.learning_rate = parse_number(run, key, value);
        } else if (key == "beta_1") {
            config.beta_1 = parse_number(run, key, value);
        } else if (key == "beta_2") {
            config.beta_2 = parse_number(run, key, value);
        } else if (key == "epsilon") {
            config.epsilon = parse_number(run, key, value);
        } else if (key == "momentum") {
            config.momentum = parse_number(run, key, value);
        } else if (key == "rho") {
            config.rho = parse_number(run, key, value);
        } else if (key == "decay" && tf2) {
            const double decay = parse_number(run, key, value);
            if (config.kind == OptimizerKind::Nadam) {
                config.nadam_schedule_decay = decay;
            } else if (decay != 0.0) {
                throw std::runtime_error("optimizer " + run + ": a learning-rate decay of " + value +
                                         " is not supported by the engine");
            }
        } else if (key == "nesterov") {
            config.nesterov = parse_bool(run, key, value);
        } else if (key == "weight_decay" || key == "clipnorm" || key == "global_clipnorm" ||
                   key == "clipvalue" || key == "ema_overwrite_frequency" ||
                   key == "loss_scale_factor" || key == "gradient_accumulation_steps") {
            if (value != "None") {
                throw std::runtime_error("optimizer " + run + ": " + key + "=" + value +
                                         " is not supported by the engine");
            }
        } else if (key == "use_ema" || key == "amsgrad" || key == "centered") {
            if (parse_bool(run, key, value)) {
                throw std::runtime_error("optimizer " + run + ": " + key +
                                         "=True is not supported by the engine");
            }
        } else if (key == "ema_momentum") {
            // Only read by Keras when use_ema=True, which is refused above.
        } else {
            throw std::runtime_error("optimizer " + run + ": unknown hyper-parameter " + key + "=" +
                                     value);
        }
    }
    // Keras 3's Nadam uses u_t = beta_1 * (1 - 0.5 * 0.96^t); TF2's tf.keras Nadam (the tutorial's,
    // our default) uses 0.96^(0.004 t), which its fixture states as decay=0.004.
    if (config.kind == OptimizerKind::Nadam && !tf2) config.nadam_schedule_decay = 1.0;
    config.validate();
    return config;
}

// The batches a trajectory fixture's steps cycle through: the Keras 3 fixtures repeat their one
// batch; the TF2 fixtures alternate two (`batches` [2, batch, length]) so rows leave the batch.
std::vector<std::vector<std::int32_t>> trajectory_batches(const Golden& golden, const Fixture& fixture) {
    const FixtureTensor* batches = fixture.find("batches");
    if (batches == nullptr) return {golden.ids};
    if (!batches->is_int || batches->shape.size() != 3 || batches->shape[1] != golden.batch ||
        batches->shape[2] != golden.model.input_length()) {
        throw std::runtime_error(fixture.path() + ": batches " + batches->shape_text() + " must be i32 [n, " +
                                 std::to_string(golden.batch) + ", " + std::to_string(golden.model.input_length()) +
                                 "]");
    }
    const auto size = static_cast<std::size_t>(golden.batch) * static_cast<std::size_t>(golden.model.input_length());
    std::vector<std::vector<std::int32_t>> out;
    for (std::size_t b = 0; b < static_cast<std::size_t>(batches->shape[0]); ++b) {
        out.emplace_back(batches->i32.begin() + static_cast<std::ptrdiff_t>(b * size),
                         batches->i32.begin() + static_cast<std::ptrdiff_t>((b + 1) * size));
    }
    return out;
}

// Runs `run` of `fixture` with `config` for as many steps as the fixture has losses, from the
// exported initial weights, step i on batch i % n.
void check_trajectory(const Golden& golden, const Fixture& fixture, const std::string& run,
                      const OptimizerConfig& config, Report& report) {
    qInfo("%s: %s", run.c_str(), config.describe().c_str());
    OptimizerSchedule schedule(config);
    auto device = cpu_device();
    ModelReplica replica(golden.model, *device, golden.batch, schedule.update_layout());
    replica.set_weights(golden.initial_weights);
    const auto batches = trajectory_batches(golden, fixture);

    const FixtureTensor& expected_losses = fixture.at(run + "/losses");
    std::vector<float> losses;
    for (std::int64_t step = 0; step < expected_losses.numel(); ++step) {
        const auto& ids = batches[static_cast<std::size_t>(step) % batches.size()];
        const LossCounts counts =
            replica.forward_backward(ids.data(), golden.labels.data(), golden.batch, golden.batch, 0, nullptr);
        losses.push_back(
            static_cast<float>(counts.loss_sum / golden.batch));  // before the update, as Keras'
        replica.apply_update(schedule.next_step());
    }
    report.add(compare(run + "/losses", losses, expected_losses, kTrajectoryTolerance));
    golden.compare_variables(report, replica.weights(), fixture, run + "/weights/", kTrajectoryTolerance);
}

void check_trajectory(const Golden& golden, const Fixture& fixture, const std::string& run, Report& report) {
    check_trajectory(golden, fixture, run, config_from_header(fixture, run), report);
}

Fixture tf2_fixture(const std::string& key) { return Fixture::read(data_path("keras_golden_" + key + "_tf2.txt")); }

}  // namespace

class TestGolden : public QObject {
    Q_OBJECT

  private slots:
    void fixtureHeaderDescribesEveryRun();
    void forwardLossAndGradients_data();
    void forwardLossAndGradients();
    void globalAveragePoolingOpMatchesKeras();
    void trajectories_data();
    void trajectories();
    void tutorialTf2Trajectories_data();
    void tutorialTf2Trajectories();
    void wrongEmbeddingUpdateFails_data();
    void wrongEmbeddingUpdateFails();
    void perturbedWeightFailsTheComparison_data();
    void perturbedWeightFailsTheComparison();
};

void TestGolden::fixtureHeaderDescribesEveryRun() {
    for (const std::string key : {"a", "b"}) {
        try {
            const Golden golden(key);
            // The six optimizers plus the three dense-gradient variants, each fully understood.
            QCOMPARE(golden.fixture.optimizer_runs().size(), std::size_t{9});
            for (const auto& [run, keys] : golden.fixture.optimizer_runs()) {
                Q_UNUSED(keys);
                QVERIFY2(golden.fixture.find(run + "/losses") != nullptr, run.c_str());
                (void)config_from_header(golden.fixture, run);
            }
        } catch (const std::exception& error) {
            QFAIL(error.what());
        }
    }
}

// On one thread and on the machine's: the CPU backend's fused Conv1D + MaxPooling1D keeps only one
// sample's convolution output on one thread (ModelReplica::layer_output computes it again).
void TestGolden::forwardLossAndGradients_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<int>("threads");
    for (int threads : {1, 0}) {
        const char* where = threads == 1 ? "one thread" : "all cores";
        QTest::addRow("model A (Conv1D valid/same, MaxPooling1D, Flatten), %s", where) << "a" << threads;
        QTest::addRow("model B (GlobalMaxPooling1D, Dense relu), %s", where) << "b" << threads;
        QTest::addRow("model C (GlobalAveragePooling1D, tf.keras 2.15), %s", where) << "c" << threads;
    }
}

// The layer's own ops on Keras' numbers: y = GlobalAveragePooling1D()(x) and d sum(r * y) / dx.
void TestGolden::globalAveragePoolingOpMatchesKeras() {
    try {
        const Fixture fixture = Fixture::read(data_path("keras_golden_c.txt"));
        FixtureTensor x = fixture.at("gap/x"), r = fixture.at("gap/r");
        const Shape sequence{x.shape[0], x.shape[1], x.shape[2]}, pooled{r.shape[0], r.shape[1]};
        std::vector<float> y(static_cast<std::size_t>(pooled.numel())), grad_x(x.f32.size());
        CpuReferenceBackend backend;
        const TensorView x_view[] = {{x.f32.data(), sequence, DType::F32}}, y_view[] = {{y.data(), pooled, DType::F32}};
        const TensorView r_view[] = {{r.f32.data(), pooled, DType::F32}};
        const TensorView grad_view[] = {{grad_x.data(), sequence, DType::F32}};
        run_op(backend, *find_op("global_average_pooling1d_forward"), x_view, y_view);
        run_op(backend, *find_op("global_average_pooling1d_backward"), r_view, grad_view);
        Report report("GlobalAveragePooling1D's ops vs tf.keras");
        report.add(compare("gap/y", y, fixture.at("gap/y"), kForwardTolerance));
        report.add(compare("gap/grad_x", grad_x, fixture.at("gap/grad_x"), kGradientTolerance));
        report.print();
        QVERIFY2(report.all_ok(), report.failures().c_str());
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
}

void TestGolden::forwardLossAndGradients() {
    QFETCH(QString, key);
    QFETCH(int, threads);
    const testsupport::ScopedThreadLimit limit(threads);
    try {
        const Golden golden(key.toStdString());
        auto device = cpu_device();
        ModelReplica replica(golden.model, *device, golden.batch, UpdateLayout{});
        replica.set_weights(golden.initial_weights);
        Report report("model " + key.toStdString() + ": one step on the fixture batch vs Keras");
        check_step(golden, replica, report);
        report.print();
        QVERIFY2(report.all_ok(), report.failures().c_str());
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
}

void TestGolden::trajectories_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("run");
    // Keras 3 hands the Embedding gradient to the optimizer as IndexedSlices, one slice per
    // token occurrence, and squares each slice before they are summed: a token seen k times adds
    // sum g_i^2 to Adam/Nadam/RMSprop's second moment, not (sum g_i)^2. The plain runs are that,
    // Keras as a user runs it (EmbeddingUpdate::Keras3); the "_densegrad" runs fed Keras dense
    // gradients (EmbeddingUpdate::Dense). The two end ~0.06 apart in the embedding after 10 steps,
    // far outside the tolerance, so each run proves its own semantics. SGD is linear in the
    // gradient: one run serves both.
    for (const char* key : {"a", "b"}) {
        for (const char* run : {"sgd", "sgd_momentum", "sgd_nesterov", "adam", "nadam", "rmsprop", "adam_densegrad",
                                "nadam_densegrad", "rmsprop_densegrad"}) {
            QTest::addRow("%s/%s", key, run) << QString(key) << QString(run);
        }
    }
}

void TestGolden::trajectories() {
    QFETCH(QString, key);
    QFETCH(QString, run);
    try {
        const Golden golden(key.toStdString());
        Report report("model " + key.toStdString() + ": 10 steps of " + run.toStdString() +
                      " vs Keras");
        check_trajectory(golden, golden.fixture, run.toStdString(), report);
        report.print();
        QVERIFY2(report.all_ok(), report.failures().c_str());
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
}

void TestGolden::tutorialTf2Trajectories_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("run");
    // tf.keras 2's optimizer_v2 (tests/golden/make_tf2_golden.py, TensorFlow 2.15's legacy
    // optimizers): the tutorial's Nadam, with its 0.004 momentum schedule and its sparse update
    // that moves only the Embedding rows in the batch; the two lazy momentum optimizers; and Adam,
    // whose sparse update equals the dense one. RMSprop without momentum is left out: tf.keras 2
    // puts its epsilon outside the square root, the engine (as Keras 3) inside.
    for (const char* key : {"a", "b"}) {
        for (const char* run : {"nadam", "adam", "sgd_momentum", "rmsprop_momentum"}) {
            QTest::addRow("%s/%s", key, run) << QString(key) << QString(run);
        }
    }
}

void TestGolden::tutorialTf2Trajectories() {
    QFETCH(QString, key);
    QFETCH(QString, run);
    try {
        const Golden golden(key.toStdString());
        const Fixture fixture = tf2_fixture(key.toStdString());
        const OptimizerConfig config = config_from_header(fixture, run.toStdString());
        QCOMPARE(config.embedding_update, EmbeddingUpdate::TF2);
        // The engine's defaults are the tutorial's: the fixture must need nothing else.
        OptimizerConfig defaults = OptimizerConfig::defaults(config.kind);
        QCOMPARE(defaults.embedding_update, config.embedding_update);
        QCOMPARE(defaults.nadam_schedule_decay, config.nadam_schedule_decay);
        Report report("model " + key.toStdString() + ": 10 steps of " + run.toStdString() + " vs tf.keras 2 (TF2)");
        check_trajectory(golden, fixture, run.toStdString(), config, report);
        report.print();
        QVERIFY2(report.all_ok(), report.failures().c_str());
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
}

void TestGolden::wrongEmbeddingUpdateFails_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<bool>("tf2");
    QTest::addColumn<QString>("run");
    QTest::addColumn<int>("wrong");
    for (const char* key : {"a", "b"}) {
        QTest::addRow("%s/keras3 nadam run as dense", key) << QString(key) << false << "nadam" << int(EmbeddingUpdate::Dense);
        QTest::addRow("%s/keras3 rmsprop run as tf2", key) << QString(key) << false << "rmsprop" << int(EmbeddingUpdate::TF2);
        QTest::addRow("%s/keras3 adam_densegrad run as keras3", key)
            << QString(key) << false << "adam_densegrad" << int(EmbeddingUpdate::Keras3);
        QTest::addRow("%s/tf2 nadam run as dense", key) << QString(key) << true << "nadam" << int(EmbeddingUpdate::Dense);
        QTest::addRow("%s/tf2 sgd_momentum run as keras3", key)
            << QString(key) << true << "sgd_momentum" << int(EmbeddingUpdate::Keras3);
        QTest::addRow("%s/tf2 rmsprop_momentum run as dense", key)
            << QString(key) << true << "rmsprop_momentum" << int(EmbeddingUpdate::Dense);
    }
}

// The negative control for the semantics: each fixture run, replayed with another Embedding
// update than the one it was made with, must fail, or the trajectories above prove nothing
// about EmbeddingUpdate.
void TestGolden::wrongEmbeddingUpdateFails() {
    QFETCH(QString, key);
    QFETCH(bool, tf2);
    QFETCH(QString, run);
    QFETCH(int, wrong);
    try {
        const Golden golden(key.toStdString());
        const Fixture fixture = tf2 ? tf2_fixture(key.toStdString()) : golden.fixture;
        OptimizerConfig config = config_from_header(fixture, run.toStdString());
        QVERIFY(config.embedding_update != static_cast<EmbeddingUpdate>(wrong));
        config.embedding_update = static_cast<EmbeddingUpdate>(wrong);
        Report report("model " + key.toStdString() + ": " + run.toStdString() + " with embedding_update='" +
                      std::string(embedding_update_name(config.embedding_update)) +
                      "' (negative control: must FAIL)");
        check_trajectory(golden, fixture, run.toStdString(), config, report);
        report.print();
        QVERIFY2(!report.all_ok(), "the wrong embedding update went unnoticed");
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
}

void TestGolden::perturbedWeightFailsTheComparison_data() {
    forwardLossAndGradients_data();
}

// The negative control: the comparison must be able to fail. Moving the weight with the largest
// Keras gradient by 1e-2 changes the loss by about |g| * 1e-2 and the gradients with it.
void TestGolden::perturbedWeightFailsTheComparison() {
    QFETCH(QString, key);
    try {
        const Golden golden(key.toStdString());
        const std::vector<float> keras_gradients = golden.flatten_variables("grad/");
        std::size_t strongest = 0;
        for (std::size_t i = 1; i < keras_gradients.size(); ++i) {
            if (std::abs(keras_gradients[i]) > std::abs(keras_gradients[strongest])) strongest = i;
        }
        std::vector<float> weights = golden.initial_weights;
        weights[strongest] += 1e-2f;

        auto device = cpu_device();
        ModelReplica replica(golden.model, *device, golden.batch, UpdateLayout{});
        replica.set_weights(weights);
        Report report("model " + key.toStdString() + ": negative control, weight " +
                      std::to_string(strongest) +
                      " moved by 1e-2 (the comparison below must FAIL)");
        check_step(golden, replica, report);
        report.print();
        QVERIFY2(!report.all_ok(),
                 "a perturbed weight went unnoticed: the golden comparison cannot fail");

        Report loss_and_gradients("loss and gradients only");
        const LossCounts counts = replica.forward_backward(golden.ids.data(), golden.labels.data(),
                                                           golden.batch, golden.batch, 0, nullptr);
        const Comparison& loss = loss_and_gradients.add(
            compare("loss", {static_cast<float>(counts.loss_sum / golden.batch)},
                    golden.fixture.at("loss"), kLossTolerance));
        QVERIFY2(!loss.ok(), "the loss comparison did not notice the perturbed weight");
        golden.compare_variables(loss_and_gradients, replica.gradients(), "grad/",
                                 kGradientTolerance);
        QVERIFY(!loss_and_gradients.all_ok());
    } catch (const std::exception& error) {
        QFAIL(error.what());
    }
}

QTEST_APPLESS_MAIN(TestGolden)
#include "test_golden.moc"
