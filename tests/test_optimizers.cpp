// Optimizer module: names, configs, the host-side schedule and the reference update kernel.
//
// Expected numbers never come from the code under test. They are either
//   * worked out by hand in this file (closed forms written in double, with the arithmetic in
//     comments), or
//   * golden values from TensorFlow 2 / Keras 3 themselves, printed by
//     `python3 tests/golden/optimizer_reference.py` (tensorflow-cpu 2.21.0, keras 3.15.1,
//     numpy 2.4.6; the script also cross-checks every case against a float64 numpy transcription).
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/optim/optimizer.h"
#include "core/util/error.h"

using namespace mirrorlab;

namespace {

// ---- Golden values (paste of the script's output) -----------------------------------------
// Initial weights and per-step gradients, as in optimizer_reference.py (W0, GRADS).
const float k_w0[4] = {0.5f, -1.25f, 2.0f, 0.0f};
const float k_grads[5][4] = {
    {0.2f, -0.5f, 1e-4f, 3.0f},  {0.1f, 0.25f, 2e-4f, -1.5f}, {-0.3f, -0.75f, -1e-4f, 0.5f},
    {0.05f, 0.5f, 1e-4f, -2.0f}, {0.4f, -0.1f, 3e-4f, 1.0f},
};

// tensorflow 2.21.0, keras 3.15.1, numpy 2.4.6 — weights after steps 1..5.
// sgd: TF2 tf.keras SGD(learning_rate=0.01)
const float k_sgd[5][4] = {{0.497999996f, -1.245f, 1.99999905f, -0.0299999993f},
                           {0.497000009f, -1.24750006f, 1.99999702f, -0.0149999997f},
                           {0.5f, -1.24000001f, 1.99999797f, -0.0199999996f},
                           {0.499500006f, -1.245f, 1.99999702f, 0.0f},
                           {0.495499998f, -1.24399996f, 1.99999404f, -0.00999999978f}};
// sgd_momentum: TF2 SGD(learning_rate=0.01, momentum=0.9)
const float k_sgd_momentum[5][4] = {{0.497999996f, -1.245f, 1.99999905f, -0.0299999993f},
                                    {0.495200008f, -1.24300003f, 1.99999619f, -0.0419999994f},
                                    {0.495680004f, -1.23370004f, 1.99999452f, -0.0577999987f},
                                    {0.495611995f, -1.23032999f, 1.99999201f, -0.0520199984f},
                                    {0.491550803f, -1.22629702f, 1.99998677f, -0.0568179972f}};
// sgd_nesterov: TF2 SGD(learning_rate=0.01, momentum=0.9, nesterov=True)
const float k_sgd_nesterov[5][4] = {{0.496199995f, -1.24049997f, 1.99999809f, -0.0569999963f},
                                    {0.492679983f, -1.24119997f, 1.99999344f, -0.052799996f},
                                    {0.496111989f, -1.22533f, 1.99999297f, -0.0720199943f},
                                    {0.495550781f, -1.22729695f, 1.99998975f, -0.0468179956f},
                                    {0.487895697f, -1.22266722f, 1.99998212f, -0.0611361936f}};
// adam: TF2 Adam(learning_rate=0.001)
const float k_adam[5][4] = {{0.499000013f, -1.24899995f, 1.99903071f, -0.000999999f},
                            {0.498067856f, -1.24873364f, 1.99807894f, -0.0012663349f},
                            {0.498149842f, -1.24809837f, 1.99766421f, -0.0015642317f},
                            {0.498139352f, -1.2479136f, 1.99713218f, -0.00147882791f},
                            {0.497736305f, -1.24770689f, 1.99642766f, -0.0015433525f}};
// nadam_tf2: TF2 Nadam(learning_rate=0.001) — the tutorial's optimizer
const float k_nadam_tf2[5][4] = {{0.498943537f, -1.24894357f, 1.99894464f, -0.00105645182f},
                                 {0.498419613f, -1.24935472f, 1.99798226f, -0.000645343447f},
                                 {0.499270022f, -1.24843395f, 1.99835634f, -0.000837805099f},
                                 {0.49911651f, -1.24894524f, 1.99783838f, -0.000241746311f},
                                 {0.498131216f, -1.24878919f, 1.99676812f, -0.00056214619f}};
// nadam_keras3: Keras 3 Nadam(learning_rate=0.001), schedule 0.96^t
const float k_nadam_keras3[5][4] = {{0.498937219f, -1.24893725f, 1.99893832f, -0.00106278795f},
                                    {0.498415649f, -1.24932981f, 1.99799275f, -0.000670194044f},
                                    {0.49920851f, -1.24845445f, 1.99832737f, -0.000858248561f},
                                    {0.499070764f, -1.24890256f, 1.99783838f, -0.000321292551f},
                                    {0.498195082f, -1.24875414f, 1.99686873f, -0.00060151302f}};
// rmsprop_keras3: Keras 3 RMSprop(learning_rate=0.001)
const float k_rmsprop_keras3[5][4] = {{0.496837765f, -1.24683774f, 1.99968529f, -0.0031622774f},
                                      {0.495363355f, -1.24831212f, 1.99906778f, -0.00168785779f},
                                      {0.497980475f, -1.24569499f, 1.99937582f, -0.00219910103f},
                                      {0.497525483f, -1.24728477f, 1.9990685f, -0.000417960109f},
                                      {0.49508521f, -1.24695146f, 1.9981811f, -0.00131788827f}};
// rmsprop_momentum_keras3: Keras 3 RMSprop(learning_rate=0.001, momentum=0.5)
const float k_rmsprop_momentum_keras3[5][4] = {
    {0.496837765f, -1.24683774f, 1.99968529f, -0.0031622774f},
    {0.493782252f, -1.24673104f, 1.99891043f, -0.00326899649f},
    {0.494871587f, -1.24406052f, 1.99883103f, -0.00383359916f},
    {0.494961262f, -1.24431503f, 1.99848402f, -0.00233475957f},
    {0.49256584f, -1.24410903f, 1.99742305f, -0.00248526782f}};
// rmsprop_tf2: TF2 tf.keras RMSprop(learning_rate=0.001) — epsilon outside the root; NOT what
// we implement, kept to show the column where the placement matters (gradient ~1e-4).
const float k_rmsprop_tf2[5][4] = {{0.496837735f, -1.24683774f, 1.99684775f, -0.00316227693f},
                                   {0.495363325f, -1.24831212f, 1.99399471f, -0.00168785767f},
                                   {0.497980446f, -1.24569499f, 1.99535239f, -0.0021991008f},
                                   {0.497525454f, -1.24728477f, 1.99404871f, -0.000417959993f},
                                   {0.49508518f, -1.24695146f, 1.99154055f, -0.00131788803f}};

// ---- Helpers ------------------------------------------------------------------------------

OptimizerConfig config_of(OptimizerKind kind) {
    return OptimizerConfig::defaults(kind);
}

// Weights and slots of one variable, trained with a schedule through the reference kernel.
struct Variable {
    std::vector<float> w, s0, s1;
    explicit Variable(std::vector<float> initial)
        : w(std::move(initial)), s0(w.size(), 0.0f), s1(w.size(), 0.0f) {}
    void apply(const OptimizerStep& step, const std::vector<float>& g) {
        reference_apply_update(step, w.data(), g.data(), s0.data(), s1.data(), w.size());
    }
};

// Float kernels against double expectations: allow a few float ulps of the value plus a tiny
// absolute floor for values near zero. A real formula error moves results by >= 1e-5 here.
bool close(double actual, double expected, double rel = 1e-6) {
    return std::fabs(actual - expected) <= rel * std::max(1.0, std::fabs(expected));
}

#define COMPARE_CLOSE(actual, expected)                           \
    QVERIFY2(close((actual), (expected)),                         \
             qPrintable(QString("%1 = %2, expected %3 (diff %4)") \
                            .arg(#actual)                         \
                            .arg(double(actual), 0, 'g', 10)      \
                            .arg(double(expected), 0, 'g', 10)    \
                            .arg(double(actual) - double(expected), 0, 'g', 3)))

// Runs the 5-step golden scenario and compares every weight after every step.
void check_against_golden(const OptimizerConfig& config, const float (&golden)[5][4]) {
    OptimizerSchedule schedule(config);
    Variable var({k_w0[0], k_w0[1], k_w0[2], k_w0[3]});
    for (int t = 0; t < 5; ++t) {
        var.apply(schedule.next_step(),
                  {k_grads[t][0], k_grads[t][1], k_grads[t][2], k_grads[t][3]});
        for (int i = 0; i < 4; ++i) {
            // 5e-7: TensorFlow rounds its per-step scalars to float32 before use, we round
            // double-precision ones; over 5 steps that is a couple of float ulps at |w| <= 2.
            QVERIFY2(std::fabs(var.w[i] - golden[t][i]) <= 5e-7,
                     qPrintable(QString("%1 step %2 element %3: got %4, TensorFlow/Keras %5")
                                    .arg(QString::fromStdString(config.describe()))
                                    .arg(t + 1)
                                    .arg(i)
                                    .arg(double(var.w[i]), 0, 'g', 9)
                                    .arg(double(golden[t][i]), 0, 'g', 9)));
        }
    }
}

template <typename F>
QString model_error_message(F&& f) {
    try {
        f();
    } catch (const ModelError& e) {
        return QString::fromUtf8(e.what());
    }
    return QString();
}

bool same_step(const OptimizerStep& a, const OptimizerStep& b) {
    return a.kind == b.kind && a.iteration == b.iteration && a.learning_rate == b.learning_rate &&
           a.momentum == b.momentum && a.use_momentum == b.use_momentum &&
           a.nesterov == b.nesterov && a.beta_1 == b.beta_1 &&
           a.one_minus_beta_1 == b.one_minus_beta_1 && a.beta_2 == b.beta_2 &&
           a.one_minus_beta_2 == b.one_minus_beta_2 && a.rho == b.rho &&
           a.one_minus_rho == b.one_minus_rho && a.epsilon == b.epsilon &&
           a.adam_alpha == b.adam_alpha && a.nadam_m_coeff == b.nadam_m_coeff &&
           a.nadam_g_coeff == b.nadam_g_coeff && a.nadam_v_scale == b.nadam_v_scale;
}

}  // namespace

class TestOptimizers : public QObject {
    Q_OBJECT

