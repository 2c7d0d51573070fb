#!/usr/bin/env bash
# oneDNN's convolutions next to ours, on the tutorial's two Conv1D shapes, one thread (issue #17:
# "re-measure oneDNN on this ISA: the fast path is chosen by measurement per instruction set").
#
# Compiles packaging/bench/onednn_conv.cpp and onednn_block.cpp against Debian's oneDNN (libdnnl-dev,
# never part of the build) and the built libmirrorlab_core, then runs both once per instruction set
# this CPU has, ours capped by MIRRORLAB_CPU_ISA and oneDNN's by ONEDNN_MAX_CPU_ISA to the same one.
# onednn_conv: per shape, the convolution alone, forward and backward (grad x, grad kernel and bias)
# in ms for our kernels, oneDNN with Keras' layouts and oneDNN with its own (reorders not timed).
# onednn_block: the ops training runs, Conv1D + ReLU + MaxPooling1D(2) forward and backward, ours
# fused against oneDNN's primitives (the ReLU as the convolution's post-op), with the reorders into
# and out of oneDNN's layouts timed and shown apart. Every oneDNN result is checked against ours.
# Exit status 0, 1 when a oneDNN result differs from ours, 77 without libdnnl-dev.
#
#   bash packaging/bench/compare_onednn.sh            # every ISA this CPU runs, 101 runs each
#   ISAS=avx2 RUNS=301 bash packaging/bench/compare_onednn.sh
#
# Environment: BUILD (default build: where libmirrorlab_core.so is), ISAS (default: avx512 and
# avx2 where the CPU has them), RUNS (101).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$root/build}
runs=${RUNS:-101}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -f /usr/include/oneapi/dnnl/dnnl.hpp ]; then
  echo "compare_onednn: oneDNN is not installed (apt-get install -y libdnnl-dev); skipping" >&2
  exit 77
fi
if [ ! -f "$build/core/libmirrorlab_core.so" ]; then
  echo "compare_onednn: $build/core/libmirrorlab_core.so not found; build first (bash packaging/mirrorlab.sh" \
    "build, or cmake --build build) or set BUILD" >&2
  exit 2
fi
for program in onednn_conv onednn_block; do
  g++ -O2 -std=c++20 -I"$root" "$root/packaging/bench/$program.cpp" -o "$work/$program" \
    -L"$build/core" -lmirrorlab_core -ldnnl -Wl,-rpath,"$build/core"
done

if [ -z "${ISAS:-}" ]; then
  ISAS=""
  grep -qw avx512f /proc/cpuinfo && ISAS="avx512"
  grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && ISAS="$ISAS avx2"
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
status=0
for isa in $ISAS; do
  case "$isa" in
    avx512) onednn_isa=AVX512_CORE ;;
    avx2) onednn_isa=AVX2 ;;
    *) echo "compare_onednn: unknown ISA '$isa' (avx512, avx2)" >&2; exit 2 ;;
  esac
  echo "== $isa"
  for program in onednn_conv onednn_block; do
    MIRRORLAB_CPU_ISA=$isa ONEDNN_MAX_CPU_ISA=$onednn_isa DNNL_MAX_CPU_ISA=$onednn_isa OMP_NUM_THREADS=1 \
      MIRRORLAB_CPU_THREADS=1 "$work/$program" "$runs" || status=1
  done
done
exit $status
