#!/usr/bin/env bash
# train.py --ranks 2 takes the same steps as one process with the same --batch (data_parallel.py): the same
# losses step by step and the same weights after them, up to float rounding. A wrong split (ranks drawing
# different objects, gradients not averaged) moves the losses by far more than the tolerance.
# Usage: train_data_parallel_test.sh PYTHON SOURCE
set -euo pipefail
python=$1 src=$2
export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"  # the tools are one package (tools/__init__.py)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ranks in 1 2; do
  OMP_NUM_THREADS=1 "$python" -m tools.train.train --data synthetic:objects=6,views=16,seed=3 --val-objects 2 \
    --preset tiny --size 32 --n-input 4 --n-target-min 2 --n-target-max 3 --batch 4 --steps 4 --val-every 0 \
    --ckpt-every 0 --threads 1 --seed 11 --fresh --no-preview --ranks $ranks --out "$tmp/r$ranks" > "$tmp/r$ranks.out"
done
"$python" - "$tmp" <<'PY'
import json, sys, torch
tmp = sys.argv[1]
def run(r):
    recs = [json.loads(l) for l in open("%s/r%d/log.jsonl" % (tmp, r))]
    ckpt = torch.load("%s/r%d/ckpt_last.pt" % (tmp, r), map_location="cpu")
    return [x["loss"] for x in recs if x["type"] == "train"], sum(x["type"] == "start" for x in recs), ckpt
l1, _, c1 = run(1)
l2, s2, c2 = run(2)
print("losses, 1 rank: ", " ".join("%.7f" % x for x in l1))
print("losses, 2 ranks:", " ".join("%.7f" % x for x in l2))
assert len(l1) == 4 and len(l2) == 4, "expected 4 logged steps each"
assert s2 == 1, "rank 1 wrote to the log"
dl = max(abs(a - b) / abs(a) for a, b in zip(l1, l2))
dw = max((c1["model"][k] - c2["model"][k]).abs().max().item() for k in c1["model"])
print("max relative loss difference %.2e, max weight difference %.2e" % (dl, dw))
assert dl < 1e-5, "losses differ"
assert dw < 1e-4, "weights differ"
assert c1["state"]["samples"] == c2["state"]["samples"] == 16
# CPU-hours count both ranks' cores: 2 x the steps' seconds (1 x for one rank)
for r, ranks in ((1, 1), (2, 2)):
    end = [json.loads(l) for l in open("%s/r%d/log.jsonl" % (tmp, r))][-1]
    assert abs(end["cpu_hours"] - ranks * end["elapsed"] / 3600) < 1e-3, ("cpu_hours", r, end)
PY
echo "2 ranks = 1 rank"
