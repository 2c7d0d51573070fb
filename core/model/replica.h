#pragma once
// One replica of a model on one logical device: its copy of the variables, gradients, optimizer
// slots and activations, all allocated in the device's arena, and the forward/backward pass that
// runs the layers through the device's backend.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/tensor.h"
#include "core/model/model.h"
#include "core/optim/optimizer.h"

namespace mirrorlab {

class LogicalDevice;
struct LayerPass;

// Keras' default initialisers, seeded: glorot-uniform kernels, zero biases, Embedding
// uniform(-0.05, 0.05). Returns all variables concatenated in Model::variables() order.
std::vector<float> initial_weights(const Model& model, std::uint64_t seed);

struct ReplicaTimings {
    double forward_ms = 0.0;   // the batch's upload, the forward pass and the loss
    double backward_ms = 0.0;
    // Optional, where a caller wants each op timed (ModelReplica::time_step_parts): one entry per
    // layer each (two layers that run as one op count in the first), and the loss alone.
    double* layer_forward_ms = nullptr;
    double* layer_backward_ms = nullptr;
    double loss_ms = 0.0;
};

// Where one training step's host time goes, part by part (ModelReplica::time_step_parts), in ms.
struct StepPartTimes {
    // Per layer. Two layers that run as one op (ModelReplica::runs_with_next) count in the first;
    // the second shows 0.
    std::vector<double> forward_ms, backward_ms;
    double loss_ms = 0.0;    // the fused softmax cross-entropy and its gradient
    double update_ms = 0.0;  // the finite check and the optimizer's update of every variable
};

// What a replica allocates on its device (arena-rounded bytes), known before anything is
// allocated: the model's state (weights, gradients, optimizer slots) and the per-shard buffers
// (inputs, labels, every layer's output and its gradient, pooling positions, dropout masks).
struct ReplicaMemory {
    std::int64_t state_bytes = 0;
    std::int64_t activation_bytes = 0;
    std::int64_t total() const { return state_bytes + activation_bytes; }
};

class ModelReplica {
public:
    // Exactly what the constructor below allocates; the two are kept equal by test_mirrored.
    static ReplicaMemory memory_needed(const Model& model, std::int32_t max_batch, const UpdateLayout& layout);

    // Allocates everything for shards of up to `max_batch` samples and the optimizer's layout
    // (OptimizerSchedule::update_layout()); throws OutOfMemoryError (naming the device and the
    // tensor) when the device's limit is too small.
    ModelReplica(const Model& model, LogicalDevice& device, std::int32_t max_batch, const UpdateLayout& layout);
    ModelReplica(const ModelReplica&) = delete;
    ModelReplica& operator=(const ModelReplica&) = delete;

    const Model& model() const { return model_; }
    LogicalDevice& device() { return device_; }
    std::int32_t max_batch() const { return max_batch_; }
    std::int64_t parameter_count() const { return weights_.numel(); }

    void set_weights(const std::vector<float>& flat);
    std::vector<float> weights() const;
    std::vector<float> gradients() const;  // the variables' gradients, in Model::variables() order
    // All slots, concatenated (for checkpoints / restore); deferred moment decays are paid first.
    std::vector<float> optimizer_slots() const;
    void set_optimizer_slots(const std::vector<float>& flat);

    // The flat buffer that the cross-device all-reduce sums: the variables' gradients, then the
    // Embedding tables' IndexedSlices statistics where the layout has them (UpdateLayout), then
    // one loss marker (0, or NaN when a sample's loss was not finite: Backend::step_loss).
    TensorView gradient_buffer() const { return gradients_.view(); }
    // Only the variables' gradients (the first parameter_count() elements): gradient norms.
    TensorView variable_gradients() const { return gradients_.view().slice(0, Shape{weights_.numel()}); }
    TensorView weight_buffer() const { return weights_.view(); }
    // The gradient buffer's last element (see gradient_buffer()).
    TensorView loss_marker() const { return gradients_.view().slice(gradients_.numel() - 1, Shape{1}); }

    // Runs forward (training mode: dropout on), the fused loss and backward for `batch` samples
    // (host ids [batch, input_length], host labels [batch]). Gradients are scaled by
    // 1 / global_batch so that adding every replica's gradients gives the mean over the global
    // batch. A replica with an empty shard gets zero gradients.
    // Waits for the results (Backend::finish_step); the ids and labels are checked first (check_batch).
    LossCounts forward_backward(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                std::int32_t global_batch, std::uint64_t dropout_seed, ReplicaTimings* timings);

