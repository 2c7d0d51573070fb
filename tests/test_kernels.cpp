// The fast CPU kernels against the reference backend, in the manner of ggml's test-backend-ops:
// every op CpuFastBackend overrides runs on random shapes (the reference model's, batch 1, odd
// lengths, channel counts that are not a multiple of the vector width, 'same' padding, windows
// longer than the input) with every instruction set this CPU has, on 1 and 2 threads, and is
// compared with CpuReferenceBackend: normalised mean squared error under a per-op bound plus
// NaN/Inf agreement for the GEMM-based ops (they sum with fused multiply-adds), bit equality for
// everything else. An instruction set the CPU lacks is reported as skipped.
//
// MIRRORLAB_KERNEL_PERF=1 adds a timing table of every kernel at the model's shapes
// (`benchmarkKernels`), the isolated measurements behind docs/PERFORMANCE.md.
#include <QtTest/QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "core/backend/cpu_fast.h"
#include "core/backend/cpu_fast_kernels.h"
#include "core/backend/cpu_reference.h"
#include "core/optim/optimizer.h"
#include "core/util/error.h"
#include "core/util/thread_pool.h"
#include "support/thread_limit.h"

// Counts every allocation of this program, to check that warm kernels allocate nothing.
namespace {
std::atomic<long> g_allocations{0};
}
void* operator new(std::size_t size) {
    ++g_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

using namespace mirrorlab;

namespace {

// GEMM-based ops sum a few hundred products with FMA where the reference rounds twice: a few
// ulps per element, i.e. an NMSE around 1e-14. 1e-9 still catches any wrong index at once.
constexpr double kMaxGemmNmse = 1e-9;

const fast::KernelTable* table_for(const QString& isa) {
    if (isa == "avx512") return fast::kernels_avx512();
    if (isa == "avx2") return fast::kernels_avx2();
    return &fast::kernels_generic();
}

const QStringList& isas() {
    static const QStringList all{"generic", "avx2", "avx512"};
    return all;
}

TensorView view(std::vector<float>& values, Shape shape) {
    return {values.data(), std::move(shape), DType::F32};
}
TensorView view(std::vector<std::int32_t>& values, Shape shape) {
    return {values.data(), std::move(shape), DType::I32};
}

std::vector<float> random_values(std::mt19937& rng, std::int64_t count, float low = -1.0f,
                                 float high = 1.0f) {
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(static_cast<std::size_t>(count));
    for (auto& value : values) value = distribution(rng);
    return values;
}

// ggml's test-backend-ops measure: sum (actual - expected)^2 / sum expected^2 over the finite
// pairs, and NaN/Inf agreement element by element. An empty result passes.
void expect_close(const std::vector<float>& expected, const std::vector<float>& actual,
                  double max_nmse, const char* what) {
    QCOMPARE(actual.size(), expected.size());
    double error = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const float e = expected[i], a = actual[i];
        if (std::isnan(e) != std::isnan(a) || (std::isinf(e) && a != e) ||
            (std::isinf(a) && a != e)) {
            QFAIL(qPrintable(QString("%1: element %2 is %3, the reference has %4")
                                 .arg(what)
                                 .arg(i)
                                 .arg(a)
                                 .arg(e)));
        }
        if (!std::isfinite(e)) continue;
        error += (static_cast<double>(a) - e) * (static_cast<double>(a) - e);
        norm += static_cast<double>(e) * e;
    }
    const double nmse = norm > 0.0 ? error / norm : error;
    if (!(nmse <= max_nmse)) {
        QFAIL(qPrintable(
            QString("%1: normalised MSE %2 exceeds %3").arg(what).arg(nmse).arg(max_nmse)));
    }
}

// Same values; +0 and -0 count as equal (the reference adds gradients to a zero-filled buffer).
template <class T>
void expect_equal(const std::vector<T>& expected, const std::vector<T>& actual, const char* what) {
    QCOMPARE(actual.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const bool same = expected[i] == actual[i] ||
                          (std::is_floating_point_v<T> && std::isnan(double(expected[i])) &&
                           std::isnan(double(actual[i])));
        if (!same) {
            QFAIL(qPrintable(QString("%1: element %2 is %3, the reference has %4")
                                 .arg(what)
                                 .arg(i)
                                 .arg(double(actual[i]))
                                 .arg(double(expected[i]))));
        }
    }
}

void expect_identical_bits(const std::vector<float>& expected, const std::vector<float>& actual,
                           const char* what) {
    QCOMPARE(actual.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0) {
            QFAIL(qPrintable(QString("%1: element %2 is %3, the reference has %4 (bits differ)")
                                 .arg(what)
                                 .arg(i)
                                 .arg(double(actual[i]), 0, 'g', 9)
                                 .arg(double(expected[i]), 0, 'g', 9)));
        }
    }
}

// Runs `body` with the process's pool limited to `threads`; restores the limit afterwards.
template <class F>
void with_threads(int threads, F&& body) {
    const testsupport::ScopedThreadLimit limit(threads);
    body();
}

#define SKIP_UNLESS_AVAILABLE(isa)                   \
    const fast::KernelTable* table = table_for(isa); \
    if (table == nullptr) QSKIP(qPrintable("this CPU (or compiler) has no " + (isa) + " kernels"));

struct ConvCase {
    const char* name;
    std::int64_t batch, length, in_channels, window, out_channels;
    bool same;

    std::int32_t pad() const { return same ? same_pad_left(length, static_cast<std::int32_t>(window), 1) : 0; }
    std::int64_t out_length() const { return conv_output_length(length, static_cast<std::int32_t>(window), 1, same); }
};

const ConvCase kConvCases[] = {
    {"model conv1", 16, 300, 7, 5, 64, false},
    {"model conv2", 16, 148, 64, 3, 32, false},
    {"batch 1", 1, 300, 7, 5, 64, false},
    {"odd sizes", 3, 13, 5, 3, 17, false},
    {"same, even window", 2, 11, 3, 4, 9, true},
    {"same, window longer than input", 2, 3, 2, 5, 6, true},
    {"same, 70 filters", 2, 37, 64, 3, 70, true},
    {"one output row", 1, 5, 7, 5, 64, false},
    {"no output row", 1, 3, 2, 5, 4, false},
    {"single channel", 3, 50, 1, 7, 1, false},
    {"1x1", 1, 1, 1, 1, 1, false},
};

struct DenseCase {
    const char* name;
    std::int64_t batch, inputs, units;
};

const DenseCase kDenseCases[] = {
    {"model", 16, 2336, 46},     {"model, global batch", 32, 2336, 46},
    {"batch 1", 1, 2336, 46},    {"odd", 3, 17, 5},
    {"wide", 7, 100, 70},        {"1x1", 1, 1, 1},
    {"many units", 5, 300, 129},
};

struct PoolCase {
    const char* name;
    std::int64_t batch, length, channels;
    std::int32_t pool_size, stride;
    bool same;
};

