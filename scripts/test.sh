#!/usr/bin/env bash
# README command (b), also run by CI (.ci/run): set up, build, and run every test with CTest.
# Tests run offscreen; benchmarks are not part of this run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
export QT_QPA_PLATFORM=offscreen
ctest --output-on-failure --timeout 600
