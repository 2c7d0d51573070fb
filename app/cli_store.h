#pragma once
// The CLI's commands on kept runs: `runs` (list, show, rename, note, delete, export), `evaluate`,
// `predict`, and what `train` needs to record and resume a run. Independent of how the arguments
// are parsed: each command takes a plain struct.
#include <cstdint>
#include <optional>
#include <string>

#include "app/cli_args.h"
#include "core/store/checkpoint.h"
#include "core/store/run_store.h"
#include "core/train/inference.h"

namespace mirrorlab::cli {

// The store the CLI uses: --store DIR, else RunStore::default_folder().
std::string store_folder(const std::string& explicit_folder);

struct RunsCommand {
    std::string action = "list";  // list, show, rename, note, delete, export
    std::int64_t id = 0;
    std::string value;   // the new name or note
    std::string tensorboard;           // export: the TensorBoard log folder
    bool tensorboard_batches = false;  // export: the recorded steps as batch_* scalars too
    std::string filter;  // list: text to match
    std::string status;  // list: only runs with this status
    std::string store;
    bool json = false;
};
int command_runs(const RunsCommand& command);

// A checkpoint named by a run id ("12") or a file path, and the stored run it belongs to.
struct CheckpointSource {
    Checkpoint checkpoint;
    std::string path;
    std::int64_t run_id = 0;  // 0: a file outside the store
};
// "run 3, epoch 4 (PATH)": what a command read, with whose weights they are.
std::string describe_source(const CheckpointSource& source);
// `which`: "last" or "best". Throws StoreError / CheckpointError / DataError with the reason.
CheckpointSource find_checkpoint(RunStore& store, const std::string& run_or_file, const std::string& which = "last");
// The same with the store's folder (empty: the default one), opened only when needed: for a run id,
// and for a file of a stored run where the store exists and opens (else the file stands alone).
CheckpointSource find_checkpoint(const std::string& store_folder_path, const std::string& run_or_file,
                                 const std::string& which = "last");

struct EvaluateCommand {
    std::string run_or_file;
    std::string which = "last";
    std::string data_spec;  // empty: the data the run was trained on
    std::string devices;    // empty: cpu
    std::int32_t batch_size = 32;
    bool report = false;  // per-class table and the most confused pairs
    std::string store;
    bool json = false;
};
int command_evaluate(const EvaluateCommand& command);

struct PredictCommand {
    std::string run_or_file;
    std::string which = "last";
    std::string text;
    std::string file;  // a text file: its whole text is one newswire
    int top = 5;
    std::string store;
    bool json = false;
};
int command_predict(const PredictCommand& command);

// Options that the commands on runs share: --store DIR; --run RUN|FILE and --checkpoint last|best.
void add_store_option(CLI::App& command, std::string& store);
void add_checkpoint_options(CLI::App& command, std::string& run_or_file, std::string& which);
// Keras' model.evaluate(verbose=2) line: "71/71 - 0s 3ms/step - loss: ... - sparse_...".
void print_evaluate_line(const Predictions& predictions);

Command add_runs_command(CLI::App& app);      // runs [list|show ID|rename ID NAME|note ID TEXT|delete ID|export ID]
Command add_evaluate_command(CLI::App& app);  // Keras' evaluate line for a kept run
Command add_predict_command(CLI::App& app);   // the top topics of a text
Command add_export_command(CLI::App& app);    // cli_export.cpp: a run as a Keras .keras / .weights.h5
Command add_import_command(CLI::App& app);    // cli_export.cpp: a Keras model's summary and evaluation

}  // namespace mirrorlab::cli
