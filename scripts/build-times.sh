#!/usr/bin/env bash
# How long a build from scratch takes on this machine, everything (scripts/test.sh) against what
# scripts/demo.sh builds (hap, hap-worker, hap-studio and their libraries): every build command's
# duration from ninja's log of build/ (the last time each output was built), summed, and divided by
# the cores ninja runs in parallel. An estimate of a fresh build without ccache; run it after a
# full build (`scripts/build.sh`), on a quiet machine for figures worth quoting.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/build"
/usr/bin/python3 - "$(nproc)" <<'PY'
import subprocess, sys
cores = int(sys.argv[1])
log = {}
for line in open('.ninja_log'):
    if line.startswith('#'):
        continue
    start, end, _, out, _ = line.rstrip('\n').split('\t')
    log[out] = (int(end) - int(start)) / 1000
targets = ['hap', 'hap-worker', 'hap-studio']
demo = set(subprocess.run(['ninja', '-t', 'inputs'] + targets, capture_output=True, text=True,
                          check=True).stdout.split())
demo |= {'app/cli/hap', 'app/worker/hap-worker', 'app/studio/hap-studio'}
# Outputs of today's build graph only (the log keeps outputs that no longer exist).
current = {line.split(':')[0] for line in subprocess.run(['ninja', '-t', 'targets', 'all'], capture_output=True,
                                                         text=True, check=True).stdout.splitlines()}
log = {k: v for k, v in log.items() if k in current}
everything = sum(log.values())
needed = sum(v for k, v in log.items() if k in demo)
print(f"build commands: {len(log)} logged, {sum(1 for k in log if k in demo)} of them for the demo's programs")
print(f"everything (scripts/test.sh):  {everything / 60:6.1f} min of compiling, ~{everything / 60 / cores:5.1f} min on {cores} cores")
print(f"the demo's (scripts/demo.sh):  {needed / 60:6.1f} min of compiling, ~{needed / 60 / cores:5.1f} min on {cores} cores "
      f"({needed / everything:.0%})")
PY
