// The tutorial's Conv1D + ReLU + MaxPooling1D(2) blocks as a training step runs them, ours next to
// oneDNN's, one thread, batch 16 (one replica's shard). onednn_conv.cpp compares the convolutions
// alone; training runs ours fused (one op each way, the ReLU and the pooling in the GEMM's stores,
// one sample at a time), so issue #17's "whichever is faster for each op" is decided here, on the
// ops the engine calls:
//   forward: x -> relu(conv(x) + bias) -> max pool (2, 2) -> pooled (and the pooling's winners)
//   backward: grad pooled -> pooling -> ReLU -> convolution's grad x, grad kernel and grad bias
// oneDNN gets its best: the ReLU as the convolution's post-op, the pooling's workspace, the ReLU's
// backward from the convolution's output. With its own layouts the reorders at the block's ends
// are timed (the engine's tensors are Keras' nwc: the Embedding's output, the next layer's input,
// the gradients it hands on) and reported apart; the kernel's reorder into oneDNN's layout is not
// (an engine built on oneDNN could hold the weights and apply the update in that layout), but its
// reorders between primitives that want different layouts of one tensor are. Every oneDNN result
// is checked against ours first. Built and run by compare_onednn.sh, never part of the build.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/backend/cpu_fast.h"
#include "packaging/bench/onednn_bench.h"

namespace {

using mirrorlab::DType;
using mirrorlab::TensorView;
using onednn_bench::ConvShape;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct BlockBuffers : onednn_bench::ConvInputs {
    std::vector<float> grad_pooled;  // the last input, in Keras' layout
    // Ours, the reference for oneDNN's (conv_y and grad_conv_y: the fused ops' working rows)
    std::vector<float> conv_y, pooled, grad_conv_y, grad_x, grad_kernel, grad_bias;
    std::vector<std::int32_t> argmax;
};

// One block in oneDNN: a list of primitives per direction, each step marked when it only changes a
// tensor's layout, so that the block runs with its reorders or, for the report, without them.
class OneDnnBlock {
  public:
    OneDnnBlock(const ConvShape& s, const BlockBuffers& in, bool keras_layouts)
        : stream_(engine_), x_host_(in.x), grad_pooled_host_(in.grad_pooled) {
        keras_src_ = dnnl::memory::desc({s.batch, s.in_channels, s.length}, dt::f32, tag::nwc);
        keras_weights_ = dnnl::memory::desc({s.out_channels, s.in_channels, s.window}, dt::f32, tag::wio);
        keras_pooled_ = dnnl::memory::desc({s.batch, s.out_channels, s.out_length() / 2}, dt::f32, tag::nwc);
        const Descriptors d = describe(s, keras_layouts);
        implementation_ = std::string(d.conv.impl_info_str()) + " / " + d.pool.impl_info_str() + " / " +
                          d.relu_back.impl_info_str() + " / " + d.data.impl_info_str() + " / " +
                          d.weights.impl_info_str();
        // The weights as the engine would hold them (not timed), in the forward's layout.
        kernel_ = memory(d.conv.weights_desc());
        dnnl::memory kernel_keras(keras_weights_, engine_, const_cast<float*>(in.kernel.data()));
        dnnl::reorder(kernel_keras, kernel_).execute(stream_, kernel_keras, kernel_);
        stream_.wait();
        bias_ = dnnl::memory(d.bias, engine_, const_cast<float*>(in.bias.data()));
        build_forward(d);
        build_backward(d);
    }

    void forward(bool with_reorders) { run(forward_, with_reorders); }
    void backward(bool with_reorders) { run(backward_, with_reorders); }
    bool has_reorders() const {
        for (const auto* steps : {&forward_, &backward_}) {
            for (const Step& step : *steps) {
                if (step.reorder) return true;
            }
        }
        return false;
    }
    const std::string& implementation() const { return implementation_; }
    // The largest relative difference from our results (after forward(true) and backward(true)).
    double difference_from(const BlockBuffers& ours) {
        using onednn_bench::relative_difference;
        return std::max({relative_difference(read(pooled_, keras_pooled_, ours.pooled.size()), ours.pooled),
                         relative_difference(read(grad_x_, keras_src_, ours.grad_x.size()), ours.grad_x),
                         relative_difference(read(grad_kernel_, keras_weights_, ours.grad_kernel.size()),
                                             ours.grad_kernel),
                         relative_difference(read(grad_bias_, grad_bias_.get_desc(), ours.grad_bias.size()),
                                             ours.grad_bias)});
    }

