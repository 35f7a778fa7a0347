#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compiles Sources/TetherCore as Embedded Swift for the host and for the device targets,
# with the toolchain alone (linking comes with the driver). Proves the core stays inside
# the Embedded subset: no Foundation, no existentials, no untyped throws, ...
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BUILD_DIR:-build}/embedded-check
mkdir -p "$out"
sources=$(find Sources/TetherCore -name '*.swift' | sort)
for target in host aarch64-none-none-elf armv7-none-none-eabi; do
  flags=()
  [ "$target" != host ] && flags+=(-target "$target")
  [ "$target" = armv7-none-none-eabi ] && flags+=(-Xcc -mfloat-abi=hard -Xcc -mfpu=vfpv3-d16)
  # shellcheck disable=SC2086
  swiftc -enable-experimental-feature Embedded -wmo -parse-as-library -Osize \
    -module-name TetherCore -package-name tether "${flags[@]}" $sources -c -o "$out/TetherCore-$target.o"
  printf 'embedded: TetherCore builds for %-22s (%s bytes of object)\n' "$target" \
    "$(stat -c %s "$out/TetherCore-$target.o")"
done
