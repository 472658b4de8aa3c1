#!/usr/bin/env bash
# The cost model's accuracy benchmark (issue 19): profile this machine, emulate two heterogeneous
# CPU clusters (ranks held to CPU shares), run every zoo model at CPU scale under HAP's plan and the
# baselines, record the runs in a fresh profile store, calibrate on half of the plans and report
# predicted against measured step time and peak memory for the other half.
# Usage: scripts/bench-accuracy.sh [--quick] [--models mlp,bert,...] [--out DIR] [--steps N]
#        (all options: bench/bench_accuracy.py --help). Figures: docs/benchmarks.md.
# Builds only what it runs (hap, hap-worker), serialised with other builds of this checkout by
# flock on $HAP_BUILD_LOCK (default /tmp/hap-build.lock), $HAP_BUILD_JOBS jobs (default: nproc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
lock=${HAP_BUILD_LOCK:-/tmp/hap-build.lock}
jobs=${HAP_BUILD_JOBS:-$(nproc)}
if [ ! -f "$root/build/CMakeCache.txt" ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  flock "$lock" cmake -S "$root" -B "$root/build" "${generator[@]}" >/dev/null
fi
for target in hap hap-worker; do
  flock "$lock" cmake --build "$root/build" --target "$target" --parallel "$jobs" >/dev/null
done
exec /usr/bin/python3 "$root/bench/bench_accuracy.py" --build "$root/build" "$@"
