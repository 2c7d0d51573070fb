#!/usr/bin/env bash
# MirrorLab's CPU speed next to PyTorch's and TensorFlow's, on this machine, in one run (issues #6, #17).
#
# Runs, back to back: the PyTorch peer (../shared/bench/torch_reuters.py, 2 threads, the same
# synthetic data shape, flush-to-zero on), `mirrorlab-cli bench` with 2 replicas of 1 thread,
# and `mirrorlab-cli bench` with 1 replica on 2 threads, and the tutorial's TensorFlow code on one
# device and under MirroredStrategy on 2 logical CPUs (packaging/bench/tf_reuters.py; TensorFlow
# from TF_PYTHON or a virtualenv made here, skipped when PyPI is unreachable); then prints each ratio
#     MirrorLab epoch (training + validation) / PyTorch training pass
# (medians over the measured epochs) against the target of 1/3, the 2-replica scaling
# efficiency against 85 %, and the peak RSS against 150 MiB; and issue #17's targets: the
# 2-replica epoch (on Reuters-21578 text with DATA=real) at most 0.8 s and 1.5x the floor the
# bench measures, at most 0.2 of PyTorch's and of TensorFlow's one-device epoch and 0.07 of
# TensorFlow's MirroredStrategy epoch, and the GUI's training at 90 % of the CLI's speed
# (packaging/bench/gui_vs_cli.sh in GUI_ROUNDS=4 rounds, where xvfb-run is installed; GUI=0 leaves
# it out). Exit status 0 when all targets hold, 1 when one does not, 77 when the peer cannot run (no
# Debian python3-torch).
#
#   bash packaging/bench/compare_pytorch.sh                 # synthetic data, 3 epochs each
#   EPOCHS=5 bash packaging/bench/compare_pytorch.sh
#   DATA=real bash packaging/bench/compare_pytorch.sh       # ours on Reuters-21578 text too
#
# Environment: CLI (default build/app/mirrorlab-cli), PEER (default ../shared/bench/
# torch_reuters.py), EPOCHS (3), DATA (synthetic | real), TORCH_FTZ (1; 0 runs the peer without
# flush-to-zero, slower on this data), TF_PYTHON (a Python with TensorFlow), TF_VENV, GUI (1; 0
# skips the GUI's run), MIRRORLAB_CPU_ISA (avx2 | generic: caps our kernels and the peers' alike,
# PyTorch's ATen and both peers' oneDNN, so that an AVX-512 machine measures the AVX2 machines'
# ratios: on such a machine the peers would otherwise run AVX-512 against our AVX2).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cli=${CLI:-$root/build/app/mirrorlab-cli}
peer=${PEER:-$root/../shared/bench/torch_reuters.py}
epochs=${EPOCHS:-3}
data=${DATA:-synthetic}
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$cli" ]; then
  echo "compare_pytorch: $cli not found; build first (cmake --build build --target mirrorlab-cli) or set CLI" >&2
  exit 2
fi
if [ ! -f "$peer" ] || ! "$python" -c "import torch, numpy" 2>/dev/null; then
  echo "compare_pytorch: the PyTorch peer cannot run (need $peer and Debian's python3-torch python3-numpy:" >&2
  echo "  apt-get install -y python3-torch python3-numpy); skipping" >&2
  exit 77
fi

case "${MIRRORLAB_CPU_ISA:-}" in
  avx2) export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ;;
  generic) export ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 DNNL_MAX_CPU_ISA=SSE41 ;;
esac
if [ -n "${ONEDNN_MAX_CPU_ISA:-}" ]; then
  echo "== every run capped to ${MIRRORLAB_CPU_ISA}: ours by MIRRORLAB_CPU_ISA, the peers by" \
    "ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA" >&2
fi

# TensorFlow, the tutorial's own framework: TF_PYTHON where given, else a virtualenv this script
# makes once (TF_VENV, default ~/.cache/mirrorlab/tf-venv) with TensorFlow from PyPI. Never part of
# the build; skipped with a message where PyPI cannot be reached.
tf_python=${TF_PYTHON:-}
if [ -z "$tf_python" ]; then
  tf_venv=${TF_VENV:-$HOME/.cache/mirrorlab/tf-venv}
  if [ ! -x "$tf_venv/bin/python" ] || ! "$tf_venv/bin/python" -c "import tensorflow" 2>/dev/null; then
    echo "== making $tf_venv with TensorFlow from PyPI (once; ~600 MB)" >&2
    if python3 -m venv "$tf_venv" >&2 && "$tf_venv/bin/pip" install -q tensorflow >&2; then
      tf_python=$tf_venv/bin/python
    else
      echo "compare_pytorch: TensorFlow could not be installed from PyPI (offline?); its rows are skipped" >&2
    fi
  else
    tf_python=$tf_venv/bin/python
  fi
