// mirrorlab-cli: the headless front end. Its commands, options and output are a contract that
// scripts and the docs rely on; see README.md.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "app/cli_bench.h"
#include "core/data/keras_reuters.h"
#include "core/data/source.h"
#include "core/data/statistics.h"
#include "core/device/device.h"
#include "core/device/plugin_loader.h"
#include "core/layers/layer_type.h"
#include "core/model/model.h"
#include "core/train/events.h"
#include "core/train/progress.h"
#include "core/train/trainer.h"
#include "core/util/error.h"
#include "core/util/json.h"

using namespace mirrorlab;

namespace {

// Ctrl-C (SIGINT) and SIGTERM. The first asks the trainer to stop after the step in flight (the
// main loop below notices it); a second one, while that is still under way, ends the program at
// once. Only async-signal-safe work here: a lock-free atomic, write() and _exit().
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void on_stop_signal(int signal_number) {
    int none = 0;
    if (g_stop_signal.compare_exchange_strong(none, signal_number)) return;
    static const char kAgainInt[] = "mirrorlab-cli: Ctrl-C again: exiting at once\n";
    static const char kAgainTerm[] = "mirrorlab-cli: SIGTERM again: exiting at once\n";
    const char* text = signal_number == SIGINT ? kAgainInt : kAgainTerm;
    const std::size_t length = signal_number == SIGINT ? sizeof kAgainInt - 1 : sizeof kAgainTerm - 1;
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    (void)written;  // nothing to do about a failed write on the way out
    ::_exit(128 + signal_number);
}

void install_stop_handlers() {
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // the training threads' reads and writes carry on undisturbed
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

const char* signal_label(int signal_number) { return signal_number == SIGINT ? "Ctrl-C" : "SIGTERM"; }
const char* signal_name(int signal_number) { return signal_number == SIGINT ? "SIGINT" : "SIGTERM"; }

// "in epoch 4 after step 120/281; 3 complete epochs kept"
std::string describe_stop(const FinishedEvent& finished) {
    const StopPoint& stop = finished.stop;
    std::string where;
    switch (stop.phase) {
        case StopPhase::Training:
            where = "in epoch " + std::to_string(stop.epoch) + " after step " + std::to_string(stop.step) + "/" +
                    std::to_string(stop.steps);
            break;
        case StopPhase::Validation:
            where = "in epoch " + std::to_string(stop.epoch) + ", validation step " + std::to_string(stop.validation_step) +
                    "/" + std::to_string(stop.validation_steps) + " (after all " + std::to_string(stop.steps) +
                    " training steps)";
            break;
        case StopPhase::BetweenEpochs:
        case StopPhase::Invalid: where = "after epoch " + std::to_string(stop.epoch); break;
    }
    const int kept = finished.epochs_completed;
    return where + "; " + std::to_string(kept) + (kept == 1 ? " complete epoch kept" : " complete epochs kept");
}

// Tests only: once a stop signal has arrived, the trainer's next event is held this long before it
// is printed, standing in for a slow last step, so that a test can send the second Ctrl-C while
// the first one is still being honoured.
long long test_slow_stop_ms() {
    const char* text = std::getenv("MIRRORLAB_CLI_TEST_SLOW_STOP_MS");
    return text != nullptr ? std::atoll(text) : 0;
}

const char* const kUsage = R"(usage: mirrorlab-cli <command> [options]

commands:
  devices                       list the physical devices
  summary [--model FILE]        print the model's Keras-style summary (default: the tutorial model)
  layers                        list the layer types a model file may use, with their arguments
  train   [options]             train and print Keras progress lines
  bench   [options]             time the reference workload (see 'bench --help')
  data    [--data SPEC] [--sequence-length N]
                                print the data set's statistics and a few decoded samples
  --version                     print the version and exit

train options:
  --model FILE                  model JSON (default: the tutorial model, 332,856 parameters)
  --data SPEC                   default | synthetic | synthetic:TRAIN[:VALIDATION] | keras[:PATH]
                                | reuters21578:DIR | folder:DIR | csv:FILE | tsv:FILE
                                (default: Reuters when found locally, else synthetic)
  --oov map|error               token ids beyond the Embedding's input_dim: map them to the
                                out-of-vocabulary id with a warning (default), or stop
  --devices SPEC                cpu | cpu:2 | cpu:2x512MB | gpu:0 | gpu:0,gpu:1 | gpu:0:2x1024MB | gpu:0:growth
                                (default: every GPU, else cpu)
  --epochs N                    (default 10)
  --batch-size N                global batch (default 32)
  --seed N                      (default 0)
  --optimizer NAME              nadam | adam | sgd | rmsprop (default nadam)
  --learning-rate X             (default: the optimizer's Keras default)
  --keras-semantics NAME        tf2 | keras3 | dense: which Keras the optimizer follows where they
                                differ (the Embedding's sparse update, Nadam's schedule): tf.keras 2
                                as in the tutorial (default), Keras 3 on TensorFlow, or Keras 3 on
                                JAX/PyTorch (dense gradients)
  --all-reduce NAME             auto | reduce | ring (default auto)
  --early-stopping PATIENCE     stop when val_loss has not improved for PATIENCE epochs and
                                restore the best epoch's weights
  --steps-per-epoch N           train on at most N batches per epoch (quick runs)
  --json                        print every event as one JSON object per line instead
)";

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr, "mirrorlab-cli: error: %s\n", message.c_str());
    std::fprintf(stderr, "Run 'mirrorlab-cli --help' for the commands and options.\n");
    std::exit(2);
}

