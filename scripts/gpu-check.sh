#!/usr/bin/env bash
# Issue 5 item 9 on a GPU machine: builds the engine and runtime (no GUI, no Qt tests) against the
# LibTorch of python3's torch (a CUDA build, e.g. PyTorch 2.x) into build-gpu/, then
#   1. the 1-rank exactness check of every zoo model's tiny preset on GPU 0
#      (hap-worker --check --cuda: loss, every gradient and, after 20 steps, every parameter
#      against the TorchScript module run whole on the same GPU), and the same on the CPU with
#      this LibTorch, plus a 2-rank Gloo run with small gradient buckets (the 2.x process-group
#      API, asynchronous all-reduces on a second group);
#   2. benchmark (a) with --cuda: the executor against plain LibTorch forward+backward on GPU 0,
#      on the zoo's models at a GPU-sized scale.
# Prints one line per check and a summary; exit status 1 when a check fails, 3 when python3
# cannot export the zoo (then pass --zoo with files exported elsewhere).
#
# Usage: scripts/gpu-check.sh [--zoo DIR] [--iterations N]
#   --zoo DIR  TorchScript files <model>-tiny.pt already exported (default: export them with
#              python3 into build-gpu/zoo)
# Environment:
#   HAP_DEPS_ROOT     a folder with Debian packages unpacked by `dpkg -x` (fmt, yaml-cpp, CLI11,
#                     nlohmann-json, OpenSSL, COIN-OR CLP and CBC, SQLiteCpp, jemalloc, pkgconf) for a
#                     machine that has them neither installed nor a network to install them from;
#                     scripts/gpu-deps.sh makes it (.gpu-deps/root) on a Debian 12 machine
#   HAP_GLOO_INCLUDE  Gloo's headers, used only when this LibTorch ships none (.gpu-deps/gloo/include)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-gpu"
zoo=""
iterations=50
while [ $# -gt 0 ]; do
  case $1 in
    --zoo) zoo=$(cd "$2" && pwd); shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    *) echo "gpu-check: unknown argument $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done

torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  echo "gpu-check: python3 has no torch; install PyTorch with CUDA first" >&2; exit 2; }
python3 -c 'import torch, sys; print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPU",
  torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"); sys.exit(0 if torch.cuda.is_available() else 1)' || {
  echo "gpu-check: torch sees no GPU" >&2; exit 2; }

prefixes="$torch_prefix"
cxxflags=""
if [ -n "${HAP_DEPS_ROOT:-}" ]; then
  deps=$(cd "$HAP_DEPS_ROOT" && pwd)
  libdir="$deps/usr/lib/x86_64-linux-gnu"
  prefixes="$torch_prefix;$deps/usr"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_LIBDIR="$libdir/pkgconfig:$deps/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$deps"
  command -v pkg-config >/dev/null || export PKG_CONFIG="$deps/usr/bin/pkgconf"
  export OPENSSL_ROOT_DIR="$deps/usr"
  cxxflags="-idirafter $deps/usr/include/x86_64-linux-gnu"
  export LDFLAGS="-Wl,-rpath-link,$libdir -Wl,-rpath,$libdir"
fi
torch_include=$(python3 -c 'import torch.utils.cpp_extension as e; print(e.include_paths()[0])')
if [ ! -d "$torch_include/gloo" ] && [ -n "${HAP_GLOO_INCLUDE:-}" ]; then
  cxxflags="$cxxflags -idirafter $(cd "$HAP_GLOO_INCLUDE" && pwd)"
