#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make test's loop: runs each make target named, one after the other, and prints each one's
# time and the CPU time it used (user and system, of every process it waited for). A part
# whose CPU is near twice its time kept both cores busy; one far below waited (for real
# time, or for one core). The first part that fails ends the run.
#   scripts/test/parts.sh PART...
set -euo pipefail
# cpu: sets CPU to the CPU seconds of this shell's finished children so far (bash's `times`,
# its second line). `times` must run in this shell, not in a command substitution's.
record=$(mktemp)
trap 'rm -f "$record"' EXIT
cpu() {
  times > "$record"
  CPU=$(sed -n 2p "$record" | awk '{
    total = 0
    for (i = 1; i <= 2; i++) { split($i, t, "m"); total += t[1] * 60 + t[2] }
    printf "%d", total }')
}
for part in "$@"; do
  start=$SECONDS
  cpu
  before=$CPU
  make --no-print-directory "$part" || {
    echo "test: $part FAILED after $((SECONDS - start)) s" >&2
    exit 1
  }
  cpu
  echo "test: $part passed in $((SECONDS - start)) s (CPU $((CPU - before)) s)"
done
echo "test: every part passed ($*)"
