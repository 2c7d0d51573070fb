// Every op on every available backend against the CPU reference, in the manner of ggml's
// test-backend-ops: the same inputs go to CpuReferenceBackend (host memory) and to each backend
// under test (its own memory), and every tensor afterwards is compared — NaN/Inf positions must
// agree, integers exactly, floats by normalised mean squared error under a per-op tolerance (0
// means bit for bit, which the optimizer, dropout, copies and pooling promise). Misuse must fail
// with the reference's message. Then whole-model checks on the GPU: a 20-step training run
// against the CPU, mirrored training on 2 and 4 virtual GPUs against one GPU, memory limits,
// NCCL where there are two GPUs, and (MIRRORLAB_GPU_BENCHMARK=1) a short throughput benchmark.
//
// Backends: "cpu" (make_cpu_backend(), the CPU devices' backend; "cpu-copied" runs it through the
// upload/download path the GPU rows take), "cuda" (cuDNN convolutions)
// and "cuda-direct" (the direct convolution kernels). Without a GPU the CUDA rows are skipped
// with the plugin's reason ("no GPU: no CUDA driver found: ...").
#include <QtTest/QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend/cpu_reference.h"
#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/distribute/mirrored.h"
#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/model/replica.h"
#include "core/optim/optimizer.h"
#include "core/util/error.h"
#include "gpu/host_cost_model.h"
#include "support/compare.h"

using namespace mirrorlab;

namespace {

constexpr float kSentinel = 777.0f;  // outputs start as this on every backend
constexpr std::int64_t kMiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// The GPU, if this machine has one and the plugin loads.

// Set by CTest's test_gpu_ops_emulated: the plugin built on the CUDA host emulator
// (tests/cuda_emulation), whose GPU cases must then run, not skip.
std::string emulated_plugin_dir() {
    const char* dir = std::getenv("MIRRORLAB_TEST_GPU_PLUGIN_DIR");
    return dir != nullptr ? std::string(dir) : std::string();
}

struct GpuState {
    DeviceRegistry registry;
    PluginLoadResult plugin;
    DeviceProvider* provider = nullptr;
    std::vector<int> indices;  // physical GPU indices
    std::string skip_reason;
};

GpuState& gpu() {
    static GpuState* state = [] {
        auto* s = new GpuState();
        std::vector<std::string> dirs;
        if (!emulated_plugin_dir().empty()) {
            dirs.push_back(emulated_plugin_dir());  // that plugin and no other
        } else {
            if (!std::string(MIRRORLAB_CUDA_PLUGIN_DIR).empty()) dirs.emplace_back(MIRRORLAB_CUDA_PLUGIN_DIR);
            for (const auto& dir : gpu_plugin_search_dirs()) dirs.push_back(dir);
        }
        s->plugin = load_gpu_plugin(s->registry, dirs);
        for (const auto& device : s->registry.physical_devices()) {
            if (device.type == DeviceType::GPU) s->indices.push_back(device.index);
        }
        if (!s->indices.empty()) {
            s->provider = s->registry.provider(DeviceType::GPU);
        } else {
            s->skip_reason = "no GPU: " + s->plugin.status;
        }
        return s;
    }();
    return *state;
}

#define REQUIRE_GPU()                                                \
    do {                                                             \
        if (gpu().provider == nullptr) QSKIP(gpu().skip_reason.c_str()); \
    } while (false)

std::string gpu_spec(const std::string& suffix = "") {
    return "gpu:" + std::to_string(gpu().indices.front()) + suffix;
}

// ---------------------------------------------------------------------------------------------
// Backends under test.

// CpuCopied runs the CPU backend through the same allocate/upload/download path as the GPU, so the
// harness itself is exercised on machines without a GPU.
enum class TargetKind { Invalid = 0, Cpu, CpuCopied, Cuda, CudaDirect };

const char* target_name(TargetKind kind) {
    switch (kind) {
        case TargetKind::Cpu: return "cpu";
        case TargetKind::CpuCopied: return "cpu-copied";
        case TargetKind::Cuda: return "cuda";
        case TargetKind::CudaDirect: return "cuda-direct";
        case TargetKind::Invalid: break;
    }
    return "invalid";
}

struct Target {
    std::unique_ptr<Backend> backend;
    std::shared_ptr<RawAllocator> allocator;  // null: host memory
};

Target& target(TargetKind kind) {
    static std::map<TargetKind, Target> targets;
    auto it = targets.find(kind);
    if (it != targets.end()) return it->second;
    Target made;
    if (kind == TargetKind::Cpu || kind == TargetKind::CpuCopied) {
        made.backend = make_cpu_backend();
        if (kind == TargetKind::CpuCopied) made.allocator = std::make_shared<HostAllocator>();
    } else {
        const int index = gpu().indices.front();
        if (kind == TargetKind::CudaDirect) qputenv("MIRRORLAB_CUDA_CONV", "direct");
        made.backend = gpu().provider->create_backend(index);
        qunsetenv("MIRRORLAB_CUDA_CONV");
        made.allocator = gpu().provider->create_allocator(index);
    }
    return targets.emplace(kind, std::move(made)).first->second;
}

// ---------------------------------------------------------------------------------------------
// Op cases: host tensors, the call, the tolerance.

struct HostTensor {
    Shape shape;
    DType dtype = DType::F32;
    std::vector<float> f;
    std::vector<std::int32_t> i;
    bool present = true;  // false: passed as an empty view (an optional output left out)

