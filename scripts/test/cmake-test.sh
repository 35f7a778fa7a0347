#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make cmake-test: the CMake route, as a C developer takes it. For each ARCH given, against
# the tree `make install ARCH=... PREFIX=$BUILD_DIR/cmake-test/ARCH/installed` wrote (the
# Makefile does that first), moved elsewhere to show that nothing in it is absolute:
#   - examples/cmake configured with find_package(Tether 0.1 REQUIRED) (and, for ARM, the
#     toolchain file of cmake/toolchains), built, checked and run (ARM: under qemu-user),
#     once with Tether::tether (static: Tether inside, libtether.so.0 not needed, no code of
#     the login profile) and once with -DTETHER_USE_STATIC=OFF (libtether.so.0 needed);
#   - which find_package requests the install answers: 0.1, 0.1.0 EXACT and 0.1...1.0 yes;
#     0.2, 1.0 and 0.0.9 no (before 1.0 a minor release may break the ABI), and a build for
#     another architecture no.
# Usage: scripts/test/cmake-test.sh ARCH...
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/build/arch.sh
. scripts/build/arch.sh
root=$(pwd)/${BUILD_DIR:-build}/cmake-test
fail() { echo "cmake-test: $*" >&2; exit 1; }

toolchain_of() { # ARCH: the -D option naming its toolchain file (none for the host)
  tether_arch "$1"
  [ -n "$CROSS" ] && echo "-DCMAKE_TOOLCHAIN_FILE=$(pwd)/cmake/toolchains/$MULTIARCH.cmake"
  return 0
}

configure() { # LOG SOURCE BUILD ARCH PREFIX [cmake options...]: 0 when find_package succeeded
  local log=$1 source=$2 build=$3 arch=$4 prefix=$5
  shift 5
  # shellcheck disable=SC2046
  cmake -S "$source" -B "$build" $(toolchain_of "$arch") -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    "$@" > "$log" 2>&1
}

app_checks() { # ARCH DIR static|shared: build examples/cmake in DIR, check and run it
  local arch=$1 dir=$2 kind=$3 app needed rtm out
  local prefix=$root/$arch/moved
  local opts=()
  [ "$kind" = shared ] && opts=(-DTETHER_USE_STATIC=OFF)
  configure "$dir.log" examples/cmake "$dir" "$arch" "$prefix" "${opts[@]}" ||
    { cat "$dir.log"; fail "$arch $kind: examples/cmake did not configure"; }
  cmake --build "$dir" > "$dir-build.log" 2>&1 ||
    { cat "$dir-build.log"; fail "$arch $kind: examples/cmake did not build"; }
  app=$dir/tether-app
  tether_arch "$arch"
  readelf -h "$app" | grep "Machine: *$ELF_MACHINE\$" > /dev/null || fail "$arch $kind: $app is not $ELF_MACHINE"
  needed=$(readelf -d "$app" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | sort | paste -sd' ')
  [[ " $needed " == *" libev.so.4 "* ]] || fail "$arch $kind: libev.so.4 not needed ($needed)"
  if [ "$kind" = static ]; then
    # Tether inside calls libsodium itself (shared, as libev).
    [[ " $needed " == *" libsodium.so.23 "* ]] || fail "$arch static: libsodium.so.23 not needed ($needed)"
    [[ " $needed " != *" libtether.so.0 "* ]] || fail "$arch static: needs libtether.so.0 ($needed)"
    "${CROSS}nm" "$app" | grep ' T tether_engine_create$' > /dev/null || fail "$arch static: Tether is not inside"
    rtm=$("${CROSS}nm" "$app" | grep -c ' T tether_rtm_' || true)
    [ "$rtm" = 0 ] || fail "$arch static: $rtm functions of the login profile linked in"
  else
    [[ " $needed " == *" libtether.so.0 "* ]] || fail "$arch shared: libtether.so.0 not needed ($needed)"
    # libtether.so.0 names libsodium itself (the app may not, with --as-needed).
    readelf -d "$prefix/lib/libtether.so.0" | grep 'NEEDED.*\[libsodium\.so\.23\]' > /dev/null ||
      fail "$arch shared: the installed libtether.so.0 does not need libsodium.so.23"
    readelf -d "$app" | grep "R.*PATH.*$prefix/lib" > /dev/null || fail "$arch shared: no run path to $prefix/lib"
  fi
  out=$("${QEMU[@]}" "$app" 2>&1) || { echo "$out"; fail "$arch $kind: tether-app failed"; }
  [ "$(echo "$out" | tail -1)" = ok ] || { echo "$out"; fail "$arch $kind: tether-app did not say ok"; }
  echo "cmake-test: $arch $kind: Tether::tether$([ "$kind" = shared ] && echo " (TETHER_USE_STATIC=OFF)")" \
    "built ($needed)$([ ${#QEMU[@]} -gt 0 ] && echo ", run under ${QEMU[0]}" || echo ", run"): ok"
}

