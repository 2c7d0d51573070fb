#include "core/optim/optimizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>

#include "core/util/error.h"

namespace mirrorlab {

namespace {

// Python's repr() of a float, so describe() reads exactly like Keras's get_config() values
// ("0.001", "0.9", "1e-07", "0.0"): shortest round-trip digits, fixed notation for decimal
// exponents in [-4, 16), scientific with a signed two-digit exponent otherwise.
std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";

    // to_chars without a precision gives the shortest representation that round-trips.
    std::array<char, 64> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                      std::chars_format::scientific);
    const std::string sci(buffer.data(), result.ptr);  // "-1.2345e-07"

    const size_t e_pos = sci.find('e');
    std::string mantissa = sci.substr(0, e_pos);
    const int exponent = std::stoi(sci.substr(e_pos + 1));
    std::string sign;
    if (!mantissa.empty() && mantissa.front() == '-') {
        sign = "-";
        mantissa.erase(0, 1);
    }
    std::string digits;  // significant digits, first one before the decimal point
    for (char c : mantissa)
        if (c != '.') digits += c;

    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0)
            return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        const auto int_len = static_cast<size_t>(exponent) + 1;
        if (digits.size() <= int_len)
            return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
        return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int abs_exp = exponent < 0 ? -exponent : exponent;
    out += exponent < 0 ? "e-" : "e+";
    if (abs_exp < 10) out += '0';
    out += std::to_string(abs_exp);
    return out;
}

std::string prefix(OptimizerKind kind) {
    return "[optimizer] " + std::string(optimizer_name(kind)) + ": ";
}

// Rejects NaN too: every comparison with NaN is false.
void require_unit_interval(OptimizerKind kind, const char* field, double value) {
    if (!(value >= 0.0 && value < 1.0))
        throw ModelError(prefix(kind) + field + " must be in [0, 1), got " +
                         python_float_repr(value));
}

char ascii_lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

// Nadam's momentum schedule (TF2 optimizer_v2/nadam.py _prepare_local):
// u_t = beta_1 * (1 - 0.5 * 0.96^(schedule_decay * t)).
double nadam_u(const OptimizerConfig& config, int64_t t) {
    return config.beta_1 *
           (1.0 - 0.5 * std::pow(0.96, config.nadam_schedule_decay * static_cast<double>(t)));
}

}  // namespace

OptimizerKind optimizer_kind_from_name(std::string_view name) {
    for (OptimizerKind kind :
         {OptimizerKind::SGD, OptimizerKind::Adam, OptimizerKind::Nadam, OptimizerKind::RMSprop}) {
        if (equals_ignoring_case(name, optimizer_name(kind))) return kind;
    }
    throw ModelError("[optimizer] unknown optimizer '" + std::string(name) +
                     "'; accepted names (case-insensitive): sgd, adam, nadam, rmsprop");
}

std::string_view optimizer_name(OptimizerKind kind) {
    switch (kind) {
        case OptimizerKind::SGD:
            return "SGD";
        case OptimizerKind::Adam:
            return "Adam";
        case OptimizerKind::Nadam:
            return "Nadam";
        case OptimizerKind::RMSprop:
            return "RMSprop";
        case OptimizerKind::Invalid:
            break;
    }
    return "Invalid";
}

EmbeddingUpdate embedding_update_from_name(std::string_view name) {
    for (EmbeddingUpdate update : {EmbeddingUpdate::TF2, EmbeddingUpdate::Keras3, EmbeddingUpdate::Dense}) {
        if (equals_ignoring_case(name, embedding_update_name(update))) return update;
    }
    throw ModelError("[optimizer] unknown embedding update '" + std::string(name) +
                     "'; accepted: tf2 (tf.keras optimizer_v2, the tutorial's), keras3 (Keras 3 on "
                     "TensorFlow), dense (Keras 3 on JAX or PyTorch)");
}

