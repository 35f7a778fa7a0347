#!/usr/bin/env bash
# Builds what C hosts link: an Embedded Swift build of TetherCore + Tether (no Swift runtime;
# libc and libev only), as build/lib/ARCH/libtether.a and libtether.so (SONAME
# libtether.so.0), with a linker map. Usage: scripts/build-lib.sh [x86_64|aarch64|armv7]
#
# One Swift module holds the core and the driver (so no generic code is specialized twice),
# every function in its own section; a relocatable link keeps only what the functions of
# tether.h reach, and only those stay global.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-x86_64}
optimize=-Osize
case "$arch" in
  x86_64)
    triple=() ; prefix="" ; sysroot=/usr ; multiarch=x86_64-linux-gnu ;;
  aarch64)
    triple=(-target aarch64-none-none-elf) ; prefix=aarch64-linux-gnu- ;
    sysroot=/usr/aarch64-linux-gnu ; multiarch=aarch64-linux-gnu ;;
  armv7)
    triple=(-target armv7-none-none-eabi -Xcc -mfloat-abi=hard -Xcc -mfpu=vfpv3-d16) ;
    # -O, not -Osize: Swift 6.3.1's -Osize code for armv7 corrupted a ByteReader passed
    # inout through the wire decoder (valid login datagrams failed to decode, or trapped);
    # -O and -Onone are correct. Tests/c/test_rtm.c under qemu shows it.
    optimize=-O ;
    prefix=arm-linux-gnueabihf- ; sysroot=/usr/arm-linux-gnueabihf ;
    multiarch=arm-linux-gnueabihf ;;
  *)
    echo "build-lib: unknown ARCH '$arch' (known: x86_64, aarch64, armv7)" >&2
    exit 2 ;;
esac
for tool in "${prefix}gcc" "${prefix}ld" "${prefix}objcopy" "${prefix}ar"; do
  command -v "$tool" >/dev/null || { echo "build-lib: $tool is missing (make deps)" >&2; exit 1; }
done
[ -e "/usr/lib/$multiarch/libev.so" ] || { echo "build-lib: libev-dev for $arch is missing (make deps)" >&2; exit 1; }

out=${BUILD_DIR:-build}/lib/$arch
obj=$out/obj
mkdir -p "$obj"
cross=()
[ "$arch" != x86_64 ] && cross=(-Xcc "-I$sysroot/include" -Xcc -I/usr/include -Xcc -D__linux__)
exports=$(grep -oE '\btether_[a-z0-9_]+\(' Include/tether.h | tr -d '(' | sort -u)
echo "$exports" > "$obj/exports.txt"

# shellcheck disable=SC2046
swiftc -enable-experimental-feature Embedded -wmo -parse-as-library "$optimize" "${triple[@]}" \
  "${cross[@]}" -Xfrontend -function-sections -Xfrontend -internalize-at-link \
  -module-name Tether -I Sources/CLibev -I Sources/CTetherABI -I Sources/CTetherSystem \
  $(find Sources/TetherCore Sources/Tether -name '*.swift' | sort) -c -o "$obj/tether-all.o"
# shellcheck disable=SC2046
"${prefix}ld" -r --gc-sections $(sed 's/^/-u /' "$obj/exports.txt") "$obj/tether-all.o" \
  -o "$obj/tether-gc.o"
"${prefix}objcopy" --keep-global-symbols="$obj/exports.txt" "$obj/tether-gc.o" "$obj/libtether.o"

rm -f "$out/libtether.a"
"${prefix}ar" rcs "$out/libtether.a" "$obj/libtether.o"
"${prefix}gcc" -shared -o "$out/libtether.so.0" "$obj/libtether.o" -Wl,-soname,libtether.so.0 \
  -Wl,--gc-sections -Wl,-Map,"$out/libtether.map" -L"/usr/lib/$multiarch" -lev -lm
ln -sf libtether.so.0 "$out/libtether.so"
echo "build-lib: $out/libtether.a and libtether.so ($arch, Embedded Swift, $optimize," \
  "$("${prefix}size" "$obj/libtether.o" | awk 'NR==2 { print $1 }') bytes of text)"
