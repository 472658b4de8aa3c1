#!/usr/bin/env bash
# Tries every hostile input and fault of issue 32 on the built `hap` and `hap-worker`, as a user
# would, and prints one Markdown table row per case: what was done, the exit status, and what the
# user sees (the first line of the error, or of the output). docs/reliability.md's table is this
# script's output. Run from anywhere; the cases run in a scratch folder under nice.
#
# Usage: fuzz/hostile.sh [--no-runs] [BUILD_DIR]   (default build/)
#   --no-runs  skip the cases that train (checkpoints, faults during a run): a few minutes less
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=1
if [ "${1:-}" = "--no-runs" ]; then runs=0; shift; fi
build=$(cd "${1:-$root/build}" && pwd)
hap="$build/app/cli/hap"
model="$build/zoo/mlp-tiny.pt"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d /tmp/hap-hostile.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
export HAP_DB="$tmp/default.db"

# row DESCRIPTION -- COMMAND...: runs it (60 s at most), prints | description | exit | message |.
row() {
  local what=$1
  shift 2
  local out="$tmp/out.txt"
  # In a subshell, so that bash's own "Aborted" notice stays out of the table.
  (timeout -s KILL 120 nice -n 15 "$@" >"$out" 2>&1 </dev/null) 2>/dev/null
  local rc=$?
  local msg
  # The line that says what happened: the first error line, else the last line of output.
  msg=$(grep -m1 -E 'error|Error|terminate|Abort|abort|what\(\)|refus|not |cannot|invalid|must' "$out" ||
        tail -n1 "$out")
  msg=$(printf '%s' "$msg" | tr -d '\r' | sed "s#$tmp/##g; s#$root/##g; s/|/\\\\|/g" | cut -c1-300)
  [ "$rc" = 137 ] && msg="(killed after 120 s) $msg"
  printf '| %s | %s | %s |\n' "$what" "$rc" "$msg"
}

# The plan every plan case edits: the tiny MLP on 3 CPU ranks.
nice -n 15 "$hap" plan "$model" -c resources/clusters/local-cpu-3.yaml -q -o "$tmp/base.plan.json" >/dev/null
# edit NAME PYTHON: writes $tmp/NAME.plan.json, the base plan with `p` changed by PYTHON.
edit() {
  "$py" - "$tmp/base.plan.json" "$tmp/$1.plan.json" "$2" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
EOF
}
compute=$("$py" -c "import json,sys; p=json.load(open(sys.argv[1])); print([i for i,s in enumerate(p['program']) if s['kind']=='compute'][0])" "$tmp/base.plan.json")
convert_g=$("$py" -c "import json,sys; p=json.load(open(sys.argv[1])); print([i for i,s in enumerate(p['program']) if s['kind']=='convert' and 'lengths' in s['to']][0])" "$tmp/base.plan.json")

echo "| Hostile input or fault | Exit | What the user sees |"
echo "|---|---|---|"

# Plans (hap simulate opens a plan as every command does; the worker through hap launch's preflight).
mkdir -p "$tmp/plan-dir.json"
row 'plan path is a directory (`hap simulate DIR`)' -- "$hap" simulate "$tmp/plan-dir.json"
edit format-1 'p["format"] = 1'
row 'plan `"format": 1`' -- "$hap" simulate "$tmp/format-1.plan.json"
edit version-str 'p["version"] = "2"'
row 'plan `"version": "2"`' -- "$hap" simulate "$tmp/version-str.plan.json"
edit version-frac 'p["version"] = 2.5'
row 'plan `"version": 2.5`' -- "$hap" simulate "$tmp/version-frac.plan.json"
edit search-1 'p["search"] = 1'
row 'plan `"search": 1`' -- "$hap" simulate "$tmp/search-1.plan.json"
edit shape-neg 'p["model"]["inputs"][0]["shape"] = [-4, 16]'
row 'plan input shape `[-4, 16]`' -- "$hap" simulate "$tmp/shape-neg.plan.json"
edit shape-huge 'p["model"]["inputs"][0]["shape"] = [2**32, 2**32]'
row 'plan input shape `[2^32, 2^32]`' -- "$hap" simulate "$tmp/shape-huge.plan.json"
edit empty-program 'p["program"] = []'
row 'plan with an empty program' -- "$hap" simulate "$tmp/empty-program.plan.json"
edit len-neg "s = p['program'][$convert_g]['to']; s['lengths'] = [-1] + [s['lengths'][0] + 1] + s['lengths'][2:]"
row 'plan with a negative G length' -- "$hap" simulate "$tmp/len-neg.plan.json"
edit len-huge "s = p['program'][$convert_g]['to']; s['lengths'][0] = 1e308"
row 'plan with a G length of `1e308`' -- "$hap" simulate "$tmp/len-huge.plan.json"
edit node-huge "p['program'][$compute]['node'] = 10**12"
row 'plan step node `10^12`' -- "$hap" simulate "$tmp/node-huge.plan.json"
row 'plan step node `10^12` (`hap launch --local`: preflight and workers)' -- \
  "$hap" launch --local "$tmp/node-huge.plan.json" --steps 1 --timeout 60
