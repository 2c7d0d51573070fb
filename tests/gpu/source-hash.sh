#!/usr/bin/env bash
# One hash over the sources a device bundle is built from (CMake files, core, gpu, app, tests),
# computed the same way here and on the GPU machine, which gets a copy of the working tree but
# no .git: equal hashes mean the bundle's programs were built from the code being checked.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
find CMakeLists.txt core gpu app tests resources/presets -type f \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.inl' -o -name '*.json' -o -name 'CMakeLists.txt' -o -name '*.cmake' \) \
    -not -path 'tests/fuzz/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
