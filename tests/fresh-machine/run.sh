#!/usr/bin/env bash
# The fresh-machine check: does the README's set-up work on a Debian 12 that has nothing installed
# by hand, and does the .deb install like any Debian program? Needs root and mmdebstrap
# (`apt-get install mmdebstrap`); about 45 minutes on 2 cores, most of it the build and CTest.
#
#   sudo bash tests/fresh-machine/run.sh [--skip-deb]
#
# 1. A minimal Debian 12 root (`mmdebstrap --variant=apt bookworm`; the tarball is cached in
#    $MIRRORLAB_FRESH_CACHE, default /var/cache/mirrorlab-fresh-machine, for a week).
# 2. This repository's committed HEAD cloned into it; inside a chroot (/proc, /dev, /sys bound):
#    `bash packaging/mirrorlab.sh test`, `bash packaging/mirrorlab.sh run` (no display: headless
#    training) and `bash packaging/mirrorlab.sh package`.
# 3. A second fresh root installs the built .deb with `apt-get install --no-install-recommends
#    ./mirrorlab_*.deb` (so its Depends alone must be enough) and runs
#    `mirrorlab-cli devices`, `mirrorlab-cli train --epochs 1 --data synthetic` and
#    `xvfb-run mirrorlab --screenshot FILE --epochs 1` from /usr/bin; the installed binaries must not
#    name the source or build tree.
#
# One line per step with its time; logs, the .deb files and the screenshot land in
# $MIRRORLAB_FRESH_OUT (default build-fresh-machine/ in this checkout). Exit status 0 only when every
# step passed. The team's ../shared folder, where present, is bound read-only beside the clone, as
# CI has it, so the tests that read real data run there too. Downloaded .debs are kept in the cache
# so that a rerun does not fetch them again; what is installed still starts from nothing.
set -euo pipefail

skip_deb=false
for arg in "$@"; do
  case "$arg" in
    --skip-deb) skip_deb=true ;;
    *) echo "usage: bash tests/fresh-machine/run.sh [--skip-deb]" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" -ne 0 ]; then echo "fresh-machine: needs root (chroot, mounts)" >&2; exit 2; fi
