#pragma once
// What every mirrorlab-cli command shares: CLI11 set up the same way for each, integers checked the
// same way, and usage mistakes that name the option and how to fix it (exit status 2).
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mirrorlab::cli {

// A mistake in the command line. Printed as "mirrorlab-cli: error: <what>" followed by where the
// help is; the program exits with status 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One command: its options are registered on `app`; `run` does the work once the command line
// chose it and returns the exit status.
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

// A command of `parent` with the conventions of every command: arguments it does not know are kept
// for check_arguments() (so the message is ours), and the last of a repeated option wins.
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description);

// An integer option, read in base 10 and bounded on both sides so that nothing wraps when it
// narrows to the engine's int fields: "--epochs must be an integer from 1 to 1000000, got 'abc'".
// `store` receives the value while the command line is parsed.
CLI::Option* add_integer(CLI::App& command, const std::string& name, long long min_value, long long max_value,
                         std::function<void(long long)> store, const std::string& description);

template <typename T>
CLI::Option* add_integer(CLI::App& command, const std::string& name, T& target, long long min_value,
                         long long max_value, const std::string& description) {
    return add_integer(
        command, name, min_value, max_value, [&target](long long value) { target = static_cast<T>(value); },
        description);
}

// Runs `check` (one of core's parsers) on an option's value: what the engine refuses there is a
// usage mistake naming the option, "--optimizer: unknown optimizer 'x'; accepted names ...".
void check_value(const std::string& option, const std::function<void()>& check);

// An option whose text is kept as given once `check` (one of core's parsers, throwing its Error)
// has read it; what `check` refuses is a usage mistake naming the option (check_value).
CLI::Option* add_checked_option(CLI::App& command, const std::string& name, std::string& target,
                                std::function<void(const std::string&)> check, const std::string& description);

// A device spec option (--devices): read by DeviceConfig::parse while the command line is parsed,
// so a spec that cannot be read is a usage mistake (2); one this machine cannot run is an engine
// error later (1): "gpu:0" without a GPU, "cpu:2x8MB" below the smallest limit.
CLI::Option* add_device_spec(CLI::App& command, std::string& target, const std::string& description);

// A data spec option (--data): checked by check_data_spec while the command line is parsed, so a
// spec that cannot be read ("bogus:x", "synthetic:abc") is a usage mistake (2); a file that is not
// there fails later (1).
CLI::Option* add_data_spec(CLI::App& command, std::string& target, const std::string& description);

// The program's own settings (help and version flags, how help reads); call before adding commands,
// which inherit them.
void configure_program(CLI::App& app);

// Parses the command line, runs the command it names and returns the exit status: 0 after --help
// and --version, 2 for a usage mistake, else the command's own (1 for an engine error).
int run(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv);

}  // namespace mirrorlab::cli