edit bogus "p['program'][$convert_g]['instruction'] = 'bogus'"
row 'plan instruction `"bogus"`' -- "$hap" simulate "$tmp/bogus.plan.json"
edit ratios-neg 'r = p["ratios"]["segments"][0]["ratios"]; p["ratios"]["segments"][0]["ratios"] = [-0.5, 1.0] + [0.5 / max(1, len(r) - 2)] * (len(r) - 2)'
row 'plan with negative ratios' -- "$hap" simulate "$tmp/ratios-neg.plan.json"
edit times-huge "s = p['program'][$compute]; s['times']['forward_by_group'] = [1e308] * len(s['times']['forward_by_group']); s['forward_seconds'] = 1e308"
row 'plan step times `1e308`' -- "$hap" simulate "$tmp/times-huge.plan.json"
edit wrong-type-deep "p['program'][$compute]['outputs'] = 'x'"
row 'plan step `"outputs": "x"` (a wrong type deep inside)' -- "$hap" simulate "$tmp/wrong-type-deep.plan.json"
sed 's/"iteration_seconds": *[0-9.e+-]*/"iteration_seconds": 1e400/' "$tmp/base.plan.json" >"$tmp/overflow.plan.json"
row 'plan with a number beyond a double (`1e400`, found by fuzz_plan)' -- "$hap" simulate "$tmp/overflow.plan.json"
printf '{"format": "hap-plan", "version": 2, ' >"$tmp/truncated.plan.json"
row 'plan file truncated (invalid JSON)' -- "$hap" simulate "$tmp/truncated.plan.json"

# Clusters (hap plan reads the inventory, prices with it and solves the LP over shares).
cluster() {  # cluster NAME FLOPS LINK_BANDWIDTH [NAME_FIELD]
  printf 'name: %s\ndevice_types:\n  cpu: {flops: {float32: %s}, memory: 4GiB, memory_bandwidth: 20GB/s}\nmachines:\n  - {name: local, host: 127.0.0.1, device_type: cpu, count: 3, link: {bandwidth: %s, latency: 5us}}\n' \
    "${4:-hostile}" "$2" "$3" >"$tmp/$1.yaml"
}
cluster bw-tiny 50G 1e-300
row 'cluster link bandwidth `1e-300`' -- "$hap" plan "$model" -c "$tmp/bw-tiny.yaml" -q
cluster flops-tiny 1e-300 10GB/s
row 'cluster `flops: 1e-300`' -- "$hap" plan "$model" -c "$tmp/flops-tiny.yaml" -q
cluster flops-huge 1e308 10GB/s
row 'cluster `flops: 1e308`' -- "$hap" plan "$model" -c "$tmp/flops-huge.yaml" -q
cluster utf8 50G 10GB/s "$(printf 'bad\xff\xfename')"
row 'cluster name with non-UTF-8 bytes (`hap plan -o`)' -- "$hap" plan "$model" -c "$tmp/utf8.yaml" -q -o "$tmp/utf8.plan.json"
mkdir -p "$tmp/cluster-dir.yaml"
row 'cluster path is a directory' -- "$hap" plan "$model" -c "$tmp/cluster-dir.yaml" -q
cluster units 50G 10parsecs
row 'cluster with a bad unit (`10parsecs`)' -- "$hap" plan "$model" -c "$tmp/units.yaml" -q
{
  printf 'name: laughs\ndescription: [&a [x, x, x, x, x, x, x, x, x]'
  prev=a
  for l in b c d e f g h i; do printf ', &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]' $l $prev $prev $prev $prev $prev $prev $prev $prev $prev; prev=$l; done
  printf ']\n'
} >"$tmp/laughs.yaml"
row 'cluster "billion laughs" (nested YAML aliases)' -- "$hap" plan "$model" -c "$tmp/laughs.yaml" -q

