// What the oneDNN comparisons (onednn_conv.cpp, onednn_block.cpp) share: the tutorial's two
// Conv1D shapes, random inputs, the check that oneDNN computed the same op as ours, and timing
// that interleaves the calls. Built only by compare_onednn.sh, never part of the project's build.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/backend/tensor.h"
#include "core/util/denormals.h"
#include "core/util/thread_pool.h"

namespace onednn_bench {

struct ConvShape {
    const char* name;
    int batch, length, in_channels, window, out_channels;
    int out_length() const { return length - window + 1; }  // 'valid', stride 1: the tutorial's
};

// One replica's shard (batch 16) through the tutorial's Conv1D(64, 5) and Conv1D(32, 3).
constexpr ConvShape kShapes[] = {{"conv1", 16, 300, 7, 5, 64}, {"conv2", 16, 148, 64, 3, 32}};

// Largest |a - b| relative to the largest |b|: float sums in another order differ by rounding only.
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0.0, scale = 1e-30;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
        scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    }
    return worst / scale;
}

inline std::vector<float> random_values(std::mt19937& rng, std::size_t count) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(count);
    for (float& v : values) v = uniform(rng);
    return values;
}

// a * b * c, as the count of a tensor's floats.
inline std::size_t elements(int a, int b, int c) {
    return static_cast<std::size_t>(a) * static_cast<std::size_t>(b) * static_cast<std::size_t>(c);
}

// A Conv1D's inputs in Keras' layouts: x [batch, length, Cin], kernel [window, Cin, Cout], bias [Cout].
struct ConvInputs {
    std::vector<float> x, kernel, bias;
};

// Random inputs for shape `s`, drawn in that order.
inline ConvInputs random_conv_inputs(std::mt19937& rng, const ConvShape& s) {
    ConvInputs in;
    in.x = random_values(rng, elements(s.batch, s.length, s.in_channels));
    in.kernel = random_values(rng, elements(s.window, s.in_channels, s.out_channels));
    in.bias = random_values(rng, static_cast<std::size_t>(s.out_channels));
    return in;
}

// `values` as the engine's float tensor of `shape`.
inline mirrorlab::TensorView float_view(std::vector<float>& values, mirrorlab::Shape shape) {
    return mirrorlab::TensorView{values.data(), shape, mirrorlab::DType::F32};
}

// Medians of `runs` calls of each of `calls`, taken in turn (a machine whose speed drifts slows
// all of them alike, not whichever happened to run last).
inline std::vector<double> interleaved_medians_ms(int runs, const std::vector<std::function<void()>>& calls) {
    for (int i = 0; i < 5; ++i) {
        for (const auto& call : calls) call();  // warm caches and oneDNN's JIT
    }
    std::vector<std::vector<double>> times(calls.size());
    for (int i = 0; i < runs; ++i) {
        for (std::size_t c = 0; c < calls.size(); ++c) {
            const auto start = std::chrono::steady_clock::now();
            calls[c]();
            const auto end = std::chrono::steady_clock::now();
            times[c].push_back(std::chrono::duration<double, std::milli>(end - start).count());
        }
    }
    std::vector<double> medians;
    for (auto& t : times) {
        std::nth_element(t.begin(), t.begin() + runs / 2, t.end());
        medians.push_back(t[static_cast<std::size_t>(runs / 2)]);
    }
    return medians;
}

// The runs asked for on the command line (default 101), and this thread set up as a replica's:
// denormals flushed, our kernels on one thread (oneDNN gets one through OMP_NUM_THREADS).
inline int start_one_thread(int argc, char** argv) {
    mirrorlab::enable_flush_denormals();
    mirrorlab::ThreadPool::instance().set_limit(1);
    return argc > 1 ? std::max(1, std::atoi(argv[1])) : 101;
}

// `source` (any layout) copied out in `layout` (Keras' own): what a result is compared in.
inline std::vector<float> read_in_layout(const dnnl::engine& engine, dnnl::stream& stream, dnnl::memory source,
                                         const dnnl::memory::desc& layout, std::size_t count) {
    std::vector<float> host(count);
    dnnl::memory target(layout, engine, host.data());
    dnnl::reorder(source, target).execute(stream, source, target);
    stream.wait();
    return host;
}

}  // namespace onednn_bench
