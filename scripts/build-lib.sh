#!/usr/bin/env bash
# Builds what C hosts link: an Embedded Swift build of TetherCore + Tether (no Swift
# runtime), as build/lib/ARCH/libtether.a and libtether.so (SONAME libtether.so.0), with a
# linker map. Usage: scripts/build-lib.sh [x86_64]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-x86_64}
case "$arch" in
  x86_64) target=() ; cc=${CC:-cc} ;;
  *) echo "build-lib: unknown ARCH '$arch' (known: x86_64)" >&2; exit 2 ;;
esac
out=${BUILD_DIR:-build}/lib/$arch
obj=$out/obj
mkdir -p "$obj"
flags=(-enable-experimental-feature Embedded -wmo -parse-as-library -Osize "${target[@]}")
# shellcheck disable=SC2046
swiftc "${flags[@]}" -module-name TetherCore $(find Sources/TetherCore -name '*.swift' | sort) \
  -emit-module -emit-module-path "$obj/TetherCore.swiftmodule" -c -o "$obj/TetherCore.o"
# shellcheck disable=SC2046
swiftc "${flags[@]}" -module-name Tether -I "$obj" -I Sources/CLibev -I Sources/CTetherABI \
  -I Sources/CTetherSystem $(find Sources/Tether -name '*.swift' | sort) -c -o "$obj/Tether.o"
rm -f "$out/libtether.a"
ar rcs "$out/libtether.a" "$obj/TetherCore.o" "$obj/Tether.o"
"$cc" -shared -o "$out/libtether.so.0" "$obj/TetherCore.o" "$obj/Tether.o" \
  -Wl,-soname,libtether.so.0 -Wl,-Map,"$out/libtether.map" -lev -lm
ln -sf libtether.so.0 "$out/libtether.so"
echo "build-lib: $out/libtether.a and libtether.so ($arch, Embedded Swift, -Osize)"
