#include "app/cli_store.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "core/data/corpus.h"
#include "core/data/source.h"
#include "core/data/text_encoding.h"
#include "core/device/plugin_loader.h"
#include "core/export/tensorboard.h"
#include "core/model/model.h"
#include "core/store/model_checkpoint.h"
#include "core/store/recorded_run.h"
#include "core/train/inference.h"
#include "core/train/progress.h"
#include "core/util/file.h"
#include "core/util/json.h"

namespace mirrorlab::cli {

namespace {

std::string text_setting(const json::Value& settings, std::string_view key, const std::string& fallback) {
    const json::Value* value = settings.is_object() ? settings.find(key) : nullptr;
    return value && value->is_string() ? value->as_string() : fallback;
}

std::string metric_text(double value) {
    if (std::isnan(value)) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", value);
    return text;
}

// A word of the input as a terminal can show it: control bytes (ESC, BEL, NUL, ...) as \xNN, so
// a text cannot move the cursor, ring or recolour the terminal it is echoed to.
// `keep_line_breaks`: a note's lines stay lines.
std::string printable(const std::string& word, bool keep_line_breaks = false) {
    std::string shown;
    for (const unsigned char c : word) {
        if ((c < 0x20 && !(keep_line_breaks && c == '\n')) || c == 0x7F) {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
            shown += escaped;
        } else {
            shown += static_cast<char>(c);
        }
    }
    return shown;
}

// Columns a code point takes in a terminal: 2 for the wide East Asian ranges, else 1.
int columns_of(std::uint32_t cp) {
    const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
                      (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) || (cp >= 0x20000 && cp <= 0x3FFFD);
    return wide ? 2 : 1;
}

// A cell of the runs table, `width` columns wide: control bytes escaped (a name with a newline or
// ESC broke the table or recoloured the terminal), cut at a character's boundary with "…" (a cut
// by bytes left half a character, invalid UTF-8), padded with spaces.
std::string table_cell(const std::string& text, int width) {
    const std::string shown = printable(text);
    std::string cell;
    int used = 0;
    for (std::size_t i = 0; i < shown.size();) {
        std::uint32_t cp = 0;
        const std::size_t length = std::max<std::size_t>(1, utf8_code_point(shown, i, cp));  // a stray byte: one column
        const int columns = columns_of(cp);
        const bool last = i + length >= shown.size();
        if (used + columns > width || (!last && used + columns == width)) {
            cell += "\u2026";  // …
            ++used;
            break;
        }
        cell.append(shown, i, length);
        used += columns;
        i += length;
    }
    return cell + std::string(static_cast<std::size_t>(std::max(0, width - used)), ' ');
}

void print_run_line(const RunInfo& run) {
    std::printf("%5lld  %s  %-11s  %3d/%-3d  %4d  %s  %s  %s\n", static_cast<long long>(run.id), table_cell(run.name, 20).c_str(),
                std::string(run_status_name(run.status)).c_str(), run.epochs_completed, run.epochs_planned, run.best_epoch,
                table_cell(run.started_at, 20).c_str(), table_cell(run.data_name, 28).c_str(), printable(run.devices).c_str());
}

json::Value run_json(const RunInfo& run) {
    json::Value o = json::Value::object();
    o.set("id", run.id);
    o.set("name", run.name);
    o.set("note", run.note);
    o.set("status", std::string(run_status_name(run.status)));
    o.set("status_text", run.status_text);
    o.set("started_at", run.started_at);
    o.set("ended_at", run.ended_at);
    o.set("devices", run.devices);
    o.set("data", run.data_name);
    o.set("parameters", run.parameters);
    o.set("epochs_planned", run.epochs_planned);
    o.set("epochs_completed", run.epochs_completed);
    o.set("best_epoch", run.best_epoch);
    o.set("steps_recorded", run.steps_recorded);
    o.set("folder", run.folder);
    return o;
}

int show_run(const RunStore& store, std::int64_t id, bool json_output) {
    const RunInfo run = store.get(id);
    const std::vector<EpochRow> epochs = store.epochs(id);
    if (json_output) {
        json::Value o = run_json(run);
        json::Value rows = json::Value::array();
        for (const EpochRow& e : epochs) {
            json::Value row = json::Value::object();
            row.set("epoch", e.epoch);
            row.set("loss", e.train.loss);
            row.set("accuracy", e.train.accuracy);
            row.set("top5", e.train.top5);
            if (e.has_validation) {
                row.set("val_loss", e.validation.loss);
                row.set("val_accuracy", e.validation.accuracy);
                row.set("val_top5", e.validation.top5);
            }
            row.set("seconds", e.seconds);  // training + validation
            rows.push_back(std::move(row));
        }
        o.set("epochs", std::move(rows));
        // The name says where: "run 3's settings in '.../runs.sqlite':1:2: expected a string key".
        o.set("settings", json::parse(run.settings_json, "run " + std::to_string(run.id) + "'s settings in '" + store.folder() + "/runs.sqlite'"));
        std::printf("%s\n", json::dump(o, 2, json::InvalidUtf8::Replace).c_str());
        return 0;
    }
    std::printf("Run %lld: %s\n", static_cast<long long>(run.id), printable(run.name).c_str());
    if (!run.note.empty()) std::printf("Note: %s\n", printable(run.note, true).c_str());
    std::printf("Status: %s%s%s\n", std::string(run_status_name(run.status)).c_str(), run.status_text.empty() ? "" : " - ",
                printable(run.status_text, true).c_str());
    std::printf("Started %s%s%s\n", printable(run.started_at).c_str(), run.ended_at.empty() ? "" : ", ended ",
                printable(run.ended_at).c_str());
    std::printf("Data: %s\nDevices: %s (%d replica%s)\nParameters: %lld\nSteps recorded: %lld\nFolder: %s\n", run.data_name.c_str(),
                run.devices.c_str(), run.replicas, run.replicas == 1 ? "" : "s", static_cast<long long>(run.parameters),
                static_cast<long long>(run.steps_recorded), run.folder.c_str());
    std::printf("\nepoch  loss    accuracy  top5    val_loss  val_accuracy  val_top5  seconds\n");
    for (const EpochRow& e : epochs) {
        std::printf("%5d  %-6s  %-8s  %-6s  %-8s  %-12s  %-8s  %.1f%s\n", e.epoch, metric_text(e.train.loss).c_str(),
                    metric_text(e.train.accuracy).c_str(), metric_text(e.train.top5).c_str(), metric_text(e.validation.loss).c_str(),
                    metric_text(e.validation.accuracy).c_str(), metric_text(e.validation.top5).c_str(), e.seconds,
                    e.epoch == run.best_epoch ? "  <- best" : "");
    }
    for (const CheckpointRow& c : store.checkpoints(id)) {
        std::printf("Checkpoint (%s): %s - epoch %d, step %lld\n", c.kind.c_str(), c.path.c_str(), c.epoch,
                    static_cast<long long>(c.global_step));
    }
    return 0;
}

// The data a run was trained on, or `spec` when given, padded for `model`.
struct LoadedData {
    DatasetSplit split;
    TrainData data;
};

// `other_data`: how the command takes other data, for the advice when the run's own is gone.
LoadedData load_run_data(const CheckpointSource& source, const Model& model, const std::string& spec,
                         const std::string& other_data = {}) {
    const json::Value& settings = source.checkpoint.settings;
    const std::string data_spec = spec.empty() ? text_setting(settings, "data", "default") : spec;
    LoadedData loaded;
    try {
        loaded.split = load_dataset(data_spec);
    } catch (const DataError& error) {
        if (!spec.empty()) throw;
        // The run's own data: its words and topic names are what the run's ids mean.
        const std::string trained = source.run_id > 0 ? "run " + std::to_string(source.run_id) : "the checkpoint '" + source.path + "'";
        throw DataError("the data " + trained + " was trained on ('" + data_spec +
                        "') is needed for its vocabulary and topic names and cannot be loaded: " + error.what() +
                        "; put it back where it was" + other_data);
    }
    loaded.data = make_train_data(loaded.split, model.input_length(), model.vocabulary_size(), OovPolicy::MapToOov);
    return loaded;
}



// A run id as the store gives them: 1 .. 2^63 - 1 (stoll threw out_of_range past it).
std::int64_t run_id_of(const std::string& text) {
    std::int64_t id = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || id < 1 || text.front() == '-') {
        throw UsageError("a run id is a number from 1 (`mirrorlab-cli runs` lists them), got '" + text + "'");
    }
    return id;
}

}  // namespace


