#!/usr/bin/env bash
# grow_depth.py and grow_memory.py make a bigger model that computes the same thing: the engine (an implementation
# independent of the PyTorch reference the tools check themselves with) renders the real toy with the shipped
# model and with it grown (2 more layers; twice the TTT hidden size), and the float renders must agree.
# Checked by hand that this can fail: growing with the copies' projections left non-zero moves the engine's
# renders by 0.61 (4-layer model) and 0.73 (8-layer model); giving the new W2 columns random values instead of
# zeros moves the reference's by 0.29. Bad requests exit non-zero with the model named.
# Usage: train_grow_test.sh PYTHON SOURCE LACT
set -euo pipefail
python=$1 src=$2 lact=$3
export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"  # the tools are one package (tools/__init__.py)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=$src/models/lact_tiny_obj64.safetensors
info=$("$lact" info "$model")
layers=$(sed -n 's/.*layers \([0-9]*\).*/\1/p' <<< "$info")
hidden=$(sed -n 's/.*hidden \([0-9]*\), base lr.*/\1/p' <<< "$info")
"$python" -m tools.train.grow_depth "$model" --layers $((layers + 2)) -o "$tmp/deeper.safetensors"
"$lact" info "$tmp/deeper.safetensors" | grep -q "layers $((layers + 2))" || { echo "not $((layers + 2)) layers"; exit 1; }
head_dim=$(sed -n 's/.*fast-weight head(s) x \([0-9]*\),.*/\1/p' <<< "$info")
multi=$((2 * hidden / head_dim))  # twice the hidden size
"$python" -m tools.train.grow_memory "$model" --inter-multi "$multi" -o "$tmp/wider.safetensors"
"$lact" info "$tmp/wider.safetensors" | grep -q "hidden $((hidden * 2)), base lr" || { echo "not hidden $((hidden * 2))"; exit 1; }
for m in "$model" "$tmp/deeper.safetensors" "$tmp/wider.safetensors"; do
  name=$(basename "$m" .safetensors)
  "$lact" render --model "$m" --data "$src/examples/gso_toy_64" --inputs 16,20,24,28,34,38,42,46 --targets 2,32 \
    --save-npy --quiet --threads 2 --out "$tmp/$name" > /dev/null
done
"$python" - "$tmp" <<'PY'
import glob, os, sys
import numpy as np
tmp = sys.argv[1]
a = sorted(glob.glob(os.path.join(tmp, "lact_tiny_obj64", "*", "*.npy")))
spread = max(float(np.load(x).std()) for x in a)
assert len(a) == 2 and spread > 0.05, ("renders missing or flat", a, spread)
# deeper: the same sums; wider: the wider products sum in another order (~5e-6), a wrong growth moves 0.3
for grown, tol in (("deeper", 1e-5), ("wider", 1e-4)):
    b = sorted(glob.glob(os.path.join(tmp, grown, "*", "*.npy")))
    assert [os.path.basename(x) for x in a] == [os.path.basename(x) for x in b], (a, b)
    d = max(float(np.abs(np.load(x) - np.load(y)).max()) for x, y in zip(a, b))
    print("engine: %s vs original, max abs difference %.3g over 2 views (render std %.3f)" % (grown, d, spread))
    assert d < tol, "the %s model renders differently" % grown
PY
refused() {  # EXPECTED-MESSAGE tool args...: the tool must fail, saying EXPECTED-MESSAGE
  local expect=$1
  shift
  if "$python" "$@" -o "$tmp/x.safetensors" 2> "$tmp/err"; then echo "succeeded: $*"; exit 1; fi
  grep -q "$expect" "$tmp/err" || { echo "no '$expect' in: $(cat "$tmp/err")"; exit 1; }
}
refused "fewer than" -m tools.train.grow_depth "$model" --layers $((layers - 1))
refused "missing.safetensors" -m tools.train.grow_depth "$tmp/missing.safetensors" --layers 6
refused "does not grow" -m tools.train.grow_memory "$model" --inter-multi 1
refused "missing.safetensors" -m tools.train.grow_memory "$tmp/missing.safetensors" --inter-multi 4
"$python" - "$model" "$tmp/v1.safetensors" <<'PY'
import json, sys
from tools.reference import safetensors_io
from tools.reference.lact_reference import with_variant
tensors, meta = safetensors_io.load(sys.argv[1])
config = with_variant(json.loads(meta["config"]), "v1")  # V1: weight norm
safetensors_io.save(sys.argv[2], tensors, dict(meta, config=json.dumps(config)))
PY
refused "only V2" -m tools.train.grow_memory "$tmp/v1.safetensors" --inter-multi 8
echo "grown models render the same"