const PoolCase kPoolCases[] = {
    {"model pool1", 16, 296, 64, 2, 2, false},      {"model pool2", 16, 146, 32, 2, 2, false},
    {"odd length", 3, 7, 5, 2, 2, false},           {"gaps between windows", 2, 9, 17, 2, 3, false},
    {"overlapping windows", 2, 10, 3, 3, 2, false}, {"same, odd length", 2, 9, 19, 2, 2, true},
    {"same, padded left", 1, 4, 4, 3, 3, true},     {"same, overlapping", 1, 7, 4, 4, 2, true},
    {"global", 4, 73, 32, 73, 73, false},
    // Windows of 2e9 rows over 40 (padding 'same'): each output pools the whole input. Every
    // backend looped over the window's rows outside the input, 2e9 for each output (a model file
    // with such a pool_size trained 4 steps a minute).
    {"same, window past the input", 2, 40, 5, 2'000'000'000, 1, true},
};

void add_isa_rows(const char* name, const std::function<void(QTestData&)>& fill) {
    for (const QString& isa : isas()) {
        QTestData& row = QTest::newRow(qPrintable(isa + ", " + name));
        row << isa;
        fill(row);
    }
}

// One row per instruction set, for the tests that need nothing else.
void add_isa_only_rows() {
    QTest::addColumn<QString>("isa");
    for (const QString& isa : isas()) QTest::newRow(qPrintable(isa)) << isa;
}

double median_ms(const std::function<void()>& run, int repeats) {
    run();  // warm: pool threads, scratch buffers, caches
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        run();
        times.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

class TestKernels : public QObject {
    Q_OBJECT

  private slots:
    void gemmShapes_data();
    void gemmShapes();
    void conv1d_data();
    void conv1d();
    void dense_data();
    void dense();
    void maxpool_data();
    void maxpool();
    void convReluPool_data();
    void convReluPool();
    void relu_data();
    void relu();
    void transposeBlocks_data();
    void transposeBlocks();
    void foldWindowsIntoRows_data();
    void foldWindowsIntoRows();
    void embeddingRows_data();
    void embeddingRows();
    void optimizers_data();
    void optimizers();
    void nadamOnBatchRows_data();
    void nadamOnBatchRows();
    void nadamRowsOutsideBatch_data();
    void nadamRowsOutsideBatch();
    void nadamDeferredDecays_data();
    void nadamDeferredDecays();
    void nadamDeferredDecaysNeedRowCounts();
    void addAndFiniteCheck_data();
    void addAndFiniteCheck();
    void sumOfSquares_data();
    void sumOfSquares();
    void nanAndInfPropagate_data();
    void nanAndInfPropagate();
    void errorsReadAsTheReference();
    void warmKernelsDoNotAllocate();
    void threadsShareOnePool();
    void benchmarkKernels();
};

void TestKernels::gemmShapes_data() { add_isa_only_rows(); }

// The GEMM kernel alone on every row count up to two blocks and column counts around the vector
// widths: every block shape, row remainder and column split (including a partial last vector)
// of every instruction set. With FMA (AVX2, AVX-512) each element is the FMA chain over depth
// in order, bit for bit; the scalar build rounds products separately (within the GEMM bound).
// The fifth mode stores the ReLU of each sum (GemmArgs::relu, the fused Conv1D's forward).
// Around every C block, the row stride's padding must keep its sentinel: a partial vector's
// store writes its lanes and nothing else.
void TestKernels::gemmShapes() {
    QFETCH(QString, isa);
    SKIP_UNLESS_AVAILABLE(isa);
    const bool fused = isa != "generic";
    std::mt19937 rng(5);
    constexpr float kSentinel = 12345.0f;
    for (const std::int64_t cols :
         {1, 3, 7, 8, 9, 15, 16, 17, 24, 25, 33, 35, 40, 46, 64, 65, 70, 129}) {
        for (std::int64_t rows = 1; rows <= 25; ++rows) {
            for (const std::int64_t depth : {0, 1, 5, 35}) {
                for (int mode = 0; mode < 5; ++mode) {  // plain, A transposed, bias, accumulate, ReLU
                    const bool transposed = mode == 1;
                    const std::int64_t lda = transposed ? rows + 2 : depth + 3, ldb = cols + 1,
                                       ldc = cols + 5;
                    auto a = random_values(
                        rng, std::max<std::int64_t>(1, (transposed ? depth : rows) * lda));
                    auto b = random_values(rng, std::max<std::int64_t>(1, depth * ldb));
                    auto bias = random_values(rng, cols);
                    std::vector<float> c(static_cast<std::size_t>(rows * ldc), kSentinel);
                    for (std::int64_t r = 0; r < rows; ++r)
                        for (std::int64_t j = 0; j < cols; ++j)
                            c[r * ldc + j] = 0.25f * static_cast<float>(r - j);
                    std::vector<float> expected = c;
                    fast::GemmArgs g;
                    g.rows = rows;
                    g.cols = cols;
                    g.depth = depth;
                    g.a = a.data();
                    g.a_row = transposed ? 1 : lda;
                    g.a_depth = transposed ? lda : 1;
                    g.b = b.data();
                    g.ldb = ldb;
                    g.c = c.data();
                    g.ldc = ldc;
                    g.bias = mode == 2 ? bias.data() : nullptr;
                    g.accumulate = mode == 3;
                    g.relu = mode == 4;
                    for (std::int64_t r = 0; r < rows; ++r) {
                        for (std::int64_t j = 0; j < cols; ++j) {
                            float sum = g.accumulate ? expected[r * ldc + j]
                                        : g.bias     ? bias[j]
                                                     : 0.0f;
                            for (std::int64_t p = 0; p < depth; ++p) {
                                const float x = a[r * g.a_row + p * g.a_depth], y = b[p * ldb + j];
                                sum = fused ? std::fma(x, y, sum) : x * y + sum;
                            }
                            // ReLU as relu_forward: a NaN stays NaN (none here), -0 stays -0.
                            expected[r * ldc + j] = g.relu && sum < 0.0f ? 0.0f : sum;
                        }
                    }
                    table->gemm(g);
                    const QString what =
                        QString("%1 x %2 x %3, mode %4").arg(rows).arg(cols).arg(depth).arg(mode);
                    if (fused) {
                        expect_identical_bits(expected, c, qPrintable(what));
                    } else {
                        expect_close(expected, c, kMaxGemmNmse, qPrintable(what));
                    }
                    if (QTest::currentTestFailed()) return;
                    for (std::int64_t r = 0; r < rows; ++r) {
                        for (std::int64_t j = cols; j < ldc; ++j)
                            QVERIFY2(c[r * ldc + j] == kSentinel,
                                     qPrintable(what + ": wrote past its row"));
                    }
                }
            }
        }
    }
}

void TestKernels::conv1d_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("index");
    for (int i = 0; i < static_cast<int>(std::size(kConvCases)); ++i) {
        add_isa_rows(kConvCases[i].name, [&](QTestData& row) { row << i; });
    }
}

// Forward, then backward with every optional output, on 1 and 2 threads (which must agree bit
// for bit: the work is split so that no sum changes order), against the reference.
void TestKernels::conv1d() {
    QFETCH(QString, isa);
    QFETCH(int, index);
    SKIP_UNLESS_AVAILABLE(isa);
    const ConvCase& c = kConvCases[index];
    const std::int32_t pad = c.pad();
    const std::int64_t out_length = c.out_length();
    std::mt19937 rng(1234 + index);
    auto x = random_values(rng, c.batch * c.length * c.in_channels);
    auto kernel = random_values(rng, c.window * c.in_channels * c.out_channels);
    auto bias = random_values(rng, c.out_channels);
    auto grad_y = random_values(rng, c.batch * out_length * c.out_channels);
    const Shape x_shape{c.batch, c.length, c.in_channels},
        k_shape{c.window, c.in_channels, c.out_channels};
    const Shape y_shape{c.batch, out_length, c.out_channels}, b_shape{c.out_channels};

    struct Result {
        std::vector<float> y, y_no_bias, grad_x, grad_kernel, grad_bias, grad_kernel_only;
    };
    auto run = [&](Backend& backend) {
        Result r;
        r.y.assign(static_cast<std::size_t>(y_shape.numel()),
                   7.0f);  // garbage the op must overwrite
        r.y_no_bias = r.y;
        r.grad_x.assign(static_cast<std::size_t>(x_shape.numel()), 7.0f);
        r.grad_kernel.assign(static_cast<std::size_t>(k_shape.numel()), 7.0f);
        r.grad_bias.assign(static_cast<std::size_t>(c.out_channels), 7.0f);
        r.grad_kernel_only = r.grad_kernel;
        backend.conv1d_forward(view(x, x_shape), view(kernel, k_shape), view(bias, b_shape),
                               view(r.y, y_shape), Conv1DParams{pad});
        backend.conv1d_forward(view(x, x_shape), view(kernel, k_shape), TensorView{},
                               view(r.y_no_bias, y_shape), Conv1DParams{pad});
        backend.conv1d_backward(view(x, x_shape), view(kernel, k_shape), view(grad_y, y_shape),
                                view(r.grad_x, x_shape), view(r.grad_kernel, k_shape),
                                view(r.grad_bias, b_shape), Conv1DParams{pad});
        backend.conv1d_backward(view(x, x_shape), view(kernel, k_shape), view(grad_y, y_shape),
                                TensorView{}, view(r.grad_kernel_only, k_shape), TensorView{},
                                Conv1DParams{pad});
        return r;
    };
    CpuReferenceBackend reference;
    const Result expected = run(reference);
    CpuFastBackend fast_backend(*table);
    Result one, two;
    with_threads(1, [&] { one = run(fast_backend); });
    with_threads(2, [&] { two = run(fast_backend); });

    expect_close(expected.y, one.y, kMaxGemmNmse, "conv1d forward");
    expect_close(expected.y_no_bias, one.y_no_bias, kMaxGemmNmse, "conv1d forward without bias");
    expect_close(expected.grad_x, one.grad_x, kMaxGemmNmse, "conv1d grad_x");
    expect_close(expected.grad_kernel, one.grad_kernel, kMaxGemmNmse, "conv1d grad_kernel");
    expect_close(expected.grad_bias, one.grad_bias, kMaxGemmNmse, "conv1d grad_bias");
    expect_close(expected.grad_kernel, one.grad_kernel_only, kMaxGemmNmse,
                 "conv1d grad_kernel without grad_x");
    expect_identical_bits(one.y, two.y, "conv1d forward, 1 vs 2 threads");
    expect_identical_bits(one.grad_x, two.grad_x, "conv1d grad_x, 1 vs 2 threads");
    expect_identical_bits(one.grad_kernel, two.grad_kernel, "conv1d grad_kernel, 1 vs 2 threads");
}

void TestKernels::dense_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("index");
    for (int i = 0; i < static_cast<int>(std::size(kDenseCases)); ++i) {
        add_isa_rows(kDenseCases[i].name, [&](QTestData& row) { row << i; });
    }
}

void TestKernels::dense() {
    QFETCH(QString, isa);
    QFETCH(int, index);
    SKIP_UNLESS_AVAILABLE(isa);
    const DenseCase& c = kDenseCases[index];
    std::mt19937 rng(99 + index);
    auto x = random_values(rng, c.batch * c.inputs);
    auto kernel = random_values(rng, c.inputs * c.units);
    auto bias = random_values(rng, c.units);
    auto grad_y = random_values(rng, c.batch * c.units);
    const Shape x_shape{c.batch, c.inputs}, k_shape{c.inputs, c.units}, y_shape{c.batch, c.units};

    struct Result {
        std::vector<float> y, grad_x, grad_kernel, grad_bias;
    };
    auto run = [&](Backend& backend) {
        Result r;
        r.y.assign(static_cast<std::size_t>(y_shape.numel()), 7.0f);
        r.grad_x.assign(static_cast<std::size_t>(x_shape.numel()), 7.0f);
        r.grad_kernel.assign(static_cast<std::size_t>(k_shape.numel()), 7.0f);
        r.grad_bias.assign(static_cast<std::size_t>(c.units), 7.0f);
        backend.dense_forward(view(x, x_shape), view(kernel, k_shape), view(bias, Shape{c.units}),
                              view(r.y, y_shape));
        backend.dense_backward(view(x, x_shape), view(kernel, k_shape), view(grad_y, y_shape),
                               view(r.grad_x, x_shape), view(r.grad_kernel, k_shape),
                               view(r.grad_bias, Shape{c.units}));
        return r;
    };
    CpuReferenceBackend reference;
    const Result expected = run(reference);
    CpuFastBackend fast_backend(*table);
    Result one, two;
    with_threads(1, [&] { one = run(fast_backend); });
    with_threads(2, [&] { two = run(fast_backend); });
    expect_close(expected.y, one.y, kMaxGemmNmse, "dense forward");
    expect_close(expected.grad_x, one.grad_x, kMaxGemmNmse, "dense grad_x");
    expect_close(expected.grad_kernel, one.grad_kernel, kMaxGemmNmse, "dense grad_kernel");
    expect_close(expected.grad_bias, one.grad_bias, kMaxGemmNmse, "dense grad_bias");
    expect_identical_bits(one.y, two.y, "dense forward, 1 vs 2 threads");
    expect_identical_bits(one.grad_x, two.grad_x, "dense grad_x, 1 vs 2 threads");
    expect_identical_bits(one.grad_kernel, two.grad_kernel, "dense grad_kernel, 1 vs 2 threads");

    // Without bias and without grad_x (the first layer of a model).
    std::vector<float> y_ref(static_cast<std::size_t>(y_shape.numel())), y_fast(y_ref.size(), 7.0f);
    reference.dense_forward(view(x, x_shape), view(kernel, k_shape), TensorView{},
                            view(y_ref, y_shape));
    fast_backend.dense_forward(view(x, x_shape), view(kernel, k_shape), TensorView{},
                               view(y_fast, y_shape));
    expect_close(y_ref, y_fast, kMaxGemmNmse, "dense forward without bias");
    std::vector<float> dk_ref(static_cast<std::size_t>(k_shape.numel())),
        dk_fast(dk_ref.size(), 7.0f);
    reference.dense_backward(view(x, x_shape), view(kernel, k_shape), view(grad_y, y_shape),
                             TensorView{}, view(dk_ref, k_shape), TensorView{});
    fast_backend.dense_backward(view(x, x_shape), view(kernel, k_shape), view(grad_y, y_shape),
                                TensorView{}, view(dk_fast, k_shape), TensorView{});
    expect_close(dk_ref, dk_fast, kMaxGemmNmse, "dense grad_kernel without grad_x");
}

