// The CPU reference ops, in the manner of ggml's test-backend-ops: every backward pass against
// central finite differences of its own forward pass (L = sum(r * y) for a random projection r),
// forward passes against small cases worked out by hand, the errors a person would meet, and
// the whole model's gradient through ModelReplica against finite differences of its loss.
//
// The reference backend is the oracle every faster kernel and the CUDA backend are compared
// with, so its own numbers must come from somewhere else: finite differences and hand
// arithmetic, never from another engine code path.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/backend/cpu_reference.h"
#include "core/device/device.h"
#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/util/error.h"
#include "support/thread_limit.h"

using namespace mirrorlab;

namespace {

TensorView f32_view(std::vector<float>& values, Shape shape) {
    if (static_cast<std::int64_t>(values.size()) != shape.numel())
        qFatal("test bug: buffer does not fit its shape");
    return {values.data(), std::move(shape), DType::F32};
}

TensorView i32_view(std::vector<std::int32_t>& values, Shape shape) {
    if (static_cast<std::int64_t>(values.size()) != shape.numel())
        qFatal("test bug: buffer does not fit its shape");
    return {values.data(), std::move(shape), DType::I32};
}

std::vector<float> random_values(std::mt19937& rng, std::size_t count, float low = -1.0f,
                                 float high = 1.0f) {
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(count);
    for (auto& value : values) value = distribution(rng);
    return values;
}

// sum(r * y) in double: the scalar whose gradient w.r.t. y is r.
double projection(const std::vector<float>& r, const std::vector<float>& y) {
    double total = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) total += static_cast<double>(r[i]) * y[i];
    return total;
}

struct FdOptions {
    double eps = 1e-2;
    double rtol = 1e-2;
    double atol = 1e-4;
    // Piecewise-linear models (ReLU, max pooling): an element whose one-sided differences
    // disagree straddles a kink, where central differences mean nothing; it is skipped, and
    // at most `max_skipped_fraction` of the elements may be.
    bool skip_kinks = false;
    double max_skipped_fraction = 0.2;
};

// Ops that are linear in the checked input (embedding, conv1d, dense, max pooling away from
// ties, dropout): central differences are exact up to float rounding of the forward pass, so
// the tolerance can be ten times tighter than for curved functions and still catch a 1% slip.
FdOptions linear_op() {
    FdOptions options;
    options.rtol = 1e-3;
    return options;
}

// Compares `analytic` (d loss / d param) with central differences at `indices` (all when
// empty). The step actually taken is measured in float, so rounding of x +- eps does not bias
// the quotient. Returns an empty string on success, else a readable list of failures.
std::string check_gradient(const std::string& what, std::vector<float>& param,
                           const std::vector<float>& analytic, const std::function<double()>& loss,
                           const FdOptions& options, std::vector<std::size_t> indices = {},
                           int* skipped_count = nullptr) {
    if (analytic.size() != param.size())
        return what + ": gradient has " + std::to_string(analytic.size()) +
               " elements, parameter " + std::to_string(param.size());
    if (indices.empty()) {
        indices.resize(param.size());
        std::iota(indices.begin(), indices.end(), std::size_t{0});
    }
    std::string failures;
    int failed = 0, skipped = 0;
    double base = 0.0;
    if (options.skip_kinks) base = loss();
    for (const std::size_t i : indices) {
        const float original = param[i];
        param[i] = original + static_cast<float>(options.eps);
        const double up = param[i];
        const double loss_up = loss();
        param[i] = original - static_cast<float>(options.eps);
        const double down = param[i];
        const double loss_down = loss();
        param[i] = original;
        const double numeric = (loss_up - loss_down) / (up - down);
        const double expected = analytic[i];
        const double scale = std::max(std::abs(numeric), std::abs(expected));
        if (options.skip_kinks) {
            const double forward = (loss_up - base) / (up - original);
            const double backward = (base - loss_down) / (original - down);
            if (std::abs(forward - backward) > 4.0 * (options.atol + options.rtol * scale)) {
                // Still, the one-sided slope on x's own side of the kink is the derivative the
                // backward pass must return, so it lies between the two one-sided differences.
                const double slack = options.atol + options.rtol * scale;
                if (expected < std::min(forward, backward) - slack ||
                    expected > std::max(forward, backward) + slack) {
                    if (++failed <= 5) {
                        failures += "\n  " + what + "[" + std::to_string(i) + "]: analytic " +
                                    std::to_string(expected) +
                                    " is outside the one-sided differences " +
                                    std::to_string(backward) + " .. " + std::to_string(forward);
                    }
                }
                ++skipped;
                continue;
            }
        }
        if (!(std::abs(numeric - expected) <= options.atol + options.rtol * scale)) {
            if (++failed <= 5) {
                failures += "\n  " + what + "[" + std::to_string(i) + "]: analytic " +
                            std::to_string(expected) + ", finite difference " +
                            std::to_string(numeric);
            }
        }
    }
    if (skipped_count != nullptr) *skipped_count = skipped;
    loss();  // leave the forward outputs at the unperturbed parameters, for the caller's own checks
    if (failed > 0) {
        return what + ": " + std::to_string(failed) + " of " + std::to_string(indices.size()) +
               " elements disagree" + failures;
    }
    if (static_cast<double>(skipped) >
        options.max_skipped_fraction * static_cast<double>(indices.size())) {
        return what + ": " + std::to_string(skipped) + " of " + std::to_string(indices.size()) +
               " elements sit on a kink; the check covers too little";
    }
    return {};
}

// Values that are pairwise at least `gap` apart, in random order: max pooling has no ties and
// a finite-difference step smaller than gap / 2 cannot change which element wins.
std::vector<float> distinct_values(std::mt19937& rng, std::size_t count, float gap) {
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i)
        values[i] = (static_cast<float>(i) - static_cast<float>(count) / 2) * gap;
    std::shuffle(values.begin(), values.end(), rng);
    return values;
}

template <class F>
QString op_error(F&& run) {
    try {
        run();
    } catch (const OpError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

std::unique_ptr<LogicalDevice> cpu_device() {
    return std::make_unique<LogicalDevice>("/device:CPU:0", detect_cpu(), 0, make_cpu_backend(),
                                           nullptr);
}

// Every layer kind except GlobalMaxPooling1D (which needs its own model, see kModelGlobalPool):
// 'same' and 'valid' convolutions, pooling, Dropout (rate 0, so that training mode is
// deterministic), Flatten, Dense relu and the fused Dense softmax.
const char* const kModelAllLayers = R"({
  "name": "fd_all_layers", "input_length": 9,
  "layers": [
    {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 13, "output_dim": 3}},
    {"class_name": "Conv1D", "config": {"name": "conv_same", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "relu"}},
    {"class_name": "Conv1D", "config": {"name": "conv_valid", "filters": 5, "kernel_size": 2, "padding": "valid", "activation": "tanh"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool", "pool_size": 2}},
    {"class_name": "Dropout", "config": {"name": "dropout", "rate": 0.0}},
    {"class_name": "Flatten", "config": {"name": "flatten"}},
    {"class_name": "Dense", "config": {"name": "hidden", "units": 6, "activation": "relu"}},
    {"class_name": "Dense", "config": {"name": "output", "units": 4, "activation": "softmax"}}
  ]
})";

// GlobalMaxPooling1D, an even 'same' kernel, strided 'same' pooling, an Activation layer,
// Dense sigmoid and Dropout between Dense layers.
const char* const kModelGlobalPool = R"({
  "name": "fd_global_pool", "input_length": 10,
  "layers": [
    {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 11, "output_dim": 4}},
    {"class_name": "Conv1D", "config": {"name": "conv_same", "filters": 5, "kernel_size": 4, "padding": "same", "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool", "pool_size": 3, "strides": 2, "padding": "same"}},
    {"class_name": "Conv1D", "config": {"name": "conv_valid", "filters": 4, "kernel_size": 2, "padding": "valid"}},
    {"class_name": "GlobalMaxPooling1D", "config": {"name": "global_pool"}},
    {"class_name": "Activation", "config": {"name": "squash", "activation": "tanh"}},
    {"class_name": "Dense", "config": {"name": "hidden", "units": 6, "activation": "sigmoid"}},
    {"class_name": "Dropout", "config": {"name": "dropout", "rate": 0.0}},
    {"class_name": "Dense", "config": {"name": "output", "units": 3, "activation": "softmax"}}
  ]
})";

