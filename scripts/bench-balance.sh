#!/usr/bin/env bash
# Whole optimisation (search + LP + alternation) for BERT-Base (12 layers) and the other zoo
# models at their default sizes on the 64-GPU heterogeneous testbed, with the LP's solve time.
# Models are exported shape-only. Usage: scripts/bench-balance.sh [MODEL...] (default: bert vit vgg19 mlp)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(bert vit vgg19 mlp)
dir="$root/build/bench-models"
mkdir -p "$dir"
files=()
for m in "${models[@]}"; do
  f="$dir/$m-default.pt"
  [ -f "$f" ] || /usr/bin/python3 "$root/resources/models/export.py" --model "$m" --preset default \
    --shape-only --output "$f" --quiet
  files+=("$f")
done
"$root/build/bench/bench_balance" --cluster "$root/resources/clusters/paper-testbed-64.yaml" "${files[@]}"
