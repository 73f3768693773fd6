#!/usr/bin/env bash
# Builds the fuzz targets (dataset readers, model/state files, camera paths, CLI values, image decoders, lact
# serve's HTTP requests) (tests/fuzz) with clang's libFuzzer + ASan + UBSan and runs each for
# SECONDS on its seed corpus. Exit status: 0 when no target found a crash, 1 otherwise (or when clang is missing).
#
#   tests/fuzz/run_fuzzers.sh 60                   # every target, 60 s each
#   tests/fuzz/run_fuzzers.sh 30 fuzz_index        # some targets only
#
# Environment:
#   LACT_FUZZ_BUILD       build folder (default: build-fuzz in the repository root)
#   LACT_DATA             folder holding gso_toy/ and mydesk/ (default: ../shared/data next to the repository);
#                         when present (and python3 is), trimmed copies of their camera files join the seeds
#   LACT_FUZZ_KEEP_GOING  1: run in libFuzzer's fork mode and keep fuzzing past crashes (collects every crash
#                         found in the time; the script still fails if there was any)
#   LACT_FUZZ_JOBS        build parallelism (default 2)
#
# Crash inputs go to $LACT_FUZZ_BUILD/artifacts/<target>/ (crash-*, leak-*, timeout-*, oom-*). Reproduce one with
#   $LACT_FUZZ_BUILD/<target> <crash file>
set -euo pipefail

if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ || "$1" -eq 0 ]]; then
  echo "usage: $0 SECONDS_PER_TARGET [TARGET...]" >&2
  exit 2
fi
SECONDS_PER_TARGET=$1
shift

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${LACT_FUZZ_BUILD:-$ROOT/build-fuzz}
DATA=${LACT_DATA:-$ROOT/../shared/data}
ALL_TARGETS=(fuzz_lact_cameras fuzz_nerfstudio fuzz_nerf_synthetic fuzz_index fuzz_colmap fuzz_safetensors
             fuzz_camera_path fuzz_cli_values fuzz_image_decode fuzz_http)