// GlobalAveragePooling1D after a 'same' convolution, then the classifier.
const char* const kModelGlobalAverage = R"({
  "name": "fd_global_average", "input_length": 7,
  "layers": [
    {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 12, "output_dim": 4}},
    {"class_name": "Conv1D", "config": {"name": "conv", "filters": 5, "kernel_size": 3, "padding": "same", "activation": "tanh"}},
    {"class_name": "GlobalAveragePooling1D", "config": {"name": "average"}},
    {"class_name": "Dense", "config": {"name": "output", "units": 3, "activation": "softmax"}}
  ]
})";

// Five Conv1D(relu) + MaxPooling1D(2) blocks, each fused into one op (fusedBlocksMatchTheReference).
const char* const kModelFiveBlocks = R"({
  "name": "five_fused_blocks", "input_length": 68,
  "layers": [
    {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 12, "output_dim": 3}},
    {"class_name": "Conv1D", "config": {"name": "conv_a", "filters": 4, "kernel_size": 3, "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool_a", "pool_size": 2}},
    {"class_name": "Conv1D", "config": {"name": "conv_b", "filters": 5, "kernel_size": 2, "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool_b", "pool_size": 2}},
    {"class_name": "Conv1D", "config": {"name": "conv_c", "filters": 4, "kernel_size": 1, "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool_c", "pool_size": 2}},
    {"class_name": "Conv1D", "config": {"name": "conv_d", "filters": 5, "kernel_size": 1, "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool_d", "pool_size": 2}},
    {"class_name": "Conv1D", "config": {"name": "conv_e", "filters": 4, "kernel_size": 1, "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "pool_e", "pool_size": 2}},
    {"class_name": "Flatten", "config": {"name": "flatten"}},
    {"class_name": "Dense", "config": {"name": "output", "units": 3, "activation": "softmax"}}
  ]
})";

// SpatialDropout1D(0.4) in training: the finite differences see the same channels dropped as the
// backward pass (one seed), so they check the mask is the one forward applied.
const char* const kModelSpatialDropout = R"({
  "name": "fd_spatial_dropout", "input_length": 8,
  "layers": [
    {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 12, "output_dim": 6}},
    {"class_name": "SpatialDropout1D", "config": {"name": "spatial", "rate": 0.4}},
    {"class_name": "Conv1D", "config": {"name": "conv", "filters": 5, "kernel_size": 3, "activation": "tanh"}},
    {"class_name": "GlobalAveragePooling1D", "config": {"name": "average"}},
    {"class_name": "Dense", "config": {"name": "output", "units": 3, "activation": "softmax"}}
  ]
})";

const char* const kModelWithDropout = R"({
  "name": "dropout_model", "input_length": 8,
  "layers": [
    {"class_name": "Embedding", "config": {"name": "embedding", "input_dim": 10, "output_dim": 4}},
    {"class_name": "Conv1D", "config": {"name": "conv", "filters": 6, "kernel_size": 3, "activation": "relu"}},
    {"class_name": "Dropout", "config": {"name": "dropout", "rate": 0.5}},
    {"class_name": "Flatten", "config": {"name": "flatten"}},
    {"class_name": "Dense", "config": {"name": "output", "units": 3, "activation": "softmax"}}
  ]
})";

// U(-0.5, 0.5) for every variable, biases included: zero biases (Keras' default) would leave
// ReLUs symmetric and hide bias-gradient mistakes behind exact zeros.
std::vector<float> random_weights(const Model& model, std::mt19937& rng) {
    return random_values(rng, static_cast<std::size_t>(model.total_params()), -0.5f, 0.5f);
}

}  // namespace

class TestOps : public QObject {
    Q_OBJECT

  private slots:
    // Backward passes against finite differences.
    void embeddingGradient();
    void conv1dGradients_data();
    void conv1dGradients();
    void maxpool1dGradient_data();
    void maxpool1dGradient();
    void denseGradients_data();
    void denseGradients();
    void activationGradients_data();
    void activationGradients();
    void dropoutBackwardIsTheMaskProduct();
    void globalAveragePoolingGradient();
    void softmaxCrossEntropyGradient();

    // Forward passes against hand-computed numbers.
    void conv1dForwardByHand();
    void samePaddingMatchesTensorFlow();
    void maxpoolFirstMaximumWins();
    void maxpoolSamePaddingNeverWins();
    void lossAccuracyAndTopKTies();
    void dropoutKeepsAndScales();
    void spatialDropoutDropsWholeChannels();

    // Errors a person meets.
    void embeddingIdOutsideVocabulary();
    void labelOutsideClasses();
    void conv1dChannelMismatch();

    // Ops that layer types bring, on backends with and without a kernel for them.
    void opRunsNativelyInPlaceOrThroughTheHost();
    void globalAveragePoolingThroughTheHostIsTheReference();

    // The whole model.
    void modelGradientMatchesFiniteDifferences_data();
    void modelGradientMatchesFiniteDifferences();
    void dropoutIsReproducibleForASeed();
    void fusedBlocksMatchTheReference_data();
    void fusedBlocksMatchTheReference();
};

// ---- Backward passes -------------------------------------------------------------------------

void TestOps::embeddingGradient() {
    CpuReferenceBackend backend;
    std::mt19937 rng(11);
    const std::int64_t vocabulary = 7, width = 3, batch = 2, length = 5;
    // Repeated ids (3 three times, 0 three times) must accumulate; id 4 never occurs.
    std::vector<std::int32_t> ids{0, 3, 3, 6, 1, 2, 3, 0, 0, 5};
    std::vector<float> table = random_values(rng, vocabulary * width);
    std::vector<float> out(batch * length * width);
    const std::vector<float> r = random_values(rng, out.size());
    std::vector<float> grad_out = r;
    std::vector<float> grad_table(table.size(), 99.0f);  // garbage: backward overwrites

    backend.embedding_backward(i32_view(ids, {batch, length}),
                               f32_view(grad_out, {batch, length, width}),
                               f32_view(grad_table, {vocabulary, width}));
    const auto loss = [&] {
        backend.embedding_forward(i32_view(ids, {batch, length}),
                                  f32_view(table, {vocabulary, width}),
                                  f32_view(out, {batch, length, width}));
        return projection(r, out);
    };
    const std::string failure = check_gradient("grad_table", table, grad_table, loss, linear_op());
    QVERIFY2(failure.empty(), failure.c_str());
    for (std::int64_t d = 0; d < width; ++d) QCOMPARE(grad_table[4 * width + d], 0.0f);
    // Hand check of the accumulation: row 3 = sum of the grad_out rows at positions 1, 2 and 6.
    for (std::int64_t d = 0; d < width; ++d) {
        const float expected = r[1 * width + d] + r[2 * width + d] + r[6 * width + d];
        QVERIFY(std::abs(grad_table[3 * width + d] - expected) < 1e-6f);
    }
}

void TestOps::conv1dGradients_data() {
    QTest::addColumn<int>("kernel_size");
    QTest::addColumn<bool>("same");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("length");
    for (const int kernel_size : {1, 2, 3, 5}) {
        for (const bool same : {false, true}) {
            for (const auto& [batch, length] :
                 {std::pair{1, 7}, std::pair{3, 9}, std::pair{3, 5}}) {
                QTest::addRow("k%d %s batch %d length %d", kernel_size, same ? "same" : "valid",
                              batch, length)
                    << kernel_size << same << batch << length;
            }
        }
    }
}

