#pragma once
// The layer registry: one descriptor per layer type, read by everything that handles layers. A
// descriptor holds the Keras class name and automatic name stem, the arguments (type, range,
// defaults, form widget), how they are read from and written to JSON, shape inference (output
// shape, variables and so the parameter count), the buffers a replica needs, the forward and
// backward passes, and the ops those run beyond the Backend's typed set (each with its CPU
// reference, so a backend without a kernel for it still runs it: see run_op).
//
// Readers: Model (JSON, names, shapes, summary), ModelReplica (buffers, passes), the model form
// (add menu, argument editor, the arguments column) and mirrorlab-cli layers. The list of types
// is core/layers/layer_list.h; each type's descriptor lives in core/layers/<type>.cpp.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/layers/layer_config.h"

// Marks a text of the model form that core holds (labels, tooltips, argument summaries) for
// translation without Qt: lupdate reads it as QT_TRANSLATE_NOOP (ui/CMakeLists.txt), and the form
// translates it with QCoreApplication::translate(context, text).
#define MIRRORLAB_TRANSLATABLE(context, text) text

namespace mirrorlab {

namespace json {
class Value;
}

// ---------------------------------------------------------------------------------------------
// Arguments

enum class ArgumentType {
    Invalid = 0,
    Integer,     // a positive int32 in JSON; Keras' one-element lists ([5]) are read too
    Rate,        // a number in [0, 1)
    Boolean,
    Padding,     // "valid" | "same"
    Activation,  // "linear" | "relu" | "tanh" | "sigmoid" | "softmax"
};

// One Keras constructor argument as the engine stores it (a LayerConfig field) and the form shows
// it (one widget, shared by every type that lists the argument). core/layers/arguments.h lists them.
struct ArgumentSpec {
    std::string_view key;  // Keras' config key: "kernel_size"
    ArgumentType type = ArgumentType::Invalid;
    std::string_view widget;   // the form widget's objectName: "kernelSize"
    std::string_view label;    // form label, translatable in context "LayerType"
    std::string_view tooltip;  // translatable; may be empty
    // The form's range. JSON takes any positive int32 for an Integer and [0, 1) for a Rate.
    double minimum = 0.0;
    double maximum = 0.0;
    std::string_view minimum_text;  // what the form shows at `minimum` ("same as pool size"); may be empty
    std::string_view off_text;      // Boolean: appended to the arguments' summary when off (", no bias")
    double (*get)(const LayerConfig& config) = nullptr;
    void (*set)(LayerConfig& config, double value) = nullptr;
    // The value the arguments' summary shows, where it is not get()'s (strides 0 is the pool size).
    double (*shown)(const LayerConfig& config) = nullptr;
};

// An argument as one layer type takes it.
struct LayerArgument {
    const ArgumentSpec* spec = nullptr;
    std::optional<double> keras_default;  // the value when the JSON leaves it out; none: required
    double form_default = 0.0;            // its value in a layer freshly added in the form
    bool written_at_default = true;       // to_json() writes it even when it equals keras_default
    // The form's tooltip for the argument in this type, where the spec's would not describe it
    // (SpatialDropout1D's rate drops channels, not elements); translatable; empty: the spec's.
    std::string_view tooltip;
};

// Reads one layer's "config" object with messages that name the file, the layer and the key.
class ConfigReader {
public:
    ConfigReader(const json::Value& config, std::string prefix) : config_(config), prefix_(std::move(prefix)) {}

    // Fields are 32-bit in the engine (and token ids are int32): larger values are refused here
    // rather than wrapped later. `fallback` < 0: the key is required.
    std::int64_t positive_int(std::string_view key, std::int64_t fallback = -1) const;
    std::string string(std::string_view key, std::string fallback) const;
    bool boolean(std::string_view key, bool fallback) const;
    double number(std::string_view key, double fallback) const;
    ActivationKind activation(std::string_view key, std::string fallback) const;
    Padding padding(std::string_view key, Padding fallback) const;
    bool has(std::string_view key) const;
    // The config's keys (none when it is not an object).
    std::vector<std::string> keys() const;

    [[noreturn]] void fail(const std::string& what) const;

private:
    const json::Value& config_;
    std::string prefix_;
};

// ---------------------------------------------------------------------------------------------
// Shapes and passes

// What a type's shape inference reads and fills for one layer of a model being built.
struct ShapeInference {
    const LayerConfig& config;
    std::size_t index = 0;  // position in the model (an Embedding must come first)
    Shape shape;            // in: the input of one sample; out: its output
    LayerInfo& info;        // variables (their sizes are the parameter count) and pad_left

