#!/usr/bin/env bash
# Benchmark of issue 30: HAP's plan before and after `hap tune`, beside DP-EV, DP-CP, FSDP, Megatron and
# PyTorch DDP, every plan run on an emulated heterogeneous CPU cluster of this machine (3 ranks at
# speeds 1, 0.5, 0.25 and 4 at 0.5, 0.5, 0.25, 0.25; slow ranks emulated by CPU share and by slowdown).
# Usage: scripts/bench-tune.sh [--models mlp,bert,corpus:resnet50,...] [--mixes 3,4]
#                              [--emulations cpu-share,slowdown] [--repeats R] [--no-tune] ...
# Figures and what they mean: docs/benchmarks.md ("Plans that win when they run").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
exec /usr/bin/python3 "$root/bench/bench_tune.py" --build "$root/build" "$@"