void TestOps::conv1dGradients() {
    QFETCH(int, kernel_size);
    QFETCH(bool, same);
    QFETCH(int, batch);
    QFETCH(int, length);
    CpuReferenceBackend backend;
    std::mt19937 rng(
        static_cast<unsigned>(100 * kernel_size + 10 * batch + length + (same ? 1 : 0)));
    const std::int64_t in_channels = 2, out_channels = 3;
    const std::int64_t out_length = conv_output_length(length, kernel_size, 1, same);
    const Conv1DParams params{same ? same_pad_left(length, kernel_size, 1) : 0};
    QCOMPARE(out_length, same ? length : length - kernel_size + 1);
    QCOMPARE(params.pad_left, same ? (kernel_size - 1) / 2 : 0);  // TensorFlow, stride 1

    std::vector<float> x =
        random_values(rng, static_cast<std::size_t>(batch * length * in_channels));
    std::vector<float> kernel =
        random_values(rng, static_cast<std::size_t>(kernel_size * in_channels * out_channels));
    std::vector<float> bias = random_values(rng, out_channels);
    std::vector<float> y(static_cast<std::size_t>(batch * out_length * out_channels));
    std::vector<float> r = random_values(rng, y.size());
    const Shape x_shape{batch, length, in_channels},
        k_shape{kernel_size, in_channels, out_channels};
    const Shape y_shape{batch, out_length, out_channels};

    std::vector<float> grad_x(x.size(), 99.0f), grad_kernel(kernel.size(), 99.0f),
        grad_bias(bias.size(), 99.0f);
    backend.conv1d_backward(f32_view(x, x_shape), f32_view(kernel, k_shape), f32_view(r, y_shape),
                            f32_view(grad_x, x_shape), f32_view(grad_kernel, k_shape),
                            f32_view(grad_bias, {out_channels}), params);
    const auto loss = [&] {
        backend.conv1d_forward(f32_view(x, x_shape), f32_view(kernel, k_shape),
                               f32_view(bias, {out_channels}), f32_view(y, y_shape), params);
        return projection(r, y);
    };
    for (const auto& [name, param, grad] :
         {std::tuple{"grad_x", &x, &grad_x}, std::tuple{"grad_kernel", &kernel, &grad_kernel},
          std::tuple{"grad_bias", &bias, &grad_bias}}) {
        const std::string failure = check_gradient(name, *param, *grad, loss, linear_op());
        QVERIFY2(failure.empty(), failure.c_str());
    }

    // The layer after the embedding passes no grad_x: the other gradients must not change.
    std::vector<float> grad_kernel_alone(kernel.size()), grad_bias_alone(bias.size());
    backend.conv1d_backward(f32_view(x, x_shape), f32_view(kernel, k_shape), f32_view(r, y_shape),
                            TensorView{}, f32_view(grad_kernel_alone, k_shape),
                            f32_view(grad_bias_alone, {out_channels}), params);
    QCOMPARE(grad_kernel_alone, grad_kernel);
    QCOMPARE(grad_bias_alone, grad_bias);
}

void TestOps::maxpool1dGradient_data() {
    QTest::addColumn<int>("pool");
    QTest::addColumn<int>("stride");
    QTest::addColumn<bool>("same");
    for (const int pool : {2, 3}) {
        for (const int stride : {1, 2, 3}) {
            for (const bool same : {false, true}) {
                QTest::addRow("pool %d stride %d %s", pool, stride, same ? "same" : "valid")
                    << pool << stride << same;
            }
        }
    }
}

void TestOps::maxpool1dGradient() {
    QFETCH(int, pool);
    QFETCH(int, stride);
    QFETCH(bool, same);
    CpuReferenceBackend backend;
    std::mt19937 rng(static_cast<unsigned>(7 * pool + stride + (same ? 100 : 0)));
    const std::int64_t batch = 2, length = 7, channels = 3;
    const std::int64_t out_length = conv_output_length(length, pool, stride, same);
    QCOMPARE(out_length, same ? (length + stride - 1) / stride : (length - pool) / stride + 1);
    const Pool1DParams params{pool, stride, same ? same_pad_left(length, pool, stride) : 0};
    const Shape x_shape{batch, length, channels}, y_shape{batch, out_length, channels};

    std::vector<float> x =
        distinct_values(rng, static_cast<std::size_t>(batch * length * channels), 0.01f);
    std::vector<float> y(static_cast<std::size_t>(batch * out_length * channels));
    std::vector<std::int32_t> argmax(y.size());
    std::vector<float> r = random_values(rng, y.size());
    std::vector<float> grad_x(x.size(), 99.0f);
    backend.maxpool1d_forward(f32_view(x, x_shape), f32_view(y, y_shape), i32_view(argmax, y_shape),
                              params);
    backend.maxpool1d_backward(f32_view(r, y_shape), i32_view(argmax, y_shape),
                               f32_view(grad_x, x_shape));
    const auto loss = [&] {
        backend.maxpool1d_forward(f32_view(x, x_shape), f32_view(y, y_shape),
                                  i32_view(argmax, y_shape), params);
        return projection(r, y);
    };
    FdOptions options = linear_op();
    options.eps = 1e-3;  // below half the gap between values: no winner changes
    const std::string failure = check_gradient("grad_x", x, grad_x, loss, options);
    QVERIFY2(failure.empty(), failure.c_str());

    // Independently: each output is the max over its window, clipped to the input.
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t t = 0; t < out_length; ++t) {
            for (std::int64_t c = 0; c < channels; ++c) {
                float best = -std::numeric_limits<float>::infinity();
                for (std::int64_t k = 0; k < pool; ++k) {
                    const std::int64_t source = t * stride + k - params.pad_left;
                    if (source >= 0 && source < length)
                        best = std::max(best, x[(b * length + source) * channels + c]);
                }
                QCOMPARE(y[(b * out_length + t) * channels + c], best);
            }
        }
    }
}

void TestOps::denseGradients_data() {
    QTest::addColumn<bool>("use_bias");
    QTest::newRow("with bias") << true;
    QTest::newRow("without bias") << false;
}

void TestOps::denseGradients() {
    QFETCH(bool, use_bias);
    CpuReferenceBackend backend;
    std::mt19937 rng(use_bias ? 5 : 6);
    const std::int64_t batch = 3, inputs = 5, units = 4;
    std::vector<float> x = random_values(rng, batch * inputs);
    std::vector<float> kernel = random_values(rng, inputs * units);
    std::vector<float> bias = random_values(rng, units);
    std::vector<float> y(batch * units);
    std::vector<float> r = random_values(rng, y.size());
    std::vector<float> grad_x(x.size(), 99.0f), grad_kernel(kernel.size(), 99.0f),
        grad_bias(bias.size(), 99.0f);
    const TensorView bias_view = use_bias ? f32_view(bias, {units}) : TensorView{};
    backend.dense_backward(f32_view(x, {batch, inputs}), f32_view(kernel, {inputs, units}),
                           f32_view(r, {batch, units}), f32_view(grad_x, {batch, inputs}),
                           f32_view(grad_kernel, {inputs, units}),
                           use_bias ? f32_view(grad_bias, {units}) : TensorView{});
    const auto loss = [&] {
        backend.dense_forward(f32_view(x, {batch, inputs}), f32_view(kernel, {inputs, units}),
                              bias_view, f32_view(y, {batch, units}));
        return projection(r, y);
    };
    std::string failure = check_gradient("grad_x", x, grad_x, loss, linear_op());
    QVERIFY2(failure.empty(), failure.c_str());
    failure = check_gradient("grad_kernel", kernel, grad_kernel, loss, linear_op());
    QVERIFY2(failure.empty(), failure.c_str());
    if (use_bias) {
        failure = check_gradient("grad_bias", bias, grad_bias, loss, linear_op());
        QVERIFY2(failure.empty(), failure.c_str());
    } else {
        loss();  // without a bias the output is x @ kernel exactly
        for (std::int64_t b = 0; b < batch; ++b) {
            for (std::int64_t o = 0; o < units; ++o) {
                double expected = 0.0;
                for (std::int64_t i = 0; i < inputs; ++i)
                    expected += double(x[b * inputs + i]) * kernel[i * units + o];
                QVERIFY(std::abs(y[b * units + o] - expected) < 1e-5);
            }
        }
    }
}