    std::int64_t bytes() const { return shape.numel() * 4; }
    void* data() { return dtype == DType::I32 ? static_cast<void*>(i.data()) : static_cast<void*>(f.data()); }
};

HostTensor f32(Shape shape, std::vector<float> values) {
    HostTensor t;
    t.shape = std::move(shape);
    t.f = std::move(values);
    if (static_cast<std::int64_t>(t.f.size()) != t.shape.numel()) qFatal("test bug: values do not fit the shape");
    return t;
}

HostTensor i32(Shape shape, std::vector<std::int32_t> values) {
    HostTensor t;
    t.shape = std::move(shape);
    t.dtype = DType::I32;
    t.i = std::move(values);
    if (static_cast<std::int64_t>(t.i.size()) != t.shape.numel()) qFatal("test bug: values do not fit the shape");
    return t;
}

HostTensor output(Shape shape, DType dtype = DType::F32) {
    const auto n = static_cast<std::size_t>(shape.numel());
    if (dtype == DType::I32) return i32(std::move(shape), std::vector<std::int32_t>(n, -777));
    return f32(std::move(shape), std::vector<float>(n, kSentinel));
}

HostTensor absent() {
    HostTensor t;
    t.present = false;
    return t;
}

struct Scalars {
    std::vector<double> approx;       // compared relatively (1e-9)
    std::vector<std::int64_t> exact;  // compared exactly
};

using Views = std::vector<TensorView>;

struct OpCase {
    std::string name;
    double tolerance = 0.0;  // normalised MSE bound for float tensors; 0: bit for bit
    std::vector<HostTensor> tensors;
    std::function<Scalars(Backend&, const Views&)> run;
    std::string layer_op;  // a layer type's own op (OpDef) that the case runs through run_op, if any
    // Token ids outside the vocabulary: the CPU reference reports them, a GPU trusts ids that
    // check_batch passed on the host (issue #21), so the case is the CPU's alone.
    bool ids_checked_by_caller = false;
};

Scalars none() { return {}; }

Scalars from_counts(const LossCounts& counts) {
    return {{counts.loss_sum}, {counts.correct, counts.top_k_correct, counts.samples}};
}

std::vector<float> uniform(std::mt19937& rng, std::int64_t count, float low = -1.0f, float high = 1.0f) {
    std::uniform_real_distribution<float> distribution(low, high);
    std::vector<float> values(static_cast<std::size_t>(count));
    for (auto& v : values) v = distribution(rng);
    return values;
}

std::vector<std::int32_t> integers(std::mt19937& rng, std::int64_t count, std::int32_t low, std::int32_t high) {
    std::uniform_int_distribution<std::int32_t> distribution(low, high);
    std::vector<std::int32_t> values(static_cast<std::size_t>(count));
    for (auto& v : values) v = distribution(rng);
    return values;
}

TensorView host_view(HostTensor& t) { return {t.data(), t.shape, t.dtype}; }

void add_embedding_cases(std::vector<OpCase>& cases) {
    std::mt19937 rng(11);
    cases.push_back({"embedding_forward", 0.0,
                     {i32({4, 12}, integers(rng, 48, 0, 49)), f32({50, 7}, uniform(rng, 350)), output({4, 12, 7})},
                     [](Backend& b, const Views& v) { b.embedding_forward(v[0], v[1], v[2]); return none(); }});
    auto ids = integers(rng, 48, 0, 49);
    ids[17] = 50;
    cases.push_back({"embedding_forward_bad_id", 0.0,
                     {i32({4, 12}, ids), f32({50, 7}, uniform(rng, 350)), output({4, 12, 7})},
                     [](Backend& b, const Views& v) { b.embedding_forward(v[0], v[1], v[2]); return none(); },
                     "", true});
    // Few distinct ids, so rows receive many gradients (the scatter-add's collisions).
    cases.push_back({"embedding_backward", 1e-10,
                     {i32({4, 12}, integers(rng, 48, 0, 9)), f32({4, 12, 7}, uniform(rng, 336)), output({10, 7})},
                     [](Backend& b, const Views& v) { b.embedding_backward(v[0], v[1], v[2]); return none(); }});
    // The IndexedSlices statistics: squares summed per row in any order (atomics), counts exact.
    const auto stats_ids = integers(rng, 48, 0, 9);
    const auto stats_grads = uniform(rng, 336);
    cases.push_back({"embedding_gradient_stats", 1e-10,
                     {i32({4, 12}, stats_ids), f32({4, 12, 7}, stats_grads), output({10, 7}), output({10})},
                     [](Backend& b, const Views& v) { b.embedding_gradient_stats(v[0], v[1], v[2], v[3]); return none(); }});
    cases.push_back({"embedding_gradient_stats_squares_only", 1e-10,
                     {i32({4, 12}, stats_ids), f32({4, 12, 7}, stats_grads), output({10, 7}), absent()},
                     [](Backend& b, const Views& v) { b.embedding_gradient_stats(v[0], v[1], v[2], v[3]); return none(); }});
    cases.push_back({"embedding_gradient_stats_counts_only", 0.0,
                     {i32({4, 12}, stats_ids), f32({4, 12, 7}, stats_grads), absent(), output({10})},
                     [](Backend& b, const Views& v) { b.embedding_gradient_stats(v[0], v[1], v[2], v[3]); return none(); }});
    auto bad = integers(rng, 48, 0, 9);
    bad[3] = -1;
    cases.push_back({"embedding_backward_bad_id", 0.0,
                     {i32({4, 12}, bad), f32({4, 12, 7}, uniform(rng, 336)), output({10, 7})},
                     [](Backend& b, const Views& v) { b.embedding_backward(v[0], v[1], v[2]); return none(); },
                     "", true});
}

// x [B, T, Cin], kernel [K, Cin, Cout] with output length To and left padding.
void add_conv_cases(std::vector<OpCase>& cases, const std::string& name, std::int64_t batch, std::int64_t length,
                    std::int64_t in_channels, std::int64_t window, std::int64_t out_channels, bool same, bool bias,
                    std::uint32_t seed) {
    std::mt19937 rng(seed);
    const std::int64_t out_length = conv_output_length(length, static_cast<std::int32_t>(window), 1, same);
    const std::int32_t pad = same ? same_pad_left(length, static_cast<std::int32_t>(window), 1) : 0;
    const Conv1DParams params{pad};
    HostTensor x = f32({batch, length, in_channels}, uniform(rng, batch * length * in_channels));
    HostTensor kernel = f32({window, in_channels, out_channels}, uniform(rng, window * in_channels * out_channels, -0.3f, 0.3f));
    HostTensor b = bias ? f32({out_channels}, uniform(rng, out_channels)) : absent();
    HostTensor dy = f32({batch, out_length, out_channels}, uniform(rng, batch * out_length * out_channels));
    cases.push_back({"conv1d_forward_" + name, 1e-9, {x, kernel, b, output({batch, out_length, out_channels})},
                     [params](Backend& be, const Views& v) {
                         be.conv1d_forward(v[0], v[1], v[2], v[3], params);
                         return none();
                     }});
    cases.push_back({"conv1d_backward_" + name, 1e-9,
                     {x, kernel, dy, output({batch, length, in_channels}), output({window, in_channels, out_channels}),
                      bias ? output({out_channels}) : absent()},
                     [params](Backend& be, const Views& v) {
                         be.conv1d_backward(v[0], v[1], v[2], v[3], v[4], v[5], params);
                         return none();
                     }});
    cases.push_back({"conv1d_backward_no_input_grad_" + name, 1e-9,
                     {x, kernel, dy, absent(), output({window, in_channels, out_channels}),
                      bias ? output({out_channels}) : absent()},
                     [params](Backend& be, const Views& v) {
                         be.conv1d_backward(v[0], v[1], v[2], v[3], v[4], v[5], params);
                         return none();
                     }});
}

void add_pool_cases(std::vector<OpCase>& cases, const std::string& name, std::int32_t pool, std::int32_t stride,
                    bool same, bool global, std::uint32_t seed) {
    std::mt19937 rng(seed);
    const std::int64_t batch = 3, length = 20, channels = 16;
    const std::int32_t pool_size = global ? static_cast<std::int32_t>(length) : pool;
    const std::int32_t step = global ? static_cast<std::int32_t>(length) : stride;
    const std::int64_t out_length = conv_output_length(length, pool_size, step, same);
    const Pool1DParams params{pool_size, step, same ? same_pad_left(length, pool_size, step) : 0};
    HostTensor x = f32({batch, length, channels}, uniform(rng, batch * length * channels));
    x.f[(0 * length + 3) * channels + 2] = std::numeric_limits<float>::quiet_NaN();  // must propagate
    x.f[(1 * length + 5) * channels + 0] = std::numeric_limits<float>::infinity();
    x.f[(2 * length + 6) * channels + 4] = x.f[(2 * length + 7) * channels + 4];    // a tie: the first wins
    cases.push_back({"maxpool1d_forward_" + name, 0.0,
                     {x, output({batch, out_length, channels}), output({batch, out_length, channels}, DType::I32)},
                     [params](Backend& be, const Views& v) {
                         be.maxpool1d_forward(v[0], v[1], v[2], params);
                         return none();
                     }});
    // The backward pass gets the reference's own argmax.
    HostTensor y = output({batch, out_length, channels}), argmax = output({batch, out_length, channels}, DType::I32);
    CpuReferenceBackend reference;
    reference.maxpool1d_forward(host_view(x), host_view(y), host_view(argmax), params);
    cases.push_back({"maxpool1d_backward_" + name, 1e-12,
                     {f32({batch, out_length, channels}, uniform(rng, batch * out_length * channels)), argmax,
                      output({batch, length, channels})},
                     [](Backend& be, const Views& v) {
                         be.maxpool1d_backward(v[0], v[1], v[2]);
                         return none();
                     }});
}

void add_dense_cases(std::vector<OpCase>& cases, const std::string& name, std::int64_t batch, std::int64_t inputs,
                     std::int64_t units, bool bias, std::uint32_t seed) {
    std::mt19937 rng(seed);
    HostTensor x = f32({batch, inputs}, uniform(rng, batch * inputs));
    HostTensor kernel = f32({inputs, units}, uniform(rng, inputs * units, -0.1f, 0.1f));
    HostTensor b = bias ? f32({units}, uniform(rng, units)) : absent();
    HostTensor dy = f32({batch, units}, uniform(rng, batch * units));
    cases.push_back({"dense_forward_" + name, 1e-9, {x, kernel, b, output({batch, units})},
                     [](Backend& be, const Views& v) {
                         be.dense_forward(v[0], v[1], v[2], v[3]);
                         return none();
                     }});
    cases.push_back({"dense_backward_" + name, 1e-9,
                     {x, kernel, dy, output({batch, inputs}), output({inputs, units}), bias ? output({units}) : absent()},
                     [](Backend& be, const Views& v) {
                         be.dense_backward(v[0], v[1], v[2], v[3], v[4], v[5]);
                         return none();
                     }});
    cases.push_back({"dense_backward_no_input_grad_" + name, 1e-9,
                     {x, kernel, dy, absent(), output({inputs, units}), bias ? output({units}) : absent()},
                     [](Backend& be, const Views& v) {
                         be.dense_backward(v[0], v[1], v[2], v[3], v[4], v[5]);
                         return none();
                     }});
}

void add_activation_cases(std::vector<OpCase>& cases) {
    std::mt19937 rng(23);
    const std::int64_t count = 2000;
    std::vector<float> x = uniform(rng, count, -6.0f, 6.0f);
    x[7] = std::numeric_limits<float>::quiet_NaN();
    x[8] = -0.0f;
    x[9] = std::numeric_limits<float>::infinity();
    x[10] = -std::numeric_limits<float>::infinity();
    for (ActivationKind kind : {ActivationKind::Linear, ActivationKind::ReLU, ActivationKind::Tanh, ActivationKind::Sigmoid}) {
        const std::string name(activation_name(kind));
        // Transcendentals may differ in the last bit between libm and CUDA's math library.
        const double tolerance = kind == ActivationKind::Tanh || kind == ActivationKind::Sigmoid ? 1e-12 : 0.0;
        cases.push_back({"activation_forward_" + name, tolerance, {f32({count}, x), output({count})},
                         [kind](Backend& be, const Views& v) {
                             be.activation_forward(kind, v[0], v[1]);
                             return none();
                         }});
        cases.push_back({"activation_forward_in_place_" + name, tolerance, {f32({count}, x)},
                         [kind](Backend& be, const Views& v) {
                             be.activation_forward(kind, v[0], v[0]);
                             return none();
                         }});
        HostTensor in = f32({count}, x), y = output({count});
        CpuReferenceBackend reference;
        reference.activation_forward(kind, host_view(in), host_view(y));
        cases.push_back({"activation_backward_" + name, 1e-14, {y, f32({count}, uniform(rng, count)), output({count})},
                         [kind](Backend& be, const Views& v) {
                             be.activation_backward(kind, v[0], v[1], v[2]);
                             return none();
                         }});
    }
    cases.push_back({"activation_softmax_refused", 0.0, {f32({count}, x), output({count})},
                     [](Backend& be, const Views& v) {
                         be.activation_forward(ActivationKind::Softmax, v[0], v[1]);
                         return none();
                     }});
}

void add_dropout_cases(std::vector<OpCase>& cases) {
    std::mt19937 rng(31);
    const std::int64_t count = 5000;
    for (float rate : {0.3f, 0.0f}) {
        cases.push_back({"dropout_forward_rate_" + std::to_string(rate).substr(0, 3), 0.0,
                         {f32({count}, uniform(rng, count)), output({count}), output({count})},
                         [rate](Backend& be, const Views& v) {
                             be.dropout_forward(v[0], v[1], v[2], rate, 1234);
                             return none();
                         }});
    }
    HostTensor mask = f32({count}, uniform(rng, count));
    for (auto& m : mask.f) m = m < 0.0f ? 0.0f : 1.0f / 0.7f;
    cases.push_back({"dropout_backward", 0.0, {f32({count}, uniform(rng, count)), mask, output({count})},
                     [](Backend& be, const Views& v) {
                         be.dropout_backward(v[0], v[1], v[2]);
                         return none();
                     }});
}

// The layer types' own ops (core/layers) through run_op: each backend's kernel where it has one,
// else the op's CPU reference, through the host on a GPU (ops() says which ran).
OpCase layer_op_case(const std::string& name, double tolerance, const std::string& op, std::vector<HostTensor> tensors,
                     std::size_t input_count, OpAttributes attributes = {}) {
    return {name, tolerance, std::move(tensors),
            [op, input_count, attributes](Backend& be, const Views& v) {
                const OpDef* def = find_op(op);
                if (def == nullptr) qFatal("test bug: no op %s", op.c_str());
                run_op(be, *def, std::span<const TensorView>(v.data(), input_count),
                       std::span<const TensorView>(v.data() + input_count, v.size() - input_count), attributes);
                return none();
            },
            op};
}

void add_layer_op_cases(std::vector<OpCase>& cases) {
    std::mt19937 rng(71);
    const std::int64_t batch = 4, length = 37, channels = 9;
    std::vector<float> x = uniform(rng, batch * length * channels);
    x[5] = std::numeric_limits<float>::quiet_NaN();  // poisons its mean, and only that one
    // Forward sums in double: a kernel of its own may sum in another order (a tolerance, not bits);
    // the backward pass is one division per element, bit for bit.
    cases.push_back(layer_op_case("global_average_pooling1d_forward", 1e-12, "global_average_pooling1d_forward",
                                  {f32({batch, length, channels}, x), output({batch, channels})}, 1));
    cases.push_back(layer_op_case("global_average_pooling1d_backward", 0.0, "global_average_pooling1d_backward",
                                  {f32({batch, channels}, uniform(rng, batch * channels)), output({batch, length, channels})}, 1));
    cases.push_back(layer_op_case("global_average_pooling1d_forward_mismatch", 0.0, "global_average_pooling1d_forward",
                                  {f32({batch, length, channels}, x), output({batch, channels + 1})}, 1));
    // The mask is drawn from the seed: the same bits on every backend, so every replica of a
    // model trains with the mask its CPU twin would.
    OpAttributes dropout;
    dropout.real = 0.3;
    dropout.seed = 1234;
    cases.push_back(layer_op_case("spatial_dropout1d_mask", 0.0, "spatial_dropout1d_mask",
                                  {output({batch, length, channels})}, 0, dropout));
}

void add_loss_cases(std::vector<OpCase>& cases) {
    std::mt19937 rng(41);
    const std::int64_t batch = 9, classes = 46;
    std::vector<float> logits = uniform(rng, batch * classes, -4.0f, 4.0f);
    for (std::int64_t c = 0; c < classes; ++c) logits[static_cast<std::size_t>(3 * classes + c)] = 0.25f;  // all tied
    for (std::int64_t c = 0; c < classes; ++c) logits[static_cast<std::size_t>(5 * classes + c)] += 1e4f;   // large
    std::vector<std::int32_t> labels = integers(rng, batch, 0, static_cast<std::int32_t>(classes) - 1);
    const float scale = 1.0f / 32.0f;
    cases.push_back({"softmax_cross_entropy", 1e-12,
                     {f32({batch, classes}, logits), i32({batch}, labels), output({batch, classes}), output({batch, classes})},
                     [scale](Backend& be, const Views& v) {
                         return from_counts(be.softmax_cross_entropy(v[0], v[1], v[2], v[3], scale, 5));
                     }});
    cases.push_back({"softmax_cross_entropy_no_gradient", 1e-12,
                     {f32({batch, classes}, logits), i32({batch}, labels), output({batch, classes}), absent()},
                     [](Backend& be, const Views& v) {
                         return from_counts(be.softmax_cross_entropy(v[0], v[1], v[2], v[3], 1.0f, 1));
                     }});
    std::vector<float> with_nan = logits;
    with_nan[7 * classes + 2] = std::numeric_limits<float>::quiet_NaN();
    cases.push_back({"softmax_cross_entropy_nan", 1e-12,
                     {f32({batch, classes}, with_nan), i32({batch}, labels), output({batch, classes}), output({batch, classes})},
                     [scale](Backend& be, const Views& v) {
                         return from_counts(be.softmax_cross_entropy(v[0], v[1], v[2], v[3], scale, 5));
                     }});
    std::vector<std::int32_t> bad = labels;
    bad[4] = static_cast<std::int32_t>(classes);
    cases.push_back({"softmax_cross_entropy_bad_label", 0.0,
                     {f32({batch, classes}, logits), i32({batch}, bad), output({batch, classes}), output({batch, classes})},
                     [scale](Backend& be, const Views& v) {
                         return from_counts(be.softmax_cross_entropy(v[0], v[1], v[2], v[3], scale, 5));
                     }});
}

void add_optimizer_cases(std::vector<OpCase>& cases) {
    struct Config {
        std::string name;
        OptimizerConfig config;
    };
    std::vector<Config> configs;
    for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Nadam, OptimizerKind::RMSprop}) {
        configs.push_back({std::string(optimizer_name(kind)), OptimizerConfig::defaults(kind)});
    }
    OptimizerConfig momentum = OptimizerConfig::defaults(OptimizerKind::SGD);
    momentum.momentum = 0.9;
    configs.push_back({"SGD_momentum", momentum});
    momentum.nesterov = true;
    configs.push_back({"SGD_nesterov", momentum});
    OptimizerConfig rms = OptimizerConfig::defaults(OptimizerKind::RMSprop);
    rms.momentum = 0.5;
    configs.push_back({"RMSprop_momentum", rms});

    std::mt19937 rng(53);
    const std::int64_t count = 1000;
    for (const auto& [name, config] : configs) {
        OptimizerSchedule schedule(config);
        OptimizerStep step;
        for (int i = 0; i < 3; ++i) step = schedule.next_step();
        const int slot_count = schedule.slot_count();
        // slot0 is a mean square (never negative) for RMSprop, a first moment otherwise; slot1 is
        // a second moment for Adam/Nadam and a momentum buffer for RMSprop.
        const bool slot0_square = config.kind == OptimizerKind::RMSprop;
        const bool slot1_square = config.kind == OptimizerKind::Adam || config.kind == OptimizerKind::Nadam;
        HostTensor slot0 = slot_count >= 1 ? f32({count}, slot0_square ? uniform(rng, count, 0.0f, 1e-4f) : uniform(rng, count, -1e-3f, 1e-3f))
                                      : absent();
        HostTensor slot1 = slot_count >= 2 ? f32({count}, slot1_square ? uniform(rng, count, 0.0f, 1e-4f) : uniform(rng, count, -1e-3f, 1e-3f))
                                      : absent();
        cases.push_back({"apply_update_" + name, 0.0,
                         {f32({count}, uniform(rng, count)), f32({count}, uniform(rng, count, -1e-2f, 1e-2f)), slot0, slot1},
                         [step](Backend& be, const Views& v) {
                             be.apply_update(step, v[0], v[1], v[2], v[3], {});
                             return none();
                         }});
    }
    // An Embedding table [50, 7] with its IndexedSlices statistics: TF2's row counts (a third of
    // the rows outside the batch) and Keras 3's summed squares, for every optimizer.
    const std::int64_t rows = 50, width = 7, table = rows * width;
    std::vector<float> counts(static_cast<std::size_t>(rows));
    for (auto& c : counts) c = static_cast<float>(std::uniform_int_distribution<int>(0, 2)(rng));
    for (const auto& [name, config] : configs) {
        OptimizerSchedule schedule(config);
        OptimizerStep step;
        for (int i = 0; i < 3; ++i) step = schedule.next_step();
        const int slot_count = schedule.slot_count();
        auto slot = [&](int index) {
            return slot_count > index ? f32({rows, width}, uniform(rng, table, 0.0f, 1e-4f)) : absent();
        };
        for (const bool with_counts : {true, false}) {
            HostTensor squares = with_counts ? absent() : f32({rows, width}, uniform(rng, table, 0.0f, 1e-4f));
            HostTensor row_counts = with_counts ? f32({rows}, counts) : absent();
            cases.push_back({"apply_update_" + name + (with_counts ? "_tf2_rows" : "_keras3_squares"), 0.0,
                             {f32({rows, width}, uniform(rng, table)), f32({rows, width}, uniform(rng, table, -1e-2f, 1e-2f)),
                              slot(0), slot(1), squares, row_counts},
                             [step](Backend& be, const Views& v) {
                                 be.apply_update(step, v[0], v[1], v[2], v[3], IndexedSlicesViews{v[4], v[5]});
                                 return none();
                             }});
        }
    }
    OptimizerSchedule adam(OptimizerConfig::defaults(OptimizerKind::Adam));
    const OptimizerStep step = adam.next_step();
    cases.push_back({"apply_update_missing_slot", 0.0, {f32({count}, uniform(rng, count)), f32({count}, uniform(rng, count)), absent(), absent()},
                     [step](Backend& be, const Views& v) {
                         be.apply_update(step, v[0], v[1], v[2], v[3], {});
                         return none();
                     }});
}

