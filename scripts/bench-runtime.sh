#!/usr/bin/env bash
# Benchmark (a) of the runtime: the interpreter's overhead on one rank against plain LibTorch
# forward+backward of the same module (target <= 1.05x), on the zoo's models at a CPU-sized
# scale (exported with real weights into build/bench-models). Usage: scripts/bench-runtime.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
dir="$root/build/bench-models"
mkdir -p "$dir"
cluster="$dir/one-cpu.yaml"
# shellcheck source=lib/cluster.sh
. "$root/scripts/lib/cluster.sh"
write_cluster "$cluster" one-cpu cpu "{flops: {float32: 50G}, memory: 16GiB, memory_bandwidth: 10GB/s}" 1 \
  "{bandwidth: 1GB/s, latency: 100us}"
declare -A sets=(
  [mlp]="--set batch=64 --set features=256 --set hidden=1024"
  [bert]="--set batch=8 --set embed=256 --set heads=4 --set layers=4 --set hidden=1024 --set seq_len=64 --set vocab=4096"
  [vit]="--set batch=16 --set embed=256 --set heads=4 --set layers=4 --set hidden=1024 --set image_size=32"
)
for m in mlp bert vit; do
  f="$dir/$m-cpu.pt"
  # shellcheck disable=SC2086
  [ -f "$f" ] || /usr/bin/python3 "$root/resources/models/export.py" --model "$m" --preset tiny ${sets[$m]} \
    --output "$f" --quiet
  "$root/build/app/cli/hap" plan "$f" -c "$cluster" -o "$dir/$m-cpu-plan.json" -q --no-baselines >/dev/null
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$root/build/bench/bench_runtime_overhead" "$dir/$m-cpu-plan.json" --iterations 30
done
