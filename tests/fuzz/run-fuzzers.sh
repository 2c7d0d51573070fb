#!/usr/bin/env bash
# Builds MirrorLab's libFuzzer targets (tests/fuzz/) with clang++-16 and runs each one for a
# bounded time. See tests/fuzz/README.md.
#
#   tests/fuzz/run-fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 60 s, all targets)
#
# Environment: FUZZ_BUILD_DIR (default <repo>/build-fuzz), FUZZ_CXX (default clang++-16),
# FUZZ_NO_INSTALL=1 to never call apt-get, FUZZ_RUNS=N to stop a target after N executions too
# (campaign.sh), FUZZ_JOBS (build parallelism, default: all cores), FUZZ_TIMEOUT (seconds one input
# may take before it counts as a hang, default 10).
#
# Layout under build-fuzz/:
#   seeds/<target>/    seed inputs, regenerated from the repository's fixtures on every run
#   corpus/<target>/   the growing corpus libFuzzer writes (kept between runs); the committed
#                      regression inputs (tests/fuzz/regressions/<target>/) are read too
#   crashes/<target>/  crash-*, leak-*, timeout-*, oom-* inputs (kept between runs)
#   logs/<target>.log  the fuzzer's output of the last run
# Exit status: 0 when no target found anything in this run, 1 when one did, 2 on a setup error.
set -euo pipefail

