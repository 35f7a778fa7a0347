#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes TetherConfig.cmake and TetherConfigVersion.cmake (from cmake/*.cmake.in) into
# <prefix>/LIBDIR/cmake/Tether, for find_package(Tether).
# Usage: scripts/build/cmake-config.sh PREFIX LIBDIR VERSION ARCH
#   PREFIX   where the tree is being written (make install's PREFIX, a package's usr/)
#   LIBDIR   the library directory relative to the prefix: lib, or lib/<multiarch>
#   VERSION  x.y.z; ARCH x86_64, aarch64 or armv7
# The files hold no absolute path: they find the prefix from their own location.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/build/arch.sh
. "$here/scripts/build/arch.sh"
[ $# -eq 4 ] || { echo "usage: scripts/build/cmake-config.sh PREFIX LIBDIR VERSION ARCH" >&2; exit 2; }
prefix=$1 libdir=${2%/} version=$3 arch=$4
tether_arch "$arch"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "cmake-config: bad VERSION '$version'" >&2; exit 2; }
case "$libdir" in /* | *..* | '') echo "cmake-config: LIBDIR must be relative ('$libdir')" >&2; exit 2 ;; esac
up=../..  # from lib/cmake/Tether
IFS=/ read -ra parts <<< "$libdir"
for _ in "${parts[@]}"; do up=$up/..; done
out=$prefix/$libdir/cmake/Tether
install -d "$out"
sed -e "s|@TETHER_UP@|$up|g" -e "s|@TETHER_LIBDIR@|$libdir|g" \
  "$here/cmake/TetherConfig.cmake.in" > "$out/TetherConfig.cmake"
sed -e "s|@TETHER_VERSION@|$version|g" -e "s|@TETHER_MULTIARCH@|$MULTIARCH|g" \
  -e "s|@TETHER_SIZEOF_VOID_P@|$POINTER_BYTES|g" \
  "$here/cmake/TetherConfigVersion.cmake.in" > "$out/TetherConfigVersion.cmake"
chmod 644 "$out/TetherConfig.cmake" "$out/TetherConfigVersion.cmake"
