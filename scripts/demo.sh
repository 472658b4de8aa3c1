#!/usr/bin/env bash
# README command (a): set up and build what it runs (hap, hap-worker, hap-studio); export BERT-Base of the zoo and describe it with
# `hap inspect`; then the main job on a bundled example: plan the tiny BERT for 3 local CPU ranks
# and train it with `hap launch` on the shipped token sample, 1 rank's plan for comparison.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Set up and configure as scripts/build.sh does, then build only what the demo runs: the CLI, the
# worker and the app (with their libraries), not the tests and benchmarks (scripts/test.sh builds
# everything).
"$root/scripts/setup.sh"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$root/build" "${generator[@]}" >/dev/null
targets=(hap hap-worker)
grep -q '^HAP_WITH_GUI:BOOL=ON' "$root/build/CMakeCache.txt" && targets+=(hap-studio)
cmake --build "$root/build" --parallel "$(nproc)" --target "${targets[@]}"
hap="$root/build/app/cli/hap"
/usr/bin/python3 "$root/resources/models/export.py" --model bert --preset default --out "$root/build/zoo"
"$hap" inspect "$root/build/zoo/bert-default.pt" --dot "$root/build/bert-default.dot"

/usr/bin/python3 "$root/resources/models/export.py" --model bert --preset tiny --out "$root/build/zoo" --quiet
out="$root/build/demo"
mkdir -p "$out"
echo
echo "== Plan the tiny BERT for 3 local CPU ranks (resources/clusters/local-cpu-3.yaml)"
"$hap" plan "$root/build/zoo/bert-tiny.pt" -c "$root/resources/clusters/local-cpu-3.yaml" -o "$out/bert-3.json"
echo
echo "== Train it on 3 local workers: 40 steps of the token sample (resources/data)"
"$hap" launch "$out/bert-3.json" --local --steps 40 -- --warmup 0 --data tokens \
  --data-path "$root/resources/data/tokens-v128/tokens.bin" --optimizer adamw --lr 0.003 \
  --metrics "$out/bert-3.metrics.jsonl" --trace "$out/bert-3.trace.json" --export "$out/bert-3-trained.pt"
echo
echo "Metrics: $out/bert-3.metrics.jsonl; measured trace (open in Perfetto): $out/bert-3.trace.json"
echo "Trained model: $out/bert-3-trained.pt. Predicted trace: $hap simulate $out/bert-3.json --trace FILE"
echo
studio="$root/build/app/studio/hap-studio"
if [ -x "$studio" ]; then
  args=("$root/build/zoo/bert-tiny.pt" --cluster "$root/resources/clusters/local-cpu-3.yaml" --plan "$out/bert-3.json")
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${CI:-}" ]; then
    echo "== HAP Studio: the model, its cluster and its plan (close the window to finish)"
    "$studio" "${args[@]}"
  else
    echo "== HAP Studio (no display: a picture of its window instead, $out/studio.png)"
    QT_QPA_PLATFORM=offscreen "$studio" "${args[@]}" --screenshot "$out/studio.png"
    echo "On a desktop: $studio ${args[*]}"
  fi
fi
