#!/usr/bin/env bash
# Prepares here, on a machine without a GPU, what tests/gpu/device-check.sh needs on a lent GPU
# machine whose image has CUDA but no Qt (so it cannot build the Qt Test programs): the CUDA
# plugin and its compute module, the CLI and the GPU test program, built for Hopper, with the
# non-system libraries they load (Qt Core and Test, ICU, ...), in one archive of about 15 MB:
#
#     bash tests/gpu/make-device-bundle.sh         # writes build-device-bundle/bundle.tar.xz
#
# then, through the device tool, from the repository root:
#
#     run  command: bash tests/gpu/device-check.sh   carry: ["build-device-bundle/bundle.tar.xz"]
#
# device-check.sh still builds the plugin and the CLI there (to prove they compile on that
# image) and uses the bundle's programs for the test suites when it cannot build them itself.
# Environment: BUILD_DIR (default build-device-bundle), CUDA_ARCH (default 90: the H200),
# JOBS (default 2).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$root/build-device-bundle}
tree=$build/tree
stage=$build/stage
arch=${CUDA_ARCH:-90}

cmake -S "$root" -B "$tree" -DCMAKE_BUILD_TYPE=Release -DMIRRORLAB_BUILD_UI=OFF -DMIRRORLAB_BUILD_TESTS=ON \
    -DMIRRORLAB_BUILD_CUDA=ON -DMIRRORLAB_REQUIRE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" >/dev/null
cmake --build "$tree" -j "${JOBS:-2}" --target mirrorlab_cuda mirrorlab_cuda_compute mirrorlab-cli test_gpu_ops

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/plugin" "$stage/lib"
cp "$tree/app/mirrorlab-cli" "$tree/tests/test_gpu_ops" "$stage/bin/"
# The plugin opens the compute module from its own folder: the two travel together.
cp "$tree/gpu/libmirrorlab_cuda.so" "$tree/gpu/libmirrorlab_cuda_compute.so" "$stage/plugin/"

# Every library the programs resolve here, except the C and C++ runtimes (the GPU image's are
# newer, and newer ones serve older programs) and CUDA's own (they must be the GPU image's, to
# match its driver).
is_system_or_cuda() {
    case $(basename "$1") in
        libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*.so.* | libgcc_s.so.* | \
            libstdc++.so.* | libcuda.so.* | libcudart.so.* | libcublas*.so.* | libcudnn*.so.* | libnccl.so.*)
            return 0 ;;
    esac
    return 1
}
for program in "$stage"/bin/* "$stage"/plugin/*; do
    ldd "$program" | awk '/=> \// {print $3}' | while read -r library; do
        is_system_or_cuda "$library" || cp -Ln "$library" "$stage/lib/"
    done
done

# Which sources the bundle was built from: device-check.sh compares it with the tree it runs in.
(cd "$root" && bash tests/gpu/source-hash.sh) >"$stage/SOURCE_HASH"
tar -C "$stage" -cJf "$build/bundle.tar.xz" .
echo "device bundle: $build/bundle.tar.xz ($(du -h "$build/bundle.tar.xz" | cut -f1)), sources $(cat "$stage/SOURCE_HASH")"
echo "libraries carried: $(ls "$stage/lib" | tr '\n' ' ')"
