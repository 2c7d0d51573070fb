// The build's layering check: reads every #include of app/, ui/, core/ and gpu/ and fails, naming
// the file, the line and the arrow, when one runs against the project's layers:
//
//   app -> ui -> core <- gpu       ui never includes gpu/ or app/; gpu never includes ui/ or app/;
//                                  core includes none of them, and neither Qt nor CUDA headers.
//   core/<module>                  a module includes only itself and the modules before it in the
//                                  order given with --order (core/CMakeLists.txt declares it).
//
// An arrow the code still needs while a move is pending is allowed one file at a time with
// --allow FILE=TARGET_HEADER (core/CMakeLists.txt gives each its reason); an allowance that no
// longer matches an include fails too, so it is removed once the move lands.
//
// Usage: check_layers --root DIR --order util,data,... [--allow core/x/a.h=core/y/b.h]...
//                     [--stamp FILE]
// Exit status 0 when every include keeps to the layers (and FILE is written), 1 when one does not,
// 2 for a usage error. Plain C++ and the standard library: it runs before anything else builds.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Include {
    std::string target;  // what is between the quotes or angle brackets
    bool angled = false;
    int line = 0;
};

std::vector<Include> includes_of(const fs::path& file) {
    std::vector<Include> found;
    std::ifstream in(file);
    std::string text;
    int number = 0;
    while (std::getline(in, text)) {
        ++number;
        std::size_t i = text.find_first_not_of(" \t");
        if (i == std::string::npos || text[i] != '#') continue;
        i = text.find_first_not_of(" \t", i + 1);
        if (i == std::string::npos || text.compare(i, 7, "include") != 0) continue;
        i = text.find_first_not_of(" \t", i + 7);
        if (i == std::string::npos || (text[i] != '"' && text[i] != '<')) continue;
        const char close = text[i] == '"' ? '"' : '>';
        const std::size_t end = text.find(close, i + 1);
        if (end == std::string::npos) continue;
        found.push_back({text.substr(i + 1, end - i - 1), close == '>', number});
    }
    return found;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.compare(0, prefix.size(), prefix) == 0; }

std::string first_folder(const std::string& path) { return path.substr(0, path.find('/')); }

// "core/train/events.h" -> "train"; "" when the path has no module folder.
std::string core_module(const std::string& path) {
    if (!starts_with(path, "core/")) return {};
    const std::size_t slash = path.find('/', 5);
    return slash == std::string::npos ? std::string() : path.substr(5, slash - 5);
}

bool is_qt_header(const std::string& target) {
    return (target.size() > 1 && target[0] == 'Q' && std::isupper(static_cast<unsigned char>(target[1]))) ||
           starts_with(target, "Qt") || starts_with(target, "qt");
}

bool is_cuda_header(const std::string& target) {
    for (const char* prefix : {"cuda", "cublas", "cudnn", "nccl", "cufft", "curand", "cusparse", "nvrtc", "thrust/", "cub/"}) {
        if (starts_with(target, prefix)) return true;
    }
    return false;
}

class Checker {
public:
    Checker(fs::path root, std::vector<std::string> order, std::map<std::string, std::set<std::string>> allowed)
        : root_(std::move(root)), order_(std::move(order)), allowed_(std::move(allowed)) {}

    int run() {
        for (const char* folder : {"app", "ui", "core", "gpu"}) {
            if (!fs::is_directory(root_ / folder)) continue;
            std::vector<fs::path> files;
            for (const auto& entry : fs::recursive_directory_iterator(root_ / folder)) {
                const std::string ext = entry.path().extension().string();
                if (entry.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".inl" || ext == ".cu" || ext == ".cuh")) {
                    files.push_back(entry.path());
                }
            }
            std::sort(files.begin(), files.end());
            for (const fs::path& file : files) check_file(fs::relative(file, root_).generic_string());
        }
        for (const auto& [file, targets] : allowed_) {
            for (const std::string& target : targets) {
                if (!used_.count(file + "=" + target)) {
                    report(file, 0, "the allowance " + file + " -> " + target + " matches no include any more: remove it (core/CMakeLists.txt)");
                }
            }
        }
        return problems_ == 0 ? 0 : 1;
    }

