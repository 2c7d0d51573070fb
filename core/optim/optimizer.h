#pragma once
// Optimizers with TensorFlow 2 / Keras semantics (SGD, Adam, Nadam, RMSprop).
//
// The update runs on every replica's mirrored copy of each variable, and later on GPUs, so the
// work is split in two:
//   * OptimizerSchedule (host, once per training step for the whole model) advances the
//     iteration counter and computes every per-step scalar in double precision — bias
//     corrections, Nadam's momentum-schedule product — and rounds them to float once.
//   * An element-wise kernel then applies a short, fixed formula in float using only those
//     scalars. Every backend implements the same formula in the same operation order, so
//     replicas stay identical and a GPU kernel can be checked element by element against
//     reference_apply_update().
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mirrorlab {

enum class OptimizerKind { Invalid = 0, SGD, Adam, Nadam, RMSprop };

// How the Embedding table's gradient enters the update. TensorFlow hands it to the optimizer as
// tf.IndexedSlices, one slice per token occurrence in the batch (duplicates not merged; under
// MirroredStrategy the replicas' slices are concatenated), and the Keras generations treat those
// slices differently. Only optimizers that square the gradient or keep momentum can tell.
enum class EmbeddingUpdate {
    // tf.keras optimizer_v2 (TF 2.0-2.10, tf.keras.optimizers.legacy up to 2.15; the tutorial's):
    // duplicate slices are summed first (_deduplicate_indexed_slices), so moments see (sum g)^2
    // like a dense gradient, but the sparse kernels only write the rows in the batch: Nadam
    // decays m and v of every row yet moves only rows in the batch; SGD and RMSprop with
    // momentum leave rows outside the batch untouched (weights and slots). Adam and momentum-free
    // SGD/RMSprop equal the dense update.
    TF2,
    // Keras >= 2.11 and Keras 3 on TensorFlow: the update runs on the slices as ops, and
    // ops.square squares each slice before the slices are summed into the moment, so Adam, Nadam
    // and RMSprop accumulate sum_k g_k^2 over the occurrences of a row instead of (sum_k g_k)^2.
    // Every row is updated.
    Keras3,
    // A dense gradient (Keras 3 on JAX or PyTorch, or a gradient converted with
    // tf.convert_to_tensor): every row updated with (sum g)^2.
    Dense,
};

// "tf2", "keras3", "dense" (case-insensitive); anything else throws ModelError naming them.
EmbeddingUpdate embedding_update_from_name(std::string_view name);
std::string_view embedding_update_name(EmbeddingUpdate update);

// Case-insensitive "sgd", "adam", "nadam", "rmsprop". Anything else throws ModelError naming
// the accepted spellings.
OptimizerKind optimizer_kind_from_name(std::string_view name);

// Keras class names: "SGD", "Adam", "Nadam", "RMSprop" ("Invalid" for Invalid).
std::string_view optimizer_name(OptimizerKind kind);

// Hyper-parameters, named and defaulted as Keras names them. Fields an optimizer does not use
// are ignored by it (and by validate() and describe()).
struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::Invalid;
    double learning_rate = 0.001;
    double beta_1 = 0.9;    // Adam, Nadam
    double beta_2 = 0.999;  // Adam, Nadam
    double epsilon = 1e-7;  // Adam, Nadam, RMSprop
    double momentum = 0.0;  // SGD, RMSprop
    bool nesterov = false;  // SGD
    double rho = 0.9;       // RMSprop
    // Nadam's momentum schedule is u_t = beta_1 * (1 - 0.5 * 0.96^(nadam_schedule_decay * t)).
    // TF2's tf.keras.optimizers.Nadam (optimizer_v2, the tutorial's optimizer) uses 0.004, so
    // u_t stays near 0.45 for thousands of steps. Keras >= 2.11 and Keras 3 dropped the factor
    // (0.96^t, i.e. 1.0 here), so u_t reaches 0.9 within ~100 steps. Not a Keras argument;
    // describe() shows it only when it differs from the TF2 default.
    double nadam_schedule_decay = 0.004;
    // See EmbeddingUpdate. TF2 by default, with the TF2 Nadam schedule above: the tutorial's
    // optimizer is tf.keras' optimizer_v2 Nadam. describe() shows it only when not TF2.
    EmbeddingUpdate embedding_update = EmbeddingUpdate::TF2;

    // Keras defaults: SGD(learning_rate=0.01, momentum=0.0, nesterov=False),
    // Adam/Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07),
    // RMSprop(learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-07).
    static OptimizerConfig defaults(OptimizerKind kind);

    // Follows one Keras generation (named by its EmbeddingUpdate) in everything the engine knows
    // to differ between them: the Embedding update, and Nadam's schedule (0.004 for tf.keras 2,
    // 1.0 for Keras 3). What users choose with --keras-semantics and in the compile form.
    void follow_keras(EmbeddingUpdate generation);

    // Throws ModelError naming the optimizer, the field, the allowed range and the value.
    void validate() const;

    // Empty when `rate` can train; else what is wrong with it: "must be a finite number > 0", "must
    // be within float32's normal range (...)" (the updates run in float32, on threads that flush
    // subnormals to zero). For the command line's and settings files' checks alike.
    static std::string learning_rate_problem(double rate);

    // Keras-style, numbers as Python prints them:
    // "Nadam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-07)".
    std::string describe() const;
};

