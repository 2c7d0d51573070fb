#pragma once
// The arguments layer types take, each bound to its LayerConfig field and to one widget of the
// model form. A layer type lists the ones it takes (with its own defaults) in its descriptor.
#include "core/layers/layer_type.h"

namespace mirrorlab::arguments {

extern const ArgumentSpec kInputDim;    // Embedding's vocabulary
extern const ArgumentSpec kOutputDim;   // Embedding's vector size
extern const ArgumentSpec kFilters;
extern const ArgumentSpec kKernelSize;
extern const ArgumentSpec kPoolSize;
extern const ArgumentSpec kStrides;     // pooling; 0 stands for the pool size, Keras' default
extern const ArgumentSpec kPadding;
extern const ArgumentSpec kUnits;
extern const ArgumentSpec kActivation;
extern const ArgumentSpec kUseBias;
extern const ArgumentSpec kRate;

}  // namespace mirrorlab::arguments
