// oneDNN's convolutions next to MirrorLab's on the tutorial's two Conv1D shapes, one thread, batch
// 16 (one replica's shard): issue #17 asks that the fast path be chosen by measurement on each
// instruction set, ours or oneDNN's. Built and run by compare_onednn.sh, which caps both to the
// same instruction set. oneDNN runs with Keras' layouts (nwc activations, wio kernels: what the
// engine holds) and with the layouts it picks itself (format any; the reorders into them are not
// timed, which flatters it). Every oneDNN result is checked against ours first: a benchmark of a
// different op would say nothing.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/backend/cpu_fast.h"
#include "packaging/bench/onednn_bench.h"

namespace {

using mirrorlab::Conv1DParams;
using onednn_bench::ConvShape;
using onednn_bench::interleaved_medians_ms;
using onednn_bench::kShapes;
using onednn_bench::random_values;
using onednn_bench::relative_difference;
using tag = dnnl::memory::format_tag;

struct Buffers : onednn_bench::ConvInputs {
    std::vector<float> grad_y;
    std::vector<float> y, grad_x, grad_kernel, grad_bias;  // ours, the reference for oneDNN's
};

// One shape's convolution in oneDNN: its forward, and its backward (grad x, then grad kernel and
// bias), on memories filled once from our buffers.
class OneDnnConv {
  public:
    OneDnnConv(const ConvShape& s, const Buffers& in, bool keras_layouts) : stream_(engine_) {
        using dt = dnnl::memory::data_type;
        const dnnl::memory::dims src_dims{s.batch, s.in_channels, s.length};
        const dnnl::memory::dims weight_dims{s.out_channels, s.in_channels, s.window};
        const dnnl::memory::dims dst_dims{s.batch, s.out_channels, s.out_length()};
        keras_src_ = dnnl::memory::desc(src_dims, dt::f32, tag::nwc);
        keras_weights_ = dnnl::memory::desc(weight_dims, dt::f32, tag::wio);
        keras_dst_ = dnnl::memory::desc(dst_dims, dt::f32, tag::nwc);
        bias_md_ = dnnl::memory::desc({s.out_channels}, dt::f32, tag::x);
        const auto layout = [&](const dnnl::memory::desc& keras, const dnnl::memory::dims& dims) {
            return keras_layouts ? keras : dnnl::memory::desc(dims, dt::f32, tag::any);
        };
        const auto src = layout(keras_src_, src_dims), weights = layout(keras_weights_, weight_dims),
                   dst = layout(keras_dst_, dst_dims);
        const dnnl::memory::dims strides{1}, padding{0};
        const dnnl::convolution_forward::primitive_desc forward(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                            src, weights, bias_md_, dst, strides, padding, padding),
            engine_);
        const dnnl::convolution_backward_data::primitive_desc backward_data(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src, weights, dst, strides,
                                                  padding, padding),
            engine_, forward);
        const dnnl::convolution_backward_weights::primitive_desc backward_weights(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, weights, bias_md_, dst,
                                                     strides, padding, padding),
            engine_, forward);
        forward_ = dnnl::convolution_forward(forward);
        data_ = dnnl::convolution_backward_data(backward_data);
        weights_ = dnnl::convolution_backward_weights(backward_weights);
        implementation_ = std::string(forward.impl_info_str()) + " / " + backward_data.impl_info_str() + " / " +
                          backward_weights.impl_info_str();
        x_ = filled(forward.src_desc(), in.x, keras_src_);
        kernel_ = filled(forward.weights_desc(), in.kernel, keras_weights_);
        bias_ = filled(bias_md_, in.bias, bias_md_);
        y_ = dnnl::memory(forward.dst_desc(), engine_);
        grad_y_ = filled(backward_data.diff_dst_desc(), in.grad_y, keras_dst_);
        kernel_for_data_ = filled(backward_data.weights_desc(), in.kernel, keras_weights_);
        grad_x_ = dnnl::memory(backward_data.diff_src_desc(), engine_);
        x_for_weights_ = filled(backward_weights.src_desc(), in.x, keras_src_);
        grad_y_for_weights_ = filled(backward_weights.diff_dst_desc(), in.grad_y, keras_dst_);
        grad_kernel_ = dnnl::memory(backward_weights.diff_weights_desc(), engine_);
        grad_bias_ = dnnl::memory(bias_md_, engine_);
    }

    void forward() {
        forward_.execute(stream_, {{DNNL_ARG_SRC, x_}, {DNNL_ARG_WEIGHTS, kernel_}, {DNNL_ARG_BIAS, bias_},
                                   {DNNL_ARG_DST, y_}});
        stream_.wait();
    }
    void backward() {
        data_.execute(stream_, {{DNNL_ARG_DIFF_DST, grad_y_}, {DNNL_ARG_WEIGHTS, kernel_for_data_},
                                {DNNL_ARG_DIFF_SRC, grad_x_}});
        weights_.execute(stream_, {{DNNL_ARG_SRC, x_for_weights_}, {DNNL_ARG_DIFF_DST, grad_y_for_weights_},
                                   {DNNL_ARG_DIFF_WEIGHTS, grad_kernel_}, {DNNL_ARG_DIFF_BIAS, grad_bias_}});
        stream_.wait();
    }
    const std::string& implementation() const { return implementation_; }
    // The largest relative difference from our results over every output (after forward() and backward()).
    double difference_from(const Buffers& ours) {
        return std::max({relative_difference(read(y_, keras_dst_, ours.y.size()), ours.y),
                         relative_difference(read(grad_x_, keras_src_, ours.grad_x.size()), ours.grad_x),
                         relative_difference(read(grad_kernel_, keras_weights_, ours.grad_kernel.size()),
                                             ours.grad_kernel),
                         relative_difference(read(grad_bias_, bias_md_, ours.grad_bias.size()), ours.grad_bias)});
    }

  private:
    // A memory of `layout` holding `host`, which is in Keras' layout.
    dnnl::memory filled(const dnnl::memory::desc& layout, std::vector<float> host, const dnnl::memory::desc& keras) {
        dnnl::memory target(layout, engine_), source(keras, engine_, host.data());
        dnnl::reorder(source, target).execute(stream_, source, target);
        stream_.wait();
        return target;
    }
    std::vector<float> read(dnnl::memory source, const dnnl::memory::desc& keras, std::size_t count) {
        return onednn_bench::read_in_layout(engine_, stream_, source, keras, count);
    }

    dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream_;
    dnnl::memory::desc keras_src_, keras_weights_, keras_dst_, bias_md_;
    dnnl::convolution_forward forward_;
    dnnl::convolution_backward_data data_;
    dnnl::convolution_backward_weights weights_;
    std::string implementation_;
    dnnl::memory x_, kernel_, bias_, y_, grad_y_, kernel_for_data_, grad_x_, x_for_weights_, grad_y_for_weights_,
        grad_kernel_, grad_bias_;
};

}  // namespace

