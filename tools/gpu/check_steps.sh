# shellcheck shell=bash disable=SC2154  # the variables named below are gpu_check.sh's
# The steps of tools/gpu_check.sh (sourced by it, which sets root, out, dry, tarball, official, cap, grace, deadline,
# python, device, precision, views, size, targets, layers, dim and scale). Every step runs time-boxed, ends in one
# status line (`note`: on stdout at once, in status.txt) and renews what $OUT returns (`publish`), so a step that
# hangs, crashes or prints garbage costs only its own time box, and a kill of the whole run loses only the step
# it was in.
hung=""  # the attention paths a step timed out on: their later correctness steps are skipped

boxed() {  # seconds, command...: the command, ended after so many seconds (at most the step cap)
  local t="$1"
  shift
  [ "$t" -gt "$cap" ] && t=$cap
  timeout -k "$grace" "$t" "$@"
}

limit() {  # the smaller of $1, the step cap and the time left less the kill grace; 0 when under 20 s are left
  local left=$((deadline - SECONDS - grace)) t="$1"
  [ "$t" -gt "$cap" ] && t=$cap
  if [ "$left" -lt 20 ]; then echo 0; elif [ "$t" -lt "$left" ]; then echo "$t"; else echo "$left"; fi
}

# Sets work, logs and bundle: the first folder where the logs can be written and the bundle unpacked (/tmp may be
# small or read-only; the carried .gpu_bundle lies on the machine's disk).
prepare_work() {
  local w err tried=""
  for w in "${LACT_GPU_WORK:-/tmp/lact_gpu_work}" "$root/.gpu_bundle/work"; do
    work="$w" logs="$w/gpu_check" bundle="$w/bundle"
    rm -rf "$logs" "$bundle" 2>/dev/null
    if ! mkdir -p "$logs" "$bundle" 2>/dev/null || ! echo probe >"$logs/status.txt" 2>/dev/null; then
      tried+="cannot write in $w; "
      continue
    fi
    : >"$logs/status.txt"
    [ -n "$tried" ] && note "work folder $w (${tried%; })"
    [ "$dry" = 1 ] && return 0
    if [ ! -f "$tarball" ]; then
      note "bundle: FAILED: no $tarball (run bash tools/gpu/make_bundle.sh first, carry .gpu_bundle): lact's steps fail"
      return 0
    fi
    err="$(if command -v xz >/dev/null; then
      boxed 180 tar -C "$bundle" -xJf "$tarball"
    else  # an image without xz: Python's tarfile reads it too
      boxed 180 "$python" -m tarfile -e "$tarball" "$bundle"
    fi 2>&1)" && return 0
    rm -rf "$logs" "$bundle"
    tried+="cannot unpack the bundle into $w: $(echo "$err" | head -1 | cut -c1-120); "
  done
  echo "no folder takes the logs and the bundle (${tried%; }): nothing can run"
  return 1
}

