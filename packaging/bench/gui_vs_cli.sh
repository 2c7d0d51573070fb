#!/usr/bin/env bash
# The GUI's training speed next to the CLI's on the same configuration (issue #17: the GUI must
# train at >= 90 % of the CLI's speed). Runs, in ROUNDS interleaved rounds: `mirrorlab-cli train`
# and the GUI (`mirrorlab --screenshot`, under Xvfb), both on the GUI's default devices (the
# tutorial's two 1024 MB virtual CPU devices, cpu:2x1024MB), the same data and EPOCHS epochs, then
# reads each run's epoch seconds (training + validation) from a throw-away run store and prints the
# medians over epochs 2..EPOCHS (the first warms up) and the GUI's speed as a share of the CLI's.
#
#   bash packaging/bench/gui_vs_cli.sh [BUILD_DIR]         # ROUNDS=2 EPOCHS=3 by default
#
# Data: the Reuters-21578 files at ../shared/data/reuters21578 beside the checkout (REUTERS21578_DIR
# to point elsewhere), else synthetic data. Needs xvfb-run (Debian: xvfb xauth). Wall times: run it
# on idle cores. Exit status 0 when the GUI reaches 90 %, 1 when it does not, 2 on a set-up error.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || exit 2
rounds=${ROUNDS:-2}
epochs=${EPOCHS:-3}
reuters=${REUTERS21578_DIR:-$root/../shared/data/reuters21578}
command -v xvfb-run >/dev/null || { echo "xvfb-run is missing (apt-get install xvfb xauth)" >&2; exit 2; }
((epochs >= 2)) || { echo "EPOCHS must be at least 2" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export MIRRORLAB_DATA_DIR=$scratch/store
if [ -f "$reuters/reut2-000.sgm" ]; then
  data="reuters21578:$(cd "$reuters" && pwd)"
  export MIRRORLAB_REUTERS21578_DIR=$reuters  # the GUI's default data
else
  data=synthetic
  export MIRRORLAB_REUTERS21578_DIR=/nonexistent  # the GUI falls back to synthetic data too
fi
cli=$build/app/mirrorlab-cli

# The epoch seconds of the newest run, epochs 2.. (`runs show --json`: "seconds" of each epoch).
newest_epoch_seconds() {
  local id
  id=$("$cli" runs list | awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $1; exit }')
  "$cli" runs show "$id" --json | awk -F': *' '/"epoch":/ { epoch = $2 + 0 } /"seconds":/ { if (epoch >= 2) print $2 + 0 }'
}

: >"$scratch/cli.txt"
: >"$scratch/gui.txt"
for ((round = 1; round <= rounds; ++round)); do
  echo "round $round of $rounds: CLI..." >&2
  "$cli" train --devices cpu:2x1024MB --epochs "$epochs" --data "$data" --name "cli $round" >/dev/null 2>&1 ||
    { echo "mirrorlab-cli train failed" >&2; exit 2; }
  newest_epoch_seconds >>"$scratch/cli.txt"
  echo "round $round of $rounds: GUI..." >&2
  xvfb-run -a -s '-screen 0 1920x1080x24' "$build/app/mirrorlab" --screenshot "$scratch/gui.png" --epochs "$epochs" \
    >/dev/null 2>&1 || { echo "mirrorlab --screenshot failed" >&2; exit 2; }
  newest_epoch_seconds >>"$scratch/gui.txt"
done
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
cli_s=$(median "$scratch/cli.txt")
gui_s=$(median "$scratch/gui.txt")
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; data: $data; devices cpu:2x1024MB"
echo "CLI epoch (median of $(wc -l <"$scratch/cli.txt") epochs): $cli_s s; each: $(tr '\n' ' ' <"$scratch/cli.txt")"
echo "GUI epoch (median of $(wc -l <"$scratch/gui.txt") epochs): $gui_s s; each: $(tr '\n' ' ' <"$scratch/gui.txt")"
awk -v c="$cli_s" -v g="$gui_s" 'BEGIN {
  share = c / g * 100
  met = share >= 90
  printf "GUI speed: %.1f %% of the CLI speed (target >= 90 %%: %s)\n", share, met ? "met" : "NOT met"
  if (met) exit 0
  exit 1
}'