std::string store_folder(const std::string& explicit_folder) {
    return explicit_folder.empty() ? RunStore::default_folder() : explicit_folder;
}

namespace {

// The store commands that read runs look in: --store DIR only where a store is, or an empty folder
// made for one (a mistyped folder was made into an empty store, and the runs were "not there").
std::string existing_store_folder(const std::string& explicit_folder) {
    const std::string folder = store_folder(explicit_folder);
    std::error_code error;
    if (!explicit_folder.empty() && !std::filesystem::exists(folder + "/runs.sqlite", error) &&
        !std::filesystem::is_directory(folder + "/runs", error) && !std::filesystem::is_empty(folder, error)) {
        throw StoreError("there is no run store in '" + folder + "' (it has no runs.sqlite and no runs folder); check --store DIR, " +
                         "or leave it out for the default store (" + RunStore::default_folder() + ")");
    }
    return folder;
}

bool all_digits(const std::string& text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

bool names_a_run_id(const std::string& run_or_file) {
    std::error_code error;  // a name that cannot be looked at (a loop of links) is not a file here
    return all_digits(run_or_file) && !std::filesystem::exists(run_or_file, error);
}

// "1" with a file or folder named 1 in the current folder: the file answered for run 1 (another
// run's copied checkpoint exported as run 1) without a word.
void refuse_shadowed_run_id(RunStore& store, const std::string& run_or_file) {
    if (!all_digits(run_or_file)) return;
    std::int64_t id = 0;
    const auto [end, error] = std::from_chars(run_or_file.data(), run_or_file.data() + run_or_file.size(), id);
    if (error != std::errc() || !store.find(id)) return;
    throw UsageError("'" + run_or_file + "' is both run " + run_or_file + " of the store and a file or folder here; write ./" +
                     run_or_file + " for the file, or run the command from another folder for the run");
}

CheckpointSource stored_checkpoint(RunStore& store, const std::string& id_text, const std::string& which) {
    CheckpointSource source;
    source.run_id = run_id_of(id_text);
    const RunInfo run = store.get(source.run_id);
    source.path = checkpoint_path_of(run, which);
    try {
        source.checkpoint = load_checkpoint(source.path);
    } catch (const CheckpointError& e) {
        // A damaged last.mlckpt: the best one beside it may be whole, and was not named.
        const std::string best = ModelCheckpoint::best_path(run.folder);
        std::error_code error;
        if (source.path == best || !std::filesystem::exists(best, error)) throw;
        throw CheckpointError(std::string(e.what()) + "; run " + id_text + "'s best checkpoint may be whole: --checkpoint best, or " +
                              "train --resume '" + best + "'");
    }
    return source;
}

// A file of a stored run continues that run when it is the run's own checkpoint.
void attach_stored_run(RunStore& store, CheckpointSource& source) {
    std::error_code error;
    if (auto run = store.find(source.checkpoint.run_id);
        run && std::filesystem::equivalent(std::filesystem::path(source.path).parent_path(), run->folder, error)) {
        source.run_id = run->id;
    }
}

// A checkpoint file; with a store, an id it shadows is refused and a stored run it belongs to is
// attached.
CheckpointSource checkpoint_file(RunStore* store, const std::string& path) {
    if (store) refuse_shadowed_run_id(*store, path);
    CheckpointSource source;
    source.path = path;
    source.checkpoint = load_checkpoint(source.path);
    if (store && source.checkpoint.run_id > 0) attach_stored_run(*store, source);
    return source;
}

}  // namespace

CheckpointSource find_checkpoint(RunStore& store, const std::string& run_or_file, const std::string& which) {
    if (names_a_run_id(run_or_file)) return stored_checkpoint(store, run_or_file, which);
    return checkpoint_file(&store, run_or_file);
}

CheckpointSource find_checkpoint(const std::string& store_folder_path, const std::string& run_or_file, const std::string& which) {
    if (names_a_run_id(run_or_file)) {
        RunStore store(existing_store_folder(store_folder_path));
        return stored_checkpoint(store, run_or_file, which);
    }
    // A file stands on its own: the store is looked at only where it exists and opens (a store that
    // is damaged, locked or on a read-only disk must not keep a checkpoint file from being used).
    const std::string folder = store_folder(store_folder_path);
    std::error_code error;
    std::unique_ptr<RunStore> store;
    if (std::filesystem::exists(folder + "/runs.sqlite", error)) {
        try {
            store = std::make_unique<RunStore>(folder);
        } catch (const StoreError&) {
        }
    }
    return checkpoint_file(store.get(), run_or_file);
}

int command_runs(const RunsCommand& command) {
    RunStore store(existing_store_folder(command.store));
    if (command.action == "show") return show_run(store, command.id, command.json);
    if (command.action == "rename" || command.action == "note") {
        store.get(command.id);
        if (command.action == "rename") store.rename(command.id, command.value);
        else store.annotate(command.id, command.value);
        return 0;
    }
    if (command.action == "export") {
        const std::vector<std::string> files =
            export_run_to_tensorboard(store, command.id, command.tensorboard, command.tensorboard_batches);
        std::printf("Wrote run %lld's TensorBoard event files (view them with `tensorboard --logdir %s`):\n",
                    static_cast<long long>(command.id), command.tensorboard.c_str());
        for (const std::string& file : files) std::printf("  %s\n", file.c_str());
        return 0;
    }
    if (command.action == "delete") {
        store.remove(command.id);
        std::printf("Deleted run %lld and its folder.\n", static_cast<long long>(command.id));
        return 0;
    }
    RunFilter filter;
    filter.text = command.filter;
    if (!command.status.empty()) {
        const RunStatus status = run_status_from_name(command.status);
        if (status == RunStatus::Invalid) {
            throw UsageError("--status must be running, finished, stopped, failed or interrupted, got '" + command.status + "'");
        }
        filter.status = status;
    }
    const std::vector<RunInfo> runs = store.list(filter);
    if (command.json) {
        json::Value list = json::Value::array();
        for (const RunInfo& run : runs) list.push_back(run_json(run));
        std::printf("%s\n", json::dump(list, 2, json::InvalidUtf8::Replace).c_str());
        return 0;
    }
    if (runs.empty()) {
        if (!command.filter.empty() || !command.status.empty()) {
            std::printf("No run in %s matches%s%s%s%s; `mirrorlab-cli runs` lists them all.\n", store.folder().c_str(),
                        command.filter.empty() ? "" : " the filter '", command.filter.c_str(), command.filter.empty() ? "" : "'",
                        command.status.empty() ? "" : (" the status " + command.status).c_str());
        } else {
            std::printf("No runs in %s yet: `mirrorlab-cli train` records each run there.\n", store.folder().c_str());
        }
        return 0;
    }
    std::printf("%5s  %-20s  %-11s  %-7s  %4s  %-20s  %-28s  %s\n", "ID", "NAME", "STATUS", "EPOCHS", "BEST", "STARTED", "DATA", "DEVICES");
    for (const RunInfo& run : runs) print_run_line(run);
    return 0;
}

void print_evaluate_line(const Predictions& predictions) {
    // Keras' model.evaluate(verbose=2) line.
    std::printf("%lld/%lld - %.0fs %.0fms/step%s\n", static_cast<long long>(predictions.steps), static_cast<long long>(predictions.steps),
                std::floor(predictions.seconds), predictions.seconds * 1000.0 / static_cast<double>(std::max<std::int64_t>(1, predictions.steps)),
                keras_metrics_text(predictions.metrics, "").c_str());
}

int command_evaluate(const EvaluateCommand& command) {
    const CheckpointSource source = find_checkpoint(command.store, command.run_or_file, command.which);
    const Model model = Model::from_json_text(source.checkpoint.model_json, source.path);
    const LoadedData loaded = load_run_data(source, model, command.data_spec, ", or evaluate on other data with --data SPEC");
    if (command.data_spec.empty()) check_checkpoint_fits(source.checkpoint, model, fingerprint_of(loaded.data), source.path);
    if (!loaded.data.validation_ids || loaded.data.validation_ids->count == 0) {
        throw DataError("the data set '" + loaded.data.name +
                        "' has no validation split to evaluate on; evaluate on data that has one with --data SPEC");
    }
    DeviceRegistry registry;
    load_gpu_plugin(registry);
    const DeviceConfig devices = DeviceConfig::parse(command.devices.empty() ? "cpu" : command.devices);
    devices.validate(registry);
    const Predictions predictions = run_inference(model, source.checkpoint.state.weights, *loaded.data.validation_ids,
                                                  loaded.data.validation_labels.get(), registry, devices, command.batch_size);
    const ClassReport report = class_report(predictions, *loaded.data.validation_labels);
    if (command.json) {
        json::Value o = json::Value::object();
        o.set("source", describe_source(source));
        o.set("samples", predictions.samples);
        o.set("loss", predictions.metrics.loss);
        o.set("accuracy", predictions.metrics.accuracy);
        o.set("top5", predictions.metrics.top5);
        o.set("macro_f1", report.macro_f1);
        std::printf("%s\n", json::dump(o, -1, json::InvalidUtf8::Replace).c_str());
        return 0;
    }
    std::printf("Evaluating %s on the validation split of %s (%lld samples)\n", describe_source(source).c_str(),
                loaded.data.name.c_str(), static_cast<long long>(predictions.samples));
    print_evaluate_line(predictions);
    if (command.report) std::printf("\n%s", format_class_report(report, loaded.split.validation.class_names).c_str());
    return 0;
}

int command_predict(const PredictCommand& command) {
    const CheckpointSource source = find_checkpoint(command.store, command.run_or_file, command.which);
    const Model model = Model::from_json_text(source.checkpoint.model_json, source.path);
    // One newswire is kilobytes; a 400 MB file took 9 GB to tokenize. UTF-16 and binary files were
    // classified as words full of NULs.
    constexpr std::uint64_t kMaxTextToClassifyBytes = std::uint64_t{8} << 20;
    const std::string text =
        command.file.empty() ? command.text : read_text_file(command.file, kMaxTextToClassifyBytes, "one text to classify");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw DataError("there is no text to classify; give it with --text \"...\" or --file FILE");
    }
    const LoadedData loaded = load_run_data(source, model, "");
    // Data changed since the run (a CSV edited): its words and topics would not be the run's.
    check_checkpoint_fits(source.checkpoint, model, fingerprint_of(loaded.data), source.path);
    const EncodedText encoded = encode_text(loaded.split.train, text, model.vocabulary_size());
    const PaddedSequences ids = pad_sequences({encoded.ids}, model.input_length());
    DeviceRegistry registry;
    const Predictions predictions = run_inference(model, source.checkpoint.state.weights, ids, nullptr, registry, DeviceConfig::parse("cpu"), 1);
    const auto top = top_classes(predictions, 0, command.top);
    const std::vector<std::string>& names = loaded.split.train.class_names;
    auto name_of = [&](std::int32_t c) { return c < static_cast<std::int32_t>(names.size()) ? names[static_cast<std::size_t>(c)] : std::to_string(c); };
    std::vector<std::string> unknown;
    for (std::size_t i = 0; i < encoded.words.size(); ++i) {
        if (!encoded.known[i]) unknown.push_back(encoded.words[i]);
    }
    if (command.json) {
        json::Value o = json::Value::object();
        json::Value classes = json::Value::array();
        for (const auto& [label, probability] : top) {
            json::Value c = json::Value::object();
            c.set("label", label);
            c.set("name", name_of(label));
            c.set("probability", static_cast<double>(probability));
            classes.push_back(std::move(c));
        }
        o.set("top", std::move(classes));
        o.set("words", static_cast<std::int64_t>(encoded.words.size()));
        json::Value unknown_words = json::Value::array();
        for (const std::string& word : unknown) unknown_words.push_back(word);
        o.set("unknown_words", std::move(unknown_words));
        std::printf("%s\n", json::dump(o, -1, json::InvalidUtf8::Replace).c_str());
        return 0;
    }
    std::printf("Top %zu topics (%s):\n", top.size(), describe_source(source).c_str());
    for (std::size_t i = 0; i < top.size(); ++i) {
        const int bar = static_cast<int>(std::lround(top[i].second * 40));
        std::printf("  %zu. %-14s %6.2f%%  %s\n", i + 1, name_of(top[i].first).c_str(), top[i].second * 100.0, std::string(static_cast<std::size_t>(bar), '#').c_str());
    }
    std::printf("%zu words, %zu not in the vocabulary%s", encoded.words.size(), unknown.size(), unknown.empty() ? ".\n" : ": ");
    for (std::size_t i = 0; i < unknown.size() && i < 20; ++i) std::printf("%s%s", i ? ", " : "", printable(unknown[i]).c_str());
    if (!unknown.empty()) std::printf("%s\n", unknown.size() > 20 ? ", ..." : "");
    return 0;
}