void TestKernels::maxpool_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("index");
    for (int i = 0; i < static_cast<int>(std::size(kPoolCases)); ++i) {
        add_isa_rows(kPoolCases[i].name, [&](QTestData& row) { row << i; });
    }
}

// Values from a small set (many ties: the first maximum must win) with NaNs sprinkled in (a NaN
// wins its window); backward once after the matching forward (the disjoint-window path) and
// once with an argmax buffer the backend has not seen (the reference path).
void TestKernels::maxpool() {
    QFETCH(QString, isa);
    QFETCH(int, index);
    SKIP_UNLESS_AVAILABLE(isa);
    const PoolCase& c = kPoolCases[index];
    const std::int32_t pad = c.same ? same_pad_left(c.length, c.pool_size, c.stride) : 0;
    const std::int64_t out_length = conv_output_length(c.length, c.pool_size, c.stride, c.same);
    const Pool1DParams params{c.pool_size, c.stride, pad};
    std::mt19937 rng(7 + index);
    std::uniform_int_distribution<int> level(-2, 2);
    std::vector<float> x(static_cast<std::size_t>(c.batch * c.length * c.channels));
    for (auto& value : x)
        value = rng() % 23 == 0 ? std::numeric_limits<float>::quiet_NaN() : float(level(rng));
    auto grad_y = random_values(rng, c.batch * out_length * c.channels);
    const Shape x_shape{c.batch, c.length, c.channels}, y_shape{c.batch, out_length, c.channels};

    CpuReferenceBackend reference;
    std::vector<float> y_ref(static_cast<std::size_t>(y_shape.numel())), dx_ref(x.size());
    std::vector<std::int32_t> arg_ref(y_ref.size());
    reference.maxpool1d_forward(view(x, x_shape), view(y_ref, y_shape), view(arg_ref, y_shape),
                                params);
    reference.maxpool1d_backward(view(grad_y, y_shape), view(arg_ref, y_shape),
                                 view(dx_ref, x_shape));

    CpuFastBackend fast_backend(*table);
    for (int threads : {1, 2}) {
        with_threads(threads, [&] {
            std::vector<float> y(y_ref.size(), 7.0f), dx(x.size(), 7.0f);
            std::vector<std::int32_t> arg(y_ref.size(), 7);
            fast_backend.maxpool1d_forward(view(x, x_shape), view(y, y_shape), view(arg, y_shape),
                                           params);
            expect_equal(y_ref, y, "maxpool forward");
            expect_equal(arg_ref, arg, "maxpool argmax");
            fast_backend.maxpool1d_backward(view(grad_y, y_shape), view(arg, y_shape),
                                            view(dx, x_shape));
            expect_equal(dx_ref, dx, "maxpool backward");
            std::vector<std::int32_t> unseen = arg;
            std::vector<float> dx_unseen(x.size(), 7.0f);
            fast_backend.maxpool1d_backward(view(grad_y, y_shape), view(unseen, y_shape),
                                            view(dx_unseen, x_shape));
            expect_equal(dx_ref, dx_unseen, "maxpool backward without its forward");
        });
    }
}

struct ConvPoolCase {
    const char* name;
    ConvCase conv;
    std::int32_t pool_size, stride;
    bool pool_same;
};

const ConvPoolCase kConvPoolCases[] = {
    {"model conv1 + pool", {"", 16, 300, 7, 5, 64, false}, 2, 2, false},
    {"model conv2 + pool", {"", 16, 148, 64, 3, 32, false}, 2, 2, false},
    {"batch 1 (split by rows)", {"", 1, 300, 7, 5, 64, false}, 2, 2, false},
    {"odd sizes, odd length left over", {"", 3, 14, 5, 3, 17, false}, 2, 2, false},
    // Pairs the GEMM cannot pool as it stores: a last row no window takes, clipped edge rows.
    {"pairs, odd conv length", {"", 3, 15, 5, 3, 17, false}, 2, 2, false},
    {"pairs, same conv", {"", 2, 12, 3, 3, 8, true}, 2, 2, false},
    {"same conv, gaps between windows", {"", 2, 11, 3, 4, 9, true}, 2, 3, false},
    {"same pooling, padded left", {"", 2, 12, 4, 3, 6, false}, 3, 3, true},
    {"overlapping windows (unfused backward)", {"", 2, 20, 5, 3, 8, false}, 3, 2, false},
};

void TestKernels::convReluPool_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("index");
    for (int i = 0; i < static_cast<int>(std::size(kConvPoolCases)); ++i) {
        add_isa_rows(kConvPoolCases[i].name, [&](QTestData& row) { row << i; });
    }
}

// The fused Conv1D + ReLU + MaxPooling1D writes every buffer the three ops write, bit for bit,
// forward and backward, on 1 and 2 threads; and stays close to the reference. (The convolution's
// output and its gradient are the ops' own room, backend.h: on one thread the CPU's fused ops keep
// one sample's there at a time and mark the windows the ReLU shuts in argmax, so on one thread
// only what they pass on is compared. A backward on two threads after such a forward still gets
// the same gradients.)
void TestKernels::convReluPool() {
    QFETCH(QString, isa);
    QFETCH(int, index);
    SKIP_UNLESS_AVAILABLE(isa);
    const ConvPoolCase& c = kConvPoolCases[index];
    const ConvCase& conv = c.conv;
    const std::int32_t conv_pad = conv.pad();
    const std::int64_t conv_length = conv.out_length();
    const std::int32_t pool_pad = c.pool_same ? same_pad_left(conv_length, c.pool_size, c.stride) : 0;
    const std::int64_t pooled_length = conv_output_length(conv_length, c.pool_size, c.stride, c.pool_same);
    const Pool1DParams pool{c.pool_size, c.stride, pool_pad};
    std::mt19937 rng(99 + index);
    auto x = random_values(rng, conv.batch * conv.length * conv.in_channels);
    auto kernel = random_values(rng, conv.window * conv.in_channels * conv.out_channels);
    auto bias = random_values(rng, conv.out_channels, -0.5f, 0.5f);  // about half the outputs below 0
    auto grad_y = random_values(rng, conv.batch * pooled_length * conv.out_channels);
    const Shape x_shape{conv.batch, conv.length, conv.in_channels};
    const Shape k_shape{conv.window, conv.in_channels, conv.out_channels};
    const Shape conv_shape{conv.batch, conv_length, conv.out_channels}, b_shape{conv.out_channels};
    const Shape pooled_shape{conv.batch, pooled_length, conv.out_channels};

    struct Result {
        std::vector<float> conv_y, y, grad_conv_y, grad_x, grad_kernel, grad_bias;
        std::vector<std::int32_t> argmax;
    };
    auto run = [&](Backend& backend, bool fused, int backward_threads = 0) {
        Result r;  // 7: garbage every op must overwrite
        r.conv_y.assign(static_cast<std::size_t>(conv_shape.numel()), 7.0f);
        r.grad_conv_y = r.conv_y;
        r.y.assign(static_cast<std::size_t>(pooled_shape.numel()), 7.0f);
        r.argmax.assign(r.y.size(), 7);
        r.grad_x.assign(x.size(), 7.0f);
        r.grad_kernel.assign(kernel.size(), 7.0f);
        r.grad_bias.assign(bias.size(), 7.0f);
        const TensorView xv = view(x, x_shape), kv = view(kernel, k_shape), conv_y = view(r.conv_y, conv_shape);
        const TensorView y = view(r.y, pooled_shape), argmax = view(r.argmax, pooled_shape);
        const TensorView dy = view(grad_y, pooled_shape), dconv = view(r.grad_conv_y, conv_shape);
        if (fused) {
            backend.conv1d_relu_maxpool1d_forward(xv, kv, view(bias, b_shape), conv_y, y, argmax,
                                                  Conv1DParams{conv_pad}, pool);
            auto backward = [&] {
                backend.conv1d_relu_maxpool1d_backward(xv, kv, conv_y, y, argmax, dy, dconv, view(r.grad_x, x_shape),
                                                       view(r.grad_kernel, k_shape), view(r.grad_bias, b_shape),
                                                       Conv1DParams{conv_pad});
            };
            if (backward_threads > 0) {
                with_threads(backward_threads, backward);
            } else {
                backward();
            }
        } else {
            backend.conv1d_forward(xv, kv, view(bias, b_shape), conv_y, Conv1DParams{conv_pad});
            backend.activation_forward(ActivationKind::ReLU, conv_y, conv_y);
            backend.maxpool1d_forward(conv_y, y, argmax, pool);
            backend.maxpool1d_backward(dy, argmax, dconv);
            backend.activation_backward(ActivationKind::ReLU, conv_y, dconv, dconv);
            backend.conv1d_backward(xv, kv, dconv, view(r.grad_x, x_shape), view(r.grad_kernel, k_shape),
                                    view(r.grad_bias, b_shape), Conv1DParams{conv_pad});
        }
        return r;
    };
    auto expect_same = [](const Result& expected, const Result& actual, const QString& what, bool all_kept) {
        if (all_kept) expect_identical_bits(expected.conv_y, actual.conv_y, qPrintable(what + ": conv output after ReLU"));
        expect_identical_bits(expected.y, actual.y, qPrintable(what + ": pooled"));
        if (all_kept) {
            expect_equal(expected.argmax, actual.argmax, qPrintable(what + ": argmax"));
        } else {
            // The winner, or -1 where the ReLU shuts the window (pooled value not above 0).
            QCOMPARE(actual.argmax.size(), expected.argmax.size());
            for (std::size_t i = 0; i < expected.argmax.size(); ++i) {
                const bool marked = actual.argmax[i] == -1 && !(expected.y[i] > 0.0f);
                QVERIFY2(actual.argmax[i] == expected.argmax[i] || marked,
                         qPrintable(QString("%1: argmax %2 is %3, the winner %4, pooled %5")
                                        .arg(what).arg(i).arg(actual.argmax[i]).arg(expected.argmax[i]).arg(expected.y[i])));
            }
        }
        expect_identical_bits(expected.grad_x, actual.grad_x, qPrintable(what + ": grad_x"));
        expect_identical_bits(expected.grad_kernel, actual.grad_kernel, qPrintable(what + ": grad_kernel"));
        expect_identical_bits(expected.grad_bias, actual.grad_bias, qPrintable(what + ": grad_bias"));
    };
    CpuReferenceBackend reference;
    const Result expected = run(reference, false);
    QVERIFY2(std::count(expected.conv_y.begin(), expected.conv_y.end(), 0.0f) > 0, "the case has no ReLU zeros");
    CpuFastBackend fast_backend(*table);
    for (int threads : {1, 2}) {
        with_threads(threads, [&] {
            const QString where = QString("%1 thread(s)").arg(threads);
            const Result unfused = run(fast_backend, false);
            const Result fused = run(fast_backend, true);
            expect_same(unfused, fused, "fused vs the three ops, " + where, threads > 1);
            if (threads > 1) expect_close(expected.conv_y, fused.conv_y, kMaxGemmNmse, "fused conv output vs reference");
            if (threads == 1 && std::count(fused.argmax.begin(), fused.argmax.end(), -1) > 0) {
                // The pooling in the GEMM's stores on one thread (shut windows marked): the
                // convolution's rows, which nothing reads, are not written at all.
                QVERIFY2(std::all_of(fused.conv_y.begin(), fused.conv_y.end(), [](float v) { return v == 7.0f; }),
                         "a pooled-only forward wrote the convolution's rows");
            }
            if (threads == 1) {
                const Result backward_on_two = run(fast_backend, true, 2);
                expect_same(unfused, backward_on_two, "fused, forward on 1 thread and backward on 2", false);
            }
            expect_close(expected.y, fused.y, kMaxGemmNmse, "fused pooled vs reference");
            expect_close(expected.grad_x, fused.grad_x, kMaxGemmNmse, "fused grad_x vs reference");
            expect_close(expected.grad_kernel, fused.grad_kernel, kMaxGemmNmse, "fused grad_kernel vs reference");
            expect_close(expected.grad_bias, fused.grad_bias, kMaxGemmNmse, "fused grad_bias vs reference");
        });
    }
}

