#!/usr/bin/env bash
# One device call for a short GPU lease. Measuring comes first and, by default, alone:
#   1. tools/gpu_check.sh (correctness, lact's attention paths against the official code, one table), under
#      GPU_CHECK_SECONDS (default 480);
#   2. only with LACT_GPU_FINETUNE=1: a time-boxed fine-tune of the shipped model on the GPU (campaign.sh's
#      recipe, larger batches), on fine-tuning shards the machine's idle CPU cores render meanwhile with the
#      carried render_objects (nice 19), validated at its start and end.
# Prepare here, then run there:
#   bash tools/gpu/make_bundle.sh
#   run(command="bash tools/gpu/lease.sh", carry=[".gpu_bundle", ".gpu_official"], timeout_s=540)
# With the fine-tune: also bash tools/train/pack_renderer.sh (+ the photographs in carry/photos), carry
# tools/train/carry, and LACT_GPU_FINETUNE=1 GPU_CHECK_SECONDS=300 before the command.
# Everything ends within LEASE_SECONDS (default 560). Returns at most 6 files in $OUT: gpu_check.tar.gz (every
# log and JSON of the check) and summary.txt (its table), both renewed after each step of the check, so a lease
# killed mid-step still returns what it did; with the fine-tune also train.tar.gz (the run's log and stdout) and
# the fine-tuned model in 15 MB parts with its sha256 (join: cat model.safetensors.part-* > model.safetensors).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
t0=$SECONDS
total=${LEASE_SECONDS:-560}
out="${OUT:-/tmp/lact_lease_out}"
carry=tools/train/carry
data=/tmp/lease_data
mkdir -p "$out" "$data" /tmp/lease_train

# The campaign's shard rule (campaign.sh): 3000 objects of a seed no shipped campaign used, 24 random 64x64 views.
render_shards() {
  local photos=("$carry"/photos/*) ro="$carry/render_objects" name flags
  export LD_LIBRARY_PATH="$carry:${LD_LIBRARY_PATH:-}"
  while read -r name flags; do
    # shellcheck disable=SC2086  # the flags are words
    nice -n 19 "$ro" ${flags/PHOTOS/--photos ${photos[*]}} --views random:24 --size 64 --no-png --threads 10 \
      --quiet --shard "$data/$name.part" && mv "$data/$name.part" "$data/$name.shard"
    echo "rendered $name at $((SECONDS - t0)) s"
  done <<'EOF'
val12 --procedural 12 --procedural-start 100000 --seed 1 --fit sphere
val_asm12 --style assembly --procedural 12 --procedural-start 100000 --seed 1 --fit cube
train_s29 --procedural 3000 --seed 29 --fit sphere
train_asm29 --style assembly --procedural 3000 --seed 29 --fit cube
train_asm30p --style assembly --procedural 3000 --seed 30 --fit cube PHOTOS
train_asm31p --style assembly --procedural 3000 --seed 31 --fit cube PHOTOS
train_s30 --procedural 3000 --seed 30 --fit sphere
train_asm32 --style assembly --procedural 3000 --seed 32 --fit cube
train_asm33p --style assembly --procedural 3000 --seed 33 --fit cube PHOTOS
train_asm34p --style assembly --procedural 3000 --seed 34 --fit cube PHOTOS
EOF
}
finetune="${LACT_GPU_FINETUNE:-0}"
if [ "$finetune" = 1 ]; then
  render_shards >/tmp/lease_train/render.log 2>&1 &
  renderer=$!
fi

check_seconds="${GPU_CHECK_SECONDS:-480}"
# Its output streams (one line a step, the table last): what the device tool returns even if the lease is killed.
OUT="$out" GPU_CHECK_SECONDS="$check_seconds" timeout -k 10 $((check_seconds + 40)) bash tools/gpu_check.sh
echo "gpu_check exit $? after $((SECONDS - t0)) s"
if [ "$finetune" != 1 ]; then
  echo "lease done after $((SECONDS - t0)) s (no fine-tune: LACT_GPU_FINETUNE=1 adds it)"
  exit 0
fi

kill "$renderer" 2>/dev/null
pkill -f render_objects 2>/dev/null
wait 2>/dev/null
cat /tmp/lease_train/render.log
shards=("$data"/train_*.shard)
if [ ! -f "$data/val12.shard" ] || [ ! -f "${shards[0]}" ]; then
  echo "no training shards rendered; no fine-tune"
  exit 1
fi

# The fine-tune: what is left of the lease, less a minute for the last validation, the export and the copies.
minutes=$(python3 -c "print(round(max(0.5, ($total - ($SECONDS - $t0) - 60) / 60), 2))")
echo "fine-tuning for $minutes min on ${#shards[@]} shards"
PYTHONUNBUFFERED=1 timeout $((total - (SECONDS - t0))) python3 -u -m tools.train.train --data "${shards[@]}" \
  --val-data "$data/val12.shard" --val-extra "asm=$data/val_asm12.shard" --val-real examples/gso_toy_64 \
  --out /tmp/lease_train/run --fresh --init models/lact_tiny_obj64.safetensors --variant v2 --size 64 --n-input 8 \
  --batch "${BATCH:-64}" --lr "${LR:-1.5e-4}" --warmup 50 --time-schedule --max-minutes "$minutes" \
  --steps 100000000 --val-every 0 --val-every-minutes 100 --ckpt-every 0 --log-every 100 --seed 11 \
  --ssim-weight 0 --bg-random 0 --device cuda >/tmp/lease_train/train_stdout.txt 2>&1
echo "train exit $? after $((SECONDS - t0)) s"
cp /tmp/lease_train/run/log.jsonl /tmp/lease_train/ 2>/dev/null
tar -C /tmp -czf "$out/train.tar.gz" lease_train/train_stdout.txt lease_train/render.log lease_train/log.jsonl
grep -E "step [0-9]+: psnr|done \(|Error|error" /tmp/lease_train/train_stdout.txt | tail -25
if python3 -m tools.train.export /tmp/lease_train/run/ckpt_last.pt -o /tmp/lease_train/model.safetensors \
  --data-name "render_objects --views random:24 --size 64, seeds 29-34 (tools/gpu/lease.sh)" \
  --val-name "render_objects --procedural 12 --procedural-start 100000 --seed 1 (val12.shard)" \
  --init-name "models/lact_tiny_obj64.safetensors (campaign 17)" >/tmp/lease_train/export.txt 2>&1; then
  (cd /tmp/lease_train && sha256sum model.safetensors >"$out/model.safetensors.sha256")
  split -b 15M -a 1 /tmp/lease_train/model.safetensors "$out/model.safetensors.part-"
fi
tail -3 /tmp/lease_train/export.txt
echo "lease done after $((SECONDS - t0)) s"