std::string_view embedding_update_name(EmbeddingUpdate update) {
    switch (update) {
        case EmbeddingUpdate::TF2:
            return "tf2";
        case EmbeddingUpdate::Keras3:
            return "keras3";
        case EmbeddingUpdate::Dense:
            return "dense";
    }
    return "invalid";
}

OptimizerConfig OptimizerConfig::defaults(OptimizerKind kind) {
    OptimizerConfig config;  // member defaults are already Keras's Adam/Nadam/RMSprop values
    config.kind = kind;
    if (kind == OptimizerKind::SGD) config.learning_rate = 0.01;
    return config;
}

void OptimizerConfig::follow_keras(EmbeddingUpdate generation) {
    embedding_update = generation;
    nadam_schedule_decay = generation == EmbeddingUpdate::TF2 ? 0.004 : 1.0;
}

std::string OptimizerConfig::learning_rate_problem(double rate) {
    if (!(std::isfinite(rate) && rate > 0.0)) return "must be a finite number > 0";
    // 5e-324 passed the check above on the main thread and was refused as 0.0 on the trainer's,
    // which flushes subnormals to zero; 1e39 became inf in float32.
    if (rate < std::numeric_limits<float>::min() || rate > std::numeric_limits<float>::max()) {
        return "must be within float32's normal range (1.1754944e-38 to 3.4028235e+38)";
    }
    return {};
}

void OptimizerConfig::validate() const {
    if (kind != OptimizerKind::SGD && kind != OptimizerKind::Adam && kind != OptimizerKind::Nadam &&
        kind != OptimizerKind::RMSprop)
        throw ModelError(
            "[optimizer] no optimizer chosen; choose one of SGD, Adam, Nadam, RMSprop");

    // Keras accepts any learning rate; one that cannot train is refused here.
    if (const std::string problem = learning_rate_problem(learning_rate); !problem.empty())
        throw ModelError(prefix(kind) + "learning_rate " + problem + ", got " + python_float_repr(learning_rate));

    const bool uses_betas = kind == OptimizerKind::Adam || kind == OptimizerKind::Nadam;
    if (uses_betas) {
        require_unit_interval(kind, "beta_1", beta_1);
        require_unit_interval(kind, "beta_2", beta_2);
    }
    if (kind != OptimizerKind::SGD) {
        if (!(std::isfinite(epsilon) && epsilon >= 0.0))
            throw ModelError(prefix(kind) + "epsilon must be a finite number >= 0, got " +
                             python_float_repr(epsilon));
        // The update adds it as a float32: 1e300 became inf (no weight moved), 1e-45 became 0 on
        // the trainer's threads, which flush subnormals.
        if (epsilon > 0.0 && (epsilon < std::numeric_limits<float>::min() || epsilon > std::numeric_limits<float>::max()))
            throw ModelError(prefix(kind) +
                             "epsilon must be 0 or within float32's normal range (1.1754944e-38 to 3.4028235e+38), got " +
                             python_float_repr(epsilon));
    }
    if (kind == OptimizerKind::SGD || kind == OptimizerKind::RMSprop)
        require_unit_interval(kind, "momentum", momentum);
    if (kind == OptimizerKind::RMSprop) require_unit_interval(kind, "rho", rho);
    if (kind == OptimizerKind::Nadam &&
        !(std::isfinite(nadam_schedule_decay) && nadam_schedule_decay >= 0.0))
        throw ModelError(
            prefix(kind) +
            "schedule_decay must be a finite number >= 0 (0.004 in TF2, 1.0 in Keras 3), got " +
            python_float_repr(nadam_schedule_decay));
    if (embedding_update != EmbeddingUpdate::TF2 && embedding_update != EmbeddingUpdate::Keras3 &&
        embedding_update != EmbeddingUpdate::Dense)
        throw ModelError(prefix(kind) + "unknown embedding update; choose tf2, keras3 or dense");
}

