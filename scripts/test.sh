#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (CTest). CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build-only
ctest --test-dir build --output-on-failure -j 2