void add_memory_cases(std::vector<OpCase>& cases) {
    std::mt19937 rng(61);
    const std::int64_t count = 3000;
    cases.push_back({"add_inplace", 0.0, {f32({count}, uniform(rng, count)), f32({count}, uniform(rng, count))},
                     [](Backend& be, const Views& v) {
                         be.add_inplace(v[0], v[1]);
                         return none();
                     }});
    cases.push_back({"add_inplace_mismatch", 0.0, {f32({count}, uniform(rng, count)), f32({count - 1}, uniform(rng, count - 1))},
                     [](Backend& be, const Views& v) {
                         be.add_inplace(v[0], v[1]);
                         return none();
                     }});
    cases.push_back({"copy", 0.0,
                     {f32({count}, uniform(rng, count)), output({count}), i32({77}, integers(rng, 77, -5, 5)), output({77}, DType::I32)},
                     [](Backend& be, const Views& v) {
                         be.copy(v[1], v[0]);
                         be.copy(v[3], v[2]);
                         return none();
                     }});
    cases.push_back({"copy_mismatch", 0.0, {f32({count}, uniform(rng, count)), output({count + 1})},
                     [](Backend& be, const Views& v) {
                         be.copy(v[1], v[0]);
                         return none();
                     }});
    cases.push_back({"fill", 0.0, {output({count}), output({count}), output({count}), output({99}, DType::I32)},
                     [](Backend& be, const Views& v) {
                         be.fill(v[0], 5.5f);
                         be.fill(v[1], 0.0f);
                         be.fill(v[2], -0.0f);
                         be.fill(v[3], 7.9f);
                         return none();
                     }});
    cases.push_back({"sum_of_squares", 0.0, {f32({12345}, uniform(rng, 12345))},
                     [](Backend& be, const Views& v) { return Scalars{{be.sum_of_squares(v[0])}, {}}; }});
    std::vector<float> with_nan = uniform(rng, count), with_inf = uniform(rng, count);
    with_nan[count - 1] = std::numeric_limits<float>::quiet_NaN();
    with_inf[12] = -std::numeric_limits<float>::infinity();
    cases.push_back({"all_finite", 0.0, {f32({count}, uniform(rng, count)), f32({count}, with_nan), f32({count}, with_inf)},
                     [](Backend& be, const Views& v) {
                         return Scalars{{}, {be.all_finite(v[0]), be.all_finite(v[1]), be.all_finite(v[2])}};
                     }});
}

