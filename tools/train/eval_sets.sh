#!/usr/bin/env bash
# Issue 15's results table: scores models on the held-out sets, each next to the nearest-input and white
# baselines of the same `lact render` report, one markdown row per set and model.
#   bash tools/train/eval_sets.sh [--threads N] MODEL.safetensors [MODEL2 ...]
# Sets (made on first use under $EVAL_DIR, default data/eval; the glTF set needs WEBXR_TGZ, the tarball of
# `npm pack @webxr-input-profiles/assets` (MIT), and is skipped without it):
#   procedural  40 objects, render_objects --procedural 40 --procedural-start 100000 --seed 1 --fit sphere,
#               24 random views; inputs uniform:8, targets 1,4,..,22
#   assembly    the same with --style assembly --fit cube (toy-like objects, GSO framing)
#   gltf        8 WebXR controllers (right hands of 8 vendors), --fit cube, same views
#   real        examples/gso_toy_64 (a Google Scanned Objects toy), issue 15's acceptance views
#   real-b      examples/gso_toy_64, inputs as above, targets 18,22,26,30,32,36,40,44
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads=2
if [[ "${1:-}" == "--threads" ]]; then threads="$2"; shift 2; fi
[[ $# -ge 1 ]] || { echo "usage: eval_sets.sh [--threads N] MODEL.safetensors [MODEL2 ...]" >&2; exit 2; }
lact="${LACT:-$root/build/app/lact}"
ro="${RENDER_OBJECTS:-$root/build/tools/render_objects/render_objects}"
eval_dir="${EVAL_DIR:-$root/data/eval}"
mkdir -p "$eval_dir"

common=(--procedural-start 100000 --seed 1 --views random:24 --size 64 --threads "$threads" --quiet)
[[ -f "$eval_dir/procedural/index.json" ]] ||
  "$ro" --procedural 40 "${common[@]}" --fit sphere --out "$eval_dir/procedural"
[[ -f "$eval_dir/assembly/index.json" ]] ||
  "$ro" --style assembly --procedural 40 "${common[@]}" --fit cube --out "$eval_dir/assembly"
if [[ ! -f "$eval_dir/gltf/index.json" && -n "${WEBXR_TGZ:-}" ]]; then
  unpacked="$(mktemp -d)"
  tar xzf "$WEBXR_TGZ" -C "$unpacked"
  profiles="$unpacked/package/dist/profiles"
  files=()
  for p in hp-mixed-reality htc-vive-cosmos meta-quest-touch-pro oculus-touch-v3 pico-4 samsung-odyssey valve-index \
           yvr-touch-v2; do files+=("$profiles/$p/right.glb"); done
  "$ro" --gltf "${files[@]}" --seed 1 --views random:24 --size 64 --threads "$threads" --quiet --fit cube \
    --out "$eval_dir/gltf"
  rm -rf "$unpacked"
fi

score() {  # SET MODEL DATA INPUTS TARGETS
  local out
  out="$(mktemp -d)"
  "$lact" render --model "$2" --data "$3" --inputs "$4" --targets "$5" --out "$out" --quiet --threads "$threads" \
    > /dev/null
  python3 - "$out/report.json" "$1" "$2" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
print("| %s | %s | %d | %.2f | %.3f | %.2f | %.2f | %+.2f |" % (
    sys.argv[2], os.path.basename(sys.argv[3]), len(r["scenes"]), r["psnr"], r["ssim"],
    r["psnr_nearest_input"], r["psnr_white"], r["psnr"] - r["psnr_nearest_input"]))
PY
  rm -rf "$out"
}

toy="$root/examples/gso_toy_64"
echo "| set | model | objects | PSNR | SSIM | nearest input | white | margin over nearest |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for model in "$@"; do
  [[ -f "$model" ]] || { echo "eval_sets: no model $model" >&2; exit 1; }
  score procedural "$model" "$eval_dir/procedural/index.json" uniform:8 1,4,7,10,13,16,19,22
  score assembly "$model" "$eval_dir/assembly/index.json" uniform:8 1,4,7,10,13,16,19,22
  if [[ -f "$eval_dir/gltf/index.json" ]]; then
    score gltf "$model" "$eval_dir/gltf/index.json" uniform:8 1,4,7,10,13,16,19,22
  fi
  score real "$model" "$toy" 16,20,24,28,34,38,42,46 2,10,18,26,32,40,50,58
  score real-b "$model" "$toy" 16,20,24,28,34,38,42,46 18,22,26,30,32,36,40,44
done