// Everything the element-wise kernel needs for one step, already rounded to float.
// Slot layout per kind (slots start zeroed):
//   SGD      slot0 = momentum buffer (only when use_momentum)
//   Adam     slot0 = m, slot1 = v
//   Nadam    slot0 = m, slot1 = v
//   RMSprop  slot0 = velocity (mean square), slot1 = momentum buffer (only when use_momentum)
struct OptimizerStep {
    OptimizerKind kind = OptimizerKind::Invalid;
    int64_t iteration = 0;  // 1-based t of the step these scalars are for
    float learning_rate = 0.0f;

    float momentum = 0.0f;      // SGD, RMSprop
    bool use_momentum = false;  // config.momentum > 0: the momentum slot exists and is used
    bool nesterov = false;      // SGD

    float beta_1 = 0.0f, one_minus_beta_1 = 0.0f;  // Adam, Nadam
    float beta_2 = 0.0f, one_minus_beta_2 = 0.0f;  // Adam, Nadam
    float rho = 0.0f, one_minus_rho = 0.0f;        // RMSprop
    float epsilon = 0.0f;                          // Adam, Nadam, RMSprop

    float adam_alpha = 0.0f;  // Adam: lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)

    // Nadam: m_hat = nadam_m_coeff * m + nadam_g_coeff * g;  v_hat = v * nadam_v_scale, with
    //   nadam_m_coeff = u_{t+1} / (1 - u_product_t * u_{t+1})
    //   nadam_g_coeff = (1 - u_t) / (1 - u_product_t)
    //   nadam_v_scale = 1 / (1 - beta_2^t)
    float nadam_m_coeff = 0.0f;
    float nadam_g_coeff = 0.0f;
    float nadam_v_scale = 0.0f;
};

// The slot buffers an update reads (see OptimizerStep's slot layout): one rule for the schedule,
// which has them allocated, and for the update kernels, which check them.
struct OptimizerSlots {
    bool slot0 = false;
    bool slot1 = false;
    int count() const { return (slot0 ? 1 : 0) + (slot1 ? 1 : 0); }
};
OptimizerSlots slots_needed(OptimizerKind kind, bool use_momentum);
inline OptimizerSlots slots_needed(const OptimizerStep& step) { return slots_needed(step.kind, step.use_momentum); }

// The checks an update makes before it touches memory (reference_apply_update, the CUDA backend),
// in one wording: throws OpError for a null weights or gradients buffer, a null slot the step
// needs, or an invalid step.
void check_update_buffers(const OptimizerStep& step, bool has_weights_and_grads, bool has_slot0, bool has_slot1);

// What a replica allocates beside the weights and gradients for this optimizer: the slots, and for
// every Embedding table the statistics of its IndexedSlices gradient that EmbeddingUpdate needs.
struct UpdateLayout {
    int optimizer_slots = 0;
    bool embedding_grad_squares = false;  // Keras3 with Adam, Nadam or RMSprop: sum_k g_k^2 per element
    bool embedding_row_counts = false;    // TF2 with Nadam, or SGD/RMSprop with momentum: rows in the batch
    // TF2 with Nadam: the rows outside the batch only decay their moments, which a backend may defer
    // (IndexedSlicesStats::moment_decays): a replica keeps each table's decay marks beside its slots.
    bool embedding_moment_decays = false;
};

