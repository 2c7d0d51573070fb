// mirrorlab: the desktop application. `--screenshot FILE [--epochs N] [--size WxH]` trains on the
// default data, saves a picture of the window when the run ends and exits (documentation and
// checks); the window opens as on a first launch on this screen, or at WxH. `--show-panel DOCKS`
// brings docks forward for the picture (e.g. tryItDock), `--try-text TEXT` asks the Try it panel.
// `--language zh_CN|en` chooses the interface language (default: the system locale's).
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QSettings>
#include <QTimer>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include "ui/common/image_file.h"
#include "ui/common/translation.h"
#include "ui/data/data_panel.h"
#include "ui/inspect/class_report_view.h"
#include "ui/inspect/try_it_panel.h"
#include "ui/main_window.h"

namespace {

// No display could show the window: packaging/mirrorlab.sh trains without one then.
constexpr int kNoDisplayExitStatus = 3;

// The value of `--option VALUE` or `--option=VALUE` (the last one given), read ahead of Qt's parser:
// the language before the parser's help texts exist, the window size before the platform starts.
std::string argument_value(int argc, char** argv, const std::string& option) {
    std::string value;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == option && i + 1 < argc) value = argv[i + 1];
        if (arg.rfind(option + "=", 0) == 0) value = arg.substr(option.size() + 1);
    }
    return value;
}

QString language_argument(int argc, char** argv) { return QString::fromLocal8Bit(argument_value(argc, argv, "--language").c_str()); }

bool asks_for_no_window(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const std::string name = arg.substr(0, arg.find('='));
        if (name == "--screenshot" || name == "--help" || name == "--help-all" || name == "-h" || name == "-?" ||
            name == "--version" || name == "-v") {
            return true;
        }
    }
    return false;
}

// "1366x768": a window size; nothing when the text is not one.
std::optional<std::pair<int, int>> parse_window_size(const std::string& text) {
    int width = 0, height = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%dx%d%c", &width, &height, &tail) != 2 || width <= 0 || height <= 0) return std::nullopt;
    return std::pair{width, height};
}

// Where the window goes when no display can show it (the screenshot mode, the help): Qt's
// offscreen platform with one screen of the --size asked for (default 1920x1080), since its own
// screen is 800x800 and a window there is cut to it. The screen list is a file (the plugin's
// configfile= option), removed by release() once QApplication has read it.
class OffscreenScreen {
public:
    explicit OffscreenScreen(const std::string& size_text) {
        const auto [width, height] = parse_window_size(size_text).value_or(std::pair{1920, 1080});
        const char* tmp = std::getenv("TMPDIR");
        std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mirrorlab-screen-XXXXXX";
        const int fd = ::mkstemp(path.data());
        if (fd < 0) return;  // Qt's own 800x800 screen then
        const std::string json = "{\"windowFrameMargins\":false,\"screens\":[{\"name\":\"offscreen\",\"x\":0,\"y\":0,\"width\":" +
                                 std::to_string(width) + ",\"height\":" + std::to_string(height) + ",\"logicalDpi\":96,\"dpr\":1}]}";
        const bool written = ::write(fd, json.data(), json.size()) == static_cast<ssize_t>(json.size());
        ::close(fd);
        if (written) path_ = path;
        else ::unlink(path.c_str());
    }
    ~OffscreenScreen() { release(); }
    OffscreenScreen(const OffscreenScreen&) = delete;
    OffscreenScreen& operator=(const OffscreenScreen&) = delete;
    // For QT_QPA_PLATFORM.
    std::string platform() const { return path_.empty() ? std::string("offscreen") : "offscreen:configfile=" + path_; }
    void release() {
        if (!path_.empty()) ::unlink(path_.c_str());
        path_.clear();
    }

private:
    std::string path_;
};