version_checks() { # ARCH: which requests the install answers
  local arch=$1 other want probe=$root/$arch/probe answered=() refused=()
  mkdir -p "$probe/src"
  cat > "$probe/src/CMakeLists.txt" <<'PROBE'
cmake_minimum_required(VERSION 3.13)
project(probe LANGUAGES C)
separate_arguments(WANT)
find_package(Tether ${WANT} REQUIRED)
PROBE
  for want in 0.1 "0.1.0 EXACT" 0.1...1.0; do
    configure "$probe/log" "$probe/src" "$probe/build" "$arch" "$root/$arch/moved" "-DWANT=$want" ||
      { cat "$probe/log"; fail "$arch: find_package(Tether $want) was refused"; }
    answered+=("$want")
  done
  for want in 0.2 1.0 0.0.9 "0.1.1 EXACT"; do
    if configure "$probe/log" "$probe/src" "$probe/build" "$arch" "$root/$arch/moved" "-DWANT=$want"; then
      fail "$arch: find_package(Tether $want) was answered by 0.1.0"
    fi
    grep -q "considered but not accepted" "$probe/log" &&
      grep -q "moved/lib/cmake/Tether/TetherConfig.cmake, version: " "$probe/log" ||
      { cat "$probe/log"; fail "$arch: find_package(Tether $want) failed for another reason"; }
    refused+=("$want")
  done
  # The same request from a build for another architecture: refused, even though found.
  other=$( [ "$arch" = x86_64 ] && echo aarch64 || echo x86_64 )
  rm -rf "$probe/build"
  if configure "$probe/log" "$probe/src" "$probe/build" "$other" "$root/$arch/moved" "-DWANT=0.1"; then
    fail "an $other build accepted the $arch install"
  fi
  tether_arch "$arch"
  grep -q "($MULTIARCH, not " "$probe/log" ||
    { cat "$probe/log"; fail "$other build: not refused for its architecture"; }
  rm -rf "$probe/build"
  echo "cmake-test: $arch install answers find_package(Tether ${answered[*]// /_}), refuses" \
    "${refused[*]// /_} and an $other build"
}

[ $# -gt 0 ] || { echo "usage: scripts/test/cmake-test.sh ARCH..." >&2; exit 2; }
for arch in "$@"; do
  tether_arch "$arch"
  [ -f "$root/$arch/installed/lib/cmake/Tether/TetherConfig.cmake" ] ||
    fail "no install in $root/$arch/installed (make cmake-test installs it first)"
  rm -rf "$root/$arch/moved" "$root/$arch/static" "$root/$arch/shared" "$root/$arch/probe"
  mv "$root/$arch/installed" "$root/$arch/moved"
  app_checks "$arch" "$root/$arch/static" static
  app_checks "$arch" "$root/$arch/shared" shared
  version_checks "$arch"
done
