#!/usr/bin/env bash
# The paper's experiments in simulation (bench/paper_experiments.cpp): exports the four
# benchmark models at their default sizes (shape-only; BERT-MoE once per cluster size with two
# experts per GPU, and once per expert count for the uneven-experts study), then writes
# docs/paper-experiments.csv and docs/paper-experiments.md.
# Usage: scripts/paper-experiments.sh [--quick]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
dir="$root/build/paper-models"
mkdir -p "$dir"
# shellcheck source=lib/export_model.sh
. "$root/scripts/lib/export_model.sh"
for m in vgg19 vit bert; do export_model "$dir" "$m" "$m"; done
for d in 8 16 24 32 64; do export_model "$dir" bert_moe "bert_moe-d$d" --set devices="$d"; done
for e in $(seq 4 2 32); do export_model "$dir" bert_moe "bert_moe-e$e" --set devices=1 --set experts_per_device="$e"; done
"$root/build/bench/paper_experiments" --models "$dir" --clusters "$root/resources/clusters" --out "$root/docs" "$@"
