#!/usr/bin/env bash
# Installs the Debian packages lact needs (idempotent), builds it (Release) and runs the main job.
#   scripts/setup.sh              install, build, render the example
#   scripts/setup.sh --build-only install and build
# LACT_CMAKE_ARGS (optional) adds CMake options to the build's configure (scripts/test.sh: the data generator).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libopenblas-dev libopenblas-openmp-dev   # BLAS; the OpenMP build shares our OpenMP threads
  libdnnl-dev                              # oneDNN: bf16 products on the CPU (--precision bf16)
  ocl-icd-opencl-dev                       # only Recommended by libdnnl-dev, but its CMake config requires OpenCL
  nlohmann-json3-dev libcli11-dev libstb-dev libtinygltf-dev
  libspng-dev libjpeg62-turbo-dev python3-pil  # decoding PNG (CRCs checked) and JPEG (the libjpeg PIL links); PIL
  libgtest-dev clang libclang-rt-14-dev        # tests; clang + libFuzzer for the reader fuzzers
  clang-format universal-ctags             # tools/check_style.py (formatting; function lengths)
  python3 python3-numpy python3-yaml python3-torch python3-skimage  # tools/ and the tests that use them
  python3-torchvision                      # the LPIPS-VGG test's reference: torchvision's own vgg16 layers
  ffmpeg                                   # lact render --video
  colmap                                   # lact import (poses from photos or a video)
  libcurl4-openssl-dev libssl-dev          # lact model fetch (downloads over HTTPS, SHA-256 checks)
  libopenmpi-dev openmpi-bin               # --distributed mpi (mpirun; NCCL comes with CUDA)
  libboost-dev                             # lact serve: Boost.Beast (HTTP + WebSocket, header-only)
  chromium                                 # lact serve's browser test (headless, driven over the DevTools protocol)
  libglfw3-dev libimgui-dev python3-glad   # lact view (the viewer); glad generates the GL loader at build time
  xvfb xauth libgl1-mesa-dri libgl-dev     # the viewer's tests (a virtual X display, Mesa's software GL)
  pybind11-dev python3-dev python3-pytest  # the Python module (import lact) and its tests
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

# shellcheck disable=SC2086  # LACT_CMAKE_ARGS is a list of words
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${LACT_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"

[ "${1:-}" = "--build-only" ] && exit 0

# The main job: the shipped model on the shipped example scene (a real scanned object, 64 views at 64x64):
# 8 input views spread over the sphere (azimuths 0/90/180/270 at 20 deg elevation, 45/135/225/315 at 40 deg),
# every other view rendered and scored against its photo (out/example/report.json), then the official demo
# turntable as frames and an MP4 (--force: a second run, or the README's block before it, wrote these files).
model=models/lact_tiny_obj64.safetensors
inputs=16,20,24,28,34,38,42,46
build/app/lact render --model "$model" --data examples/gso_toy_64 --inputs $inputs --targets rest --save-images \
  --out out/example
build/app/lact path turntable --frames 120 --size 64x64 -o out/turntable.json --force
build/app/lact render --model "$model" --data examples/gso_toy_64 --inputs $inputs --path out/turntable.json \
  --video out/turntable/turntable.mp4 --force --out out/turntable --quiet
