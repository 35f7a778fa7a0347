#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C examples built as a C developer builds them: against a staged `make install` of ARCH
# (build/install for x86_64, build/install-ARCH for a board), with pkg-config and the strict
# flags, into build/examples/ARCH/NAME.
# Usage: scripts/build/examples.sh ARCH [NAME...]   (default: minimal device messaging)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/build/arch.sh
. scripts/build/arch.sh
arch=${1:?usage: scripts/build/examples.sh ARCH [NAME...]}
shift
tether_arch "$arch"
build=${BUILD_DIR:-build}
stage=$build/install
[ "$arch" = x86_64 ] || stage=$build/install-$arch
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(minimal device messaging)
mkdir -p "$build/examples/$arch"
# shellcheck disable=SC2207
flags=($(PKG_CONFIG_PATH=$stage/lib/pkgconfig pkg-config --cflags --libs tether))
for name in "${names[@]}"; do
  "${CROSS}gcc" -std=c99 -Wall -Wextra -Wpedantic -Werror "examples/$name.c" \
    -o "$build/examples/$arch/$name" "${flags[@]}" -Wl,-rpath,"$(realpath "$stage")/lib"
done
echo "examples: ${names[*]} for $arch, built with pkg-config and -std=c99 -Wall -Wextra" \
  "-Wpedantic -Werror (build/examples/$arch)"
