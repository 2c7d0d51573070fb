// mirrorlab-cli: the headless front end. Its commands, options and output are a contract that
// scripts and the docs rely on; see README.md and packaging/linux/mirrorlab-cli.1. Each command
// lives in its own function (app/cli_commands.h); the command line is CLI11's (app/cli_args.h).
#include "app/cli_commands.h"
#include "app/cli_store.h"

int main(int argc, char** argv) {
    using namespace mirrorlab::cli;
    CLI::App app;
    configure_program(app);
    const std::vector<Command> commands = {add_devices_command(app), add_summary_command(app), add_layers_command(app),
                                           add_train_command(app),   add_bench_command(app),   add_data_command(app),
                                           add_runs_command(app),    add_evaluate_command(app), add_predict_command(app),
                                           add_export_command(app),  add_import_command(app),   add_whatif_command(app)};
    return run(app, commands, argc, argv);
}
