#!/usr/bin/env bash
# Synthesis time for the ViT of the paper's overhead experiment (hidden 768, 12 heads, batch 64
# per device = 4096 on 64 GPUs) with 1..48 layers on the 64-GPU heterogeneous testbed.
# Models are exported shape-only (weights are not needed to plan). Usage:
#   scripts/bench-synthesis.sh [LAYERS...]     (default: 1 2 4 8 12 16 24 32 48)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(1 2 4 8 12 16 24 32 48)
dir="$root/build/bench-models"
mkdir -p "$dir"
files=()
for l in "${layers[@]}"; do
  f="$dir/vit-$l.pt"
  [ -f "$f" ] || /usr/bin/python3 "$root/resources/models/export.py" --model vit --preset default \
    --set layers="$l" --set batch=4096 --shape-only --output "$f" --quiet
  files+=("$f")
done
"$root/build/bench/bench_synthesis" --cluster "$root/resources/clusters/paper-testbed-64.yaml" "${files[@]}"