const std::vector<OpCase>& op_cases() {
    static const std::vector<OpCase> cases = [] {
        std::vector<OpCase> all;
        add_embedding_cases(all);
        add_conv_cases(all, "valid", 3, 20, 7, 5, 16, false, true, 101);
        add_conv_cases(all, "same_odd", 3, 20, 7, 3, 16, true, true, 102);
        add_conv_cases(all, "same_even", 3, 20, 7, 4, 16, true, true, 103);  // asymmetric padding
        add_conv_cases(all, "no_bias", 2, 17, 5, 5, 8, false, false, 104);
        add_conv_cases(all, "tutorial", 16, 300, 7, 5, 64, false, true, 105);
        add_conv_cases(all, "tutorial_second", 16, 148, 64, 3, 32, false, true, 106);
        add_pool_cases(all, "2_2", 2, 2, false, false, 201);
        add_pool_cases(all, "3_2_same", 3, 2, true, false, 202);
        add_pool_cases(all, "3_1_overlapping", 3, 1, false, false, 203);
        add_pool_cases(all, "global", 0, 0, false, true, 204);
        add_dense_cases(all, "small", 5, 33, 46, true, 301);
        add_dense_cases(all, "tutorial", 16, 2336, 46, true, 302);
        add_dense_cases(all, "no_bias", 4, 9, 3, false, 303);
        add_activation_cases(all);
        add_dropout_cases(all);
        add_layer_op_cases(all);
        add_loss_cases(all);
        add_optimizer_cases(all);
        add_memory_cases(all);
        return all;
    }();
    return cases;
}

// ---------------------------------------------------------------------------------------------
// Running a case on a backend and comparing with the reference.

struct Outcome {
    std::vector<HostTensor> tensors;
    Scalars scalars;
    std::string error;  // the OpError's message; empty when the op succeeded
};

// Device memory for one run, freed however the run ends.
struct Allocations {
    RawAllocator* allocator = nullptr;
    std::vector<void*> pointers;
    ~Allocations() {
        for (void* p : pointers) allocator->free_raw(p);
    }
};

Outcome execute(const OpCase& op, Backend& backend, RawAllocator* allocator) {
    Outcome outcome;
    outcome.tensors = op.tensors;
    Views views;
    Allocations allocations{allocator, {}};
    for (auto& tensor : outcome.tensors) {
        if (!tensor.present) {
            views.push_back({});
            continue;
        }
        if (allocator == nullptr) {
            views.push_back(host_view(tensor));
            continue;
        }
        void* pointer = allocator->allocate_raw(std::max<std::int64_t>(tensor.bytes(), 4));
        if (pointer == nullptr) qFatal("the backend's allocator refused %lld bytes", static_cast<long long>(tensor.bytes()));
        allocations.pointers.push_back(pointer);
        views.push_back({pointer, tensor.shape, tensor.dtype});
        backend.upload(views.back(), tensor.data());
    }
    try {
        outcome.scalars = op.run(backend, views);
        backend.synchronize();
    } catch (const OpError& error) {
        outcome.error = error.what();
    }
    if (allocator != nullptr) {
        for (std::size_t i = 0; i < outcome.tensors.size(); ++i) {
            if (outcome.tensors[i].present) backend.download(outcome.tensors[i].data(), views[i]);
        }
    }
    return outcome;
}

// Empty when `got` matches `want` under the case's tolerance, else what differs.
QString compare(const OpCase& op, const Outcome& got, const Outcome& want) {
    if (got.error != want.error) {
        return QString("error differs:\n   got: '%1'\n  want: '%2'")
            .arg(QString::fromStdString(got.error), QString::fromStdString(want.error));
    }
    if (!want.error.empty()) return {};  // both refused with the same message; outputs are unspecified
    for (std::size_t t = 0; t < want.tensors.size(); ++t) {
        const HostTensor &a = got.tensors[t], &b = want.tensors[t];
        if (!b.present) continue;
        if (b.dtype == DType::I32) {
            for (std::size_t i = 0; i < b.i.size(); ++i) {
                if (a.i[i] != b.i[i]) return QString("tensor %1 element %2: %3 vs %4").arg(t).arg(i).arg(a.i[i]).arg(b.i[i]);
            }
            continue;
        }
        double error = 0.0, norm = 0.0, worst = 0.0;
        for (std::size_t i = 0; i < b.f.size(); ++i) {
            const float x = a.f[i], y = b.f[i];
            if (std::isnan(x) != std::isnan(y) || std::isinf(x) != std::isinf(y) ||
                (std::isinf(y) && std::signbit(x) != std::signbit(y))) {
                return QString("tensor %1 element %2: %3 vs %4 (NaN/Inf disagree)").arg(t).arg(i).arg(x).arg(y);
            }
            if (!std::isfinite(y)) continue;
            if (op.tolerance == 0.0 && std::memcmp(&x, &y, sizeof x) != 0) {
                return QString("tensor %1 element %2: %3 vs %4 (must be bit for bit)")
                    .arg(t).arg(i).arg(double(x), 0, 'g', 9).arg(double(y), 0, 'g', 9);
            }
            const double d = static_cast<double>(x) - y;
            error += d * d;
            norm += static_cast<double>(y) * y;
            worst = std::max(worst, std::abs(d));
        }
        const double nmse = error / std::max(norm, 1e-30);
        if (nmse > op.tolerance && op.tolerance > 0.0) {
            return QString("tensor %1: normalised MSE %2 above %3 (largest difference %4)")
                .arg(t).arg(nmse, 0, 'g', 3).arg(op.tolerance, 0, 'g', 3).arg(worst, 0, 'g', 3);
        }
    }
    if (got.scalars.exact != want.scalars.exact) return QStringLiteral("exact scalars differ (counts or flags)");
    if (got.scalars.approx.size() != want.scalars.approx.size()) return QStringLiteral("scalar counts differ");
    for (std::size_t i = 0; i < want.scalars.approx.size(); ++i) {
        const double x = got.scalars.approx[i], y = want.scalars.approx[i];
        if (std::isnan(x) && std::isnan(y)) continue;
        if (!(std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y)))) {
            return QString("scalar %1: %2 vs %3").arg(i).arg(x, 0, 'g', 17).arg(y, 0, 'g', 17);
        }
    }
    return {};
}

// ---------------------------------------------------------------------------------------------
// Whole-model helpers.

struct Batch {
    std::vector<std::int32_t> ids, labels;
};

Batch random_batch(const Model& model, std::int32_t size, std::uint32_t seed) {
    std::mt19937 rng(seed);
    Batch batch;
    batch.ids = integers(rng, std::int64_t{size} * model.input_length(), 0,
                         static_cast<std::int32_t>(model.vocabulary_size()) - 1);
    batch.labels = integers(rng, size, 0, model.num_classes() - 1);
    return batch;
}

