#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make test's loop: runs each make target named, one after the other, and prints each one's
# time and the CPU time it used (user and system, of every process it waited for). A part
# whose CPU is near twice its time kept both cores busy; one far below waited (for real
# time, or for one core). The first part that fails ends the run.
#   scripts/test/parts.sh PART...
# A PART written A+B runs A and B at once: for parts that mostly wait beside parts whose
# checks do not depend on time (make bench in small reports, and asserts no timing, beside
# the fuzzers' builds). Each one's output is printed whole, in order, once it ended.
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
# shellcheck source=scripts/test/at-once.sh
. "$(dirname "$0")/at-once.sh"
# together A B...: runs the parts at once (at_once), each one's output and its line in order;
# fails if any did.
run_part() { make --no-print-directory "$1"; }
together() {
  group=$(IFS=+ && echo "$*")
  at_once run_part ended "$@"
}
ended() {
  if [ "$2" -eq 0 ]; then
    echo "test: $1 passed (run at once: $group)"
  else
    echo "test: $1 FAILED (run at once: $group)" >&2
  fi
}
for part in "$@"; do
  start=$SECONDS
  cpu
  before=$CPU
  if [[ $part == *+* ]]; then
    together ${part//+/ } || {
      echo "test: $part FAILED after $((SECONDS - start)) s" >&2
      exit 1
    }
  else
    run_part "$part" || {
      echo "test: $part FAILED after $((SECONDS - start)) s" >&2
      exit 1
    }
  fi
  cpu
  echo "test: $part passed in $((SECONDS - start)) s (CPU $((CPU - before)) s)"
done
echo "test: every part passed ($*)"