  private:
    // The primitives of one block, oneDNN's choice of layouts where `any` let it choose.
    struct Descriptors {
        dnnl::memory::desc bias;
        dnnl::convolution_forward::primitive_desc conv;  // with the ReLU as its post-op
        dnnl::pooling_forward::primitive_desc pool;
        dnnl::pooling_backward::primitive_desc pool_back;
        dnnl::eltwise_backward::primitive_desc relu_back;
        dnnl::convolution_backward_data::primitive_desc data;
        dnnl::convolution_backward_weights::primitive_desc weights;
    };

    Descriptors describe(const ConvShape& s, bool keras_layouts) const {
        const auto layout = [&](const dnnl::memory::dims& dims, tag keras) {
            return dnnl::memory::desc(dims, dt::f32, keras_layouts ? keras : tag::any);
        };
        const auto src = layout({s.batch, s.in_channels, s.length}, tag::nwc);
        const auto weights = layout({s.out_channels, s.in_channels, s.window}, tag::wio);
        const auto conv_dst = layout({s.batch, s.out_channels, s.out_length()}, tag::nwc);
        const auto pooled = layout({s.batch, s.out_channels, s.out_length() / 2}, tag::nwc);
        const dnnl::memory::dims one{1}, two{2}, none{0};
        const dnnl::algorithm direct = dnnl::algorithm::convolution_direct, max = dnnl::algorithm::pooling_max;
        const auto training = dnnl::prop_kind::forward_training;
        Descriptors d;
        d.bias = dnnl::memory::desc({s.out_channels}, dt::f32, tag::x);
        dnnl::post_ops relu_after;
        relu_after.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        dnnl::primitive_attr with_relu;
        with_relu.set_post_ops(relu_after);
        d.conv = {{training, direct, src, weights, d.bias, conv_dst, one, none, none}, with_relu, engine_};
        const auto conv_out = d.conv.dst_desc();
        d.pool = {{training, max, conv_out, pooled, two, two, none, none}, engine_};
        d.pool_back = {{max, conv_out, d.pool.dst_desc(), two, two, none, none}, engine_, d.pool};
        // The ReLU's backward needs a forward hint; the forward itself is the convolution's post-op.
        const auto relu = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
        const dnnl::eltwise_forward::primitive_desc relu_hint({training, relu, conv_out, 0.0f, 0.0f}, engine_);
        d.relu_back = {{relu, d.pool_back.diff_src_desc(), conv_out, 0.0f, 0.0f}, engine_, relu_hint};
        d.data = {{direct, src, weights, conv_dst, one, none, none}, engine_, d.conv};
        d.weights = {{direct, src, weights, d.bias, conv_dst, one, none, none}, engine_, d.conv};
        return d;
    }

    // [x to oneDNN's layout], the convolution with its ReLU, the pooling, [pooled to nwc].
    void build_forward(const Descriptors& d) {
        x_ = converted(dnnl::memory(keras_src_, engine_, x_host_.data()), d.conv.src_desc(), forward_);
        conv_y_ = memory(d.conv.dst_desc());
        workspace_ = memory(d.pool.workspace_desc());
        const dnnl::memory pooled = memory(d.pool.dst_desc());
        forward_.push_back({dnnl::convolution_forward(d.conv),
                            {{DNNL_ARG_SRC, x_}, {DNNL_ARG_WEIGHTS, kernel_}, {DNNL_ARG_BIAS, bias_},
                             {DNNL_ARG_DST, conv_y_}},
                            false});
        forward_.push_back({dnnl::pooling_forward(d.pool),
                            {{DNNL_ARG_SRC, conv_y_}, {DNNL_ARG_DST, pooled}, {DNNL_ARG_WORKSPACE, workspace_}},
                            false});
        pooled_ = converted(pooled, keras_pooled_, forward_);
    }