if ! command -v mmdebstrap >/dev/null; then
  echo "fresh-machine: mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 2
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${MIRRORLAB_FRESH_CACHE:-/var/cache/mirrorlab-fresh-machine}
out=${MIRRORLAB_FRESH_OUT:-$repo/build-fresh-machine}
work=$(mktemp -d /tmp/mirrorlab-fresh.XXXXXX)
mkdir -p "$cache/archives" "$out"
rm -f "$out"/*.log "$out"/*.deb "$out"/*.png

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  rm -rf "$work"
}

passed=0
failed=0
step_start=0
begin() { step_start=$(date +%s); printf '%-66s ' "$1"; }
end_ok() { printf 'ok    %4ds\n' $(($(date +%s) - step_start)); passed=$((passed + 1)); }
end_fail() { printf 'FAIL  %4ds  (%s)\n' $(($(date +%s) - step_start)) "$1"; failed=$((failed + 1)); }
# The closing line, also on an early exit: CI's log reader takes "N passed, N failed".
finish() {
  local status=$?
  echo "fresh-machine: logs and the screenshot in $out"
  echo "fresh-machine: $passed passed, $failed failed"
  cleanup
  [ "$failed" -eq 0 ] && exit "$status"
  exit 1
}

# Runs "$@" as a step; its output goes to $out/<log>.log, whose tail is shown on failure.
step() {
  local title=$1 log=$2; shift 2
  begin "$title"
  if "$@" >"$out/$log.log" 2>&1; then end_ok; return 0; fi
  end_fail "log: $out/$log.log"
  tail -n 25 "$out/$log.log" | sed 's/^/    | /'
  return 1
}

base_tarball() {
  local tarball=$cache/bookworm-apt.tar
  if [ -f "$tarball" ] && [ -n "$(find "$tarball" -mtime -7)" ]; then return 0; fi
  mmdebstrap --variant=apt --format=tar --include=ca-certificates bookworm "$tarball.part" && mv "$tarball.part" "$tarball"
}

# A new root from the cached tarball, with the kernel file systems, name resolution and the shared
# .deb cache bound in. (Steps run inside `if`, where set -e is off: every failure returns.)
make_root() {
  local root=$1 fs
  mkdir -p "$root" || return 1
  tar -xf "$cache/bookworm-apt.tar" -C "$root" || return 1
  cp /etc/resolv.conf "$root/etc/resolv.conf" || return 1
  for fs in proc dev sys; do
    mount --rbind "/$fs" "$root/$fs" || return 1
    mount --make-rslave "$root/$fs" || return 1  # so unmounting here never reaches the host's
    mounted+=("$root/$fs")
  done
  mount --bind "$cache/archives" "$root/var/cache/apt/archives" || return 1
  mounted+=("$root/var/cache/apt/archives")
}

# Runs a command inside a root as a login shell would, with a plain environment.
in_root() {
  local root=$1; shift
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb bash -c "$*"
}

trap finish EXIT
echo "fresh-machine: $(git -C "$repo" log -1 --format='%h %s' | cut -c1-70)"
step "base root (mmdebstrap --variant=apt bookworm, cached)" base base_tarball || exit 1

# --- The README's commands on a fresh root ----------------------------------------------------
build_root=$work/build-root
step "unpack the first root" unpack1 make_root "$build_root" || exit 1
step "clone the repository into it" clone git clone --quiet --no-local "$repo" "$build_root/root/mirrorlab" || exit 1
if [ -d "$repo/../shared" ]; then
  mkdir -p "$build_root/root/shared"
  mount --bind -o ro "$repo/../shared" "$build_root/root/shared"
  mounted+=("$build_root/root/shared")
fi
step "README test command: bash packaging/mirrorlab.sh test" readme-test \
  in_root "$build_root" "cd /root/mirrorlab && bash packaging/mirrorlab.sh test" || exit 1
step "README run command: bash packaging/mirrorlab.sh run (headless)" readme-run \
  in_root "$build_root" "cd /root/mirrorlab && bash packaging/mirrorlab.sh run" || exit 1
begin "the run command trained (a Keras progress line with val_loss)"
if grep -q "val_loss" "$out/readme-run.log"; then end_ok; else end_fail "no val_loss in readme-run.log"; fi
$skip_deb && exit 0

step "bash packaging/mirrorlab.sh package" package \
  in_root "$build_root" "cd /root/mirrorlab && bash packaging/mirrorlab.sh package" || exit 1
cp "$build_root"/root/mirrorlab/build/mirrorlab*_amd64.deb "$out/"
deb=$(ls "$out"/mirrorlab_*_amd64.deb)

# --- The .deb on a second fresh root --------------------------------------------------------
install_root=$work/install-root
step "unpack a second fresh root" unpack2 make_root "$install_root" || exit 1
mkdir -p "$install_root/tmp/deb"
cp "$deb" "$install_root/tmp/deb/"
step "apt-get install --no-install-recommends ./$(basename "$deb")" install \
  in_root "$install_root" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/deb/$(basename "$deb")" || exit 1
step "mirrorlab-cli devices (from /usr/bin)" cli-devices in_root "$install_root" "mirrorlab-cli devices" || true
step "mirrorlab-cli train --epochs 1 --data synthetic" cli-train \
  in_root "$install_root" "cd /tmp && mirrorlab-cli train --epochs 1 --data synthetic" || true
# xvfb-run is the check's own tool, not a dependency of the package.
step "apt-get install xvfb xauth (for the GUI check)" xvfb \
  in_root "$install_root" "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends xvfb xauth" || exit 1
step "xvfb-run mirrorlab --screenshot FILE --epochs 1" gui \
  in_root "$install_root" "cd /tmp && xvfb-run -a -s '-screen 0 1600x1000x24' mirrorlab --screenshot /tmp/installed.png --epochs 1" || true
[ -f "$install_root/tmp/installed.png" ] && cp "$install_root/tmp/installed.png" "$out/installed-screenshot.png"

begin "installed binaries name no source or build tree"
leaks=$(for f in "$install_root"/usr/bin/mirrorlab "$install_root"/usr/bin/mirrorlab-cli \
               "$install_root"/usr/lib/*/mirrorlab/*.so; do
          [ -f "$f" ] && strings -a "$f" | grep -E '/root/mirrorlab|/build/|CMakeFiles|/work/' | sed "s|^|$(basename "$f"): |"
        done | sort -u | head -n 10) || true
if [ -z "$leaks" ]; then end_ok; else end_fail "paths found"; printf '    | %s\n' "$leaks"; fi
