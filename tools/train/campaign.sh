#!/usr/bin/env bash
# The shipped model's training campaign on a fresh or resumed machine (tools/train/README.md, "Continuing the
# shipped model").
#   tools/train/campaign.sh data DIR                 render the campaign's shards into DIR (skips those present)
#   tools/train/campaign.sh train DIR RUN MINUTES [train.py flags...]
#                                                    start from the shipped model, or resume RUN/ckpt_last.pt;
#                                                    the cosine ends MINUTES from now (a resume re-plans it
#                                                    over the time so far plus MINUTES; run it under nohup)
#   tools/train/campaign.sh stop RUN                 stop RUN's trainer right after its next checkpoint
#   tools/train/campaign.sh finish RUN MODEL         export RUN to MODEL, score it beside the shipped model
#                                                    (eval_sets.sh; WEBXR_TGZ for the glTF set) and check the
#                                                    engine against the PyTorch reference on it
# Extra train.py flags go last, e.g. --ranks 2 (both cores, when nothing else needs them) or --lr 1.5e-4.
# SHARDS="name ..." renders and trains on those shards (any shard_flags names) instead of the recipe's.
# INIT_NAME="campaign 15 (...)" before finish: which generation the run started from, as the exported model
# records it (the shipped file's name alone does not say, since every campaign ships under it).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
py=/usr/bin/python3
ro="${RENDER_OBJECTS:-$root/build/tools/render_objects/render_objects}"
photos_dir=/usr/lib/python3/dist-packages/skimage/data  # python3-skimage: CC0 / public domain photographs
photos=(astronaut.png brick.png grass.png gravel.png camera.png chelsea.png coffee.png hubble_deep_field.jpg
        retina.jpg rocket.jpg)
train_shards=(train_s26 train_asm26 train_asm27p train_asm28p)  # unseen by the shipped model; before them
# train_s23 train_asm23 train_asm24p train_asm25p (campaign 17), train_s20 train_asm20 train_asm21p train_asm22p
# (campaign 16), train_s17 train_asm17 train_asm18p train_asm19p (campaign 15), train_s13 train_asm13 train_asm14p
# train_asm15p train_asm16p (campaigns 13 and 14), train_s12 train_asm11 train_asm9p train_asm10p (campaign 12),
# train_s5 train_asm6 train_asm7p train_asm8p
shards=(${SHARDS:-${train_shards[*]}})  # SHARDS="a b ...": an arm on other shards than the recipe's
val_name="render_objects --procedural 12 --procedural-start 100000 --seed 1 (val12.shard); also logged: --style \
assembly, same objects (val_asm12.shard), and examples/gso_toy_64 at issue 15's acceptance views"

shard_flags() {  # NAME: its render_objects flags (PHOTOS = the photographs)
  case $1 in
    val12) echo --procedural 12 --procedural-start 100000 --seed 1 --fit sphere ;;
    val_asm12) echo --style assembly --procedural 12 --procedural-start 100000 --seed 1 --fit cube ;;
    train_s5) echo --procedural 3000 --procedural-start 6000 --seed 5 --fit sphere ;;  # the two that break the rule
    train_asm6) echo --style assembly --procedural 4000 --seed 6 --fit cube ;;
    *_ss8) local base; base=$(shard_flags "${1%_ss8}") || return 1  # the same objects, 8x8 samples a pixel
      echo "$base --ss 8" ;;                                           # (the real toy's filter)
    *)  # the rule: 3000 objects of seed N; train_sN primitives, train_asmN assemblies, train_asmNp with
        # photographs (the lineage's shards so far are listed beside train_shards above)
      if [[ $1 =~ ^train_s([0-9]+)$ ]]; then echo --procedural 3000 --seed "${BASH_REMATCH[1]}" --fit sphere
      elif [[ $1 =~ ^train_asm([0-9]+)$ ]]; then
        echo --style assembly --procedural 3000 --seed "${BASH_REMATCH[1]}" --fit cube
      elif [[ $1 =~ ^train_asm([0-9]+)p$ ]]; then
        echo --style assembly --procedural 3000 --seed "${BASH_REMATCH[1]}" --fit cube PHOTOS
      else echo "campaign.sh: no shard named '$1'" >&2; return 1; fi ;;
  esac
}

