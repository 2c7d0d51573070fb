#pragma once
// Reader for the golden fixtures that tests/golden/make_keras_golden.py writes (format in
// tests/golden/README.md). Kept apart from the tests so that a format error reads as "file:line:
// what was expected" instead of a wrong number three tensors later.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mirrorlab::testsupport {

struct FixtureTensor {
    std::string name;
    bool is_int = false;              // "i32" (else "f32")
    std::vector<std::int64_t> shape;  // as written; a scalar is [1]
    std::vector<float> f32;           // values when !is_int
    std::vector<std::int32_t> i32;    // values when is_int
    std::int64_t numel() const;
    std::string shape_text() const;  // "[3, 4, 6]"
};

class Fixture {
  public:
    // Throws std::runtime_error naming the file and line of the first problem.
    static Fixture read(const std::string& path);

    const std::string& path() const { return path_; }
    const std::vector<FixtureTensor>& tensors() const { return tensors_; }
    const FixtureTensor* find(const std::string& name) const;
    const FixtureTensor& at(const std::string& name) const;  // throws naming the tensor and file

    // "# optimizer <run> key=value ..." header lines: run -> key -> value (values as written,
    // e.g. "0.01", "None", "False"). Comment lines that merely start with "optimizer" but carry
    // no key=value pairs (prose) are not runs.
    const std::map<std::string, std::map<std::string, std::string>>& optimizer_runs() const {
        return runs_;
    }
    // Every comment line, without the leading "#" and surrounding spaces.
    const std::vector<std::string>& comments() const { return comments_; }

  private:
    std::string path_;
    std::vector<FixtureTensor> tensors_;
    std::map<std::string, std::size_t> index_;
    std::map<std::string, std::map<std::string, std::string>> runs_;
    std::vector<std::string> comments_;
};

}  // namespace mirrorlab::testsupport