std::string OptimizerConfig::describe() const {
    // Not a Keras argument: shown only when it is not the tutorial's (TF2) behaviour.
    const std::string embedding =
        embedding_update == EmbeddingUpdate::TF2
            ? std::string()
            : ", embedding_update='" + std::string(embedding_update_name(embedding_update)) + "'";
    const std::string name(optimizer_name(kind));
    const std::string lr = "learning_rate=" + python_float_repr(learning_rate);
    switch (kind) {
        case OptimizerKind::SGD:
            return name + "(" + lr + ", momentum=" + python_float_repr(momentum) +
                   ", nesterov=" + (nesterov ? "True" : "False") + embedding + ")";
        case OptimizerKind::Adam:
        case OptimizerKind::Nadam: {
            std::string out = name + "(" + lr + ", beta_1=" + python_float_repr(beta_1) +
                              ", beta_2=" + python_float_repr(beta_2) +
                              ", epsilon=" + python_float_repr(epsilon);
            if (kind == OptimizerKind::Nadam && nadam_schedule_decay != 0.004)
                out += ", schedule_decay=" + python_float_repr(nadam_schedule_decay);
            return out + embedding + ")";
        }
        case OptimizerKind::RMSprop:
            return name + "(" + lr + ", rho=" + python_float_repr(rho) +
                   ", momentum=" + python_float_repr(momentum) +
                   ", epsilon=" + python_float_repr(epsilon) + embedding + ")";
        case OptimizerKind::Invalid:
            break;
    }
    return "Invalid(no optimizer chosen)";
}

OptimizerSchedule::OptimizerSchedule(OptimizerConfig config) : config_(config) {
    config_.validate();
}

OptimizerSlots slots_needed(OptimizerKind kind, bool use_momentum) {
    switch (kind) {
        case OptimizerKind::SGD: return {use_momentum, false};
        case OptimizerKind::Adam:
        case OptimizerKind::Nadam: return {true, true};
        case OptimizerKind::RMSprop: return {true, use_momentum};
        case OptimizerKind::Invalid: break;
    }
    return {};
}

void check_update_buffers(const OptimizerStep& step, bool has_weights_and_grads, bool has_slot0, bool has_slot1) {
    const std::string name(optimizer_name(step.kind));
    if (!has_weights_and_grads)
        throw OpError("[optimizer] " + name + " update got a null weights or gradients buffer");
    const OptimizerSlots needed = slots_needed(step);
    if ((needed.slot0 && !has_slot0) || (needed.slot1 && !has_slot1))
        throw OpError("[optimizer] " + name + " update needs " + std::to_string(needed.count()) +
                      " slot buffer(s) but got a null one");
    if (step.kind == OptimizerKind::Invalid)
        throw OpError("[optimizer] update called with an invalid optimizer step (no optimizer chosen)");
}

int OptimizerSchedule::slot_count() const { return slots_needed(config_.kind, config_.momentum > 0.0).count(); }

UpdateLayout OptimizerSchedule::update_layout() const {
    UpdateLayout layout;
    layout.optimizer_slots = slot_count();
    const OptimizerKind kind = config_.kind;
    const bool squares_gradient =
        kind == OptimizerKind::Adam || kind == OptimizerKind::Nadam || kind == OptimizerKind::RMSprop;
    const bool lazy_rows = kind == OptimizerKind::Nadam ||
                           ((kind == OptimizerKind::SGD || kind == OptimizerKind::RMSprop) && config_.momentum > 0.0);
    layout.embedding_grad_squares = config_.embedding_update == EmbeddingUpdate::Keras3 && squares_gradient;
    layout.embedding_row_counts = config_.embedding_update == EmbeddingUpdate::TF2 && lazy_rows;
    layout.embedding_moment_decays = layout.embedding_row_counts && kind == OptimizerKind::Nadam;
    return layout;
}

