#pragma once
// mirrorlab-cli's commands. Each registers its options on a command of `app` (cli::add_command) and
// returns what runs when the command line names it; main() lists them.
#include "app/cli_args.h"

namespace mirrorlab {
class Model;
}

namespace mirrorlab::cli {

Command add_devices_command(CLI::App& app);  // the physical devices and why no GPU is used
Command add_summary_command(CLI::App& app);  // the model's Keras-style summary
Command add_layers_command(CLI::App& app);   // the layer types a model file may use
Command add_data_command(CLI::App& app);     // a data set's statistics and a few decoded samples
Command add_train_command(CLI::App& app);    // cli_train.cpp: train, print Keras progress or JSON events
Command add_bench_command(CLI::App& app);    // cli_bench.cpp: time the reference workload
Command add_whatif_command(CLI::App& app);   // cli_whatif.cpp: predict scaling from bench results

// A --model option on `command`; model() is the file it names, or the tutorial's model without it.
class ModelOption {
public:
    explicit ModelOption(CLI::App& command);
    Model model() const;
    bool given() const { return option_->count() > 0; }

private:
    CLI::Option* option_ = nullptr;
};

}  // namespace mirrorlab::cli
