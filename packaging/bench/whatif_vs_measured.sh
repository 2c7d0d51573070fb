#!/usr/bin/env bash
# The what-if scaling model against measurement on this host's loopback (issue #18: the prediction
# for 2 and 3 workers within 20 % of the measured step). In ROUNDS interleaved rounds:
#   calibration  `bench --devices cpu --threads 1` at global batch 32, 16 and 11 (the compute line of one replica,
#                the host's parallel capacity), and `mpirun -np 2 bench` (its link probe: α and β
#                of the link between two workers, measured before it trains);
#   prediction   `whatif --workers 2,3` from them (3 workers use the 2-worker link: a real prediction);
#   measurement  `mpirun -np 2 bench --devices cpu` and `mpirun -np 3 --oversubscribe bench`.
# Prints each round's predicted and measured ms/step, then the medians and the errors.
#
#   bash packaging/bench/whatif_vs_measured.sh [BUILD_DIR]     # ROUNDS=3 EPOCHS=1 STEPS=150
#
# DATA (default synthetic) is any --data spec; WAIT_IDLE=90 waits for idle CPUs before each round.
# Exit status 0 when both medians are within 20 %, 1 when not, 2 on a set-up error.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || exit 2
cli=$build/app/mirrorlab-cli
rounds=${ROUNDS:-3}
epochs=${EPOCHS:-1}
steps=${STEPS:-150}
data=${DATA:-synthetic}
command -v mpirun >/dev/null || { echo "mpirun is missing (apt-get install openmpi-bin)" >&2; exit 2; }
[ -x "$cli" ] || { echo "no $cli: build first" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench=(bench --epochs "$epochs" --steps "$steps" --data "$data" --json)

# shellcheck source=packaging/bench/wait_idle.sh
source "$root/packaging/bench/wait_idle.sh"
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $(mpirun --version | head -1)"
p2=() p3=() m2=() m3=()
for ((round = 1; round <= rounds; ++round)); do
  wait_until_idle
  # Calibration: one replica at the shards the workers will run (32 over 2 = 16, over 3 = 11),
  # with the scaling table (its independent trainings on both cores measure what the host gives).
  "$cli" "${bench[@]}" --devices cpu --threads 1 --batch-size 32 --scaling "$(nproc)" --scaling-steps 200 >"$work/c32.json" 2>/dev/null &&
    "$cli" "${bench[@]}" --devices cpu --threads 1 --batch-size 11 --scaling 0 >"$work/c11.json" 2>/dev/null &&
    "$cli" "${bench[@]}" --devices cpu --threads 1 --batch-size 16 --scaling 0 >"$work/c16.json" 2>/dev/null ||
    { echo "the one-replica bench failed" >&2; exit 2; }
  mpirun --oversubscribe -np 2 "$cli" "${bench[@]}" --devices cpu >"$work/w2.json" 2>/dev/null ||
    { echo "mpirun -np 2 bench failed" >&2; exit 2; }
  "$cli" whatif --calibration "$work/c32.json" --calibration "$work/c16.json" --calibration "$work/c11.json" \
    --calibration "$work/w2.json" --workers 2,3 --json >"$work/whatif.json" || { echo "whatif failed" >&2; exit 2; }
  mpirun --oversubscribe -np 3 "$cli" "${bench[@]}" --devices cpu >"$work/w3.json" 2>/dev/null ||
    { echo "mpirun -np 3 bench failed" >&2; exit 2; }
  p2+=("$(field "$work/whatif.json" 'd["predictions"][0]["ms_per_step"]')")
  p3+=("$(field "$work/whatif.json" 'd["predictions"][1]["ms_per_step"]')")
  m2+=("$(field "$work/w2.json" 'd["run"]["ms_per_step"]')")
  m3+=("$(field "$work/w3.json" 'd["run"]["ms_per_step"]')")
  link=$(field "$work/w2.json" '"%.1f us + bytes / %.2f GB/s" % (d["link_probe"]["latency_us"], d["link_probe"]["gbytes_per_second"])')
  printf 'round %d: link %s; 2 workers predicted %.3f measured %.3f ms/step; 3 workers predicted %.3f measured %.3f ms/step (load %s)\n' \
    "$round" "$link" "${p2[-1]}" "${m2[-1]}" "${p3[-1]}" "${m3[-1]}" "$(cut -d' ' -f1 /proc/loadavg)"
  if ((round == rounds)); then
    echo "last round's prediction:"
    "$cli" whatif --calibration "$work/c32.json" --calibration "$work/c16.json" --calibration "$work/c11.json" \
      --calibration "$work/w2.json" --workers 1,2,3
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
verdict=0
for k in 2 3; do
  declare -n predicted="p$k" measured="m$k"
  mp=$(median "${predicted[@]}") mm=$(median "${measured[@]}")
  error=$(awk -v p="$mp" -v m="$mm" 'BEGIN {printf "%+.1f", 100 * (p - m) / m}')
  echo "median of $rounds rounds, $k workers: predicted $mp ms/step, measured $mm ms/step, error $error %"
  awk -v e="$error" 'BEGIN {exit !(e <= 20 && e >= -20)}' || verdict=1
done
exit $verdict