struct Options {
    std::map<std::string, std::string> values;
    bool json = false;
};

Options parse_options(int argc, char** argv, int first, const std::vector<std::string>& allowed) {
    Options options;
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--json") {
            options.json = true;
            continue;
        }
        std::string value;
        if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        } else if (arg.rfind("--", 0) == 0) {
            if (i + 1 >= argc) usage_error("option " + arg + " needs a value");
            value = argv[++i];
        } else {
            usage_error("unexpected argument '" + arg + "'");
        }
        bool known = false;
        for (const auto& name : allowed) known = known || name == arg;
        if (!known) usage_error("unknown option " + arg);
        options.values[arg] = value;
    }
    return options;
}

// Bounded on both sides, so a value never wraps when it narrows to the engine's int fields.
long long integer_option(const Options& options, const std::string& name, long long fallback, long long min_value,
                         long long max_value) {
    auto it = options.values.find(name);
    if (it == options.values.end()) return fallback;
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end != '\0' || errno != 0 || value < min_value || value > max_value) {
        usage_error(name + " must be an integer from " + std::to_string(min_value) + " to " + std::to_string(max_value) +
                    ", got '" + it->second + "'");
    }
    return value;
}

Model load_model(const Options& options) {
    auto it = options.values.find("--model");
    return it == options.values.end() ? Model::reference() : Model::from_json_file(it->second);
}

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