void TestKernels::relu_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("count");
    for (int count : {1, 15, 16, 17, 100003}) {
        add_isa_rows(qPrintable(QString("%1 elements").arg(count)),
                     [&](QTestData& row) { row << count; });
    }
}

// Special values included: NaN stays NaN, -0 stays -0, infinities and denormals pass through.
void TestKernels::relu() {
    QFETCH(QString, isa);
    QFETCH(int, count);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(count);
    auto x = random_values(rng, count);
    auto grad_y = random_values(rng, count);
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              -0.0f,
                              0.0f,
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::denorm_min(),
                              -std::numeric_limits<float>::denorm_min()};
    for (std::size_t i = 0; i < std::size(specials) && i < x.size(); ++i)
        x[x.size() - 1 - i] = specials[i];
    const Shape shape{count};
    CpuReferenceBackend reference;
    CpuFastBackend fast_backend(*table);
    std::vector<float> y_ref(x.size()), y(x.size(), 7.0f), dx_ref(x.size()), dx(x.size(), 7.0f);
    reference.activation_forward(ActivationKind::ReLU, view(x, shape), view(y_ref, shape));
    reference.activation_backward(ActivationKind::ReLU, view(y_ref, shape), view(grad_y, shape),
                                  view(dx_ref, shape));
    with_threads(2, [&] {
        fast_backend.activation_forward(ActivationKind::ReLU, view(x, shape), view(y, shape));
        fast_backend.activation_backward(ActivationKind::ReLU, view(y, shape), view(grad_y, shape),
                                         view(dx, shape));
    });
    expect_identical_bits(y_ref, y, "relu forward");
    expect_identical_bits(dx_ref, dx, "relu backward");
    // In place, as the replica runs it.
    std::vector<float> in_place = x;
    fast_backend.activation_forward(ActivationKind::ReLU, view(in_place, shape),
                                    view(in_place, shape));
    expect_identical_bits(y_ref, in_place, "relu forward in place");
}

void TestKernels::transposeBlocks_data() { add_isa_only_rows(); }

// The transpose a block of 8 x 8 at a time (AVX2, AVX-512) and the edges element by element:
// every element where it belongs, for shapes around the block size and strides wider than the
// rows (a chunk of the Dense gradient's rows into its place in the batch), and nothing written
// between the destination's rows.
void TestKernels::transposeBlocks() {
    QFETCH(QString, isa);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(3);
    constexpr float kSentinel = 12345.0f;
    for (const std::int64_t rows : {1, 7, 8, 9, 16, 17, 35, 256}) {
        for (const std::int64_t cols : {1, 7, 8, 15, 16, 46, 64}) {
            const std::int64_t ld_src = cols + 3, ld_dst = rows + 5;
            const auto src = random_values(rng, rows * ld_src);
            std::vector<float> dst(static_cast<std::size_t>(cols * ld_dst), kSentinel);
            table->transpose(src.data(), rows, cols, ld_src, dst.data(), ld_dst);
            std::vector<float> expected(dst.size(), kSentinel);
            for (std::int64_t r = 0; r < rows; ++r) {
                for (std::int64_t c = 0; c < cols; ++c) expected[c * ld_dst + r] = src[r * ld_src + c];
            }
            expect_identical_bits(expected, dst, qPrintable(QStringLiteral("%1 x %2").arg(rows).arg(cols)));
        }
    }
}

void TestKernels::foldWindowsIntoRows_data() { add_isa_only_rows(); }

// The input gradient's fold over a transposed z (the fused Conv1D backward where its output rows
// fill more lanes than its K * Cin columns) gives fold_windows' sums bit for bit, straight into
// dx's rows, and writes nothing past them: 'valid' and 'same' padding, windows of 1 to 5, channel
// counts below, at and past a group of 8 (the narrow group's stores run into the next row), lengths
// shorter than a block, and -0 and NaN among the values (0 + -0 is +0 in both orders).
void TestKernels::foldWindowsIntoRows() {
    QFETCH(QString, isa);
    SKIP_UNLESS_AVAILABLE(isa);
    if (table->fold_windows_to_rows == nullptr) QSKIP("one float per vector: the backend never transposes z");
    std::mt19937 rng(11);
    constexpr std::size_t kGuard = 16;
    for (const std::int64_t length : {3, 9, 40, 300}) {
        for (const std::int64_t window : {1, 2, 3, 5}) {
            for (const std::int64_t channels : {1, 3, 7, 8, 9, 16, 17}) {
                for (const bool same : {false, true}) {
                    const std::int64_t pad = same ? (window - 1) / 2 : 0;
                    const std::int64_t out_length = same ? length : length - window + 1;
                    if (out_length <= 0) continue;
                    const std::int64_t depth = window * channels;
                    auto z = random_values(rng, out_length * depth);
                    z[0] = -0.0f;
                    if (z.size() > 3) z[3] = std::numeric_limits<float>::quiet_NaN();
                    std::vector<float> zt(z.size());
                    for (std::int64_t t = 0; t < out_length; ++t) {
                        for (std::int64_t j = 0; j < depth; ++j) zt[j * out_length + t] = z[t * depth + j];
                    }
                    std::vector<float> expected(static_cast<std::size_t>(length * channels), 7.0f);
                    table->fold_windows(z.data(), out_length, window, channels, pad, expected.data(), 0, length);
                    std::vector<float> rows(expected.size() + kGuard, 7.0f);
                    table->fold_windows_to_rows(zt.data(), out_length, window, channels, pad, rows.data(), length);
                    const QString shape = QStringLiteral("length %1, window %2, channels %3, %4")
                                              .arg(length).arg(window).arg(channels).arg(same ? "same" : "valid");
                    expect_identical_bits(expected, std::vector<float>(rows.begin(), rows.end() - kGuard),
                                          qPrintable(shape));
                    QVERIFY2(std::all_of(rows.end() - kGuard, rows.end(), [](float v) { return v == 7.0f; }),
                             qPrintable(shape + ": written past dx"));
                }
            }
        }
    }
}

void TestKernels::embeddingRows_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("width");
    for (int width : {1, 3, 7, 8, 9, 16, 17, 23}) {
        add_isa_rows(qPrintable(QString("width %1").arg(width)), [&](QTestData& row) { row << width; });
    }
}