struct Log {
    std::vector<std::string> lines;
    bool contains(const std::string& text) const {
        return std::any_of(lines.begin(), lines.end(), [&](const auto& line) { return line.find(text) != std::string::npos; });
    }
    std::string all() const {
        std::string text;
        for (const auto& line : lines) text += line + "\n";
        return text;
    }
};

std::unique_ptr<MirroredStrategy> strategy_on(const std::string& spec, AllReduceAlgorithm algorithm, Log* log = nullptr) {
    return std::make_unique<MirroredStrategy>(create_logical_devices(DeviceConfig::parse(spec), gpu().registry), algorithm,
                                              [log](LogLevel, const std::string& line) {
                                                  if (log != nullptr) log->lines.push_back(line);
                                              });
}

// N of the "one CUDA Graph of N nodes" line in a strategy's kernel choices; 0 when its steps are
// no graph.
std::int64_t graph_nodes(const std::vector<std::string>& choices) {
    const std::string marker = "one CUDA Graph of ";
    for (const std::string& line : choices) {
        const auto at = line.find(marker);
        if (at != std::string::npos) return std::stoll(line.substr(at + marker.size()));
    }
    return 0;
}

using test::nmse;

OptimizerConfig nadam() { return OptimizerConfig::defaults(OptimizerKind::Nadam); }

}  // namespace

