// Flatten: [d0, d1, ...] -> [d0 * d1 * ...]. Row-major buffers are already flat, so the replica
// gives it a reshaped view of its input (and of its input's gradient) and no passes.
#include "core/layers/layer_type.h"

namespace mirrorlab {

namespace {

void infer(ShapeInference& in) { in.shape = Shape{in.shape.numel()}; }

void nothing(const LayerPass&) {}

}  // namespace

extern const LayerType kFlattenLayer;
const LayerType kFlattenLayer{
    .kind = LayerKind::Flatten,
    .class_name = "Flatten",
    .name_stem = "flatten",
    .infer = infer,
    .output_is_input = true,
    .forward = nothing,
    .backward = nothing,
};

}  // namespace mirrorlab
