#pragma once
// Every layer type MirrorLab knows, one line each, in the order the model form offers them. Each
// X(Name) is LayerKind::Name and the descriptor kNameLayer that core/layers/<name>.cpp defines
// (core/layers/layer_type.h says what a descriptor holds). Adding a layer type is this line and
// that file; the model, its JSON, the summary, the replica, the form and the CLI read the rest.
#define MIRRORLAB_LAYER_TYPES(X) \
    X(Embedding)                 \
    X(Conv1D)                    \
    X(MaxPooling1D)              \
    X(GlobalMaxPooling1D)        \
    X(GlobalAveragePooling1D)    \
    X(Flatten)                   \
    X(Dense)                     \
    X(Dropout)                   \
    X(SpatialDropout1D)          \
    X(Activation)
