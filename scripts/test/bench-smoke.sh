#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# In make test: seconds-long runs of the benchmark that assert no timing, only that it runs
# and reports. First the libev designs' version 2 client against PyNaCl's vectors
# (tether-bench --vectors). x86_64: tether-bench's options alone (its own C test, under
# ASan and UBSan); the three designs and both baselines with tether-bench's own peer, the
# loop at SCHED_FIFO beside a busy process; a real-time priority refused (no CAP_SYS_NICE,
# RLIMIT_RTPRIO 0), which the rows must say; then the whole of make bench against the
# staged tether-edge in small (tether-benchmarks --smoke: every row kind and key, both
# priorities, two runs; and tether-edge's capacity under edge-load, briefly; the fleet's rows with nats-server and two edges). aarch64, armv7: the board binary under qemu-user (timing there
# means nothing; and qemu-user cannot run its child processes here, so the peer runs on
# its own loop).
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
  expect ' (tether|previous|naive) ' 6 "$arch"
  echo "bench-smoke: tether-bench for $arch under qemu: ran and reported, every session connected"
  exit 0
fi
# Options: lists bounded by their arrays, unknown items refused (tether-bench used to write
# eight entries into arrays of two and three).
cc=${CC:-gcc}
sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=all)
echo 'int main(void) { return 0; }' > "$build/bench/probe.c"
"$cc" "${sanitize[@]}" "$build/bench/probe.c" -o "$build/bench/probe" 2> /dev/null || sanitize=()
"$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -g "${sanitize[@]}" \
  Benchmarks/tether-bench/test/test_options.c Benchmarks/tether-bench/options.c -o "$build/bench/test_options"
"$build/bench/test_options"
"$bench" --sessions 1 --loads idle,busy,idle > /dev/null 2>&1 && { echo "bench-smoke: --loads of 3 taken" >&2; exit 1; }
"$bench" --vectors
"$bench" --quick --sessions 20 --loads busy --busy 1 --patterns steady --priority fifo:1 > "$out"
expect ' (tether|previous|naive|kernel|bare) ' 8 tether-bench
grep -Eq ' (fifo:1|default) +\|' "$out" || { cat "$out"; echo "bench-smoke: no policy in the rows" >&2; exit 1; }
echo "bench-smoke: tether-bench ($arch, own peer): 8 rows (kernel, bare, 3 designs x 2 windows), every session connected"
# A real-time policy refused: said, and the rows record the policy that ran (default).
drop=()
[ "$(id -u)" = 0 ] && drop=(setpriv --bounding-set -sys_nice)
rm -rf "$build/bench/refused" && mkdir -p "$build/bench/refused"
prlimit --rtprio=0 "${drop[@]}" "$bench" --quick --sessions 1 --loads idle --patterns steady \
  --designs tether --priority fifo:1 --out "$build/bench/refused" > "$out"
grep -q 'refused' "$out" && grep -q 'priority=fifo:1 policy=default ' "$build/bench/refused/results.txt" ||
  { cat "$out"; echo "bench-smoke: a refused SCHED_FIFO was not reported as such" >&2; exit 1; }
echo "bench-smoke: a refused SCHED_FIFO is said, and its rows record policy=default"
swift build -q --product tether-benchmarks
# README's real-time block is rewritten in a copy (make bench rewrites README.md itself).
mkdir -p "$build/bench/smoke" && cp README.md "$build/bench/smoke/README.md"
"$(swift build --show-bin-path)/tether-benchmarks" --smoke --bench "$bench" \
  --edge-load "$build/bench/$arch/edge-load" --readme "$build/bench/smoke/README.md" \
  --device "$build/examples/x86_64/device" \
  --edge "$build/install/bin/tether-edge" --out "$build/bench/smoke" > "$build/bench/smoke-edge.txt" ||
  { cat "$build/bench/smoke-edge.txt"; exit 1; }
grep "^smoke:" "$build/bench/smoke-edge.txt"
grep -q "^| default" "$build/bench/smoke/README.md" ||
  { echo "bench-smoke: README's real-time block was not written" >&2; exit 1; }
echo "bench-smoke: README's real-time block rewritten (in a copy)"