  private slots:
    // ---- the Embedding's IndexedSlices semantics (EmbeddingUpdate) ----
    void embeddingUpdateNamesAndLayouts() {
        QCOMPARE(OptimizerConfig().embedding_update, EmbeddingUpdate::TF2);  // the tutorial's
        for (auto update : {EmbeddingUpdate::TF2, EmbeddingUpdate::Keras3, EmbeddingUpdate::Dense})
            QCOMPARE(embedding_update_from_name(embedding_update_name(update)), update);
        QCOMPARE(embedding_update_from_name("Keras3"), EmbeddingUpdate::Keras3);
        const QString msg = model_error_message([] { embedding_update_from_name("keras2"); });
        QVERIFY2(msg.contains("'keras2'") && msg.contains("tf2") && msg.contains("keras3") && msg.contains("dense"),
                 qPrintable(msg));

        // Which statistics each optimizer needs: squares where Keras 3 squares slices, row counts
        // where TF2's sparse kernels skip rows, nothing where both equal the dense update.
        auto layout = [](OptimizerKind kind, EmbeddingUpdate update, double momentum = 0.0) {
            OptimizerConfig config = OptimizerConfig::defaults(kind);
            config.embedding_update = update;
            config.momentum = momentum;
            return OptimizerSchedule(config).update_layout();
        };
        QVERIFY(layout(OptimizerKind::Nadam, EmbeddingUpdate::TF2).embedding_row_counts);
        QVERIFY(!layout(OptimizerKind::Nadam, EmbeddingUpdate::TF2).embedding_grad_squares);
        QVERIFY(!layout(OptimizerKind::Adam, EmbeddingUpdate::TF2).embedding_row_counts);
        QVERIFY(!layout(OptimizerKind::SGD, EmbeddingUpdate::TF2).embedding_row_counts);
        QVERIFY(layout(OptimizerKind::SGD, EmbeddingUpdate::TF2, 0.9).embedding_row_counts);
        QVERIFY(layout(OptimizerKind::RMSprop, EmbeddingUpdate::TF2, 0.9).embedding_row_counts);
        // Only Nadam decays rows outside the batch, so only it has decays to defer.
        QVERIFY(layout(OptimizerKind::Nadam, EmbeddingUpdate::TF2).embedding_moment_decays);
        QVERIFY(!layout(OptimizerKind::SGD, EmbeddingUpdate::TF2, 0.9).embedding_moment_decays);
        QVERIFY(!layout(OptimizerKind::RMSprop, EmbeddingUpdate::TF2, 0.9).embedding_moment_decays);
        QVERIFY(!layout(OptimizerKind::Nadam, EmbeddingUpdate::Keras3).embedding_moment_decays);
        QVERIFY(!layout(OptimizerKind::Nadam, EmbeddingUpdate::Dense).embedding_moment_decays);
        for (auto kind : {OptimizerKind::Adam, OptimizerKind::Nadam, OptimizerKind::RMSprop}) {
            QVERIFY(layout(kind, EmbeddingUpdate::Keras3).embedding_grad_squares);
            QVERIFY(!layout(kind, EmbeddingUpdate::Keras3).embedding_row_counts);
            QVERIFY(!layout(kind, EmbeddingUpdate::Dense).embedding_grad_squares);
        }
        QVERIFY(!layout(OptimizerKind::SGD, EmbeddingUpdate::Keras3, 0.9).embedding_grad_squares);
        QCOMPARE(layout(OptimizerKind::Nadam, EmbeddingUpdate::Dense).optimizer_slots, 2);
        OptimizerConfig keras3 = OptimizerConfig::defaults(OptimizerKind::Adam);
        keras3.embedding_update = EmbeddingUpdate::Keras3;
        QCOMPARE(keras3.describe(), std::string("Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, "
                                                "epsilon=1e-07, embedding_update='keras3')"));
    }

