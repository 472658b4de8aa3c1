#!/usr/bin/env bash
# Installs every Debian package HAP Studio needs to build, test and run. Idempotent: packages
# already present are skipped by apt, and the script exits early when nothing is missing.
# Usage: scripts/setup.sh            (runs apt-get through sudo when not root)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config clang-format git
  # fuzzing and sanitizers (scripts/fuzz.sh, scripts/sanitize-tests.sh): clang with libFuzzer
  clang-14 libclang-rt-14-dev
  # LibTorch (CPU) with c10d Gloo, and a fast BLAS that takes over libblas.so.3
  libtorch-dev libgloo-dev libopenblas0-pthread
  # hap-worker's heap: jemalloc, configured to keep freed memory (runtime/core/heap_policy.h)
  libjemalloc-dev
  # model zoo export, and the corpus of real architectures (torchvision, torchaudio)
  python3 python3-torch python3-numpy python3-torchvision python3-torchaudio
  # GUI and its tests
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libqt6svgwidgets6 libqt6sql6-sqlite
  fonts-dejavu-core xvfb xauth
  # planner back ends: LP solvers, graph layout, partitioning
  coinor-libcbc-dev coinor-libclp-dev libgraphviz-dev libmetis-dev
  # storage and C++ libraries
  sqlite3 libsqlite3-dev libsqlitecpp-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libfmt-dev libssl-dev zlib1g-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
