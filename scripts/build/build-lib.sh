#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds what C hosts link: an Embedded Swift build of TetherCore + TetherSodium + Tether (no
# Swift runtime; libc, libev and libsodium only, all three shared), as
# build/lib/ARCH/libtether.a and libtether.so (SONAME libtether.so.0), with a linker map.
# Usage: scripts/build/build-lib.sh [x86_64|aarch64|armv7] [VARIANT]
#
# VARIANT is `shipped` (the default: the library above) or one of the two test-only builds,
# never installed or packaged, each in a directory of its own (build/lib-VARIANT/ARCH), with
# the exports Tests/c/tether_test_crypto.h declares under its macro beside tether.h's:
#   test-crypto   -D TETHER_TEST_CRYPTO: the crypto seam's random draws come from a seeded
#                 stream once a test sets its seed (Tests/c/test_crypto.c)
#   null-crypto   -D TETHER_NULL_CRYPTO: the null AEAD and X25519 (test_null_crypto; never shipped)
# `make abi-check` (scripts/check/abi-symbols.sh) refuses either as the shipped library.
#
# One Swift module holds the core, the crypto seam on libsodium and the driver (so no generic
# code is specialized twice; scripts/build/lib-module.sh lists its files). libsodium's own
# code stays in libsodium.so: the library's text is Tether's alone.
# swiftc optimizes it to LLVM IR; the toolchain's clang turns that into machine code with
# every function and every datum in its own section (swiftc has no -fdata-sections), and
# every symbol but the functions of tether.h hidden and global, so that sections can go to
# different objects. A relocatable link keeps only what the functions of tether.h reach.
#
# libtether.so is that one object, with only the functions of tether.h left global.
# libtether.a holds one member per profile, so that a static host links only the code of
# the profile it calls: `channel` (the tether_* functions), `rtm` (the login session,
# tether_rtm_*), `messages` (tether_error_message and its sentences, TETHER_MESSAGE_EXPORTS:
# linked only by a host that calls it), and `common` (what several members reach, and the
# functions both profiles use, TETHER_SHARED_EXPORTS). A section goes to the one member
# whose functions alone reach it, otherwise to common; no section is in two members.
# TETHER_SECOND_PROFILE (a regular expression, default ^tether_rtm_) names the second
# profile's functions; a member with no function is left out.
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-x86_64}
variant=${2:-shipped}
optimize=-Osize
# shellcheck source=scripts/build/lib-module.sh
. scripts/build/lib-module.sh
case "$variant" in
  shipped) out=${BUILD_DIR:-build}/lib/$arch ; macro="" ;;
  test-crypto) out=${BUILD_DIR:-build}/lib-test-crypto/$arch ; macro=TETHER_TEST_CRYPTO ;;
  null-crypto) out=${BUILD_DIR:-build}/lib-null-crypto/$arch ; macro=TETHER_NULL_CRYPTO ;;
  *)
    echo "build-lib: unknown VARIANT '$variant' (known: shipped, test-crypto, null-crypto)" >&2
    exit 2 ;;
esac
case "$arch" in
  x86_64)
    triple=() ; prefix="" ; sysroot=/usr ; multiarch=x86_64-linux-gnu ;
    codegen=(-target x86_64-unknown-linux-gnu) ; codegen_only=() ;;
  aarch64)
    triple=(-target aarch64-none-none-elf) ; prefix=aarch64-linux-gnu- ;
    sysroot=/usr/aarch64-linux-gnu ; multiarch=aarch64-linux-gnu ;
    codegen=(-target aarch64-none-none-elf) ;
    # One more run of the machine outliner over what the first one left (-100 bytes).
    codegen_only=(-mllvm -aarch64-use-tbi -mno-global-merge -mllvm -machine-outliner-reruns=1) ;;
  armv7)
    triple=(-target armv7-none-none-eabi -Xcc -mfloat-abi=hard -Xcc -mfpu=vfpv3-d16) ;
    # -O, not -Osize: Swift 6.3.1's -Osize code for armv7 corrupted a ByteReader passed
    # inout through the wire decoder (valid login datagrams failed to decode, or trapped);
    # -O and -Onone are correct. Tests/c/test_rtm.c under qemu shows it.
    optimize=-O ;
    prefix=arm-linux-gnueabihf- ; sysroot=/usr/arm-linux-gnueabihf ;
    multiarch=arm-linux-gnueabihf ;
    codegen=(-target armv7-none-none-eabi -mfloat-abi=hard -mfpu=vfpv3-d16) ;
    codegen_only=(-mno-global-merge) ;;
  *)
    echo "build-lib: unknown ARCH '$arch' (known: x86_64, aarch64, armv7)" >&2
    exit 2 ;;
