#!/usr/bin/env bash
# The memory a user sees: the whole process's peak resident set (VmHWM, never reset, as
# /usr/bin/time reports it) of what people run, on this machine, printed as a Markdown table for
# docs/PERFORMANCE.md (issue #22):
#   mirrorlab-cli devices
#   mirrorlab-cli train --devices cpu:2 (1 epoch) on real Reuters-21578, with and without the run store
#   mirrorlab (the GUI) training 10 epochs under Xvfb, then saving a screenshot and exiting
#   the peers where they can run: PyTorch (../shared/bench/torch_reuters.py, Debian's
#   python3-torch) and TensorFlow (packaging/bench/tf_reuters.py with TF_PYTHON=.../bin/python)
#
#   bash tests/memory/whole-process-rss.sh [BUILD_DIR] [REUTERS21578_DIR]
#
# BUILD_DIR defaults to build/; the Reuters-21578 folder to ../shared/data/reuters21578 beside the
# checkout (synthetic data where it is absent, said in the table). Runs are recorded in a
# throw-away store, never the user's. Needs GNU time (Debian: time) and, for the GUI row,
# xvfb-run (Debian: xvfb xauth); rows whose tool is missing say so. Exit status 0 unless a
# command failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || { echo "no build folder ${1:-$root/build}" >&2; exit 2; }
reuters=${2:-$root/../shared/data/reuters21578}
cli=$build/app/mirrorlab-cli
gui=$build/app/mirrorlab
[ -x "$cli" ] || { echo "no $cli: build first" >&2; exit 2; }
if [ -f "$reuters/reut2-000.sgm" ]; then
  data="reuters21578:$(cd "$reuters" && pwd)"
  data_name="Reuters-21578"
else
  data=synthetic
  data_name="synthetic (no Reuters-21578 at $reuters)"
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export MIRRORLAB_DATA_DIR=$scratch/store  # the run store of these runs

failed=0
# GNU time's %M (KiB) in $1 as MB (10^6 bytes, as the issue counts).
mb() { awk '{ printf "%.0f MB", $1 * 1024 / 1e6 }' "$1"; }
# peak COMMAND...: prints the whole process's peak RSS.
peak() {
  if ! /usr/bin/time -f '%M' -o "$scratch/rss" "$@" >"$scratch/out" 2>&1; then
    echo "FAILED (see below)"
    sed 's/^/    /' "$scratch/out" | tail -5 >&2
    failed=1
    return
  fi
  mb "$scratch/rss"
}

echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; data: $data_name"
echo
echo "| command | whole-process peak RSS |"
echo "| --- | --- |"
if [ ! -x /usr/bin/time ]; then
  echo "| (all) | not measured: /usr/bin/time is missing (apt-get install time) |"
  exit 2
fi
echo "| \`mirrorlab-cli devices\` | $(peak "$cli" devices) |"
echo "| \`mirrorlab-cli train --devices cpu:2 --epochs 1\` ($data_name, run store on) | $(peak "$cli" train --devices cpu:2 --epochs 1 --data "$data") |"
echo "| \`mirrorlab-cli train --devices cpu:2 --epochs 1 --no-store\` ($data_name) | $(peak "$cli" train --devices cpu:2 --epochs 1 --data "$data" --no-store) |"
if [ ! -x "$gui" ]; then
  echo "| \`mirrorlab\` (GUI), 10 epochs | not measured: no $gui |"
elif ! command -v xvfb-run >/dev/null; then
  echo "| \`mirrorlab\` (GUI), 10 epochs | not measured: xvfb-run is missing (apt-get install xvfb xauth) |"
else
  # The GUI's default data: the same Reuters-21578 folder where it exists.
  [ "$data" != synthetic ] && export MIRRORLAB_REUTERS21578_DIR=$reuters
  # GNU time inside xvfb-run, so that the X server's own memory is not counted.
  if xvfb-run -a -s '-screen 0 1920x1080x24' /usr/bin/time -f '%M' -o "$scratch/rss" \
       "$gui" --screenshot "$scratch/gui.png" --epochs 10 >"$scratch/out" 2>&1; then
    gui_peak=$(mb "$scratch/rss")
  else
    gui_peak="FAILED"
    tail -5 "$scratch/out" >&2
    failed=1
  fi
  echo "| \`mirrorlab --screenshot FILE --epochs 10\` (GUI under Xvfb, 1920x1080, $data_name) | $gui_peak |"
fi
# Peers, where they can run here: PyTorch (Debian's python3-torch) with the team's peer script,
# TensorFlow from a Python that has it (TF_PYTHON=.../bin/python).
peer=$root/../shared/bench/torch_reuters.py
if [ -f "$peer" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "| PyTorch: \`torch_reuters.py --threads 2 --epochs 1\` (synthetic, the same shape) | $(peak /usr/bin/python3 "$peer" --threads 2 --epochs 1) |"
else
  echo "| PyTorch | not measured: needs Debian's python3-torch and $peer |"
fi
if [ -n "${TF_PYTHON:-}" ]; then
  echo "| TensorFlow: the tutorial's MirroredStrategy on 2 logical CPUs, 1 epoch (synthetic, the same shape) | $(peak "$TF_PYTHON" "$root/packaging/bench/tf_reuters.py" --strategy mirrored --epochs 1) |"
else
  echo "| TensorFlow | not measured: set TF_PYTHON to a Python with TensorFlow |"
fi
exit $failed