OptimizerStep OptimizerSchedule::next_step() {
    ++iterations_;
    const int64_t t = iterations_;
    const double td = static_cast<double>(t);
    const OptimizerConfig& c = config_;

    OptimizerStep step;
    step.kind = c.kind;
    step.iteration = t;
    step.learning_rate = static_cast<float>(c.learning_rate);
    step.epsilon = static_cast<float>(c.epsilon);

    switch (c.kind) {
        case OptimizerKind::SGD:
        case OptimizerKind::RMSprop:
            step.momentum = static_cast<float>(c.momentum);
            step.use_momentum = c.momentum > 0.0;
            step.nesterov = c.kind == OptimizerKind::SGD && c.nesterov;
            step.rho = static_cast<float>(c.rho);
            step.one_minus_rho = static_cast<float>(1.0 - c.rho);
            break;
        case OptimizerKind::Adam:
        case OptimizerKind::Nadam: {
            step.beta_1 = static_cast<float>(c.beta_1);
            step.one_minus_beta_1 = static_cast<float>(1.0 - c.beta_1);
            step.beta_2 = static_cast<float>(c.beta_2);
            step.one_minus_beta_2 = static_cast<float>(1.0 - c.beta_2);
            const double one_minus_beta_2_power = 1.0 - std::pow(c.beta_2, td);
            if (c.kind == OptimizerKind::Adam) {
                step.adam_alpha =
                    static_cast<float>(c.learning_rate * std::sqrt(one_minus_beta_2_power) /
                                       (1.0 - std::pow(c.beta_1, td)));
            } else {
                // The product advances once per step for the whole model, before any variable is
                // updated (TF2 assigns m_cache in _prepare_local; Keras 3 in _backend_update_step).
                const double u_t = nadam_u(c, t);
                const double u_next = nadam_u(c, t + 1);
                nadam_u_product_ *= u_t;
                const double u_product_next = nadam_u_product_ * u_next;
                step.nadam_m_coeff = static_cast<float>(u_next / (1.0 - u_product_next));
                step.nadam_g_coeff = static_cast<float>((1.0 - u_t) / (1.0 - nadam_u_product_));
                step.nadam_v_scale = static_cast<float>(1.0 / one_minus_beta_2_power);
            }
            break;
        }
        case OptimizerKind::Invalid:
            break;  // unreachable: the constructor validated the kind
    }
    return step;
}

void OptimizerSchedule::restore(const State& state) {
    if (state.iterations < 0)
        throw ModelError("[optimizer] cannot restore a negative iteration count (" +
                         std::to_string(state.iterations) + ")");
    // A product of factors in [0, 1) is in [0, 1], and exactly 1 before the first step.
    if (!(state.nadam_u_product >= 0.0 && state.nadam_u_product <= 1.0) ||
        (state.iterations == 0 && state.nadam_u_product != 1.0))
        throw ModelError("[optimizer] cannot restore Nadam momentum-schedule product " +
                         python_float_repr(state.nadam_u_product) + " at iteration " +
                         std::to_string(state.iterations) +
                         "; it must be in [0, 1] and 1.0 before the first step");
    iterations_ = state.iterations;
    nadam_u_product_ = state.nadam_u_product;
}

namespace {

// Nadam's moments (TF2 optimizer_v2/nadam.py): the one formula for a step's update and for the
// decays deferred from the steps a row sat out.
void nadam_moments(const OptimizerStep& s, float g, float g_squared, float& m, float& v) {
    m = s.beta_1 * m + s.one_minus_beta_1 * g;
    v = s.beta_2 * v + s.one_minus_beta_2 * g_squared;
}

// Nadam's moments for a zero gradient (an Embedding row outside the batch: +0 from the zero-filled
// gradient table), exactly as a step that decays it computes them.
void decay_moments(const OptimizerStep& s, float& m, float& v) {
    const float g = 0.0f;
    nadam_moments(s, g, g * g, m, v);
}

}  // namespace