esac
for tool in "${prefix}gcc" "${prefix}ld" "${prefix}objcopy" "${prefix}ar"; do
  command -v "$tool" >/dev/null || { echo "build-lib: $tool is missing (make deps)" >&2; exit 1; }
done
[ -e "/usr/lib/$multiarch/libev.so" ] || { echo "build-lib: libev-dev for $arch is missing (make deps)" >&2; exit 1; }
[ -e "/usr/lib/$multiarch/libsodium.so" ] ||
  { echo "build-lib: libsodium-dev for $arch is missing (make deps)" >&2; exit 1; }

obj=$out/obj
mkdir -p "$obj"
cross=()
csystem=()  # the same headers for the C of CTetherSystem, as system headers (no warnings)
if [ "$arch" != x86_64 ]; then
  cross=(-Xcc "-I$sysroot/include" -Xcc -I/usr/include -Xcc -D__linux__)
  csystem=(-isystem "$sysroot/include" -isystem /usr/include -D__linux__)
fi
exports=$(grep -oE '\btether_[a-z0-9_]+\(' Include/tether.h | tr -d '(' | sort -u)
defines=()
if [ -n "$macro" ]; then
  # A test-only build: its macro for Swift and for the C it imports, its module map
  # (Tests/c/module.modulemap), and the functions the test header declares under the macro.
  defines=(-D "$macro" -Xcc "-D$macro" -I Tests/c)
  exports=$(printf '%s\n' "$exports" "$(gcc -E -P "-D$macro" Tests/c/tether_test_crypto.h |
    grep -oE '\btether_test_[a-z0-9_]+\(' | tr -d '(')" | sort -u)
fi
echo "$exports" > "$obj/exports.txt"

clang=$(dirname "$(readlink -f "$(command -v swiftc)")")/clang
[ -x "$clang" ] || { echo "build-lib: no clang beside swiftc ($clang)" >&2; exit 1; }

# shellcheck disable=SC2086
swiftc -enable-experimental-feature Embedded -wmo -parse-as-library "$optimize" "${triple[@]}" \
  "${cross[@]}" -Xfrontend -internalize-at-link -module-name Tether -package-name tether \
  "${LIB_MODULE_INCLUDES[@]}" "${defines[@]}" $LIB_MODULE_SOURCES -emit-ir -o "$obj/tether-swift.ll"
# The C of CTetherSystem (the system calls), as LLVM bitcode for the same target, built with
# the strict flags and for size; the definitions of its hot paths are `inline` (see the top
# of its header, tether_system.h). No compiler's name in a .comment section (112 bytes of
# every device's file).
bitcode=$(scripts/build/csystem.sh "$obj" bc -emit-llvm "${codegen[@]}" "${csystem[@]}" -Oz -fPIC \
  -fno-ident)
link=()
for file in $bitcode; do link+=(-Xclang -mlink-bitcode-file -Xclang "$file"); done
# Linked into the Swift module (no pass run), its functions made internal like the Swift
# ones (the C has no other prefix: they all are tether_sys_, or static already). Not
# -mlink-builtin-bitcode, which internalizes too but also stamps the functions with
# attributes of its own (convergent, minsize).
"$clang" -S -emit-llvm "${codegen[@]}" -Oz -Xclang -disable-llvm-passes "$obj/tether-swift.ll" \
  "${link[@]}" -o "$obj/tether-linked.ll"
