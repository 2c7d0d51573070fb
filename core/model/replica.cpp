#include "core/model/replica.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/backend/cpu_reference.h"
#include "core/model/batch_check.h"
#include "core/device/device.h"
#include "core/layers/layer_type.h"
#include "core/optim/optimizer.h"
#include "core/util/denormals.h"
#include "core/util/error.h"

namespace mirrorlab {

namespace {

using Clock = std::chrono::steady_clock;

double elapsed_ms(Clock::time_point since) {
    return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

Shape batched(std::int32_t batch, const Shape& sample_shape) {
    return sample_shape.prepended(batch);
}

// The loss consumes logits: a trailing softmax (or linear output) is not applied as a layer.
bool is_fused_output(const LayerInfo& layer, bool last) {
    return last && layer.config.activation == ActivationKind::Softmax;
}

}  // namespace

std::vector<float> initial_weights(const Model& model, std::uint64_t seed) {
    std::vector<float> flat;
    flat.reserve(static_cast<std::size_t>(model.total_params()));
    std::uint64_t stream = 0;
    for (const auto& variable : model.variables()) {
        ++stream;
        const std::uint64_t variable_seed = seed * 0x100000001B3ull + stream * 0x9E3779B97F4A7C15ull;
        const std::int64_t count = variable.shape.numel();
        float limit = 0.0f;
        switch (variable.initializer) {
            case Initializer::GlorotUniform:
                limit = static_cast<float>(std::sqrt(6.0 / static_cast<double>(variable.fan_in + variable.fan_out)));
                break;
            case Initializer::EmbeddingUniform: limit = 0.05f; break;
            case Initializer::Zeros:
            case Initializer::Invalid: break;
        }
        for (std::int64_t i = 0; i < count; ++i) {
            const float u = counter_uniform(variable_seed, static_cast<std::uint64_t>(i));
            flat.push_back(limit == 0.0f ? 0.0f : (2.0f * u - 1.0f) * limit);
        }
    }
    return flat;
}

namespace {

// Elements of the Embedding tables' IndexedSlices statistics appended to the gradient buffer.
std::int64_t embedding_stats_elements(const Model& model, const UpdateLayout& layout) {
    std::int64_t elements = 0;
    for (const LayerInfo& info : model.layers()) {
        if (info.config.kind != LayerKind::Embedding) continue;
        const Shape& table = info.variables.front().shape;
        if (layout.embedding_grad_squares) elements += table.numel();
        if (layout.embedding_row_counts) elements += table[0];
    }
    return elements;
}

// The all-reduced buffer: gradients, IndexedSlices statistics and the loss marker.
std::int64_t gradient_buffer_elements(const Model& model, const UpdateLayout& layout) {
    return model.total_params() + embedding_stats_elements(model, layout) + 1;
}

// Counters of every Embedding table's deferred moment decays (IndexedSlicesStats::moment_decays).
std::int64_t moment_decay_counters(const Model& model, const UpdateLayout& layout) {
    if (!layout.embedding_moment_decays) return 0;
    std::int64_t counters = 0;
    for (const LayerInfo& info : model.layers()) {
        if (info.config.kind == LayerKind::Embedding) counters += info.variables.front().shape[0] + 1;
    }
    return counters;
}

}  // namespace

ReplicaMemory ModelReplica::memory_needed(const Model& model, std::int32_t max_batch, const UpdateLayout& layout) {
    // Sizes are at most 2^40 elements (Model's cap) times a batch of at most 2^24: no overflow.
    auto bytes = [](const Shape& shape, std::int64_t element_bytes) {
        return MemoryArena::rounded_size(shape.numel() * element_bytes);
    };
    const std::int64_t params = model.total_params();
    ReplicaMemory memory;
    memory.state_bytes = bytes(Shape{params}, 4) + bytes(Shape{gradient_buffer_elements(model, layout)}, 4);
    if (layout.optimizer_slots > 0) memory.state_bytes += bytes(Shape{params * layout.optimizer_slots}, 4);
    if (const std::int64_t counters = moment_decay_counters(model, layout); counters > 0) {
        memory.state_bytes += bytes(Shape{counters}, 4);
    }
    memory.activation_bytes = bytes(Shape{max_batch, model.input_length()}, 4) + bytes(Shape{max_batch}, 4) +
                              bytes(Shape{max_batch, model.num_classes()}, 4);
    for (const LayerInfo& info : model.layers()) {
        const LayerType& type = layer_type(info.config.kind);
        const Shape shape = batched(max_batch, info.output_shape);
        if (!type.output_is_input) memory.activation_bytes += 2 * bytes(shape, 4);
        if (type.aux_dtype != DType::Invalid) memory.activation_bytes += bytes(shape, dtype_size(type.aux_dtype));
    }
    return memory;
}

ModelReplica::ModelReplica(const Model& model, LogicalDevice& device, std::int32_t max_batch, const UpdateLayout& layout)
    : model_(model), device_(device), backend_(device.backend()), max_batch_(max_batch), layout_(layout) {
    if (max_batch_ <= 0) throw OpError("[replica] the per-replica batch must be positive");
    MemoryArena& arena = device.arena();
    const std::int64_t params = model.total_params();
    weights_ = Tensor(arena, DType::F32, Shape{params}, "the model's variables (" + format_thousands(params) + " parameters)");
    const std::int64_t stats_elements = embedding_stats_elements(model, layout_);
    gradients_ = Tensor(arena, DType::F32, Shape{gradient_buffer_elements(model, layout_)},
                        stats_elements > 0 ? "the gradients and the embedding's IndexedSlices statistics" : "the gradients");
    if (layout_.optimizer_slots > 0) {
        slots_ = Tensor(arena, DType::F32, Shape{params * layout_.optimizer_slots}, "the optimizer's slots");
        backend_.fill(slots_, 0.0f);
    }
    if (const std::int64_t counters = moment_decay_counters(model, layout_); counters > 0) {
        moment_decays_ = Tensor(arena, DType::I32, Shape{counters}, "the embedding's deferred moment decays");
        backend_.fill(moment_decays_, 0.0f);
    }
    input_ids_ = Tensor(arena, DType::I32, Shape{max_batch_, model.input_length()}, "the input batch");
    labels_ = Tensor(arena, DType::I32, Shape{max_batch_}, "the labels");
    probabilities_ = Tensor(arena, DType::F32, Shape{max_batch_, model.num_classes()}, "the predictions");
    backend_.fill(gradients_, 0.0f);

    std::int64_t offset = 0;
    std::int64_t stats_offset = params;  // the statistics follow the variables' gradients
    std::int64_t decays_offset = 0;
    const auto& infos = model.layers();
    layers_.resize(infos.size());
    for (std::size_t i = 0; i < infos.size(); ++i) {
        const LayerInfo& info = infos[i];
        LayerBuffers& buffers = layers_[i];
        for (const auto& variable : info.variables) {
            const std::int64_t count = variable.shape.numel();
            buffers.variables.push_back(weights_.view().slice(offset, variable.shape));
            buffers.grad_variables.push_back(gradients_.view().slice(offset, variable.shape));
            if (layout_.optimizer_slots >= 1) buffers.slot0.push_back(slots_.view().slice(offset, variable.shape));
            if (layout_.optimizer_slots >= 2) buffers.slot1.push_back(slots_.view().slice(params + offset, variable.shape));
            offset += count;
        }
        if (info.config.kind == LayerKind::Embedding) {
            const Shape& table = info.variables.front().shape;
            if (layout_.embedding_grad_squares) {
                buffers.embedding_stats.grad_squares = gradients_.view().slice(stats_offset, table);
                stats_offset += table.numel();
            }
            if (layout_.embedding_row_counts) {
                buffers.embedding_stats.row_counts = gradients_.view().slice(stats_offset, Shape{table[0]});
                stats_offset += table[0];
            }
            if (layout_.embedding_moment_decays) {
                if (backend_.defers_moment_decays()) {
                    buffers.embedding_stats.moment_decays =
                        moment_decays_.view().slice(decays_offset, Shape{table[0] + 1});
                }
                decays_offset += table[0] + 1;
            }
        }
        const LayerType& type = layer_type(info.config.kind);
        const std::string what = "the output of layer '" + info.config.name + "'";
        const Shape shape = batched(max_batch_, info.output_shape);
        if (!type.output_is_input) {
            buffers.output = Tensor(arena, DType::F32, shape, what);
            buffers.grad_output = Tensor(arena, DType::F32, shape, "the gradient of " + what);
        }
        if (type.aux_dtype != DType::Invalid) {
            buffers.aux =
                Tensor(arena, type.aux_dtype, shape, std::string(type.aux_what) + " of layer '" + info.config.name + "'");
        }
    }
    runs_with_next_.assign(infos.size(), 0);
    for (std::size_t i = 0; i + 1 < infos.size(); ++i) {
        const LayerType& type = layer_type(infos[i].config.kind);
        const bool inside_previous = i > 0 && runs_with_next_[i - 1] != 0;  // already runs in layer i - 1's op
        const bool fuses = type.fuses_with_next != nullptr && !inside_previous &&
                           type.fuses_with_next(pass(i, 1, false, 0, false), infos[i + 1]);
        runs_with_next_[i] = fuses ? 1 : 0;
    }
}

TensorView ModelReplica::output_view(std::size_t layer, std::int32_t batch) const {
    const LayerInfo& info = model_.layers()[layer];
    if (layer_type(info.config.kind).output_is_input) {
        return output_view(layer - 1, batch).reshaped(batched(batch, info.output_shape));
    }
    return layers_[layer].output.view().slice(0, batched(batch, info.output_shape));
}

TensorView ModelReplica::grad_view(std::size_t layer, std::int32_t batch) const {
    const LayerInfo& info = model_.layers()[layer];
    if (layer_type(info.config.kind).output_is_input) {
        return grad_view(layer - 1, batch).reshaped(batched(batch, info.output_shape));
    }
    return layers_[layer].grad_output.view().slice(0, batched(batch, info.output_shape));
}

void ModelReplica::set_weights(const std::vector<float>& flat) {
    if (static_cast<std::int64_t>(flat.size()) != weights_.numel()) {
        throw ModelError("weights for " + format_thousands(static_cast<std::int64_t>(flat.size())) +
                         " parameters do not fit a model with " + format_thousands(weights_.numel()));
    }
    backend_.upload(weights_, flat.data());
}

std::vector<float> ModelReplica::weights() const {
    std::vector<float> flat(static_cast<std::size_t>(weights_.numel()));
    backend_.download(flat.data(), weights_);
    return flat;
}

std::vector<float> ModelReplica::gradients() const {
    const TensorView variables = variable_gradients();
    std::vector<float> flat(static_cast<std::size_t>(variables.numel()));
    backend_.download(flat.data(), variables);
    return flat;
}

// The device's slots with every deferred moment decay paid first, in place: the moments then hold
// what decaying every row at every step holds, bit for bit (a checkpoint's), and training goes on
// exactly as it would have (a row owes nothing it has paid). Each settling pays only the debt since
// the last, so the checkpoints of a long run together pay no more decays than the updates deferred.
std::vector<float> ModelReplica::optimizer_slots() const {
    settle_moment_decays_in_place();
    std::vector<float> flat(static_cast<std::size_t>(slots_.numel()));
    if (!slots_.empty()) backend_.download(flat.data(), slots_);
    return flat;
}

void ModelReplica::settle_moment_decays_in_place() const {
    for (const LayerBuffers& buffers : layers_) {
        const TensorView& decays = buffers.embedding_stats.moment_decays;
        if (!decays) continue;
        std::vector<std::uint32_t> marks(static_cast<std::size_t>(decays.numel()));
        backend_.download(marks.data(), decays);
        const std::uint32_t clock = marks.back();
        if (std::all_of(marks.begin(), marks.end(), [clock](std::uint32_t mark) { return mark == clock; })) continue;
        const TensorView &m = buffers.slot0.front(), &v = buffers.slot1.front();
        std::vector<float> m_host(static_cast<std::size_t>(m.numel())), v_host(m_host.size());
        backend_.download(m_host.data(), m);
        backend_.download(v_host.data(), v);
        {
            const ScopedFloatMode as_the_updates_ran(update_float_mode_);  // whichever thread asks
            settle_moment_decays(last_step_, m_host.data(), v_host.data(), marks.data(), m.shape[0], m.shape[1]);
        }
        backend_.upload(m, m_host.data());
        backend_.upload(v, v_host.data());
        backend_.upload(decays, marks.data());
    }
}

void ModelReplica::set_optimizer_slots(const std::vector<float>& flat) {
    if (static_cast<std::int64_t>(flat.size()) != slots_.numel()) throw ModelError("optimizer slots do not fit this model");
    if (!slots_.empty()) backend_.upload(slots_, flat.data());
    if (!moment_decays_.empty()) backend_.fill(moment_decays_, 0.0f);  // the restored moments owe nothing
}

void ModelReplica::upload_batch(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch) {
    if (batch > max_batch_) {
        throw OpError("[replica] a shard of " + std::to_string(batch) + " samples exceeds the " +
                      std::to_string(max_batch_) + " this replica was built for");
    }
    check_batch(model_, ids, labels, batch);  // once, here, for every backend: a GPU trusts them
    backend_.upload(input_ids_.view().slice(0, Shape{batch, model_.input_length()}), ids);
    backend_.upload(labels_.view().slice(0, Shape{batch}), labels);
}

LayerPass ModelReplica::pass(std::size_t i, std::int32_t batch, bool training, std::uint64_t dropout_seed,
                             bool backward) const {
    const auto& infos = model_.layers();
    const LayerInfo& info = infos[i];
    const LayerBuffers& buffers = layers_[i];
    const bool last = i + 1 == infos.size();
    LayerPass pass{backend_, info};
    pass.batch = batch;
    pass.activation = is_fused_output(info, last) ? ActivationKind::Linear : info.config.activation;
    pass.in = i == 0 ? input_ids_.view().slice(0, Shape{batch, model_.input_length()}) : output_view(i - 1, batch);
    pass.out = output_view(i, batch);
    if (backward) {
        pass.grad_out = grad_view(i, batch);
        // The first layer after the embedding still needs its input gradient (for the embedding).
        if (i > 0) pass.grad_in = grad_view(i - 1, batch);
    }
    if (!buffers.aux.empty()) pass.aux = buffers.aux.view().slice(0, pass.out.shape);
    pass.variables = buffers.variables;
    pass.grad_variables = buffers.grad_variables;
    pass.embedding_stats = buffers.embedding_stats;
    pass.training = training;
    pass.seed = dropout_seed * 1315423911ull + i;
    return pass;
}

void ModelReplica::run_forward(std::int32_t batch, bool training, std::uint64_t dropout_seed, double* layer_ms) {
    for (std::size_t i = 0; i < model_.layers().size(); ++i) {
        const LayerType& type = layer_type(model_.layers()[i].config.kind);
        const std::size_t first = i;
        const auto start = layer_ms != nullptr ? Clock::now() : Clock::time_point{};
        if (runs_with_next_[i]) {
            type.forward_with_next(pass(i, batch, training, dropout_seed, false),
                                   pass(i + 1, batch, training, dropout_seed, false));
            ++i;
        } else {
            type.forward(pass(i, batch, training, dropout_seed, false));
        }
        if (layer_ms != nullptr) layer_ms[first] = elapsed_ms(start);
    }
}

void ModelReplica::run_backward(std::int32_t batch, std::uint64_t dropout_seed, double* layer_ms) {
    for (std::size_t i = model_.layers().size(); i-- > 0;) {
        const auto start = layer_ms != nullptr ? Clock::now() : Clock::time_point{};
        if (i > 0 && runs_with_next_[i - 1]) {  // layer i ran inside layer i - 1's op: both go back as one
            --i;
            const LayerType& type = layer_type(model_.layers()[i].config.kind);
            type.backward_with_next(pass(i, batch, true, dropout_seed, true), pass(i + 1, batch, true, dropout_seed, true));
        } else {
            layer_type(model_.layers()[i].config.kind).backward(pass(i, batch, true, dropout_seed, true));
        }
        if (layer_ms != nullptr) layer_ms[i] = elapsed_ms(start);
    }
}

LossCounts ModelReplica::run_loss(std::int32_t batch, std::int32_t global_batch, bool with_gradient) {
    const std::size_t last = model_.layers().size() - 1;
    const TensorView logits = output_view(last, batch);
    const TensorView grad = with_gradient ? grad_view(last, batch) : TensorView{};
    return backend_.softmax_cross_entropy(logits, labels_.view().slice(0, Shape{batch}),
                                          probabilities_.view().slice(0, Shape{batch, model_.num_classes()}), grad,
                                          1.0f / static_cast<float>(global_batch), 5);
}

LossCounts ModelReplica::forward_backward(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                          std::int32_t global_batch, std::uint64_t dropout_seed,
                                          ReplicaTimings* timings) {
    compute_gradients(ids, labels, batch, global_batch, dropout_seed, timings);
    return finish_step().counts;
}

void ModelReplica::compute_gradients(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                     std::int32_t global_batch, std::uint64_t dropout_seed, ReplicaTimings* timings) {
    backend_.mark(StepMark::ForwardBegin);
    if (batch == 0) {
        // Zero gradients and a finite loss marker; the all-reduce orders its reads after them.
        backend_.fill(gradients_, 0.0f);
        backend_.mark(StepMark::ForwardEnd);
        backend_.mark(StepMark::BackwardEnd);
        return;
    }
    auto start = Clock::now();
    upload_batch(ids, labels, batch);
    double* layer_forward_ms = timings != nullptr ? timings->layer_forward_ms : nullptr;
    run_forward(batch, true, dropout_seed, layer_forward_ms);
    const auto loss_start = layer_forward_ms != nullptr ? Clock::now() : Clock::time_point{};
    const std::size_t last = model_.layers().size() - 1;
    backend_.step_loss(output_view(last, batch), labels_.view().slice(0, Shape{batch}),
                       probabilities_.view().slice(0, Shape{batch, model_.num_classes()}), grad_view(last, batch),
                       1.0f / static_cast<float>(global_batch), 5, loss_marker());
    if (layer_forward_ms != nullptr) timings->loss_ms = elapsed_ms(loss_start);
    backend_.mark(StepMark::ForwardEnd);
    if (timings != nullptr) timings->forward_ms = elapsed_ms(start);
    start = Clock::now();
    run_backward(batch, dropout_seed, timings != nullptr ? timings->layer_backward_ms : nullptr);
    backend_.mark(StepMark::BackwardEnd);
    if (timings != nullptr) timings->backward_ms = elapsed_ms(start);
}

StepPartTimes ModelReplica::time_step_parts(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                            std::uint64_t dropout_seed, const OptimizerStep& step) {
    const std::size_t layers = model_.layers().size();
    StepPartTimes times;
    times.forward_ms.assign(layers, 0.0);
    times.backward_ms.assign(layers, 0.0);
    ReplicaTimings timings;
    timings.layer_forward_ms = times.forward_ms.data();
    timings.layer_backward_ms = times.backward_ms.data();
    compute_gradients(ids, labels, batch, batch, dropout_seed, &timings);  // the step's own path
    times.loss_ms = timings.loss_ms;
    const auto start = Clock::now();
    apply_update_if_finite(step);
    finish_step();
    times.update_ms = elapsed_ms(start);
    return times;
}

LossCounts ModelReplica::evaluate(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                  std::vector<float>* probabilities) {
    if (batch == 0) return {};
    upload_batch(ids, labels, batch);
    run_forward(batch, false, 0);
    LossCounts counts = run_loss(batch, batch, false);
    if (probabilities != nullptr) {
        probabilities->resize(static_cast<std::size_t>(batch) * static_cast<std::size_t>(model_.num_classes()));
        backend_.download(probabilities->data(), probabilities_.view().slice(0, Shape{batch, model_.num_classes()}));
    }
    return counts;
}

std::vector<float> ModelReplica::layer_output(std::size_t index, std::int32_t batch) const {
    // A layer that ran fused with the next one may have left its own output unkept (backend.h):
    // computed again, on its own, from its input (the same bits as inside the fused op).
    if (runs_with_next_[index]) layer_type(model_.layers()[index].config.kind).forward(pass(index, batch, false, 0, false));
    const TensorView view = output_view(index, batch);
    std::vector<float> host(static_cast<std::size_t>(view.numel()));
    backend_.download(host.data(), view);
    return host;
}

template <typename Update>
void ModelReplica::for_each_variable_update(Update&& update) {
    for (auto& buffers : layers_) {
        for (std::size_t v = 0; v < buffers.variables.size(); ++v) {
            update(buffers.variables[v], buffers.grad_variables[v],
                   layout_.optimizer_slots >= 1 ? buffers.slot0[v] : TensorView{},
                   layout_.optimizer_slots >= 2 ? buffers.slot1[v] : TensorView{},
                   v == 0 ? buffers.embedding_stats : IndexedSlicesViews{});
        }
    }
}

void ModelReplica::remember_update(const OptimizerStep& step) {
    last_step_ = step;
    update_float_mode_ = float_mode();  // the pool's helpers run the update under it too
}

void ModelReplica::apply_update_if_finite(const OptimizerStep& step, std::optional<bool> summed_all_finite) {
    remember_update(step);
    if (summed_all_finite) {
        backend_.step_set_finite(*summed_all_finite);
    } else {
        backend_.step_check_finite(gradients_.view());
    }
    for_each_variable_update([&](const TensorView& weights, const TensorView& grads, const TensorView& slot0,
                                 const TensorView& slot1, const IndexedSlicesViews& sparse) {
        backend_.step_apply_update(step, weights, grads, slot0, slot1, sparse);
    });
}

void ModelReplica::apply_update(const OptimizerStep& step) {
    remember_update(step);
    for_each_variable_update([&](const TensorView& weights, const TensorView& grads, const TensorView& slot0,
                                 const TensorView& slot1, const IndexedSlicesViews& sparse) {
        backend_.apply_update(step, weights, grads, slot0, slot1, sparse);
    });
}

}  // namespace mirrorlab