void settle_moment_decays(const OptimizerStep& step, float* m, float* v, std::uint32_t* moment_decays,
                          std::int64_t rows, std::int64_t width) {
    // A row's elements decay in lockstep, kBlock floats at a time in fixed-size blocks the compiler
    // vectorises: each element is its own chain of decays, so the chains overlap. (An element at a
    // time, with its own exit at +0, ran one chain of dependent products at a time: 70 ms for the
    // tutorial's 30,982 x 7 table at an epoch's end, a pause of the whole training.) A lane padded
    // with +0, or an element that reaches +0 and +0, decays to +0 again: the same bits as stopping.
    constexpr std::int64_t kBlock = 8;
    const std::uint32_t clock = moment_decays[rows];
    for (std::int64_t row = 0; row < rows; ++row) {
        const std::uint32_t owed = clock - moment_decays[row];
        moment_decays[row] = clock;
        if (owed == 0) continue;
        for (std::int64_t begin = row * width; begin < (row + 1) * width; begin += kBlock) {
            const std::int64_t count = std::min(kBlock, (row + 1) * width - begin);
            std::array<float, kBlock> m_block{}, v_block{};
            std::uint32_t any_bits = 0;  // a row never in a batch (or long decayed to nothing) is done at once
            for (std::int64_t j = 0; j < count; ++j) {
                m_block[j] = m[begin + j];
                v_block[j] = v[begin + j];
                any_bits |= std::bit_cast<std::uint32_t>(m_block[j]) | std::bit_cast<std::uint32_t>(v_block[j]);
            }
            if (any_bits == 0) continue;
            for (std::uint32_t k = 0; k < owed; ++k) {
                for (std::int64_t j = 0; j < kBlock; ++j) decay_moments(step, m_block[j], v_block[j]);
            }
            std::copy_n(m_block.begin(), count, m + begin);
            std::copy_n(v_block.begin(), count, v + begin);
        }
    }
}

