#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh) and builds HAP Studio into build/ with ccache.
# Extra arguments go to CMake's configure step, e.g. scripts/build.sh -DHAP_WITH_GUI=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$root/build" "${generator[@]}" "$@" >/dev/null
cmake --build "$root/build" --parallel "$(nproc)"