// The statistics of an Embedding table's IndexedSlices gradient, for the update of that table
// (null pointers where the UpdateLayout has none). Both are summed over the global batch (the
// all-reduce adds them like the gradient), so every replica applies the same update.
struct IndexedSlicesStats {
    const float* grad_squares = nullptr;  // [rows * row_width]: sum over occurrences of g^2
    const float* row_counts = nullptr;    // [rows]: occurrences of the row in the global batch
    std::int64_t row_width = 0;           // elements per row (the Embedding's output_dim)
    // TF2's sparse Nadam with the decays of rows outside the batch deferred (null: decayed every
    // step). [rows + 1] counters that wrap around: the last counts the table's applied updates (the
    // clock), row r's the clock when its moments last caught up. An update advances the clock and
    // leaves rows outside the batch alone; a row in the batch first takes the decays it owes
    // (clock - 1 - its mark, m = beta_1 m + (1 - beta_1) 0 and v = beta_2 v + (1 - beta_2) 0 0 one
    // update at a time, as that update would have decayed it), so its moments get the bits the
    // decay at every step gives. settle_moment_decays() pays every row's debt (checkpoints). Only
    // the table's memory traffic changes: 15 % of the tutorial's rows are in a batch.
    std::uint32_t* moment_decays = nullptr;
};

// The decays IndexedSlicesStats::moment_decays says the rows of a [rows, width] table owe, paid
// into m and v (slot0 and slot1) with `step`'s betas; every mark then equals the clock. Runs under
// the caller's floating-point mode: the engine's threads flush denormals (core/util/denormals.h).
void settle_moment_decays(const OptimizerStep& step, float* m, float* v, std::uint32_t* moment_decays,
                          std::int64_t rows, std::int64_t width);

// Host-side optimizer state shared by all variables of one model (per-variable slots live with
// the variables). Call next_step() once per training step, then apply the returned step to
// every variable on every replica.
class OptimizerSchedule {
  public:
    explicit OptimizerSchedule(OptimizerConfig config);  // validates; throws ModelError

    const OptimizerConfig& config() const { return config_; }

    // Number of per-variable state buffers the kernel needs (see OptimizerStep's slot layout):
    // SGD 0 (1 with momentum), Adam 2, Nadam 2, RMSprop 1 (2 with momentum).
    int slot_count() const;
    // The slots and the embedding-gradient statistics (see UpdateLayout) the update reads.
    UpdateLayout update_layout() const;

    // Advances the iteration counter (and Nadam's momentum-schedule product) and returns the
    // scalars for the new step t = iterations().
    OptimizerStep next_step();

    // Steps taken so far (Keras's optimizer.iterations).
    int64_t iterations() const { return iterations_; }

    // Everything that evolves between steps, for checkpoints and restoring best weights.
    // nadam_u_product is prod_{i<=t} u_i (1.0 before the first step; stays 1.0 for non-Nadam).
    struct State {
        int64_t iterations = 0;
        double nadam_u_product = 1.0;
    };
    State state() const { return {iterations_, nadam_u_product_}; }
    void restore(const State& state);  // throws ModelError on an impossible state

  private:
    OptimizerConfig config_;
    int64_t iterations_ = 0;
    double nadam_u_product_ = 1.0;
};

// Plain reference kernel, the oracle for every faster or GPU kernel: updates `count` elements
// of `weights` (and the slots) in place from `grads`. slot0/slot1 may be null where the slot
// layout says they are unused; a needed slot that is null throws OpError. `sparse` is for an
// Embedding table (see EmbeddingUpdate): grad_squares replaces g * g in the second moments, and a
// row whose count is 0 gets the TF2 sparse kernels' treatment (Nadam: moments decay, the weights
// stay; SGD/RMSprop with momentum: nothing changes). Its default is the dense update.
void reference_apply_update(const OptimizerStep& step, float* weights, const float* grads,
                            float* slot0, float* slot1, size_t count,
                            const IndexedSlicesStats& sparse = {});

}  // namespace mirrorlab
