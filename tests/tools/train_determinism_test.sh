#!/usr/bin/env bash
# The trainer is deterministic on the CPU for a seed: two short runs log identical losses; and its export loads
# in the engine with the metadata the CLI uses (lact info). Usage: train_determinism_test.sh PYTHON SOURCE LACT
set -euo pipefail
python=$1 src=$2 lact=$3
export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"  # the tools are one package (tools/__init__.py)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in a b; do
  OMP_NUM_THREADS=1 "$python" -m tools.train.train --data synthetic:objects=6,views=16,seed=3 --val-objects 2 \
    --preset tiny --size 32 --n-input 4 --n-target-min 2 --n-target-max 2 --batch 2 --steps 3 --val-every 0 \
    --threads 1 --seed 11 --fresh --no-preview --out "$tmp/$run" > "$tmp/$run.out"
  grep '"type": "train"' "$tmp/$run/log.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/' > "$tmp/$run.loss"
done
echo "losses: $(tr '\n' ' ' < "$tmp/a.loss")"
[ -s "$tmp/a.loss" ] || { echo "no losses logged"; exit 1; }
cmp "$tmp/a.loss" "$tmp/b.loss" || { echo "two runs with one seed differ: $(tr '\n' ' ' < "$tmp/b.loss")"; exit 1; }
"$python" -m tools.train.export "$tmp/a/ckpt_last.pt" -o "$tmp/model.safetensors" > /dev/null
"$lact" info "$tmp/model.safetensors" | grep -q "parameters: 1568780" || { echo "export did not load in lact"; exit 1; }
echo "deterministic; export loads in lact"