data_name() {  # the training data as the exported model's metadata names it
  local s flags text=""
  for s in "${shards[@]}"; do
    flags=$(shard_flags "$s") || return 1
    text+="${text:+; }$s: $flags"
  done
  echo "render_objects --views random:24 --size 64 with $text" |
    sed "s|PHOTOS|--photos <python3-skimage's ${photos[*]%.*}>|g"
}

data() {  # the validation shards and the training shards, each unless it is there
  local d=$1 s f p=()
  mkdir -p "$d"
  for f in "${photos[@]}"; do p+=("$photos_dir/$f"); done
  for s in val12 val_asm12 "${shards[@]}"; do
    [[ -f "$d/$s.shard" ]] && continue
    local flags; flags=$(shard_flags "$s")
    # at the trainers' niceness: at the default one, a render beside two arms took ~90% of their CPU for 24 min
    # shellcheck disable=SC2086  # the flags are words
    nice -n 5 "$ro" ${flags/PHOTOS/--photos ${p[*]}} --views random:24 --size 64 --no-png --threads 2 --quiet --shard "$d/$s.shard"
  done
}

train() {
  local d=$1 run=$2 minutes=$3 s files=()
  shift 3
  for s in "${shards[@]}"; do files+=("$d/$s.shard"); done
  cd "$root"
  exec nice -n 5 "$py" -m tools.train.train --data "${files[@]}" --val-data "$d/val12.shard" \
    --val-extra "asm=$d/val_asm12.shard" --val-real examples/gso_toy_64 --out "$run" \
    --init models/lact_tiny_obj64.safetensors --variant v2 --size 64 --n-input 8 --batch 8 --lr 5e-5 --warmup 50 \
    --time-schedule --max-minutes "$minutes" --steps 1000000 --val-every-minutes 10 --ckpt-every-minutes 5 \
    --threads 1 --seed 10 --ssim-weight 0 --bg-random 0 "$@"
}

checkpoints() {  # LOG: how many checkpoints it records (grep -c prints 0 but exits 1 on none)
  grep -c '"type": "checkpoint"' "$1" || true
}

stop() {  # train.py has no signal handler: stopping right after a checkpoint loses nothing
  local log=$1/log.jsonl n
  n=$(checkpoints "$log")
  while [[ "$(checkpoints "$log")" -le "$n" ]]; do sleep 0.2; done
  pkill -f "tools.train.train.*--out $1" || true
  tail -1 "$log"
}

finish() {
  local run model name
  run=$(realpath -m "$1") model=$(realpath -m "$2")  # before the cd below: paths relative to the caller
  if [[ "$model" == "$(realpath -m "$root/models/lact_tiny_obj64.safetensors")" ]]; then
    echo "campaign.sh: finish scores MODEL beside the shipped file; write it elsewhere and copy it in after" >&2
    return 2
  fi
  name=$(data_name)  # an unknown shard stops here, not with a wrong name in the model
  cd "$root"
  "$py" -m tools.train.export "$run/ckpt_last.pt" -o "$model" --data-name "$name" --val-name "$val_name" \
    ${INIT_NAME:+--init-name "$INIT_NAME"}
  bash tools/train/eval_sets.sh models/lact_tiny_obj64.safetensors "$model"
  "$py" -m tools.train.check_engine --lact build/app/lact --model "$model" --scene examples/gso_toy_64 \
    --inputs 16,20,24,28,34,38,42,46 --targets 18,22,26,30
}

usage() {
  sed -n '2,11p' "$0" >&2
  exit 2
}

case "${1:-}" in
  data) [[ $# -eq 2 ]] || usage; data "$2" ;;
  train) [[ $# -ge 4 ]] || usage; shift; train "$@" ;;
  stop) [[ $# -eq 2 ]] || usage; stop "$2" ;;
  finish) [[ $# -eq 3 ]] || usage; finish "$2" "$3" ;;
  *) usage ;;
esac
