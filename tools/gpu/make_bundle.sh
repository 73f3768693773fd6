#!/usr/bin/env bash
# Builds what tools/gpu_check.sh runs on a lent GPU machine, here, for sm_90 (H100/H200), into .gpu_bundle/
# (ignored by git; name it in the device tool's `carry`). The device machine has CUDA, CMake and PyTorch but
# none of our Debian packages, so the binaries travel with the shared libraries they need that such a
# machine lacks (OpenBLAS and its Fortran runtime), plus the parity fixture and the reference cases.
# Also the official LaCT code (lact_nvs/model.py, lact_ttt.py) and einops, which it imports, into .gpu_official/
# (ignored, never committed: read there at run time as a peer, by tools/gpu/official_bench.py), from the
# repositories' checkouts (the search tool's fetch puts them under /work/.mirror; LACT_OFFICIAL_REPO and
# LACT_EINOPS_REPO point elsewhere). `--official-only` does only that (the dry run needs no CUDA build).
#   bash tools/gpu/make_bundle.sh   # then: run(command="bash tools/gpu_check.sh", carry=[".gpu_bundle", ".gpu_official"])
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
build="${LACT_GPU_BUILD:-build-gpu}"
bundle=.gpu_bundle
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
fixture="${LACT_FIXTURE_DIR:-$root/../shared/fixtures/lact_tiny}"

# A git checkout's files (under the paths given) at its HEAD, file by file: a snapshot may lack its large files,
# which `git archive` of the whole tree would stumble on. repo, destination, paths...
export_files() {
  local repo="$1" dest="$2" file
  shift 2
  git -C "$repo" ls-tree -r --name-only HEAD -- "$@" | while read -r file; do
    mkdir -p "$dest/$(dirname "$file")"
    git -C "$repo" show "HEAD:$file" >"$dest/$file"
  done
}
official_repo="${LACT_OFFICIAL_REPO:-/work/.mirror/a1600012888+LaCT/repo}"
einops_repo="${LACT_EINOPS_REPO:-/work/.mirror/arogozhnikov+einops/repo}"
if [ -d "$official_repo" ] && [ -d "$einops_repo" ]; then
  rm -rf .gpu_official
  export_files "$official_repo" .gpu_official lact_nvs/model.py lact_nvs/lact_ttt.py lact_nvs/config/lact_l24_d768_ttt2x.yaml
  export_files "$einops_repo" .gpu_official/pylib einops
  rm -rf .gpu_official/pylib/einops/tests
  echo "official $(git -C "$official_repo" rev-parse --short HEAD), einops $(git -C "$einops_repo" rev-parse --short HEAD)" \
    >.gpu_official/source
  echo "official code ready: .gpu_official ($(du -sh .gpu_official | cut -f1))"
else
  echo "no checkout of the official code ($official_repo) or einops ($einops_repo): the official step will be skipped"
fi
[ "${1:-}" = "--official-only" ] && exit 0

# What the binaries are built from (before the build: a later edit is not in them); gpu_check.sh checks the tree it
# runs in against it.
bash tools/gpu/source_list.sh "$root" >"$stage/sources.sha256"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLACT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLACT_VIEWER=OFF \
  -DLACT_MPI=OFF -DLACT_TESTS=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target lact test_ops test_newton_schulz test_parity test_memory_estimate
if [ ! -d "$build/tests/reference_cases" ]; then  # the float64 PyTorch cases test_parity also checks
  tests/reference/make_reference_cases.sh /usr/bin/python3 "$root" "$build/tests/reference_cases"
fi

mkdir -p "$stage/bin" "$stage/lib"
for t in app/lact tests/test_ops tests/test_newton_schulz tests/test_parity tests/test_memory_estimate; do
  cp "$build/$t" "$stage/bin/"
  strip "$stage/bin/$(basename "$t")"
done
# Every library outside glibc, libstdc++ and libgcc (OpenBLAS, oneDNN, libspng, libjpeg, ...): the device image
# has CUDA but none of our Debian packages. libresolv is glibc's own (it needs this glibc's private symbols).
for b in "$stage"/bin/*; do ldd "$b"; done | awk '/=> \//{print $1, $3}' | sort -u |
  grep -v -E '^(libc|libm|libdl|librt|libpthread|libresolv|libstdc\+\+|libgcc_s|ld-linux[^ ]*)\.so' | while read -r _ lib; do
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
cp "$stage/commit" "$stage/sources.sha256" "$bundle/"  # beside it too: the dry run checks them without unpacking
du -sh "$bundle"
echo "bundle ready: carry .gpu_bundle and run: bash tools/gpu_check.sh"
