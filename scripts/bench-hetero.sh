#!/usr/bin/env bash
# Benchmark (b) of the runtime: a heterogeneous CPU cluster emulated on this machine (workers held
# to unequal CPU shares). HAP's plan, DP-EV and DP-CP run by hap-worker, and PyTorch's
# DistributedDataParallel on the same pieces, with the planner's predictions.
# Usage: scripts/bench-hetero.sh [--model bert|mlp|vit] [--shares 1,0.5,0.25] [--steps N] [--rounds R]
# Figures and what they mean: docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
exec /usr/bin/python3 "$root/bench/bench_hetero_cpu.py" --build "$root/build" "$@"
