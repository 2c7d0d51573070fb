#!/usr/bin/env bash
# Prints the libFuzzer targets named in tests/fuzz/targets.cmake, one per line. The list is a
# CMake set() that may span lines (and carry # comments), so it is read the way CMake reads it
# rather than as one line: everything between "set(MIRRORLAB_FUZZ_TARGETS" and the closing ")".
set -euo pipefail
file=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/targets.cmake}
awk '
  { sub(/#.*/, "") }
  !inside && /set\(MIRRORLAB_FUZZ_TARGETS/ { inside = 1; sub(/.*set\(MIRRORLAB_FUZZ_TARGETS/, "") }
  inside {
    done = sub(/\).*/, "")
    for (i = 1; i <= NF; i++) print $i
    if (done) exit
  }
' "$file"