// What Qt would pick by itself in this session: the session type's platform first.
std::string session_platforms() {
    const bool x11 = std::getenv("DISPLAY") != nullptr, wayland = std::getenv("WAYLAND_DISPLAY") != nullptr;
    const char* session = std::getenv("XDG_SESSION_TYPE");
    if (x11 && wayland) return session != nullptr && std::string(session) == "wayland" ? "wayland;xcb" : "xcb;wayland";
    return wayland ? "wayland" : "xcb";
}

void explain(const char* text, const QString& argument, int argc, char** argv) {
    std::optional<QCoreApplication> core;  // no platform needed for the translation
    if (QCoreApplication::instance() == nullptr) core.emplace(argc, argv);
    mirrorlab::ui::installTranslation(language_argument(argc, argv));
    QString message = QCoreApplication::translate("main", text);
    if (!argument.isEmpty()) message = message.arg(argument);
    std::fputs(message.toLocal8Bit().constData(), stderr);
    mirrorlab::ui::installTranslation(QStringLiteral("en"));  // its translators go before `core` does
}

// The platform Qt is to use, and what the person asked for. Qt's own `-platform NAME` argument is
// taken out of the arguments into QT_QPA_PLATFORM, so that one rule covers both; an empty
// QT_QPA_PLATFORM is no choice. What the environment held is put back once Qt has started, so that
// the programs MirrorLab starts (mpirun, TensorBoard) see the person's own setting.
class PlatformChoice {
public:
    PlatformChoice(int& argc, char**& argv) {
        if (const char* set = std::getenv("QT_QPA_PLATFORM"); set != nullptr) environment_ = set;
        asked_ = environment_.value_or("");
        for (int i = 1; i < argc; ++i) {
            const std::string arg = argv[i];
            if ((arg == "-platform" || arg == "--platform") && i + 1 < argc) {
                asked_ = argv[++i];
            } else {
                arguments_.push_back(argv[i]);
            }
        }
        arguments_.insert(arguments_.begin(), argv[0]);
        arguments_.push_back(nullptr);
        argc = static_cast<int>(arguments_.size()) - 1;
        argv = arguments_.data();
    }
    const std::string& asked() const { return asked_; }
    void use(const std::string& platforms) const { setenv("QT_QPA_PLATFORM", platforms.c_str(), 1); }
    void restore() const {
        if (environment_) setenv("QT_QPA_PLATFORM", environment_->c_str(), 1);
        else unsetenv("QT_QPA_PLATFORM");
    }

private:
    std::optional<std::string> environment_;
    std::string asked_;
    std::vector<char*> arguments_;  // argv without -platform, as QApplication keeps it
};

// Without a display Qt aborts with a message about platform plugins that does not say what to do,
// and so it does with a display that cannot be reached (a DISPLAY left from an `ssh -X` session that
// ended). Printing the help or the version and the screenshot mode need none: they render offscreen.
// A window does: Qt is given the offscreen platform as its last choice, and landing there is said
// (in the interface's language), naming the way to train without one. False: nothing can be shown.
bool choose_platform(int argc, char** argv, const PlatformChoice& choice, std::optional<OffscreenScreen>& screen,
                     bool& offscreen_is_a_fallback) {
    offscreen_is_a_fallback = false;
    const std::string& asked = choice.asked();
    const bool display = std::getenv("DISPLAY") != nullptr || std::getenv("WAYLAND_DISPLAY") != nullptr;
    if (asks_for_no_window(argc, argv)) {
        screen.emplace(argument_value(argc, argv, "--size"));
        if (asked == "offscreen") {
            choice.use(screen->platform());  // the --size screen for a plain "offscreen"
        } else if (asked.find("offscreen") == std::string::npos) {
            const std::string first = !asked.empty() ? asked + ";" : display ? session_platforms() + ";" : std::string();
            choice.use(first + screen->platform());
        } else {
            choice.use(asked);
        }
        return true;
    }
    if (asked.find("offscreen") != std::string::npos) {
        choice.use(asked);
        return true;
    }
    if (asked.empty() && !display) {
        explain(QT_TRANSLATE_NOOP("main", "mirrorlab: error: there is no display to open the window on (neither DISPLAY nor WAYLAND_DISPLAY is set).\n"
                "  Start MirrorLab from a desktop session or over `ssh -X`, or train without a window with\n"
                "  `mirrorlab-cli train` (see `mirrorlab-cli train --help`).\n"),
                QString(), argc, argv);
        return false;
    }
    choice.use((!asked.empty() ? asked : session_platforms()) + ";offscreen");
    offscreen_is_a_fallback = true;
    return true;
}

