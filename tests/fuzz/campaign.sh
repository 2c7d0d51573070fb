#!/usr/bin/env bash
# A long fuzzing campaign: every target runs until it has executed RUNS inputs (default 10 million)
# or MAX_SECONDS have passed (default 0: no time limit), one target after another, each starting
# from the corpus earlier runs left in build-fuzz/corpus/. Prints each target's execution count,
# and the lines for the table in tests/fuzz/README.md.
#
#   bash tests/fuzz/campaign.sh [RUNS] [MAX_SECONDS_PER_TARGET] [TARGET...]
#   bash tests/fuzz/campaign.sh                       # 10M executions each, however long it takes
#   bash tests/fuzz/campaign.sh 10000000 600          # at most 10 minutes each
#
# Measured rates on one core of the 2-core machine: the parsers 3,600-5,900 inputs a second
# (10 million in 30-45 minutes), fuzz_trainer ~1,600 (about 2 hours), fuzz_sgml ~650 (over 4 hours,
# it writes every input to a file): most of a day for all seven.
# Run several campaigns side by side on more cores with FUZZ_BUILD_DIR set apart, or merge corpora
# afterwards (libFuzzer -merge=1). Exit status as run-fuzzers.sh: 1 when a target found something.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
runs=${1:-10000000}
max_seconds=${2:-0}
shift 2 2>/dev/null || shift $#
if ! [[ $runs =~ ^[0-9]+$ && $max_seconds =~ ^[0-9]+$ ]] || ((runs < 1)); then
  echo "usage: bash tests/fuzz/campaign.sh [RUNS] [MAX_SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
fi
# libFuzzer's -max_total_time=0 means no limit; run-fuzzers.sh wants a positive number.
((max_seconds > 0)) || max_seconds=$((365 * 24 * 3600))

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# An input that takes 10 s is a hang when the machine is ours, but a campaign runs for hours, often
# niced beside builds: there fuzz_zip_npz once "timed out" on an input that runs in 1 ms (the
# process was starved in ASan's quarantine recycling). Long campaigns allow a minute.
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-60} FUZZ_RUNS=$runs bash "$here/run-fuzzers.sh" "$max_seconds" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

echo
echo "campaign ($(date -u +%Y-%m-%d), goal $runs executions per target, $(nproc) cores):"
echo "| target | executions | seconds | exec/s | coverage | features | result |"
echo "|---|---:|---:|---:|---:|---:|---|"
while read -r target executions seconds cov ft result; do
  rate="?"
  if [[ $executions =~ ^[0-9]+$ && $seconds =~ ^[0-9]+$ ]] && ((seconds > 0)); then rate=$((executions / seconds)); fi
  printf '| `%s` | %s | %s | %s | %s | %s | %s |\n' "$target" "$executions" "$seconds" "$rate" "$cov" "$ft" "$result"
done < <(grep -E '^fuzz_[a-z0-9_]+ +[0-9?]+ ' "$log")
exit "$status"