# --input.
row '`hap inspect --input x=4294967296x4294967296`' -- "$hap" inspect "$model" --input x=4294967296x4294967296
row '`hap plan --input x=4294967296x4294967296`' -- "$hap" plan "$model" -c resources/clusters/local-cpu-3.yaml -q --input x=4294967296x4294967296
row '`hap inspect --input x=-4x16`' -- "$hap" inspect "$model" --input x=-4x16
row '`hap inspect --input x=4x16:int64:5..5` (empty range)' -- "$hap" inspect "$model" --input x=4x16:int64:5..5

# The profile store (hap runs opens it read-only).
echo "not a database" >"$tmp/text.db"
row 'store: a text file' -- "$hap" runs --db "$tmp/text.db"
if [ -f "$root/fuzz/corpus/fuzz_store_open/store-2-runs.db" ]; then
  head -c 3000 "$root/fuzz/corpus/fuzz_store_open/store-2-runs.db" >"$tmp/truncated.db"
  row 'store: truncated' -- "$hap" runs --db "$tmp/truncated.db"
  cp "$root/fuzz/corpus/fuzz_store_open/store-2-runs.db" "$tmp/newer.db"
  sqlite3 "$tmp/newer.db" 'PRAGMA user_version = 99' 2>/dev/null
  row 'store: newer schema (user_version 99)' -- "$hap" runs --db "$tmp/newer.db"
fi
sqlite3 "$tmp/other.db" 'CREATE TABLE t(x); INSERT INTO t VALUES (1);' 2>/dev/null
row "store: another application's database" -- "$hap" runs --db "$tmp/other.db"
mkdir -p "$tmp/store-dir.db"
row 'store path is a directory' -- "$hap" runs --db "$tmp/store-dir.db"

[ "$runs" = 1 ] || exit 0

# Checkpoints: a run writes step-2.pt, then each damaged copy is resumed from.
ck="$tmp/ck"
nice -n 15 "$hap" launch --local "$tmp/base.plan.json" --steps 2 --timeout 300 -- --warmup 0 --checkpoint-dir "$ck" \
  --checkpoint-every 1 >"$tmp/ck.log" 2>&1
if [ -f "$ck/step-2.pt" ]; then
  # resume CHECKPOINT STEPS, as a script: row runs a program, not a shell function.
  printf '#!/bin/sh\nexec "%s" launch --local "%s" --steps "$2" --timeout 120 -- --warmup 0 --resume "$1"\n' \
    "$hap" "$tmp/base.plan.json" >"$tmp/resume"
  chmod +x "$tmp/resume"
  resume="$tmp/resume"
  cp "$ck/step-2.pt" "$tmp/flipped.pt"
  # 64 bytes flipped in the middle of the largest stored tensor's payload.
  "$py" - "$tmp/flipped.pt" <<'EOF'
import sys, zipfile
path = sys.argv[1]
z = zipfile.ZipFile(path)
info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
with open(path, "r+b") as f:
    f.seek(info.header_offset + 26)
    n, m = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
    start = info.header_offset + 30 + n + m + info.file_size // 2 - 32
    f.seek(start); data = bytearray(f.read(64))
    f.seek(start); f.write(bytes(b ^ 0xFF for b in data))
EOF
  row 'checkpoint with 64 flipped bytes in a tensor (`--resume`)' -- "$resume" "$tmp/flipped.pt" 2
  # The iteration rewritten in the pickled header (torch.load/torch.save keep every other entry).
  for it in -5 255; do
    "$py" - "$ck/step-2.pt" "$tmp/iter$it.pt" "$it" <<'EOF' 2>/dev/null
