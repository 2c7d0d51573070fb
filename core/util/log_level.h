#pragma once
// How loud a log line is: the strategy's plan, the trainer's events and the CLI share it.

namespace mirrorlab {

enum class LogLevel { Invalid = 0, Info, Warning, Error };

}  // namespace mirrorlab
