#include "app/cli_args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/data/source.h"
#include "core/device/device.h"
#include "core/util/error.h"

namespace mirrorlab::cli {

namespace {

[[noreturn]] void refuse_extras(const CLI::App& command) {
    const std::string first = command.remaining().front();
    if (first.size() > 1 && first.front() == '-') throw UsageError("unknown option " + first.substr(0, first.find('=')));
    // A command's stray arguments reach the program's level too (fallthrough): only without a
    // command is the first one a command's name.
    if (command.get_parent() == nullptr && command.get_subcommands().empty()) {
        throw UsageError("unknown command '" + first + "'");
    }
    throw UsageError("unexpected argument '" + first + "'");
}

// "--json=abc": CLI11 says "Could not convert: --json = abc".
std::string flag_given_a_value(const CLI::App& app, int argc, char** argv) {
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const CLI::App& command = chosen.empty() ? app : *chosen.front();
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::size_t eq = arg.find('=');
        if (arg.rfind("--", 0) != 0 || eq == std::string::npos) continue;
        const CLI::Option* option = command.get_option_no_throw(arg.substr(0, eq));
        if (option != nullptr && option->get_expected_max() == 0) {
            return arg.substr(0, eq) + " takes no value, got '" + arg.substr(eq + 1) + "'";
        }
    }
    return {};
}

// CLI11's own sentence, or a clearer one where we can say more.
std::string explain(const CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
    // CLI11 takes whatever follows an option as its value, so a value can only be missing when the
    // option is the last argument ("--epochs" or "--epochs=").
    const std::string last = argv[argc - 1];
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr && last.rfind("--", 0) == 0 &&
        (last.find('=') == std::string::npos || last.back() == '=')) {
        return "option " + last.substr(0, last.find('=')) + " needs a value";
    }
    if (const std::string flag = flag_given_a_value(app, argc, argv); !flag.empty()) return flag;
    return error.what();
}

int usage_error(const CLI::App& app, const std::string& message) {
    std::fprintf(stderr, "mirrorlab-cli: error: %s\n", message.c_str());
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    if (chosen.empty() || chosen.front()->get_group().empty()) {
        std::fprintf(stderr, "Run 'mirrorlab-cli --help' for the commands.\n");
    } else {
        std::fprintf(stderr, "Run 'mirrorlab-cli %s --help' for its options.\n", chosen.front()->get_name().c_str());
    }
    return 2;
}

// `--store ''` or `--config ""` (an unset shell variable) would otherwise read as the option not
// given and train with the default, without a word. Free text (a run's name, a filter) may be empty.
void refuse_empty_values(const CLI::App& command) {
    for (const CLI::Option* option : command.get_options()) {
        // Positionals are the commands' own to check: `runs note ID ""` clears a note.
        if (option->count() == 0 || option->get_expected_max() == 0 || option->get_type_name() == "TEXT" || !option->nonpositional()) {
            continue;
        }
        for (const std::string& value : option->results()) {
            if (value.empty()) throw UsageError("option " + option->get_name() + " needs a value, got an empty one");
        }
    }
}

// "--config=" with nothing after the '=': CLI11 takes the next argument as the value (`--config=
// --no-store` read the file "--no-store"). Written as "--config" "" instead, the value is the empty
// one that was typed, refused by refuse_empty_values() or kept as an empty text. A flag's "--json="
// is left as it is, for explain().
std::vector<std::string> split_empty_assignments(const CLI::App& app, int argc, char** argv) {
    const auto is_flag = [&app](const std::string& name) {
        const CLI::Option* option = app.get_option_no_throw(name);
        for (const CLI::App* command : app.get_subcommands({})) {
            if (option == nullptr) option = command->get_option_no_throw(name);
        }
        return option != nullptr && option->get_expected_max() == 0;
    };
    std::vector<std::string> arguments(argv, argv + argc);
    for (std::size_t i = 1; i < arguments.size(); ++i) {
        const std::string& arg = arguments[i];
        if (arg == "--") break;
        if (arg.size() <= 3 || arg.rfind("--", 0) != 0 || arg.find('=') != arg.size() - 1) continue;
        const std::string name = arg.substr(0, arg.size() - 1);
        if (is_flag(name)) continue;
        arguments[i] = name;
        arguments.insert(arguments.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::string());
        ++i;
    }
    return arguments;
}

// "help" and "help COMMAND": the spelling some people try first.
int print_help(const CLI::App& app, const std::string& topic) {
    if (topic.empty()) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    }
    for (const CLI::App* command : app.get_subcommands({})) {
        if (command->get_name() == topic && !command->get_group().empty()) {
            std::fputs(command->help(app.get_name()).c_str(), stdout);
            return 0;
        }
    }
    throw UsageError("unknown command '" + topic + "'");
}

