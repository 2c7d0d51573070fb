#pragma once
// What Dropout and SpatialDropout1D share (core/layers/dropout.cpp, spatial_dropout1d.cpp): the
// rate is their one argument and the form's summary shows it; their aux buffer is the mask (0 or
// 1 / (1 - rate) per element); outside training, or at rate 0, they are the identity with a mask of
// ones; and the backward pass is grad_x = grad_y * mask, whatever drew the mask.
#include "core/layers/arguments.h"

namespace mirrorlab::dropout {

inline constexpr const ArgumentSpec* kTextArguments[] = {&arguments::kRate};
inline constexpr DType kMaskDType = DType::F32;
inline constexpr std::string_view kMaskWhat = "the dropout mask";  // named in out-of-memory errors

// out = in and a mask of ones when the layer is the identity (evaluation, or rate 0); true if so.
inline bool forward_identity(const LayerPass& pass) {
    if (pass.training && pass.info.config.rate > 0.0) return false;
    pass.backend.copy(pass.out, pass.in);
    pass.backend.fill(pass.aux, 1.0f);
    return true;
}

inline void backward(const LayerPass& pass) { pass.backend.dropout_backward(pass.grad_out, pass.aux, pass.grad_in); }

}  // namespace mirrorlab::dropout
