#include "support/fixture.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mirrorlab::testsupport {

namespace {

std::string trim(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) return {};
    const auto last = text.find_last_not_of(" \t\r");
    return text.substr(first, last - first + 1);
}

std::vector<std::string> split(const std::string& text) {
    std::istringstream stream(text);
    std::vector<std::string> tokens;
    for (std::string token; stream >> token;) tokens.push_back(token);
    return tokens;
}

struct Token {
    std::string text;
    int line = 0;
};

}  // namespace

std::int64_t FixtureTensor::numel() const {
    std::int64_t count = 1;
    for (auto dim : shape) count *= dim;
    return count;
}

std::string FixtureTensor::shape_text() const {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

Fixture Fixture::read(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error(path + ": cannot open the fixture");
    Fixture fixture;
    fixture.path_ = path;

    std::vector<Token> tokens;
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
        const std::string text = trim(line);
        if (text.empty()) continue;
        if (text[0] == '#') {
            const std::string comment = trim(text.substr(1));
            fixture.comments_.push_back(comment);
            const auto words = split(comment);
            // A run line names the run, then only key=value pairs; anything else is prose.
            bool is_run = words.size() >= 3 && words[0] == "optimizer" && words[1].back() != ':';
            for (std::size_t i = 2; is_run && i < words.size(); ++i) {
                const auto eq = words[i].find('=');
                is_run = eq != std::string::npos && eq > 0;
            }
            if (!is_run) continue;
            if (fixture.runs_.count(words[1]) != 0) {
                throw std::runtime_error(path + ":" + std::to_string(number) + ": optimizer run '" +
                                         words[1] + "' is described twice");
            }
            auto& keys = fixture.runs_[words[1]];
            for (std::size_t i = 2; i < words.size(); ++i) {
                const auto eq = words[i].find('=');
                keys[words[i].substr(0, eq)] = words[i].substr(eq + 1);
            }
            continue;
        }
        for (auto& token : split(text)) tokens.push_back({std::move(token), number});
    }

    std::size_t at = 0;
    auto fail = [&](const std::string& why) -> std::runtime_error {
        const int number =
            at < tokens.size() ? tokens[at].line : (tokens.empty() ? 0 : tokens.back().line);
        return std::runtime_error(path + ":" + std::to_string(number) + ": " + why);
    };
    auto next = [&](const char* what) -> const std::string& {
        if (at >= tokens.size())
            throw fail(std::string("unexpected end of file, expected ") + what);
        return tokens[at++].text;
    };
    auto integer = [&](const char* what) -> std::int64_t {
        const std::string& text = next(what);
        char* end = nullptr;
        errno = 0;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || errno != 0) {
            --at;
            throw fail(std::string("expected ") + what + ", found '" + text + "'");
        }
        return value;
    };

    while (at < tokens.size()) {
        if (next("'tensor'") != "tensor") {
            --at;
            throw fail("expected 'tensor <name> <f32|i32> <ndim> dims...', found '" +
                       tokens[at].text + "'");
        }
        FixtureTensor tensor;
        tensor.name = next("a tensor name");
        const std::string dtype = next("f32 or i32");
        if (dtype != "f32" && dtype != "i32") {
            --at;
            throw fail("tensor '" + tensor.name + "': dtype must be f32 or i32, found '" + dtype +
                       "'");
        }
        tensor.is_int = dtype == "i32";
        const std::int64_t rank = integer("the number of dimensions");
        if (rank < 1 || rank > 8)
            throw fail("tensor '" + tensor.name + "': bad rank " + std::to_string(rank));
        for (std::int64_t d = 0; d < rank; ++d) {
            const std::int64_t dim = integer("a dimension");
            if (dim < 0) throw fail("tensor '" + tensor.name + "': negative dimension");
            tensor.shape.push_back(dim);
        }
        const std::int64_t count = tensor.numel();
        for (std::int64_t i = 0; i < count; ++i) {
            if (tensor.is_int) {
                const std::int64_t value = integer("an i32 value");
                tensor.i32.push_back(static_cast<std::int32_t>(value));
            } else {
                const std::string& text = next("an f32 value");
                char* end = nullptr;
                const float value = std::strtof(text.c_str(), &end);
                if (end == text.c_str() || *end != '\0') {
                    --at;
                    throw fail("tensor '" + tensor.name + "': expected an f32 value, found '" +
                               text + "'");
                }
                tensor.f32.push_back(value);
            }
        }
        if (fixture.index_.count(tensor.name) != 0)
            throw fail("tensor '" + tensor.name + "' appears twice");
        fixture.index_[tensor.name] = fixture.tensors_.size();
        fixture.tensors_.push_back(std::move(tensor));
    }
    if (fixture.tensors_.empty()) throw std::runtime_error(path + ": the fixture holds no tensors");
    return fixture;
}

const FixtureTensor* Fixture::find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const FixtureTensor& Fixture::at(const std::string& name) const {
    const FixtureTensor* tensor = find(name);
    if (tensor == nullptr) throw std::runtime_error(path_ + ": no tensor named '" + name + "'");
    return *tensor;
}

}  // namespace mirrorlab::testsupport