# The logs so far and the table so far into $OUT, each file replaced whole (a kill mid-copy leaves the last one).
publish() {
  local f size
  for f in "$logs"/*; do  # a step that printed garbage for minutes: its first 200 kB and last 800 kB
    size=$(stat -c %s "$f" 2>/dev/null || echo 0)
    [ "$size" -gt 2000000 ] || continue
    { head -c 200000 "$f"
      printf '\n[... %s bytes cut by gpu_check ...]\n' $((size - 1000000))
      tail -c 800000 "$f"; } >"$f.cut" && mv -f "$f.cut" "$f"
  done
  boxed 60 "$python" tools/gpu/summary.py "$logs" --layers "$layers" --dim "$dim" >"$logs/summary.txt" 2>&1 ||
    cat "$logs/status.txt" >>"$logs/summary.txt"  # the status lines at least, should Python itself fail
  { tar -C "$work" -czf "$out/gpu_check.tar.gz.part" gpu_check &&
      mv -f "$out/gpu_check.tar.gz.part" "$out/gpu_check.tar.gz" &&
      cp "$logs/summary.txt" "$out/summary.txt.part" && mv -f "$out/summary.txt.part" "$out/summary.txt"; } 2>/dev/null
}

note() {  # one status line: at once on stdout, into status.txt, then everything into $OUT
  echo "$*" >>"$logs/status.txt"
  echo "[$((SECONDS - t0)) s] $*"
  publish
}

# seconds, log, command...: runs it time-boxed, its output in the log (at most 256 MiB); sets verdict ("ok" or
# "FAILED: why, in a few words") and timed_out.
run_step() {
  local t="$1" log="$2" start=$SECONDS rc last
  shift 2
  (ulimit -f 262144; exec timeout -k "$grace" "$t" "$@") >"$log" 2>&1
  rc=$?
  timed_out=$([ $((SECONDS - start)) -ge "$t" ] && [ "$rc" -ne 0 ] && echo 1 || echo 0)
  last="$(grep -a -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -1 | LC_ALL=C tr -cd '[:print:]' | cut -c1-160)"
  last="${last:+; last line: $last}"
  if [ "$rc" -eq 0 ]; then
    verdict=ok
  elif [ "$timed_out" = 1 ]; then
    verdict="FAILED: timed out after $t s (exit $rc)$last"
  elif [ "$rc" -gt 128 ]; then
    verdict="FAILED: killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))$last"
  else
    verdict="FAILED: exit $rc$last"
  fi
}

# name, seconds, attention path, gtest args...: one test binary under LACT_ATTENTION=path, its verdict and its
# attention fallbacks (the backend says each reason once on stderr: cuDNN absent, older than 9.13, refusing).
run_test() {
  local name="$1" path="$3" t log summary fallbacks first
  t="$(limit "$2")"
  shift 3
  log="$logs/${name}_${path}.log"
  [ "$t" -eq 0 ] && { note "$name LACT_ATTENTION=$path: skipped: out of time"; return; }
  [[ " $hung " == *" $path "* ]] && { note "$name LACT_ATTENTION=$path: skipped: this path timed out before"; return; }
  LACT_ATTENTION="$path" LD_LIBRARY_PATH="$bundle_libs" run_step "$t" "$log" "$bin/$name" "$@"
  [ "$timed_out" = 1 ] && hung+=" $path"
  summary="$(grep -a -E '^\[  (PASSED|FAILED) +\]|^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \] [A-Z]' "$log" |
    tr -s ' ' | head -8 | paste -sd';' -)"
  fallbacks="$(grep -a -c "attention through lact's own kernel" "$log")"
  first="$(grep -a -m1 -o "attention through lact's own kernel: .*" "$log" | cut -c38-160)"
  note "$name LACT_ATTENTION=$path: $verdict; ${summary:-no gtest summary};" \
    "attention fallbacks: $fallbacks${first:+ (first: $first)}"
}

bench() {  # attention path, seconds, args...: lact bench at the paper's setting, bench_attn_<path>.json
  local path="$1" t
  t="$(limit "$2")"
  shift 2
  [ "$t" -eq 0 ] && { note "bench LACT_ATTENTION=$path: skipped: out of time"; return; }
  LACT_ATTENTION="$path" LD_LIBRARY_PATH="$bundle_libs" run_step "$t" "$logs/bench_attn_$path.log" "$bin/lact" bench \
    --device "$device" --config lact_l24_d768_ttt2x "${scale[@]}" --precision "$precision" --no-fp32-baseline \
    --models lact --views "$views" --size "$size" --targets "$targets" --json "$logs/bench_attn_$path.json" --force "$@"
  note "bench LACT_ATTENTION=$path: $verdict; ran: $(grep -a -E '^  lact .*; attention ' "$logs/bench_attn_$path.log" |
    tail -1 | sed 's/.*; attention //' | cut -c1-160)"
}

bench_extra() {  # tag, seconds, args...: timings beside the table (bench_<tag>.json)
  local tag="$1" t
  t="$(limit "$2")"
  shift 2
  [ "$t" -eq 0 ] && { note "bench $tag: skipped: out of time"; return; }
  LD_LIBRARY_PATH="$bundle_libs" run_step "$t" "$logs/bench_$tag.log" "$bin/lact" bench --device "$device" \
    --config lact_l24_d768_ttt2x "${scale[@]}" --models lact --views "$views" --size "$size" --targets "$targets" \
    --json "$logs/bench_$tag.json" --force "$@"
  note "bench $tag: $verdict"
}

official_bench() {  # the official code, with the environment Python came with (not the bundle's libraries)
  local t
  t="$(limit 200)"
  [ "$t" -eq 0 ] && { note "official: skipped: out of time"; return; }
  if [ ! -f "$official/lact_nvs/model.py" ]; then
    note "official: skipped: no $official/lact_nvs (bash tools/gpu/make_bundle.sh, carry .gpu_official)"
    return
  fi
  PYTHONPATH="$root" PYTHONUNBUFFERED=1 run_step "$t" "$logs/official.log" "$python" tools/gpu/official_bench.py \
    --official "$official" --device "$device" --views "$views" --size "$size" --targets "$targets" --layers "$layers" \
    --dim "$dim" --repeat 3 --warmup 1 --precision "$([ "$dry" = 1 ] && echo fp32 || echo bf16)" \
    --json "$logs/official.json"
  note "official: $verdict $(grep -a -m1 -o '"shims": \[[^]]*\]' "$logs/official.log")"
}

sanitize() {  # tool, gtest filter, seconds[, LACT_ATTENTION[, name of the step]]
  local t sanitizer name="${5:-$1}"
  t="$(limit "$3")"
  [ "$t" -eq 0 ] && { note "sanitizer $name: skipped: out of time"; return; }
  [ "$dry" = 1 ] && { note "sanitizer $name: skipped: not in a dry run"; return; }
  sanitizer="$(command -v compute-sanitizer ||
    ls /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)"
  [ -z "$sanitizer" ] && { note "sanitizer $name: skipped: no compute-sanitizer on this machine"; return; }
  LACT_ATTENTION="${4:-}" LD_LIBRARY_PATH="$bundle_libs" run_step "$t" "$logs/sanitizer_$name.log" \
    "$sanitizer" --tool "$1" --error-exitcode 3 "$bin/test_ops" --gtest_filter="$2"
  note "sanitizer $name: $verdict; $(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/sanitizer_$name.log" | head -1)"
}

# The sources a bundle was built from (its sources.sha256, tools/gpu/source_list.sh) against this tree's: a
# mismatch is said loudly, and the run goes on. folder (holding commit and sources.sha256), its name in the line.
check_sources() {
  local dir="$1" name="$2" commit changed total
  commit="$(head -c 200 "$dir/commit" 2>/dev/null | head -1)"
  if [ ! -s "$dir/sources.sha256" ]; then
    note "$name${commit:+ $commit}: NOT CHECKED against this tree (no sources.sha256: made by an older make_bundle.sh)"
    return
  fi
  total=$(wc -l <"$dir/sources.sha256")
  changed="$(sha256sum -c --quiet "$dir/sources.sha256" 2>/dev/null | sed 's/: FAILED.*$//')"
  if [ -z "$changed" ]; then
    note "$name $commit: its $total source files equal this tree's"
  else
    note "!!! $name $commit: MISMATCH: $(echo "$changed" | wc -l) of its $total source files differ from this tree's" \
      "($(echo "$changed" | head -5 | paste -sd' ' -)): its results are not this tree's !!!"
  fi
}

check_carried_bundle() {  # the dry run: is the bundle that will be carried built from this tree?
  local dir="$root/.gpu_bundle" head
  head="$(git rev-parse --short HEAD)"
  check_sources "$dir" "carried bundle"  # make_bundle.sh leaves its commit and sources.sha256 beside the tarball
  if [ -f "$dir/commit" ] && [ "$(cat "$dir/commit")" != "$head" ]; then
    note "carried bundle: built at commit $(cat "$dir/commit"), HEAD is $head"
  fi
}
