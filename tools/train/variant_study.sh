#!/usr/bin/env bash
# The variant quality study of docs/history/variants.md: baseline, V1, V2 and V6 trained from scratch with the same
# data, steps, seed and size (the tiny preset at 64x64), two at a time, one thread each, then exported and
# scored: validation PSNR/SSIM (the trainer's log) and `lact render` PSNR on examples/gso_toy_64 against the
# nearest input view. Resumable: every run checkpoints every 100 steps; rerun the same command to continue.
#
#   tools/train/variant_study.sh WORK_DIR [STEPS]     # e.g. tools/train/variant_study.sh /tmp/study 800
#
# Data (made once in WORK_DIR/data with tools/render_objects, about 2 minutes on one thread): 3,000 procedural
# objects (seed 3) for training, 12 held-out ones (--procedural-start 100000, seed 1) for validation; 24 random
# views each at 64x64.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${1:?usage: $0 WORK_DIR [STEPS]}
STEPS=${2:-800}
PY=/usr/bin/python3
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # the tools are one package (tools/__init__.py)
LACT=$ROOT/build/app/lact
RENDER=$ROOT/build/tools/render_objects/render_objects
mkdir -p "$WORK/data"
D=$WORK/data
[ -f "$D/train_s3.shard" ] || "$RENDER" --procedural 3000 --seed 3 --views random:24 --size 64 --fit sphere \
  --threads 1 --no-png --shard "$D/train_s3.shard" --quiet
[ -f "$D/val12.shard" ] || "$RENDER" --procedural 12 --procedural-start 100000 --seed 1 --views random:24 --size 64 \
  --fit sphere --threads 1 --no-png --shard "$D/val12.shard" --quiet

train() {  # variant
  "$PY" -m tools.train.train --data "$D/train_s3.shard" --val-data "$D/val12.shard" --out "$WORK/$1" \
    --preset tiny --variant "$1" --size 64 --n-input 8 --batch 4 --lr 4e-4 --warmup 100 --steps "$STEPS" \
    --val-every 200 --ckpt-every 100 --threads 1 --seed 7 --no-preview > "$WORK/$1.log" 2>&1
}
train baseline & train v6 & wait
train v1 & train v2 & wait

echo "| variant | s/step (median) | val PSNR | val SSIM | gso_toy_64 PSNR | SSIM | nearest input | white |"
echo "|---|---|---|---|---|---|---|---|"
for v in baseline v1 v2 v6; do
  "$PY" -m tools.train.export "$WORK/$v/ckpt_last.pt" -o "$WORK/$v.safetensors" \
    --data-name "procedural objects, render_objects --procedural 3000 --seed 3" >/dev/null
  "$LACT" render --model "$WORK/$v.safetensors" --data "$ROOT/examples/gso_toy_64" \
    --inputs 16,20,24,28,34,38,42,46 --targets 2,10,18,26,32,40,50,58 --out "$WORK/eval_$v" --threads 1 --quiet \
    --force >/dev/null
  "$PY" - "$WORK" "$v" <<'PYEOF'
import json, statistics, sys
work, v = sys.argv[1], sys.argv[2]
log = [json.loads(l) for l in open("%s/%s/log.jsonl" % (work, v))]
steps = [r["step_time"] for r in log if r.get("type") == "train"]
val = [r for r in log if r.get("type") == "val"][-1]
rep = json.load(open("%s/eval_%s/report.json" % (work, v)))
print("| %s | %.2f | %.2f | %.3f | %.2f | %.3f | %.2f | %.2f |" % (
    v, statistics.median(steps), val["psnr"], val["ssim"], rep["psnr"], rep["ssim"],
    rep["psnr_nearest_input"], rep["psnr_white"]))
PYEOF
done