// The Embedding's gather and scatter-add a vector per row: the reference's rows and sums bit for
// bit (NaN, infinities, -0 and denormals among the values; ids that repeat back to back, that are
// neighbours, the table's first and last rows, the batch's last position), and nothing written
// outside the rows: a row's tail vector reaches into the next row, which must keep its own bits.
// The buffers end exactly where the rows do, so that ASan sees a read or write past them; a second
// run in padded buffers checks that the padding keeps its sentinel.
void TestKernels::embeddingRows() {
    QFETCH(QString, isa);
    QFETCH(int, width);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(static_cast<unsigned>(width));
    constexpr float kSentinel = 12345.0f;
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min()};
    for (const std::int64_t rows : {1, 2, 5, 40}) {
        std::vector<std::int32_t> ids;
        for (std::int64_t r : {rows - 1, std::int64_t{0}, rows - 1, rows - 1, rows / 2, rows / 2 + 1, rows - 2}) {
            ids.push_back(static_cast<std::int32_t>(std::clamp<std::int64_t>(r, 0, rows - 1)));
        }
        for (int i = 0; i < 20; ++i) ids.push_back(static_cast<std::int32_t>(rng() % static_cast<unsigned>(rows)));
        ids.push_back(static_cast<std::int32_t>(rows - 1));  // the last position reads the last row
        const auto count = static_cast<std::int64_t>(ids.size());
        auto table_values = random_values(rng, rows * width);
        auto grad = random_values(rng, count * width);
        for (std::size_t i = 0; i < std::size(specials); ++i) {
            table_values[(i * 7) % table_values.size()] = specials[i];
            grad[(i * 11) % grad.size()] = specials[i];
        }
        for (const std::int64_t padding : {0, 16}) {
            const QByteArray what = QStringLiteral("%1 rows, padding %2").arg(rows).arg(padding).toUtf8();
            // The gather, against a row-by-row copy.
            std::vector<float> out(static_cast<std::size_t>(count * width + padding), kSentinel);
            table->embedding_gather(table_values.data(), rows, width, ids.data(), count, out.data());
            std::vector<float> expected_out;
            for (const std::int32_t id : ids) {
                expected_out.insert(expected_out.end(), table_values.begin() + id * width,
                                    table_values.begin() + (id + 1) * width);
            }
            expected_out.resize(out.size(), kSentinel);
            expect_identical_bits(expected_out, out, what.constData());
            // The scatter-add onto a table that already holds values (specials too), against
            // `row[d] += g[d]` position by position.
            std::vector<float> sums = table_values, expected_sums = table_values;
            sums.resize(static_cast<std::size_t>(rows * width + padding), kSentinel);
            expected_sums.resize(sums.size(), kSentinel);
            table->embedding_scatter_add(sums.data(), rows, width, ids.data(), count, grad.data());
            for (std::int64_t i = 0; i < count; ++i) {
                for (std::int64_t d = 0; d < width; ++d) expected_sums[ids[i] * width + d] += grad[i * width + d];
            }
            expect_identical_bits(expected_sums, sums, what.constData());
        }
    }
    // Through the backend, as the Embedding layer calls it: the reference's output and gradient.
    const std::int64_t rows = 50;
    std::vector<std::int32_t> ids(3 * 11);
    for (auto& id : ids) id = static_cast<std::int32_t>(rng() % rows);
    ids.front() = static_cast<std::int32_t>(rows - 1);
    ids.back() = static_cast<std::int32_t>(rows - 1);
    std::fill(ids.begin() + 1, ids.begin() + 9, 0);  // a padded sequence's run of zeros
    std::fill(ids.begin() + 20, ids.begin() + 23, 7);
    auto table_values = random_values(rng, rows * width), grad = random_values(rng, 33 * width);
    std::vector<float> out_ref(grad.size()), out(grad.size()), grad_ref(table_values.size()),
        grad_table(table_values.size(), 7.0f);
    CpuReferenceBackend reference;
    CpuFastBackend fast_backend(*table);
    const Shape ids_shape{3, 11}, rows_shape{3, 11, width}, table_shape{rows, width};
    reference.embedding_forward(view(ids, ids_shape), view(table_values, table_shape), view(out_ref, rows_shape));
    fast_backend.embedding_forward(view(ids, ids_shape), view(table_values, table_shape), view(out, rows_shape));
    expect_identical_bits(out_ref, out, "embedding forward");
    reference.embedding_backward(view(ids, ids_shape), view(grad, rows_shape), view(grad_ref, table_shape));
    fast_backend.embedding_backward(view(ids, ids_shape), view(grad, rows_shape), view(grad_table, table_shape));
    expect_identical_bits(grad_ref, grad_table, "embedding backward");
    // The row counts, runs of equal ids added at once.
    std::vector<float> counts_ref(static_cast<std::size_t>(rows)), counts(static_cast<std::size_t>(rows), 7.0f);
    reference.embedding_gradient_stats(view(ids, ids_shape), view(grad, rows_shape), TensorView{},
                                       view(counts_ref, Shape{rows}));
    fast_backend.embedding_gradient_stats(view(ids, ids_shape), view(grad, rows_shape), TensorView{},
                                          view(counts, Shape{rows}));
    expect_identical_bits(counts_ref, counts, "embedding row counts");
    QVERIFY2(counts[0] >= 8.0f, "the run of zeros was not counted");
}

void TestKernels::optimizers_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("count");
    for (OptimizerKind kind : {OptimizerKind::Adam, OptimizerKind::Nadam}) {
        for (int count : {1, 17, 65537, 332856}) {
            const QString name = QString("%1, %2 parameters")
                                     .arg(QString::fromUtf8(optimizer_name(kind).data()))
                                     .arg(count);
            add_isa_rows(qPrintable(name),
                         [&](QTestData& row) { row << static_cast<int>(kind) << count; });
        }
    }
}

// Three steps on the same buffers: weights and both slots stay bit-identical to the reference.
void TestKernels::optimizers() {
    QFETCH(QString, isa);
    QFETCH(int, kind);
    QFETCH(int, count);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(static_cast<unsigned>(count + kind));
    const std::vector<float> weights = random_values(rng, count, -0.1f, 0.1f);
    std::vector<float> w_ref = weights, m_ref(weights.size(), 0.0f), v_ref(weights.size(), 0.0f);
    std::vector<float> w = weights, m = m_ref, v = v_ref;
    OptimizerSchedule schedule(OptimizerConfig::defaults(static_cast<OptimizerKind>(kind)));
    CpuFastBackend fast_backend(*table);
    const Shape shape{count};
    for (int step_index = 0; step_index < 3; ++step_index) {
        auto grads = random_values(rng, count, -1e-3f, 1e-3f);
        if (count > 1) grads[1] = 0.0f;
        const OptimizerStep step = schedule.next_step();
        reference_apply_update(step, w_ref.data(), grads.data(), m_ref.data(), v_ref.data(),
                               weights.size());
        with_threads(2, [&] {
            fast_backend.apply_update(step, view(w, shape), view(grads, shape), view(m, shape),
                                      view(v, shape), {});
        });
    }
    expect_identical_bits(w_ref, w, "weights");
    expect_identical_bits(m_ref, m, "first moment");
    expect_identical_bits(v_ref, v, "second moment");
}

void TestKernels::nadamOnBatchRows_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("width");
    for (int rows : {3, 1000, 30979}) {  // 30,979: the tutorial's Embedding, several chunks of rows
        add_isa_rows(qPrintable(QString("%1 rows x 7").arg(rows)), [&](QTestData& row) { row << rows << 7; });
    }
    // Rows narrower than, as wide as, and wider than a vector: a vector's lanes span several rows,
    // one, or part of one.
    for (int width : {1, 3, 8, 16, 17, 64}) {
        add_isa_rows(qPrintable(QString("1000 rows x %1").arg(width)), [&](QTestData& row) { row << 1000 << width; });
    }
}

// TF2's sparse Nadam on an Embedding table (EmbeddingUpdate::TF2): runs of rows in and out of the
// batch, crossing the chunks the threads take, stay bit-identical to the reference over 3 steps.
void TestKernels::nadamOnBatchRows() {
    QFETCH(QString, isa);
    QFETCH(int, rows);
    QFETCH(int, width);
    SKIP_UNLESS_AVAILABLE(isa);
    const std::int64_t count = std::int64_t{rows} * width;
    std::mt19937 rng(static_cast<unsigned>(rows));
    const std::vector<float> weights = random_values(rng, static_cast<int>(count), -0.1f, 0.1f);
    std::vector<float> w_ref = weights, m_ref(weights.size(), 0.0f), v_ref(weights.size(), 0.0f);
    std::vector<float> w = weights, m = m_ref, v = v_ref;
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    CpuFastBackend fast_backend(*table);
    const Shape shape{rows, width};
    int rows_outside = 0;
    for (int step_index = 0; step_index < 3; ++step_index) {
        // A row is in this step's batch with probability 1/3 (runs of both kinds), and a row
        // outside has a zero gradient, as the embedding's backward pass leaves it.
        std::vector<float> counts(static_cast<std::size_t>(rows));
        for (auto& c : counts) c = static_cast<float>(std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 2 : 0);
        auto grads = random_values(rng, static_cast<int>(count), -1e-3f, 1e-3f);
        for (int r = 0; r < rows; ++r) {
            if (counts[static_cast<std::size_t>(r)] != 0.0f) continue;
            ++rows_outside;
            std::fill_n(grads.begin() + r * width, width, 0.0f);
        }
        const OptimizerStep step = schedule.next_step();
        reference_apply_update(step, w_ref.data(), grads.data(), m_ref.data(), v_ref.data(), weights.size(),
                               IndexedSlicesStats{nullptr, counts.data(), width});
        with_threads(2, [&] {
            fast_backend.apply_update(step, view(w, shape), view(grads, shape), view(m, shape), view(v, shape),
                                      IndexedSlicesViews{TensorView{}, view(counts, Shape{rows})});
        });
    }
    QVERIFY(rows_outside > 0);
    expect_identical_bits(w_ref, w, "weights");
    expect_identical_bits(m_ref, m, "first moment");
    expect_identical_bits(v_ref, v, "second moment");
}

void TestKernels::nadamRowsOutsideBatch_data() { add_isa_only_rows(); }

// The rows outside a batch: their moments decay, with gradients that are not zero (a product the
// compiler fused into an FMA would show here), as reference_apply_update's own expressions, and
// their weights stay; the one row inside is updated.
void TestKernels::nadamRowsOutsideBatch() {
    QFETCH(QString, isa);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(5);
    const int rows = 143, width = 7, count = rows * width;  // whole vectors and a partial one on every ISA
    const auto grads = random_values(rng, count, -1.0f, 1.0f);
    auto m = random_values(rng, count, -0.1f, 0.1f), v = random_values(rng, count, 0.0f, 0.1f);
    const auto weights = random_values(rng, count, -0.1f, 0.1f);
    auto w = weights, m_ref = m, v_ref = v;
    std::vector<float> counts(rows, 0.0f);
    const int updated_row = 77;
    counts[updated_row] = 1.0f;
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    const OptimizerStep step = schedule.next_step();
    for (int i = 0; i < count; ++i) {
        const auto k = static_cast<std::size_t>(i);
        m_ref[k] = step.beta_1 * m_ref[k] + step.one_minus_beta_1 * grads[k];
        v_ref[k] = step.beta_2 * v_ref[k] + step.one_minus_beta_2 * (grads[k] * grads[k]);
    }
    table->nadam_rows(step, w.data(), grads.data(), m.data(), v.data(), counts.data(), rows, width);
    expect_identical_bits(m_ref, m, "first moment");
    expect_identical_bits(v_ref, v, "second moment");
    for (int i = 0; i < count; ++i) {
        const bool in_batch = i / width == updated_row;
        QVERIFY2((w[static_cast<std::size_t>(i)] != weights[static_cast<std::size_t>(i)]) == in_batch,
                 qPrintable(QString("weight %1 (row %2) %3").arg(i).arg(i / width).arg(in_batch ? "kept" : "changed")));
    }
}

void TestKernels::nadamDeferredDecays_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("width");
    QTest::addColumn<bool>("every_row");  // every row in every batch: none owes, the kernel's queue fills
    add_isa_rows("30979 rows x 7", [&](QTestData& row) { row << 30979 << 7 << false; });  // the tutorial's table
    // Rows of one float, of part of a vector, of a whole one and of more (one vector at a time).
    for (int width : {1, 5, 8, 16, 17}) {
        add_isa_rows(qPrintable(QString("300 rows x %1").arg(width)),
                     [&](QTestData& row) { row << 300 << width << false; });
    }
    // 71 rows: the scan's last whole vector of counts and the rows after it end up in one queue.
    for (int rows : {71, 203}) {
        add_isa_rows(qPrintable(QString("%1 rows x 7, all in every batch").arg(rows)),
                     [&](QTestData& row) { row << rows << 7 << true; });
    }
}