// The display the session names (and the platform asked for), for the message when it could not
// be reached; called with the interface's translation installed.
QString display_names(const std::string& asked_platform) {
    QStringList names;
    if (!asked_platform.empty()) names << QStringLiteral("QT_QPA_PLATFORM=%1").arg(QString::fromLocal8Bit(asked_platform.c_str()));
    if (const char* x11 = std::getenv("DISPLAY")) names << QStringLiteral("DISPLAY=%1").arg(QString::fromLocal8Bit(x11));
    if (const char* wayland = std::getenv("WAYLAND_DISPLAY")) names << QStringLiteral("WAYLAND_DISPLAY=%1").arg(QString::fromLocal8Bit(wayland));
    if (std::getenv("DISPLAY") == nullptr && std::getenv("WAYLAND_DISPLAY") == nullptr) {
        names << QCoreApplication::translate("main", "neither DISPLAY nor WAYLAND_DISPLAY set");
    }
    return names.join(QStringLiteral(", "));
}

// A whole number from 1 to `most` for `option`, or false after saying what is wrong.
bool read_count(const QString& text, const char* option, int most, int& count) {
    bool read = false;
    count = text.toInt(&read);
    if (read && count >= 1 && count <= most) return true;
    std::fprintf(stderr, "mirrorlab: error: %s wants a whole number from 1 to %d, not '%s'\n", option, most, qPrintable(text));
    return false;
}

// Whether Qt started on the offscreen platform, its last choice, for a window: then the display
// could not be opened, which is said (in the interface's language).
bool fell_back_to_offscreen(const PlatformChoice& platform, int argc, char** argv) {
    if (QGuiApplication::platformName() != QStringLiteral("offscreen")) return false;
    mirrorlab::ui::installTranslation(language_argument(argc, argv));
    const QString names = display_names(platform.asked());
    explain(QT_TRANSLATE_NOOP("main", "mirrorlab: error: the display could not be opened (%1): it is not running, or this session may not use it.\n"
            "  Start MirrorLab from a desktop session or over `ssh -X`, or train without a window with\n"
            "  `mirrorlab-cli train` (see `mirrorlab-cli train --help`). If the display works for other\n"
            "  programs, Qt's platform plugin may not load: QT_DEBUG_PLUGINS=1 shows why.\n"),
            names, argc, argv);
    return true;
}

// --screenshot: train for `epochs` on the default data in a window as on a first launch (or of
// `size_text`, WxH, where given), save the window to `path` when the run ends; the exit status.
struct ScreenshotRequest {
    QString path;
    int epochs = 3;
    std::optional<QString> size_text;  // "WIDTHxHEIGHT"
    std::optional<QString> try_text;   // classified in the Try it panel before the picture
    QStringList panels;                // docks brought forward (object names)
    QString follow;                    // --follow: the run shown is this file's, not one trained here
    int workers = 0;                   // --workers: trained by this many mpirun workers
};

// After the run: the per-class report evaluated, the Try it text classified, the asked-for docks in
// front (a bottom one given half the window's height).
void prepare_panels(mirrorlab::ui::MainWindow& window, const ScreenshotRequest& request) {
    if (auto* report = window.findChild<mirrorlab::ui::ClassReportView*>()) report->waitForReport(120000);
    if (auto* try_it = window.findChild<mirrorlab::ui::TryItPanel*>(); try_it != nullptr && request.try_text) {
        try_it->setText(*request.try_text);
        try_it->classify();
    }
    for (const QString& name : request.panels) {
        auto* dock = window.findChild<QDockWidget*>(name);
        if (dock == nullptr) {
            std::fprintf(stderr, "mirrorlab: warning: --show-panel: no panel named '%s'\n", qPrintable(name));
            continue;
        }
        dock->show();
        dock->raise();
        if (window.dockWidgetArea(dock) == Qt::BottomDockWidgetArea) window.resizeDocks({dock}, {window.height() / 2}, Qt::Vertical);
    }
}