void TestOps::activationGradients_data() {
    QTest::addColumn<int>("kind");
    QTest::newRow("relu") << int(ActivationKind::ReLU);
    QTest::newRow("tanh") << int(ActivationKind::Tanh);
    QTest::newRow("sigmoid") << int(ActivationKind::Sigmoid);
    QTest::newRow("linear") << int(ActivationKind::Linear);
}

void TestOps::activationGradients() {
    QFETCH(int, kind);
    const auto activation = static_cast<ActivationKind>(kind);
    CpuReferenceBackend backend;
    std::mt19937 rng(static_cast<unsigned>(kind));
    const std::int64_t count = 64;
    std::vector<float> x = random_values(rng, count, -3.0f, 3.0f);
    for (auto& value : x) {
        if (std::abs(value) < 0.1f) value += value < 0 ? -0.2f : 0.2f;  // ReLU: stay off the kink
    }
    std::vector<float> y(count), r = random_values(rng, count), grad_x(count, 99.0f);
    backend.activation_forward(activation, f32_view(x, {count}), f32_view(y, {count}));
    backend.activation_backward(activation, f32_view(y, {count}), f32_view(r, {count}),
                                f32_view(grad_x, {count}));
    const auto loss = [&] {
        backend.activation_forward(activation, f32_view(x, {count}), f32_view(y, {count}));
        return projection(r, y);
    };
    FdOptions options;
    options.eps = 1e-3;
    const std::string failure =
        check_gradient(std::string(activation_name(activation)), x, grad_x, loss, options);
    QVERIFY2(failure.empty(), failure.c_str());

    // Against the closed forms in double.
    for (std::int64_t i = 0; i < count; ++i) {
        const double v = x[i];
        double expected = v;
        if (activation == ActivationKind::ReLU) expected = std::max(v, 0.0);
        if (activation == ActivationKind::Tanh) expected = std::tanh(v);
        if (activation == ActivationKind::Sigmoid) expected = 1.0 / (1.0 + std::exp(-v));
        QVERIFY2(std::abs(y[i] - expected) <= 1e-6 * std::max(1.0, std::abs(expected)),
                 qPrintable(QString::number(v)));
    }

    // In place, as the replica runs them (y aliases x; grad_x aliases grad_y).
    std::vector<float> in_place = x;
    backend.activation_forward(activation, f32_view(in_place, {count}),
                               f32_view(in_place, {count}));
    QCOMPARE(in_place, y);
    std::vector<float> grad_in_place = r;
    backend.activation_backward(activation, f32_view(y, {count}), f32_view(grad_in_place, {count}),
                                f32_view(grad_in_place, {count}));
    QCOMPARE(grad_in_place, grad_x);
}

void TestOps::dropoutBackwardIsTheMaskProduct() {
    CpuReferenceBackend backend;
    std::mt19937 rng(3);
    const std::int64_t count = 500;
    const float rate = 0.4f;
    std::vector<float> x = random_values(rng, count), y(count), mask(count),
                       r = random_values(rng, count);
    std::vector<float> grad_x(count, 99.0f);
    backend.dropout_forward(f32_view(x, {count}), f32_view(y, {count}), f32_view(mask, {count}),
                            rate, 1234);
    backend.dropout_backward(f32_view(r, {count}), f32_view(mask, {count}),
                             f32_view(grad_x, {count}));
    for (std::int64_t i = 0; i < count; ++i) QCOMPARE(grad_x[i], r[i] * mask[i]);

    // And the mask is the derivative of the forward pass for this seed.
    const auto loss = [&] {
        backend.dropout_forward(f32_view(x, {count}), f32_view(y, {count}), f32_view(mask, {count}),
                                rate, 1234);
        return projection(r, y);
    };
    const std::string failure = check_gradient("dropout grad_x", x, grad_x, loss, linear_op());
    QVERIFY2(failure.empty(), failure.c_str());
}

// GlobalAveragePooling1D's two ops (its layer's own, run here through run_op): the backward pass
// against finite differences of the forward pass, and the forward pass as the mean by hand.
void TestOps::globalAveragePoolingGradient() {
    const OpDef* forward = find_op("global_average_pooling1d_forward");
    const OpDef* backward = find_op("global_average_pooling1d_backward");
    QVERIFY(forward != nullptr && backward != nullptr);
    CpuReferenceBackend backend;
    std::mt19937 rng(37);
    const std::int64_t batch = 2, length = 5, channels = 3;
    std::vector<float> x = random_values(rng, batch * length * channels);
    std::vector<float> y(batch * channels);
    const std::vector<float> r = random_values(rng, y.size());
    std::vector<float> grad_y = r, grad_x(x.size(), 99.0f);
    const TensorView gradient_in[] = {f32_view(grad_y, {batch, channels})};
    const TensorView gradient_out[] = {f32_view(grad_x, {batch, length, channels})};
    run_op(backend, *backward, gradient_in, gradient_out);
    const TensorView in[] = {f32_view(x, {batch, length, channels})};
    const TensorView out[] = {f32_view(y, {batch, channels})};
    const auto loss = [&] {
        run_op(backend, *forward, in, out);
        return projection(r, y);
    };
    const std::string failure = check_gradient("global average grad_x", x, grad_x, loss, linear_op());
    QVERIFY2(failure.empty(), failure.c_str());
    // y[1, 2] = mean over the 5 steps of x[1, t, 2].
    double sum = 0.0;
    for (std::int64_t t = 0; t < length; ++t) sum += x[static_cast<std::size_t>((1 * length + t) * channels + 2)];
    QVERIFY(std::abs(y[1 * channels + 2] - sum / length) < 1e-6);
    // A pooled output that does not fit the sequence is named.
    std::vector<float> wrong(batch * (channels + 1));
    const TensorView wrong_out[] = {f32_view(wrong, {batch, channels + 1})};
    const QString message = op_error([&] { run_op(backend, *forward, in, wrong_out); });
    QVERIFY2(message.contains("[global_average_pooling1d]") && message.contains("[2, 4]"), qPrintable(message));
}

void TestOps::softmaxCrossEntropyGradient() {
    CpuReferenceBackend backend;
    std::mt19937 rng(17);
    const std::int64_t batch = 4, classes = 6;
    const float grad_scale = 1.0f / 4.0f;
    std::vector<float> logits = random_values(rng, batch * classes, -2.0f, 2.0f);
    std::vector<std::int32_t> labels{0, 5, 2, 2};
    std::vector<float> probs(logits.size()), grad(logits.size(), 99.0f);
    const LossCounts counts = backend.softmax_cross_entropy(
        f32_view(logits, {batch, classes}), i32_view(labels, {batch}),
        f32_view(probs, {batch, classes}), f32_view(grad, {batch, classes}), grad_scale, 5);
    QCOMPARE(counts.samples, batch);

    // Probabilities and loss in double, from the definition.
    double loss_sum = 0.0;
    for (std::int64_t b = 0; b < batch; ++b) {
        double total = 0.0;
        for (std::int64_t c = 0; c < classes; ++c)
            total += std::exp(double(logits[b * classes + c]));
        for (std::int64_t c = 0; c < classes; ++c) {
            QVERIFY(std::abs(probs[b * classes + c] -
                             std::exp(double(logits[b * classes + c])) / total) < 1e-6);
        }
        loss_sum += std::log(total) - logits[b * classes + labels[b]];
    }
    // The engine subtracts the max logit in float before going to double: ~1e-7 relative.
    QVERIFY2(std::abs(counts.loss_sum - loss_sum) < 1e-6 * std::max(1.0, loss_sum),
             qPrintable(QString::number(counts.loss_sum - loss_sum)));

    std::vector<float> scratch(logits.size());
    const auto loss = [&] {
        return backend
                   .softmax_cross_entropy(
                       f32_view(logits, {batch, classes}), i32_view(labels, {batch}),
                       f32_view(scratch, {batch, classes}), TensorView{}, grad_scale, 5)
                   .loss_sum *
               grad_scale;
    };
    FdOptions options;
    options.eps = 1e-3;
    const std::string failure = check_gradient("grad_logits", logits, grad, loss, options);
    QVERIFY2(failure.empty(), failure.c_str());
}