// TF2's sparse Nadam with the decays of rows outside the batch deferred to the row's next batch
// (IndexedSlicesStats::moment_decays), over 40 steps in which some rows are in every batch, some
// in a few and some in none: the fast backend's and the reference's deferred updates give the
// weights of decaying every row at every step at each step, and after settle_moment_decays its
// moments, bit for bit. Rows owing nothing, one decay and dozens share the kernel's slots.
void TestKernels::nadamDeferredDecays() {
    QFETCH(QString, isa);
    QFETCH(int, rows);
    QFETCH(int, width);
    QFETCH(bool, every_row);
    SKIP_UNLESS_AVAILABLE(isa);
    const std::int64_t count = std::int64_t{rows} * width;
    std::mt19937 rng(static_cast<unsigned>(rows + width));
    const std::vector<float> weights = random_values(rng, static_cast<int>(count), -0.1f, 0.1f);
    const std::vector<float> first_m = random_values(rng, static_cast<int>(count), -1e-3f, 1e-3f);
    const std::vector<float> first_v = random_values(rng, static_cast<int>(count), 0.0f, 1e-5f);
    std::vector<float> w_eager = weights, m_eager = first_m, v_eager = first_v;
    std::vector<float> w_ref = weights, m_ref = first_m, v_ref = first_v;
    std::vector<float> w = weights, m = first_m, v = first_v;
    std::vector<std::int32_t> marks(static_cast<std::size_t>(rows) + 1, 0), marks_ref = marks;
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    CpuFastBackend fast_backend(*table);
    const Shape shape{rows, width};
    std::int64_t owed_most = 0;
    std::vector<std::int64_t> since_batch(static_cast<std::size_t>(rows), 0);
    for (int step_index = 0; step_index < 40; ++step_index) {
        // Row r is in a batch with probability 1 / (1 + r % 23): row 0 always, others rarely.
        std::vector<float> counts(static_cast<std::size_t>(rows), 0.0f);
        auto grads = random_values(rng, static_cast<int>(count), -1e-3f, 1e-3f);
        for (int r = 0; r < rows; ++r) {
            const auto k = static_cast<std::size_t>(r);
            if (every_row || (r % 97 != 96 && std::uniform_int_distribution<int>(0, r % 23)(rng) == 0)) {
                counts[k] = 1.0f;
                owed_most = std::max(owed_most, since_batch[k]);
                since_batch[k] = 0;
            } else {
                ++since_batch[k];
                std::fill_n(grads.begin() + r * width, width, 0.0f);
            }
        }
        const OptimizerStep step = schedule.next_step();
        reference_apply_update(step, w_eager.data(), grads.data(), m_eager.data(), v_eager.data(), weights.size(),
                               IndexedSlicesStats{nullptr, counts.data(), width});
        reference_apply_update(step, w_ref.data(), grads.data(), m_ref.data(), v_ref.data(), weights.size(),
                               IndexedSlicesStats{nullptr, counts.data(), width,
                                                  reinterpret_cast<std::uint32_t*>(marks_ref.data())});
        with_threads(2, [&] {
            fast_backend.apply_update(step, view(w, shape), view(grads, shape), view(m, shape), view(v, shape),
                                      IndexedSlicesViews{TensorView{}, view(counts, Shape{rows}),
                                                         view(marks, Shape{rows + 1})});
        });
        expect_identical_bits(w_eager, w_ref, "weights (reference, deferred decays)");
        expect_identical_bits(w_eager, w, "weights (fast, deferred decays)");
    }
    QCOMPARE(marks[static_cast<std::size_t>(rows)], 40);  // the clock counts the updates
    if (!every_row) {
        QVERIFY2(owed_most >= 10, "some batch row should have owed many decays");
        QVERIFY(m != m_eager);  // rows outside the last batch still owe: the deferral did defer
    }
    const OptimizerStep last = schedule.next_step();
    settle_moment_decays(last, m.data(), v.data(), reinterpret_cast<std::uint32_t*>(marks.data()), rows, width);
    settle_moment_decays(last, m_ref.data(), v_ref.data(), reinterpret_cast<std::uint32_t*>(marks_ref.data()), rows,
                         width);
    expect_identical_bits(m_eager, m, "first moment (fast, settled)");
    expect_identical_bits(v_eager, v, "second moment (fast, settled)");
    expect_identical_bits(m_eager, m_ref, "first moment (reference, settled)");
    expect_identical_bits(v_eager, v_ref, "second moment (reference, settled)");
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) QCOMPARE(marks[r], 40);
}

// The fast backend's update refuses deferred decays without the row counts they go with, as the
// reference does (a vectorised Nadam that ignored them would leave the counters meaning nothing).
void TestKernels::nadamDeferredDecaysNeedRowCounts() {
    std::vector<float> w(14, 0.5f), g(14, 0.1f), m(14, 0.0f), v(14, 0.0f);
    std::vector<std::int32_t> marks(3, 0);
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    CpuFastBackend backend;
    const Shape shape{2, 7};
    try {
        backend.apply_update(schedule.next_step(), view(w, shape), view(g, shape), view(m, shape), view(v, shape),
                             IndexedSlicesViews{TensorView{}, TensorView{}, view(marks, Shape{3})});
        QFAIL("the fast Nadam took deferred decays without row counts");
    } catch (const OpError& error) {
        QVERIFY2(QString(error.what()).contains("row counts"), error.what());
    }
    QCOMPARE(w, std::vector<float>(14, 0.5f));  // nothing moved
}

void TestKernels::sumOfSquares_data() { add_isa_only_rows(); }

// The gradient norms of the step view (sum_of_squares): the reference's double sum up to the order
// of the additions, for counts around the eight sums and the tutorial's 332,856 weights; a NaN or
// an infinity anywhere comes out as the reference's NaN or infinity.
void TestKernels::sumOfSquares() {
    QFETCH(QString, isa);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(5);
    CpuReferenceBackend reference;
    CpuFastBackend fast_backend(*table);
    for (const std::int64_t count : {0, 1, 7, 8, 9, 17, 1000, 332856}) {
        auto x = random_values(rng, count);
        for (std::int64_t i = 0; i < count; i += 97) x[static_cast<std::size_t>(i)] *= 1e-20f;  // tiny squares too
        const TensorView view_x{x.data(), {count}, DType::F32};
        const double expected = reference.sum_of_squares(view_x), actual = fast_backend.sum_of_squares(view_x);
        // Summed in another order, each sum's rounding error grows with the count of its additions.
        const double tolerance = static_cast<double>(count) * std::numeric_limits<double>::epsilon() * expected;
        QVERIFY2(std::abs(actual - expected) <= tolerance,
                 qPrintable(QStringLiteral("%1 floats: %2 against the reference's %3")
                                .arg(count)
                                .arg(actual, 0, 'g', 17)
                                .arg(expected, 0, 'g', 17)));
        if (count == 0) continue;
        for (const float odd : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
            auto with_odd = x;
            with_odd[static_cast<std::size_t>(count - 1)] = odd;
            const TensorView view{with_odd.data(), {count}, DType::F32};
            const double odd_expected = reference.sum_of_squares(view), odd_actual = fast_backend.sum_of_squares(view);
            QVERIFY2(std::isnan(odd_expected) ? std::isnan(odd_actual) : odd_actual == odd_expected,
                     qPrintable(QStringLiteral("%1 floats ending in %2: %3").arg(count).arg(odd).arg(odd_actual)));
        }
    }
}

void TestKernels::addAndFiniteCheck_data() {
    QTest::addColumn<QString>("isa");
    QTest::addColumn<int>("count");
    for (int count : {1, 15, 16, 17, 1000, 332856}) {
        add_isa_rows(qPrintable(QString("%1 elements").arg(count)),
                     [&](QTestData& row) { row << count; });
    }
}

void TestKernels::addAndFiniteCheck() {
    QFETCH(QString, isa);
    QFETCH(int, count);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(static_cast<unsigned>(count));
    auto a = random_values(rng, count), b = random_values(rng, count);
    const Shape shape{count};
    CpuReferenceBackend reference;
    CpuFastBackend fast_backend(*table);
    std::vector<float> sum_ref = a, sum = a;
    reference.add_inplace(view(sum_ref, shape), view(b, shape));
    fast_backend.add_inplace(view(sum, shape), view(b, shape));
    expect_identical_bits(sum_ref, sum, "add");

    QVERIFY(fast_backend.all_finite(view(a, shape)));
    const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity()};
    for (float value : bad) {
        for (int position : {0, count / 2, count - 1}) {
            std::vector<float> copy = a;
            copy[static_cast<std::size_t>(position)] = value;
            QCOMPARE(fast_backend.all_finite(view(copy, shape)),
                     reference.all_finite(view(copy, shape)));
            QVERIFY(!fast_backend.all_finite(view(copy, shape)));
        }
    }
    std::vector<float> extremes(static_cast<std::size_t>(count), std::numeric_limits<float>::max());
    QVERIFY(fast_backend.all_finite(view(extremes, shape)));

    // The all-reduce's add with the check riding on it: the same sum, and the verdict on the sum
    // (finite addends that overflow included), wherever the bad element sits in the vectors.
    std::vector<float> fused = a;
    QVERIFY(fast_backend.add_inplace_all_finite(view(fused, shape), view(b, shape)));
    expect_identical_bits(sum_ref, fused, "add_inplace_all_finite");
    for (float value : bad) {
        for (int position : {0, count / 2, count - 1}) {
            std::vector<float> dst = a, src = b;
            src[static_cast<std::size_t>(position)] = value;
            QVERIFY2(!fast_backend.add_inplace_all_finite(view(dst, shape), view(src, shape)),
                     qPrintable(QString("%1 at %2 not seen").arg(value).arg(position)));
        }
    }
    // The two-replica all-reduce's last add: the reference's sum in both buffers, the same verdict.
    for (Backend* backend : {static_cast<Backend*>(&fast_backend), static_cast<Backend*>(&reference)}) {
        std::vector<float> first = a, second = b;
        QVERIFY(backend->add_into_both_all_finite(view(first, shape), view(second, shape)));
        expect_identical_bits(sum_ref, first, "add_into_both_all_finite, the first buffer");
        expect_identical_bits(sum_ref, second, "add_into_both_all_finite, the second buffer");
        for (float value : bad) {
            for (int position : {0, count / 2, count - 1}) {
                std::vector<float> with_bad = a, other = b;
                with_bad[static_cast<std::size_t>(position)] = value;
                QVERIFY2(!backend->add_into_both_all_finite(view(other, shape), view(with_bad, shape)),
                         qPrintable(QString("%1 at %2 not seen").arg(value).arg(position)));
                QCOMPARE(std::isnan(other[static_cast<std::size_t>(position)]), std::isnan(value));
                expect_identical_bits(other, with_bad, "add_into_both_all_finite with a bad element");
            }
        }
    }
    for (Backend* backend : {static_cast<Backend*>(&fast_backend), static_cast<Backend*>(&reference)}) {
        std::vector<float> overflow = extremes;  // finite addends, an infinite sum
        QVERIFY2(!backend->add_inplace_all_finite(view(overflow, shape), view(extremes, shape)),
                 qPrintable(QString::fromStdString(std::string(backend->name())) + ": max + max taken as finite"));
        std::vector<float> first = extremes, second = extremes;
        QVERIFY2(!backend->add_into_both_all_finite(view(first, shape), view(second, shape)),
                 qPrintable(QString::fromStdString(std::string(backend->name())) + ": max + max taken as finite"));
    }
}

