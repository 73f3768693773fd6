#!/usr/bin/env bash
# One prepared LaCT training run for a GPU machine (or, for testing, the CPU).
#
#   OUT=/path/to/outdir bash tools/train/gpu_train.sh
#   OUT=/tmp/gpu_out DEVICE=cpu MAX_MINUTES=1 bash tools/train/gpu_train.sh     # CPU smoke test
#
# Run from anywhere inside a copy of the repository; needs python3 with torch (2.x on the GPU
# machine, 1.13 works too) and numpy, nothing else (no Debian packages, no PIL).
#
# Data: by default the training objects are generated in-process on the GPU by
# tools/train/synthetic_data.py (ray-cast primitives, seeded: TRAIN_OBJECTS objects of seed
# SEED, validation objects from index 1000000 of the same seed, so disjoint), because the C++
# renderer needs Debian's tinygltf/stb, which that machine lacks. Alternatives:
#   DATA="path/a.shard path/b.shard" [VAL_DATA=...]   carried shards or LaCT layouts (paths
#                                                     relative to the repo root)
#   RENDER_BIN=path/to/render_objects                  a carried renderer binary (see README.md;
#                                                     its .so files beside it); falls back to
#                                                     synthetic data if it fails
# The whole script keeps to TOTAL_MINUTES (default 9): training stops in time for the final
# validation, the checkpoint and the export.
#
# Writes to $OUT (at most 8 files, each <= 16 MB): model.safetensors (or, when larger than
# 15 MiB, model.safetensors.part-aa, -ab, ... to join with `cat model.safetensors.part-* >
# model.safetensors`, plus model.safetensors.sha256), log.jsonl, preview.png, train_stdout.txt.
# Prints the validation curve last.
set -euo pipefail

T0=$(date +%s)
: "${OUT:?set OUT to the output folder}"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
if [ -z "${PYTHON:-}" ]; then  # the first python3 that has torch and numpy
  for p in python3 /usr/bin/python3; do
    if "$p" -c "import torch, numpy" 2>/dev/null; then PYTHON=$p; break; fi
  done
fi
PY=${PYTHON:?no python3 with torch and numpy found; set PYTHON}
DEVICE=${DEVICE:-cuda}
TOTAL_MINUTES=${TOTAL_MINUTES:-9}
PRESET=${PRESET:-small}
SEED=${SEED:-1}
VIEWS=${VIEWS:-32}
N_INPUT=${N_INPUT:-8}
if [ "$DEVICE" = cpu ]; then
  BATCH=${BATCH:-2}; TRAIN_OBJECTS=${TRAIN_OBJECTS:-16}; VAL_OBJECTS=${VAL_OBJECTS:-4}
  LR=${LR:-1e-3}; WARMUP=${WARMUP:-10}; LOG_EVERY=${LOG_EVERY:-1}; VAL_MINUTES=${VAL_MINUTES:-0.25}
  SIZE=${SIZE:-64}
else
  SIZE=${SIZE:-128}
  BATCH=${BATCH:-32}; TRAIN_OBJECTS=${TRAIN_OBJECTS:-4096}; VAL_OBJECTS=${VAL_OBJECTS:-32}
  LR=${LR:-8e-4}; WARMUP=${WARMUP:-250}; LOG_EVERY=${LOG_EVERY:-25}; VAL_MINUTES=${VAL_MINUTES:-0.5}
fi
WORK=${WORK:-$(mktemp -d /tmp/lact_train.XXXXXX)}
EXTRA=${EXTRA:-}
mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1

