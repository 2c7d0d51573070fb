// The commands that inspect without training: devices, summary, layers, data.
#include "app/cli_commands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "core/data/keras_reuters.h"
#include "core/data/source.h"
#include "core/data/statistics.h"
#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/util/error.h"
#include "core/util/file.h"

namespace mirrorlab::cli {

namespace {

int command_devices() {
    DeviceRegistry registry;
    load_gpu_plugin(registry);
    std::printf("Physical devices:\n");
    for (const auto& device : registry.physical_devices()) {
        std::printf("  %-6s %s", device.id().c_str(), device.name.c_str());
        if (device.type == DeviceType::CPU) {
            std::printf(" - %d cores, %s memory\n", device.cores, format_bytes(device.total_memory_bytes).c_str());
        } else {
            std::printf(" - %s memory, compute capability %s\n", format_bytes(device.total_memory_bytes).c_str(),
                        device.compute_capability.c_str());
        }
    }
    std::printf("GPU: %s\n", registry.gpu_status().c_str());
    return 0;
}

// "kernel_size: integer (required)", "padding: valid|same (default valid)", ...
std::string argument_text(const LayerArgument& argument) {
    const ArgumentSpec& spec = *argument.spec;
    std::string text = std::string(spec.key) + ": ";
    std::string fallback;
    const double value = argument.keras_default.value_or(0.0);
    switch (spec.type) {
        case ArgumentType::Integer:
            text += "integer";
            fallback = value == 0.0 && !spec.minimum_text.empty() ? std::string(spec.minimum_text)
                                                                   : std::to_string(static_cast<long long>(value));
            break;
        case ArgumentType::Rate: {
            text += "number in [0, 1)";
            char number[32];
            std::snprintf(number, sizeof number, "%g", value);
            fallback = number;
            break;
        }
        case ArgumentType::Boolean:
            text += "true|false";
            fallback = value != 0.0 ? "true" : "false";
            break;
        case ArgumentType::Padding:
            text += "valid|same";
            fallback = static_cast<Padding>(value) == Padding::Same ? "same" : "valid";
            break;
        case ArgumentType::Activation:
            text += "linear|relu|tanh|sigmoid|softmax";
            fallback = activation_name(static_cast<ActivationKind>(value));
            break;
        case ArgumentType::Invalid: break;
    }
    return text + (argument.keras_default ? " (default " + fallback + ")" : " (required)");
}

int command_layers() {
    std::printf("Layer types a model file may use (\"class_name\"), with their arguments (\"config\"):\n");
    for (const LayerType* type : layer_types()) {
        std::printf("\n%s", std::string(type->class_name).c_str());
        for (const LayerAlias& alias : type->aliases) std::printf(" | %s", std::string(alias.class_name).c_str());
        std::printf("\n");
        if (type->arguments.empty()) std::printf("  no arguments\n");
        for (const LayerArgument& argument : type->arguments) std::printf("  %s\n", argument_text(argument).c_str());
        if (!type->ops.empty()) {
            std::string ops;
            for (const OpDef* op : type->ops) ops += (ops.empty() ? "" : ", ") + std::string(op->name);
            std::printf("  its own ops: %s (a backend without a kernel for them runs the CPU reference)\n", ops.c_str());
        }
    }
    return 0;
}

void print_samples(const DatasetSplit& split) {
    switch (split.words_origin.kind) {
        case WordsOrigin::Kind::KerasWordIndex:
            std::printf("\nSamples (words from Keras' word index %s)\n", split.words_origin.path.c_str());
            break;
        case WordsOrigin::Kind::DerivedWordIndex:
            std::printf("\nSamples (words from the word index derived from the Reuters-21578 files, %s)\n",
                        split.words_origin.path.c_str());
            break;
        case WordsOrigin::Kind::None:
            if (split.train.name == kKerasReutersName) {
                std::printf("\nSamples (word ids: no reuters_word_index.json found; the GUI's Data panel downloads one "
                            "or derives it from the Reuters-21578 files)\n");
                break;
            }
            [[fallthrough]];
        default: std::printf("\nSamples\n");
    }
    for (std::size_t i = 0; i < std::min<std::size_t>(5, split.train.size()); ++i) {
        const auto label = static_cast<std::size_t>(split.train.labels[i]);
        const std::string name =
            label < split.train.class_names.size() ? split.train.class_names[label] : std::to_string(label);
        std::printf("  [%s] %s\n", name.c_str(), decode_sequence(split.train, split.train.sequences[i], 30).c_str());
    }
}

int command_data(const std::string& spec, std::int32_t length) {
    const DatasetSplit split = load_dataset(spec);
    std::printf("Data: %s%s\n", split.train.name.c_str(), split.train.synthetic ? " (synthetic)" : "");
    if (spec == "default") std::printf("Source: %s (the default)\n", resolve_default_data_spec().c_str());
    const DatasetStatistics train = compute_statistics(split.train, length);
    std::printf("\nTraining split\n%s", format_statistics(train).c_str());
    const DatasetStatistics validation = compute_statistics(split.validation, length);
    std::printf("\nValidation split: %lld samples, longest %d tokens, %.1f %% longer than %d\n",
                static_cast<long long>(validation.samples), validation.max_length, 100.0 * validation.truncated_share,
                length);
    // Classes the validation split never shows: their validation accuracy is not measured at all
    // (only the training counts were printed, so this went unseen on small data sets).
    std::vector<std::string> unvalidated;
    for (std::size_t c = 0; c < validation.class_counts.size() && validation.samples > 0; ++c) {
        if (validation.class_counts[c] == 0 && c < train.class_counts.size() && train.class_counts[c] > 0)
            unvalidated.push_back("'" + (c < train.class_names.size() ? train.class_names[c] : std::to_string(c)) + "'");
    }
    if (!unvalidated.empty()) {
        std::string listed;
        for (std::size_t i = 0; i < unvalidated.size() && i < 5; ++i) listed += (i == 0 ? "" : ", ") + unvalidated[i];
        std::printf("  %zu of the %d classes %s no validation sample (%s%s): %s accuracy is not measured\n", unvalidated.size(),
                    train.classes, unvalidated.size() == 1 ? "has" : "have", listed.c_str(), unvalidated.size() > 5 ? ", ..." : "",
                    unvalidated.size() == 1 ? "its" : "their");
    }
    for (const auto& warning : split.warnings) std::printf("WARNING: %s\n", warning.c_str());
    if (const std::string lint = lint_truncation(train); !lint.empty()) std::printf("WARNING: %s\n", lint.c_str());
    print_samples(split);
    return 0;
}

}  // namespace

ModelOption::ModelOption(CLI::App& command)
    : option_(command.add_option("--model", "model JSON (default: the tutorial model, 332,856 parameters)")
                  ->type_name("FILE")) {}

Model ModelOption::model() const {
    if (option_->count() == 0) return Model::reference();
    const std::string path = option_->as<std::string>();
    // A Keras archive was read as JSON: "invalid literal 'PK'".
    if (regular_file_starts_with(path, "PK\x03\x04").value_or(false)) {
        throw ModelError("--model '" + path + "' is a zip archive (a Keras .keras file?), not a model JSON: `mirrorlab-cli import " +
                         path + "` shows the model it holds and, with --evaluate, evaluates it; --model takes a JSON file such "
                         "as the archive's config.json or Keras' model.to_json()");
    }
    return Model::from_json_file(path);
}

Command add_devices_command(CLI::App& app) {
    return {add_command(app, "devices", "list the physical devices"), command_devices};
}

Command add_summary_command(CLI::App& app) {
    CLI::App* command = add_command(app, "summary", "print the model's Keras-style summary");
    const ModelOption model(*command);
    return {command, [model] {
                std::fputs(model.model().summary().c_str(), stdout);
                return 0;
            }};
}

Command add_layers_command(CLI::App& app) {
    return {add_command(app, "layers", "list the layer types a model file may use, with their arguments"),
            command_layers};
}

Command add_data_command(CLI::App& app) {
    CLI::App* command = add_command(app, "data", "print the data set's statistics and a few decoded samples");
    struct Options {
        std::string spec = "default";
        std::int32_t length = 300;
    };
    auto options = std::make_shared<Options>();
    add_data_spec(*command, options->spec, "as for train (default: default)");
    add_integer(*command, "--sequence-length", options->length, 1, 1 << 24,
                "the length sequences are padded or truncated to (default 300)");
    return {command, [options] { return command_data(options->spec, options->length); }};
}

}  // namespace mirrorlab::cli
