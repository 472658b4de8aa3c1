#!/usr/bin/env bash
# Synthesis at scale (issue 21, item 4): bench_synthesis rows (nodes, states expanded, synthesis
# s, predicted iteration, proof) for
#   (a) BERT at its default sizes (hidden 768, 12 heads, batch 64) with 12, 24, 48 and 96 layers
#       on the paper's 64-GPU testbed: growth in layers;
#   (b) BERT-MoE with 512 experts (devices=256 x experts_per_device=2) and 16, 32 and 64 layers
#       on a generated 1,024-GPU inventory (128 machines x 8: 32 V100 machines, 96 P100
#       machines; scripts/generate-cluster.py), batch 4096 (4 per GPU: the largest power of two
#       whose 64-layer plan fits 16 GB devices; the paper's 32 per GPU was for 12 layers);
# then the whole `hap plan --no-baselines -q` on the largest case, timed.
# Models are exported shape-only into build/bench-models (files already there are kept).
# Usage: scripts/bench-scale.sh [--repeat N]     (default 3; results in docs/benchmarks.md)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
repeat=3
[ "${1:-}" = "--repeat" ] && repeat=$2
"$root/scripts/build.sh" >/dev/null
dir="$root/build/bench-models"
mkdir -p "$dir"
# shellcheck source=lib/export_model.sh
. "$root/scripts/lib/export_model.sh"
bert=()
for l in 12 24 48 96; do
  export_model "$dir" bert "bert-l$l" --set layers="$l"
  bert+=("$dir/bert-l$l.pt")
done
moe=()
for l in 16 32 64; do
  export_model "$dir" bert_moe "bert_moe-l$l-e512" --set layers="$l" --set devices=256 --set experts_per_device=2 \
    --set batch=4096
  moe+=("$dir/bert_moe-l$l-e512.pt")
done
cluster="$dir/hetero-1024.yaml"
[ -f "$cluster" ] || /usr/bin/python3 "$root/scripts/generate-cluster.py" --machines 128 --per-machine 8 \
  --mix V100-SXM2-16GB:32,P100-PCIE-16GB:96 --output "$cluster"

echo "(a) BERT on paper-testbed-64"
"$root/build/bench/bench_synthesis" --repeat "$repeat" --cluster "$root/resources/clusters/paper-testbed-64.yaml" "${bert[@]}"
echo "(b) BERT-MoE, 512 experts, on hetero-1024"
"$root/build/bench/bench_synthesis" --repeat "$repeat" --cluster "$cluster" "${moe[@]}"
echo "(c) hap plan --no-baselines -q, BERT-MoE 64 layers on hetero-1024"
TIMEFORMAT='hap plan: %R s wall'
time "$root/build/app/cli/hap" plan --no-baselines -q --cluster "$cluster" "${moe[-1]}" | grep -E "^  HAP |Search:|Ratios:"