int parse_and_run(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
    std::string help_topic;
    CLI::App* help = app.add_subcommand("help", "")->group("");  // hidden
    help->add_option("command", help_topic);
    std::vector<std::string> arguments = split_empty_assignments(app, argc, argv);
    std::vector<char*> pointers;
    for (std::string& argument : arguments) pointers.push_back(argument.data());
    app.parse(static_cast<int>(pointers.size()), pointers.data());
    if (!app.remaining().empty()) refuse_extras(app);
    if (help->parsed()) return print_help(app, help_topic);
    for (const Command& command : commands) {
        if (!command.app->parsed()) continue;
        if (!command.app->remaining().empty()) refuse_extras(*command.app);
        refuse_empty_values(*command.app);
        return command.run();
    }
    throw UsageError("no command given");  // options only, e.g. "mirrorlab-cli -- x"
}

}  // namespace

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description) {
    CLI::App* command = parent.add_subcommand(name, description);
    command->group("Commands");
    command->allow_extras();  // refused by refuse_extras(), which names the option
    command->fallthrough();   // the program's own options (--no-gpu) after the command's name too
    command->footer("");
    return command;
}

CLI::Option* add_integer(CLI::App& command, const std::string& name, long long min_value, long long max_value,
                         std::function<void(long long)> store, const std::string& description) {
    auto check = [=, store = std::move(store)](const std::string& text) {
        char* end = nullptr;
        errno = 0;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || errno != 0 || value < min_value || value > max_value) {
            throw UsageError(name + " must be an integer from " + std::to_string(min_value) + " to " +
                             std::to_string(max_value) + ", got '" + text + "'");
        }
        store(value);
    };
    return command.add_option(name, description)->type_name("N")->each(check);
}

void check_value(const std::string& option, const std::function<void()>& check) {
    try {
        check();
    } catch (const Error& error) {
        std::string text = error.what();
        // "[optimizer] unknown ...": the option's name says where instead.
        if (!text.empty() && text.front() == '[' && text.find("] ") != std::string::npos) text.erase(0, text.find("] ") + 2);
        throw UsageError(option + ": " + text);
    }
}

CLI::Option* add_checked_option(CLI::App& command, const std::string& name, std::string& target,
                                std::function<void(const std::string&)> check, const std::string& description) {
    return command.add_option(name, description)->each([name, &target, check = std::move(check)](const std::string& text) {
        check_value(name, [&] { check(text); });
        target = text;
    });
}

CLI::Option* add_device_spec(CLI::App& command, std::string& target, const std::string& description) {
    return add_checked_option(
               command, "--devices", target, [](const std::string& text) { (void)DeviceConfig::parse(text); }, description)
        ->type_name("SPEC");
}

CLI::Option* add_data_spec(CLI::App& command, std::string& target, const std::string& description) {
    return add_checked_option(command, "--data", target, [](const std::string& text) { check_data_spec(text); }, description)
        ->type_name("SPEC");
}

void configure_program(CLI::App& app) {
    app.name("mirrorlab-cli");
    app.description("Train, inspect and time mirrored (data-parallel) models without a window.");
    app.set_help_flag("-h,--help", "print this help and exit");
    app.set_version_flag("--version", std::string("mirrorlab-cli ") + MIRRORLAB_VERSION, "print the version and exit");
    // Read by core's plugin loader (gpus_skipped()), so every command sees it the same way.
    app.add_flag_callback(
        "--no-gpu", [] { setenv("MIRRORLAB_NO_GPU", "1", 1); },
        "use the CPUs only: do not look for GPUs or load CUDA (as MIRRORLAB_NO_GPU=1)");
    app.allow_extras();  // an unknown command is refused with our message
    app.require_subcommand(0, 1);
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // as before: the last one wins
    app.footer("Run 'mirrorlab-cli COMMAND --help' for a command's options.");
    const auto formatter = app.get_formatter();
    formatter->label("Usage", "usage");
    formatter->label("SUBCOMMAND", "COMMAND");
    formatter->column_width(32);
}

namespace {

// A full disk or /dev/full under `> file`: printf's failures only show as the stream's error flag,
// and the command would exit 0 with a truncated or empty file. Checked once, at the end.
int with_output_written(int status) {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (flushed && !std::ferror(stdout)) return status;
    const int error = errno;
    std::fprintf(stderr, "mirrorlab-cli: error: cannot write the output to standard output%s%s%s\n", error != 0 ? ": " : "",
                 error != 0 ? std::strerror(error) : "", error == ENOSPC ? " (the disk is full)" : "");
    return status == 0 ? 1 : status;
}

int run_command(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv);

}  // namespace

int run(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
    return with_output_written(run_command(app, commands, argc, argv));
}

namespace {

int run_command(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
    if (argc < 2) {
        std::fputs(app.help().c_str(), stderr);
        return 2;
    }
    try {
        return parse_and_run(app, commands, argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);  // the chosen command's help, if one was named
        return 0;
    } catch (const CLI::CallForVersion& version) {
        std::printf("%s\n", version.what());
        return 0;
    } catch (const CLI::ParseError& error) {
        return usage_error(app, explain(app, error, argc, argv));
    } catch (const UsageError& error) {
        return usage_error(app, error.what());
    } catch (const Error& error) {
        std::fprintf(stderr, "mirrorlab-cli: error: %s\n", error.what());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "mirrorlab-cli: error: unexpected failure: %s\n", error.what());
        return 1;
    }
}

}  // namespace

}  // namespace mirrorlab::cli
