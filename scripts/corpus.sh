#!/usr/bin/env bash
# The corpus of real architectures (docs/corpus.md): sets up and builds, exports
# every model of resources/corpus/export.py with Debian's python3-torchvision into build/corpus,
# then plans each on 3 CPU ranks and on the 4-GPU cluster and checks 3 training steps on 1, 2 and 3
# ranks (resources/corpus/run.py), printing one table. Arguments go to run.py (e.g. --model swin).
# Exit status 1 when a model fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
models=()
for ((i = 1; i <= $#; i++)); do
  [ "${!i}" = "--model" ] && j=$((i + 1)) && models+=(--model "${!j}")
done
/usr/bin/python3 "$root/resources/corpus/export.py" --out "$root/build/corpus" --quiet "${models[@]}"
exec /usr/bin/python3 "$root/resources/corpus/run.py" --corpus "$root/build/corpus" --hap "$root/build/app/cli/hap" "$@"
