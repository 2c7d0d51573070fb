#!/usr/bin/env bash
# Sanitizer builds of MirrorLab for CI (issue #13). Two parts, each a separate g++ build tree:
#
#   asan  build-asan/: AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer), core, the CLI
#         and every non-GUI CTest suite (MIRRORLAB_BUILD_UI=OFF), including the fuzz regression
#         replays and the emulated CUDA plugin's suites.
#   tsan  build-tsan/: ThreadSanitizer, the suites that run threads: mirrored strategy, step
#         barrier and replica threads, thread pool (kernels), data pipeline, trainer, step stats,
#         scaling, the CLI, and the Qt training controller and panels (MIRRORLAB_BUILD_UI=ON).
#
#   bash tests/sanitizers/run.sh [asan] [tsan]        (default: both)
#
# Before the suites, each part runs a canary (a use after free, a signed overflow, a data race) that
# the sanitizer must report, so a broken set-up cannot pass silently.
#
# Measured on the 2-core Debian 12 machine from clean build directories: 7m47s in all (asan+ubsan
# 5m18s = build 4m30s + tests 48s; tsan 2m29s = build 2m06s + tests 23s) with other builds
# beside it (load ~2.5); with four builds beside it (load 8) the asan build alone took 11 min.
# Reruns with the build directories kept take ~1m10s.
#
# Environment: JOBS (default: all cores), SANITIZERS_FULL=1 adds test_gpu_ops_emulated to the asan
# part (it passes; 5-13 min more, see below), SANITIZERS_NO_INSTALL=1 never calls apt-get.
# Exit status: 0 when everything passed, 1 when a suite, canary or build failed, 2 on a set-up error.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tests/sanitizers
jobs=${JOBS:-$(nproc)}
parts=("$@")
((${#parts[@]} > 0)) || parts=(asan tsan)
for part in "${parts[@]}"; do
  case "$part" in
    asan | tsan) ;;
    *) echo "usage: bash tests/sanitizers/run.sh [asan] [tsan]" >&2; exit 2 ;;
  esac
done

# --- 1. System packages: the build's (as packaging/mirrorlab.sh) and GCC 12's sanitizer runtimes --
packages=(
  build-essential cmake
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools
  libgl-dev fonts-dejavu-core fonts-wqy-microhei zlib1g-dev libcli11-dev nlohmann-json3-dev libzip-dev
  libsqlite3-dev libprotobuf-dev protobuf-compiler libhdf5-dev
  libasan8 libubsan1 libtsan2
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  if [ "${SANITIZERS_NO_INSTALL:-0}" = 1 ]; then
    echo "sanitizers: missing packages: ${missing[*]} (SANITIZERS_NO_INSTALL=1)" >&2
    exit 2
  fi
  echo "sanitizers: installing ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi

# --- 2. Options -----------------------------------------------------------------------------------
# -O1 -g: usable stacks at a bearable speed. Debug configuration, so asserts stay on and no
# _FORTIFY_SOURCE (the top CMakeLists adds it to Release/RelWithDebInfo; fortified libc calls are
# checked by glibc instead of the sanitizer). _GLIBCXX_ASSERTIONS checks std::vector/span indexing
# inside the capacity, which ASan cannot see.
asan_flags="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow -fno-omit-frame-pointer"
tsan_flags="-fsanitize=thread -fno-omit-frame-pointer"
# No allocator_may_return_null: an allocation too large to make is a finding (MirrorLab bounds each
# by the bytes that must hold it). It was set while libhdf5 read weight files and malloc()ed what a
# damaged header claimed; our own reader (core/export/hdf5_reader.cpp) replaced it.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_string_checks=1:print_summary=1"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
# Instrumented code runs several times slower: a Qt Test function (the emulated GPU's mirrored steps
# in test_gpu_step_budget, for one) may take longer than QtTest's default 5 minutes on 2 loaded cores.
export QTEST_FUNCTION_TIMEOUT=1200000
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:print_summary=1"
# Qt is not built with TSan: ignore_noninstrumented_modules=1 stops TSan from judging what Qt does
# inside its own libraries, and tsan.supp hides the hand-over of queued calls (see that file).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:ignore_noninstrumented_modules=1:suppressions=$here/tsan.supp"

# Excluded from the asan part, with the reason:
#   install_layout         checks that installed binaries name no source or build path; sanitizer
#                          runtimes keep source file names in the binary on purpose (UBSan's source
#                          locations, ASan's global descriptors), so it cannot pass here. It runs
#                          in the normal build.
#   test_gpu_ops_emulated  passed under ASan (the emulated plugin's 1 TiB PROT_NONE reservation
#                          does not collide with ASan's shadow; since issue #20 there is a second one
#                          for guarded storage, which test_cuda_emulator runs with here; the full suite
#                          has not been rerun under ASan since), but at -O1 with checks, every
#                          kernel run one thread at a time, it takes 310 s on a quiet machine and
#                          800 s beside other builds: more than the rest of this script together.
#                          SANITIZERS_FULL=1 adds it; test_emulated_gpus still runs the emulated
#                          plugin (gpu/'s code, NCCL, virtual GPUs) under ASan.
asan_exclude='^(install_layout|test_gpu_ops_emulated)$'
if [ "${SANITIZERS_FULL:-0}" = 1 ]; then asan_exclude='^(install_layout)$'; fi
# The threaded suites for the tsan part (bench_smoke: test_bench_smoke runs mirrorlab-cli bench on two replicas).
tsan_tests=(test_mirrored test_kernels test_data test_trainer test_run_store test_step_stats test_scaling test_step_allocations
            test_cli bench_smoke test_ui_training test_ui_step_view test_ui_devices test_ui_main_window)

total_passed=0
total_failed=0
elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# A program with a bug the sanitizer must report; $1 part, $2 flags, $3 expected text, $4 source.
canary() {
  local dir=$root/build-$1/canary
  mkdir -p "$dir"
  printf '%s\n' "$4" >"$dir/canary.cpp"
  if ! g++ -std=c++20 -O1 -g $2 -pthread "$dir/canary.cpp" -o "$dir/canary" 2>"$dir/canary.log"; then
    echo "  canary: does not compile:" >&2
    cat "$dir/canary.log" >&2
    return 1
  fi
  { "$dir/canary" >"$dir/canary.log" 2>&1; } 2>/dev/null || true  # (no "Aborted" line from bash)
  if ! grep -q "$3" "$dir/canary.log"; then
    echo "  canary: the sanitizer did not report '$3':" >&2
    tail -n 20 "$dir/canary.log" >&2
    return 1
  fi
}

# Configures and builds; $1 part, $2 flags, $3 UI ON/OFF, then the targets (none: all).
build() {
  local part=$1 flags=$2 ui=$3
  shift 3
  local dir=$root/build-$part
  mkdir -p "$dir"
  cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" \
    "-DCMAKE_CXX_FLAGS=$flags -D_GLIBCXX_ASSERTIONS" "-DCMAKE_EXE_LINKER_FLAGS=$flags" \
    "-DCMAKE_SHARED_LINKER_FLAGS=$flags" "-DCMAKE_MODULE_LINKER_FLAGS=$flags" \
    -DMIRRORLAB_BUILD_UI="$ui" -DMIRRORLAB_BUILD_CUDA=OFF -DMIRRORLAB_WERROR=OFF >"$dir/sanitizers-configure.log" 2>&1 ||
    { tail -n 30 "$dir/sanitizers-configure.log" >&2; return 1; }
  local targets=()
  for target in "$@"; do targets+=(--target "$target"); done
  cmake --build "$dir" -j "$jobs" "${targets[@]}" >"$dir/sanitizers-build.log" 2>&1 ||
    { tail -n 40 "$dir/sanitizers-build.log" >&2; return 1; }
}

# Runs CTest; $1 part, then ctest's selection. Sets passed/failed.
run_tests() {
  local dir=$root/build-$1
  shift
  local log=$dir/sanitizers-ctest.log
  ctest --test-dir "$dir" -j "$jobs" --output-on-failure --timeout 1500 "$@" >"$log" 2>&1 || true
  local summary
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -z "$summary" ]; then
    echo "  ctest printed no summary (log: $log)" >&2
    tail -n 30 "$log" >&2
    passed=0
    failed=1
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
  passed=$(($(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$summary") - failed))
  if ((failed > 0)); then
    # The failing suites' output: the sanitizer report and its stack.
    sed -n '/The following tests FAILED/,$p' "$log" >&2
    grep -n -E 'ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: LeakSanitizer|FAIL!|QFATAL|   Loc: |Timeout|Exception|Subprocess aborted' "$log" | head -n 40 >&2 || true
    echo "  full output: $log" >&2
  fi
}

part_asan() {
  local start=$SECONDS
  local canary_ok=1
  canary asan "$asan_flags" "heap-use-after-free" '
int main(int argc, char**) { int* p = new int[4]; p[0] = argc; delete[] p; return p[argc - 1]; }' || canary_ok=0
  canary asan "$asan_flags" "signed integer overflow" '#include <climits>
int main(int argc, char**) { int x = INT_MAX - 1 + argc; return x + argc; }' || canary_ok=0
  if ! build asan "$asan_flags" OFF; then
    echo "asan+ubsan: build FAILED after $(elapsed $((SECONDS - start)))"
    total_failed=$((total_failed + 1))
    return
  fi
  local built=$SECONDS
  run_tests asan -E "$asan_exclude"
  if ((canary_ok == 0)); then failed=$((failed + 1)); fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  echo "asan+ubsan: $passed passed, $failed failed$( ((canary_ok)) || echo ' (canary not reported)') -" \
    "$(elapsed $((SECONDS - start))) (build $(elapsed $((built - start))), tests $(elapsed $((SECONDS - built))))"
}

part_tsan() {
  local start=$SECONDS
  local canary_ok=1
  canary tsan "$tsan_flags" "data race" '#include <thread>
int counter = 0;
int main() { std::thread a([] { for (int i = 0; i < 100000; ++i) ++counter; });
             for (int i = 0; i < 100000; ++i) ++counter; a.join(); return counter == 0; }' || canary_ok=0
  local targets=()
  for t in "${tsan_tests[@]}"; do
    if [ "$t" = bench_smoke ]; then targets+=(mirrorlab-cli test_bench_smoke); else targets+=("$t"); fi
  done
  if ! build tsan "$tsan_flags" ON "${targets[@]}"; then
    echo "tsan: build FAILED after $(elapsed $((SECONDS - start)))"
    total_failed=$((total_failed + 1))
    return
  fi
  local built=$SECONDS
  local regex
  regex="^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
  run_tests tsan -R "$regex"
  if ((canary_ok == 0)); then failed=$((failed + 1)); fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  echo "tsan: $passed passed, $failed failed$( ((canary_ok)) || echo ' (canary not reported)') -" \
    "$(elapsed $((SECONDS - start))) (build $(elapsed $((built - start))), tests $(elapsed $((SECONDS - built))))"
}

for part in "${parts[@]}"; do
  "part_$part"
done
echo "sanitizers: $total_passed passed, $total_failed failed"
((total_failed == 0))