// ---- Forward passes by hand ------------------------------------------------------------------

void TestOps::conv1dForwardByHand() {
    CpuReferenceBackend backend;
    std::vector<float> x{1.0f, 2.0f, 3.0f, 4.0f};  // [1, 4, 1]
    std::vector<float> bias{0.5f};
    const auto run = [&](std::vector<float> kernel, std::int32_t pad_left,
                         std::int64_t out_length) {
        std::vector<float> y(static_cast<std::size_t>(out_length));
        const auto k = static_cast<std::int64_t>(kernel.size());
        backend.conv1d_forward(f32_view(x, {1, 4, 1}), f32_view(kernel, {k, 1, 1}),
                               f32_view(bias, {1}), f32_view(y, {1, out_length, 1}),
                               Conv1DParams{pad_left});
        return y;
    };
    // y[t] = sum_k x[t + k - pad] * w[k] + 0.5 (cross-correlation, as TensorFlow).
    QCOMPARE(run({1.0f, 10.0f, 100.0f}, 0, 2), (std::vector<float>{321.5f, 432.5f}));
    // 'same', k = 3: one zero on each side.
    QCOMPARE(run({1.0f, 10.0f, 100.0f}, 1, 4), (std::vector<float>{210.5f, 321.5f, 432.5f, 43.5f}));
    // 'same', k = 2: TensorFlow pads 0 on the left and 1 on the right.
    QCOMPARE(run({1.0f, 10.0f}, 0, 4), (std::vector<float>{21.5f, 32.5f, 43.5f, 4.5f}));
    // 'same', k = 4: 1 left, 2 right.
    QCOMPARE(run({1.0f, 10.0f, 100.0f, 1000.0f}, 1, 4),
             (std::vector<float>{3210.5f, 4321.5f, 432.5f, 43.5f}));

    // The kernel layout is [k, in, out]: y[o] = sum_c x[c] * w[c][o] + b[o].
    std::vector<float> x2{1.0f, 2.0f};  // [1, 1, 2]
    std::vector<float> w2{1.0f, 2.0f, 3.0f,
                          4.0f, 5.0f, 6.0f};  // [1, 2, 3]: w[0][*] = 1 2 3, w[1][*] = 4 5 6
    std::vector<float> b2{0.0f, 0.0f, 100.0f}, y2(3);
    backend.conv1d_forward(f32_view(x2, {1, 1, 2}), f32_view(w2, {1, 2, 3}), f32_view(b2, {3}),
                           f32_view(y2, {1, 1, 3}), Conv1DParams{0});
    QCOMPARE(y2, (std::vector<float>{9.0f, 12.0f, 115.0f}));
}

void TestOps::samePaddingMatchesTensorFlow() {
    // TensorFlow: out = ceil(n / s), total = max((out - 1) * s + k - n, 0), left = total / 2.
    QCOMPARE(same_pad_left(4, 2, 1), 0);
    QCOMPARE(same_pad_left(4, 3, 1), 1);
    QCOMPARE(same_pad_left(4, 4, 1), 1);
    QCOMPARE(same_pad_left(4, 5, 1), 2);
    QCOMPARE(same_pad_left(5, 2, 2), 0);  // out 3, total 1
    QCOMPARE(same_pad_left(5, 3, 2), 1);  // out 3, total 2
    QCOMPARE(same_pad_left(6, 2, 2), 0);  // out 3, total 0
    QCOMPARE(same_pad_left(7, 3, 3), 1);  // out 3, total 2
    QCOMPARE(conv_output_length(5, 2, 2, true), std::int64_t{3});
    QCOMPARE(conv_output_length(5, 2, 2, false), std::int64_t{2});
    QCOMPARE(conv_output_length(7, 3, 3, false), std::int64_t{2});
    QCOMPARE(conv_output_length(2, 3, 1, false), std::int64_t{0});
}

void TestOps::maxpoolFirstMaximumWins() {
    CpuReferenceBackend backend;
    std::vector<float> x{3.0f, 3.0f, 1.0f, 5.0f, 5.0f, 2.0f};  // [1, 6, 1]
    std::vector<float> y(2);
    std::vector<std::int32_t> argmax(2);
    backend.maxpool1d_forward(f32_view(x, {1, 6, 1}), f32_view(y, {1, 2, 1}),
                              i32_view(argmax, {1, 2, 1}), Pool1DParams{3, 3, 0});
    QCOMPARE(y, (std::vector<float>{3.0f, 5.0f}));
    QCOMPARE(argmax, (std::vector<std::int32_t>{0, 3}));
    // The gradient goes to the first maximum only.
    std::vector<float> grad_y{1.0f, 2.0f}, grad_x(6, 99.0f);
    backend.maxpool1d_backward(f32_view(grad_y, {1, 2, 1}), i32_view(argmax, {1, 2, 1}),
                               f32_view(grad_x, {1, 6, 1}));
    QCOMPARE(grad_x, (std::vector<float>{1.0f, 0.0f, 0.0f, 2.0f, 0.0f, 0.0f}));

    // Overlapping windows (stride 1): one input can win several windows; gradients add up.
    std::vector<float> x2{1.0f, 4.0f, 2.0f, 0.0f}, y2(3), g2{1.0f, 10.0f, 100.0f}, gx2(4);
    std::vector<std::int32_t> a2(3);
    backend.maxpool1d_forward(f32_view(x2, {1, 4, 1}), f32_view(y2, {1, 3, 1}),
                              i32_view(a2, {1, 3, 1}), Pool1DParams{2, 1, 0});
    QCOMPARE(y2, (std::vector<float>{4.0f, 4.0f, 2.0f}));
    backend.maxpool1d_backward(f32_view(g2, {1, 3, 1}), i32_view(a2, {1, 3, 1}),
                               f32_view(gx2, {1, 4, 1}));
    QCOMPARE(gx2, (std::vector<float>{0.0f, 11.0f, 100.0f, 0.0f}));
}

void TestOps::maxpoolSamePaddingNeverWins() {
    CpuReferenceBackend backend;
    std::vector<float> x{-5.0f, -3.0f, -4.0f};  // all negative: zero padding would win
    // pool 2, stride 2, 'same': out 2, pad 0 left 1 right -> windows (-5, -3), (-4, pad).
    std::vector<float> y(2);
    std::vector<std::int32_t> argmax(2);
    backend.maxpool1d_forward(f32_view(x, {1, 3, 1}), f32_view(y, {1, 2, 1}),
                              i32_view(argmax, {1, 2, 1}),
                              Pool1DParams{2, 2, same_pad_left(3, 2, 2)});
    QCOMPARE(y, (std::vector<float>{-3.0f, -4.0f}));
    QCOMPARE(argmax, (std::vector<std::int32_t>{1, 2}));
    // pool 3, stride 1, 'same': pad 1 each side -> (pad, -5, -3), (-5, -3, -4), (-3, -4, pad).
    std::vector<float> y3(3);
    std::vector<std::int32_t> argmax3(3);
    backend.maxpool1d_forward(f32_view(x, {1, 3, 1}), f32_view(y3, {1, 3, 1}),
                              i32_view(argmax3, {1, 3, 1}),
                              Pool1DParams{3, 1, same_pad_left(3, 3, 1)});
    QCOMPARE(y3, (std::vector<float>{-3.0f, -3.0f, -3.0f}));
    QCOMPARE(argmax3, (std::vector<std::int32_t>{1, 1, 1}));
    // A window far past the input (pool 2e9, stride 1, 'same'): each output pools the whole input.
    std::vector<float> y_past(3);
    std::vector<std::int32_t> argmax_past(3);
    backend.maxpool1d_forward(f32_view(x, {1, 3, 1}), f32_view(y_past, {1, 3, 1}), i32_view(argmax_past, {1, 3, 1}),
                              Pool1DParams{2'000'000'000, 1, same_pad_left(3, 2'000'000'000, 1)});
    QCOMPARE(y_past, (std::vector<float>{-3.0f, -3.0f, -3.0f}));
    QCOMPARE(argmax_past, (std::vector<std::int32_t>{1, 1, 1}));
}

