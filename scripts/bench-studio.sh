#!/usr/bin/env bash
# Benchmark of hap-studio's responsiveness (issue 17): open BERT-Base and lay it out collapsed by
# scope (target <= 2 s), expand every scope (<= 3 s), and a ~2,000-node graph (a 72-layer BERT)
# without stalling the window's event loop over 100 ms. Usage: scripts/bench-studio.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
dir="$root/build/bench-models"
mkdir -p "$dir"
[ -f "$dir/bert-base.pt" ] || /usr/bin/python3 "$root/resources/models/export.py" --model bert --preset default \
  --output "$dir/bert-base.pt" --quiet
[ -f "$dir/bert-72.pt" ] || /usr/bin/python3 "$root/resources/models/export.py" --model bert --preset tiny \
  --set layers=72 --output "$dir/bert-72.pt" --quiet
QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} "$root/build/bench/bench_studio" --model "$dir/bert-base.pt" \
  --large "$dir/bert-72.pt"
