#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the size tables of docs/BENCHMARKS.md: text/data/bss of libtether.a (Embedded
# Swift, -Osize) per architecture and the stripped size of examples/device linked against
# it statically (one firmware-like binary; libc and libev stay shared); then what a static
# host of each profile links (scripts/check/profile-hosts.sh) and the archive's members. Needs
# `make lib` for each ARCH first (make sizes does it).
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
printf '| arch | libtether.a text | data | bss | total | stripped device (static libtether) |\n'
printf '|---|---:|---:|---:|---:|---:|\n'
for arch in "${archs[@]}"; do
  prefix=$(prefix "$arch")
  lib=$build/lib/$arch/libtether.a
  read -r text data bss total _ < <("${prefix}size" -t "$lib" | tail -1)
  device=$build/sizes/device-$arch
  mkdir -p "$build/sizes"
  "${prefix}gcc" -std=c99 -Os -IInclude examples/device.c -o "$device" "$lib" -lev -lm
  "${prefix}strip" "$device"
  bytes=$(stat -c %s "$device")
  awk -v a="$arch" -v t="$text" -v d="$data" -v b="$bss" -v o="$total" -v s="$bytes" 'BEGIN {
    printf "| %s | %d (%.1f KiB) | %d | %d | %d | %d bytes (%.1f KiB) |\n", a, t, t / 1024, d, b, o, s, s / 1024 }'
done
printf '\narmv7 is built with `-O`, not `-Osize`: Swift 6.3.1'"'"'s `-Osize` code for armv7 miscompiled the\n'
printf 'wire decoder (`scripts/build/build-lib.sh` says how), so its figures are not comparable with\n'
printf 'the other two.\n'
printf '\nWhat a static C host links from libtether.a, per profile (`scripts/check/profile-hosts.sh`:\n'
printf 'generated hosts that take the address of every function of a profile; their text minus\n'
printf 'that of the same program calling nothing, so PLT and relocations count; libc and libev\n'
printf 'stay shared):\n\n'
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
printf '\nWhat `make profile-check` bounds (under 65,536 bytes on aarch64): the "text" column of\n'
printf '`size` for `build/lib/aarch64/obj/libtether.o`, the relocatable object every member of\n'
printf '`libtether.a` and `libtether.so` is cut from, once the link has kept only what the\n'
printf 'functions of `tether.h` reach: the code and read-only data (`.text`, `.rodata`, string\n'
printf 'literals) of both profiles, of the functions they share and of the `messages` member\n'
printf '(`tether_error_message`); not `.data` or `.bss`. The hosts above are larger: they are\n'
printf 'whole PIE executables, so PLT entries, dynamic symbols and relocations count too.\n'