    // A table of 2 rows x 2: row 0 in the batch (count 3), row 1 not (count 0, gradient 0).
    void tf2RowsOutsideTheBatch() {
        const std::vector<float> counts{3.0f, 0.0f};
        const IndexedSlicesStats rows{nullptr, counts.data(), 2};
        const std::vector<float> g{0.1f, -0.2f, 0.0f, 0.0f};
        for (auto [kind, momentum] : {std::pair{OptimizerKind::Nadam, 0.0}, std::pair{OptimizerKind::SGD, 0.9},
                                      std::pair{OptimizerKind::RMSprop, 0.9}}) {
            OptimizerConfig config = OptimizerConfig::defaults(kind);
            config.momentum = momentum;
            OptimizerSchedule schedule(config);
            Variable lazy({0.5f, -0.5f, 0.25f, 0.75f}), dense = lazy;
            lazy.s0 = dense.s0 = {0.01f, 0.02f, 0.03f, 0.04f};  // the row outside has moments from before
            lazy.s1 = dense.s1 = {0.001f, 0.002f, 0.003f, 0.004f};
            const OptimizerStep step = schedule.next_step();
            reference_apply_update(step, lazy.w.data(), g.data(), lazy.s0.data(), lazy.s1.data(), 4, rows);
            dense.apply(step, g);
            const QString name(optimizer_name(kind).data());
            for (int i = 0; i < 2; ++i) QCOMPARE(lazy.w[i], dense.w[i]);  // the row in the batch: as dense
            // The row outside: its weights stay (dense moves them with their momentum) ...
            QVERIFY2(dense.w[2] != 0.25f, qPrintable(name));
            QCOMPARE(lazy.w[2], 0.25f);
            QCOMPARE(lazy.w[3], 0.75f);
            if (kind == OptimizerKind::Nadam) {
                // ... and Nadam still decays its moments, exactly as TF2's m * beta_1, v * beta_2.
                QCOMPARE(lazy.s0[2], 0.03f * 0.9f);
                QCOMPARE(lazy.s1[2], 0.003f * 0.999f);
            } else {
                // ... SGD and RMSprop with momentum leave the row alone altogether.
                QCOMPARE(lazy.s0[2], 0.03f);
                QCOMPARE(lazy.s1[2], 0.003f);
            }
        }
    }

    // Keras 3: the second moment takes the summed squared slices, not the square of the sum.
    void keras3SquaredSlices() {
        // Two occurrences of one id with gradients 0.3 and -0.1: sum 0.2, sum of squares 0.1.
        const std::vector<float> g{0.2f}, squares{0.1f};
        const IndexedSlicesStats slices{squares.data(), nullptr, 1};
        for (auto kind : {OptimizerKind::Adam, OptimizerKind::Nadam, OptimizerKind::RMSprop}) {
            OptimizerSchedule schedule(OptimizerConfig::defaults(kind));
            const OptimizerStep step = schedule.next_step();
            Variable with_slices({1.0f}), dense({1.0f});
            reference_apply_update(step, with_slices.w.data(), g.data(), with_slices.s0.data(), with_slices.s1.data(),
                                   1, slices);
            dense.apply(step, g);
            const float second_moment = kind == OptimizerKind::RMSprop ? with_slices.s0[0] : with_slices.s1[0];
            const float dense_moment = kind == OptimizerKind::RMSprop ? dense.s0[0] : dense.s1[0];
            const float one_minus = kind == OptimizerKind::RMSprop ? 0.1f : 0.001f;
            COMPARE_CLOSE(second_moment, 0.1 * one_minus);
            COMPARE_CLOSE(dense_moment, 0.04 * one_minus);
            QVERIFY(with_slices.w[0] != dense.w[0]);
        }
    }

    // ---- names ----
    void parsesNamesCaseInsensitively() {
        QCOMPARE(optimizer_kind_from_name("sgd"), OptimizerKind::SGD);
        QCOMPARE(optimizer_kind_from_name("SGD"), OptimizerKind::SGD);
        QCOMPARE(optimizer_kind_from_name("Adam"), OptimizerKind::Adam);
        QCOMPARE(optimizer_kind_from_name("NADAM"), OptimizerKind::Nadam);
        QCOMPARE(optimizer_kind_from_name("RmsProp"), OptimizerKind::RMSprop);
        for (auto kind : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Nadam,
                          OptimizerKind::RMSprop})
            QCOMPARE(optimizer_kind_from_name(optimizer_name(kind)), kind);
        QCOMPARE(optimizer_name(OptimizerKind::RMSprop), std::string_view("RMSprop"));
        QCOMPARE(optimizer_name(OptimizerKind::SGD), std::string_view("SGD"));
    }

