#!/usr/bin/env bash
# Prints the size table of docs/BENCHMARKS.md: text/data/bss of libtether.a (Embedded
# Swift, -Osize) per architecture, and the stripped size of examples/device linked against
# it statically (one firmware-like binary; libc and libev stay shared). Needs `make lib`
# for each ARCH first (make sizes does it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
printf '| arch | libtether.a text | data | bss | total | stripped device (static libtether) |\n'
printf '|---|---:|---:|---:|---:|---:|\n'
for arch in x86_64 aarch64 armv7; do
  case "$arch" in
    x86_64) prefix="" ;;
    aarch64) prefix=aarch64-linux-gnu- ;;
    armv7) prefix=arm-linux-gnueabihf- ;;
  esac
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