fi
if [ -n "$tf_python" ]; then
  for strategy in one mirrored; do
    echo "== TensorFlow, the tutorial's code, $strategy, $epochs epochs" >&2
    "$tf_python" "$root/packaging/bench/tf_reuters.py" --strategy "$strategy" --epochs "$epochs" |
      tee "$work/tf_$strategy.txt" >&2 || rm -f "$work/tf_$strategy.txt"
  done
fi

ftz_flag=--ftz
[ "${TORCH_FTZ:-1}" = 0 ] && ftz_flag=

echo "== PyTorch peer: 2 threads, $epochs epochs ${ftz_flag:+(flush-to-zero)}" >&2
"$python" "$peer" --threads 2 --epochs "$epochs" $ftz_flag | tee "$work/torch.txt" >&2

echo "== MirrorLab: 2 replicas x 1 thread, $epochs epochs (+ scaling table)" >&2
"$cli" bench --devices cpu:2 --threads 2 --epochs "$epochs" --scaling-steps "${SCALING_STEPS:-400}" --json \
  >"$work/two_replicas.json"
echo "== MirrorLab: 1 replica x 2 threads, $epochs epochs" >&2
"$cli" bench --devices cpu --threads 2 --epochs "$epochs" --scaling 0 --json >"$work/one_replica.json"
if [ "$data" = real ]; then
  sgml="$root/../shared/data/reuters21578"
  echo "== MirrorLab on real text ($sgml): 2 replicas x 1 thread, $epochs epochs" >&2
  "$cli" bench --devices cpu:2 --threads 2 --epochs "$epochs" --scaling 0 --data "reuters21578:$sgml" --json \
    >"$work/real.json"
fi

# Last, as it takes the machine longest to settle after: the GUI against the CLI (issue #17).
if [ "${GUI:-1}" != 0 ]; then
  if command -v xvfb-run >/dev/null; then
    # Four interleaved rounds (GUI_ROUNDS): with two, one session's runs read 72-112 % on a 2-vCPU
    # machine whose speed drifted within the minute; four read 96.8 % there.
    echo "== MirrorLab: the GUI's training against the CLI's (gui_vs_cli.sh, $epochs epochs)" >&2
    ROUNDS=${GUI_ROUNDS:-4} EPOCHS=$epochs bash "$root/packaging/bench/gui_vs_cli.sh" "$(dirname "$(dirname "$cli")")" 2>&1 |
      tee "$work/gui.txt" >&2 || true
  else
    echo "compare_pytorch: xvfb-run is missing (apt-get install xvfb xauth); the GUI's row is skipped" >&2
  fi
fi

"$python" - "$work" <<'PY'
import json, os, re, statistics, sys
work = sys.argv[1]
torch_train = [float(m) for m in re.findall(r"train ([0-9.]+)s", open(os.path.join(work, "torch.txt")).read())]
# The peer's first epoch carries start-up costs (allocator, thread pool); medians over the rest
# when there are at least three epochs.
torch_median = statistics.median(torch_train[1:] if len(torch_train) >= 3 else torch_train)
runs = [("2 replicas x 1 thread", "two_replicas.json"), ("1 replica x 2 threads", "one_replica.json")]
if os.path.exists(os.path.join(work, "real.json")):
    runs.append(("2 replicas x 1 thread, real text", "real.json"))
ok = True
print(f"PyTorch training pass, 2 threads (median of {len(torch_train)} epochs: "
      f"{', '.join(f'{t:.2f}' for t in torch_train)}): {torch_median:.3f} s")
# CPU s/epoch is the work done (all threads); on a machine shared with other jobs it stays put
# while wall times swing, so it is printed next to them.
print(f"{'MirrorLab run':36} {'epoch s':>8} {'ratio':>7} {'target':>7}  {'CPU s':>6}  {'RSS MiB':>8}")
for name, path in runs:
    result = json.load(open(os.path.join(work, path)))
    run = result["run"]
    ratio = run["epoch_seconds"] / torch_median
    met = ratio <= 1 / 3
    rss_met = run["peak_rss_mib"] <= 150
    ok = ok and met and rss_met
    print(f"{name:36} {run['epoch_seconds']:8.3f} {ratio:7.3f} {'<=0.333':>7}  {run['cpu_seconds_per_epoch']:6.2f}"
          f"  {run['peak_rss_mib']:8.1f}  {'ok' if met and rss_met else 'MISSED'}")
