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

void check_indexed_slices(const TensorView& weights, const IndexedSlicesViews& sparse) {
    if (sparse.grad_squares) check_same_shape(weights, sparse.grad_squares, "optimizer");
    if (!sparse.row_counts) return;
    check_rank(weights, 2, "optimizer", "an embedding table with row counts");
    check_rank(sparse.row_counts, 1, "optimizer", "the embedding row counts");
    if (sparse.row_counts.shape[0] != weights.shape[0]) {
        throw OpError("[optimizer] " + std::to_string(sparse.row_counts.shape[0]) + " row counts for a table of " +
                      std::to_string(weights.shape[0]) + " rows");
    }
}

void check_conv1d_shapes(const TensorView& x, const TensorView& kernel, const TensorView& y) {
    check_rank(x, 3, "conv1d", "input");
    check_rank(kernel, 3, "conv1d", "kernel");
    if (kernel.shape[1] != x.shape[2]) {
        throw OpError("[conv1d] input has " + std::to_string(x.shape[2]) + " channels, kernel expects " +
                      std::to_string(kernel.shape[1]));
    }
    if (!y) return;
    check_rank(y, 3, "conv1d", "output");
    if (y.shape[0] != x.shape[0] || y.shape[2] != kernel.shape[2]) {
        throw OpError("[conv1d] output " + y.shape.to_string() + " does not match input " + x.shape.to_string() +
                      " and kernel " + kernel.shape.to_string());
    }
}

void check_dense_shapes(const TensorView& x, const TensorView& kernel) {
    check_rank(x, 2, "dense", "input");
    check_rank(kernel, 2, "dense", "kernel");
    if (kernel.shape[0] != x.shape[1]) {
        throw OpError("[dense] input has " + std::to_string(x.shape[1]) + " features, kernel expects " +
                      std::to_string(kernel.shape[0]));
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