sed -i -E '/^define internal /!s/^define ([^@]*@tether_sys_[a-z0-9_]+\()/define internal \1/' \
  "$obj/tether-linked.ll"
# The toolchain's LLVM optimizes that IR once more, for size, while every definition but the
# exports is internal: it sees the whole library (the C inlined into the Swift code, as when
# it was inline in the header), so it can drop, merge and simplify what swiftc's own pass
# left (-400 bytes on aarch64).
"$clang" -S -emit-llvm "${codegen[@]}" -Oz "$obj/tether-linked.ll" -o "$obj/tether.ll"
# Internal, private and protected definitions become hidden globals (names are unique in
# one module); the exports (tether_*, from @c) stay protected. No unwind tables (only the
# C of CTetherSystem has them; nothing unwinds through the library), so no
# .eh_frame binds the members' functions together.
sed -E -e 's/^define (internal|private) /define hidden /' \
  -e '/^attributes #/s/ uwtable(\([a-z]+\))?//' \
  -e 's/^(@("[^"]*"|[^ ]+) = )(internal|private) /\1hidden /' \
  -e '/^define protected [^@]*@tether_[a-z0-9_]+\(/!s/^define ((linkonce_odr|weak_odr) )?protected /define \1hidden /' \
  -e 's/^(@("[^"]*"|[^ ]+) = )((linkonce_odr|weak_odr) )?protected /\1\3hidden /' \
  "$obj/tether.ll" > "$obj/tether-hidden.ll"
# Names with spaces (a StaticString's global is named after its text, e.g. the sentences of
# tether_error_message) would give sections whose names the member split below cannot
# read (readelf's columns): spaces in quoted names become underscores.
perl -i -pe 's{@"([^"]*)"}{ (my $n = $1) =~ tr/ /_/; "\@\"$n\"" }ge' "$obj/tether-hidden.ll"
# Machine code only: the IR is optimized already.
"$clang" -S "${codegen[@]}" "${codegen_only[@]}" -Oz -Xclang -disable-llvm-passes \
  -ffunction-sections -fdata-sections -fno-addrsig -fPIC "$obj/tether-hidden.ll" -o "$obj/tether.s"
# What codegen adds: outlined code sequences (named N_M by a rerun of the outliner) and
# constant pools, hidden globals too (but on armv7, whose constant pools sit in their
# function's section, loaded PC-relative).
pools='s/\.LCPI([0-9]+_[0-9]+)/__tether_cpi_\1/g'
[ "$arch" = armv7 ] && pools='s/^$//'
sed -E -e "$pools" \
  -e 's/^(OUTLINED_FUNCTION_[0-9_]+|__tether_cpi_[0-9]+_[0-9]+):/\t.globl \1\n\t.hidden \1\n\1:/' \
  "$obj/tether.s" > "$obj/tether-global.s"
"$clang" -c "${codegen[@]}" "$obj/tether-global.s" -o "$obj/tether-all.o"

# shellcheck disable=SC2046
"${prefix}ld" -r --gc-sections $(sed 's/^/-u /' "$obj/exports.txt") "$obj/tether-all.o" \
  -o "$obj/tether-gc.o"
"${prefix}objcopy" --keep-global-symbols="$obj/exports.txt" "$obj/tether-gc.o" "$obj/libtether.o"
# The members share hidden symbols only: nothing but the exports may be visible from them.
visible=$("${prefix}readelf" -sW "$obj/tether-gc.o" |
  awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 != "HIDDEN" && $7 != "UND" { print $8 }' |
  grep -vxF -f "$obj/exports.txt" || true)
if [ -n "$visible" ]; then
  echo "build-lib: symbols visible beside the exports:" >&2
  echo "$visible" >&2
  exit 1
fi