    // A training step in three parts, with one wait (issue #21): compute_gradients() queues what
    // forward_backward() runs, its loss counts kept on the device; apply_update_if_finite() queues
    // the update guarded by the device's verdict on the summed gradient buffer; finish_step()
    // waits for all of it and returns the counts and whether the update ran. `timings` get the
    // host time spent queueing (the device's own times come from Backend::mark).
    void compute_gradients(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                           std::int32_t global_batch, std::uint64_t dropout_seed, ReplicaTimings* timings);
    // `summed_all_finite`: the verdict where the all-reduce already made it (through host memory).
    void apply_update_if_finite(const OptimizerStep& step, std::optional<bool> summed_all_finite = std::nullopt);
    StepReadback finish_step() { return backend_.finish_step(); }
    // Inference for evaluation: no dropout, no gradients. Optionally returns the probabilities.
    LossCounts evaluate(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                        std::vector<float>* probabilities = nullptr);
    // Output of layer `index` from the last forward pass, on the host (tests, step view). A layer
    // that ran fused with the next one computes it again from its input and its weights as they are
    // now: the last forward pass's output until an update changes them.
    std::vector<float> layer_output(std::size_t index, std::int32_t batch) const;

    void apply_update(const OptimizerStep& step);

    // One training step on this replica alone (its own gradients, no all-reduce), each layer's
    // forward and backward, the loss and the update timed with the host clock: where a step goes
    // (`mirrorlab-cli bench`). Meaningful only where ops are done when they return (CPU backends).
    StepPartTimes time_step_parts(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch,
                                  std::uint64_t dropout_seed, const OptimizerStep& step);
    // Whether layer `layer` runs in one op with the next (LayerType::fuses_with_next).
    bool runs_with_next(std::size_t layer) const {
        return layer < runs_with_next_.size() && runs_with_next_[layer] != 0;
    }

private:
    // Calls `update(weights, grads, slot0, slot1, sparse)` for every variable, in order, with the
    // slots its optimizer has (only the Embedding's table, its variable 0, has IndexedSlices statistics).
    template <typename Update>
    void for_each_variable_update(Update&& update);
    // Pays every Embedding row's deferred moment decays (IndexedSlicesStats::moment_decays) into
    // the device's slots: what the slots stand for stays, so it may run between any two steps.
    void settle_moment_decays_in_place() const;
    struct LayerBuffers {
        Tensor output;       // [max_batch, output_shape...]; empty for Flatten (a view of its input)
        Tensor grad_output;  // same shape
        Tensor aux;          // the layer type's aux buffer (pooling positions, a dropout mask), if any
        std::vector<TensorView> variables;       // views into weights_
        std::vector<TensorView> grad_variables;  // views into gradients_
        std::vector<TensorView> slot0, slot1;    // views into slots_
        IndexedSlicesViews embedding_stats;      // Embedding only: views into gradients_ past the variables,
                                                 // and its deferred decays (into moment_decays_)
    };

    void upload_batch(const std::int32_t* ids, const std::int32_t* labels, std::int32_t batch);
    TensorView output_view(std::size_t layer, std::int32_t batch) const;
    TensorView grad_view(std::size_t layer, std::int32_t batch) const;
    // Layer i's tensors for its forward pass (or, with `backward`, its backward pass too).
    LayerPass pass(std::size_t i, std::int32_t batch, bool training, std::uint64_t dropout_seed, bool backward) const;
    // With `layer_ms`, each op's host time goes to its (first) layer's entry.
    void run_forward(std::int32_t batch, bool training, std::uint64_t dropout_seed, double* layer_ms = nullptr);
    void run_backward(std::int32_t batch, std::uint64_t dropout_seed, double* layer_ms = nullptr);
    LossCounts run_loss(std::int32_t batch, std::int32_t global_batch, bool with_gradient);

    Model model_;
    LogicalDevice& device_;
    Backend& backend_;
    std::int32_t max_batch_ = 0;
    UpdateLayout layout_;
    Tensor weights_, gradients_, slots_;
    // Every Embedding table's IndexedSlicesStats::moment_decays ([rows + 1] each) where the layout
    // has them; handed to a backend that defers_moment_decays(), and settled into a copy of the
    // slots for optimizer_slots().
    Tensor moment_decays_;
    // What settling needs to pay the debt exactly as the updates would have: their betas, and the
    // floating-point mode they ran under (the calling thread's: denormals flushed or not).
    OptimizerStep last_step_;
    unsigned update_float_mode_ = 0;
    void remember_update(const OptimizerStep& step);  // sets the two above
    Tensor input_ids_, labels_, probabilities_;
    std::vector<LayerBuffers> layers_;
    // Layer i runs itself and layer i + 1 as one op (LayerType::fuses_with_next).
    std::vector<char> runs_with_next_;
};

}  // namespace mirrorlab
