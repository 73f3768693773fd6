#!/usr/bin/env bash
# One command for a lent GPU machine (the device tool): checks the CUDA backend against the CPU backend and
# the fixture, then times the paper's setting. Prepare the binaries here first (built for sm_90, with the
# libraries they need): `bash tools/gpu/make_bundle.sh`; then run this there with .gpu_bundle carried.
# Without a bundle it builds in place (needs our build dependencies, which the device image lacks).
# Writes every log and JSON to $OUT (or /tmp/lact_gpu_out) and prints a short table last; about 5 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/lact_gpu_out}"
export PATH="$PATH:/usr/local/cuda/bin"  # compute-sanitizer, nvidia-smi
mkdir -p "$out"
bundle=/tmp/lact_bundle
mkdir -p "$bundle"
if [ -f .gpu_bundle/bundle.tar.xz ]; then
  tar -C "$bundle" -xJf .gpu_bundle/bundle.tar.xz
else
  echo "no .gpu_bundle/bundle.tar.xz: building for sm_90 here"
  cmake -S . -B build-gpu -DLACT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLACT_VIEWER=OFF >"$out/build.log" 2>&1 &&
    cmake --build build-gpu -j"$(nproc)" >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
  mkdir -p "$bundle/bin"
  for t in app/lact tests/test_ops tests/test_newton_schulz tests/test_parity tests/test_memory_estimate; do
    cp build-gpu/$t "$bundle/bin/"
  done
  cp -r ../shared/fixtures/lact_tiny "$bundle/fixture" 2>/dev/null
  cp -r ../shared/fixtures/lact_tiny_v2 "$bundle/fixture_v2" 2>/dev/null
  cp -r build-gpu/tests/reference_cases "$bundle/reference_cases" 2>/dev/null
fi
# CUDA 13's cuBLAS: the toolkit's, else the one PyTorch's wheels carry.
cublas_dir="$(dirname "$(find /usr/local/cuda*/ /opt -name 'libcublas.so.13' 2>/dev/null | head -1)" 2>/dev/null)"
export LD_LIBRARY_PATH="$bundle/lib:${cublas_dir:-/usr/local/cuda/lib64}:${LD_LIBRARY_PATH:-}"
export LACT_FIXTURE_DIR="$bundle/fixture" LACT_FIXTURE_V2_DIR="$bundle/fixture_v2" LACT_REFERENCE_CASES="$bundle/reference_cases"
bin="$bundle/bin"
{ echo "commit $(cat $bundle/commit 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; } \
  >"$out/device.txt" 2>&1
ldd "$bin/lact" >"$out/ldd.txt" 2>&1

# Ceilings (METHOD.md): device-to-device copy and a bf16 product through PyTorch, on random data.
timeout 60 python3 - >"$out/ceilings.txt" 2>&1 <<'PY'
import torch
def timed(f, reps=10):
    for _ in range(3): f()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
    ts.sort(); return ts[len(ts) // 2]
x = torch.randint(0, 256, (1 << 30,), device="cuda", dtype=torch.uint8); y = torch.empty_like(x)
t = timed(lambda: y.copy_(x)); print(f"copy_TBps {2 * x.numel() / t / 1e12:.2f}")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
t = timed(lambda: a @ b); print(f"torch_bf16_TFLOPs {2 * 8192**3 / t / 1e12:.1f}")
a32, b32 = a.float(), b.float()
torch.backends.cuda.matmul.allow_tf32 = False
t = timed(lambda: a32 @ b32); print(f"torch_fp32_TFLOPs {2 * 8192**3 / t / 1e12:.1f}")
PY

# Everything below shares one deadline (GPU_CHECK_SECONDS, default 420), so that the script ends within about 8
# minutes of device time.
deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-420}))
limit() {  # the smaller of $1 and the time left; 0 when under 20 s are left
  local left=$((deadline - SECONDS))
  if [ "$left" -lt 20 ]; then echo 0; elif [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
status=()
run_test() {  # name, timeout
  local t
  t="$(limit "$2")"
  [ "$t" -eq 0 ] && { status+=("$1 skipped: out of time"); return; }
  timeout "$t" "$bin/$1" >"$out/$1.log" 2>&1
  local rc=$?
  local summary
  summary="$(grep -E '^\[  (PASSED|FAILED) +\]|^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \] [A-Z]' "$out/$1.log" |
    tr -s ' ' | head -8 | paste -sd';' -)"
  status+=("$1 rc=$rc ${summary}")
}
run_test test_ops 120
run_test test_newton_schulz 120
run_test test_memory_estimate 60
run_test test_parity 180
# The CUDA instances of the op tests under compute-sanitizer (works on the Firecracker machines, KINDS.md):
# out-of-bounds and misaligned accesses everywhere, shared-memory races in the attention kernels.
sanitize() {  # tool, filter, timeout
  local t
  t="$(limit "$3")"
  [ "$t" -eq 0 ] && { status+=("sanitizer $1 skipped: out of time"); return; }
  timeout "$t" compute-sanitizer --tool "$1" --error-exitcode 3 "$bin/test_ops" --gtest_filter="$2" \
    >"$out/sanitizer_$1.log" 2>&1
  status+=("sanitizer $1 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$1.log" | head -1)")
}

# The paper's setting: lact_l24_d768_ttt2x, random weights, 48 views at 512x512 (196,608 tokens).
bench() {  # tag, timeout, args...
  local tag="$1" t
  t="$(limit "$2")"
  shift 2
  [ "$t" -eq 0 ] && { echo "bench $tag skipped: out of time" >>"$out/bench_status.txt"; return; }
  timeout "$t" "$bin/lact" bench --device cuda --config lact_l24_d768_ttt2x --json "$out/bench_$tag.json" "$@" \
    >"$out/bench_$tag.log" 2>&1
  echo "bench $tag rc=$?" >>"$out/bench_status.txt"
}
# The NCCL path (issue 16), one rank on one GPU (the bundle has no MPI: the rank runs alone): its state against
# the same encode without --distributed.
nccl_check() {
  local t
  t="$(limit 60)"
  [ "$t" -eq 0 ] && { status+=("nccl skipped: out of time"); return; }
  local args=(encode --model "$bundle/fixture/model.safetensors" --data "$bundle/fixture/index.json" --inputs 0,1,2,3
              --device cuda --force)
  timeout "$t" "$bin/lact" "${args[@]}" -o "$out/state_cuda.safetensors" >"$out/nccl.log" 2>&1 &&
    timeout "$t" "$bin/lact" "${args[@]}" -o "$out/state_nccl.safetensors" --distributed nccl >>"$out/nccl.log" 2>&1
  local rc=$?
  status+=("nccl rc=$rc $(python3 - "$out" <<'PY' 2>&1 | tail -1
import json, struct, sys, numpy as np
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); d = b[8 + n:]
    return {k: np.frombuffer(d[v["data_offsets"][0]:v["data_offsets"][1]], np.float32) for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1] + "/state_cuda.safetensors"), load(sys.argv[1] + "/state_nccl.safetensors")
print("state max |diff| %.3g over %d tensors" % (max(float(np.abs(a[k] - b[k]).max()) for k in a), len(a)))
PY
)")
}