    void rejectsUnknownNamesListingAcceptedOnes() {
        for (const char* bad : {"adagrad", "", " adam", "adamw", "rms"}) {
            const QString msg = model_error_message([&] { optimizer_kind_from_name(bad); });
            QVERIFY2(!msg.isEmpty(), bad);
            QVERIFY2(msg.contains(QString("'%1'").arg(bad)), qPrintable(msg));
            QVERIFY2(msg.contains("sgd, adam, nadam, rmsprop"), qPrintable(msg));
        }
    }

    // ---- config ----
    void defaultsAreKeras() {
        const auto sgd = config_of(OptimizerKind::SGD);
        QCOMPARE(sgd.learning_rate, 0.01);
        QCOMPARE(sgd.momentum, 0.0);
        QCOMPARE(sgd.nesterov, false);
        for (auto kind : {OptimizerKind::Adam, OptimizerKind::Nadam}) {
            const auto c = config_of(kind);
            QCOMPARE(c.kind, kind);
            QCOMPARE(c.learning_rate, 0.001);
            QCOMPARE(c.beta_1, 0.9);
            QCOMPARE(c.beta_2, 0.999);
            QCOMPARE(c.epsilon, 1e-7);
        }
        const auto rms = config_of(OptimizerKind::RMSprop);
        QCOMPARE(rms.learning_rate, 0.001);
        QCOMPARE(rms.rho, 0.9);
        QCOMPARE(rms.momentum, 0.0);
        QCOMPARE(rms.epsilon, 1e-7);
        QCOMPARE(config_of(OptimizerKind::Nadam).nadam_schedule_decay, 0.004);  // TF2's
    }

    void describeReadsLikeKeras() {
        QCOMPARE(
            config_of(OptimizerKind::Nadam).describe(),
            std::string("Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07)"));
        QCOMPARE(config_of(OptimizerKind::Adam).describe(),
                 std::string("Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07)"));
        QCOMPARE(config_of(OptimizerKind::SGD).describe(),
                 std::string("SGD(learning_rate=0.01, momentum=0.0, nesterov=False)"));
        QCOMPARE(config_of(OptimizerKind::RMSprop).describe(),
                 std::string("RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-07)"));

        // Numbers as Python's repr prints them.
        auto sgd = config_of(OptimizerKind::SGD);
        sgd.momentum = 0.95;
        sgd.nesterov = true;
        sgd.learning_rate = 2.5e-5;
        QCOMPARE(sgd.describe(),
                 std::string("SGD(learning_rate=2.5e-05, momentum=0.95, nesterov=True)"));
        sgd.learning_rate = 0.0001;
        QCOMPARE(sgd.describe(),
                 std::string("SGD(learning_rate=0.0001, momentum=0.95, nesterov=True)"));
        sgd.learning_rate = 123.0;
        QCOMPARE(sgd.describe(),
                 std::string("SGD(learning_rate=123.0, momentum=0.95, nesterov=True)"));
        sgd.learning_rate = 1e16;
        QCOMPARE(sgd.describe(),
                 std::string("SGD(learning_rate=1e+16, momentum=0.95, nesterov=True)"));
        sgd.learning_rate = 0.1 + 0.2;
        QCOMPARE(
            sgd.describe(),
            std::string("SGD(learning_rate=0.30000000000000004, momentum=0.95, nesterov=True)"));

        auto keras3_nadam = config_of(OptimizerKind::Nadam);
        keras3_nadam.nadam_schedule_decay = 1.0;
        QCOMPARE(keras3_nadam.describe(),
                 std::string("Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07, "
                             "schedule_decay=1.0)"));
    }

