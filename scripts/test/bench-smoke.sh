#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# In make test: seconds-long runs of the benchmark that assert no timing, only that it runs
# and reports. First the libev designs' version 2 client against PyNaCl's vectors
# (tether-bench --vectors). x86_64: the three designs with tether-bench's own peer, then
# the whole of make bench against the staged tether-edge in small (tether-benchmarks
# --smoke, every design again). aarch64, armv7: the board binary under qemu-user (timing
# there means nothing; and qemu-user cannot run its child processes here, so the peer runs
# on its own loop).
# Usage: scripts/test/bench-smoke.sh ARCH   (make bench-binary ARCH=ARCH built it)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/build/arch.sh
. scripts/build/arch.sh
arch=${1:?usage: scripts/test/bench-smoke.sh ARCH}
tether_arch "$arch"
build=${BUILD_DIR:-build}
bench=$build/bench/$arch/tether-bench
out=$build/bench/smoke-$arch.txt
mkdir -p "$build/bench"
expect() { # PATTERN COUNT WHAT
  [ "$(grep -cE "$1" "$out")" = "$2" ] || { cat "$out"; echo "bench-smoke: $3 did not report" >&2; exit 1; }
  # A row whose sessions did not all join measured nothing: tether-bench marks it
  # "(K of N connected)", and it must not pass as a measured row.
  if grep -E "$1" "$out" | grep ' connected)' > /dev/null; then
    cat "$out"
    echo "bench-smoke: $3: a row's sessions did not all connect" >&2
    exit 1
  fi
}
if [ "$arch" != x86_64 ]; then
  "${QEMU[@]}" "$bench" --vectors
  "${QEMU[@]}" "$bench" --quick --inline-peer --sessions 1 --patterns steady \
    --designs tether,previous,naive > "$out"
  expect ' (tether|previous|naive) ' 3 "$arch"
  echo "bench-smoke: tether-bench for $arch under qemu: ran and reported, every session connected"
  exit 0
fi
"$bench" --vectors
"$bench" --quick --sessions 1,20 --loads idle --designs tether,previous,naive > "$out"
expect ' (tether|previous|naive) ' 12 tether-bench
echo "bench-smoke: tether-bench ($arch, own peer): 12 scenario rows (3 designs), every session connected"
swift build -q --product tether-benchmarks
"$(swift build --show-bin-path)/tether-benchmarks" --smoke --bench "$bench" \
  --edge "$build/install/bin/tether-edge" --out "$build/bench/smoke" > "$build/bench/smoke-edge.txt" ||
  { cat "$build/bench/smoke-edge.txt"; exit 1; }
tail -1 "$build/bench/smoke-edge.txt"
