#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (CTest); then builds again with AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/: no viewer, no CUDA) and runs the unit, parity and CLI tests on that
# build. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, so a CI log says where its minutes went (the budget is 40 of them).
stage_start=$SECONDS
stage() { echo "[test.sh] $1: $((SECONDS - stage_start)) s (total $SECONDS s)"; stage_start=$SECONDS; }
scripts/setup.sh --build-only
stage "setup"
# The written rules (CONTRIBUTING.md): clang-format, no function over 80 lines, no include up a floor.
python3 tools/check_style.py
stage "style"
# The data generator (tools/render_objects) is off in the default build; the tests build and test it too.
cmake -S . -B build -DLACT_DATAGEN=ON >/dev/null
cmake --build build -j "$(nproc)"
stage "build"
ctest --test-dir build --output-on-failure -j 2
stage "tests"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DLACT_SANITIZE=ON -DLACT_VIEWER=OFF -DLACT_CUDA=OFF -DLACT_DATAGEN=ON
cmake --build build-asan -j "$(nproc)" --target lact test_ops test_newton_schulz test_tokens test_safetensors \
  test_parity test_datasets test_undistort test_metrics test_memory_estimate test_linear_attention test_collective test_untrusted_files \
  test_render_objects test_colmap image_decode_dump test_image_io test_run_agreement test_backend_checks \
  test_config_scaling test_run test_import test_serve test_pixel_view test_streamed_encode test_camera_controller
stage "sanitizer build"
# Any sanitizer report fails the test that caused it (the CLI tests also reject "runtime error" in stderr).
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Tests that provoke a SIGBUS on purpose (a mapped file truncated under a run) skip those cases here: ASan's
# own handler takes the signal first.
export LACT_SANITIZED=1
ctest --test-dir build-asan --output-on-failure -j 2 -L "unit|parity|cli" -E "test_camera_controller"
stage "sanitizer tests"
