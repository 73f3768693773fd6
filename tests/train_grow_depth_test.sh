#!/usr/bin/env bash
# grow_depth.py makes a deeper model that computes the same thing: the engine (an implementation independent of
# the PyTorch reference the tool checks itself with) renders the real toy with the shipped model and with it grown
# by 2 layers, and the two float renders must agree. Growing with the copies' projections left non-zero moves
# the engine's renders by 0.61 (4-layer model) and 0.73 (8-layer model), checked by hand. Bad requests exit non-zero.
# Usage: train_grow_depth_test.sh PYTHON SOURCE LACT
set -euo pipefail
python=$1 src=$2 lact=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=$src/models/lact_tiny_obj64.safetensors
layers=$("$lact" info "$model" | sed -n 's/.*layers \([0-9]*\).*/\1/p')
"$python" "$src/tools/train/grow_depth.py" "$model" --layers $((layers + 2)) -o "$tmp/grown.safetensors"
"$lact" info "$tmp/grown.safetensors" | grep -q "layers $((layers + 2))" || { echo "lact info: not $((layers + 2)) layers"; exit 1; }
for m in "$model" "$tmp/grown.safetensors"; do
  name=$(basename "$m" .safetensors)
  "$lact" render --model "$m" --data "$src/examples/gso_toy_64" --inputs 16,20,24,28,34,38,42,46 --targets 2,32 \
    --save-npy --quiet --threads 2 --out "$tmp/$name" > /dev/null
done
"$python" - "$tmp" <<'PY'
import glob, os, sys
import numpy as np
tmp = sys.argv[1]
a = sorted(glob.glob(os.path.join(tmp, "lact_tiny_obj64", "*", "*.npy")))
b = sorted(glob.glob(os.path.join(tmp, "grown", "*", "*.npy")))
assert len(a) == 2 and [os.path.basename(x) for x in a] == [os.path.basename(x) for x in b], (a, b)
d = max(float(np.abs(np.load(x) - np.load(y)).max()) for x, y in zip(a, b))
spread = max(float(np.load(x).std()) for x in a)
print("engine: grown vs original, max abs difference %.3g over 2 views (render std %.3f)" % (d, spread))
assert spread > 0.05, "renders are flat"
assert d < 1e-5, "the grown model renders differently"
PY
if "$python" "$src/tools/train/grow_depth.py" "$model" --layers $((layers - 1)) -o "$tmp/x.safetensors" 2> "$tmp/err"; then
  echo "growing to fewer layers succeeded"; exit 1
fi
grep -q "fewer than" "$tmp/err"
if "$python" "$src/tools/train/grow_depth.py" "$tmp/missing.safetensors" --layers 6 -o "$tmp/x.safetensors" 2> "$tmp/err"; then
  echo "a missing model succeeded"; exit 1
fi
grep -q "missing.safetensors" "$tmp/err"
echo "grown model renders the same"