    void validateNamesFieldRangeAndValue_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("field");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("expected");
        const double nan = std::nan("");
        const double inf = HUGE_VAL;
        const int sgd = int(OptimizerKind::SGD), adam = int(OptimizerKind::Adam);
        const int nadam = int(OptimizerKind::Nadam), rms = int(OptimizerKind::RMSprop);
        QTest::newRow("lr zero")
            << adam << "learning_rate" << 0.0
            << "[optimizer] Adam: learning_rate must be a finite number > 0, got 0.0";
        QTest::newRow("lr negative")
            << sgd << "learning_rate" << -0.1
            << "[optimizer] SGD: learning_rate must be a finite number > 0, got -0.1";
        QTest::newRow("lr inf")
            << nadam << "learning_rate" << inf
            << "[optimizer] Nadam: learning_rate must be a finite number > 0, got inf";
        QTest::newRow("lr nan")
            << rms << "learning_rate" << nan
            << "[optimizer] RMSprop: learning_rate must be a finite number > 0, got nan";
        QTest::newRow("lr below float32")
            << adam << "learning_rate" << 5e-324
            << "[optimizer] Adam: learning_rate must be within float32's normal range (1.1754944e-38 to 3.4028235e+38), got 5e-324";
        QTest::newRow("lr above float32")
            << sgd << "learning_rate" << 1e39
            << "[optimizer] SGD: learning_rate must be within float32's normal range (1.1754944e-38 to 3.4028235e+38), got 1e+39";
        QTest::newRow("beta_1 one")
            << adam << "beta_1" << 1.0 << "[optimizer] Adam: beta_1 must be in [0, 1), got 1.0";
        QTest::newRow("beta_1 negative")
            << nadam << "beta_1" << -0.5 << "[optimizer] Nadam: beta_1 must be in [0, 1), got -0.5";
        QTest::newRow("beta_2 big")
            << nadam << "beta_2" << 1.5 << "[optimizer] Nadam: beta_2 must be in [0, 1), got 1.5";
        QTest::newRow("beta_2 nan")
            << adam << "beta_2" << nan << "[optimizer] Adam: beta_2 must be in [0, 1), got nan";
        QTest::newRow("epsilon negative")
            << adam << "epsilon" << -1e-7
            << "[optimizer] Adam: epsilon must be a finite number >= 0, got -1e-07";
        QTest::newRow("epsilon rmsprop")
            << rms << "epsilon" << inf
            << "[optimizer] RMSprop: epsilon must be a finite number >= 0, got inf";
        QTest::newRow("epsilon above float32")  // inf as the float the update uses: nothing trained
            << nadam << "epsilon" << 1e300
            << "[optimizer] Nadam: epsilon must be 0 or within float32's normal range (1.1754944e-38 to 3.4028235e+38), got 1e+300";
        QTest::newRow("epsilon below float32")  // 0 on the trainer's threads, which flush subnormals
            << adam << "epsilon" << 1e-45
            << "[optimizer] Adam: epsilon must be 0 or within float32's normal range (1.1754944e-38 to 3.4028235e+38), got 1e-45";
        QTest::newRow("momentum one")
            << sgd << "momentum" << 1.0 << "[optimizer] SGD: momentum must be in [0, 1), got 1.0";
        QTest::newRow("momentum negative")
            << rms << "momentum" << -0.1
            << "[optimizer] RMSprop: momentum must be in [0, 1), got -0.1";
        QTest::newRow("rho one") << rms << "rho" << 1.0
                                 << "[optimizer] RMSprop: rho must be in [0, 1), got 1.0";
        QTest::newRow("schedule negative")
            << nadam << "nadam_schedule_decay" << -1.0
            << "[optimizer] Nadam: schedule_decay must be a finite number >= 0 "
               "(0.004 in TF2, 1.0 in Keras 3), got -1.0";
    }

    void validateNamesFieldRangeAndValue() {
        QFETCH(int, kind);
        QFETCH(QString, field);
        QFETCH(double, value);
        QFETCH(QString, expected);
        auto c = config_of(OptimizerKind(kind));
        c.validate();  // the defaults are valid
        const std::string f = field.toStdString();
        double* target = f == "learning_rate" ? &c.learning_rate
                         : f == "beta_1"      ? &c.beta_1
                         : f == "beta_2"      ? &c.beta_2
                         : f == "epsilon"     ? &c.epsilon
                         : f == "momentum"    ? &c.momentum
                         : f == "rho"         ? &c.rho
                                              : &c.nadam_schedule_decay;
        *target = value;
        QCOMPARE(model_error_message([&] { c.validate(); }), expected);
        // The schedule validates too, so a bad config never reaches a kernel.
        QCOMPARE(model_error_message([&] { OptimizerSchedule s(c); }), expected);
    }

    void validateIgnoresFieldsTheOptimizerDoesNotUse() {
        auto sgd = config_of(OptimizerKind::SGD);
        sgd.beta_1 = 5.0;  // Adam's field: SGD never reads it
        sgd.rho = -1.0;
        sgd.validate();
        auto adam = config_of(OptimizerKind::Adam);
        adam.momentum = 7.0;
        adam.validate();
        auto edge = config_of(OptimizerKind::Adam);
        edge.beta_1 = 0.0;  // lower bounds are inclusive, as in Keras
        edge.epsilon = 0.0;
        edge.validate();
    }

    void validateRejectsNoOptimizer() {
        const QString msg = model_error_message([] { OptimizerConfig{}.validate(); });
        QCOMPARE(
            msg,
            QString("[optimizer] no optimizer chosen; choose one of SGD, Adam, Nadam, RMSprop"));
    }

    // ---- schedule ----
    void slotCountPerConfig() {
        auto sgd = config_of(OptimizerKind::SGD);
        QCOMPARE(OptimizerSchedule(sgd).slot_count(), 0);
        sgd.momentum = 0.9;
        QCOMPARE(OptimizerSchedule(sgd).slot_count(), 1);
        sgd.nesterov = true;
        QCOMPARE(OptimizerSchedule(sgd).slot_count(), 1);
        QCOMPARE(OptimizerSchedule(config_of(OptimizerKind::Adam)).slot_count(), 2);
        QCOMPARE(OptimizerSchedule(config_of(OptimizerKind::Nadam)).slot_count(), 2);
        auto rms = config_of(OptimizerKind::RMSprop);
        QCOMPARE(OptimizerSchedule(rms).slot_count(), 1);
        rms.momentum = 0.5;
        QCOMPARE(OptimizerSchedule(rms).slot_count(), 2);
    }

    void iterationsCountFromOne() {
        OptimizerSchedule s(config_of(OptimizerKind::Adam));
        QCOMPARE(s.iterations(), int64_t(0));
        QCOMPARE(s.next_step().iteration, int64_t(1));
        QCOMPARE(s.next_step().iteration, int64_t(2));
        QCOMPARE(s.iterations(), int64_t(2));
    }

    void nadamMomentumScheduleProductAfterThreeSteps() {
        // u_t = 0.9 * (1 - 0.5 * 0.96^(0.004 t)):
        //   u_1 = 0.45007347359129607, u_2 = 0.4501469351862175, u_3 = 0.45022038478672294
        // product = u_1 u_2 u_3 = 0.0912142874159059. TensorFlow 2.21's optimizer_v2 Nadam,
        // stepped 3 times, holds momentum_cache = 0.09121428 (float32).
        OptimizerSchedule s(config_of(OptimizerKind::Nadam));
        QCOMPARE(s.state().nadam_u_product, 1.0);
        for (int i = 0; i < 3; ++i) s.next_step();
        const double u1 = 0.9 * (1 - 0.5 * std::pow(0.96, 0.004 * 1));
        const double u2 = 0.9 * (1 - 0.5 * std::pow(0.96, 0.004 * 2));
        const double u3 = 0.9 * (1 - 0.5 * std::pow(0.96, 0.004 * 3));
        QVERIFY(std::fabs(s.state().nadam_u_product - u1 * u2 * u3) < 1e-15);
        QVERIFY(std::fabs(s.state().nadam_u_product - 0.0912142874159059) < 1e-15);
        QCOMPARE(s.state().iterations, int64_t(3));

        // Keras 3's schedule (0.96^t): 0.9^3 (1 - 0.48)(1 - 0.4608)(1 - 0.442368) =
        // 0.11397994511155204
        auto k3 = config_of(OptimizerKind::Nadam);
        k3.nadam_schedule_decay = 1.0;
        OptimizerSchedule s3(k3);
        for (int i = 0; i < 3; ++i) s3.next_step();
        QVERIFY(std::fabs(s3.state().nadam_u_product - 0.729 * 0.52 * 0.5392 * 0.557632) < 1e-15);
        QVERIFY(std::fabs(s3.state().nadam_u_product - 0.11397994511155204) < 1e-15);
    }

    void stateRestoreReproducesTheSameSteps() {
        for (auto kind : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Nadam,
                          OptimizerKind::RMSprop}) {
            OptimizerSchedule a(config_of(kind));
            a.next_step();
            a.next_step();
            const auto saved = a.state();
            const OptimizerStep third = a.next_step();
            const OptimizerStep fourth = a.next_step();
            QVERIFY(
                !same_step(third, fourth));  // else restoring could not be told from not restoring
            a.restore(saved);
            QCOMPARE(a.iterations(), int64_t(2));
            QVERIFY(same_step(a.next_step(), third));
            QVERIFY(same_step(a.next_step(), fourth));
            // A fresh schedule (e.g. after a restart from a checkpoint) continues identically.
            OptimizerSchedule b(config_of(kind));
            b.restore(saved);
            QVERIFY(same_step(b.next_step(), third));
        }
    }

    void restoreRejectsImpossibleStates() {
        OptimizerSchedule s(config_of(OptimizerKind::Nadam));
        QVERIFY(model_error_message([&] {
                    s.restore({-1, 1.0});
                }).contains("negative iteration count"));
        QVERIFY(model_error_message([&] {
                    s.restore({3, 1.5});
                }).contains("momentum-schedule product 1.5"));
        QVERIFY(model_error_message([&] {
                    s.restore({0, 0.5});
                }).contains("1.0 before the first step"));
        QVERIFY(model_error_message([&] { s.restore({3, std::nan("")}); }).contains("nan"));
        QCOMPARE(s.iterations(), int64_t(0));  // a rejected restore changes nothing
    }

    // ---- kernel, hand-computed expectations (3 elements, 3 steps) ----
    void sgdMomentumByHand() {
        // lr 0.1, momentum 0.9, w0 = {1, -2, 0.5}; g1 = {0.5, -1, 2}, g2 = {1, 0, -1}, g3 = {-0.5,
        // 0.5, 0} m = 0.9 m - 0.1 g;  w += m t1: m = {-0.05, 0.1, -0.2} w = {0.95, -1.9, 0.3} t2: m
        // = {-0.045-0.1, 0.09-0, -0.18+0.1} = {-0.145, 0.09, -0.08}   w = {0.805, -1.81, 0.22} t3:
        // m = {-0.1305+0.05, 0.081-0.05, -0.072-0} = {-0.0805, 0.031, -0.072}
        //                                                         w = {0.7245, -1.779, 0.148}
        auto c = config_of(OptimizerKind::SGD);
        c.learning_rate = 0.1;
        c.momentum = 0.9;
        OptimizerSchedule s(c);
        Variable v({1.0f, -2.0f, 0.5f});
        v.apply(s.next_step(), {0.5f, -1.0f, 2.0f});
        v.apply(s.next_step(), {1.0f, 0.0f, -1.0f});
        v.apply(s.next_step(), {-0.5f, 0.5f, 0.0f});
        const double w[3] = {0.7245, -1.779, 0.148}, m[3] = {-0.0805, 0.031, -0.072};
        for (int i = 0; i < 3; ++i) {
            COMPARE_CLOSE(v.w[i], w[i]);
            COMPARE_CLOSE(v.s0[i], m[i]);
        }
    }

    void sgdNesterovByHand() {
        // Same inputs; m as above, but w += 0.9 m - 0.1 g:
        // t1: 0.9{-0.05, 0.1, -0.2} - {0.05, -0.1, 0.2} = {-0.095, 0.19, -0.38}      w = {0.905,
        // -1.81, 0.12} t2: 0.9{-0.145, 0.09, -0.08} - {0.1, 0, -0.1} = {-0.2305, 0.081, 0.028}    w
        // = {0.6745, -1.729, 0.148} t3: 0.9{-0.0805, 0.031, -0.072} - {-0.05, 0.05, 0} = {-0.02245,
        // -0.0221, -0.0648}
        //                                                               w = {0.65205, -1.7511,
        //                                                               0.0832}
        auto c = config_of(OptimizerKind::SGD);
        c.learning_rate = 0.1;
        c.momentum = 0.9;
        c.nesterov = true;
        OptimizerSchedule s(c);
        Variable v({1.0f, -2.0f, 0.5f});
        v.apply(s.next_step(), {0.5f, -1.0f, 2.0f});
        v.apply(s.next_step(), {1.0f, 0.0f, -1.0f});
        v.apply(s.next_step(), {-0.5f, 0.5f, 0.0f});
        const double w[3] = {0.65205, -1.7511, 0.0832};
        for (int i = 0; i < 3; ++i) COMPARE_CLOSE(v.w[i], w[i]);
    }

    void adamByHandWithConstantGradient() {
        // With a constant gradient g, m_t = (1 - b1^t) g and v_t = (1 - b2^t) g^2 exactly, so
        // alpha_t m_t / (sqrt(v_t) + eps) = lr (1 - b1^t) g sqrt(1 - b2^t) / ((1 - b1^t)(sqrt(1 -
        // b2^t)|g| + eps))
        //                                = lr g / (|g| + eps / sqrt(1 - b2^t)).
        // Each step moves a weight by ~lr against the gradient's sign, less where |g| ~ eps.
        const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7;
        const double g[3] = {0.5, -2.0, 1e-6};
        double w[3] = {1.0, -1.0, 0.25};
        auto c = config_of(OptimizerKind::Adam);
        c.learning_rate = lr;
        OptimizerSchedule s(c);
        Variable v({1.0f, -1.0f, 0.25f});
        for (int t = 1; t <= 3; ++t) {
            v.apply(s.next_step(), {float(g[0]), float(g[1]), float(g[2])});
            for (int i = 0; i < 3; ++i)
                w[i] -= lr * g[i] / (std::fabs(g[i]) + eps / std::sqrt(1 - std::pow(b2, t)));
        }
        // t1 for g = 1e-6: eps / sqrt(0.001) = 3.1623e-6, step = 0.01 * 1e-6 / 4.1623e-6 =
        // 0.0024025
        for (int i = 0; i < 3; ++i) {
            COMPARE_CLOSE(v.w[i], w[i]);
            COMPARE_CLOSE(v.s0[i], (1 - std::pow(b1, 3)) * g[i]);         // 0.271 g
            COMPARE_CLOSE(v.s1[i], (1 - std::pow(b2, 3)) * g[i] * g[i]);  // 0.002997001 g^2
        }
    }

    void nadamByHandWithConstantGradient() {
        // TF2 Nadam, lr 0.01, constant g. As for Adam, m_t = (1 - b1^t) g and
        // v_hat = v_t / (1 - b2^t) = g^2, so
        //   m_hat_t = u_{t+1} (1 - b1^t) g / (1 - P_t u_{t+1}) + (1 - u_t) g / (1 - P_t),
        //   w -= lr m_hat_t / (|g| + eps), with P_t = u_1 ... u_t and
        //   u_1..u_4 = 0.45007347359129607, 0.4501469351862175, 0.45022038478672294,
        //   0.45029382239477084.
        const double lr = 0.01, b1 = 0.9, eps = 1e-7;
        const double u[5] = {0.0, 0.45007347359129607, 0.4501469351862175, 0.45022038478672294,
                             0.45029382239477084};
        const double g[3] = {0.5, -2.0, 1e-6};
        double w[3] = {1.0, -1.0, 0.25};
        double P = 1.0;
        auto c = config_of(OptimizerKind::Nadam);
        c.learning_rate = lr;
        OptimizerSchedule s(c);
        Variable v({1.0f, -1.0f, 0.25f});
        for (int t = 1; t <= 3; ++t) {
            v.apply(s.next_step(), {float(g[0]), float(g[1]), float(g[2])});
            P *= u[t];
            for (int i = 0; i < 3; ++i) {
                const double m_hat = u[t + 1] * (1 - std::pow(b1, t)) * g[i] / (1 - P * u[t + 1]) +
                                     (1 - u[t]) * g[i] / (1 - P);
                w[i] -= lr * m_hat / (std::fabs(g[i]) + eps);
            }
        }
        for (int i = 0; i < 3; ++i) COMPARE_CLOSE(v.w[i], w[i]);

        // Step 1 alone, g = 0.5, written out:
        //   m_hat = u_2 * 0.1 * 0.5 / (1 - u_1 u_2) + (1 - u_1) * 0.5 / (1 - u_1)
        //         = 0.0225073 / (1 - 0.2025992) + 0.5 = 0.0282259 + 0.5 = 0.5282259
        //   w = 1 - 0.01 * 0.5282259 / (0.5 + 1e-7) = 0.98943548
        OptimizerSchedule s1(c);
        Variable one({1.0f});
        one.apply(s1.next_step(), {0.5f});
        QVERIFY2(std::fabs(one.w[0] - 0.98943548) < 2e-7,
                 qPrintable(QString::number(double(one.w[0]), 'g', 9)));
    }

    void rmspropByHandKeras3Epsilon() {
        // Keras 3: v = 0.9 v + 0.1 g^2; w -= lr g / sqrt(v + eps). Constant g:
        //   v_1 = 0.1 g^2, v_2 = 0.19 g^2, v_3 = 0.271 g^2.
        // g = 1e-4: v_1 = 1e-9, step_1 = 0.01 * 1e-4 / sqrt(1e-9 + 1e-7) = 1e-6 / 3.17805e-4
        // = 3.14658e-3
        //   (TF2's sqrt(v) + eps would give 1e-6 / (3.16228e-5 + 1e-7) = 3.15231e-2, ten times
        //   more).
        const double lr = 0.01, eps = 1e-7;
        const double g[3] = {1.0, -0.5, 1e-4};
        const double v_factor[4] = {0.0, 0.1, 0.19, 0.271};
        double w[3] = {0.0, 1.0, -1.0};
        auto c = config_of(OptimizerKind::RMSprop);
        c.learning_rate = lr;
        OptimizerSchedule s(c);
        Variable v({0.0f, 1.0f, -1.0f});
        for (int t = 1; t <= 3; ++t) {
            v.apply(s.next_step(), {float(g[0]), float(g[1]), float(g[2])});
            for (int i = 0; i < 3; ++i)
                w[i] -= lr * g[i] / std::sqrt(v_factor[t] * g[i] * g[i] + eps);
        }
        for (int i = 0; i < 3; ++i) {
            COMPARE_CLOSE(v.w[i], w[i]);
            COMPARE_CLOSE(v.s0[i], 0.271 * g[i] * g[i]);
        }
        // The tiny-gradient weight after step 1 alone, written out: -1 - 3.14658e-3.
        OptimizerSchedule s1(c);
        Variable one({-1.0f});
        one.apply(s1.next_step(), {1e-4f});
        QVERIFY(std::fabs(one.w[0] - (-1.0 - 1e-6 / std::sqrt(1.01e-7))) < 2e-7);
        QVERIFY(std::fabs(one.w[0] - (-1.00314658)) < 1e-6);
    }

    void rmspropMomentumByHand() {
        // Keras 3 with momentum 0.5: inc_t = lr g / sqrt(v_t + eps); mom = 0.5 mom + inc; w -= mom.
        // g = 1 constant, lr 0.01: inc_t = 0.01 / sqrt(f_t + 1e-7), f = 0.1, 0.19, 0.271
        //   mom_1 = inc_1, mom_2 = 0.5 inc_1 + inc_2, mom_3 = 0.25 inc_1 + 0.5 inc_2 + inc_3
        //   w_3 = -(mom_1 + mom_2 + mom_3) = -(1.75 inc_1 + 1.5 inc_2 + inc_3)
        auto c = config_of(OptimizerKind::RMSprop);
        c.learning_rate = 0.01;
        c.momentum = 0.5;
        OptimizerSchedule s(c);
        Variable v({0.0f});
        for (int t = 0; t < 3; ++t) v.apply(s.next_step(), {1.0f});
        const double inc1 = 0.01 / std::sqrt(0.1 + 1e-7), inc2 = 0.01 / std::sqrt(0.19 + 1e-7),
                     inc3 = 0.01 / std::sqrt(0.271 + 1e-7);
        COMPARE_CLOSE(v.w[0], -(1.75 * inc1 + 1.5 * inc2 + inc3));  // ~ -0.1088
        COMPARE_CLOSE(v.s1[0], 0.25 * inc1 + 0.5 * inc2 + inc3);
    }

    // ---- kernel against TensorFlow / Keras (5 steps, 4 elements) ----
    void matchesTensorFlowSgd() { check_against_golden(config_of(OptimizerKind::SGD), k_sgd); }
    void matchesTensorFlowSgdMomentum() {
        auto c = config_of(OptimizerKind::SGD);
        c.momentum = 0.9;
        check_against_golden(c, k_sgd_momentum);
    }
    void matchesTensorFlowSgdNesterov() {
        auto c = config_of(OptimizerKind::SGD);
        c.momentum = 0.9;
        c.nesterov = true;
        check_against_golden(c, k_sgd_nesterov);
    }
    void matchesTensorFlowAdam() { check_against_golden(config_of(OptimizerKind::Adam), k_adam); }
    void matchesTensorFlow2Nadam() {
        check_against_golden(config_of(OptimizerKind::Nadam), k_nadam_tf2);
    }
    void matchesKeras3NadamWithScheduleDecayOne() {
        auto c = config_of(OptimizerKind::Nadam);
        c.nadam_schedule_decay = 1.0;
        check_against_golden(c, k_nadam_keras3);
    }
    void matchesKeras3RmsProp() {
        check_against_golden(config_of(OptimizerKind::RMSprop), k_rmsprop_keras3);
    }
    void matchesKeras3RmsPropMomentum() {
        auto c = config_of(OptimizerKind::RMSprop);
        c.momentum = 0.5;
        check_against_golden(c, k_rmsprop_momentum_keras3);
    }
    void rmspropDiffersFromTf2WhereEpsilonPlacementMatters() {
        // Column 2 has gradients ~1e-4: Keras 3 and TF2 disagree there by ~3e-3 after step 1, and
        // agree (to float rounding) where |g| >> sqrt(eps).
        OptimizerSchedule s(config_of(OptimizerKind::RMSprop));
        Variable var({k_w0[0], k_w0[1], k_w0[2], k_w0[3]});
        var.apply(s.next_step(), {k_grads[0][0], k_grads[0][1], k_grads[0][2], k_grads[0][3]});
        QVERIFY(std::fabs(var.w[2] - k_rmsprop_tf2[0][2]) > 2e-3);
        QVERIFY(std::fabs(var.w[0] - k_rmsprop_tf2[0][0]) < 1e-6);
        QVERIFY(std::fabs(var.w[3] - k_rmsprop_tf2[0][3]) < 1e-6);
    }

    // ---- kernel properties ----
    void updateIsElementwiseAndDeterministic() {
        // Mirrored replicas apply the same step to identical copies, and a backend may split a
        // buffer into chunks: all must give bit-identical results.
        for (auto kind : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Nadam,
                          OptimizerKind::RMSprop}) {
            auto c = config_of(kind);
            c.momentum = kind == OptimizerKind::SGD || kind == OptimizerKind::RMSprop ? 0.9 : 0.0;
            OptimizerSchedule s(c);
            Variable whole({k_w0[0], k_w0[1], k_w0[2], k_w0[3]}), chunked = whole;
            for (int t = 0; t < 5; ++t) {
                const OptimizerStep step = s.next_step();
                const std::vector<float> g(k_grads[t], k_grads[t] + 4);
                whole.apply(step, g);
                reference_apply_update(step, chunked.w.data(), g.data(), chunked.s0.data(),
                                       chunked.s1.data(), 1);
                reference_apply_update(step, chunked.w.data() + 1, g.data() + 1,
                                       chunked.s0.data() + 1, chunked.s1.data() + 1, 3);
            }
            QVERIFY(std::memcmp(whole.w.data(), chunked.w.data(), 4 * sizeof(float)) == 0);
            QVERIFY(std::memcmp(whole.s0.data(), chunked.s0.data(), 4 * sizeof(float)) == 0);
        }
    }

    void unusedSlotsMayBeNullNeededOnesMayNot() {
        float w[2] = {1.0f, 2.0f};
        const float g[2] = {0.5f, 0.5f};
        float slot[2] = {0.0f, 0.0f};
        OptimizerSchedule sgd(config_of(OptimizerKind::SGD));
        reference_apply_update(sgd.next_step(), w, g, nullptr, nullptr, 2);  // plain SGD: no slots
        COMPARE_CLOSE(w[0], 1.0 - 0.01 * 0.5);
        OptimizerSchedule rms(config_of(OptimizerKind::RMSprop));
        reference_apply_update(rms.next_step(), w, g, slot, nullptr, 2);  // 1 slot without momentum
        OptimizerSchedule adam(config_of(OptimizerKind::Adam));
        QVERIFY_THROWS_EXCEPTION(OpError,
                                 reference_apply_update(adam.next_step(), w, g, slot, nullptr, 2));
        QVERIFY_THROWS_EXCEPTION(OpError,
                                 reference_apply_update(OptimizerStep{}, w, g, slot, slot, 2));
        reference_apply_update(adam.next_step(), nullptr, nullptr, nullptr, nullptr,
                               0);  // empty: no-op
    }

    // Deferred decays belong to TF2's sparse Nadam alone: another optimizer, or Nadam without row
    // counts, would leave the counters meaning nothing, so the update refuses them and says why.
    void deferredDecaysOnlyForTf2SparseNadam() {
        float w[2] = {1.0f, 2.0f}, m[2] = {0.0f, 0.0f}, v[2] = {0.0f, 0.0f};
        const float g[2] = {0.5f, 0.5f};
        const float counts[1] = {1.0f};
        std::uint32_t decays[2] = {0, 0};
        OptimizerSchedule adam(config_of(OptimizerKind::Adam));
        try {
            reference_apply_update(adam.next_step(), w, g, m, v, 2, IndexedSlicesStats{nullptr, counts, 2, decays});
            QFAIL("Adam took deferred decays");
        } catch (const OpError& error) {
            QVERIFY2(std::string(error.what()).find("only TF2's sparse Nadam") != std::string::npos, error.what());
        }
        OptimizerSchedule nadam(config_of(OptimizerKind::Nadam));
        QVERIFY_THROWS_EXCEPTION(OpError, reference_apply_update(nadam.next_step(), w, g, m, v, 2,
                                                                 IndexedSlicesStats{nullptr, nullptr, 0, decays}));
        reference_apply_update(nadam.next_step(), w, g, m, v, 2, IndexedSlicesStats{nullptr, counts, 2, decays});
        QCOMPARE(decays[1], 1u);  // the clock
        QCOMPARE(decays[0], 1u);  // the row caught up
    }
};

QTEST_APPLESS_MAIN(TestOptimizers)
#include "test_optimizers.moc"