// Per-element formulas. Each follows the operation order of the cited TensorFlow / Keras code
// (which differs between optimizers, e.g. m += (g - m)(1 - b1) vs m = b1 m + (1 - b1) g), so
// float results stay as close to TensorFlow's as float rounding of the host scalars allows.
// Faster and GPU kernels must use the same order and no fused multiply-add contraction to match
// this oracle bit for bit. Long because it holds every optimizer's formulas, one case each, so the
// oracle reads in one place against the TensorFlow sources it cites.
void reference_apply_update(const OptimizerStep& s, float* weights, const float* grads,
                            float* slot0, float* slot1, size_t count, const IndexedSlicesStats& sparse) {
    if (count == 0) return;
    check_update_buffers(s, weights != nullptr && grads != nullptr, slot0 != nullptr, slot1 != nullptr);
    const std::string name(optimizer_name(s.kind));
    if (sparse.row_counts != nullptr && sparse.row_width <= 0)
        throw OpError("[optimizer] " + name + " update got embedding row counts without a row width");
    if (sparse.moment_decays != nullptr &&
        (s.kind != OptimizerKind::Nadam || sparse.row_counts == nullptr || sparse.grad_squares != nullptr))
        throw OpError("[optimizer] " + name + " update got deferred moment decays, which only TF2's sparse Nadam "
                      "(embedding row counts, no squared slices) has");
    // g^2 for the second moments: per element, or summed over the slices (Keras 3 on TensorFlow).
    auto squared = [&](size_t i, float g) { return sparse.grad_squares != nullptr ? sparse.grad_squares[i] : g * g; };
    // Whether element i's row is in the global batch (always, without row counts).
    auto in_batch = [&](size_t i) {
        return sparse.row_counts == nullptr ||
               sparse.row_counts[static_cast<std::int64_t>(i) / sparse.row_width] != 0.0f;
    };

    switch (s.kind) {
        case OptimizerKind::SGD:
            // TF ResourceApplyKerasMomentum / ResourceApplyGradientDescent;
            // keras/src/optimizers/sgd.py.
            if (!s.use_momentum) {
                for (size_t i = 0; i < count; ++i) weights[i] -= grads[i] * s.learning_rate;
            } else {
                for (size_t i = 0; i < count; ++i) {
                    if (!in_batch(i)) continue;  // TF2 SparseApplyKerasMomentum writes batch rows only
                    float& m = slot0[i];
                    m = m * s.momentum - grads[i] * s.learning_rate;
                    if (s.nesterov)
                        weights[i] += m * s.momentum - grads[i] * s.learning_rate;
                    else
                        weights[i] += m;
                }
            }
            return;

        case OptimizerKind::Adam:
            // TF ApplyAdam functor (optimizer_v2/adam.py) and keras/src/optimizers/adam.py agree.
            for (size_t i = 0; i < count; ++i) {
                const float g = grads[i];
                float& m = slot0[i];
                float& v = slot1[i];
                m += (g - m) * s.one_minus_beta_1;
                v += (squared(i, g) - v) * s.one_minus_beta_2;
                weights[i] -= m * s.adam_alpha / (std::sqrt(v) + s.epsilon);
            }
            return;

        case OptimizerKind::Nadam: {
            // TF2 optimizer_v2/nadam.py _resource_apply_dense, with the divisions by
            // (1 - u_product) and (1 - beta_2^t) folded into the host coefficients.
            const bool deferred_decays = sparse.moment_decays != nullptr;
            const std::uint32_t clock = deferred_decays ? ++sparse.moment_decays[count / sparse.row_width] : 0;
            for (size_t i = 0; i < count; ++i) {
                const float g = grads[i];
                float& m = slot0[i];
                float& v = slot1[i];
                if (deferred_decays) {
                    const auto row = static_cast<std::int64_t>(i) / sparse.row_width;
                    if (!in_batch(i)) continue;  // its decay waits for the row's next batch, or settling
                    const std::uint32_t owed = clock - 1u - sparse.moment_decays[row];
                    for (std::uint32_t k = 0; k < owed; ++k) decay_moments(s, m, v);
                    if ((static_cast<std::int64_t>(i) + 1) % sparse.row_width == 0) sparse.moment_decays[row] = clock;
                }
                nadam_moments(s, g, squared(i, g), m, v);
                // TF2's sparse Nadam decays every row's moments (g is 0 outside the batch, so the
                // line above is exactly its m * beta_1, v * beta_2) but moves batch rows only.
                if (!in_batch(i)) continue;
                const float m_hat = s.nadam_g_coeff * g + s.nadam_m_coeff * m;
                const float v_hat = v * s.nadam_v_scale;
                weights[i] -= s.learning_rate * m_hat / (std::sqrt(v_hat) + s.epsilon);
            }
            return;
        }

        case OptimizerKind::RMSprop:
            // Keras 3 (keras/src/optimizers/rmsprop.py) puts epsilon INSIDE the root:
            //     w -= lr * g / sqrt(v + eps)
            // TF2's tf.keras optimizer_v2/rmsprop.py puts it outside when momentum == 0,
            //     w -= lr * g / (sqrt(v) + eps)
            // but inside (ApplyRMSProp kernel) when momentum > 0. We follow Keras 3 in both cases.
            // It matters early on and for small gradients: with g = 1e-4 the first step is
            // 1e-4 * lr / sqrt(1e-9 + 1e-7) ~ 0.31 lr (Keras 3) vs ~3.15 lr (TF2 momentum 0).
            // Momentum (Keras 3 and TF2 alike): mom = momentum * mom + increment; w -= mom.
            for (size_t i = 0; i < count; ++i) {
                const float g = grads[i];
                if (s.use_momentum && !in_batch(i)) continue;  // TF2 SparseApplyRMSProp: batch rows only
                float& v = slot0[i];
                v = s.rho * v + s.one_minus_rho * squared(i, g);
                const float increment = s.learning_rate * g / std::sqrt(v + s.epsilon);
                if (s.use_momentum) {
                    float& mom = slot1[i];
                    mom = s.momentum * mom + increment;
                    weights[i] -= mom;
                } else {
                    weights[i] -= increment;
                }
            }
            return;

        case OptimizerKind::Invalid:
            break;
    }
    throw OpError("[optimizer] update called with an invalid optimizer step (no optimizer chosen)");
}

}  // namespace mirrorlab