if [[ $# -gt 0 ]]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
for t in "${TARGETS[@]}"; do
  if [[ ! " ${ALL_TARGETS[*]} " == *" $t "* ]]; then
    echo "run_fuzzers: unknown target '$t' (targets: ${ALL_TARGETS[*]})" >&2
    exit 2
  fi
done

if ! command -v clang >/dev/null 2>&1 || ! command -v clang++ >/dev/null 2>&1; then
  echo "run_fuzzers: clang / clang++ not found: install clang and libclang-rt-14-dev (libFuzzer)" >&2
  exit 1
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     clang++ -x c++ -fsanitize=fuzzer,address,undefined -o /dev/null - >/dev/null 2>&1; then
  echo "run_fuzzers: clang++ cannot link -fsanitize=fuzzer,address,undefined: install libclang-rt-14-dev" >&2
  exit 1
fi

echo "== building the fuzz targets in $BUILD"
# One compile per batch of a library's files (CMake's unity build): each file's share of the JSON and HTTP headers
# is compiled and instrumented once per batch instead of once per file.
CC=clang CXX=clang++ cmake -S "$ROOT/tests/fuzz" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$BUILD" -j "${LACT_FUZZ_JOBS:-2}" --target "${TARGETS[@]}" >/dev/null

# Seed corpora: the committed seeds, plus trimmed real camera files when the shared data is there.
# libFuzzer adds what it finds to the corpus folder, so later runs start from there.
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD/corpus/$t" "$BUILD/artifacts/$t"
  if [[ -d "$ROOT/tests/fuzz/seeds/$t" ]]; then cp -f "$ROOT/tests/fuzz/seeds/$t"/* "$BUILD/corpus/$t/"; fi
done
if [[ -d "$DATA" ]] && command -v python3 >/dev/null 2>&1; then
  python3 - "$DATA" "$BUILD/corpus" <<'PY'
import json, os, sys
data, corpus = sys.argv[1], sys.argv[2]

def compact(obj):
    return json.dumps(obj, separators=(",", ":"))

def put(target, name, text):
    folder = os.path.join(corpus, target)
    if os.path.isdir(folder):
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

gso = load(os.path.join(data, "gso_toy", "opencv_cameras.json"))
if isinstance(gso, list) and len(gso) >= 2:
    put("fuzz_lact_cameras", "real_gso_toy.json", compact(gso[:2]))
    put("fuzz_index", "real_gso_toy.txt", "j" + compact(["scene/opencv_cameras.json"]) + "\n@@\n" + compact(gso[:2]))
desk = load(os.path.join(data, "mydesk", "opencv_cameras.json"))
if isinstance(desk, dict) and isinstance(desk.get("frames"), list) and len(desk["frames"]) >= 3:
    trimmed = {k: v for k, v in desk.items() if k != "frames" and not k.startswith("fold_8_kmeans_")}
    trimmed["frames"] = desk["frames"][:3]
    trimmed["fold_8_kmeans_2_input"] = [1, 2]
    put("fuzz_lact_cameras", "real_mydesk.json", compact(trimmed))
    put("fuzz_index", "real_mydesk.txt", "t" + "scene/opencv_cameras.json\n" + "\n@@\n" + compact(trimmed))
PY
fi

FAILED=()
for t in "${TARGETS[@]}"; do
  echo "== $t: ${SECONDS_PER_TARGET} s"
  log="$BUILD/$t.log"
  extra=()
  if [[ "${LACT_FUZZ_KEEP_GOING:-0}" == 1 ]]; then
    extra=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  dict="$ROOT/tests/fuzz/camera_files.dict"  # a target's own dictionary when it has one
  [[ -f "$ROOT/tests/fuzz/$t.dict" ]] && dict="$ROOT/tests/fuzz/$t.dict"
  max_len=8192  # HTTP: past the server's 8 KiB header limit, with a body
  [[ $t == fuzz_http ]] && max_len=20000
  before=$(ls "$BUILD/artifacts/$t")
  status=0
  # The harness writes its files under $TMPDIR/lact_fuzz_<pid>; keep them (and what crashed children leave) in
  # the build folder. stdin from /dev/null: a fuzzed image path such as /dev/stdin must not block the run.
  tmp="$BUILD/tmp/$t"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$BUILD/artifacts/$t" &&
   TMPDIR="$tmp" \
   ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
   UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
   "$BUILD/$t" "$BUILD/corpus/$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
     -max_len="$max_len" -dict="$dict" \
     -artifact_prefix="$BUILD/artifacts/$t/" -print_final_stats=1 "${extra[@]}" </dev/null >"$log" 2>&1) || status=$?
  rm -rf "$tmp"
  new=$(comm -13 <(echo "$before") <(ls "$BUILD/artifacts/$t") || true)
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1 || true)
  [[ -z "$runs" ]] && runs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  corpus=$(grep -Eo 'corp: [0-9]+(/[0-9]+[a-zA-Z]*)?' "$log" | tail -1 || true)
  if [[ $status -ne 0 || -n "$new" ]]; then
    FAILED+=("$t")
    echo "$t: FAILED (exit $status): runs ${runs:-?}, ${cov:-cov ?}, ${corpus:-corp ?}; log $log"
    # Replay each new input for its first report line, and count the distinct ones.
    for f in $new; do
      mkdir -p "$tmp"
      (cd "$tmp" && TMPDIR="$tmp" "$BUILD/$t" "$BUILD/artifacts/$t/$f" </dev/null 2>&1 || true) |
        grep -Em1 'fuzz harness:|runtime error:|ERROR: [A-Za-z]+Sanitizer|ERROR: libFuzzer: (timeout|out-of-memory)' |
        sed -E "s|$tmp/lact_fuzz_[0-9]+|<tmp>|g; s/==[0-9]+==/==/" || echo "(no report on replay)"
      rm -rf "$tmp"
    done | sort | uniq -c | sed 's/^/  /'
    for f in $new; do echo "  artifact: $BUILD/artifacts/$t/$f"; done
  else
    echo "$t: ok: runs ${runs:-?}, ${cov:-cov ?}, ${corpus:-corp ?}"
  fi
done

if [[ ${#FAILED[@]} -gt 0 ]]; then
  echo "run_fuzzers: crashes in: ${FAILED[*]}" >&2
  exit 1
fi
echo "run_fuzzers: no crashes"
