#!/usr/bin/env bash
# Renders hap-studio's main window in the states a user sees (collapsed graph, find + properties,
# expanded and coloured by FLOPs, cluster panel, plan, an error, the inputs dialog, the Profiles
# dock on a filled profile store), then every view (each dock, each tab of each, the Tune dialog) at
# 1280x720 and 1920x1080 (views-WxH-DOCK[-tabN].png) into
# build/screenshots/, offscreen (set QT_QPA_PLATFORM=xcb under xvfb-run -a for the X11 look).
# Usage: scripts/screenshots.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
build="$root/build"
[ -f "$build/zoo/bert-tiny.pt" ] || /usr/bin/python3 "$root/resources/models/export.py" --all --preset tiny \
  --out "$build/zoo" --quiet
[ -f "$build/fixtures/no_spec.pt" ] || /usr/bin/python3 "$root/tests/fixtures/make_fixtures.py" "$build/fixtures"
QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} "$build/tests/studio/studio-screenshots" "$build/screenshots" \
  "$build/zoo" "$build/fixtures" "$root" "$build/app/cli/hap"