int take_screenshot(QApplication& app, const ScreenshotRequest& request) {
    const QString& path = request.path;
    const int epochs = request.epochs;
    const std::optional<QString>& size_text = request.size_text;
    QSize window_size;
    if (size_text) {
        if (const auto size = parse_window_size(size_text->toStdString())) window_size = QSize(size->first, size->second);
        if (!window_size.isValid() || window_size.isEmpty()) {
            std::fprintf(stderr, "mirrorlab: error: --size wants WIDTHxHEIGHT, e.g. 1366x768, not '%s'\n", qPrintable(*size_text));
            return 2;
        }
    }
    // A clean settings scope so the picture shows the first launch, not this user's last layout.
    const QString scope = QStringLiteral("MirrorLab-screenshot");
    QSettings(QStringLiteral("MirrorLab"), scope).clear();
    mirrorlab::ui::MainWindow window(nullptr, scope);
    if (window_size.isValid()) window.resize(window_size);
    window.show();
    if (!request.follow.isEmpty()) {
        QString error;
        if (window.controller()->follow(request.follow, &error) == 0) {
            std::fprintf(stderr, "mirrorlab: error: %s\n", qPrintable(error));
            return 1;
        }
    } else if (request.workers > 0) {
        if (!window.dataPanel()->waitUntilLoaded(120000)) return 1;
        const mirrorlab::ui::RunSettings settings = window.runSettings(epochs);
        QString error;
        if (window.controller()->launchWorkers(settings, request.workers, &error) == 0) {
            std::fprintf(stderr, "mirrorlab: error: %s\n", qPrintable(error));
            return 1;
        }
    } else if (!window.dataPanel()->waitUntilLoaded(120000) || !window.startTraining(epochs)) {
        std::fprintf(stderr, "mirrorlab: error: cannot start training: %s\n", qPrintable(window.startBlocker()));
        return 1;
    }
    window.controller()->waitForFinished(-1);
    prepare_panels(window, request);
    // Let the charts' batching timer draw the last points before the picture is taken.
    QTimer::singleShot(400, &app, [&] {
        QString error;
        if (!mirrorlab::ui::savePngAtomically(window.grab(), path, &error)) {
            std::fprintf(stderr, "mirrorlab: error: %s\n", qPrintable(error));
            QApplication::exit(1);
            return;
        }
        std::printf("Saved %s\n", qPrintable(path));
        QApplication::exit(0);
    });
    return QApplication::exec();
}

}  // namespace

