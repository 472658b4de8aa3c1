#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang-14, AddressSanitizer + UndefinedBehaviorSanitizer)
# in build-fuzz/ and runs each of them from its seed corpus (fuzz/corpus/TARGET/). See
# docs/reliability.md.
#
# Usage: scripts/fuzz.sh [--long [--keep-going]] [--seconds N] [--runs N] [--jobs N] [--seeds]
#                        [TARGET...]
#   (default)    smoke: every target for --seconds (default 30) each; CI runs this (.ci/run)
#   --long       every target for --runs executions (default 10000000), no time limit
#   --keep-going with --long: libFuzzer's fork mode, which records each crash and goes on (to fuzz
#                past a known finding); it runs for --seconds (default 3600), not --runs
#   --seconds N  time per target (smoke); with --long, a time limit per target as well
#   --runs N     executions per target (--long)
#   --jobs N     targets run at once (default 1)
#   --seeds      rewrite fuzz/corpus/fuzz_plan/fuzz-mlp-*.plan.json (plans of fuzz/fuzz_graph.h's
#                model) and fuzz/corpus/fuzz_checkpoint_header/hap-v3-* (checkpoints sealed as
#                saveCheckpoint seals them) before fuzzing, after a format change
#   TARGET...    some of: fuzz_plan fuzz_cluster_yaml fuzz_input_spec fuzz_checkpoint_header
#                fuzz_store_open (default: all)
# Everything runs under `nice -n 15`. New inputs found go to build-fuzz/corpus/TARGET/ (not the
# source tree); a crash, leak, timeout or out-of-memory input goes to build-fuzz/artifacts/TARGET/,
# and the script exits 1 naming it. Each target's last libFuzzer lines (executions, cov, ft) are
# in build-fuzz/logs/TARGET.log.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
all=(fuzz_plan fuzz_cluster_yaml fuzz_input_spec fuzz_checkpoint_header fuzz_store_open)

long=0 keep=0 seconds="" runs=10000000 jobs=1 seeds=0 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --long) long=1 ;;
    --keep-going) keep=1 ;;
    --seconds) seconds="$2"; shift ;;
    --runs) runs="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --seeds) seeds=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    fuzz_*) targets+=("$1") ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
[ "$long" = 1 ] || seconds=${seconds:-30}
[ "$keep" = 0 ] || seconds=${seconds:-3600}

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found; run scripts/setup.sh" >&2; exit 2; }
done

# Configure once (a folder of its own: HAP_FUZZ instruments every target of its tree).
if [ ! -f "$build/build.ninja" ] && [ ! -f "$build/Makefile" ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  CC=clang-14 CXX=clang++-14 nice -n 15 cmake -S "$root" -B "$build" "${generator[@]}" -DHAP_FUZZ=ON \
    -DHAP_WITH_GUI=OFF -DHAP_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=(--target "$t"); done
[ "$seeds" = 0 ] || build_targets+=(--target fuzz_plan_seeds --target fuzz_checkpoint_seeds)
nice -n 15 cmake --build "$build" "${build_targets[@]}" --parallel "$(nproc)"

if [ "$seeds" = 1 ]; then
  nice -n 15 "$build/fuzz/fuzz_plan_seeds" "$root/resources/clusters" "$root/fuzz/corpus/fuzz_plan"
  nice -n 15 "$build/fuzz/fuzz_checkpoint_seeds" "$root/fuzz/corpus/fuzz_checkpoint_header"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-"abort_on_error=1:detect_odr_violation=0"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"print_stacktrace=1:halt_on_error=1"}

run_one() {
  local t=$1 work="$build/corpus/$1" artifacts="$build/artifacts/$1/" log="$build/logs/$1.log"
  mkdir -p "$work" "$artifacts" "$build/logs"
  local args=(-artifact_prefix="$artifacts" -print_final_stats=1 -timeout=25 -rss_limit_mb=4096)
  [ -f "$root/fuzz/dict/$t.dict" ] && args+=(-dict="$root/fuzz/dict/$t.dict")
  if [ "$keep" = 1 ]; then
    args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$seconds")
  elif [ "$long" = 1 ]; then
    args+=(-runs="$runs")
    [ -z "$seconds" ] || args+=(-max_total_time="$seconds")
  else
    # A fixed seed: the smoke mutates the same way on every run (CI is not made flaky by luck).
    args+=(-max_total_time="$seconds" -seed=1)
  fi
  # The checkpoint target's zip reader and unpickler are LibTorch's (not instrumented): their
  # process-lifetime caches are not leaks of the reader (LeakSanitizer's check at exit too).
  local asan=$ASAN_OPTIONS
  if [ "$t" = fuzz_checkpoint_header ]; then
    args+=(-detect_leaks=0)
    asan="$asan:detect_leaks=0"
  fi
  # The first folder collects new inputs; the committed seeds are only read.
  if ASAN_OPTIONS=$asan nice -n 15 "$build/fuzz/$t" "${args[@]}" "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz.sh: $t: $(grep -E '^#[0-9]+' "$log" | tail -1)"
    grep -E 'stat::number_of_executed_units' "$log" | sed "s/^/fuzz.sh: $t: /"
    # Fork mode exits 0 after crashes it went past: they are in the artifacts folder.
    if [ "$keep" = 1 ] && ls "$artifacts" | grep -q -E '^(crash|leak|timeout|oom)-'; then
      echo "fuzz.sh: $t: findings in $artifacts: $(ls "$artifacts" | grep -c -E '^(crash|leak|timeout|oom)-')" >&2
      return 1
    fi
    return 0
  fi
  echo "fuzz.sh: $t FAILED; reproducer in $artifacts, log $log:" >&2
  grep -E 'ERROR|SUMMARY|runtime error|terminate|Test unit written|deadly signal' "$log" | head -20 >&2
  return 1
}

failed=0
if [ "$jobs" -le 1 ]; then
  for t in "${targets[@]}"; do run_one "$t" || failed=1; done
else
  pids=()
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
    run_one "$t" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
fi
exit "$failed"
