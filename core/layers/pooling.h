#pragma once
// What another layer type needs to know of MaxPooling1D: Conv1D runs itself and a MaxPooling1D
// after it as one backend op (core/layers/conv1d.cpp).
#include "core/backend/backend.h"
#include "core/layers/layer_config.h"

namespace mirrorlab {

// The window, stride (Keras' default: the pool size) and left padding of a MaxPooling1D layer.
Pool1DParams max_pooling1d_params(const LayerInfo& info);

}  // namespace mirrorlab