import sys, torch
d = torch.load(sys.argv[1])
d["iteration"] = int(sys.argv[3])
torch.save(d, sys.argv[2])
EOF
  done
  row 'checkpoint `iteration: -5` (`--resume`)' -- "$resume" "$tmp/iter-5.pt" 2
  row 'checkpoint `iteration: 255`, `--steps 2` (`--resume`)' -- "$resume" "$tmp/iter255.pt" 2
  # data.pkl replaced by the 63-byte pickle with which fuzz_checkpoint_header found a bad free in
  # LibTorch's unpickler (fuzz/crashes/fuzz_checkpoint_header/unpickler-bad-free.bin).
  "$py" - "$ck/step-2.pt" "$tmp/badpickle.pt" "$root/fuzz/crashes/fuzz_checkpoint_header/unpickler-bad-free.bin" <<'EOF'
import sys, zipfile
src, dst, pkl = sys.argv[1], sys.argv[2], open(sys.argv[3], "rb").read()[1:]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        zout.writestr(info, pkl if info.filename.endswith("data.pkl") else zin.read(info.filename))
EOF
  row 'checkpoint whose data.pkl is the 63-byte pickle of the "unpickler bad free" finding (`--resume`)' -- "$resume" "$tmp/badpickle.pt" 2
  head -c 2000 "$ck/step-2.pt" >"$tmp/truncated.pt"
  row 'checkpoint truncated (`--resume`)' -- "$resume" "$tmp/truncated.pt" 2
else
  echo "| (checkpoint cases skipped: the run that writes them failed: $(tail -n1 "$tmp/ck.log" | cut -c1-200)) | | |"
fi

# Faults during a run: a rank killed, the launcher killed, a rank stopped.
fault() {  # fault NAME SIGNAL WHO(rank|launcher): runs a long launch, signals, reports.
  local log="$tmp/$1.log"
  nice -n 15 "$hap" launch --local "$tmp/base.plan.json" --steps 100000 --timeout 120 --db "$tmp/faults.db" \
    >"$log" 2>&1 &
  local launcher=$! workers="" t=0
  while [ $t -lt 60 ] && ! grep -q -E '^\[?rank|step' "$log" 2>/dev/null; do sleep 1; t=$((t + 1)); done
  sleep 3
  workers=$(pgrep -P "$launcher" -d ' ' 2>/dev/null)
  local start=$SECONDS victim
  if [ "$3" = launcher ]; then victim=$launcher; else victim=${workers##* }; fi
  kill -s "$2" "$victim" 2>/dev/null
  local waited=0
  while kill -0 "$launcher" 2>/dev/null && [ $waited -lt 130 ]; do sleep 1; waited=$((waited + 1)); done
  wait "$launcher" 2>/dev/null
  local rc=$?
  sleep 10
  local left=""
  for w in $workers; do kill -0 "$w" 2>/dev/null && left="$left $w"; done
  local msg
  # The launcher's own line first (hap: ...), else the first rank's.
  msg=$( (grep -m1 -E '^hap: ' "$log" || grep -m1 -E 'error|killed|signal|timeout|timed out|did not|stopp' "$log") | sed "s#$tmp/##g; s/|/\\\\|/g" | cut -c1-300)
  [ -n "$left" ] && { msg="$msg (workers still running after 10 s:$left)"; for w in $left; do kill -KILL "$w" 2>/dev/null; done; }
  [ -z "$left" ] && msg="$msg (no worker left after 10 s)"
  printf '| %s | %s | %s (%d s after the signal) |\n' "$4" "$rc" "$msg" "$((SECONDS - start))"
  [ "$2" = STOP ] && kill -CONT "$victim" 2>/dev/null
}
fault kill-rank KILL rank 'a rank killed with SIGKILL during `hap launch --local`'
fault kill-launcher KILL launcher 'the launcher killed with SIGKILL'
fault stop-rank STOP rank 'a rank stopped with SIGSTOP'
if command -v sqlite3 >/dev/null && [ -f "$tmp/faults.db" ]; then
  echo "| (the store after the faults: integrity_check $(sqlite3 "$tmp/faults.db" 'PRAGMA integrity_check' 2>&1 | head -1); runs by status: $(sqlite3 "$tmp/faults.db" "SELECT group_concat(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM run GROUP BY status)" 2>&1)) | | |"
fi