int command_summary(const Options& options) {
    std::fputs(load_model(options).summary().c_str(), stdout);
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

int command_data(const Options& options) {
    auto data_it = options.values.find("--data");
    const std::string spec = data_it == options.values.end() ? "default" : data_it->second;
    const auto length = static_cast<std::int32_t>(integer_option(options, "--sequence-length", 300, 1, 1 << 24));
    const DatasetSplit split = load_dataset(spec);
    std::printf("Data: %s%s\n", split.train.name.c_str(), split.train.synthetic ? " (synthetic)" : "");
    if (spec == "default") std::printf("Source: %s (the default)\n", resolve_default_data_spec().c_str());
    const DatasetStatistics train = compute_statistics(split.train, length);
    std::printf("\nTraining split\n%s", format_statistics(train).c_str());
    const DatasetStatistics validation = compute_statistics(split.validation, length);
    std::printf("\nValidation split: %lld samples, longest %d tokens, %.1f %% longer than %d\n",
                static_cast<long long>(validation.samples), validation.max_length, 100.0 * validation.truncated_share,
                length);
    for (const auto& warning : split.warnings) std::printf("WARNING: %s\n", warning.c_str());
    if (const std::string lint = lint_truncation(train); !lint.empty()) std::printf("WARNING: %s\n", lint.c_str());
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
    return 0;
}

int command_train(const Options& options) {
    const Model model = load_model(options);
    auto registry = std::make_shared<DeviceRegistry>();
    load_gpu_plugin(*registry);
    auto devices_it = options.values.find("--devices");
    const DeviceConfig devices =
        devices_it == options.values.end() ? DeviceConfig::default_for(*registry) : DeviceConfig::parse(devices_it->second);
    devices.validate(*registry);

    TrainConfig config;
    config.epochs = static_cast<int>(integer_option(options, "--epochs", 10, 1, 1'000'000));
    config.batch_size = static_cast<std::int32_t>(integer_option(options, "--batch-size", 32, 1, 1 << 24));
    config.seed = static_cast<std::uint64_t>(integer_option(options, "--seed", 0, 0, std::numeric_limits<long long>::max()));
    config.max_steps_per_epoch = integer_option(options, "--steps-per-epoch", 0, 1, std::numeric_limits<long long>::max());
    if (auto it = options.values.find("--optimizer"); it != options.values.end()) {
        config.optimizer = OptimizerConfig::defaults(optimizer_kind_from_name(it->second));
    }
    if (auto it = options.values.find("--learning-rate"); it != options.values.end()) {
        char* end = nullptr;
        config.optimizer.learning_rate = std::strtod(it->second.c_str(), &end);
        if (end == it->second.c_str() || *end != '\0') usage_error("--learning-rate must be a number, got '" + it->second + "'");
    }
    if (auto it = options.values.find("--keras-semantics"); it != options.values.end()) {
        config.optimizer.follow_keras(embedding_update_from_name(it->second));
    }
    config.optimizer.validate();
    if (auto it = options.values.find("--all-reduce"); it != options.values.end()) {
        config.all_reduce = all_reduce_from_name(it->second);
        if (config.all_reduce == AllReduceAlgorithm::Invalid) usage_error("--all-reduce must be auto, reduce or ring");
    }
    if (options.values.count("--early-stopping") > 0) {
        config.early_stopping.enabled = true;
        config.early_stopping.patience = static_cast<int>(integer_option(options, "--early-stopping", 0, 0, 1'000'000));
        config.early_stopping.restore_best_weights = true;
    }

    auto data_it = options.values.find("--data");
    const std::string data_spec = data_it == options.values.end() ? "default" : data_it->second;
    OovPolicy oov = OovPolicy::MapToOov;
    if (auto it = options.values.find("--oov"); it != options.values.end()) {
        if (it->second == "error") {
            oov = OovPolicy::Error;
        } else if (it->second != "map") {
            usage_error("--oov must be map or error");
        }
    }
    const DatasetSplit split = load_dataset(data_spec);
    TrainData data = make_train_data(split, model.input_length(), model.vocabulary_size(), oov);

    const bool json = options.json;
    if (!json) {
        std::printf("Data: %s - %zu training and %zu validation samples, %d classes%s\n", split.train.name.c_str(),
                    split.train.size(), split.validation.size(), split.train.num_classes,
                    split.train.synthetic ? " (synthetic)" : "");
        std::fflush(stdout);
    }

    Trainer trainer(model, devices, config, std::move(data), registry);
    const long long slow_stop_ms = test_slow_stop_ms();
    trainer.set_event_sink([json, slow_stop_ms, held = false](const Event& event) mutable {
        if (slow_stop_ms > 0 && !held && g_stop_signal.load() != 0) {
            held = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(slow_stop_ms));
        }
        if (json) {
            std::printf("%s\n", event_to_json(event).c_str());
            std::fflush(stdout);
            return;
        }
        if (const auto* log = std::get_if<LogEvent>(&event)) {
            std::fprintf(stderr, "%s\n", log_line(*log).c_str());
        } else if (const auto* begin = std::get_if<EpochBeginEvent>(&event)) {
            std::printf("Epoch %d/%d\n", begin->epoch, begin->epochs);
        } else if (const auto* end = std::get_if<EpochEndEvent>(&event)) {
            std::printf("%s\n", keras_progress_line(*end).c_str());
        }
        std::fflush(stdout);
    });
    install_stop_handlers();
    trainer.start();
    int stop_signal = 0;
    while (trainer.running()) {
        if (stop_signal == 0 && (stop_signal = g_stop_signal.load()) != 0) {
            std::fprintf(stderr, "mirrorlab-cli: %s: stopping after the current step; %s\n", signal_label(stop_signal),
                         stop_signal == SIGINT ? "press Ctrl-C again to quit at once" : "a second SIGTERM quits at once");
            std::fflush(stderr);
            trainer.request_stop();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    trainer.wait();
    const FitResult result = trainer.result();
    if (result.failed) {
        std::fprintf(stderr, "mirrorlab-cli: error: %s\n", result.failed->reason.c_str());
        return 1;
    }
    if (!result.finished) {
        std::fprintf(stderr, "mirrorlab-cli: error: training ended without a result\n");
        return 1;
    }
    // Stopped by a signal: the exit status says so (128 + the signal, as a shell reports it), so a
    // script can tell a stopped run from a finished one. A signal that came after the last epoch
    // was done stopped nothing: that run finished.
    if (stop_signal != 0 && result.finished->reason == FinishReason::StoppedByUser) {
        const int exit_code = 128 + stop_signal;
        const std::string text = std::string("stopped by ") + signal_label(stop_signal) + " " + describe_stop(*result.finished);
        if (json) {
            json::Value event = json::Value::object();
            event.set("type", "interrupted");
            event.set("signal", signal_name(stop_signal));
            event.set("exit_code", exit_code);
            event.set("epochs_completed", result.finished->epochs_completed);
            put_stop_point(event, result.finished->stop);
            event.set("text", text);
            std::printf("%s\n", json::dump(event).c_str());
            std::fflush(stdout);
        }
        std::fprintf(stderr, "mirrorlab-cli: %s\n", text.c_str());
        return exit_code;
    }
    if (!json) std::fprintf(stderr, "INFO: %s\n", result.finished->text.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        std::printf("mirrorlab-cli %s\n", MIRRORLAB_VERSION);
        return 0;
    }
    const std::string command = argv[1];
    try {
        if (command == "devices") {
            parse_options(argc, argv, 2, {});
            return command_devices();
        }
        if (command == "data") return command_data(parse_options(argc, argv, 2, {"--data", "--sequence-length"}));
        if (command == "bench") return run_bench_command(argc, argv, 2);
        if (command == "summary") return command_summary(parse_options(argc, argv, 2, {"--model"}));
        if (command == "layers") {
            parse_options(argc, argv, 2, {});
            return command_layers();
        }
        if (command == "train") {
            return command_train(parse_options(argc, argv, 2,
                                               {"--model", "--data", "--devices", "--epochs", "--batch-size", "--seed",
                                                "--optimizer", "--learning-rate", "--keras-semantics", "--all-reduce",
                                                "--early-stopping", "--steps-per-epoch", "--oov"}));
        }
        usage_error("unknown command '" + command + "'");
    } catch (const Error& error) {
        std::fprintf(stderr, "mirrorlab-cli: error: %s\n", error.what());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mirrorlab-cli: error: unexpected failure: %s\n", error.what());
        return 1;
    }
}