void TestOps::lossAccuracyAndTopKTies() {
    CpuReferenceBackend backend;
    const auto run = [&](std::vector<float> logits, std::int32_t label, std::int32_t k) {
        const auto classes = static_cast<std::int64_t>(logits.size());
        std::vector<std::int32_t> labels{label};
        std::vector<float> probs(logits.size());
        return backend.softmax_cross_entropy(f32_view(logits, {1, classes}), i32_view(labels, {1}),
                                             f32_view(probs, {1, classes}), TensorView{}, 1.0f, k);
    };
    // Accuracy: the first maximum is the prediction (tf.argmax), so a tied later class is wrong.
    QCOMPARE(run({1.0f, 2.0f, 2.0f, 0.0f}, 1, 1).correct, std::int64_t{1});
    QCOMPARE(run({1.0f, 2.0f, 2.0f, 0.0f}, 2, 1).correct, std::int64_t{0});
    // in_top_k: ties with the k-th score count as in, so class 2 is in the top 1 here.
    QCOMPARE(run({1.0f, 2.0f, 2.0f, 0.0f}, 2, 1).top_k_correct, std::int64_t{1});
    QCOMPARE(run({1.0f, 2.0f, 2.0f, 0.0f}, 0, 2).top_k_correct,
             std::int64_t{0});  // two classes score higher
    QCOMPARE(run({1.0f, 2.0f, 2.0f, 0.0f}, 0, 3).top_k_correct, std::int64_t{1});
    QCOMPARE(run({0.0f, 0.0f, 0.0f, 0.0f}, 3, 1).top_k_correct, std::int64_t{1});  // all tied
    QCOMPARE(run({0.0f, 0.0f, 0.0f, 0.0f}, 3, 1).correct, std::int64_t{0});
    // Top-5 of 7 classes, label scored 6th: out.
    QCOMPARE(run({7.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f}, 5, 5).top_k_correct, std::int64_t{0});
    QCOMPARE(run({7.0f, 6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f}, 4, 5).top_k_correct, std::int64_t{1});

    // Loss: p = softmax(0, ln 3) = (1/4, 3/4), -log p[1] = log(4/3).
    const LossCounts counts = run({0.0f, static_cast<float>(std::log(3.0))}, 1, 1);
    QVERIFY(std::abs(counts.loss_sum - std::log(4.0 / 3.0)) < 1e-7);
    // Large logits must not overflow (max subtraction): p = (1, e^-1000 ~ 0).
    const LossCounts large = run({1000.0f, 0.0f}, 1, 1);
    QVERIFY(std::abs(large.loss_sum - 1000.0) < 1e-3);
}

void TestOps::dropoutKeepsAndScales() {
    CpuReferenceBackend backend;
    const std::int64_t count = 100000;
    const float rate = 0.3f;
    std::vector<float> x(count, 2.0f), y(count), mask(count);
    backend.dropout_forward(f32_view(x, {count}), f32_view(y, {count}), f32_view(mask, {count}),
                            rate, 42);
    std::int64_t kept = 0;
    const float scale = 1.0f / (1.0f - rate);
    for (std::int64_t i = 0; i < count; ++i) {
        if (mask[i] != 0.0f) {
            ++kept;
            QCOMPARE(mask[i], scale);
            QCOMPARE(y[i], 2.0f * scale);
        } else {
            QCOMPARE(y[i], 0.0f);
        }
    }
    // Binomial(1e5, 0.7): sd 0.0014, so +-0.01 is 7 sd.
    const double kept_fraction = double(kept) / double(count);
    QVERIFY2(std::abs(kept_fraction - 0.7) < 0.01, qPrintable(QString::number(kept_fraction)));
    // The mean is preserved in expectation: mean(y) ~ mean(x).
    const double mean = std::accumulate(y.begin(), y.end(), 0.0) / double(count);
    QVERIFY2(std::abs(mean - 2.0) < 0.05, qPrintable(QString::number(mean)));

    std::vector<float> y_again(count), mask_again(count);
    backend.dropout_forward(f32_view(x, {count}), f32_view(y_again, {count}),
                            f32_view(mask_again, {count}), rate, 42);
    QCOMPARE(mask_again, mask);
    QCOMPARE(y_again, y);
    backend.dropout_forward(f32_view(x, {count}), f32_view(y_again, {count}),
                            f32_view(mask_again, {count}), rate, 43);
    QVERIFY(mask_again != mask);

    // Rate 0 keeps everything unscaled.
    backend.dropout_forward(f32_view(x, {count}), f32_view(y_again, {count}),
                            f32_view(mask_again, {count}), 0.0f, 42);
    QCOMPARE(y_again, x);
}

// SpatialDropout1D's mask (its layer's op): whole channels of a sample dropped at every step,
// the rest scaled by 1 / (1 - rate), about `rate` of the channels dropped, one mask per seed.
void TestOps::spatialDropoutDropsWholeChannels() {
    const OpDef* mask_op = find_op("spatial_dropout1d_mask");
    QVERIFY(mask_op != nullptr);
    CpuReferenceBackend backend;
    const std::int64_t batch = 50, length = 7, channels = 400;
    const float rate = 0.3f, scale = 1.0f / (1.0f - rate);
    auto draw = [&](std::uint64_t seed) {
        std::vector<float> mask(batch * length * channels, 5.0f);
        OpAttributes attributes;
        attributes.real = rate;
        attributes.seed = seed;
        const TensorView outputs[] = {f32_view(mask, {batch, length, channels})};
        run_op(backend, *mask_op, {}, outputs, attributes);
        return mask;
    };
    const std::vector<float> mask = draw(42);
    std::int64_t dropped = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t c = 0; c < channels; ++c) {
            const float first = mask[static_cast<std::size_t>(b * length * channels + c)];
            QVERIFY(first == 0.0f || first == scale);
            dropped += first == 0.0f ? 1 : 0;
            for (std::int64_t t = 1; t < length; ++t) QCOMPARE(mask[static_cast<std::size_t>((b * length + t) * channels + c)], first);
        }
    }
    // Binomial(20000, 0.3): sd 0.0032, so +-0.02 is 6 sd.
    const double fraction = double(dropped) / double(batch * channels);
    QVERIFY2(std::abs(fraction - 0.3) < 0.02, qPrintable(QString::number(fraction)));
    QCOMPARE(draw(42), mask);
    QVERIFY(draw(43) != mask);
}

// ---- Errors ----------------------------------------------------------------------------------

void TestOps::embeddingIdOutsideVocabulary() {
    CpuReferenceBackend backend;
    std::vector<std::int32_t> ids{3, 1234};
    std::vector<float> table(17 * 2, 0.0f), out(2 * 2);
    QString message = op_error([&] {
        backend.embedding_forward(i32_view(ids, {1, 2}), f32_view(table, {17, 2}),
                                  f32_view(out, {1, 2, 2}));
    });
    QVERIFY2(message.contains("[embedding]"), qPrintable(message));
    QVERIFY2(message.contains("1234") && message.contains("17"), qPrintable(message));
    ids[1] = -1;
    message = op_error([&] {
        backend.embedding_forward(i32_view(ids, {1, 2}), f32_view(table, {17, 2}),
                                  f32_view(out, {1, 2, 2}));
    });
    QVERIFY2(message.contains("-1"), qPrintable(message));

    // Through training, as a person meets it: a data set whose ids exceed input_dim.
    const Model model = Model::from_json_text(kModelWithDropout);
    auto device = cpu_device();
    ModelReplica replica(model, *device, 1, UpdateLayout{});
    std::vector<std::int32_t> sample{1, 2, 3, 4, 5, 6, 7, 10};  // input_dim 10: id 10 is out
    std::vector<std::int32_t> label{0};
    message =
        op_error([&] { replica.forward_backward(sample.data(), label.data(), 1, 1, 0, nullptr); });
    QVERIFY2(message.contains("10") && message.contains("vocabulary"), qPrintable(message));
}

