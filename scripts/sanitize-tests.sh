#!/usr/bin/env bash
# Builds the whole test suite with AddressSanitizer and UndefinedBehaviorSanitizer in build-asan/
# and runs it with CTest (docs/reliability.md). Every program the tests start (hap, hap-worker,
# hap-studio) is built the same way, so a memory error or undefined behaviour anywhere in a test's
# processes fails that test.
#
# Usage: scripts/sanitize-tests.sh [--configure-only] [CTEST_ARGS...]
#   --configure-only  set up and configure build-asan/, build nothing (a quick check)
#   CTEST_ARGS        passed to ctest, e.g. -R 'tst_plan|tst_cluster' to run some suites only
# Cost: a from-scratch build of everything, about as long as the normal build's (over an hour on
# 2 cores; ccache does not share objects with build/, the flags differ); the tests run about 2-3x
# slower than in build/.
#
# Settings: the compiler is CMake's default (CXX=clang++-14 works too). jemalloc is off
# (-DHAP_WITH_JEMALLOC=OFF): ASan replaces malloc itself. UBSan's vptr check is off: LibTorch and
# Qt are not instrumented, and it reports their polymorphic types across the library boundary.
# Leak detection is off at run time: LibTorch's and Qt's process-lifetime allocations are not the
# tests' leaks (the fuzz targets of scripts/fuzz.sh do check leaks in the readers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-asan"
configure_only=0
if [ "${1:-}" = "--configure-only" ]; then
  configure_only=1
  shift
fi

"$root/scripts/setup.sh"
flags="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
link="-fsanitize=address,undefined"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
nice -n 15 cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHAP_WITH_JEMALLOC=OFF -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$link" -DCMAKE_SHARED_LINKER_FLAGS="$link" >/dev/null
echo "sanitize-tests: configured $build"
[ "$configure_only" = 0 ] || exit 0

nice -n 15 cmake --build "$build" --parallel "$(nproc)"
cd "$build"
export QT_QPA_PLATFORM=offscreen
export ASAN_OPTIONS=${ASAN_OPTIONS:-"detect_leaks=0:detect_odr_violation=0:abort_on_error=1:strict_string_checks=1"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"print_stacktrace=1:halt_on_error=1"}
ctest --output-on-failure --timeout 1800 "$@"