void TestKernels::nanAndInfPropagate_data() {
    QTest::addColumn<QString>("isa");
    add_isa_rows("conv and dense", [](QTestData&) {});
}

// A NaN or an infinity in an input reaches the same outputs as in the reference (an infinity
// times a zero weight is NaN in both).
void TestKernels::nanAndInfPropagate() {
    QFETCH(QString, isa);
    SKIP_UNLESS_AVAILABLE(isa);
    std::mt19937 rng(5);
    const Shape x_shape{2, 20, 3}, k_shape{3, 3, 20}, y_shape{2, 18, 20};
    auto x = random_values(rng, x_shape.numel());
    auto kernel = random_values(rng, k_shape.numel());
    x[10] = std::numeric_limits<float>::quiet_NaN();
    x[70] = std::numeric_limits<float>::infinity();
    kernel[5] = 0.0f;
    CpuReferenceBackend reference;
    CpuFastBackend fast_backend(*table);
    std::vector<float> y_ref(static_cast<std::size_t>(y_shape.numel())), y(y_ref.size());
    reference.conv1d_forward(view(x, x_shape), view(kernel, k_shape), TensorView{},
                             view(y_ref, y_shape), {});
    fast_backend.conv1d_forward(view(x, x_shape), view(kernel, k_shape), TensorView{},
                                view(y, y_shape), {});
    expect_close(y_ref, y, kMaxGemmNmse, "conv1d forward with NaN and Inf");

    const Shape dx_shape{4, 30}, dk_shape{30, 5}, dy_shape{4, 5};
    auto dx = random_values(rng, dx_shape.numel());
    auto dk = random_values(rng, dk_shape.numel());
    dx[3] = -std::numeric_limits<float>::infinity();
    dk[40] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> d_ref(static_cast<std::size_t>(dy_shape.numel())), d(d_ref.size());
    reference.dense_forward(view(dx, dx_shape), view(dk, dk_shape), TensorView{},
                            view(d_ref, dy_shape));
    fast_backend.dense_forward(view(dx, dx_shape), view(dk, dk_shape), TensorView{},
                               view(d, dy_shape));
    expect_close(d_ref, d, kMaxGemmNmse, "dense forward with NaN and Inf");
}

void TestKernels::errorsReadAsTheReference() {
    CpuReferenceBackend reference;
    CpuFastBackend fast_backend;
    std::vector<float> x(2 * 5 * 3), kernel(3 * 4 * 2), y(2 * 3 * 2);
    auto message = [](const std::function<void()>& run) {
        try {
            run();
        } catch (const OpError& error) {
            return std::string(error.what());
        }
        return std::string("no error");
    };
    auto conv = [&](Backend& backend) {
        return message([&] {
            backend.conv1d_forward(view(x, Shape{2, 5, 3}), view(kernel, Shape{3, 4, 2}),
                                   TensorView{}, view(y, Shape{2, 3, 2}), {});
        });
    };
    QCOMPARE(conv(fast_backend), conv(reference));
    QVERIFY(conv(fast_backend).find("[conv1d] input has 3 channels, kernel expects 4") !=
            std::string::npos);
    auto dense = [&](Backend& backend) {
        return message([&] {
            backend.dense_forward(view(x, Shape{2, 15}), view(kernel, Shape{12, 2}), TensorView{},
                                  view(y, Shape{2, 2}));
        });
    };
    QCOMPARE(dense(fast_backend), dense(reference));
    std::vector<float> w(4), g(5);
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    const OptimizerStep step = schedule.next_step();
    auto update = [&](Backend& backend) {
        return message([&] {
            backend.apply_update(step, view(w, Shape{4}), view(g, Shape{5}), view(w, Shape{4}),
                                 view(w, Shape{4}), {});
        });
    };
    QCOMPARE(update(fast_backend), update(reference));
}

// The steady-state training step must not allocate: after one warm-up call (pool threads,
// scratch buffers) every op of the model's step runs without a single allocation.
void TestKernels::warmKernelsDoNotAllocate() {
    std::mt19937 rng(3);
    auto x1 = random_values(rng, 16 * 300 * 7), k1 = random_values(rng, 5 * 7 * 64),
         b1 = random_values(rng, 64);
    std::vector<float> y1(16 * 296 * 64), p1(16 * 148 * 64), dx1(x1.size()), dk1(k1.size()),
        db1(64);
    std::vector<std::int32_t> a1(p1.size());
    auto wd = random_values(rng, 2336 * 46), bd = random_values(rng, 46);
    std::vector<float> yd(16 * 46), dxd(16 * 2336), dwd(wd.size()), dbd(46);
    std::vector<float> m(wd.size()), v(wd.size());
    OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
    const OptimizerStep step = schedule.next_step();
    CpuFastBackend backend;
    auto one_step = [&] {
        const Shape xs{16, 300, 7}, ks{5, 7, 64}, ys{16, 296, 64}, ps{16, 148, 64};
        backend.conv1d_forward(view(x1, xs), view(k1, ks), view(b1, Shape{64}), view(y1, ys), {});
        backend.activation_forward(ActivationKind::ReLU, view(y1, ys), view(y1, ys));
        backend.maxpool1d_forward(view(y1, ys), view(p1, ps), view(a1, ps), Pool1DParams{2, 2, 0});
        backend.dense_forward(view(p1, Shape{16, 9472}).slice(0, Shape{16, 2336}),
                              view(wd, Shape{2336, 46}), view(bd, Shape{46}),
                              view(yd, Shape{16, 46}));
        backend.dense_backward(view(p1, Shape{16, 9472}).slice(0, Shape{16, 2336}),
                               view(wd, Shape{2336, 46}), view(yd, Shape{16, 46}),
                               view(dxd, Shape{16, 2336}), view(dwd, Shape{2336, 46}),
                               view(dbd, Shape{46}));
        backend.maxpool1d_backward(view(p1, ps), view(a1, ps), view(y1, ys));
        backend.activation_backward(ActivationKind::ReLU, view(y1, ys), view(y1, ys), view(y1, ys));
        backend.conv1d_backward(view(x1, xs), view(k1, ks), view(y1, ys), view(dx1, xs),
                                view(dk1, ks), view(db1, Shape{64}), {});
        backend.apply_update(step, view(wd, Shape{2336 * 46}), view(dwd, Shape{2336 * 46}),
                             view(m, Shape{2336 * 46}), view(v, Shape{2336 * 46}), {});
        backend.add_inplace(view(dwd, Shape{2336 * 46}), view(dwd, Shape{2336 * 46}));
        QVERIFY(backend.all_finite(view(wd, Shape{2336 * 46})));
    };
    // The views are built first (their shapes allocate); only the ops run while counting.
    auto count_allocations = [](const std::function<void()>& run) {
        const long before = g_allocations.load();
        run();
        return g_allocations.load() - before;
    };
    for (int threads : {1, 2}) {
        with_threads(threads, [&] {
            one_step();
            const Shape xs{16, 300, 7}, ks{5, 7, 64}, ys{16, 296, 64}, ps{16, 148, 64}, bs{64};
            const Shape dense_in{16, 2336}, dense_k{2336, 46}, dense_out{16, 46}, units{46},
                flat{2336 * 46};
            const TensorView vx = view(x1, xs), vk = view(k1, ks), vb = view(b1, bs),
                             vy = view(y1, ys);
            const TensorView vp = view(p1, ps), va = view(a1, ps), vdx = view(dx1, xs),
                             vdk = view(dk1, ks);
            const TensorView vdb = view(db1, bs),
                             vin = view(p1, ps).reshaped(Shape{16, 9472}).slice(0, dense_in);
            const TensorView vwd = view(wd, dense_k), vbd = view(bd, units),
                             vyd = view(yd, dense_out);
            const TensorView vdxd = view(dxd, dense_in), vdwd = view(dwd, dense_k),
                             vdbd = view(dbd, units);
            const TensorView fw = view(wd, flat), fg = view(dwd, flat), fm = view(m, flat),
                             fv = view(v, flat);
            const long ops = count_allocations([&] {
                backend.conv1d_forward(vx, vk, vb, vy, {});
                backend.activation_forward(ActivationKind::ReLU, vy, vy);
                backend.maxpool1d_forward(vy, vp, va, Pool1DParams{2, 2, 0});
                backend.dense_forward(vin, vwd, vbd, vyd);
                backend.dense_backward(vin, vwd, vyd, vdxd, vdwd, vdbd);
                backend.maxpool1d_backward(vp, va, vy);
                backend.activation_backward(ActivationKind::ReLU, vy, vy, vy);
                backend.conv1d_backward(vx, vk, vy, vdx, vdk, vdb, {});
                backend.apply_update(step, fw, fg, fm, fv, {});
                backend.add_inplace(fg, fg);
                (void)backend.all_finite(fw);
            });
            QCOMPARE(ops, 0L);
        });
    }
}

// Two backends alive (two replicas) share the pool: each gets half of it; one alone gets all.
void TestKernels::threadsShareOnePool() {
    with_threads(2, [] {
        CpuFastBackend first;
        QCOMPARE(first.threads(), 2);
        {
            CpuFastBackend second;
            QCOMPARE(first.threads(), 1);
            QCOMPARE(second.threads(), 1);
        }
        QCOMPARE(first.threads(), 2);
    });
    // An exception thrown in a chunk reaches the caller after every chunk finished.
    ThreadPool pool(2);
    std::atomic<int> ran{0};
    bool caught = false;
    try {
        pool.parallel_for(8, 2, [&](std::int64_t i) {
            ++ran;
            if (i == 3) throw OpError("chunk 3 failed");
        });
    } catch (const OpError&) {
        caught = true;
    }
    QVERIFY(caught);
    QCOMPARE(ran.load(), 8);
}