echo "== gpu_train.sh: device $DEVICE, preset $PRESET, size $SIZE, batch $BATCH, budget $TOTAL_MINUTES min, work $WORK"
$PY - <<'EOF' || true
import platform, torch, numpy
print("python %s, torch %s, numpy %s, cuda %s" % (platform.python_version(), torch.__version__, numpy.__version__,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"))
EOF

# ---------------------------------------------------------------- data
if [ -n "${DATA:-}" ]; then
  TRAIN_SRC=($DATA)
  if [ -n "${VAL_DATA:-}" ]; then VAL_SRC=($VAL_DATA); else VAL_SRC=(); fi
elif [ -n "${RENDER_BIN:-}" ] && \
     LD_LIBRARY_PATH="$(dirname "$RENDER_BIN"):${LD_LIBRARY_PATH:-}" "$RENDER_BIN" \
       --procedural "$TRAIN_OBJECTS" --seed "$SEED" --views "random:$VIEWS" --size "$SIZE" \
       --threads "$(nproc)" --no-png --shard "$WORK/train.shard" --out "$WORK/render" --quiet && \
     LD_LIBRARY_PATH="$(dirname "$RENDER_BIN"):${LD_LIBRARY_PATH:-}" "$RENDER_BIN" \
       --procedural "$VAL_OBJECTS" --procedural-start 1000000 --seed "$SEED" --views "random:$VIEWS" \
       --size "$SIZE" --threads "$(nproc)" --no-png --shard "$WORK/val.shard" --out "$WORK/render" --quiet; then
  echo "== rendered with $RENDER_BIN ($(( $(date +%s) - T0 )) s so far)"
  TRAIN_SRC=("$WORK/train.shard"); VAL_SRC=("$WORK/val.shard")
else
  [ -n "${RENDER_BIN:-}" ] && echo "== $RENDER_BIN failed; using synthetic data"
  TRAIN_SRC=("synthetic:objects=$TRAIN_OBJECTS,views=$VIEWS,seed=$SEED")
  VAL_SRC=("synthetic:objects=$VAL_OBJECTS,views=$VIEWS,seed=$SEED,start=1000000")
fi

# ---------------------------------------------------------------- train
# Leave ~40 s of the budget for the export, the split and the summary.
NOW=$(date +%s)
MAX_MINUTES=${MAX_MINUTES:-$($PY -c "print(max(0.5, ($TOTAL_MINUTES*60 - ($NOW - $T0) - 40) / 60))")}
echo "== training for at most $MAX_MINUTES min (data loading included)"
VAL_ARGS=(--val-objects "$VAL_OBJECTS")
if [ ${#VAL_SRC[@]} -gt 0 ]; then VAL_ARGS=(--val-data "${VAL_SRC[@]}"); fi
set +e
$PY -u -m tools.train.train --data "${TRAIN_SRC[@]}" "${VAL_ARGS[@]}" --out "$WORK/run" --fresh \
  --device "$DEVICE" --size "$SIZE" --preset "$PRESET" --batch "$BATCH" --n-input "$N_INPUT" \
  --lr "$LR" --warmup "$WARMUP" --steps 100000000 --time-schedule --max-minutes "$MAX_MINUTES" \
  --val-every 0 --val-every-minutes "$VAL_MINUTES" --ckpt-every 0 --ckpt-every-minutes 2 \
  --log-every "$LOG_EVERY" --seed "$SEED" $EXTRA 2>&1 | tee "$OUT/train_stdout.txt"
RC=${PIPESTATUS[0]}
set -e
cp "$WORK/run/log.jsonl" "$OUT/log.jsonl" 2>/dev/null || true
cp "$WORK/run/preview.png" "$OUT/preview.png" 2>/dev/null || true
if [ "$RC" != 0 ]; then echo "== train.py failed (exit $RC)"; exit "$RC"; fi

# ---------------------------------------------------------------- export
$PY -m tools.train.export "$WORK/run/ckpt_last.pt" -o "$WORK/model.safetensors"
BYTES=$(stat -c %s "$WORK/model.safetensors")
if [ "$BYTES" -le $((15 * 1024 * 1024)) ]; then
  cp "$WORK/model.safetensors" "$OUT/model.safetensors"
elif [ "$BYTES" -le $((45 * 1024 * 1024)) ]; then
  (cd "$WORK" && sha256sum model.safetensors > "$OUT/model.safetensors.sha256")
  split -b 15M -a 2 "$WORK/model.safetensors" "$OUT/model.safetensors.part-"
  echo "== model is $BYTES bytes: split into $(ls "$OUT"/model.safetensors.part-* | wc -l) parts;" \
       "join: cat model.safetensors.part-* > model.safetensors && sha256sum -c model.safetensors.sha256"
else
  echo "== model is $BYTES bytes: too large to return (limit 8 files x 16 MB); left in $WORK"
fi

# ---------------------------------------------------------------- summary
echo "== done in $(( $(date +%s) - T0 )) s; files in $OUT:"
ls -l "$OUT"
$PY -m tools.train.curve "$OUT/log.jsonl"
