#pragma once
// `mirrorlab-cli bench`: parses its options, runs core/train/bench.h and prints the result
// (a table, or JSON with --json). Returns the process exit status.
namespace mirrorlab {

// argv[first..argc) are the bench options.
int run_bench_command(int argc, char** argv, int first);

}  // namespace mirrorlab