void add_store_option(CLI::App& command, std::string& store) {
    command.add_option("--store", store, "the run store's folder (default: $MIRRORLAB_DATA_DIR, else\n$XDG_DATA_HOME/MirrorLab, else ~/.local/share/MirrorLab)")
        ->type_name("DIR");
}

void add_checkpoint_options(CLI::App& command, std::string& run_or_file, std::string& which) {
    command.add_option("--run", run_or_file, "a run id or a checkpoint file")->type_name("RUN|FILE")->required();
    command.add_option("--checkpoint", which, "last | best: the run's last finished epoch (default) or its best")
        ->type_name("WHICH")
        ->each([](const std::string& text) {
            if (text != "last" && text != "best") throw UsageError("--checkpoint must be last or best, got '" + text + "'");
        });
}

Command add_runs_command(CLI::App& app) {
    CLI::App* command = add_command(app, "runs", "list the kept runs; show, rename, annotate, delete or export one");
    auto options = std::make_shared<RunsCommand>();
    auto words = std::make_shared<std::vector<std::string>>();
    command->add_option("action", *words,
                        "list | show ID | rename ID NAME | note ID TEXT | delete ID\n"
                        "| export ID --tensorboard DIR (default list)")
        ->type_name("ACTION [ID] [TEXT]");
    CLI::Option* tensorboard = command->add_option("--tensorboard", options->tensorboard,
                                                   "export: write the run's epochs as TensorBoard event files in\n"
                                                   "DIR/train and DIR/validation, as Keras' TensorBoard callback does")
                                   ->type_name("DIR");
    CLI::Option* batches = command->add_flag("--tensorboard-batches", options->tensorboard_batches,
                                             "export: also the recorded steps as batch_* scalars");
    CLI::Option* filter =
        command->add_option("--filter", options->filter, "list: runs whose name, note, data or devices contain TEXT")->type_name("TEXT");
    CLI::Option* status =
        command->add_option("--status", options->status, "list: running | finished | stopped | failed | interrupted")->type_name("STATUS");
    add_store_option(*command, options->store);
    CLI::Option* json = command->add_flag("--json", options->json, "print JSON instead of a table");
    return {command, [options, words, tensorboard, batches, filter, status, json] {
                if (!words->empty()) options->action = words->front();
                const std::string& action = options->action;
                const bool takes_text = action == "rename" || action == "note";
                if (action != "list" && action != "show" && action != "delete" && action != "export" && !takes_text) {
                    throw UsageError("runs: unknown action '" + action + "'; use list, show, rename, note, delete or export");
                }
                // An option of another action was ignored without a word (runs show 1 --tensorboard x).
                const std::pair<CLI::Option*, std::vector<std::string>> used_by[] = {
                    {tensorboard, {"export"}}, {batches, {"export"}}, {filter, {"list"}}, {status, {"list"}}, {json, {"list", "show"}}};
                for (const auto& [option, actions] : used_by) {
                    if (option->count() == 0 || std::find(actions.begin(), actions.end(), action) != actions.end()) continue;
                    std::string listed;
                    for (const std::string& a : actions) listed += (listed.empty() ? "runs " : " and runs ") + a;
                    throw UsageError(option->get_name() + " is for " + listed + ", not runs " + action);
                }
                const std::size_t needed = action == "list" ? 1 : takes_text ? 3 : 2;
                if (action == "export" && options->tensorboard.empty()) {
                    throw UsageError("runs export needs --tensorboard DIR: the folder for the event files");
                }
                if (!words->empty() && words->size() != needed) {
                    throw UsageError("runs " + action + " takes " +
                                     (action == "list" ? std::string("no arguments") : takes_text ? "a run id and a text" : "a run id"));
                }
                if (words->size() >= 2) options->id = run_id_of((*words)[1]);
                if (takes_text) options->value = (*words)[2];
                return command_runs(*options);
            }};
}

