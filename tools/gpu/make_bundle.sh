#!/usr/bin/env bash
# Builds what tools/gpu_check.sh runs on a lent GPU machine, here, for sm_90 (H100/H200), into .gpu_bundle/
# (ignored by git; name it in the device tool's `carry`). The device machine has CUDA, CMake and PyTorch but
# none of our Debian packages, so the binaries travel with the shared libraries they need that such a
# machine lacks (OpenBLAS and its Fortran runtime), plus the parity fixture and the reference cases.
#   bash tools/gpu/make_bundle.sh            # then: run(command="bash tools/gpu_check.sh", carry=[".gpu_bundle"])
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
build="${LACT_GPU_BUILD:-build-gpu}"
bundle=.gpu_bundle
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
fixture="${LACT_FIXTURE_DIR:-$root/../shared/fixtures/lact_tiny}"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLACT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLACT_VIEWER=OFF \
  -DLACT_MPI=OFF -DLACT_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target lact test_ops test_newton_schulz test_parity test_memory_estimate
if [ ! -d "$build/tests/reference_cases" ]; then  # the float64 PyTorch cases test_parity also checks
  tests/make_reference_cases.sh /usr/bin/python3 "$root" "$build/tests/reference_cases"
fi

mkdir -p "$stage/bin" "$stage/lib"
for t in app/lact tests/test_ops tests/test_newton_schulz tests/test_parity tests/test_memory_estimate; do
  cp "$build/$t" "$stage/bin/"
  strip "$stage/bin/$(basename "$t")"
done
# Every library outside glibc, libstdc++ and libgcc (OpenBLAS, oneDNN, libspng, libjpeg, ...): the device image
# has CUDA but none of our Debian packages.
for b in "$stage"/bin/*; do ldd "$b"; done | awk '/=> \//{print $1, $3}' | sort -u |
  grep -v -E '^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^ ]*)\.so' | while read -r _ lib; do
    cp -L "$lib" "$stage/lib/"
  done
cp -r "$fixture" "$stage/fixture"
cp -r "${LACT_FIXTURE_V2_DIR:-$root/../shared/fixtures/lact_tiny_v2}" "$stage/fixture_v2"  # the variant (V2) fixture
cp -r "$build/tests/reference_cases" "$stage/reference_cases"
git rev-parse --short HEAD > "$stage/commit"
# Compressed: OpenBLAS alone is 36 MB, and a device call carries 64 MiB in all.
rm -rf "$bundle"
mkdir -p "$bundle"
tar -C "$stage" -cJf "$bundle/bundle.tar.xz" .
du -sh "$bundle"
echo "bundle ready: carry .gpu_bundle and run: bash tools/gpu_check.sh"