void TestOps::labelOutsideClasses() {
    CpuReferenceBackend backend;
    std::vector<float> logits(2 * 5, 0.0f), probs(2 * 5);
    std::vector<std::int32_t> labels{1, 46};
    QString message = op_error([&] {
        backend.softmax_cross_entropy(f32_view(logits, {2, 5}), i32_view(labels, {2}),
                                      f32_view(probs, {2, 5}), TensorView{}, 1.0f, 5);
    });
    QVERIFY2(message.contains("label 46"), qPrintable(message));
    QVERIFY2(message.contains("5"), qPrintable(message));
    labels[1] = -2;
    message = op_error([&] {
        backend.softmax_cross_entropy(f32_view(logits, {2, 5}), i32_view(labels, {2}),
                                      f32_view(probs, {2, 5}), TensorView{}, 1.0f, 5);
    });
    QVERIFY2(message.contains("-2"), qPrintable(message));

    const Model model = Model::from_json_text(kModelWithDropout);  // 3 classes
    auto device = cpu_device();
    ModelReplica replica(model, *device, 1, UpdateLayout{});
    std::vector<std::int32_t> sample{1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<std::int32_t> label{3};
    message =
        op_error([&] { replica.forward_backward(sample.data(), label.data(), 1, 1, 0, nullptr); });
    QVERIFY2(message.contains("label 3"), qPrintable(message));
}

void TestOps::conv1dChannelMismatch() {
    CpuReferenceBackend backend;
    std::vector<float> x(1 * 5 * 7, 0.0f), kernel(3 * 8 * 2, 0.0f), bias(2, 0.0f), y(1 * 3 * 2);
    const QString message = op_error([&] {
        backend.conv1d_forward(f32_view(x, {1, 5, 7}), f32_view(kernel, {3, 8, 2}),
                               f32_view(bias, {2}), f32_view(y, {1, 3, 2}), Conv1DParams{0});
    });
    QVERIFY2(message.contains("[conv1d]"), qPrintable(message));
    QVERIFY2(message.contains("7 channels") && message.contains("expects 8"), qPrintable(message));
}

// ---- Layer types' ops ------------------------------------------------------------------------

// The reference backend as a device whose memory the host cannot address: run_op must take the
// host round trip (download the inputs, run the reference, upload the outputs). Counts the moves.
class RoundTripBackend : public CpuReferenceBackend {
  public:
    bool host_memory() const override { return false; }
    void upload(const TensorView& dst, const void* host) override {
        ++uploads;
        CpuReferenceBackend::upload(dst, host);
    }
    void download(void* host, const TensorView& src) override {
        ++downloads;
        CpuReferenceBackend::download(host, src);
    }
    int uploads = 0, downloads = 0;
};

// A backend with a kernel of its own for "scale": run_op must call it, not the reference.
class NativeBackend : public RoundTripBackend {
  public:
    bool supports(std::string_view op) const override { return op == "scale"; }
    void run(const OpCall& call) override {
        ++native_runs;
        for (std::int64_t i = 0; i < call.outputs[0].numel(); ++i) call.outputs[0].f32()[i] = 0.0f;
    }
    int native_runs = 0;
};

// outputs[0] = inputs[0] * attributes.real; outputs[1], if given, = attributes.ints[0].
void scale_reference(const OpCall& call) {
    for (std::int64_t i = 0; i < call.inputs[0].numel(); ++i) {
        call.outputs[0].f32()[i] = call.inputs[0].f32()[i] * static_cast<float>(call.attributes.real);
    }
    if (call.outputs.size() > 1 && call.outputs[1]) call.outputs[1].i32()[0] = static_cast<std::int32_t>(call.attributes.ints[0]);
}

void TestOps::opRunsNativelyInPlaceOrThroughTheHost() {
    const OpDef scale{"scale", scale_reference};
    std::vector<float> x{1.0f, -2.0f, 3.5f};
    OpAttributes attributes;
    attributes.real = 2.0;
    attributes.ints[0] = 41;
    for (const bool with_count : {true, false}) {
        std::vector<float> y(3, 99.0f);
        std::vector<std::int32_t> count{0};
        const TensorView inputs[] = {f32_view(x, {3})};
        const TensorView outputs[] = {f32_view(y, {3}), with_count ? i32_view(count, {1}) : TensorView{}};

        CpuReferenceBackend in_place;  // host memory: the reference on the tensors themselves
        run_op(in_place, scale, inputs, outputs, attributes);
        QCOMPARE(y, (std::vector<float>{2.0f, -4.0f, 7.0f}));

        std::fill(y.begin(), y.end(), 99.0f);
        count[0] = 0;
        RoundTripBackend device;
        run_op(device, scale, inputs, outputs, attributes);
        QCOMPARE(y, (std::vector<float>{2.0f, -4.0f, 7.0f}));
        QCOMPARE(count[0], with_count ? 41 : 0);
        QCOMPARE(device.downloads, 1);                   // the input only: outputs are never read
        QCOMPARE(device.uploads, with_count ? 2 : 1);    // an empty output view stays empty

        NativeBackend native;
        run_op(native, scale, inputs, outputs, attributes);
        QCOMPARE(native.native_runs, 1);
        QCOMPARE(native.downloads + native.uploads, 0);
        QCOMPARE(y, (std::vector<float>{0.0f, 0.0f, 0.0f}));
    }
    // A backend asked to run an op it does not support says which.
    CpuReferenceBackend reference;
    const TensorView none[] = {TensorView{}};
    const QString message = op_error([&] { reference.run(OpCall{"scale", none, none, {}}); });
    QVERIFY2(message.contains("[scale]") && message.contains("cpu-reference"), qPrintable(message));
}

// The layer's ops through the host round trip (a device the host cannot address) give the
// in-place reference's numbers bit for bit, as they must on a GPU without a kernel for them.
void TestOps::globalAveragePoolingThroughTheHostIsTheReference() {
    std::mt19937 rng(41);
    const std::int64_t batch = 3, length = 9, channels = 4;
    std::vector<float> x = random_values(rng, batch * length * channels);
    std::vector<float> grad_y = random_values(rng, batch * channels);
    std::vector<float> y_reference(batch * channels), y_device(y_reference.size(), 5.0f);
    std::vector<float> dx_reference(x.size()), dx_device(x.size(), 5.0f);
    for (const bool device : {false, true}) {
        CpuReferenceBackend in_place;
        RoundTripBackend round_trip;
        Backend& backend = device ? static_cast<Backend&>(round_trip) : in_place;
        std::vector<float>& y = device ? y_device : y_reference;
        std::vector<float>& dx = device ? dx_device : dx_reference;
        const TensorView x_view[] = {f32_view(x, {batch, length, channels})}, y_view[] = {f32_view(y, {batch, channels})};
        const TensorView dy_view[] = {f32_view(grad_y, {batch, channels})}, dx_view[] = {f32_view(dx, {batch, length, channels})};
        run_op(backend, *find_op("global_average_pooling1d_forward"), x_view, y_view);
        run_op(backend, *find_op("global_average_pooling1d_backward"), dy_view, dx_view);
        if (device) QCOMPARE(round_trip.downloads + round_trip.uploads, 4);
    }
    QCOMPARE(y_device, y_reference);
    QCOMPARE(dx_device, dx_reference);
}

// ---- The whole model -------------------------------------------------------------------------

void TestOps::modelGradientMatchesFiniteDifferences_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<bool>("training");  // the loss of forward_backward (dropout on), not evaluate()
    QTest::newRow("Conv1D same+valid, MaxPooling1D, Dropout(0), Flatten, Dense")
        << QString(kModelAllLayers) << false;
    QTest::newRow("GlobalMaxPooling1D, strided same pooling, Activation, Dense sigmoid")
        << QString(kModelGlobalPool) << false;
    QTest::newRow("GlobalAveragePooling1D after Conv1D same") << QString(kModelGlobalAverage) << false;
    QTest::newRow("SpatialDropout1D(0.4) in training") << QString(kModelSpatialDropout) << true;
}

