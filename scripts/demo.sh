#!/usr/bin/env bash
# README command (a): set up, build, export the BERT-Base model of the zoo at its default size
# and describe it with `hap inspect`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
/usr/bin/python3 "$root/resources/models/export.py" --model bert --preset default --out "$root/build/zoo"
"$root/build/app/cli/hap" inspect "$root/build/zoo/bert-default.pt" --dot "$root/build/bert-default.dot"