// Isolated timings at the reference model's shapes (median of repeats; MIRRORLAB_KERNEL_PERF=1).
void TestKernels::benchmarkKernels() {
    if (std::getenv("MIRRORLAB_KERNEL_PERF") == nullptr)
        QSKIP("set MIRRORLAB_KERNEL_PERF=1 for the kernel timings");
    const int repeats = 51;
    std::mt19937 rng(11);
    CpuReferenceBackend reference;
    std::printf("\n%-40s %10s %12s %12s %10s\n", "kernel (batch 16 unless noted)", "reference",
                "fast 1 thr", "fast 2 thr", "GFLOP/s");
    auto row = [&](const char* name, double flops, const std::function<void(Backend&)>& op) {
        const double ref_ms = median_ms([&] { op(reference); }, repeats / 5 + 1);
        double fast_ms[2] = {0, 0};
        for (int threads : {1, 2}) {
            with_threads(threads, [&] {
                CpuFastBackend backend;
                fast_ms[threads - 1] = median_ms([&] { op(backend); }, repeats);
            });
        }
        std::printf("%-40s %8.3f ms %9.3f ms %9.3f ms %10.1f\n", name, ref_ms, fast_ms[0],
                    fast_ms[1], flops > 0 ? flops / fast_ms[0] / 1e6 : 0.0);
    };
    struct Conv {
        const char* name;
        std::int64_t batch, length, cin, window, cout;
    };
    for (const Conv& c : {Conv{"conv1", 16, 300, 7, 5, 64}, Conv{"conv2", 16, 148, 64, 3, 32},
                          Conv{"conv1 (batch 32)", 32, 300, 7, 5, 64},
                          Conv{"conv2 (batch 32)", 32, 148, 64, 3, 32}}) {
        const std::int64_t out = c.length - c.window + 1;
        auto x = random_values(rng, c.batch * c.length * c.cin),
             k = random_values(rng, c.window * c.cin * c.cout);
        auto b = random_values(rng, c.cout), dy = random_values(rng, c.batch * out * c.cout);
        std::vector<float> y(dy.size()), dx(x.size()), dk(k.size()), db(b.size());
        const Shape xs{c.batch, c.length, c.cin}, ks{c.window, c.cin, c.cout},
            ys{c.batch, out, c.cout}, bs{c.cout};
        const double flops = 2.0 * c.batch * out * c.cout * c.cin * c.window;
        row((std::string(c.name) + " forward").c_str(), flops, [&](Backend& be) {
            be.conv1d_forward(view(x, xs), view(k, ks), view(b, bs), view(y, ys), {});
        });
        row((std::string(c.name) + " backward (x, kernel, bias)").c_str(), 2 * flops,
            [&](Backend& be) {
                be.conv1d_backward(view(x, xs), view(k, ks), view(dy, ys), view(dx, xs),
                                   view(dk, ks), view(db, bs), {});
            });
        row((std::string(c.name) + " backward (kernel, bias)").c_str(), flops, [&](Backend& be) {
            be.conv1d_backward(view(x, xs), view(k, ks), view(dy, ys), TensorView{}, view(dk, ks),
                               view(db, bs), {});
        });
    }
    // Conv1D(relu) + MaxPooling1D(2), forward and backward: the three ops one after the other
    // against the fused op (which takes one sample at a time through all three while it is in cache).
    for (const Conv& c : {Conv{"conv1", 16, 300, 7, 5, 64}, Conv{"conv2", 16, 148, 64, 3, 32}}) {
        const std::int64_t out = c.length - c.window + 1, pooled = out / 2;
        auto x = random_values(rng, c.batch * c.length * c.cin), k = random_values(rng, c.window * c.cin * c.cout);
        auto b = random_values(rng, c.cout, -0.5f, 0.5f), dy = random_values(rng, c.batch * pooled * c.cout);
        std::vector<float> conv_y(static_cast<std::size_t>(c.batch * out * c.cout)), grad_conv_y(conv_y.size());
        std::vector<float> y(dy.size()), dx(x.size()), dk(k.size()), db(b.size());
        std::vector<std::int32_t> arg(dy.size());
        const Shape xs{c.batch, c.length, c.cin}, ks{c.window, c.cin, c.cout}, cs{c.batch, out, c.cout},
            ys{c.batch, pooled, c.cout}, bs{c.cout};
        const double flops = 3 * 2.0 * c.batch * out * c.cout * c.cin * c.window;
        const Pool1DParams pool{2, 2, 0};
        row((std::string(c.name) + "+relu+pool fwd+bwd, 3 ops").c_str(), flops, [&](Backend& be) {
            be.conv1d_forward(view(x, xs), view(k, ks), view(b, bs), view(conv_y, cs), {});
            be.activation_forward(ActivationKind::ReLU, view(conv_y, cs), view(conv_y, cs));
            be.maxpool1d_forward(view(conv_y, cs), view(y, ys), view(arg, ys), pool);
            be.maxpool1d_backward(view(dy, ys), view(arg, ys), view(grad_conv_y, cs));
            be.activation_backward(ActivationKind::ReLU, view(conv_y, cs), view(grad_conv_y, cs),
                                   view(grad_conv_y, cs));
            be.conv1d_backward(view(x, xs), view(k, ks), view(grad_conv_y, cs), view(dx, xs), view(dk, ks),
                               view(db, bs), {});
        });
        row((std::string(c.name) + "+relu+pool fwd+bwd, fused").c_str(), flops, [&](Backend& be) {
            be.conv1d_relu_maxpool1d_forward(view(x, xs), view(k, ks), view(b, bs), view(conv_y, cs), view(y, ys),
                                             view(arg, ys), {}, pool);
            be.conv1d_relu_maxpool1d_backward(view(x, xs), view(k, ks), view(conv_y, cs), view(y, ys), view(arg, ys),
                                              view(dy, ys),
                                              view(grad_conv_y, cs), view(dx, xs), view(dk, ks), view(db, bs), {});
        });
    }
    {
        auto x = random_values(rng, 16 * 2336), k = random_values(rng, 2336 * 46),
             b = random_values(rng, 46);
        auto dy = random_values(rng, 16 * 46);
        std::vector<float> y(16 * 46), dx(x.size()), dk(k.size()), db(46);
        const Shape xs{16, 2336}, ks{2336, 46}, ys{16, 46}, bs{46};
        const double flops = 2.0 * 16 * 2336 * 46;
        row("dense forward", flops, [&](Backend& be) {
            be.dense_forward(view(x, xs), view(k, ks), view(b, bs), view(y, ys));
        });
        row("dense backward", 2 * flops, [&](Backend& be) {
            be.dense_backward(view(x, xs), view(k, ks), view(dy, ys), view(dx, xs), view(dk, ks),
                              view(db, bs));
        });
    }
    {
        auto x = random_values(rng, 16 * 296 * 64), dy = random_values(rng, 16 * 148 * 64);
        std::vector<float> y(dy.size()), dx(x.size());
        std::vector<std::int32_t> arg(dy.size());
        const Shape xs{16, 296, 64}, ys{16, 148, 64};
        row("relu forward [16,296,64]", 0, [&](Backend& be) {
            be.activation_forward(ActivationKind::ReLU, view(x, xs), view(dx, xs));
        });
        row("relu backward [16,296,64]", 0, [&](Backend& be) {
            be.activation_backward(ActivationKind::ReLU, view(x, xs), view(dx, xs), view(dx, xs));
        });
        row("maxpool forward+backward [16,296,64]", 0, [&](Backend& be) {
            be.maxpool1d_forward(view(x, xs), view(y, ys), view(arg, ys), Pool1DParams{2, 2, 0});
            be.maxpool1d_backward(view(dy, ys), view(arg, ys), view(dx, xs));
        });
        std::vector<float> table_grad(30982 * 7);
        std::vector<std::int32_t> ids(16 * 300);
        for (auto& id : ids) id = static_cast<std::int32_t>(rng() % 30982);
        std::vector<float> embedding_table = random_values(rng, 30982 * 7);
        row("embedding forward [30982,7]", 0, [&](Backend& be) {
            be.embedding_forward(view(ids, Shape{16, 300}), view(embedding_table, Shape{30982, 7}),
                                 view(dx, Shape{16, 300, 7}));
        });
        row("embedding backward [30982,7]", 0, [&](Backend& be) {
            be.embedding_backward(view(ids, Shape{16, 300}), view(dx, Shape{16, 300, 7}),
                                  view(table_grad, Shape{30982, 7}));
        });
    }
    {
        const std::int64_t n = 332856;
        auto w = random_values(rng, n), g = random_values(rng, n, -1e-3f, 1e-3f);
        std::vector<float> m(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n));
        OptimizerSchedule schedule(OptimizerConfig::defaults(OptimizerKind::Nadam));
        const OptimizerStep step = schedule.next_step();
        row("nadam update (332,856)", 0, [&](Backend& be) {
            be.apply_update(step, view(w, Shape{n}), view(g, Shape{n}), view(m, Shape{n}),
                            view(v, Shape{n}), {});
        });
        // The tutorial's Embedding under TF2's sparse Nadam: a batch of 16 wires touches ~15 % of
        // the rows; the others only decay their moments.
        const std::int64_t rows = 30982, width = 7;
        std::vector<float> counts(static_cast<std::size_t>(rows), 0.0f);
        for (auto& c : counts) c = std::uniform_int_distribution<int>(0, 99)(rng) < 15 ? 1.0f : 0.0f;
        row("nadam embedding, 15% rows (30982x7)", 0, [&](Backend& be) {
            be.apply_update(step, view(w, Shape{rows, width}), view(g, Shape{rows, width}),
                            view(m, Shape{rows, width}), view(v, Shape{rows, width}),
                            IndexedSlicesViews{TensorView{}, view(counts, Shape{rows})});
        });
        row("add (all-reduce, 332,856)", 0,
            [&](Backend& be) { be.add_inplace(view(m, Shape{n}), view(g, Shape{n})); });
        row("all_finite (332,856)", 0,
            [&](Backend& be) { QVERIFY(be.all_finite(view(w, Shape{n}))); });
    }
}

QTEST_APPLESS_MAIN(TestKernels)
#include "test_kernels.moc"