fi
cuda_root=""
[ -d /usr/local/cuda ] && cuda_root="-DCUDAToolkit_ROOT=/usr/local/cuda"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
echo "== configure"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DHAP_WITH_GUI=OFF -DHAP_BUILD_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$prefixes" -DCMAKE_CXX_FLAGS="$cxxflags" $cuda_root || exit 1
echo "== build"
keep_going=()
[ ${#generator[@]} -gt 0 ] && keep_going=(-- -k 0)  # every compile error at once: a GPU machine is lent briefly
cmake --build "$build" --parallel "$(nproc)" --target hap hap-worker bench_runtime_overhead "${keep_going[@]}" || exit 1
hap="$build/app/cli/hap"
worker="$build/app/worker/hap-worker"

work="$build/gpu-check"
mkdir -p "$work"
# shellcheck source=lib/cluster.sh
. "$root/scripts/lib/cluster.sh"
write_cluster "$work/one-gpu.yaml" one-gpu gpu "{flops: {float32: 50T}, memory: 64GiB, memory_bandwidth: 2TB/s}" 1 \
  "{bandwidth: 100GB/s, latency: 5us}"
write_cluster "$work/two-cpu.yaml" two-cpu cpu "{flops: {float32: 50G}, memory: 8GiB, memory_bandwidth: 10GB/s}" 2 \
  "{bandwidth: 1GB/s, latency: 100us}"

models="mlp bert bert_moe vgg19 vit"
if [ -z "$zoo" ]; then
  zoo="$build/zoo"
  mkdir -p "$zoo"
  echo "== export the zoo's tiny presets with $(python3 -c 'import torch; print("torch", torch.__version__)')"
  for m in $models; do
    python3 "$root/resources/models/export.py" --model "$m" --preset tiny --out "$zoo" --quiet || exit 3
  done
fi

failures=0
result() {  # name, status, detail
  printf '%-44s %s  %s\n' "$1" "$([ "$2" = 0 ] && echo PASS || echo FAIL)" "$3"
  [ "$2" = 0 ] || failures=$((failures + 1))
}
port=$((20000 + RANDOM % 20000))
run_rank() {  # rank world log plan args...
  local rank=$1 world=$2 log=$3 plan=$4
  shift 4
  RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port HAP_TIMEOUT_S=120 \
    timeout 300 "$worker" "$plan" --steps 20 --warmup 0 "$@" >"$log" 2>&1
}

echo "== exactness, 1 rank"
for m in $models; do
  plan="$work/$m-gpu1.json"
  if ! "$hap" plan "$zoo/$m-tiny.pt" -c "$work/one-gpu.yaml" -o "$plan" -q --no-baselines >"$work/$m-plan.log" 2>&1; then
    result "$m: plan" 1 "$(tail -1 "$work/$m-plan.log")"
    continue
  fi
  for where in cuda cpu; do
    flag=()
    [ $where = cuda ] && flag=(--cuda)
    log="$work/$m-$where.log"
    run_rank 0 1 "$log" "$plan" --check "${flag[@]}"
    result "$m: 1 rank on $where, --check" $? "$(grep -E '^check|error' "$log" | tail -1)"
  done
done

echo "== exactness, 2 ranks on the CPU (Gloo through this LibTorch's process-group API)"
plan="$work/bert-cpu2.json"
if "$hap" plan "$zoo/bert-tiny.pt" -c "$work/two-cpu.yaml" -o "$plan" -q --no-baselines >"$work/bert-plan2.log" 2>&1; then
  port=$((20000 + RANDOM % 20000))
  run_rank 1 2 "$work/bert-cpu2-r1.log" "$plan" --check --threads 2 --bucket-mb 0.002 &
  run_rank 0 2 "$work/bert-cpu2-r0.log" "$plan" --check --threads 2 --bucket-mb 0.002
  s0=$?
  wait $!
  s1=$?
  result "bert: 2 ranks on cpu (Gloo), --check" $((s0 | s1)) "$(grep -E '^check|error' "$work/bert-cpu2-r0.log" | tail -1)"
else
  result "bert: plan for 2 ranks" 1 "$(tail -1 "$work/bert-plan2.log")"
fi

echo "== benchmark (a) on GPU 0: executor vs plain LibTorch forward+backward"
declare -A sets=(
  [mlp]="--set batch=512 --set features=1024 --set hidden=4096"
  [bert]="--set batch=32 --set embed=768 --set heads=12 --set layers=4 --set hidden=3072 --set seq_len=128 --set vocab=8192"
  [vit]="--set batch=64 --set embed=384 --set heads=6 --set layers=6 --set hidden=1536 --set image_size=32"
)
for m in mlp bert vit; do
  f="$work/$m-gpu.pt"
  # shellcheck disable=SC2086
  if ! python3 "$root/resources/models/export.py" --model "$m" --preset tiny ${sets[$m]} --output "$f" --quiet \
      >"$work/$m-gpu-export.log" 2>&1; then
    f="$zoo/$m-tiny.pt"  # this torch cannot export at that scale: the tiny preset still times the interpreter
  fi
  "$hap" plan "$f" -c "$work/one-gpu.yaml" -o "$work/$m-gpu-plan.json" -q --no-baselines >/dev/null 2>&1 || {
    result "$m: plan for the benchmark" 1 ""; continue; }
  for fusion in "" --no-fusion; do
    # shellcheck disable=SC2086
    "$build/bench/bench_runtime_overhead" "$work/$m-gpu-plan.json" --cuda --iterations "$iterations" $fusion 2>&1 |
      tee -a "$work/$m-bench.log"
  done
done

echo "== $failures check(s) failed"
[ $failures = 0 ]
