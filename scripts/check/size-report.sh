#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the size tables of docs/BENCHMARKS.md: text/data/bss of libtether.a (Embedded
# Swift, -Osize) per architecture and the stripped size of examples/device linked against
# it statically (one firmware-like binary; libc, libev and libsodium stay shared); then
# libsodium's text apart (Tether's text above is Tether's alone: libsodium is linked shared);
# then what a static host of each profile links (scripts/check/profile-hosts.sh) and the
# archive's members. Needs `make lib` for each ARCH first (make sizes does it).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
archs=(x86_64 aarch64 armv7)
prefix() {
  case "$1" in
    x86_64) echo "" ;;
    aarch64) echo aarch64-linux-gnu- ;;
    armv7) echo arm-linux-gnueabihf- ;;
  esac
}
multiarch() {
  case "$1" in
    x86_64) echo x86_64-linux-gnu ;;
    aarch64) echo aarch64-linux-gnu ;;
    armv7) echo arm-linux-gnueabihf ;;
  esac
}
printf '| arch | libtether.a text | data | bss | total | stripped device (static libtether) |\n'
printf '|---|---:|---:|---:|---:|---:|\n'
for arch in "${archs[@]}"; do
  prefix=$(prefix "$arch")
  lib=$build/lib/$arch/libtether.a
  read -r text data bss total _ < <("${prefix}size" -t "$lib" | tail -1)
  device=$build/sizes/device-$arch
  mkdir -p "$build/sizes"
  "${prefix}gcc" -std=c99 -Os -IInclude examples/device.c -o "$device" "$lib" -lsodium -lev -lm
  "${prefix}strip" "$device"
  bytes=$(stat -c %s "$device")
  awk -v a="$arch" -v t="$text" -v d="$data" -v b="$bss" -v o="$total" -v s="$bytes" 'BEGIN {
    printf "| %s | %d (%.1f KiB) | %d | %d | %d | %d bytes (%.1f KiB) |\n", a, t, t / 1024, d, b, o, s, s / 1024 }'
done
printf '\nlibsodium is linked shared (Debian'"'"'s libsodium23 1.0.18, installed on the board beside\n'
printf 'libev4), so none of it is in the text above. Its figure here is the text of the whole\n'
printf 'shared library, what a board installs and loads, not only of the functions Tether calls\n'
printf '(listed beside it):\n\n'
printf '| arch | libsodium.so.23 text | libsodium functions libtether.so.0 calls |\n'
printf '|---|---:|---|\n'
for arch in "${archs[@]}"; do
  prefix=$(prefix "$arch")
  so=$(readlink -f "/usr/lib/$(multiarch "$arch")/libsodium.so.23")
  sodium_text=$("${prefix}size" "$so" | awk 'NR == 2 { print $1 }')
  # What libtether.so.0 binds (the archive's members also list references the link dropped).
  called=$("${prefix}nm" -D -u "$build/lib/$arch/libtether.so.0" |
    awk '$2 ~ /^(sodium|crypto|randombytes)_/ { print "`" $2 "`" }' | sort -u | paste -sd' ')
  awk -v a="$arch" -v t="$sodium_text" -v c="${called:-none}" 'BEGIN {
    printf "| %s | %d (%.1f KiB) | %s |\n", a, t, t / 1024, c }'
done
printf '\narmv7 is built with `-O`, not `-Osize`: Swift 6.3.1'"'"'s `-Osize` code for armv7 miscompiled the\n'
printf 'wire decoder (`scripts/build/build-lib.sh` says how), so its figures are not comparable with\n'
printf 'the other two.\n'
printf '\nWhat a static C host links from libtether.a, per profile (`scripts/check/profile-hosts.sh`:\n'
printf 'generated hosts that take the address of every function of a profile; their text minus\n'
printf 'that of the same program calling nothing, so PLT and relocations count; libc, libev and\n'
printf 'libsodium stay shared):\n\n'
printf '| arch | host | text from libtether.a | members linked |\n'
printf '|---|---|---:|---|\n'
for arch in "${archs[@]}"; do
  BUILD_DIR=$build scripts/check/profile-hosts.sh "$arch"
done
printf '\nThe members of libtether.a (text bytes; a profile with no function has no member):\n\n'
printf '| arch | common | channel | rtm (login) | messages (tether_error_message) |\n'
printf '|---|---:|---:|---:|---:|\n'
for arch in "${archs[@]}"; do
  prefix=$(prefix "$arch")
  row="| $arch"
  for member in common channel rtm messages; do
    member_text=$("${prefix}size" -t "$build/lib/$arch/libtether.a" 2>/dev/null |
      awk -v m="$member.o" '$6 ~ "^" m { print $1 }')
    row+=" | ${member_text:--}"
  done
  echo "$row |"
done
printf '\nWhat `make profile-check` bounds (under 81,920 bytes, 80 KiB, on aarch64; the aim stays\n'
printf '64 KiB): the "text" column of `size` for `build/lib/aarch64/obj/libtether.o`, the\n'
printf 'relocatable object every member of `libtether.a` and `libtether.so` is cut from, once the\n'
printf 'link has kept only what the functions of `tether.h` reach: the code and read-only data\n'
printf '(`.text`, `.rodata`, string literals) of both profiles, of the functions they share and\n'
printf 'of the `messages` member (`tether_error_message`); not `.data` or `.bss`, and not\n'
printf 'libsodium (linked shared). The hosts above are larger: they are whole PIE executables, so\n'
printf 'PLT entries, dynamic symbols and relocations count too.\n'
