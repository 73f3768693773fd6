#!/usr/bin/env bash
# The sha256 of every tracked C++/CUDA source and CMake file of a git checkout (default: this one), as sha256sum
# prints them: make_bundle.sh stores the list in the bundle (sources.sha256), and gpu_check.sh checks the tree it
# runs in against it (sha256sum -c, no git needed there), so a bundle built from other sources is said.
#   bash tools/gpu/source_list.sh [CHECKOUT] >sources.sha256
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
git ls-files -z -- '*.cpp' '*.cc' '*.c' '*.h' '*.hpp' '*.cu' '*.cuh' '*CMakeLists.txt' '*.cmake' |
  while IFS= read -r -d '' file; do
    [ -f "$file" ] && printf '%s\0' "$file"  # a tracked file deleted in the work tree is not built either
  done | xargs -0 -r sha256sum
