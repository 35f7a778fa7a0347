#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make install: what a C host needs, in PREFIX: include/tether.h, lib/libtether.a and
# libtether.so (with its SONAME), lib/pkgconfig/tether.pc and lib/cmake/Tether (relocatable),
# README and docs/ in share/doc/tether; and, for the host (x86_64), bin/tether-edge, built
# statically (release, the Swift runtime inside) and stripped.
# Usage: scripts/build/install.sh PREFIX ARCH VERSION   (the library of ARCH built already)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 3 ] || { echo "usage: scripts/build/install.sh PREFIX ARCH VERSION" >&2; exit 2; }
prefix=$1 arch=$2 version=$3
lib=${BUILD_DIR:-build}/lib/$arch
if [ "$arch" = x86_64 ]; then
  swift build -q -c release --product tether-edge --static-swift-stdlib
  install -d "$prefix/bin"
  install -m 755 -s "$(swift build -c release --show-bin-path)/tether-edge" "$prefix/bin/"
fi
install -d "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/share/doc/tether/docs"
install -m 644 Include/tether.h "$prefix/include/"
install -m 644 "$lib/libtether.a" "$prefix/lib/"
install -m 755 "$lib/libtether.so.0" "$prefix/lib/"
ln -sf libtether.so.0 "$prefix/lib/libtether.so"
sed -e "s|@PREFIX@|$(realpath "$prefix")|" -e 's|@LIBDIR@|lib|' -e "s|@VERSION@|$version|" \
  tether.pc.in > "$prefix/lib/pkgconfig/tether.pc"
scripts/build/cmake-config.sh "$prefix" lib "$version" "$arch"
install -m 644 README.md LICENSE "$prefix/share/doc/tether/"
install -m 644 docs/*.md docs/*.png "$prefix/share/doc/tether/docs/"
echo "installed in $prefix: PKG_CONFIG_PATH=$(realpath "$prefix")/lib/pkgconfig," \
  "CMAKE_PREFIX_PATH=$(realpath "$prefix")"
