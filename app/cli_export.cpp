// `mirrorlab-cli export` (a kept run or checkpoint as a Keras 3 .keras archive or .weights.h5) and
// `mirrorlab-cli import` (a Keras model: its summary and, with --evaluate, Keras' evaluate line).
// The formats are core/export/keras_file.h's.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "app/cli_commands.h"
#include "app/cli_store.h"
#include "core/data/source.h"
#include "core/device/plugin_loader.h"
#include "core/export/keras_file.h"
#include "core/util/file.h"
#include "core/util/json.h"

namespace mirrorlab::cli {

namespace {

struct ExportCommand {
    std::string run_or_file;
    std::string which = "last";
    std::string keras_path;
    std::string weights_path;
    std::string store;
};

// Keras 3 loads only these names (load_model: ".keras", load_weights: ".weights.h5"); a file named
// otherwise was written, and the Python line printed for it failed.
void check_export_name(const std::string& path, const std::string& option, const std::string& ending, const std::string& loader) {
    if (path.size() <= ending.size() || !path.ends_with(ending)) {
        throw UsageError(option + " '" + path + "': Keras 3's " + loader + " reads only files whose names end in " + ending +
                         "; name it so");
    }
}

// The file written must not be one the export reads or the run store keeps: `--weights
// STORE/runs.sqlite` replaced the whole store, `--keras STORE/runs/1/last.mlckpt` the checkpoint.
void check_export_target(const std::string& out, const CheckpointSource& source, const std::string& store_dir) {
    namespace fs = std::filesystem;
    std::error_code error;
    if (fs::equivalent(out, source.path, error)) {
        throw UsageError("'" + out + "' is the checkpoint being exported; write the export to another file");
    }
    const fs::path store_real = fs::weakly_canonical(store_dir, error);
    const fs::path out_real = fs::weakly_canonical(fs::absolute(out, error), error);
    const fs::path runs = store_real / "runs";
    const bool in_runs = std::mismatch(runs.begin(), runs.end(), out_real.begin(), out_real.end()).first == runs.end();
    const bool database = out_real.parent_path() == store_real && out_real.filename().string().starts_with("runs.sqlite");
    if (!store_real.empty() && (in_runs || database)) {
        throw UsageError("'" + out + "' is " + (database ? "the run store's database" : "inside the run store's run folders") +
                         " ('" + store_real.string() + "'), which MirrorLab keeps: the export would replace " +
                         (database ? "every kept run" : "a run's files") + "; write it to another folder");
    }
}

int command_export(const ExportCommand& command) {
    if (command.keras_path.empty() == command.weights_path.empty()) {
        throw UsageError("export: give one of --keras OUT.keras or --weights OUT.weights.h5");
    }
    if (!command.keras_path.empty()) check_export_name(command.keras_path, "--keras", ".keras", "keras.saving.load_model");
    if (!command.weights_path.empty()) check_export_name(command.weights_path, "--weights", ".weights.h5", "model.load_weights");
    const CheckpointSource source = find_checkpoint(command.store, command.run_or_file, command.which);
    check_export_target(command.keras_path.empty() ? command.weights_path : command.keras_path, source, store_folder(command.store));
    const Model model = Model::from_json_text(source.checkpoint.model_json, source.path);
    const std::vector<float>& weights = source.checkpoint.state.weights;
    const OptimizerConfig& optimizer = source.checkpoint.config.optimizer;
    // The optimizer's moments go along, so model.fit() in Keras continues where this run stopped.
    const KerasOptimizerState optimizer_state = keras_optimizer_state(source.checkpoint.state);
    const std::string what = describe_source(source);
    if (!command.keras_path.empty()) {
        save_keras_file(command.keras_path, model, weights, optimizer, &optimizer_state);
        std::printf("Exported %s to %s: a Keras 3 model, %s parameters, compiled with %s at step %lld (its moments "
                    "included, so fit() goes on from them).\n",
                    what.c_str(), command.keras_path.c_str(), format_thousands(model.total_params()).c_str(),
                    std::string(optimizer_name(optimizer.kind)).c_str(), static_cast<long long>(optimizer_state.iterations));
        std::printf("In Python: model = keras.saving.load_model(\"%s\")\n", command.keras_path.c_str());
    } else {
        save_keras_weights_file(command.weights_path, model, weights, optimizer, &optimizer_state);
        std::printf("Exported the weights of %s to %s (%s parameters).\n", what.c_str(), command.weights_path.c_str(),
                    format_thousands(model.total_params()).c_str());
        std::printf("In Python, for the same model: model.load_weights(\"%s\")\n", command.weights_path.c_str());
    }
    return 0;
}

struct ImportCommand {
    std::string path;          // a .keras archive, or a model.to_json() / config.json file
    std::string weights_path;  // a .weights.h5 for it
    bool evaluate = false;
    std::string data_spec = "default";
    std::int32_t batch_size = 32;
    bool json = false;
};

bool ends_with(const std::string& text, const std::string& tail) {
    return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

int command_import(const ImportCommand& command) {
    KerasModel imported = [&] {
        // By what the file holds, not its name: CFG.JSON and config.txt were refused as "not a .keras archive".
        const std::optional<bool> archive = regular_file_starts_with(command.path, "PK\x03\x04");
        if (archive.has_value() && !*archive) {
            const std::string text = read_file_text(command.path, kKerasMaxFileBytes, "'" + command.path + "'", "a model");
            // A byte-order mark first (Windows Notepad's UTF-8) is JSON's too.
            const std::size_t first = text.find_first_not_of(" \t\r\n", text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0);
            if (first == std::string::npos || text[first] != '{') {
                throw DataError("'" + command.path + "' is not a .keras archive (a zip) nor a model JSON (model.to_json(), config.json)" +
                                (text.rfind("\x89HDF", 0) == 0 ? ": it is an HDF5 file (weights?); give the model, and the weights "
                                                                 "with --weights FILE.weights.h5"
                                                               : ""));
            }
            return KerasModel{model_from_keras_config(text, command.path), {}, {}};
        }
        return load_keras_file(command.path);
    }();
    if (!command.weights_path.empty()) imported.weights = load_keras_weights_file(command.weights_path, imported.model);
    if (!command.json) {
        std::printf("%s", imported.model.summary().c_str());
        std::printf("%s\n", imported.weights.empty() ? "No weights (give them with --weights FILE.weights.h5)."
                                                     : "Weights: loaded.");
        if (imported.optimizer) {
            std::printf("Optimizer (compile_config): %s\n", imported.optimizer->describe().c_str());
        } else if (!imported.optimizer_note.empty() && ends_with(command.path, ".keras")) {
            std::printf("Optimizer: none taken (%s).\n", imported.optimizer_note.c_str());
        }
    }
    if (!command.evaluate) return 0;
    if (imported.weights.empty()) {
        throw UsageError("import --evaluate needs weights: a .keras file, or --weights FILE.weights.h5");
    }
    const DatasetSplit split = load_dataset(command.data_spec);
    const TrainData data = make_train_data(split, imported.model.input_length(), imported.model.vocabulary_size());
    if (!data.validation_ids || data.validation_ids->count == 0) {
        throw DataError("the data set '" + data.name +
                        "' has no validation split to evaluate on; evaluate on data that has one with --data SPEC");
    }
    DeviceRegistry registry;
    load_gpu_plugin(registry);
    const Predictions predictions = run_inference(imported.model, imported.weights, *data.validation_ids,
                                                  data.validation_labels.get(), registry, DeviceConfig::parse("cpu"),
                                                  command.batch_size);
    if (command.json) {
        // Keras' evaluate(return_dict=True) keys, at full precision.
        json::Value o = json::Value::object();
        o.set("samples", predictions.samples);
        o.set("loss", predictions.metrics.loss);
        o.set("sparse_categorical_accuracy", predictions.metrics.accuracy);
        o.set("sparse_top_k_categorical_accuracy", predictions.metrics.top5);
        std::printf("%s\n", json::dump(o, -1, json::InvalidUtf8::Replace).c_str());
        return 0;
    }
    std::printf("Evaluating on the validation split of %s (%lld samples)\n", data.name.c_str(),
                static_cast<long long>(predictions.samples));
    print_evaluate_line(predictions);
    return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
    CLI::App* command = add_command(app, "export", "a kept run's model and weights as a Keras 3 .keras file or .weights.h5");
    auto options = std::make_shared<ExportCommand>();
    add_checkpoint_options(*command, options->run_or_file, options->which);
    command->add_option("--keras", options->keras_path, "write a .keras archive (keras.saving.load_model)")->type_name("OUT.keras");
    command->add_option("--weights", options->weights_path, "write only the weights (model.load_weights)")
        ->type_name("OUT.weights.h5");
    add_store_option(*command, options->store);
    return {command, [options] { return command_export(*options); }};
}

Command add_import_command(CLI::App& app) {
    CLI::App* command = add_command(app, "import", "a Keras model's summary; with --evaluate, Keras' evaluate line");
    auto options = std::make_shared<ImportCommand>();
    command->add_option("model", options->path, "a .keras file, or a model.to_json() / config.json file")
        ->type_name("MODEL.keras")
        ->required();
    command->add_option("--weights", options->weights_path, "weights for it (.weights.h5)")->type_name("FILE");
    CLI::Option* evaluate = command->add_flag("--evaluate", options->evaluate, "evaluate on the validation split of the data");
    // Each of these is about the evaluation: without --evaluate it would be ignored without a word.
    add_data_spec(*command, options->data_spec, "the data to evaluate on (default: default)")->needs(evaluate);
    add_integer(*command, "--batch-size", options->batch_size, 1, 1 << 20, "(default 32)")->needs(evaluate);
    command->add_flag("--json", options->json, "print the evaluation as one JSON object instead")->needs(evaluate);
    return {command, [options] { return command_import(*options); }};
}

}  // namespace mirrorlab::cli
