#!/usr/bin/env bash
# Copy a built render_objects binary and the shared libraries it needs beyond the C/C++
# runtime (Debian's libtinygltf and libstb) into tools/train/carry/ (git-ignored), so a GPU
# run can carry them (device tool: carry ["tools/train/carry"]) and gpu_train.sh can render
# its training data there with RENDER_BIN=tools/train/carry/render_objects.
#
# usage: bash tools/train/pack_renderer.sh [path/to/render_objects]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${1:-$ROOT/build/tools/render_objects/render_objects}
DEST=$ROOT/tools/train/carry
[ -x "$BIN" ] || { echo "pack_renderer: no executable at $BIN (configure with -DLACT_DATAGEN=ON and build render_objects first)" >&2; exit 2; }
mkdir -p "$DEST"
cp -L "$BIN" "$DEST/render_objects"
ldd "$BIN" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) continue ;;
  esac
  cp -L "$path" "$DEST/$name"
done
LD_LIBRARY_PATH="$DEST" "$DEST/render_objects" --help > /dev/null
du -sh "$DEST"; ls -l "$DEST"