class TestGpuOps : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        qInfo("GPU status: %s", gpu().plugin.status.c_str());
        if (!emulated_plugin_dir().empty()) {
            QVERIFY2(gpu().provider != nullptr, qPrintable(QString("the emulated CUDA plugin in %1 gave no GPU: %2")
                                                               .arg(QString::fromStdString(emulated_plugin_dir()),
                                                                    QString::fromStdString(gpu().plugin.status))));
            qInfo("GPU cases run on the CUDA host emulator (gpu/'s code on the CPU), not on a GPU");
        }
        qInfo("%zu op cases on cpu%s", op_cases().size(), gpu().provider != nullptr ? ", cuda, cuda-direct" : "");
    }

    void ops_data() {
        QTest::addColumn<int>("case_index");
        QTest::addColumn<int>("target_kind");
        for (TargetKind kind : {TargetKind::Cpu, TargetKind::CpuCopied, TargetKind::Cuda, TargetKind::CudaDirect}) {
            for (std::size_t i = 0; i < op_cases().size(); ++i) {
                const std::string row = op_cases()[i].name + "@" + target_name(kind);
                QTest::newRow(row.c_str()) << static_cast<int>(i) << static_cast<int>(kind);
            }
        }
    }

    void ops() {
        QFETCH(int, case_index);
        QFETCH(int, target_kind);
        const auto kind = static_cast<TargetKind>(target_kind);
        if (kind == TargetKind::Cuda || kind == TargetKind::CudaDirect) REQUIRE_GPU();
        const OpCase& op = op_cases()[static_cast<std::size_t>(case_index)];
        if (op.ids_checked_by_caller && (kind == TargetKind::Cuda || kind == TargetKind::CudaDirect)) {
            QSKIP("ids outside the vocabulary are stopped on the host before upload (check_batch); the CUDA backend "
                  "trusts them: badIdOrLabelStopsTheGpuStep checks what a person sees");
        }
        CpuReferenceBackend reference;
        const Outcome want = execute(op, reference, nullptr);
        Target& under_test = target(kind);
        if (!op.layer_op.empty() && !under_test.backend->supports(op.layer_op)) {
            qInfo("%s has no kernel for %s: the CPU reference ran %s", std::string(under_test.backend->name()).c_str(),
                  op.layer_op.c_str(), under_test.backend->host_memory() ? "in place" : "through the host (run_op)");
        }
        const Outcome got = execute(op, *under_test.backend, under_test.allocator.get());
        const QString difference = compare(op, got, want);
        QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

    // Cross-device reads: add_inplace and copy with the source in another logical device's
    // arena on the same GPU, as the reduce-to-one-device all-reduce does on virtual GPUs, each
    // ordered after the other device's work by an event (mark_ready / wait_for), no host wait.
    // Without the waits the emulator stops the program (cross-stream-race): the uploads are queued.
    void addAndCopyAcrossVirtualDevices() {
        REQUIRE_GPU();
        auto devices = create_logical_devices(DeviceConfig::parse(gpu_spec(":2x64MB")), gpu().registry);
        std::mt19937 rng(71);
        const std::vector<float> a = uniform(rng, 4097), b = uniform(rng, 4097);
        Tensor ta(devices[0]->arena(), DType::F32, Shape{4097}, "a"), tb(devices[1]->arena(), DType::F32, Shape{4097}, "b");
        Backend &first = devices[0]->backend(), &second = devices[1]->backend();
        first.upload(ta, a.data());
        second.upload(tb, b.data());
        second.mark_ready();
        first.wait_for(second);
        first.add_inplace(ta, tb);
        first.mark_ready();
        second.wait_for(first);
        second.copy(tb, ta);
        std::vector<float> result(4097);
        devices[1]->backend().download(result.data(), tb);
        for (std::size_t i = 0; i < a.size(); ++i) QCOMPARE(result[i], a[i] + b[i]);
    }

    // The NaN guard's verdict stays on the GPU, next to the summed gradients: a verdict made on the
    // host (what the CPU all-reduce hands its replicas) is refused at once, not after some update.
    void gpuRefusesAVerdictMadeOnTheHost() {
        REQUIRE_GPU();
        auto devices = create_logical_devices(DeviceConfig::parse(gpu_spec(":1x64MB")), gpu().registry);
        try {
            devices[0]->backend().step_set_finite(true);
            QFAIL("the GPU backend took a verdict made on the host");
        } catch (const OpError& error) {
            QVERIFY2(QString(error.what()).contains("on the device"), error.what());
        }
    }

    // What a person sees of a bad token id or label on GPUs: the CPU reference's message, from the
    // host check before upload, the step stopped before any variable or the optimizer moved, and
    // the next good step running on every replica.
    void badIdOrLabelStopsTheGpuStep_data() {
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<bool>("bad_label");
        QTest::addColumn<QString>("message");
        const QString id_message = QStringLiteral("[embedding] token id 30982 is outside the vocabulary of 30982 "
                                                  "(input_dim); enlarge input_dim or map such ids to OOV");
        const QString label_message = QStringLiteral("[sparse_categorical_crossentropy] label 46 of sample 3 is outside "
                                                     "[0, 46): the model's last layer has 46 units");
        QTest::newRow("id, two virtual GPUs") << QStringLiteral(":2x256MB") << false << id_message;
        QTest::newRow("label, two virtual GPUs") << QStringLiteral(":2x256MB") << true << label_message;
        QTest::newRow("id, one GPU") << QString() << false << id_message;
        QTest::newRow("label, one GPU") << QString() << true << label_message;
    }
    void badIdOrLabelStopsTheGpuStep() {
        REQUIRE_GPU();
        QFETCH(QString, suffix);
        QFETCH(bool, bad_label);
        QFETCH(QString, message);
        const Model model = Model::reference();
        auto strategy = strategy_on(gpu_spec(suffix.toStdString()), AllReduceAlgorithm::Auto);
        strategy->build(model, 32, nadam(), initial_weights(model, 7));
        Batch batch = random_batch(model, 32, 41);
        const std::int32_t shard = 32 / strategy->replica_count();
        // In the last replica's shard: sample 3 of it.
        const std::size_t sample = static_cast<std::size_t>(32 - shard + 3);
        if (bad_label) {
            batch.labels[sample] = model.num_classes();
        } else {
            batch.ids[sample * static_cast<std::size_t>(model.input_length()) + 5] =
                static_cast<std::int32_t>(model.vocabulary_size());
        }
        const std::vector<float> before = strategy->weights(0);
        try {
            strategy->train_step(batch.ids.data(), batch.labels.data(), 32, 1);
            QFAIL("the bad batch was accepted");
        } catch (const OpError& error) {
            QVERIFY2(QString(error.what()).startsWith(message), error.what());
        }
        QCOMPARE(strategy->optimizer_state().iterations, std::int64_t{0});
        for (int r = 0; r < strategy->replica_count(); ++r) QVERIFY(strategy->weights(r) == before);
        const Batch good = random_batch(model, 32, 42);
        QVERIFY(strategy->train_step(good.ids.data(), good.labels.data(), 32, 2).finite);
        QCOMPARE(strategy->optimizer_state().iterations, std::int64_t{1});
    }

    // A non-finite step on GPUs: the verdict is computed on the device and the optimizer kernels
    // skip the update there; the host learns it from the step's one read-back. Nothing changes:
    // variables (identical on every replica), optimizer state.
    void nonFiniteStepChangesNothingOnGpus_data() {
        QTest::addColumn<QString>("spec");  // empty: the GPU under test
        QTest::addColumn<QString>("suffix");
        QTest::newRow("two virtual GPUs (reduce to one device)") << QString() << QStringLiteral(":2x256MB");
        QTest::newRow("one GPU") << QString() << QString();
        QTest::newRow("two GPUs (NCCL where there are two)") << QStringLiteral("gpu:0,gpu:1") << QString();
    }
    void nonFiniteStepChangesNothingOnGpus() {
        REQUIRE_GPU();
        QFETCH(QString, spec);
        QFETCH(QString, suffix);
        if (!spec.isEmpty() && gpu().indices.size() < 2) QSKIP("one GPU only");
        const Model model = Model::reference();
        OptimizerConfig sgd = OptimizerConfig::defaults(OptimizerKind::SGD);
        sgd.learning_rate = 1e30;
        auto strategy = strategy_on(spec.isEmpty() ? gpu_spec(suffix.toStdString()) : spec.toStdString(),
                                    AllReduceAlgorithm::Auto);
        strategy->build(model, 32, sgd, initial_weights(model, 9));
        bool skipped = false;
        for (int step = 1; step <= 10 && !skipped; ++step) {
            const Batch batch = random_batch(model, 32, 500u + static_cast<std::uint32_t>(step));
            const std::vector<float> before = strategy->weights(0);
            const auto iterations = strategy->optimizer_state().iterations;
            const TrainStepResult& result = strategy->train_step(batch.ids.data(), batch.labels.data(), 32, step);
            if (result.finite) {
                QCOMPARE(strategy->optimizer_state().iterations, iterations + 1);
                continue;
            }
            skipped = true;
            QCOMPARE(strategy->optimizer_state().iterations, iterations);
            for (int r = 0; r < strategy->replica_count(); ++r) {
                const std::vector<float> now = strategy->weights(r);
                QVERIFY2(std::memcmp(now.data(), before.data(), now.size() * sizeof(float)) == 0,
                         qPrintable(QString("step %1: replica %2 changed in a non-finite step").arg(step).arg(r)));
            }
        }
        QVERIFY2(skipped, "a learning rate of 1e30 never produced a non-finite step");
    }

    void trainingMatchesTheCpuFor20Steps() {
        REQUIRE_GPU();
        const Model model = Model::reference();
        const std::vector<float> weights = initial_weights(model, 7);
        auto cpu = strategy_on("cpu", AllReduceAlgorithm::Auto);
        auto cuda = strategy_on(gpu_spec(), AllReduceAlgorithm::Auto);
        cpu->build(model, 32, nadam(), weights);
        cuda->build(model, 32, nadam(), weights);
        for (int step = 0; step < 20; ++step) {
            const Batch batch = random_batch(model, 32, 1000u + static_cast<std::uint32_t>(step));
            const auto want = cpu->train_step(batch.ids.data(), batch.labels.data(), 32, static_cast<std::uint64_t>(step + 1));
            const auto got = cuda->train_step(batch.ids.data(), batch.labels.data(), 32, static_cast<std::uint64_t>(step + 1));
            QVERIFY(got.finite && want.finite);
            const double loss_want = want.counts.loss_sum / 32, loss_got = got.counts.loss_sum / 32;
            QVERIFY2(std::abs(loss_got - loss_want) <= 1e-3 * std::max(1.0, std::abs(loss_want)),
                     qPrintable(QString("step %1: loss %2 on the GPU, %3 on the CPU").arg(step + 1).arg(loss_got, 0, 'g', 9).arg(loss_want, 0, 'g', 9)));
            QVERIFY(std::abs(got.counts.correct - want.counts.correct) <= 1);
            QVERIFY(got.replicas.front().forward_ms > 0.0);
        }
        const double error = nmse(cuda->weights(), cpu->weights());
        qInfo("weights after 20 steps: normalised MSE %.3g between GPU and CPU", error);
        // Summation order differs (cuDNN, cuBLAS, atomics), and over 20 steps a rounding difference
        // may flip a near-tie in max pooling or a ReLU kink: close, not equal. On the emulator
        // (blocks in a seeded random order) most orders give ~1e-12; some flip a tie and the 20
        // steps carry it on (MIRRORLAB_CUDA_EMULATION_SEED=5870187100255069529: 1.64e-5, the same
        // on every run, so an order, not a race). A wrong kernel is orders of magnitude further
        // off (the per-op cases above catch it at 1e-6), and every step's loss is checked above.
        QVERIFY2(error < 1e-4, qPrintable(QString("normalised MSE %1").arg(error)));
        const Batch held_out = random_batch(model, 32, 5);
        const LossCounts eval_cpu = cpu->evaluate(held_out.ids.data(), held_out.labels.data(), 32);
        const LossCounts eval_gpu = cuda->evaluate(held_out.ids.data(), held_out.labels.data(), 32);
        QVERIFY(std::abs(eval_gpu.loss_sum - eval_cpu.loss_sum) <= 1e-3 * std::max(1.0, std::abs(eval_cpu.loss_sum)));
    }

    // A model with the layer types' own ops (run on the GPU through run_op's host fallback where
    // the CUDA backend has no kernel) trains on one GPU and on two virtual GPUs as on the CPU.
    // SpatialDropout1D's masks follow the replica's seed, so one GPU draws the CPU's masks.
    void layerOpsTrainOnTheGpuLikeTheCpu() {
        REQUIRE_GPU();
        const Model model = Model::from_json_text(R"({"input_length": 40, "layers": [
            {"class_name": "Embedding", "config": {"input_dim": 200, "output_dim": 8}},
            {"class_name": "SpatialDropout1D", "config": {"rate": 0.25}},
            {"class_name": "Conv1D", "config": {"filters": 16, "kernel_size": 3, "activation": "relu"}},
            {"class_name": "GlobalAveragePooling1D"},
            {"class_name": "Dense", "config": {"units": 5, "activation": "softmax"}}]})");
        const std::vector<float> weights = initial_weights(model, 11);
        auto cpu = strategy_on("cpu", AllReduceAlgorithm::Auto);
        auto cuda = strategy_on(gpu_spec(), AllReduceAlgorithm::Auto);
        auto mirrored = strategy_on(gpu_spec(":2x256MB"), AllReduceAlgorithm::Auto);
        for (auto* s : {cpu.get(), cuda.get(), mirrored.get()}) s->build(model, 16, nadam(), weights);
        for (int step = 0; step < 10; ++step) {
            const Batch batch = random_batch(model, 16, 7000u + static_cast<std::uint32_t>(step));
            const auto seed = static_cast<std::uint64_t>(step + 1);
            const auto want = cpu->train_step(batch.ids.data(), batch.labels.data(), 16, seed);
            const auto got = cuda->train_step(batch.ids.data(), batch.labels.data(), 16, seed);
            QVERIFY(got.finite);
            QVERIFY2(std::abs(got.counts.loss_sum - want.counts.loss_sum) <= 1e-4 * std::max(1.0, std::abs(want.counts.loss_sum)),
                     qPrintable(QString("step %1: loss %2 on the GPU, %3 on the CPU").arg(step + 1).arg(got.counts.loss_sum).arg(want.counts.loss_sum)));
            // Two replicas draw two masks, not the one of a single device: only finite here.
            QVERIFY(mirrored->train_step(batch.ids.data(), batch.labels.data(), 16, seed).finite);
        }
        const double error = nmse(cuda->weights(), cpu->weights());
        qInfo("SpatialDropout1D + GlobalAveragePooling1D model after 10 steps: normalised MSE %.3g between GPU and CPU", error);
        QVERIFY2(error < 1e-6, qPrintable(QString("normalised MSE %1").arg(error)));
        const std::vector<float> first = mirrored->weights(0), second = mirrored->weights(1);
        QVERIFY(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)) == 0);
    }

    void mirroredOnVirtualGpus_data() {
        QTest::addColumn<int>("replicas");
        QTest::addColumn<int>("batch_size");
        QTest::newRow("2 virtual GPUs") << 2 << 32;
        QTest::newRow("4 virtual GPUs") << 4 << 32;
        // 3 samples over 4 replicas: one shard is empty and its zero gradient must be in place
        // (not merely queued on its stream) when the others read it.
        QTest::newRow("4 virtual GPUs, an empty shard") << 4 << 3;
    }

    // The mirrored step on N virtual GPUs equals the one-GPU step on the same global batch, and
    // the mirrored variables stay bit-identical; NCCL is refused with TensorFlow's line.
    void mirroredOnVirtualGpus() {
        REQUIRE_GPU();
        QFETCH(int, replicas);
        QFETCH(int, batch_size);
        const Model model = Model::reference();
        const std::vector<float> weights = initial_weights(model, 9);
        Log log;
        auto mirrored = strategy_on(gpu_spec(":" + std::to_string(replicas) + "x256MB"), AllReduceAlgorithm::Auto, &log);
        auto single = strategy_on(gpu_spec(), AllReduceAlgorithm::Auto);
        QCOMPARE(mirrored->all_reduce_algorithm(), AllReduceAlgorithm::ReduceToOneDevice);
        QVERIFY2(log.contains("NCCL is not supported when using virtual GPUs, falling back to reduction to one device"), log.all().c_str());
        QVERIFY2(log.contains("Reduce to /device:GPU:0 then broadcast to (/device:GPU:0, /device:GPU:1"), log.all().c_str());
        mirrored->build(model, batch_size, nadam(), weights);
        single->build(model, batch_size, nadam(), weights);
        mirrored->set_detailed_stats(true);  // what the step view shows: gradient norms, checksums
        for (int step = 0; step < 10; ++step) {
            const Batch batch = random_batch(model, batch_size, 2000u + static_cast<std::uint32_t>(step));
            const auto got = mirrored->train_step(batch.ids.data(), batch.labels.data(), batch_size, static_cast<std::uint64_t>(step + 1));
            const auto want = single->train_step(batch.ids.data(), batch.labels.data(), batch_size, static_cast<std::uint64_t>(step + 1));
            QVERIFY(std::abs(got.counts.loss_sum - want.counts.loss_sum) <= 1e-4 * std::max(1.0, std::abs(want.counts.loss_sum)));
            QCOMPARE(got.counts.samples, want.counts.samples);
            QCOMPARE(static_cast<int>(got.replicas.size()), replicas);
            for (const PhaseTimings& phase : got.replicas) {
                QVERIFY2(phase.grad_norm_after > 0 && std::isfinite(phase.grad_norm_after), "no global gradient norm");
                QVERIFY2(std::abs(phase.grad_norm_after - got.replicas.front().grad_norm_after) <= 1e-12 * phase.grad_norm_after,
                         "replicas disagree on the all-reduced gradient's norm");
                QVERIFY2(phase.shard_size == 0 || phase.grad_norm_before > 0, "no local gradient norm");
                QVERIFY(phase.weights_checksum != 0);
                QCOMPARE(phase.weights_checksum, got.replicas.front().weights_checksum);
            }
        }
        const std::vector<float> first = mirrored->weights(0);
        for (int r = 1; r < replicas; ++r) {
            const std::vector<float> other = mirrored->weights(r);
            QVERIFY2(std::memcmp(first.data(), other.data(), first.size() * sizeof(float)) == 0,
                     qPrintable(QString("replica %1's variables differ from replica 0's").arg(r)));
        }
        const double error = nmse(first, single->weights());
        qInfo("%d virtual GPUs vs one GPU after 10 steps: normalised MSE %.3g", replicas, error);
        QVERIFY2(error < 1e-6, qPrintable(QString("normalised MSE %1").arg(error)));
        for (const auto& memory : mirrored->memory()) {
            QCOMPARE(memory.limit_bytes, 256 * kMiB);
            QVERIFY(memory.bytes_in_use > 0 && memory.bytes_in_use <= memory.limit_bytes);
            QVERIFY(memory.peak_bytes >= memory.bytes_in_use);
        }
    }

    void memoryLimitIsEnforced() {
        REQUIRE_GPU();
        auto devices = create_logical_devices(DeviceConfig::parse(gpu_spec(":2x64MB")), gpu().registry);
        MemoryArena& arena = devices[1]->arena();
        const std::int64_t free_before = gpu().provider->free_memory_bytes(gpu().indices.front());
        QVERIFY(free_before > 0);
        {
            Tensor big(arena, DType::F32, Shape{48 * kMiB / 4}, "a 48 MiB tensor");
            QCOMPARE(arena.stats().bytes_in_use, 48 * kMiB);
            QCOMPARE(arena.stats().limit_bytes, 64 * kMiB);
            QVERIFY(gpu().provider->free_memory_bytes(gpu().indices.front()) < free_before);
            try {
                Tensor too_much(arena, DType::F32, Shape{32 * kMiB / 4}, "a 32 MiB tensor");
                QFAIL("the 64 MiB limit let 80 MiB through");
            } catch (const OutOfMemoryError& error) {
                const std::string message = error.what();
                QVERIFY2(message.find("/device:GPU:1") != std::string::npos, error.what());
                QVERIFY2(message.find("64.0 MiB") != std::string::npos, error.what());
                QVERIFY2(message.find("32.0 MiB") != std::string::npos, error.what());
                QVERIFY2(message.find("a 32 MiB tensor") != std::string::npos, error.what());
            }
            // The other virtual device has its own limit.
            Tensor neighbour(devices[0]->arena(), DType::F32, Shape{48 * kMiB / 4}, "the neighbour's 48 MiB");
            QCOMPARE(devices[0]->arena().stats().bytes_in_use, 48 * kMiB);
        }
        QCOMPARE(arena.stats().bytes_in_use, std::int64_t{0});
        QCOMPARE(arena.stats().peak_bytes_in_use, 48 * kMiB);

        // A model that does not fit is refused when it is built, naming the device and the tensor.
        auto strategy = strategy_on(gpu_spec(":2x64MB"), AllReduceAlgorithm::Auto);
        try {
            strategy->build(Model::reference(), 8192, nadam(), initial_weights(Model::reference(), 1));
            QFAIL("a 4096-sample replica of the tutorial model fitted in 64 MiB");
        } catch (const OutOfMemoryError& error) {
            QVERIFY2(std::string(error.what()).find("/device:GPU:") != std::string::npos, error.what());
            QVERIFY2(std::string(error.what()).find("limit of 64.0 MiB") != std::string::npos, error.what());
        }
    }

    // What a person sees of a GPU step: phases timed by CUDA events, the backend's scratch
    // (cuDNN workspace, kernel transposes) inside the virtual device's arena and limit, and the
    // chip's free memory on every row of the memory panel.
    void gpuStepTimesPhasesAndKeepsScratchInTheArena() {
        REQUIRE_GPU();
        auto strategy = strategy_on(gpu_spec(":2x1024MB"), AllReduceAlgorithm::Auto);
        const Model model = Model::reference();
        strategy->build(model, 32, nadam(), initial_weights(model, 5));
        std::vector<std::int64_t> tensors_only;
        for (const auto& memory : strategy->memory()) tensors_only.push_back(memory.bytes_in_use);
        const Batch batch = random_batch(model, 32, 6100u);
        // The first step also loads cuDNN's kernels and plans the convolutions inside its timed
        // window; the phases are judged from the second step on.
        QVERIFY(strategy->train_step(batch.ids.data(), batch.labels.data(), 32, 1).finite);
        for (int step = 2; step <= 4; ++step) {
            const auto start = std::chrono::steady_clock::now();
            const TrainStepResult& result = strategy->train_step(batch.ids.data(), batch.labels.data(), 32, static_cast<std::uint64_t>(step));
            const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            QVERIFY(result.finite);
            for (const PhaseTimings& phase : result.replicas) {
                QVERIFY2(phase.device_timed, "phases were not timed with CUDA events");
                QVERIFY(phase.forward_ms > 0 && phase.backward_ms > 0 && phase.allreduce_ms >= 0 && phase.update_ms > 0);
                // The device's phases happen inside the step the host waited for.
                const double device_ms = phase.forward_ms + phase.backward_ms + phase.allreduce_ms + phase.update_ms;
                QVERIFY2(device_ms <= wall_ms * 1.01 + 0.1,
                         qPrintable(QString("device phases %1 ms in a %2 ms step").arg(device_ms).arg(wall_ms)));
            }
        }
        const auto memory = strategy->memory();
        for (std::size_t r = 0; r < memory.size(); ++r) {
            QVERIFY2(memory[r].bytes_in_use > tensors_only[r],
                     "the backend's scratch did not come from the virtual device's arena");
            QVERIFY(memory[r].bytes_in_use <= memory[r].limit_bytes);
            QVERIFY2(memory[r].physical_free_bytes > 0, "no free memory reported for the physical GPU");
            qInfo("%s: tensors %lld B, with scratch %lld B, GPU free %lld MiB", memory[r].device.c_str(),
                  static_cast<long long>(tensors_only[r]), static_cast<long long>(memory[r].bytes_in_use),
                  static_cast<long long>(memory[r].physical_free_bytes >> 20));
        }
    }

    void ncclAllReduceOnSeparateGpus() {
        REQUIRE_GPU();
        if (gpu().indices.size() < 2) {
            QSKIP(qPrintable(QString("NCCL needs 2 GPUs; this machine has %1").arg(gpu().indices.size())));
        }
        const std::string spec = "gpu:" + std::to_string(gpu().indices[0]) + ",gpu:" + std::to_string(gpu().indices[1]);
        Log log;
        auto nccl = strategy_on(spec, AllReduceAlgorithm::Auto, &log);
        QCOMPARE(nccl->all_reduce_algorithm(), AllReduceAlgorithm::Nccl);
        QVERIFY2(log.contains("NCCL"), log.all().c_str());
        auto ring = strategy_on(spec, AllReduceAlgorithm::Ring);
        auto reduce = strategy_on(spec, AllReduceAlgorithm::ReduceToOneDevice);
        auto single = strategy_on(gpu_spec(), AllReduceAlgorithm::Auto);
        const Model model = Model::reference();
        const std::vector<float> weights = initial_weights(model, 3);
        for (auto* s : {nccl.get(), ring.get(), reduce.get(), single.get()}) s->build(model, 32, nadam(), weights);
        for (int step = 0; step < 5; ++step) {
            const Batch batch = random_batch(model, 32, 3000u + static_cast<std::uint32_t>(step));
            for (auto* s : {nccl.get(), ring.get(), reduce.get(), single.get()}) {
                QVERIFY(s->train_step(batch.ids.data(), batch.labels.data(), 32, static_cast<std::uint64_t>(step + 1)).finite);
            }
        }
        const std::vector<float> want = single->weights();
        for (auto* s : {nccl.get(), ring.get(), reduce.get()}) {
            QVERIFY2(nmse(s->weights(0), want) < 1e-6, all_reduce_name(s->all_reduce_algorithm()).data());
            const auto a = s->weights(0), b = s->weights(1);
            QVERIFY(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
        }
    }

    // ms/step and samples/s for 1, 2 and 4 virtual GPUs on the reference workload (the tutorial
    // model, batch 32). Printed as "BENCH ..." lines that tests/gpu/device-check.sh tabulates.
    // What the CUDA backend chose where it had a choice, printed for the device check: cuDNN's
    // algorithm for every convolution pass, and the training step as one CUDA Graph on virtual
    // GPUs. A pass that left cuDNN for the direct kernels without being asked to (a heuristic with
    // no FMA algorithm, a refusal at run time) fails here, naming why, instead of going unseen.
    void kernelChoicesAreReported() {
        REQUIRE_GPU();
        const Model model = Model::reference();
        auto strategy = strategy_on(gpu_spec(":2x1024MB"), AllReduceAlgorithm::Auto);
        strategy->build(model, 32, nadam(), initial_weights(model, 4));
        for (std::uint32_t step = 0; step < 4; ++step) {
            const Batch batch = random_batch(model, 32, 6000u + step);
            QVERIFY(strategy->train_step(batch.ids.data(), batch.labels.data(), 32, step + 1).finite);
        }
        const std::vector<std::string> lines = strategy->kernel_choices();
        const bool direct_asked = qEnvironmentVariable("MIRRORLAB_CUDA_CONV") == QStringLiteral("direct");
        int convolutions = 0, graphs = 0;
        for (const std::string& line : lines) {
            qInfo("kernel choice: %s", line.c_str());
            if (line.find("conv1d ") != std::string::npos) {
                ++convolutions;
                // Asked for the direct kernels: all three passes say so; else none left cuDNN.
                const std::string wanted = direct_asked ? "cuDNN" : "direct kernel";
                QVERIFY2(line.find(wanted) == std::string::npos,
                         qPrintable(QString("a convolution pass %1: %2")
                                        .arg(direct_asked ? "ran cuDNN though the direct kernels were asked for"
                                                          : "left cuDNN")
                                        .arg(line.c_str())));
            }
            if (line.find("one CUDA Graph of") != std::string::npos) ++graphs;
        }
        // The tutorial's two Conv1D layers, each on both replicas; the step graph on replica 0.
        QCOMPARE(convolutions, 4);
        QCOMPARE(graphs, 1);
    }

    // MIRRORLAB_CUDA_DETERMINISTIC=1: the embedding gradient and its statistics as sorted segment
    // sums, which add each row's repeated ids in position order, as the reference's loop does:
    // the CPU's bits exactly, on every run (atomics add them in whatever order the blocks run,
    // which the emulator shuffles as a GPU may). Six ids over 200 positions repeat each ~33 times.
    void deterministicEmbeddingGradientIsTheCpusBitForBit() {
        REQUIRE_GPU();
        constexpr std::int64_t kPositions = 200, kVocabulary = 6, kWidth = 5;
        std::mt19937 rng(31);
        std::uniform_int_distribution<std::int32_t> id(0, kVocabulary - 1);
        std::uniform_real_distribution<float> value(-1.0f, 1.0f);
        std::vector<std::int32_t> ids(kPositions);
        std::vector<float> grad_out(kPositions * kWidth);
        for (auto& i : ids) i = id(rng);
        // Magnitudes over six decades, so that the order of the additions shows in the last bits.
        for (std::size_t i = 0; i < grad_out.size(); ++i) grad_out[i] = value(rng) * std::pow(10.0f, static_cast<float>(i % 7) - 3.0f);
        const auto run = [&](Backend& backend, RawAllocator* allocator) {
            std::vector<void*> blocks;
            const auto tensor = [&](Shape shape, DType dtype) {
                const std::int64_t bytes = shape.numel() * 4;
                void* data = allocator != nullptr ? allocator->allocate_raw(bytes) : std::malloc(static_cast<std::size_t>(bytes));
                blocks.push_back(data);
                return TensorView{data, std::move(shape), dtype};
            };
            const TensorView ids_view = tensor(Shape{kPositions / 40, 40}, DType::I32);
            const TensorView grad_view = tensor(Shape{kPositions / 40, 40, kWidth}, DType::F32);
            const TensorView table = tensor(Shape{kVocabulary, kWidth}, DType::F32);
            const TensorView squares = tensor(Shape{kVocabulary, kWidth}, DType::F32);
            const TensorView counts = tensor(Shape{kVocabulary}, DType::F32);
            backend.upload(ids_view, ids.data());
            backend.upload(grad_view, grad_out.data());
            backend.embedding_backward(ids_view, grad_view, table);
            backend.embedding_gradient_stats(ids_view, grad_view, squares, counts);
            std::vector<float> result(static_cast<std::size_t>(2 * kVocabulary * kWidth + kVocabulary));
            backend.download(result.data(), table);
            backend.download(result.data() + kVocabulary * kWidth, squares);
            backend.download(result.data() + 2 * kVocabulary * kWidth, counts);
            for (void* block : blocks) allocator != nullptr ? allocator->free_raw(block) : std::free(block);
            return result;
        };
        const std::vector<float> want = run(*make_cpu_backend(), nullptr);
        const int index = gpu().indices.front();
        qputenv("MIRRORLAB_CUDA_DETERMINISTIC", "1");
        std::unique_ptr<Backend> deterministic = gpu().provider->create_backend(index);
        qunsetenv("MIRRORLAB_CUDA_DETERMINISTIC");
        const std::shared_ptr<RawAllocator> allocator = gpu().provider->create_allocator(index);
        for (int repeat = 0; repeat < 3; ++repeat) {
            const std::vector<float> got = run(*deterministic, allocator.get());
            QVERIFY2(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0,
                     qPrintable(QString("run %1: the deterministic embedding gradient is not the CPU's, bit for bit")
                                    .arg(repeat + 1)));
        }
        bool reported = false;
        for (const std::string& line : deterministic->kernel_choices()) {
            if (line.find("sorted segment sums") != std::string::npos) reported = true;
        }
        QVERIFY2(reported, "kernel_choices does not say the embedding gradient is deterministic");
        // What the atomics give: close to the CPU's, and (when the order differs) not its bits.
        const std::vector<float> atomic = run(*target(TargetKind::Cuda).backend, target(TargetKind::Cuda).allocator.get());
        const bool same_bits = std::memcmp(atomic.data(), want.data(), want.size() * sizeof(float)) == 0;
        qInfo("atomic adds: normalised MSE %.3g against the CPU, %s its bits", nmse(atomic, want),
              same_bits ? "with" : "without");
        QVERIFY(nmse(atomic, want) < 1e-10);
    }

    void benchmarkVirtualGpus() {
        REQUIRE_GPU();
        if (qEnvironmentVariableIntValue("MIRRORLAB_GPU_BENCHMARK") != 1) QSKIP("set MIRRORLAB_GPU_BENCHMARK=1 to run the benchmark");
        const Model model = Model::reference();
        const std::vector<float> weights = initial_weights(model, 1);
        std::vector<Batch> batches;
        for (std::uint32_t i = 0; i < 8; ++i) batches.push_back(random_batch(model, 32, 4000u + i));
        const int gpu_index = gpu().indices.front();
        for (int replicas : {1, 2, 4}) {
            const std::string spec = replicas == 1 ? gpu_spec() : gpu_spec(":" + std::to_string(replicas) + "x1024MB");
            const std::int64_t free_before = gpu().provider->free_memory_bytes(gpu_index);
            auto strategy = strategy_on(spec, AllReduceAlgorithm::Auto);
            strategy->build(model, 32, nadam(), weights);
            constexpr int kWarmup = 10, kSteps = 100;
            double allreduce_ms = 0.0;
            std::chrono::steady_clock::time_point start;
            for (int step = 0; step < kWarmup + kSteps; ++step) {
                if (step == kWarmup) start = std::chrono::steady_clock::now();
                const Batch& batch = batches[static_cast<std::size_t>(step) % batches.size()];
                const auto result = strategy->train_step(batch.ids.data(), batch.labels.data(), 32, static_cast<std::uint64_t>(step + 1));
                if (step >= kWarmup) allreduce_ms += result.replicas.front().allreduce_ms;
            }
            const double total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            const double ms_per_step = total_ms / kSteps;
            // What the emulator's host-cost model predicts for a step that is one graph (CI prints it
            // from counted calls in test_gpu_step_budget; here from the graph's node count).
            const std::int64_t nodes = graph_nodes(strategy->kernel_choices());
            const test::HostCostModel cost;
            const double predicted_ms =
                nodes > 0 ? (cost.graph_launch_us + cost.graph_node_us * static_cast<double>(nodes) + cost.sync_us) / 1000.0
                          : -1.0;
            std::printf("BENCH replicas=%d devices=%s ms_per_step=%.3f samples_per_s=%.0f allreduce_ms=%.3f "
                        "graph_nodes=%lld predicted_host_ms=%.3f\n",
                        replicas, spec.c_str(), ms_per_step, 32.0 * 1000.0 / ms_per_step, allreduce_ms / kSteps,
                        static_cast<long long>(nodes), predicted_ms);
            // The GPU memory this run took (arenas, contexts, library handles and workspaces), and
            // how much of it lies outside the arenas, where no virtual device's limit counts it.
            std::int64_t limits = 0, peak = 0;
            for (const DeviceMemory& memory : strategy->memory()) {
                limits += memory.limit_bytes;
                peak += memory.peak_bytes;
            }
            const std::int64_t taken = free_before - gpu().provider->free_memory_bytes(gpu_index);
            std::printf("MEMORY devices=%s limits_mib=%.1f arena_peak_mib=%.1f process_mib=%.1f outside_arenas_mib=%.1f\n",
                        spec.c_str(), static_cast<double>(limits) / kMiB, static_cast<double>(peak) / kMiB,
                        static_cast<double>(taken) / kMiB, static_cast<double>(taken - peak) / kMiB);
            std::fflush(stdout);
        }
    }
};

QTEST_GUILESS_MAIN(TestGpuOps)
#include "test_gpu_ops.moc"