private:
    void report(const std::string& file, int line, const std::string& what) {
        std::cerr << file << ":" << (line > 0 ? std::to_string(line) + ":" : std::string()) << " error: " << what << "\n";
        ++problems_;
    }

    int rank(const std::string& module) const {
        const auto it = std::find(order_.begin(), order_.end(), module);
        return it == order_.end() ? -1 : static_cast<int>(it - order_.begin());
    }

    std::string order_text() const {
        std::string text;
        for (const std::string& module : order_) text += (text.empty() ? "" : " < ") + module;
        return text;
    }

    void check_file(const std::string& file) {
        const std::string layer = first_folder(file);
        const std::string module = core_module(file);
        if (layer == "core" && rank(module) < 0) {
            report(file, 0, "core/" + module + "/ is not a module of the core's order (" + order_text() +
                                "): add it to MIRRORLAB_CORE_MODULES in core/CMakeLists.txt");
            return;
        }
        for (const Include& include : includes_of(root_ / file)) check_include(file, layer, module, include);
    }

    void check_include(const std::string& file, const std::string& layer, const std::string& module, const Include& include) {
        const std::string& target = include.target;
        const auto forbid = [&](const std::string& arrow, const std::string& why) {
            const auto allowance = allowed_.find(file);
            if (allowance != allowed_.end() && allowance->second.count(target)) {
                used_.insert(file + "=" + target);
                return;
            }
            report(file, include.line, "forbidden include \"" + target + "\": " + arrow + " (" + why + ")");
        };
        if (include.angled) {
            if (layer == "core" && is_qt_header(target)) forbid("core -> Qt", "core is plain C++, no Qt");
            if (layer == "core" && is_cuda_header(target)) forbid("core -> CUDA", "CUDA lives in gpu/, loaded as a plugin");
            if (layer == "gpu" && is_qt_header(target)) forbid("gpu -> Qt", "the CUDA plugin implements core's interfaces only");
            return;
        }
        const std::string to = first_folder(target);
        if (to != "app" && to != "ui" && to != "core" && to != "gpu") return;  // a file beside it, or a test's support header
        const bool upward = (layer == "core" && to != "core") || (layer == "ui" && (to == "gpu" || to == "app")) ||
                            (layer == "gpu" && (to == "ui" || to == "app"));
        if (upward) {
            forbid(layer + " -> " + to, "the layers are app -> ui -> core <- gpu");
            return;
        }
        if (layer != "core" || to != "core") return;
        const std::string to_module = core_module(target);
        if (rank(to_module) < 0) {
            forbid("core/" + module + " -> core/" + to_module, "core/" + to_module + "/ is not a module of the order " + order_text());
        } else if (rank(to_module) > rank(module)) {
            forbid("core/" + module + " -> core/" + to_module,
                   "a module includes only itself and the modules before it: " + order_text() +
                       "; move what both need down, or the includer up");
        }
    }

    fs::path root_;
    std::vector<std::string> order_;
    std::map<std::string, std::set<std::string>> allowed_;  // file -> headers it may include against the order
    std::set<std::string> used_;
    int problems_ = 0;
};

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(separator, start), text.size());
        if (end > start) parts.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return parts;
}

}  // namespace

int main(int argc, char** argv) {
    fs::path root;
    fs::path stamp;
    std::vector<std::string> order;
    std::map<std::string, std::set<std::string>> allowed;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--root" && has_value) {
            root = argv[++i];
        } else if (arg == "--order" && has_value) {
            order = split(argv[++i], ',');
        } else if (arg == "--allow" && has_value) {
            const std::string value = argv[++i];
            const std::size_t equals = value.find('=');
            if (equals == std::string::npos) {
                std::cerr << "check_layers: --allow takes FILE=HEADER, got " << value << "\n";
                return 2;
            }
            allowed[value.substr(0, equals)].insert(value.substr(equals + 1));
        } else if (arg == "--stamp" && has_value) {
            stamp = argv[++i];
        } else {
            std::cerr << "usage: check_layers --root DIR --order util,data,... [--allow FILE=HEADER]... [--stamp FILE]\n";
            return 2;
        }
    }
    if (root.empty() || order.empty()) {
        std::cerr << "check_layers: --root and --order are required\n";
        return 2;
    }
    const int status = Checker(root, order, allowed).run();
    if (status == 0 && !stamp.empty()) std::ofstream(stamp) << "layers kept\n";
    return status;
}