    // ModelError "layer 'conv1d_2' (Conv1D) <why>": the form finds the layer by these words.
    [[noreturn]] void fail(const std::string& why) const;
    // "needs a sequence input (steps, channels), got ..." unless the input is [steps, channels].
    void require_sequence() const;
};

// One layer's tensors in one pass of a replica.
struct LayerPass {
    Backend& backend;
    const LayerInfo& info;
    std::int32_t batch = 0;
    ActivationKind activation = ActivationKind::Linear;  // Linear where the loss applies the softmax
    TensorView in, out;             // in: the token ids (i32) for the first layer
    TensorView grad_in, grad_out;   // backward only; grad_in is empty for the first layer
    TensorView aux;                 // [batch, output...] of the type's aux_dtype, where it has one
    std::span<const TensorView> variables, grad_variables;
    IndexedSlicesViews embedding_stats;  // the Embedding's IndexedSlices statistics, where kept
    bool training = false;
    std::uint64_t seed = 0;  // this layer's random stream in this step
};

// ---------------------------------------------------------------------------------------------
// The descriptor

// Another Keras class name that JSON may use for a type.
struct LayerAlias {
    std::string_view class_name;  // "MaxPool1D"
    // A Keras class of its own (ReLU is read as Activation('relu')), named in the list of supported
    // layers; otherwise another spelling of the same class.
    bool own_class = false;
};

struct LayerType {
    LayerKind kind = LayerKind::Invalid;
    std::string_view class_name;                 // Keras' class: "MaxPooling1D"
    std::span<const LayerAlias> aliases;         // other Keras class names read as this type
    std::string_view name_stem;                  // Keras' automatic names: "max_pooling1d", "max_pooling1d_1"
    std::span<const LayerArgument> arguments;    // in the JSON's and the form's order
    // The form's one-line summary of the arguments, translatable in context "LayerType": %1, %2,
    // ... are the shown values of `text_arguments`, in order; an off Boolean argument appends its
    // off_text. Empty: no summary.
    std::string_view arguments_text;
    std::span<const ArgumentSpec* const> text_arguments;
    // JSON reading beyond the generic one of `arguments` (checks, aliases); may be null.
    void (*read)(const ConfigReader& read, std::string_view class_name, LayerConfig& config) = nullptr;
    // The output shape, variables and resolved padding from the input shape.
    void (*infer)(ShapeInference& inference) = nullptr;
    // A buffer a replica keeps beside the output and its gradient, with the output's shape:
    // pooling positions (I32), a dropout mask (F32); DType::Invalid for none.
    DType aux_dtype = DType::Invalid;
    std::string_view aux_what;       // "the pooling positions": named in out-of-memory errors
    bool output_is_input = false;    // a reshaped view of its input (Flatten): no buffers
    bool inference_identity = false; // the identity outside training (Dropout)
    void (*forward)(const LayerPass& pass) = nullptr;
    void (*backward)(const LayerPass& pass) = nullptr;
    // This layer and the next run as one backend op where fuses_with_next says so (a Conv1D with
    // ReLU into a MaxPooling1D), in place of both types' forward and backward; null: never.
    // The buffers the next layers read are written as the two passes write them; the first layer's
    // output and its gradient are the op's room, which a backend may keep only in part (backend.h),
    // and ModelReplica::layer_output computes that output again: nothing that reads a layer's
    // output (the golden tests) can tell.
    bool (*fuses_with_next)(const LayerPass& pass, const LayerInfo& next) = nullptr;
    void (*forward_with_next)(const LayerPass& pass, const LayerPass& next) = nullptr;
    void (*backward_with_next)(const LayerPass& pass, const LayerPass& next) = nullptr;
    std::span<const OpDef* const> ops;  // the ops it runs beyond the Backend's typed set
};

// ---------------------------------------------------------------------------------------------
// The registry

std::span<const LayerType* const> layer_types();  // every type, in the form's order
const LayerType& layer_type(LayerKind kind);       // throws ModelError for Invalid
const LayerType* find_layer_type(std::string_view class_name);  // class names and aliases; null if none
const OpDef* find_op(std::string_view name);      // an op of any type; null if none
// Every argument any type takes, each once, in the form's order.
std::span<const ArgumentSpec* const> argument_specs();
// "Embedding, Conv1D, ...": the class names JSON may use, for error messages.
std::string supported_layers_text();

// A freshly added layer: the type's form defaults.
LayerConfig default_layer_config(LayerKind kind, std::string name = {});
// The generic JSON form of a type's arguments (its read hook runs after read_arguments).
void read_arguments(const ConfigReader& read, const LayerType& type, LayerConfig& config);
void write_arguments(const LayerConfig& config, const LayerType& type, json::Value& out);

}  // namespace mirrorlab
