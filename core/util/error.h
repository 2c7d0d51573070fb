#pragma once
// Errors the engine reports to people. Every message names the operation or the input that
// failed and, where possible, how to fix it: "[conv1d] input has 7 channels, kernel expects 8".
#include <stdexcept>
#include <string>

namespace mirrorlab {

// Base of every error the engine raises on purpose. `what()` is a full, user-facing sentence.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A model description (JSON, layer arguments, shapes) that cannot be built.
class ModelError : public Error {
public:
    using Error::Error;
};

// A device configuration that cannot work (validated before training starts).
class DeviceConfigError : public Error {
public:
    using Error::Error;
};

// A file or data set that cannot be read.
class DataError : public Error {
public:
    using Error::Error;
};

// An allocation that would exceed a logical device's memory limit.
class OutOfMemoryError : public Error {
public:
    using Error::Error;
};

// Bad arguments to an op: a programming error or a model the op cannot run.
class OpError : public Error {
public:
    using Error::Error;
};

}  // namespace mirrorlab
