#!/usr/bin/env bash
# Benchmark of planning in hap-studio (issue 18): BERT-Base and BERT-MoE on the paper's 64-GPU
# testbed, planned in the shown main window against hap plan's planning (alternated runs), the
# longest event-loop stall while planning, and Cancel -> control. Targets: <= 1.05x, <= 100 ms,
# <= 100 ms. Usage: scripts/bench-studio-plan.sh [--runs N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
dir="$root/build/bench-models"
mkdir -p "$dir"
[ -f "$dir/bert-base.pt" ] || /usr/bin/python3 "$root/resources/models/export.py" --model bert --preset default \
  --output "$dir/bert-base.pt" --quiet
[ -f "$dir/bert_moe-d64.pt" ] || /usr/bin/python3 "$root/resources/models/export.py" --model bert_moe \
  --preset default --set devices=64 --shape-only --output "$dir/bert_moe-d64.pt" --quiet
QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} "$root/build/bench/bench_studio_plan" \
  --cluster "$root/resources/clusters/paper-testbed-64.yaml" \
  --model "BERT-Base=$dir/bert-base.pt" --model "BERT-MoE=$dir/bert_moe-d64.pt" "$@"
