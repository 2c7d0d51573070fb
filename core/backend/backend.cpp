#include "core/backend/backend.h"

#include "core/util/error.h"

namespace mirrorlab {

void check_rank(const TensorView& view, int rank, std::string_view op, std::string_view what) {
    if (view.shape.rank() != rank) {
        throw OpError("[" + std::string(op) + "] " + std::string(what) + " must have rank " +
                      std::to_string(rank) + ", got shape " + view.shape.to_string());
    }
}

void check_same_shape(const TensorView& a, const TensorView& b, std::string_view op) {
    if (!(a.shape == b.shape)) {
        throw OpError("[" + std::string(op) + "] shapes differ: " + a.shape.to_string() + " vs " +
                      b.shape.to_string());
    }
}

std::string_view activation_name(ActivationKind kind) {
    switch (kind) {
        case ActivationKind::Linear: return "linear";
        case ActivationKind::ReLU: return "relu";
        case ActivationKind::Tanh: return "tanh";
        case ActivationKind::Sigmoid: return "sigmoid";
        case ActivationKind::Softmax: return "softmax";
        case ActivationKind::Invalid: break;
    }
    return "invalid";
}

ActivationKind activation_from_name(std::string_view name) {
    if (name == "linear" || name.empty()) return ActivationKind::Linear;
    if (name == "relu") return ActivationKind::ReLU;
    if (name == "tanh") return ActivationKind::Tanh;
    if (name == "sigmoid") return ActivationKind::Sigmoid;
    if (name == "softmax") return ActivationKind::Softmax;
    return ActivationKind::Invalid;
}

}  // namespace mirrorlab