SECONDS_PER_TARGET=${1:-60}
shift || true
if ! [[ $SECONDS_PER_TARGET =~ ^[0-9]+$ ]] || (( SECONDS_PER_TARGET < 1 )); then
    echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2
    exit 2
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# The targets: tests/fuzz/targets.cmake's list (the CMake projects read it too).
mapfile -t ALL_TARGETS < <(bash "$HERE/list-targets.sh" "$HERE/targets.cmake")
(( ${#ALL_TARGETS[@]} > 0 )) || { echo "error: no targets in $HERE/targets.cmake" >&2; exit 2; }
if (( $# > 0 )); then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
for t in "${TARGETS[@]}"; do
    [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || { echo "unknown target '$t' (known: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
CXX_BIN=${FUZZ_CXX:-clang++-16}

# --- 1. Toolchain: clang-16 and its runtimes (libFuzzer, ASan, UBSan) ------------------------
have_toolchain() {
    command -v "$CXX_BIN" >/dev/null 2>&1 || return 1
    local fuzzer_lib
    fuzzer_lib=$("$CXX_BIN" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
    [[ -f $fuzzer_lib ]] && return 0
    # Newer layouts (per-target runtime directories).
    fuzzer_lib=$("$CXX_BIN" -print-runtime-dir 2>/dev/null || true)/libclang_rt.fuzzer.a
    [[ -f $fuzzer_lib ]]
}
# What the build and the reports need, installed when missing: llvm-16 has llvm-symbolizer-16,
# without which the sanitizers print stacks of bare addresses.
PACKAGES=(clang-16 libclang-rt-16-dev llvm-16 cmake make python3 nlohmann-json3-dev libzip-dev
          libsqlite3-dev libprotobuf-dev protobuf-compiler libhdf5-dev)
MISSING=()
for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || MISSING+=("$package")
done
if (( ${#MISSING[@]} > 0 )) || ! have_toolchain; then
    if [[ ${FUZZ_NO_INSTALL:-0} == 1 ]]; then
        have_toolchain || { echo "error: $CXX_BIN or its libFuzzer runtime is missing (apt-get install clang-16 libclang-rt-16-dev)" >&2; exit 2; }
        (( ${#MISSING[@]} == 0 )) || echo "warning: not installing ${MISSING[*]} (FUZZ_NO_INSTALL=1)" >&2
    else
        SUDO=()
        if (( EUID != 0 )); then
            command -v sudo >/dev/null 2>&1 || { echo "error: need root or sudo to install ${MISSING[*]}" >&2; exit 2; }
            SUDO=(sudo)
        fi
        echo "== installing ${MISSING[*]} (apt-get)"
        export DEBIAN_FRONTEND=noninteractive
        "${SUDO[@]}" apt-get update -qq >/dev/null
        "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${MISSING[@]}" >/dev/null
        have_toolchain || { echo "error: $CXX_BIN still has no libFuzzer runtime after installing" >&2; exit 2; }
    fi
fi
for tool in cmake python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "error: $tool not found" >&2; exit 2; }
done
SYMBOLIZER=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
if [[ -n $SYMBOLIZER ]]; then
    export ASAN_SYMBOLIZER_PATH=$SYMBOLIZER UBSAN_SYMBOLIZER_PATH=$SYMBOLIZER LSAN_SYMBOLIZER_PATH=$SYMBOLIZER
fi

# --- 2. Build ------------------------------------------------------------------------------
GENERATOR=()
command -v ninja >/dev/null 2>&1 && GENERATOR=(-G Ninja)
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
    echo "== configuring $BUILD"
    # No CMAKE_BUILD_TYPE on purpose: the flags come from tests/fuzz/CMakeLists.txt, and asserts
    # stay on (no -DNDEBUG), so a failed assert is a finding too.
    cmake -S "$HERE" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_CXX_COMPILER="$CXX_BIN" >/dev/null
fi
echo "== building ${TARGETS[*]}"
cmake --build "$BUILD" --parallel "${FUZZ_JOBS:-$(nproc)}" --target "${TARGETS[@]}" >"$BUILD/build.log" 2>&1 || {
    tail -n 40 "$BUILD/build.log" >&2
    echo "error: build failed (full log: $BUILD/build.log)" >&2
    exit 2
}

# --- 3. Seeds from the repository's fixtures -------------------------------------------------
rm -rf "$BUILD/seeds"
mkdir -p "$BUILD/seeds" "$BUILD/corpus" "$BUILD/crashes" "$BUILD/logs"
python3 - "$ROOT" "$BUILD/seeds" <<'PY'
import ast, glob, os, sys, zipfile

root, out = sys.argv[1], sys.argv[2]
count = {}

def seed(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("latin-1")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    count[target] = count.get(target, 0) + 1

def npy_payload(raw):
    """(header dict, bytes after the header) of a .npy file, or None."""
    if not raw.startswith(b"\x93NUMPY") or len(raw) < 10:
        return None
    major = raw[6]
    if major == 1:
        hlen, start = int.from_bytes(raw[8:10], "little"), 10
    else:
        hlen, start = int.from_bytes(raw[8:12], "little"), 12
    try:
        header = ast.literal_eval(raw[start:start + hlen].decode("latin-1"))
    except Exception:
        return None
    return header, raw[start + hlen:]

npys = []
for path in sorted(glob.glob(os.path.join(root, "tests/data/npz/*.npy"))):
    with open(path, "rb") as f:
        npys.append((os.path.basename(path), f.read()))
for path in sorted(glob.glob(os.path.join(root, "tests/data/npz/*.npz"))):
    base = os.path.basename(path)
    with open(path, "rb") as f:
        seed("fuzz_zip_npz", base, f.read())
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            npys.append((base[:-4] + "__" + info.filename, z.read(info)))
for path in sorted(glob.glob(os.path.join(root, "tests/data/keras/*.keras"))):
    base = os.path.basename(path)
    with open(path, "rb") as f:
        seed("fuzz_keras", base, b"\x00" + f.read())
    with zipfile.ZipFile(path) as z:
        seed("fuzz_keras", base + "__weights", b"\x01" + z.read("model.weights.h5"))
# h5py's files in both formats (tests/data/hdf5): version-2 object headers, link messages, dense link
# storage (fractal heaps, v2 B-trees), compact and chunked layouts, continuation blocks, a two-level
# v1 B-tree.
for path in sorted(glob.glob(os.path.join(root, "tests/data/hdf5/*.h5"))):
    with open(path, "rb") as f:
        seed("fuzz_keras", "hdf5__" + os.path.basename(path), b"\x01" + f.read())
for name, raw in npys:
    seed("fuzz_npy", name, raw)
    parsed = npy_payload(raw)
    if parsed and "O" in str(parsed[0].get("descr", "")):
        seed("fuzz_pickle", name[:-4] + ".pkl", parsed[1])

for path in sorted(glob.glob(os.path.join(root, "tests/data/sgml/*/*.sgm.in"))):
    parts = path.split(os.sep)
    with open(path, "rb") as f:
        seed("fuzz_sgml", parts[-2] + "__" + parts[-1][:-3], f.read())
seed("fuzz_sgml", "minimal.sgm",
     "<REUTERS><TOPICS><D>earn</D></TOPICS><BODY>Profit ROSE 3 pct.</BODY></REUTERS>\n"
     "<REUTERS><TOPICS><D>acq</D><D>earn</D></TOPICS><TEXT TYPE=\"BRIEF\"></TEXT></REUTERS>\n"
     "<REUTERS><TOPICS></TOPICS><BODY>No &lt;topic&gt; \xfc.\nReuter\n&#3;</BODY></REUTERS>\n")

# CSV: byte 0 holds the options (see fuzz_csv.cpp), the rest is the file.
csv = {
    "header_auto.csv": (0x00, "label,text\nsports,the match was won\npolitics,\"a vote, at last\"\nsports,\"he said \"\"goal\"\"\"\n"),
    "ints_no_header.csv": (0x00, "1,first text\n2,second text\n1,third\n10,fourth\n"),
    "title_row.csv": (0x00, "category,body\n1,a\n2,b\n1,c\n2,d\n"),
    "rule4.csv": (0x00, "topic,x\nA,a\nB,b\nA,c\nB,d\n"),
    "tsv.tsv": (0x08, "label\ttext\npos\tgood film\nneg\tbad film\n"),
    "semicolon.csv": (0x10, "label;text\na;x y\nb;z\n"),
    "noquote_present.csv": (0x03, "label,text\n\"a,b\",c\nd,e\n"),
    "absent_index.csv": (0x44, "3,one,x\n4,two,y\n3,three,z\n"),
    "named.csv": (0x82 | 0x00, "id,body,topic\n1,hello world,greet\n2,bye now,leave\n\n3,\"multi\nline\",greet\n"),
    "crlf_bom.csv": (0x00, "\xef\xbb\xbflabel,text\r\nx,a b\r\ny,c d\r\n"),
    "open_quote.csv": (0x00, "label,text\na,\"never closed\nb,c\n"),
}
for name, (flags, text) in csv.items():
    seed("fuzz_csv", name, bytes([flags]) + text.encode("latin-1"))

for path in [os.path.join(root, "resources/presets/reuters_tutorial.json")] + \
        sorted(glob.glob(os.path.join(root, "tests/data/*.json"))) + \
        [os.path.join(root, "tests/data/npz/reuters_small_word_index.json")]:
    if os.path.exists(path):
        with open(path, "rb") as f:
            seed("fuzz_json_model", os.path.basename(path), f.read())
seed("fuzz_json_model", "keras_sequential.json",
     '{"class_name": "Sequential", "config": {"name": "seq", "layers": ['
     '{"class_name": "InputLayer", "config": {"batch_input_shape": [null, 16]}},'
     '{"class_name": "Embedding", "config": {"input_dim": 100, "output_dim": 4}},'
     '{"class_name": "Conv1D", "config": {"filters": 8, "kernel_size": [4], "padding": "same", "activation": "tanh", "use_bias": false}},'
     '{"class_name": "MaxPooling1D", "config": {"pool_size": [3], "strides": [2], "padding": "same"}},'
     '{"class_name": "Dropout", "config": {"rate": 0.25}},'
     '{"class_name": "GlobalMaxPooling1D", "config": {}},'
     '{"class_name": "Activation", "config": {"activation": "relu"}},'
     '{"class_name": "ReLU", "config": {}},'
     '{"class_name": "Dense", "config": {"units": 3, "activation": "sigmoid"}}]}}')
seed("fuzz_json_model", "values.json",
     '[null, true, false, 0, -0, 1.5e300, -2.25e-300, 9223372036854775807, -9223372036854775808,'
     ' 18446744073709551616, "esc \\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00", {"a": {"b": [[]]}}]')

# fuzz_tensorboard_events: the event files Keras wrote (tests/data/tensorboard).
for path in sorted(glob.glob(os.path.join(root, "tests/data/tensorboard/*/*/events.out.tfevents.*"))):
    with open(path, "rb") as f:
        seed("fuzz_tensorboard_events", path.split(os.sep)[-3] + "_" + path.split(os.sep)[-2] + ".tfevents", f.read())

# fuzz_event_reader: byte 0 = piece size, then `train --json` lines mixed with other output.
seed("fuzz_event_reader", "events.jsonl", b"\x07" +
     b'{"type":"train_begin","epochs":2,"steps_per_epoch":5,"validation_steps":2,"replicas":2,"global_batch":32,'
     b'"devices":["/device:CPU:0","/device:CPU:1"],"strategy":"MirroredStrategy","all_reduce":"ring","parameters":9}\n'
     b'{"type":"step_end","epoch":1,"step":1,"steps":5,"global_step":1,"loss":3.8,"accuracy":null,"top5":0.5,'
     b'"replicas":[{"shard_size":16,"forward_ms":0.5,"timing":"wall_clock","weights_checksum":"00000000deadbeef"}]}\r\n'
     b'mpirun noticed that process rank 1 exited on signal 9 (Killed).\n'
     b'{"type":"memory","devices":[{"device":"/device:CPU:0","bytes_in_use":7,"peak_bytes":8,"limit_bytes":0}]}\n'
     b'{"type":"finished","reason":"stopped","stop":{"phase":"validation","epoch":2,"validation_step":1},"text":"x"}')

# fuzz_trainer: byte 0 = options (see fuzz_trainer.cpp), the model JSON, a NUL byte, the data.
def small_model(input_length, layers):
    return ('{"name": "tiny", "input_length": %d, "layers": [%s]}' % (input_length, ", ".join(
        '{"class_name": "%s", "config": {%s}}' % (cls, cfg) for cls, cfg in layers))).encode()
conv_model = small_model(8, [("Embedding", '"input_dim": 40, "output_dim": 4'),
                             ("Conv1D", '"filters": 4, "kernel_size": 3, "activation": "relu"'),
                             ("MaxPooling1D", '"pool_size": 2'),
                             ("Flatten", ''),
                             ("Dense", '"units": 3, "activation": "softmax"')])
pool_model = small_model(6, [("Embedding", '"input_dim": 30, "output_dim": 3'),
                             ("Conv1D", '"filters": 3, "kernel_size": 2, "padding": "same", "activation": "tanh", "use_bias": false'),
                             ("GlobalMaxPooling1D", ''),
                             ("Dropout", '"rate": 0.5'),
                             ("Dense", '"units": 2')])
csv_rows = (b"label,text\nsports,the match was won\npolitics,a vote at last\nsports,a goal in the match\n"
            b"politics,the vote was close\nsports,won the cup\npolitics,\"a law, passed\"\n")
def tokens(num_classes, vocabulary, samples):
    out = bytes([num_classes]) + vocabulary.to_bytes(2, "little")
    for label, validation, ids in samples:
        out += bytes([label, (0x80 if validation else 0) | len(ids)])
        out += b"".join(i.to_bytes(2, "little") for i in ids)
    return out
token_data = tokens(3, 40, [(0, False, [1, 5, 9, 12]), (1, False, [1, 7, 7, 30, 2]), (2, False, [3, 4]),
                            (1, False, [39, 38, 1]), (0, True, [1, 5, 9]), (2, True, [3, 4, 4])])
seed("fuzz_trainer", "csv_nadam.bin", bytes([0x00]) + conv_model + b"\x00" + csv_rows)
seed("fuzz_trainer", "csv_sgd_batch4_logits.bin", bytes([0x04 | 0x08 | 0x60]) + pool_model + b"\x00" + csv_rows)
seed("fuzz_trainer", "tokens_adam.bin", bytes([0x01 | 0x02 | 0x20]) + conv_model + b"\x00" + token_data)
seed("fuzz_trainer", "tokens_rmsprop_oov_error_stats.bin",
     bytes([0x01 | 0x06 | 0x10 | 0x80]) + conv_model + b"\x00" +
     tokens(3, 60, [(0, False, [1, 50, 9]), (1, False, [2, 3]), (2, False, [45]), (1, True, [59, 1])]))
# Sizes at the edge of int64: the largest Embedding whose parameter count still fits (3 * 2^61).
edge_model = small_model(4, [("Embedding", '"input_dim": 2305843009213693952, "output_dim": 3'),
                             ("GlobalMaxPooling1D", ''),
                             ("Dense", '"units": 2, "activation": "softmax"')])
seed("fuzz_trainer", "tokens_edge_sizes.bin", bytes([0x01]) + edge_model + b"\x00" + token_data)
seed("fuzz_json_model", "edge_sizes.json", edge_model)
seed("fuzz_trainer", "tokens_golden_a.bin", bytes([0x01 | 0x40]) +
     open(os.path.join(root, "tests/data/keras_golden_a.json"), "rb").read() + b"\x00" +
     tokens(7, 20, [(k % 7, k % 4 == 0, [(k * 7 + j) % 20 for j in range(12)]) for k in range(20)]))

print("   seeds: " + ", ".join(f"{k} {v}" for k, v in sorted(count.items())))
PY

# --- 4. Run --------------------------------------------------------------------------------
# fuzz_sgml and fuzz_csv write every input to a file: give them a folder in memory, removed at the
# end (libFuzzer leaves with _Exit, so the targets cannot clean up after themselves).
FUZZ_TMP=$(mktemp -d -p /dev/shm mirrorlab-fuzz.XXXXXX 2>/dev/null || mktemp -d -t mirrorlab-fuzz.XXXXXX)
trap 'rm -rf "$FUZZ_TMP"' EXIT
declare -A RUNS COV FT RESULT TIME
FAILED=0
for t in "${TARGETS[@]}"; do
    mkdir -p "$BUILD/corpus/$t" "$BUILD/crashes/$t"
    log=$BUILD/logs/$t.log
    stamp=$BUILD/logs/$t.start
    touch "$stamp"
    sleep 1  # artifacts of this run are strictly newer than the stamp
    dict=()
    [[ -f $HERE/dicts/$t.dict ]] && dict=(-dict="$HERE/dicts/$t.dict")
    regressions=()
    [[ -d $HERE/regressions/$t ]] && regressions=("$HERE/regressions/$t")
    runs=()
    [[ -n ${FUZZ_RUNS:-} ]] && runs=(-runs="$FUZZ_RUNS")
    # A target's own libFuzzer flags, each with its reason, in flags/<target>.flags.
    flags=()
    [[ -f $HERE/flags/$t.flags ]] && read -r -a flags <<<"$(sed 's/#.*//' "$HERE/flags/$t.flags" | tr '\n' ' ')"
    echo "== $t: ${SECONDS_PER_TARGET}s${FUZZ_RUNS:+ or $FUZZ_RUNS runs} (log: $log)"
    started=$(date +%s)
    set +e
    # The corpus directory comes first: libFuzzer writes new inputs there, never into seeds/.
    # An allocation too large to make is a finding (ASan's allocation-size-too-big). No comment may
    # sit inside the continued command below: it would end the command there.
    TMPDIR=$FUZZ_TMP \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$HERE/lsan.supp} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$BUILD/$t" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-10}" \
        -print_final_stats=1 "${dict[@]}" "${runs[@]}" "${flags[@]}" \
        -artifact_prefix="$BUILD/crashes/$t/" \
        "$BUILD/corpus/$t" "$BUILD/seeds/$t" "${regressions[@]}" >"$log" 2>&1
    rc=$?
    set -e
    TIME[$t]=$(( $(date +%s) - started ))
    RUNS[$t]=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)
    if [[ -z ${RUNS[$t]} ]]; then RUNS[$t]=$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#'); fi
    COV[$t]=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || true)
    FT[$t]=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || true)
    found=$(find "$BUILD/crashes/$t" -maxdepth 1 -type f -newer "$stamp" \
                 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    if [[ -n $found ]]; then
        kinds=$(for f in $found; do basename "$f" | cut -d- -f1; done | sort -u | paste -sd, -)
        RESULT[$t]="FOUND $kinds: $(echo "$found" | head -n 1)"
        FAILED=1
    elif (( rc != 0 )); then
        RESULT[$t]="FAILED (exit $rc, no artifact; see $log)"
        FAILED=1
    else
        RESULT[$t]="ok"
    fi
    rm -f "$stamp"
done

# --- 5. Summary ----------------------------------------------------------------------------
echo
printf '%-16s %12s %8s %8s %8s  %s\n' target runs seconds cov ft result
for t in "${TARGETS[@]}"; do
    printf '%-16s %12s %8s %8s %8s  %s\n' "$t" "${RUNS[$t]:-?}" "${TIME[$t]:-?}" "${COV[$t]:-?}" "${FT[$t]:-?}" "${RESULT[$t]}"
done
if (( FAILED )); then
    echo
    echo "A target found a problem. Reproduce: $BUILD/<target> <file under $BUILD/crashes/<target>/>"
fi
exit "$FAILED"
