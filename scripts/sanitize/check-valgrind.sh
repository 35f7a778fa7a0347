#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C side of `make check`: the C ABI tests (test_engine, test_reentry, test_rtm: the login
# profile, test_logout_refused, test_cycles: 1,000 create/join/leave/destroy cycles, then engines on two loops in
# two threads) under valgrind memcheck, then test_cycles' two threads under helgrind, then
# examples/device.c and examples/messaging.c under memcheck against tether-edge
# (scripts/test/check-example.sh). Built with the strict flags against
# the Embedded library C hosts link.
#
# Memcheck fails on any error and on any definitely or indirectly lost byte
# (--errors-for-leak-kinds=definite,indirect). "Possibly lost" fails too, but for
# glibc's vector of a cached thread stack (scripts/sanitize/suppressions/memcheck.supp says why). "Still reachable" (memory a live pointer holds at exit: what glibc
# and libev keep for the process, and the library's one table of loops, a 48-byte array
# buffer a static keeps after its last loop is gone) is printed, not failed: it does not
# grow with the number of engines or cycles, which test_cycles checks by running both 10
# and 1,000 cycles and comparing.
# Helgrind: any race or lock-order report fails, but for scripts/sanitize/suppressions/helgrind.supp
# (the Embedded Swift stdlib's once-initialisation, which helgrind cannot see through).
# Usage: scripts/sanitize/check-valgrind.sh LIB_DIR EDGE_BIN DEVICE_BIN [MESSAGING_BIN]
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${1:?usage: check-valgrind.sh LIB_DIR EDGE_BIN DEVICE_BIN}
edge=${2:?}
device=${3:?}
messaging=${4:-}
out=${BUILD_DIR:-build}/check
mkdir -p "$out"
for t in test_engine test_reentry test_cycles test_rtm test_logout_refused; do
  TETHER_LIB="-L$lib -ltether -Wl,-rpath,$(cd "$lib" && pwd)" scripts/test/c-tests.sh build "$t" "$out/$t"
done

# figure LOG KIND: the bytes valgrind's summary gives for KIND ("definitely lost", ...).
figure() {
  local v
  v=$(sed -nE "s/^==[0-9]+== +$2: ([0-9,]+) bytes.*/\1/p" "$1" | tr -d , | tail -1)
  echo "${v:-0}"
}
errors() { sed -nE 's/^==[0-9]+== ERROR SUMMARY: ([0-9,]+) errors.*/\1/p' "$1" | tr -d , | tail -1; }

# memcheck NAME ARGS...: runs $out/NAME ARGS under memcheck; prints its figures. Exit 99 is
# memcheck's (an error or a leak): a failure at once. Any other failure is the test's own:
# its timing bounds are scaled for a quiet machine, and valgrind on a loaded one can break
# them, so it runs once more (saying so) and must pass then. TETHER_TEST_NO_TIMING leaves
# test_engine's wake-up ratios to its native run.
export TETHER_TEST_NO_TIMING=1
memcheck() {
  local name=$1 log=$out/$1${2:+-$2}.memcheck status=0 start=$SECONDS
  shift
  valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 --log-file="$log" \
    --suppressions=scripts/sanitize/suppressions/memcheck.supp \
    "$out/$name" "$@" > "$log.out" 2>&1 || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 99 ]; then
    echo "check-valgrind: $name $*: the test failed under memcheck (exit $status), memcheck" \
      "itself clean; running it again. Its failures:" >&2
    grep FAIL "$log.out" | sed 's/^/  /' >&2 || true
    status=0
    valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
      --suppressions=scripts/sanitize/suppressions/memcheck.supp \
      --log-file="$log" "$out/$name" "$@" > "$log.out" 2>&1 || status=$?
  fi
  if [ "$status" -ne 0 ]; then
    echo "check-valgrind: FAIL: $name $* exited with $status under memcheck" >&2
    tail -5 "$log.out" >&2
    grep -vE '^==[0-9]+== *$' "$log" | tail -40 >&2
    exit 1
  fi
  echo "check-valgrind: $name${*:+ $*}: $(tail -1 "$log.out"); memcheck: $(errors "$log") errors," \
    "definitely lost $(figure "$log" "definitely lost") B, indirectly lost" \
    "$(figure "$log" "indirectly lost") B, possibly lost $(figure "$log" "possibly lost") B," \
    "still reachable $(figure "$log" "still reachable") B ($((SECONDS - start)) s)"
}

# make check-ci sets TETHER_C_TESTS_MEMCHECKED: CI's make test ran these four under memcheck
# already (make c-test, with the same leak kinds failing), so only what is this script's own
# runs again: the cycles' still-reachable comparison, helgrind and the examples.
if [ -n "${TETHER_C_TESTS_MEMCHECKED:-}" ]; then
  echo "check-valgrind: test_engine, test_reentry, test_rtm, test_logout_refused: memchecked by" \
    "make c-test (TETHER_C_TESTS_MEMCHECKED), not again"
else
  memcheck test_engine
  memcheck test_reentry
  memcheck test_rtm
  memcheck test_logout_refused
fi
memcheck test_cycles 10
memcheck test_cycles
grep -E '^(ok|FAIL):' "$out/test_cycles.memcheck.out" | sed 's/^/check-valgrind: test_cycles under memcheck: /'
few=$(figure "$out/test_cycles-10.memcheck" "still reachable")
many=$(figure "$out/test_cycles.memcheck" "still reachable")
if [ "$few" != "$many" ]; then
  echo "check-valgrind: FAIL: still reachable grows with cycles: $few B after 10, $many B after 1,000" >&2
  exit 1
fi
echo "check-valgrind: still reachable is the same after 10 and 1,000 cycles ($many B): nothing accumulates"

# Helgrind on the two-thread part (a few cycles first: helgrind is slow).
log=$out/test_cycles.helgrind
status=0
valgrind --tool=helgrind --suppressions=scripts/sanitize/suppressions/helgrind.supp --error-exitcode=99 \
  --log-file="$log" "$out/test_cycles" 20 > "$log.out" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  echo "check-valgrind: FAIL: test_cycles under helgrind exited with $status" >&2
  grep -vE '^==[0-9]+== *$' "$log" | tail -60 >&2
  exit 1
fi
suppressed=$(sed -nE 's/.*ERROR SUMMARY: .*\(suppressed: ([0-9]+) from.*/\1/p' "$log" | tail -1)
echo "check-valgrind: test_cycles 20 under helgrind: $(errors "$log") errors" \
  "($suppressed suppressed: glibc's own, and scripts/sanitize/suppressions/helgrind.supp)"

scripts/test/check-example.sh device "$edge" "$device" "$out"
if [ -n "$messaging" ]; then
  scripts/test/check-example.sh messaging "$edge" "$messaging" "$out"
fi