# The archive's members (see the top): the sections each profile's functions reach.
second=${TETHER_SECOND_PROFILE:-^tether_rtm_}
shared=${TETHER_SHARED_EXPORTS:-^tether_(version|error_name)\$}
messages=${TETHER_MESSAGE_EXPORTS:-^tether_error_message\$}
grep -E "$shared" "$obj/exports.txt" > "$obj/roots-common.txt" || true
grep -vE "$shared" "$obj/exports.txt" | grep -E "$messages" > "$obj/roots-messages.txt" || true
grep -vE "$shared|$messages" "$obj/exports.txt" | grep -E "$second" > "$obj/roots-rtm.txt" || true
grep -vE "$shared|$messages" "$obj/exports.txt" | grep -vE "$second" > "$obj/roots-channel.txt" ||
  true
reach() {  # reach ROOTS OUT: the sections of tether-gc.o that the functions in ROOTS reach
  if [ -s "$1" ]; then
    # shellcheck disable=SC2046
    "${prefix}ld" -r --gc-sections $(sed 's/^/-u /' "$1") "$obj/tether-gc.o" -o "$obj/reach.o"
    "${prefix}readelf" -SW "$obj/reach.o" | sed -nE 's/^ *\[ *[0-9]+\] ([^ ]+) .*/\1/p' |
      grep -vE '^\.(rela?\..*|symtab|strtab|shstrtab)$' | sort -u > "$2"
  else
    : > "$2"
  fi
}
reach "$obj/roots-common.txt" "$obj/reach-common.txt"
reach "$obj/roots-channel.txt" "$obj/reach-channel.txt"
reach "$obj/roots-rtm.txt" "$obj/reach-rtm.txt"
reach "$obj/roots-messages.txt" "$obj/reach-messages.txt"
# Each of channel, rtm and messages holds what it alone reaches; common holds the rest.
single=(channel rtm messages)
for member in "${single[@]}"; do
  others=()
  for other in "${single[@]}"; do
    [ "$other" = "$member" ] || others+=("$obj/reach-$other.txt")
  done
  comm -23 "$obj/reach-$member.txt" <(sort -u "$obj/reach-common.txt" "${others[@]}") \
    > "$obj/sections-$member.txt"
done
comm -23 <(sort -u "$obj"/reach-{common,channel,rtm,messages}.txt) \
  <(sort -u "$obj"/sections-{channel,rtm,messages}.txt) > "$obj/sections-common.txt"
# Every section that some member does not hold; the notes of how the code was built
# (executable stack or not, ARM build attributes) stay in every member.
all_sections=$("${prefix}readelf" -SW "$obj/tether-gc.o" |
  sed -nE 's/^ *\[ *[0-9]+\] ([^ ]+) .*/\1/p' |
  grep -vE '^\.(rela?\..*|symtab|strtab|shstrtab|note\.GNU-stack|ARM\.attributes)$' | sort -u)
rm -f "$out/libtether.a" "$obj"/{common,channel,rtm,messages}.o
members=()
for member in common channel rtm messages; do
  [ -s "$obj/sections-$member.txt" ] || continue
  python3 scripts/build/elf-member.py "$obj/tether-gc.o" "$obj/member-$member.tmp" \
    "$obj/sections-$member.txt"
  remove=()
  while read -r section; do remove+=(-R "$section" -R ".rela$section" -R ".rel$section"); done \
    < <(comm -23 <(echo "$all_sections") "$obj/sections-$member.txt")
  "${prefix}objcopy" "${remove[@]}" "$obj/member-$member.tmp" "$obj/$member.o"
  rm -f "$obj/member-$member.tmp"
  members+=("$obj/$member.o")
done
"${prefix}ar" rcs "$out/libtether.a" "${members[@]}"
"${prefix}gcc" -shared -o "$out/libtether.so.0" "$obj/libtether.o" -Wl,-soname,libtether.so.0 \
  -Wl,--gc-sections -Wl,-Map,"$out/libtether.map" -L"/usr/lib/$multiarch" -lsodium -lev -lm
ln -sf libtether.so.0 "$out/libtether.so"
label=""
[ "$variant" = shipped ] || label=", $variant build: tests only, never shipped"
echo "build-lib: $out/libtether.a and libtether.so ($arch, Embedded Swift, $optimize," \
  "$("${prefix}size" "$obj/libtether.o" | awk 'NR==2 { print $1 }') bytes of text$label)"