# In order of importance: the issue's number first, the sanitizers, then the comparisons.
nccl_check
bench bf16_48x512 180 --precision bf16 --no-fp32-baseline --models lact --views 48 --size 512 --targets 8 --repeat 3 --profile
sanitize memcheck 'AllBackends/BackendOps.*/1' 90
sanitize racecheck 'AllBackends/BackendOps.Attention*/1' 90
bench bf16_48x512_no_graphs 120 --precision bf16 --no-fp32-baseline --models lact --views 48 --size 512 --targets 8 --repeat 2 --no-graphs
bench tf32_48x512 90 --precision tf32 --no-fp32-baseline --models lact --views 48 --size 512 --targets 8 --repeat 2
bench fp32_48x512 90 --precision fp32 --models lact --views 48 --size 512 --targets 8 --repeat 1
bench bf16_full_vs_lact 90 --precision bf16 --no-fp32-baseline --models lact,full --views 4,8,16 --size 256 --targets 4 --repeat 2
# Issue 40: the 1M-token scale in one process (64 views at 1024x1024, 1.05M input tokens), last: only if time is left.
bench bf16_1M_tokens 90 --precision bf16 --no-fp32-baseline --models lact --views 64 --size 1024 --targets 1 --repeat 1

python3 - "$out" "${status[@]}" <<'PY'
import json, os, sys
out = sys.argv[1]
print("\n== lact gpu_check ==")
print(open(os.path.join(out, "device.txt")).read().strip())
if os.path.exists(os.path.join(out, "ceilings.txt")):
    print("ceilings:", " ".join(open(os.path.join(out, "ceilings.txt")).read().split()))
for s in sys.argv[2:]:
    print("test", s)
print(open(os.path.join(out, "bench_status.txt")).read().strip() if os.path.exists(os.path.join(out, "bench_status.txt")) else "")
print(f"{'run':<22}{'model':<6}{'views':>6}{'size':>6}{'tokens':>8}{'encode s':>10}{'render FPS':>11}{'enc TFLOP/s':>12}{'gemm TFLOP/s':>13}")
for name in sorted(os.listdir(out)):
    if not (name.startswith("bench_") and name.endswith(".json")): continue
    d = json.load(open(os.path.join(out, name)))
    for r in d.get("rows", []):
        if r.get("skipped"):
            print(f"{name[6:-5]:<22}{r['model']:<6}{r['views']:>6}{r['height']:>6}  skipped: {r['skipped']}"); continue
        print(f"{name[6:-5]:<22}{r['model']:<6}{r['views']:>6}{r['height']:>6}{r['tokens']:>8}{r['encode_s']:>10.3f}"
              f"{r['render_fps']:>11.1f}{r['encode_gflops'] / 1e3:>12.1f}{r['gemm_gflops'] / 1e3:>13.1f}")
for name in sorted(os.listdir(out)):
    if not (name.startswith("bench_") and name.endswith(".json")): continue
    for r in json.load(open(os.path.join(out, name))).get("rows", []):
        for what in ("encode_profile", "render_profile"):
            if r.get(what):
                total = sum(p["ms"] for p in r[what])
                top = ", ".join(f"{p['op']} {100 * p['ms'] / total:.0f}%" for p in r[what][:6])
                print(f"{name[6:-5]} {what[:-8]} {total:.1f} ms: {top}")
print("goal on an H200 (issue 7): encode <= 0.5 s, render >= 100 FPS at 48 views 512x512 bf16; paper A100: 1.4 s, 38.7 FPS")
PY