int main(int argc, char** argv) {
    const PlatformChoice platform(argc, argv);
    std::optional<OffscreenScreen> offscreen_screen;  // for the screenshot mode, the help and the version
    bool offscreen_is_a_fallback = false;
    if (!choose_platform(argc, argv, platform, offscreen_screen, offscreen_is_a_fallback)) return kNoDisplayExitStatus;
    QApplication app(argc, argv);
    platform.restore();
    if (offscreen_screen) offscreen_screen->release();  // read by the platform, which has started
    if (offscreen_is_a_fallback && fell_back_to_offscreen(platform, argc, argv)) return kNoDisplayExitStatus;
    QApplication::setApplicationName(QStringLiteral("MirrorLab"));
    QApplication::setOrganizationName(QStringLiteral("MirrorLab"));
    QApplication::setApplicationVersion(QStringLiteral(MIRRORLAB_VERSION));
    // Wayland compositors and docks find the window's icon and name through the installed entry.
    QGuiApplication::setDesktopFileName(QStringLiteral("org.mirrorlab.MirrorLab"));

    QString language_warning;
    mirrorlab::ui::installTranslation(language_argument(argc, argv), &language_warning);
    if (!language_warning.isEmpty()) std::fprintf(stderr, "mirrorlab: warning: %s\n", qPrintable(language_warning));

    QCommandLineParser parser;
    parser.setApplicationDescription(QApplication::translate("main", "Interactive data-parallel training"));
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                  QApplication::translate("main", "Train on the default data, save a screenshot of the window to FILE and exit."),
                                  QStringLiteral("FILE"));
    QCommandLineOption epochs(QStringLiteral("epochs"), QApplication::translate("main", "Epochs for --screenshot (default 3)."),
                              QStringLiteral("N"), QStringLiteral("3"));
    QCommandLineOption language_option(
        QStringLiteral("language"),
        QApplication::translate("main", "Interface language: zh_CN (Simplified Chinese) or en (English); default: the system's."),
        QStringLiteral("LANG"));
    QCommandLineOption size(QStringLiteral("size"),
                            QApplication::translate("main", "Window size for --screenshot, e.g. 1366x768 (default: as on a first launch on this screen)."),
                            QStringLiteral("WxH"));
    QCommandLineOption show_panel(
        QStringLiteral("show-panel"),
        QApplication::translate("main", "For --screenshot: bring these panels forward (dock names, comma-separated, e.g. tryItDock,classReportDock); a bottom one gets half the window's height."),
        QStringLiteral("DOCKS"));
    QCommandLineOption try_text(QStringLiteral("try-text"),
                                QApplication::translate("main", "For --screenshot: a newswire for the Try it panel to classify."),
                                QStringLiteral("TEXT"));
    QCommandLineOption no_gpu(QStringLiteral("no-gpu"),
                              QApplication::translate("main", "Use the CPUs only: do not look for GPUs or load CUDA (as MIRRORLAB_NO_GPU=1)."));
    parser.addOption(no_gpu);
    parser.addOption(language_option);
    parser.addOption(show_panel);
    parser.addOption(try_text);
    parser.addOption(screenshot);
    parser.addOption(epochs);
    QCommandLineOption follow(QStringLiteral("follow"),
                              QApplication::translate("main", "Show the run whose `mirrorlab-cli train --json` output goes to FILE, live "
                                                              "(e.g. rank 0 of an mpirun job); with --screenshot, once it ends."),
                              QStringLiteral("FILE"));
    QCommandLineOption workers(QStringLiteral("workers"),
                               QApplication::translate("main", "For --screenshot: train on N workers started by mpirun "
                                                               "(Training > Train on several workers)."),
                               QStringLiteral("N"));
    parser.addOption(size);
    parser.addOption(follow);
    parser.addOption(workers);
    parser.process(app);
    if (parser.isSet(no_gpu)) qputenv("MIRRORLAB_NO_GPU", "1");  // read where the devices are first listed

    if (!parser.isSet(screenshot)) {
        mirrorlab::ui::MainWindow window;
        window.show();
        // A --follow that cannot be followed is said in the window, which stays open (it closed at
        // once, the reason on a terminal the user may not see).
        if (parser.isSet(follow)) window.followRun(parser.value(follow));
        return QApplication::exec();
    }
    ScreenshotRequest request;
    request.path = parser.value(screenshot);
    // "--epochs abc" trained 1 epoch and "--workers 0" none: refused as --size is.
    if (!read_count(parser.value(epochs), "--epochs", 1'000'000, request.epochs)) return 2;
    if (parser.isSet(workers) && !read_count(parser.value(workers), "--workers", 4096, request.workers)) return 2;
    if (parser.isSet(size)) request.size_text = parser.value(size);
    if (parser.isSet(try_text)) request.try_text = parser.value(try_text);
    request.panels = parser.value(show_panel).split(QLatin1Char(','), Qt::SkipEmptyParts);
    request.follow = parser.value(follow);
    return take_screenshot(app, request);
}