# Issue #17's ratios: the 2-replica epoch against PyTorch's best training pass and TensorFlow's
# epochs (the tutorial's code on one device, and under MirroredStrategy on 2 logical CPUs).
two_epoch = json.load(open(os.path.join(work, "two_replicas.json")))["run"]["epoch_seconds"]
peers = [("PyTorch training pass, 2 threads", torch_median, 0.2)]
for strategy, label, target in (("one", "TensorFlow epoch, one device", 0.2),
                                ("mirrored", "TensorFlow epoch, MirroredStrategy 2 CPUs", 0.07)):
    path = os.path.join(work, f"tf_{strategy}.txt")
    found = re.findall(r"median epoch: ([0-9.]+) s", open(path).read()) if os.path.exists(path) else []
    if found:
        peers.append((label, float(found[-1]), target))
    else:
        print(f"{label}: not measured (no TensorFlow)")
print(f"{'MirrorLab 2 replicas over':44} {'peer s':>8} {'ratio':>7} {'target':>7}")
for label, seconds, target in peers:
    ratio = two_epoch / seconds
    print(f"{label:44} {seconds:8.3f} {ratio:7.3f} {'<=' + str(target):>7}  {'ok' if ratio <= target else 'MISSED'}")
    ok = ok and ratio <= target
bench = json.load(open(os.path.join(work, "two_replicas.json")))
scaling = bench["scaling"]
capacity = bench.get("parallel_capacity", 0.0)
print(f"{'scaling (1 thread per replica)':36} {'samples/s':>10} {'efficiency':>11}")
for row in scaling:
    label = (f"  {row['replicas']} independent trainings, 1 thread each" if row.get("independent_copies")
             else f"  {row['replicas']} replica(s), {row['threads']} thread(s)")
    print(f"{label:37} {row['samples_per_second']:10.0f} {100 * row['efficiency']:10.0f}%")
two = [row for row in scaling if row["replicas"] == 2 and not row.get("independent_copies")]
copies = [row for row in scaling if row["replicas"] == 2 and row.get("independent_copies")]
if two:
    met = two[0]["efficiency"] >= 0.85
    print(f"2-replica efficiency {100 * two[0]['efficiency']:.0f}% (target >= 85%): {'ok' if met else 'MISSED'}")
    if capacity > 0:
        # Two copies of a pure compute kernel, one per thread (medians of the rounds).
        print(f"  a pure compute kernel got {capacity:.2f}x on 2 threads")
    if copies and not met:
        # The issue's escape clause, measured: two independent trainings of one shard each (no
        # all-reduce, no barrier) show what the machine gives this work at the same moments.
        machine = copies[0]["efficiency"]
        ours = two[0]["samples_per_second"] / copies[0]["samples_per_second"]
        print(f"  2 independent 1-thread trainings reached only {100 * machine:.0f}% of ideal at the same times;"
              f" the mirrored replicas reached {100 * ours:.0f}% of them")
        if machine < 0.85 and ours >= 0.9:
            print("  so the machine, not the mirrored step, limits the efficiency now: explained by measurement")
            met = True
    ok = ok and met
# Issue #17: the whole 2-replica epoch against 0.8 s and against the floor this machine's FMA
# units set for its work (measured by the bench on this instruction set).
epoch_run = "real.json" if os.path.exists(os.path.join(work, "real.json")) else "two_replicas.json"
floor_bench = json.load(open(os.path.join(work, epoch_run)))
epoch = floor_bench["run"]["epoch_seconds"]
floor_ratio = floor_bench["floor_ratio"]
met = epoch <= 0.8 and floor_ratio <= 1.5
print(f"2-replica epoch, {floor_bench['data']}: {epoch:.3f} s (target <= 0.8 s), {floor_ratio:.2f}x the floor of "
      f"{floor_bench['floor_seconds']:.3f} s (target <= 1.5x; {floor_bench['kernel_isa']} kernels, FMA peak "
      f"{floor_bench['fma_peak']['all_core_gflops']:.1f} GFLOP/s on {floor_bench['cpu']}): {'ok' if met else 'MISSED'}")
ok = ok and met
gui_path = os.path.join(work, "gui.txt")
found = re.findall(r"GUI speed: ([0-9.]+) %", open(gui_path).read()) if os.path.exists(gui_path) else []
if found:
    share = float(found[-1])
    print(f"GUI training speed: {share} % of the CLI's (target >= 90 %): {'ok' if share >= 90 else 'MISSED'}")
    ok = ok and share >= 90
else:
    print("GUI training speed: not measured (GUI=0, no xvfb-run, or the run failed)")
print("all targets met" if ok else "some targets missed")
sys.exit(0 if ok else 1)
PY
