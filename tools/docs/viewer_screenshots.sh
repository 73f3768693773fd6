#!/usr/bin/env bash
# Regenerates the three viewer screenshots of docs/guide/viewer.md (docs/images/viewer_orbit.png, docs/images/viewer_test_view.png,
# docs/images/viewer_error_map.png) with `lact view`'s scripted mode on the example scene, under a virtual X display
# (xvfb-run, Mesa's software OpenGL), one worker thread. A few seconds each.
#   bash tools/docs/viewer_screenshots.sh [MODEL.safetensors]    # default: the shipped model
# Environment: LACT (the binary, default build/app/lact).
# Scene: examples/gso_toy_64, inputs 16,20,24,28,34,38,42,46 and the acceptance targets 2,10,18,26,32,40,50,58
# (the model card's); the test view is 18. The orbit starts on view 18 and turns 30 degrees (a free camera,
# no dataset view there).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="${1:-$root/models/lact_tiny_obj64.safetensors}"
lact="${LACT:-$root/build/app/lact}"
data="$root/examples/gso_toy_64"
[[ -f "$model" ]] || { echo "viewer_screenshots: no model $model" >&2; exit 1; }
[[ -x "$lact" ]] || { echo "viewer_screenshots: no lact binary $lact (build it, or set LACT)" >&2; exit 1; }
model="$(realpath "$model")"  # absolute: the viewer runs in a scratch folder
lact="$(realpath "$lact")"
command -v xvfb-run >/dev/null || { echo "viewer_screenshots: needs xvfb-run (apt install xvfb)" >&2; exit 1; }

# The viewer writes NAME.png plus NAME.view.png and NAME.json beside it; run in a scratch folder (the panel
# shows the relative screenshot name) and keep only the window PNG.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

view() {  # NAME, then extra `lact view` options
  local name="$1"; shift
  xvfb-run -a -s "-screen 0 1280x800x24" "$lact" view --model "$model" --data "$data" \
    --inputs 16,20,24,28,34,38,42,46 --targets 2,10,18,26,32,40,50,58 --threads 1 --window 800x1280 \
    --camera 18 "$@" --screenshot "$name.png" --exit --print-stats > "$name.stats"
  grep -E '^viewer\.(view|psnr|ssim|fps) ' "$name.stats" | sed "s/^/$name: /"
  cp "$name.png" "$root/docs/images/$name.png"
}

view viewer_orbit --orbit-frames 60 --orbit-degrees 30 --frames 10
view viewer_test_view --frames 30 --show-gt
view viewer_error_map --frames 30 --show-gt --show-error

ls -l "$root"/docs/images/viewer_orbit.png "$root"/docs/images/viewer_test_view.png "$root"/docs/images/viewer_error_map.png
