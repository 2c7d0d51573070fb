#!/usr/bin/env bash
# CI's fuzz smoke test (issue #13): builds every libFuzzer target with clang++-16 (installing
# clang-16 and libclang-rt-16-dev when missing), runs each one for a bounded time on its seed
# corpus and the committed regression inputs, and fails when any target crashes, leaks, times out,
# runs out of memory or breaks an invariant. All the work is tests/fuzz/run-fuzzers.sh's; this adds
# the verdict line CI reads.
#
#   bash tests/fuzz/smoke.sh [SECONDS_PER_TARGET]        (default 60)
#
# Measured on the 2-core Debian 12 machine with other builds running beside it: 8m55s for the 7
# targets at 60 s each, the clang build of build-fuzz/ included (CI run of 2026-12-01); about 7m20s
# with build-fuzz/ already built.
#
# Exit status: 0 when every target ran clean, 1 otherwise. A finding's input is in
# build-fuzz/crashes/<target>/ and its stack in build-fuzz/logs/<target>.log (README.md says how to
# reproduce it and how it becomes a regression input).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
seconds=${1:-60}
start=$SECONDS
log=$(mktemp)
trap 'rm -f "$log"' EXIT

bash "$here/run-fuzzers.sh" "$seconds" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# The summary table's rows: target runs seconds cov ft result...
passed=$(grep -cE '^fuzz_[a-z0-9_]+ +[0-9?]+ +[0-9?]+ +[0-9?]+ +[0-9?]+ +ok$' "$log" || true)
failed=$(grep -cE '^fuzz_[a-z0-9_]+ +[0-9?]+ +[0-9?]+ +[0-9?]+ +[0-9?]+ +(FOUND|FAILED)' "$log" || true)
if ((status != 0 && failed == 0)); then
  # No table: the toolchain or the build failed before any target ran.
  failed=$(bash "$here/list-targets.sh" | wc -l)
  echo "fuzz-smoke: set-up failed (run-fuzzers.sh exit $status)"
fi
elapsed=$((SECONDS - start))
printf 'fuzz-smoke: %dm%02ds for %s targets of %ss\n' $((elapsed / 60)) $((elapsed % 60)) $((passed + failed)) "$seconds"
echo "fuzz-smoke: $passed passed, $failed failed"
((failed == 0 && status == 0))
