#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Heap allocations per steady-state round of a joined channel session (one heartbeat sent,
# its ack and a presence digest received), counted by valgrind on the normal Swift build:
# the allocations of `tether-sim steady N` for two values of N, differenced.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "alloc-probe: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
# Statically, as tether-edge is staged (the Makefile's RELEASE_SWIFT_FLAGS): the release
# products stay shared with it, not rebuilt.
swift build -q -c release --product tether-sim --static-swift-stdlib
# A copy without debug info: valgrind's reader gave up on the DWARF 5 of a dependency
# (swift-crypto's C, when the edge server the simulator runs still linked it); stripped,
# no dependency's debug info can trip it.
bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
strip --strip-debug -o "$bin" "$(swift build -c release --show-bin-path)/tether-sim"
count() {
  valgrind --tool=memcheck --leak-check=no "$bin" steady "$1" 2>&1 |
    sed -nE 's/.*total heap usage: ([0-9,]+) allocs.*/\1/p' | tr -d ,
}
small=1000
large=11000
a=$(count $small)
b=$(count $large)
echo "alloc-probe: $small rounds: $a allocations; $large rounds: $b allocations"
echo "alloc-probe: $(( b - a )) allocations over $(( large - small )) extra rounds"
[ "$a" -eq "$b" ]
