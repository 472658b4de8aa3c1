#!/usr/bin/env bash
# README command (b), also run by CI (.ci/run): set up, build, and run every test with CTest.
# Tests run offscreen; benchmarks are not part of this run; a fuzzing smoke follows the tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
export QT_QPA_PLATFORM=offscreen
ctest --output-on-failure --timeout 600
# Fuzzing smoke: every libFuzzer target of fuzz/ for 30 s from its seed corpus, built with
# ASan+UBSan in build-fuzz/ (docs/reliability.md; scripts/fuzz.sh --long for long runs).
"$root/scripts/fuzz.sh" --seconds 30
