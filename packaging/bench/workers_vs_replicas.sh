#!/usr/bin/env bash
# Two workers of one replica each (`mpirun -np 2 mirrorlab-cli bench --devices cpu`) next to one
# worker of two replicas (`mirrorlab-cli bench --devices cpu:2`) on this host (issue #18: the
# workers must reach >= 85 % of the replicas' throughput on the 2-core machine). Runs ROUNDS
# interleaved rounds of both, each `bench --epochs EPOCHS --scaling 0` on the same data, and prints
# every round's samples/s (median over the timed steps) and ms/step, the medians of the rounds, and
# the workers' throughput as a share of the replicas'.
#
#   bash packaging/bench/workers_vs_replicas.sh [BUILD_DIR]     # ROUNDS=5 EPOCHS=2 by default
#
# DATA (default synthetic) is any --data spec. Wall times: run it on idle cores; on a shared
# machine WAIT_IDLE=90 starts each round only once the CPUs were at least 90 % idle for 3 s (it
# waits at most 30 minutes in all). Exit status 0 when the workers reach 85 %, 1 when they do not,
# 2 on a set-up error.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || exit 2
cli=$build/app/mirrorlab-cli
rounds=${ROUNDS:-5}
epochs=${EPOCHS:-2}
data=${DATA:-synthetic}
command -v mpirun >/dev/null || { echo "mpirun is missing (apt-get install openmpi-bin)" >&2; exit 2; }
[ -x "$cli" ] || { echo "no $cli: build first" >&2; exit 2; }
# As root (CI, containers) Open MPI wants both; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bench=(bench --epochs "$epochs" --scaling 0 --data "$data" --json)

# samples/s and ms/step of one bench's JSON line
rate_of() { python3 -c 'import json,sys; r=json.loads(sys.stdin.read())["run"]; print("%.1f %.3f" % (r["samples_per_second"], r["ms_per_step"]))'; }

# shellcheck source=packaging/bench/wait_idle.sh
source "$root/packaging/bench/wait_idle.sh"

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $(mpirun --version | head -1)"
replicas=() workers=()
for ((round = 1; round <= rounds; ++round)); do
  wait_until_idle
  one=$("$cli" "${bench[@]}" --devices cpu:2 2>/dev/null | rate_of) || { echo "bench --devices cpu:2 failed" >&2; exit 2; }
  two=$(mpirun --oversubscribe -np 2 "$cli" "${bench[@]}" --devices cpu 2>/dev/null | rate_of) ||
    { echo "mpirun -np 2 bench --devices cpu failed" >&2; exit 2; }
  replicas+=("${one%% *}")
  workers+=("${two%% *}")
  echo "round $round: 1 worker x cpu:2: ${one% *} samples/s, ${one#* } ms/step;  2 workers x cpu: ${two% *} samples/s, ${two#* } ms/step" \
    "(load average $(cut -d' ' -f1 /proc/loadavg))"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
m_one=$(median "${replicas[@]}")
m_two=$(median "${workers[@]}")
share=$(awk -v a="$m_two" -v b="$m_one" 'BEGIN {printf "%.1f", 100 * a / b}')
echo "median of $rounds rounds: 1 worker x 2 replicas $m_one samples/s; 2 workers x 1 replica $m_two samples/s = $share %"
awk -v s="$share" 'BEGIN {exit !(s >= 85)}'
