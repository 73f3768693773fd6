#!/usr/bin/env bash
# Installs the Debian packages lact needs (idempotent), builds it (Release) and runs the main job.
#   scripts/setup.sh              install, build, render the example
#   scripts/setup.sh --build-only install and build
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libopenblas-dev libopenblas-openmp-dev   # BLAS; the OpenMP build shares our OpenMP threads
  nlohmann-json3-dev libcli11-dev libstb-dev libtinygltf-dev
  libgtest-dev clang libclang-rt-14-dev        # tests; clang + libFuzzer for the reader fuzzers
  python3 python3-numpy python3-yaml python3-torch python3-skimage  # tools/ and the tests that use them
  ffmpeg                                   # lact render --video
  libglfw3-dev libimgui-dev python3-glad   # lact view (the viewer); glad generates the GL loader at build time
  xvfb xauth libgl1-mesa-dri libgl-dev     # the viewer's tests (a virtual X display, Mesa's software GL)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"

[ "${1:-}" = "--build-only" ] && exit 0

# The main job. Until the shipped model exists, render the official parity fixture's target views.
fixture=../shared/fixtures/lact_tiny
build/app/lact render --model "$fixture/model.safetensors" --data "$fixture/index.json" \
  --inputs 0,1,2 --targets 3,4 --out out/fixture
