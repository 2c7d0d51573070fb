#pragma once
// Running mirrorlab-cli from a test as a script would: its exit code, stdout and stderr, a cap on
// its memory, a live run to send signals to, and its --json event lines parsed. The including
// test defines MIRRORLAB_CLI_PATH (tests/CMakeLists.txt).
#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/util/error.h"
#include "core/util/json.h"

#ifndef MIRRORLAB_CLI_PATH
#error "MIRRORLAB_CLI_PATH must name the mirrorlab-cli binary"
#endif

namespace cli_test {

inline constexpr int kTimeoutMs = 120000;
inline const QString kErrorPrefix = QStringLiteral("mirrorlab-cli: error: ");

struct CliResult {
    bool finished = false;
    int exit_code = -1;
    QString out;
    QString err;
    QStringList out_lines;
    QStringList err_lines;
};

inline QStringList lines(const QString& text) {
    QStringList all = text.split(QLatin1Char('\n'));
    while (!all.isEmpty() && all.back().isEmpty()) all.removeLast();
    return all;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// ASan and TSan reserve terabytes of shadow address space before main(): under an RLIMIT_AS cap the
// child would die before it starts. Their builds (tests/sanitizers) run without the cap.
inline constexpr bool kCanCapAddressSpace = false;
#else
inline constexpr bool kCanCapAddressSpace = true;
#endif

// `address_space_bytes` > 0 caps the child's memory (RLIMIT_AS), so that a regression that reads
// without bound fails this test instead of exhausting the machine. `working_directory`: where the
// command runs (empty: the test's own).
inline CliResult run_cli(const QStringList& arguments, std::uint64_t address_space_bytes = 0, const QString& working_directory = {}) {
    QProcess process;
    process.setProgram(QStringLiteral(MIRRORLAB_CLI_PATH));
    process.setArguments(arguments);
    if (!working_directory.isEmpty()) process.setWorkingDirectory(working_directory);
    if (kCanCapAddressSpace && address_space_bytes > 0) {
        process.setChildProcessModifier([address_space_bytes] {
            const rlimit limit{address_space_bytes, address_space_bytes};
            ::setrlimit(RLIMIT_AS, &limit);
        });
    }
    process.start();
    CliResult result;
    if (!process.waitForStarted(kTimeoutMs)) return result;
    result.finished = process.waitForFinished(kTimeoutMs);
    if (!result.finished) {
        process.kill();
        process.waitForFinished(5000);
    }
    result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
    result.out = QString::fromUtf8(process.readAllStandardOutput());
    result.err = QString::fromUtf8(process.readAllStandardError());
    result.out_lines = lines(result.out);
    result.err_lines = lines(result.err);
    return result;
}

inline QString describe(const CliResult& r) {
    return QStringLiteral("exit %1\n--- stdout ---\n%2\n--- stderr ---\n%3").arg(r.exit_code).arg(r.out.left(4000), r.err.left(4000));
}

inline int count_error_lines(const CliResult& r) {
    int n = 0;
    for (const QString& line : r.err_lines) n += line.startsWith(kErrorPrefix) ? 1 : 0;
    return n;
}

// A training run the test talks to while it runs: waits for output, sends signals, collects
// everything it printed.
class LiveCli {
public:
    explicit LiveCli(const QStringList& arguments, const QStringList& extra_environment = {}) {
        process_.setProgram(QStringLiteral(MIRRORLAB_CLI_PATH));
        process_.setArguments(arguments);
        QStringList environment = QProcess::systemEnvironment();
        environment += extra_environment;
        process_.setEnvironment(environment);
        process_.start();
        started_ = process_.waitForStarted(kTimeoutMs);
    }
    ~LiveCli() {
        if (process_.state() != QProcess::NotRunning) {
            process_.kill();
            process_.waitForFinished(5000);
        }
    }
    bool started() const { return started_; }

    // Until `condition` holds on what was printed so far; false when the program ended or the time ran out.
    bool wait_until(const std::function<bool()>& condition, int timeout_ms = kTimeoutMs) {
        QElapsedTimer timer;
        timer.start();
        while (true) {
            collect();
            if (condition()) return true;
            if (process_.state() == QProcess::NotRunning || timer.elapsed() > timeout_ms) return false;
            process_.waitForReadyRead(20);
        }
    }
    bool send(int signal_number) { return ::kill(static_cast<pid_t>(process_.processId()), signal_number) == 0; }

    CliResult finish(int timeout_ms = kTimeoutMs) {
        CliResult result;
        result.finished = process_.waitForFinished(timeout_ms);
        if (!result.finished) {
            process_.kill();
            process_.waitForFinished(5000);
        }
        collect();
        result.exit_code = process_.exitStatus() == QProcess::NormalExit ? process_.exitCode() : -1;
        result.out = out_;
        result.err = err_;
        result.out_lines = lines(out_);
        result.err_lines = lines(err_);
        return result;
    }

    const QString& out() const { return out_; }
    const QString& err() const { return err_; }

private:
    void collect() {
        out_ += QString::fromUtf8(process_.readAllStandardOutput());
        err_ += QString::fromUtf8(process_.readAllStandardError());
    }

    QProcess process_;
    bool started_ = false;
    QString out_;
    QString err_;
};

// The --json lines of one type, parsed.
inline std::vector<mirrorlab::json::Value> json_events(const QStringList& out_lines, const char* type) {
    std::vector<mirrorlab::json::Value> events;
    for (const QString& line : out_lines) {
        try {
            mirrorlab::json::Value value = mirrorlab::json::parse(line.toStdString(), "stdout");
            const mirrorlab::json::Value* name = value.find("type");
            if (name != nullptr && name->is_string() && name->as_string() == type) events.push_back(std::move(value));
        } catch (const mirrorlab::Error&) {
        }
    }
    return events;
}

inline std::int64_t int_field(const mirrorlab::json::Value& value, const char* key) {
    const mirrorlab::json::Value* field = value.find(key);
    return field != nullptr && field->is_number() ? field->as_int64() : -1;
}

inline QString string_field(const mirrorlab::json::Value& value, const char* key) {
    const mirrorlab::json::Value* field = value.find(key);
    return field != nullptr && field->is_string() ? QString::fromStdString(field->as_string()) : QString();
}

}  // namespace cli_test

using namespace cli_test;
