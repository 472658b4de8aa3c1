#!/usr/bin/env bash
# Prepares, on this Debian 12 machine, the build dependencies that scripts/gpu-check.sh needs on a
# GPU machine that has neither our Debian packages nor a network (Ubuntu 24.04 with g++, cmake,
# ninja and python3's CUDA torch). Downloads the Debian packages with `apt-get download` (no root)
# and unpacks them with `dpkg -x`:
#   DIR/root   HAP_DEPS_ROOT for gpu-check.sh: headers, .so links, pkg-config and CMake files, and
#              the runtime libraries an Ubuntu 24.04 base lacks (fmt, yaml-cpp, COIN-OR, LAPACK,
#              jemalloc, pkgconf)
#   DIR/gloo   Gloo's headers only (HAP_GLOO_INCLUDE=DIR/gloo/include): pip torch ships none, and
#              its own Gloo is inside libtorch, so Debian's libgloo and Gloo CMake config are dropped
# Libraries every Ubuntu 24.04 with python3 and cmake has (zlib, bzip2, OpenSSL 3, SQLite 3) are not
# shipped: their .so links point at the system's /usr/lib/x86_64-linux-gnu/<soname>, because a copy on
# gpu-check.sh's LD_LIBRARY_PATH would shadow the newer system ones for python3 and cmake too.
# Neither compilers nor libc are fetched. DIR/debs is deleted after unpacking.
#
# Usage: scripts/gpu-deps.sh [DIR]     (default DIR: <repo>/.gpu-deps, ignored through .git/info/exclude)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.gpu-deps}
multiarch=x86_64-linux-gnu

# -dev packages and the runtime libraries their .so links and .pc files name.
packages=(
  nlohmann-json3-dev libcli11-dev                      # header-only, CMake configs
  libfmt-dev libfmt9
  libyaml-cpp-dev libyaml-cpp0.7
  libssl-dev                                           # runtime: the system's libssl3
  coinor-libcoinutils-dev coinor-libcoinutils3v5
  coinor-libosi-dev coinor-libosi1v5
  coinor-libclp-dev coinor-libclp1
  coinor-libcgl-dev coinor-libcgl1
  coinor-libcbc-dev coinor-libcbc3
  liblapack3 libblas3 libgfortran5 libquadmath0        # CoinUtils' -llapack -lblas (links made below)
  zlib1g-dev libbz2-dev                                # CoinUtils' -lz -lbz2; runtime: the system's
  libsqlite3-dev libsqlitecpp-dev                      # SQLiteCpp is a static library
  libjemalloc-dev libjemalloc2
  pkgconf-bin libpkgconf3                              # for a machine without pkg-config
)
gloo_package=libgloo-dev
# Links to libraries of the GPU machine's base system: link name -> soname.
declare -A system_sonames=(
  [libz.so]=libz.so.1 [libbz2.so]=libbz2.so.1.0 [libssl.so]=libssl.so.3 [libcrypto.so]=libcrypto.so.3
  [libsqlite3.so]=libsqlite3.so.0
)

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "gpu-deps: needs a Debian machine (apt-get, dpkg) that reaches the Debian archive" >&2; exit 2
fi
rm -rf "$dir/debs" "$dir/root" "$dir/gloo"
mkdir -p "$dir/debs" "$dir/root" "$dir/gloo"
echo "== download ${#packages[@]} + 1 packages into $dir/debs"
(cd "$dir/debs" && apt-get download -q "${packages[@]}" "$gloo_package") || {
  echo "gpu-deps: apt-get download failed (no network, or a package name unknown to this apt)" >&2; exit 1; }

echo "== unpack into $dir/root and $dir/gloo"
for deb in "$dir"/debs/*.deb; do
  case $(basename "$deb") in
    "${gloo_package}"_*) dpkg -x "$deb" "$dir/gloo/unpacked" ;;
    *) dpkg -x "$deb" "$dir/root" ;;
  esac
done
mv "$dir/gloo/unpacked/usr/include" "$dir/gloo/include"   # headers only: no libgloo.so, no GlooConfig.cmake
rm -rf "$dir/gloo/unpacked" "$dir/debs"

usr="$dir/root/usr"
lib="$usr/lib/$multiarch"
# LAPACK and BLAS live in lapack/ and blas/, reached through update-alternatives links that dpkg -x
# does not make: link them where the linker (-llapack -lblas) and the loader look.
for l in lapack blas; do
  ln -sf "$l/lib$l.so.3" "$lib/lib$l.so.3"
  ln -sf "$l/lib$l.so.3" "$lib/lib$l.so"
done
for link in "${!system_sonames[@]}"; do
  ln -sf "/usr/lib/$multiarch/${system_sonames[$link]}" "$lib/$link"
done

# Static archives of libraries that also come shared are never linked: drop them (OpenSSL's,
# SQLite's and jemalloc's are most of the size). libSQLiteCpp.a, the only static-only one, stays.
find "$usr" -name '*.a' | while read -r a; do
  if [ -L "${a%.a}.so" ] || [ -e "${a%.a}.so" ]; then rm -f "$a"; fi
done
rm -f "$lib/libjemalloc_pic.a" "$lib"/libOsiCommonTests.so* "$lib/pkgconfig/osi-unittests.pc" \
  "$lib/pkgconfig/coindatasample.pc"
rm -rf "$usr/share/doc" "$usr/share/doc-base" "$usr/share/man" "$usr/share/info" "$usr/share/lintian" \
  "$usr/share/bug" "$usr/share/coin"
find "$usr/bin" -mindepth 1 ! -name pkgconf -exec rm -f {} +

# Every relative link resolves inside root; every remaining absolute one names a system soname.
broken=$(find "$dir/root" -xtype l ! -lname '/usr/lib/*' -print)
if [ -n "$broken" ]; then
  echo "gpu-deps: links that resolve nowhere:" >&2; echo "$broken" >&2; exit 1
fi
echo "== $(du -sh "$dir" | cut -f1) in $dir"
echo "gpu-check.sh environment: HAP_DEPS_ROOT=$dir/root HAP_GLOO_INCLUDE=$dir/gloo/include"