Command add_evaluate_command(CLI::App& app) {
    CLI::App* command = add_command(app, "evaluate", "Keras' evaluate line for a kept run on its validation split");
    auto options = std::make_shared<EvaluateCommand>();
    add_checkpoint_options(*command, options->run_or_file, options->which);
    add_data_spec(*command, options->data_spec, "evaluate on another data set (default: the run's)");
    add_device_spec(*command, options->devices, "the device to run on (default cpu)");
    add_integer(*command, "--batch-size", options->batch_size, 1, 1 << 20, "(default 32)");
    command->add_flag("--report", options->report, "add per-class precision, recall, f1 and support");
    add_store_option(*command, options->store);
    command->add_flag("--json", options->json, "print one JSON object instead");
    return {command, [options] { return command_evaluate(*options); }};
}

Command add_predict_command(CLI::App& app) {
    CLI::App* command = add_command(app, "predict", "the most probable topics of a newswire text for a kept run");
    auto options = std::make_shared<PredictCommand>();
    add_checkpoint_options(*command, options->run_or_file, options->which);
    auto* text = command->add_option("--text", options->text, "the text to classify")->type_name("TEXT");
    auto* file = command->add_option("--file", options->file, "a file holding the text (UTF-8, at most 8 MiB)")->type_name("FILE");
    text->excludes(file);
    add_integer(*command, "--top", options->top, 1, 1000, "how many topics to show (default 5)");
    add_store_option(*command, options->store);
    command->add_flag("--json", options->json, "print one JSON object instead");
    return {command, [options] { return command_predict(*options); }};
}

std::string describe_source(const CheckpointSource& source) {
    return (source.run_id > 0 ? "run " + std::to_string(source.run_id) + ", " : std::string()) +
           ModelCheckpoint::weights_text(source.checkpoint.state) + " (" + source.path + ")";
}

}  // namespace mirrorlab::cli
