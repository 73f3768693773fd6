#!/usr/bin/env bash
# One command for a lent GPU machine (the device tool), in the order issue 51 asks for, all within one call:
#   1. correctness: the op tests (every CUDA op against the CPU and double loops), the official and V2 fixtures
#      through CUDA at fp32, tf32 and bf16 (test_parity), each with LACT_ATTENTION=cudnn and =own (own = lact's
#      FlashAttention-2-class kernel, kernels/cuda/attention_fa2_kernel.cuh);
#   2. speed: lact_l24_d768_ttt2x, random weights, 48 views at 512x512 bf16, encode and render, for each attention
#      path (lact bench --profile: the attention's own time gives its TFLOP/s);
#   3. the official PyTorch code (lact_nvs, carried in .gpu_official/) on the same GPU and inputs
#      (tools/gpu/official_bench.py: CUDA events, warm-up, medians; torch's SDPA backends at the attention's shape);
#   4. if time is left: compute-sanitizer over the CUDA op tests (racecheck over the fa2 kernel), the older wmma
#      kernel (LACT_ATTENTION=wmma) for comparison, tf32 timings;
#   then one table (tools/gpu/summary.py): encode s, render FPS, attention TFLOP/s, ratios to the official code.
# Prepare here first: `bash tools/gpu/make_bundle.sh` (the binaries for sm_90 and the libraries they need in
# .gpu_bundle/, the official code and einops in .gpu_official/, both ignored); then there:
#   run(command="bash tools/gpu_check.sh", carry=[".gpu_bundle", ".gpu_official"], timeout_s=540)
# LACT_GPU_DRY_RUN=1 runs every step here on the CPU at a tiny size (build/'s binaries, Debian's torch for the
# official code), so the GPU's minutes measure instead of debug. Writes every log and JSON to $OUT (or
# /tmp/lact_gpu_out); everything ends within GPU_CHECK_SECONDS (default 480).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${OUT:-/tmp/lact_gpu_out}"
dry="${LACT_GPU_DRY_RUN:-0}"
export PATH="$PATH:/usr/local/cuda/bin"  # compute-sanitizer, nvidia-smi
mkdir -p "$out"
rm -f "$out/bench_status.txt" "$out"/bench_*.json "$out/official.json"
bundle=/tmp/lact_bundle
official="$root/.gpu_official"

if [ "$dry" = 1 ]; then
  # The CPU build here stands in for the bundle; tiny sizes, fp32 (bf16 needs AVX512-BF16 on the CPU).
  mkdir -p "$bundle/bin"
  for t in app/lact tests/test_ops tests/test_newton_schulz tests/test_parity tests/test_memory_estimate; do
    ln -sf "$root/build/$t" "$bundle/bin/"
  done
  ln -sfn "$root/../shared/fixtures/lact_tiny" "$bundle/fixture"
  ln -sfn "$root/../shared/fixtures/lact_tiny_v2" "$bundle/fixture_v2"
  ln -sfn "$root/build/tests/reference_cases" "$bundle/reference_cases"
  git rev-parse --short HEAD >"$bundle/commit"
  device=cpu precision=fp32 views=2 size=64 targets=2 layers=2 dim=128 python=/usr/bin/python3
  scale=(--layers "$layers" --dim "$dim")
else
  mkdir -p "$bundle"
  if [ ! -f .gpu_bundle/bundle.tar.xz ]; then
    echo "no .gpu_bundle/bundle.tar.xz: run bash tools/gpu/make_bundle.sh here first and carry .gpu_bundle"
    exit 1
  fi
  tar -C "$bundle" -xJf .gpu_bundle/bundle.tar.xz
  device=cuda precision=bf16 views=48 size=512 targets=8 layers=24 dim=768 python=python3
  scale=()
fi
# CUDA 13's cuBLAS and cuDNN 9: the toolkit's, else the ones PyTorch's wheels carry (nvidia/*/lib).
wheel_libs="$("$python" -c 'import glob, os, sys
for p in sys.path:
    for d in glob.glob(os.path.join(p, "nvidia", "*", "lib")): print(d)' 2>/dev/null | paste -sd: -)"
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:${wheel_libs}:${LD_LIBRARY_PATH:-}"
export LACT_FIXTURE_DIR="$bundle/fixture" LACT_FIXTURE_V2_DIR="$bundle/fixture_v2" LACT_REFERENCE_CASES="$bundle/reference_cases"
bin="$bundle/bin"
{ echo "commit $(cat "$bundle/commit" 2>/dev/null)$([ "$dry" = 1 ] && echo ', DRY RUN on the CPU at a tiny size')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>/dev/null ||
    echo "no nvidia-smi"
  "$bin/lact" info --devices 2>&1; } >"$out/device.txt" 2>&1
ldd "$bin/lact" >"$out/ldd.txt" 2>&1

deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-480}))
limit() {  # the smaller of $1 and the time left; 0 when under 20 s are left
  local left=$((deadline - SECONDS))
  if [ "$left" -lt 20 ]; then echo 0; elif [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
status=()
# name, timeout, attention path, gtest args...: one test binary under LACT_ATTENTION=path, its verdict and its
# attention fallbacks (the backend says each reason once on stderr).
run_test() {
  local name="$1" t path="$3" log
  t="$(limit "$2")"
  shift 3
  log="$out/${name}_${path}.log"
  [ "$t" -eq 0 ] && { status+=("$name ($path) skipped: out of time"); return; }
  LACT_ATTENTION="$path" timeout "$t" "$bin/$name" "$@" >"$log" 2>&1
  local rc=$? summary fallbacks
  summary="$(grep -E '^\[  (PASSED|FAILED) +\]|^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \] [A-Z]' "$log" |
    tr -s ' ' | head -8 | paste -sd';' -)"
  fallbacks="$(grep -c "attention through lact's own kernel" "$log")"
  status+=("$name LACT_ATTENTION=$path rc=$rc ${summary}; attention fallbacks said: $fallbacks")
}
bench() {  # attention path, timeout, args...
  local path="$1" t
  t="$(limit "$2")"
  shift 2
  [ "$t" -eq 0 ] && { echo "bench $path skipped: out of time" >>"$out/bench_status.txt"; return; }
  LACT_ATTENTION="$path" timeout "$t" "$bin/lact" bench --device "$device" --config lact_l24_d768_ttt2x "${scale[@]}" \
    --precision "$precision" --no-fp32-baseline --models lact --views "$views" --size "$size" --targets "$targets" \
    --json "$out/bench_attn_$path.json" --force "$@" >"$out/bench_attn_$path.log" 2>&1
  echo "bench LACT_ATTENTION=$path rc=$? ran: $(grep -E '^  lact .*; attention ' "$out/bench_attn_$path.log" | tail -1 |
    sed 's/.*; attention //')" >>"$out/bench_status.txt"
}
official_bench() {
  local t
  t="$(limit 200)"
  [ "$t" -eq 0 ] && { status+=("official skipped: out of time"); return; }
  if [ ! -f "$official/lact_nvs/model.py" ]; then
    status+=("official skipped: no .gpu_official/lact_nvs (bash tools/gpu/make_bundle.sh, carry .gpu_official)")
    return
  fi
  PYTHONPATH="$root" timeout "$t" "$python" tools/gpu/official_bench.py --official "$official" --device "$device" \
    --views "$views" --size "$size" --targets "$targets" --layers "$layers" --dim "$dim" --repeat 3 --warmup 1 \
    --precision "$([ "$dry" = 1 ] && echo fp32 || echo bf16)" --json "$out/official.json" >"$out/official.log" 2>&1
  status+=("official rc=$? $(grep -m1 -o '"shims": \[[^]]*\]' "$out/official.log")")
}
sanitize() {  # tool, filter, timeout[, LACT_ATTENTION]
  local t
  t="$(limit "$3")"
  [ "$t" -eq 0 ] && { status+=("sanitizer $1 skipped: out of time"); return; }
  [ "$dry" = 1 ] && { status+=("sanitizer $1: not in a dry run"); return; }
  LACT_ATTENTION="${4:-}" timeout "$t" compute-sanitizer --tool "$1" --error-exitcode 3 "$bin/test_ops" \
    --gtest_filter="$2" >"$out/sanitizer_$1.log" 2>&1
  status+=("sanitizer $1 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$1.log" | head -1)")
}

# 1. Correctness first: every CUDA op, then the fixtures at every precision, each attention path.
run_test test_ops 90 cudnn
run_test test_ops 40 own --gtest_filter='*Attention*'
run_test test_parity 120 cudnn
run_test test_parity 120 own
run_test test_newton_schulz 60 cudnn
# 2. The paper's setting, each attention path (the profile's attention time gives its TFLOP/s).
bench cudnn 110 --repeat 3 --profile
bench own 110 --repeat 3 --profile
# 3. The official code on the same GPU.
official_bench
# 4. If time is left.
sanitize memcheck 'AllBackends/BackendOps.Attention*/1' 60
sanitize racecheck 'AllBackends/BackendOps.Attention*/1' 60 own  # fa2's cp.async double buffer
run_test test_ops 40 wmma --gtest_filter='*Attention*'
bench wmma 110 --repeat 3 --profile
bench_extra() {  # tag, timeout, args...: timings beside the table (bench_<tag>.json)
  local tag="$1" t
  t="$(limit "$2")"
  shift 2
  [ "$t" -eq 0 ] && return
  timeout "$t" "$bin/lact" bench --device "$device" --config lact_l24_d768_ttt2x "${scale[@]}" --models lact \
    --views "$views" --size "$size" --targets "$targets" --json "$out/bench_$tag.json" --force "$@" \
    >"$out/bench_$tag.log" 2>&1
  echo "bench $tag rc=$?" >>"$out/bench_status.txt"
}
# The activations in float32 (LACT_BF16_ACTIVATIONS=0, the path before issue 51 item 3), against the cudnn row's bf16.
LACT_BF16_ACTIVATIONS=0 bench_extra bf16_activations_off 60 --precision "$precision" --no-fp32-baseline --repeat 2
# The fast-weight update's products in one call each (LACT_SPLIT_K=0), against the cudnn row's split-K.
LACT_SPLIT_K=0 bench_extra split_k_off 60 --precision "$precision" --no-fp32-baseline --repeat 2
bench_extra tf32 60 --precision "$([ "$dry" = 1 ] && echo fp32 || echo tf32)" --no-fp32-baseline --repeat 2

"$python" tools/gpu/summary.py "$out" --layers "$layers" --dim "$dim" "${status[@]}"
