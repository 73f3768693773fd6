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
# official code), so the GPU's minutes measure instead of debug.
# Every step is time-boxed and everything ends within GPU_CHECK_SECONDS (default 480). Each step's result is one
# line on stdout as it ends; after each step $OUT (default /tmp/lact_gpu_out) holds the two files that come back,
# renewed: gpu_check.tar.gz (every log and JSON so far, under gpu_check/) and summary.txt (the table so far), so a
# run killed mid-step still returns what it did. The logs and the unpacked bundle are in LACT_GPU_WORK (default
# /tmp/lact_gpu_work; .gpu_bundle/work where that cannot be written or is too small). For the fault-injection
# test: LACT_GPU_BUNDLE (the tarball), LACT_GPU_OFFICIAL (the official code's folder), LACT_GPU_STEP_CAP (at most
# so many seconds a step).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root="$PWD"
t0=$SECONDS
deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-480}))
out="${OUT:-/tmp/lact_gpu_out}"
dry="${LACT_GPU_DRY_RUN:-0}"
tarball="${LACT_GPU_BUNDLE:-$root/.gpu_bundle/bundle.tar.xz}"
official="${LACT_GPU_OFFICIAL:-$root/.gpu_official}"
cap="${LACT_GPU_STEP_CAP:-100000}"
grace=$((cap < 10 ? cap : 10))  # after a step's time-out, SIGKILL follows this many seconds after SIGTERM
export PATH="$PATH:/usr/local/cuda/bin"  # compute-sanitizer, nvidia-smi
source tools/gpu/check_steps.sh

python=python3
if [ "$dry" = 1 ]; then
  python=/usr/bin/python3 device=cpu precision=fp32 views=2 size=64 targets=2 layers=2 dim=128
  scale=(--layers "$layers" --dim "$dim")
else
  device=cuda precision=bf16 views=48 size=512 targets=8 layers=24 dim=768
  scale=()
fi
if ! mkdir -p "$out" 2>/dev/null || ! : >"$out/summary.txt" 2>/dev/null; then
  echo "cannot write to \$OUT ($out): nothing comes back but this output"
fi
prepare_work || exit 1
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
  bash tools/gpu/source_list.sh >"$bundle/sources.sha256"
fi
# CUDA 13's cuBLAS and cuDNN 9: the toolkit's, else the ones PyTorch's wheels carry (nvidia/*/lib). Only the
# bundle's programs see the bundle's libraries (Debian's libz, libssl, ... would shadow Python's own).
wheel_libs="$(boxed 30 "$python" -c 'import glob, os, sys
for p in sys.path:
    for d in glob.glob(os.path.join(p, "nvidia", "*", "lib")): print(d)' 2>/dev/null | paste -sd: -)"
bundle_libs="$bundle/lib:/usr/local/cuda/lib64:${wheel_libs}:${LD_LIBRARY_PATH:-}"
export LACT_FIXTURE_DIR="$bundle/fixture" LACT_FIXTURE_V2_DIR="$bundle/fixture_v2" LACT_REFERENCE_CASES="$bundle/reference_cases"
bin="$bundle/bin"
{ echo "commit $(cat "$bundle/commit" 2>/dev/null)$([ "$dry" = 1 ] && echo ', DRY RUN on the CPU at a tiny size')"
  boxed 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv ||
    echo "nvidia-smi: none, or it failed"
  LD_LIBRARY_PATH="$bundle_libs" boxed 60 "$bin/lact" info --devices; } >"$logs/device.txt" 2>&1
LD_LIBRARY_PATH="$bundle_libs" boxed 20 ldd "$bin"/* >"$logs/ldd.txt" 2>&1
missing="$(grep 'not found' "$logs/ldd.txt" | sed 's/^[[:space:]]*//; s/ .*//' | sort -u | paste -sd' ' -)"
[ -n "$missing" ] && note "bundle: FAILED: libraries not found: $missing (ldd.txt)"
check_sources "$bundle" bundle
[ "$dry" = 1 ] && [ -f "$tarball" ] && check_carried_bundle

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
# The tile-edge test (216 small attentions, cuDNN plans among them) is left to its own step, last: under the
# sanitizers it could take the whole box and the older tests' verdicts with it.
sanitize memcheck 'AllBackends/BackendOps.Attention*/1:-*TileEdges*' 60
sanitize racecheck 'AllBackends/BackendOps.Attention*/1:-*TileEdges*' 60 own  # fa2's cp.async double buffer
run_test test_ops 40 wmma --gtest_filter='*Attention*'
bench wmma 110 --repeat 3 --profile
# The activations in float32 (LACT_BF16_ACTIVATIONS=0, the path before issue 51 item 3), against the cudnn row's bf16.
LACT_BF16_ACTIVATIONS=0 bench_extra bf16_activations_off 60 --precision "$precision" --no-fp32-baseline --repeat 2
# The fast-weight update's products in one call each (LACT_SPLIT_K=0), against the cudnn row's split-K.
LACT_SPLIT_K=0 bench_extra split_k_off 60 --precision "$precision" --no-fp32-baseline --repeat 2
bench_extra tf32 60 --precision "$([ "$dry" = 1 ] && echo fp32 || echo tf32)" --no-fp32-baseline --repeat 2
# Out-of-bounds reads and writes at the kernels' tile edges (1, 65, 129 tokens), lact's own kernel.
sanitize memcheck 'AllBackends/BackendOps.AttentionAtTileEdges*/1' 60 own memcheck_tile_edges

echo "gpu_check done after $((SECONDS - t0)) s"
publish
cat "$logs/summary.txt"
