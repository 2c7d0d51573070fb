#!/usr/bin/env bash
# CTest: MirrorLab installed the way the .deb installs it (cmake --install into a staging root
# with the build's /usr prefix) runs from there and needs nothing of the source or build tree.
#   bash tests/install_layout.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail() { echo "install_layout: FAIL: $*" >&2; exit 1; }

DESTDIR=$stage cmake --install "$build_dir" --component main >/dev/null
if grep -q '^MIRRORLAB_HAVE_CUDA:INTERNAL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null ||
   [ -f "$build_dir/gpu/libmirrorlab_cuda.so" ]; then
  DESTDIR=$stage cmake --install "$build_dir" --component cuda >/dev/null
fi
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build_dir/CMakeCache.txt")
bin=$stage$prefix/bin
[ -x "$bin/mirrorlab-cli" ] || fail "no $prefix/bin/mirrorlab-cli installed"

# The installed programs run, and find the installed plugin (not the build tree's) when there is one.
version=$(cd "$stage" && "$bin/mirrorlab-cli" --version)
echo "$version"
# Without a GPU the driver probe would keep the plugin closed; the emulator's stand-in driver says
# there are GPUs, so that the installed plugin is opened (its CUDA runtime then finds no driver).
stand_in=$build_dir/tests/cuda_emulation/libmirrorlab_cuda_driver.so
driver=()
[ -f "$stand_in" ] && driver=(MIRRORLAB_CUDA_DRIVER_LIBRARY="$stand_in")
gpu_line=$(cd "$stage" && env -u MIRRORLAB_PLUGIN_DIR "${driver[@]}" "$bin/mirrorlab-cli" devices | grep '^GPU')
echo "$gpu_line"
plugin=$(find "$stage" -name libmirrorlab_cuda.so)
compute=""
if [ -n "$plugin" ]; then
  echo "installed plugin: ${plugin#"$stage"}"
  case "$gpu_line" in
    *"not installed"* | *"could not be loaded"* | *"not a MirrorLab plugin"* | *"was not loaded"*)
      fail "the installed plugin was not used: $gpu_line" ;;
  esac
  # The plugin loads its compute module (cuBLAS, cuDNN, NCCL) from its own folder when a GPU
  # trains; it must be installed there, and the plugin itself must not need those libraries.
  compute=$(dirname "$plugin")/libmirrorlab_cuda_compute.so
  [ -f "$compute" ] || fail "the plugin is installed without its compute module (no ${compute#"$stage"})"
  echo "installed compute module: ${compute#"$stage"}"
  needed=$(readelf -d "$plugin" | grep -E 'NEEDED.*\[lib(cublas|cudnn|nccl)' || true)
  [ -z "$needed" ] || fail "the plugin links cuBLAS, cuDNN or NCCL itself: $needed"
fi
(cd "$stage" && "$bin/mirrorlab-cli" train --data synthetic:64:16 --epochs 1 --steps-per-epoch 2 --tensorboard "$stage/tb" >/dev/null) ||
  fail "mirrorlab-cli train did not run from the installed tree"
# TensorBoard files need protobuf's runtime (libprotobuf-lite32, a Depends of the .deb) at run time.
ls "$stage"/tb/train/events.out.tfevents.*.v2 "$stage"/tb/validation/events.out.tfevents.*.v2 >/dev/null ||
  fail "mirrorlab-cli train --tensorboard wrote no event files from the installed tree"

# One engine library: the programs and the plugin load the installed libmirrorlab_core.so, and the
# plugin holds no copy of it (no definition of core's classes in its symbol table; the installed
# tree is not stripped, so a static copy's local symbols would show).
core_lib=$(find "$stage" -name libmirrorlab_core.so)
[ -n "$core_lib" ] || fail "libmirrorlab_core.so is not installed"
echo "installed engine library: ${core_lib#"$stage"}"
for binary in "$bin/mirrorlab-cli" ${plugin:+"$plugin"} ${compute:+"$compute"}; do
  readelf -d "$binary" | grep -q 'NEEDED.*\[libmirrorlab_core.so\]' || fail "${binary#"$stage"} does not link libmirrorlab_core.so"
done
resolved=$(cd "$stage" && ldd "$bin/mirrorlab-cli" | sed -n 's/.*libmirrorlab_core.so => \([^ ]*\).*/\1/p')
[ "$(realpath "$resolved")" = "$(realpath "$core_lib")" ] ||
  fail "mirrorlab-cli resolves libmirrorlab_core.so to '$resolved', not the installed $core_lib"
for module in ${plugin:+"$plugin"} ${compute:+"$compute"}; do
  # Functions (T/t, not the weak W of inline and template code) that both define.
  copies=$(comm -12 <(nm --defined-only "$module" | awk '$2 ~ /^[Tt]$/ {print $3}' | sort -u) \
                    <(nm -D --defined-only "$core_lib" | awk '$2 == "T" {print $3}' | sort -u) | wc -l)
  [ "$copies" -eq 0 ] || fail "${module#"$stage"} defines $copies of libmirrorlab_core's functions itself (a private copy of core)"
done

# Nothing of the source or build tree is compiled into what is installed.
leaks=$(find "$stage" -type f \( -perm -u+x -o -name '*.so' \) -print0 |
        xargs -0 strings -a | grep -F -e "$(realpath "$source_dir")" -e "$(realpath "$build_dir")" | sort -u | head -n 5 || true)
[ -z "$leaks" ] || fail "installed binaries name the source or build tree: $leaks"

# Desktop integration and man pages are where a desktop and man(1) look for them.
for file in share/applications/org.mirrorlab.MirrorLab.desktop share/metainfo/org.mirrorlab.MirrorLab.metainfo.xml \
            share/icons/hicolor/scalable/apps/org.mirrorlab.MirrorLab.svg share/man/man1/mirrorlab-cli.1.gz \
            share/mirrorlab/presets/reuters_tutorial.json; do
  if [[ $file == *desktop* || $file == *metainfo* || $file == *svg* ]] && [ ! -x "$bin/mirrorlab" ]; then continue; fi
  [ -f "$stage$prefix/$file" ] || fail "$prefix/$file is not installed"
done
(cd "$stage" && "$bin/mirrorlab-cli" summary --model "$stage$prefix/share/mirrorlab/presets/reuters_tutorial.json" |
  grep -q 'Total params: 332,856') || fail "the installed preset is not the tutorial model"
# The installed window, started where there is no display (an ssh session), says so and names the
# headless way instead of Qt's abort about platform plugins; its help and version still print.
if [ -x "$bin/mirrorlab" ]; then
  no_display=(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM LC_ALL=C LANGUAGE=)
  status=0
  said=$(cd "$stage" && "${no_display[@]}" "$bin/mirrorlab" 2>&1) || status=$?
  [ "$status" = 3 ] || fail "mirrorlab without a display exited with $status, not 3 (no display): $said"
  grep -q 'no display' <<<"$said" && grep -q 'mirrorlab-cli train' <<<"$said" ||
    fail "mirrorlab without a display did not say what to do: $said"
  (cd "$stage" && "${no_display[@]}" "$bin/mirrorlab" --version | grep -q '^MirrorLab ') ||
    fail "mirrorlab --version printed nothing without a display"
fi
echo "install_layout: passed"