int main(int argc, char** argv) {
    const int runs = onednn_bench::start_one_thread(argc, argv);
    mirrorlab::CpuFastBackend ours;
    std::printf("one thread, batch 16, medians of %d; our kernels %s, oneDNN %d.%d.%d (ONEDNN_MAX_CPU_ISA=%s)\n", runs,
                std::string(ours.isa()).c_str(), dnnl::version()->major, dnnl::version()->minor, dnnl::version()->patch,
                std::getenv("ONEDNN_MAX_CPU_ISA") ? std::getenv("ONEDNN_MAX_CPU_ISA") : "unset");
    std::printf("%-6s %-20s %12s %12s %10s  %s\n", "shape", "implementation", "forward ms", "backward ms", "differs",
                "oneDNN's kernels (forward / grad x / grad kernel)");
    std::mt19937 rng(17);
    int failures = 0;
    for (const ConvShape& s : kShapes) {
        Buffers b;
        static_cast<onednn_bench::ConvInputs&>(b) = onednn_bench::random_conv_inputs(rng, s);
        b.grad_y = random_values(rng, onednn_bench::elements(s.batch, s.out_length(), s.out_channels));
        b.y.resize(b.grad_y.size());
        b.grad_x.resize(b.x.size());
        b.grad_kernel.resize(b.kernel.size());
        b.grad_bias.resize(b.bias.size());
        const auto view = onednn_bench::float_view;
        const mirrorlab::Shape x_shape{s.batch, s.length, s.in_channels};
        const mirrorlab::Shape k_shape{s.window, s.in_channels, s.out_channels};
        const mirrorlab::Shape y_shape{s.batch, s.out_length(), s.out_channels}, b_shape{s.out_channels};
        const auto our_forward = [&] {
            ours.conv1d_forward(view(b.x, x_shape), view(b.kernel, k_shape), view(b.bias, b_shape), view(b.y, y_shape),
                                Conv1DParams{});
        };
        const auto our_backward = [&] {
            ours.conv1d_backward(view(b.x, x_shape), view(b.kernel, k_shape), view(b.grad_y, y_shape),
                                 view(b.grad_x, x_shape), view(b.grad_kernel, k_shape), view(b.grad_bias, b_shape),
                                 Conv1DParams{});
        };
        our_forward();
        our_backward();
        OneDnnConv keras_layout(s, b, true), own_layout(s, b, false);
        const std::vector<double> ms = interleaved_medians_ms(
            runs, {our_forward, [&] { keras_layout.forward(); }, [&] { own_layout.forward(); }, our_backward,
                   [&] { keras_layout.backward(); }, [&] { own_layout.backward(); }});
        std::printf("%-6s %-20s %12.3f %12.3f %10s\n", s.name, "MirrorLab", ms[0], ms[3], "");
        for (int k = 0; k < 2; ++k) {
            OneDnnConv& conv = k == 0 ? keras_layout : own_layout;
            const double difference = conv.difference_from(b);
            const bool same_op = difference < 1e-4;
            failures += same_op ? 0 : 1;
            std::printf("%-6s %-20s %12.3f %12.3f %10.1e  %s%s\n", s.name,
                        k == 0 ? "oneDNN, Keras layout" : "oneDNN, own layout", ms[1 + k], ms[4 + k], difference,
                        conv.implementation().c_str(), same_op ? "" : "  RESULTS DIFFER FROM OURS");
        }
    }
    return failures == 0 ? 0 : 1;
}