// d(mean loss)/dw from forward_backward (global batch = batch) against central differences of
// the mean loss from evaluate(), for a sample of the elements of every variable.
void TestOps::modelGradientMatchesFiniteDifferences() {
    QFETCH(QString, json);
    QFETCH(bool, training);
    const Model model = Model::from_json_text(json.toStdString());
    auto device = cpu_device();
    const std::int32_t batch = 4;
    ModelReplica replica(model, *device, batch, UpdateLayout{});
    std::mt19937 rng(2024);
    std::vector<float> weights = random_weights(model, rng);
    replica.set_weights(weights);

    std::uniform_int_distribution<std::int32_t> id_distribution(
        0, static_cast<std::int32_t>(model.vocabulary_size()) - 2);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(batch * model.input_length()));
    for (auto& id : ids)
        id = id_distribution(rng);  // the last id never occurs: its row's gradient is 0
    std::vector<std::int32_t> labels(batch);
    for (std::int32_t b = 0; b < batch; ++b) labels[b] = b % model.num_classes();

    const LossCounts counts =
        replica.forward_backward(ids.data(), labels.data(), batch, batch, 7, nullptr);
    const std::vector<float> gradients = replica.gradients();
    const auto mean_loss = [&] {
        replica.set_weights(weights);
        if (training) return replica.forward_backward(ids.data(), labels.data(), batch, batch, 7, nullptr).loss_sum / batch;
        return replica.evaluate(ids.data(), labels.data(), batch).loss_sum / batch;
    };
    // Dropout(0) is the identity; with dropout on, the same seed draws the same mask.
    QVERIFY(std::abs(mean_loss() - counts.loss_sum / batch) < 1e-12);
    if (training) QVERIFY(std::abs(replica.evaluate(ids.data(), labels.data(), batch).loss_sum - counts.loss_sum) > 1e-6);

    // Up to 12 elements per variable; for the embedding, rows that occur plus the unused row.
    std::vector<std::size_t> indices;
    std::size_t offset = 0;
    QStringList covered;
    for (const auto& variable : model.variables()) {
        const auto count = static_cast<std::size_t>(variable.shape.numel());
        std::vector<std::size_t> chosen(count);
        std::iota(chosen.begin(), chosen.end(), offset);
        std::shuffle(chosen.begin(), chosen.end(), rng);
        chosen.resize(std::min<std::size_t>(count, 12));
        if (variable.shape.rank() == 2 && variable.name.ends_with("/embeddings")) {
            const auto width = static_cast<std::size_t>(variable.shape[1]);
            chosen.clear();
            for (std::size_t d = 0; d < width; ++d) {
                chosen.push_back(offset + static_cast<std::size_t>(ids[0]) * width + d);
                chosen.push_back(offset + static_cast<std::size_t>(ids[5]) * width + d);
                chosen.push_back(offset +
                                 static_cast<std::size_t>(model.vocabulary_size() - 1) * width + d);
            }
            for (std::size_t d = 0; d < width; ++d) {
                QCOMPARE(
                    gradients[offset +
                              static_cast<std::size_t>(model.vocabulary_size() - 1) * width + d],
                    0.0f);
            }
        }
        indices.insert(indices.end(), chosen.begin(), chosen.end());
        covered << QString::fromStdString(variable.name);
        offset += count;
    }
    QCOMPARE(offset, weights.size());

    FdOptions options;
    options.eps = 5e-3;
    options.rtol = 2e-2;
    options.atol = 2e-4;
    options.skip_kinks = true;
    int skipped = 0;
    const std::string failure = check_gradient("d(mean loss)/dw", weights, gradients, mean_loss,
                                               options, indices, &skipped);
    QVERIFY2(failure.empty(), failure.c_str());
    qInfo("checked %zu weights (%d skipped on a ReLU/max kink) of %s",
          indices.size() - std::size_t(skipped), skipped, qPrintable(covered.join(", ")));
}

void TestOps::fusedBlocksMatchTheReference_data() {
    QTest::addColumn<int>("threads");  // the CPU pool's limit; 0: the machine's
    QTest::newRow("one thread") << 1;
    QTest::newRow("the machine's threads") << 0;
}

// The CPU backend's fused Conv1D + ReLU + MaxPooling1D against the reference backend's three ops,
// through five such blocks: on one thread the fused forward keeps one sample's convolution output,
// so the first block's backward, four pooling layers later, must still know it may not fall back
// on the three ops (the backend remembers every pooling layer of a model). Loss and every gradient
// within the summation order's rounding.
void TestOps::fusedBlocksMatchTheReference() {
    QFETCH(int, threads);
    const testsupport::ScopedThreadLimit limit(threads);
    const Model model = Model::from_json_text(kModelFiveBlocks);
    const std::int32_t batch = 5;
    std::mt19937 rng(17);
    const std::vector<float> weights = random_weights(model, rng);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(batch * model.input_length()));
    std::uniform_int_distribution<std::int32_t> id_distribution(0, static_cast<std::int32_t>(model.vocabulary_size()) - 1);
    for (auto& id : ids) id = id_distribution(rng);
    const std::vector<std::int32_t> labels{0, 1, 2, 1, 0};
    auto step = [&](std::unique_ptr<Backend> backend, std::vector<float>& gradients) {
        LogicalDevice device("/device:CPU:0", detect_cpu(), 0, std::move(backend), nullptr);
        ModelReplica replica(model, device, batch, UpdateLayout{});
        replica.set_weights(weights);
        const LossCounts counts = replica.forward_backward(ids.data(), labels.data(), batch, batch, 0, nullptr);
        gradients = replica.gradients();
        return counts.loss_sum;
    };
    std::vector<float> expected, actual;
    const double expected_loss = step(std::make_unique<CpuReferenceBackend>(), expected);
    const double actual_loss = step(make_cpu_backend(), actual);
    QVERIFY2(std::abs(actual_loss - expected_loss) <= 1e-5 * std::abs(expected_loss),
             qPrintable(QString("loss %1, the reference's %2").arg(actual_loss).arg(expected_loss)));
    QCOMPARE(actual.size(), expected.size());
    double scale = 0.0;
    for (float g : expected) scale = std::max(scale, static_cast<double>(std::abs(g)));
    QVERIFY(scale > 0.0);
    int differ = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (std::abs(actual[i] - expected[i]) > 1e-5 * scale) ++differ;
    }
    QVERIFY2(differ == 0, qPrintable(QString("%1 of %2 gradients differ from the reference's").arg(differ).arg(expected.size())));
}

void TestOps::dropoutIsReproducibleForASeed() {
    const Model model = Model::from_json_text(kModelWithDropout);
    auto device = cpu_device();
    const std::int32_t batch = 3;
    ModelReplica replica(model, *device, batch, UpdateLayout{});
    std::mt19937 rng(99);
    replica.set_weights(random_weights(model, rng));
    std::vector<std::int32_t> ids(static_cast<std::size_t>(batch * model.input_length()));
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<std::int32_t>((i * 7 + 3) % 10);
    std::vector<std::int32_t> labels{0, 1, 2};

    const LossCounts first =
        replica.forward_backward(ids.data(), labels.data(), batch, batch, 42, nullptr);
    const std::vector<float> gradients = replica.gradients();
    const LossCounts second =
        replica.forward_backward(ids.data(), labels.data(), batch, batch, 42, nullptr);
    QCOMPARE(second.loss_sum, first.loss_sum);
    QCOMPARE(replica.gradients(), gradients);

    const LossCounts other =
        replica.forward_backward(ids.data(), labels.data(), batch, batch, 43, nullptr);
    QVERIFY(other.loss_sum != first.loss_sum);
    QVERIFY(replica.gradients() != gradients);

    // Evaluation runs without dropout: repeatable and independent of any seed.
    const double evaluated = replica.evaluate(ids.data(), labels.data(), batch).loss_sum;
    QCOMPARE(replica.evaluate(ids.data(), labels.data(), batch).loss_sum, evaluated);
    QVERIFY(evaluated != first.loss_sum);
}

QTEST_APPLESS_MAIN(TestOps)
#include "test_ops.moc"