    // [grad pooled to oneDNN's layout], the pooling's, the ReLU's (in place where the layouts
    // allow), then the convolution's grad x [to nwc] and its grad kernel and bias [to the layout
    // of the weights, where the update would read it].
    void build_backward(const Descriptors& d) {
        const dnnl::memory grad_pooled = converted(dnnl::memory(keras_pooled_, engine_, grad_pooled_host_.data()),
                                                   d.pool_back.diff_dst_desc(), backward_);
        const dnnl::memory grad_conv = memory(d.pool_back.diff_src_desc());
        backward_.push_back({dnnl::pooling_backward(d.pool_back),
                             {{DNNL_ARG_DIFF_DST, grad_pooled}, {DNNL_ARG_DIFF_SRC, grad_conv},
                              {DNNL_ARG_WORKSPACE, workspace_}},
                             false});
        const dnnl::memory grad_relu =
            d.relu_back.diff_src_desc() == grad_conv.get_desc() ? grad_conv : memory(d.relu_back.diff_src_desc());
        backward_.push_back({dnnl::eltwise_backward(d.relu_back),
                             {{DNNL_ARG_DIFF_DST, grad_conv}, {DNNL_ARG_DST, conv_y_}, {DNNL_ARG_DIFF_SRC, grad_relu}},
                             false});
        const dnnl::memory grad_for_data = converted(grad_relu, d.data.diff_dst_desc(), backward_);
        const dnnl::memory grad_x = memory(d.data.diff_src_desc());
        backward_.push_back({dnnl::convolution_backward_data(d.data),
                             {{DNNL_ARG_DIFF_DST, grad_for_data},
                              {DNNL_ARG_WEIGHTS, converted(kernel_, d.data.weights_desc(), backward_)},
                              {DNNL_ARG_DIFF_SRC, grad_x}},
                             false});
        grad_x_ = converted(grad_x, keras_src_, backward_);
        const dnnl::memory grad_for_weights = d.weights.diff_dst_desc() == grad_for_data.get_desc()
                                                  ? grad_for_data
                                                  : converted(grad_relu, d.weights.diff_dst_desc(), backward_);
        grad_kernel_ = memory(d.weights.diff_weights_desc());
        grad_bias_ = memory(d.bias);
        backward_.push_back({dnnl::convolution_backward_weights(d.weights),
                             {{DNNL_ARG_SRC, converted(x_, d.weights.src_desc(), backward_)},
                              {DNNL_ARG_DIFF_DST, grad_for_weights},
                              {DNNL_ARG_DIFF_WEIGHTS, grad_kernel_},
                              {DNNL_ARG_DIFF_BIAS, grad_bias_}},
                             false});
        converted(grad_kernel_, d.conv.weights_desc(), backward_);
    }

    struct Step {
        dnnl::primitive primitive;
        std::unordered_map<int, dnnl::memory> args;
        bool reorder;  // only a layout change
    };

    dnnl::memory memory(const dnnl::memory::desc& desc) { return dnnl::memory(desc, engine_); }
    // `from` in the layout `wanted`: itself, or a new memory that a reorder step (appended) fills.
    dnnl::memory converted(const dnnl::memory& from, const dnnl::memory::desc& wanted, std::vector<Step>& steps) {
        if (from.get_desc() == wanted) return from;
        dnnl::memory to = memory(wanted);
        steps.push_back({dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, true});
        return to;
    }
    void run(const std::vector<Step>& steps, bool with_reorders) {
        for (const Step& step : steps) {
            if (with_reorders || !step.reorder) step.primitive.execute(stream_, step.args);
        }
        stream_.wait();
    }
    std::vector<float> read(dnnl::memory source, const dnnl::memory::desc& keras, std::size_t count) {
        return onednn_bench::read_in_layout(engine_, stream_, source, keras, count);
    }

    dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream_;
    std::vector<float> x_host_, grad_pooled_host_;
    dnnl::memory::desc keras_src_, keras_weights_, keras_pooled_;
    std::vector<Step> forward_, backward_;
    std::string implementation_;
    dnnl::memory kernel_, bias_, x_, conv_y_, workspace_, pooled_, grad_x_, grad_kernel_, grad_bias_;
};

// One block's comparison: ours and oneDNN's (Keras' layouts, its own) timed side by side, each
// oneDNN result checked against ours. Returns the number of oneDNN results that differ.
int compare_block(const ConvShape& s, mirrorlab::CpuFastBackend& ours, std::mt19937& rng, int runs) {
    using onednn_bench::interleaved_medians_ms;
    int failures = 0;
    const std::int64_t pooled_length = s.out_length() / 2;
    BlockBuffers b;
    static_cast<onednn_bench::ConvInputs&>(b) = onednn_bench::random_conv_inputs(rng, s);
    b.grad_pooled = onednn_bench::random_values(
        rng, onednn_bench::elements(s.batch, static_cast<int>(pooled_length), s.out_channels));
    b.conv_y.resize(onednn_bench::elements(s.batch, s.out_length(), s.out_channels));
    b.grad_conv_y.resize(b.conv_y.size());
    b.pooled.resize(b.grad_pooled.size());
    b.argmax.resize(b.grad_pooled.size());
    b.grad_x.resize(b.x.size());
    b.grad_kernel.resize(b.kernel.size());
    b.grad_bias.resize(b.bias.size());
    const auto view = onednn_bench::float_view;
    const TensorView argmax{b.argmax.data(), {s.batch, pooled_length, s.out_channels}, DType::I32};
    const mirrorlab::Shape x_shape{s.batch, s.length, s.in_channels}, k_shape{s.window, s.in_channels, s.out_channels};
    const mirrorlab::Shape conv_shape{s.batch, s.out_length(), s.out_channels},
        pooled_shape{s.batch, pooled_length, s.out_channels}, b_shape{s.out_channels};
    const auto our_forward = [&] {
        ours.conv1d_relu_maxpool1d_forward(view(b.x, x_shape), view(b.kernel, k_shape), view(b.bias, b_shape),
                                           view(b.conv_y, conv_shape), view(b.pooled, pooled_shape),
                                           argmax, mirrorlab::Conv1DParams{},
                                           mirrorlab::Pool1DParams{});
    };
    const auto our_backward = [&] {
        ours.conv1d_relu_maxpool1d_backward(view(b.x, x_shape), view(b.kernel, k_shape), view(b.conv_y, conv_shape),
                                            view(b.pooled, pooled_shape), argmax,
                                            view(b.grad_pooled, pooled_shape), view(b.grad_conv_y, conv_shape),
                                            view(b.grad_x, x_shape), view(b.grad_kernel, k_shape),
                                            view(b.grad_bias, b_shape), mirrorlab::Conv1DParams{});
    };
    our_forward();
    our_backward();
    OneDnnBlock keras_layout(s, b, true), own_layout(s, b, false);
    // Per implementation: forward, backward; oneDNN's also without their reorders.
    const std::vector<double> ms = interleaved_medians_ms(
        runs, {our_forward, our_backward, [&] { keras_layout.forward(true); }, [&] { keras_layout.backward(true); },
               [&] { keras_layout.forward(false); }, [&] { keras_layout.backward(false); },
               [&] { own_layout.forward(true); }, [&] { own_layout.backward(true); },
               [&] { own_layout.forward(false); }, [&] { own_layout.backward(false); }});
    std::printf("%-6s %-22s %-24.3f %-24.3f\n", s.name, "MirrorLab, fused", ms[0], ms[1]);
    double best_onednn = 1e30, best_without_reorders = 1e30;
    for (int k = 0; k < 2; ++k) {
        OneDnnBlock& block = k == 0 ? keras_layout : own_layout;
        block.forward(true);
        block.backward(true);
        const double difference = block.difference_from(b);
        const bool same_op = difference < 1e-4;
        failures += same_op ? 0 : 1;
        const double forward_ms = ms[2 + 4 * k], backward_ms = ms[3 + 4 * k];
        const double without_reorders_ms = ms[4 + 4 * k] + ms[5 + 4 * k];
        const auto with_and_without = [&](double with_ms, double without_ms) {
            char text[32];
            if (block.has_reorders()) {
                std::snprintf(text, sizeof text, "%.3f (%.3f)", with_ms, without_ms);
            } else {
                std::snprintf(text, sizeof text, "%.3f", with_ms);
            }
            return std::string(text);
        };
        std::printf("%-6s %-22s %-24s %-24s %9.1e  %s%s\n", s.name,
                    k == 0 ? "oneDNN, Keras layout" : "oneDNN, own layout",
                    with_and_without(forward_ms, ms[4 + 4 * k]).c_str(),
                    with_and_without(backward_ms, ms[5 + 4 * k]).c_str(), difference,
                    block.implementation().c_str(), same_op ? "" : "  RESULTS DIFFER FROM OURS");
        best_onednn = std::min(best_onednn, forward_ms + backward_ms);
        best_without_reorders = std::min(best_without_reorders, without_reorders_ms);
    }
    const double ours_ms = ms[0] + ms[1];
    std::printf("%-6s forward + backward: MirrorLab %.3f ms; oneDNN's best %.3f ms (%.2fx ours), %.3f ms without "
                "reorders (%.2fx)\n",
                s.name, ours_ms, best_onednn, best_onednn / ours_ms, best_without_reorders,
                best_without_reorders / ours_ms);
    return failures;
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = onednn_bench::start_one_thread(argc, argv);
    mirrorlab::CpuFastBackend ours;
    std::printf("Conv1D + ReLU + MaxPooling1D(2) blocks, forward and backward as training runs them; one thread, batch "
                "16, medians of %d; our kernels %s, oneDNN %d.%d.%d\n",
                runs, std::string(ours.isa()).c_str(), dnnl::version()->major, dnnl::version()->minor,
                dnnl::version()->patch);
    std::printf("%-6s %-22s %-24s %-24s %9s  %s\n", "block", "implementation", "forward ms (no reorders)",
                "backward ms (no reorders)", "differs",
                "oneDNN's primitives (conv + relu / pool / relu back / data / weights)");
    std::mt19937 rng(17);
    int failures = 0;
    for (const ConvShape& s : onednn_bench::kShapes) failures += compare_block(s, ours, rng, runs);
    return failures == 0 ? 0 : 1;
}
