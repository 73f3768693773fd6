#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (CTest); then builds again with AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/: no viewer, no CUDA) and runs the unit, parity and most CLI tests on that
# build. CI runs exactly this (.ci/run); a clean clone took 33 minutes on 2 cores (docs/design/testing.md, "CI's
# minutes"; each stage's time is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, so a CI log says where its minutes went (the budget is 40 of them).
stage_start=$SECONDS
stage() { echo "[test.sh] $1: $((SECONDS - stage_start)) s (total $SECONDS s)"; stage_start=$SECONDS; }
# The data generator (tools/render_objects) is off in the default build; the tests build and test it too. Without
# a GPU to build for, CUDA is compiled for one architecture (sm_90): that it compiles is all a GPU-less run can
# check, and each further architecture adds a minute of nvcc (a GPU's own is detected where there is one).
# A build folder made here (CI's, always) is a unity build (CMake's CMAKE_UNITY_BUILD): each library compiles in
# batches of up to 8 files, so the headers its files share (JSON, the command line, gtest) are compiled once per
# batch, not once per file: about 40% of the build's CPU time. A folder set up before (scripts/setup.sh, a
# developer's) keeps its settings.
cmake_args="-DLACT_DATAGEN=ON"
if [ ! -f build/CMakeCache.txt ]; then
  cmake_args+=" -DCMAKE_UNITY_BUILD=ON"
  if ! nvidia-smi >/dev/null 2>&1; then cmake_args+=" -DCMAKE_CUDA_ARCHITECTURES=90"; fi
fi
LACT_CMAKE_ARGS="$cmake_args" scripts/setup.sh --build-only
stage "setup and build"
# The written rules (CONTRIBUTING.md): clang-format, no function over 80 lines, no include up a floor.
python3 tools/check_style.py
stage "style"
ctest --test-dir build --output-on-failure -j 2
stage "tests"

# Every target of this tree is built (no list to keep by hand; the Python module is off under the sanitizers) but
# the test programs without a label, which no `ctest -L` runs (tests/CMakeLists.txt, lact_test): ctest's labels
# below choose what runs. A unity build too, as above. Its programs are linked at a fixed address
# (-no-pie): a position-independent one applies millions of relocations (ASan's description of every global) each
# time it starts, and the CLI tests start lact again and again; what the sanitizers check is the same
# (docs/design/testing.md, "CI's minutes"). The cases the reference writes (Python, no lact code) are read from
# the plain build, whose tests wrote them above.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DLACT_SANITIZE=ON -DLACT_VIEWER=OFF -DLACT_CUDA=OFF -DLACT_DATAGEN=ON \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_EXE_LINKER_FLAGS=-no-pie \
  -DLACT_REFERENCE_CASES_DIR="$PWD/build/tests/reference_cases" -DLACT_LPIPS_CASE_DIR="$PWD/build/tests/lpips_case"
cmake --build build-asan -j "$(nproc)"
stage "sanitizer build"
# Any sanitizer report fails the test that caused it (the CLI tests also reject "runtime error" in stderr).
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Tests that provoke a SIGBUS on purpose (a mapped file truncated under a run) skip those cases here: ASan's
# own handler takes the signal first.
export LACT_SANITIZED=1
# Not here, only in the plain run above: the CLI tests that mostly repeat renders (video, camera paths, resource
# limits, the terminal's progress) and the dataset readers' CLI test (the readers run under ASan + UBSan in the
# fuzzers, fuzz_readers); under the sanitizers they took 9 of the CI's 40 minutes.
# Nor the tests labelled `reference` (the Python reference alone: tests/reference/CMakeLists.txt), nor the fixtures
# that write its cases (-FS): the plain stage wrote them, and test_parity would pass over a missing folder silently.
for cases in build/tests/reference_cases/one_view build/tests/lpips_case/case.safetensors; do
  if [ ! -e "$cases" ]; then
    echo "scripts/test.sh: $cases is missing: the plain stage's tests write the reference cases" >&2
    exit 1
  fi
done
ctest --test-dir build-asan --output-on-failure -j 2 -L "unit|parity|cli" -LE reference -FS "reference_cases|lpips_case" \
  -E "^(test_camera_controller|cli_datasets|reliability_video|reliability_cameras|reliability_resources|reliability_terminal)$"
stage "sanitizer tests"
