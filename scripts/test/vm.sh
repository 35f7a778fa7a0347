#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C tests on a real ARM kernel (issue 28): Debian's own kernel for the board's
# architecture, booted by qemu-system from an initramfs that holds the tests, busybox,
# iproute2's `ip` and dash (as /bin/sh, so no shell runs busybox's own `ip`), the kernel's
# network modules and the libraries they all need. Nothing is installed on the host for
# the guest: its packages are downloaded (`apt-get download`, the kernel resolved from
# Debian's meta-package, since its ABI number changes with each security update) and
# unpacked under build/vm/ARCH.
#
#   scripts/test/vm.sh ARCH [NAME...]  every C test (or those named: alloc, test_engine),
#                                      in full (nothing compiled out, nothing skipped,
#                                      TETHER_TEST_NO_TIMING unset), in one boot
#   VM_BOOTS=N scripts/test/vm.sh ARCH  the same N times in a row, built once: every boot
#                                      must pass (the issue's 10 of 10)
#   scripts/test/vm.sh ARCH --harness  the harness's own check: guests that fail a test,
#                                      lose a marker, or run out of time must each fail
#
# qemu exits 0 after the guest's `poweroff -f` whatever its tests did: the guest prints
# "tether-vm: rc=N NAME" after each test and "tether-vm: rc=N all" last; the host strips
# `\r`, and fails on a non-zero code, a missing marker, or the time limit (VM_TIMEOUT
# seconds, 900 by default). The guest prints its kernel's release first.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/build/arch.sh
. scripts/test/vm-lib.sh
vm_init "${1:?usage: scripts/test/vm.sh ARCH [--harness | NAME...]}"
shift
mode=
[ "${1:-}" != --harness ] || mode=--harness
names=("$@")

# run_tests: every C test of scripts/test/c-tests.sh, built in full for the guest.
run_tests() {
  rm -rf "$vm/guest/tests"
  mkdir -p "$vm/guest/tests"
  scripts/test/c-tests.sh vm-build "$arch" "$vm/guest/tests" > "$vm/guest/tests/list"
  if [ ${#names[@]} -gt 0 ]; then
    local name
    for name in "${names[@]}"; do
      grep -qx "test_${name#test_}" "$vm/guest/tests/list" || fail "no test '$name'"
      echo "test_${name#test_}"
    done > "$vm/guest/tests/list.named"
    mv "$vm/guest/tests/list.named" "$vm/guest/tests/list"
  fi
  check_libraries
  local boots=${VM_BOOTS:-1} round
  for ((round = 1; round <= boots; round++)); do
    local started=$SECONDS status=0
    boot tests || status=$?
    [ "$status" -ne 124 ] || fail "no power off within ${VM_TIMEOUT:-900} s (console: $vm/tests.console)"
    [ "$boots" -eq 1 ] || cp "$vm/tests.console" "$vm/tests.$round.console"
    verdict tests || fail "boot $round of $boots failed (console: $vm/tests.console)"
    echo "vm ($arch): $(wc -l < "$vm/guest/tests/list") C tests passed on a real $arch kernel" \
      "in $((SECONDS - started)) s (boot included)${VM_BOOTS:+, boot $round of $boots}"
  done
}

# harness: guests whose tests fail in each way the harness must catch.
harness() {
  rm -rf "$vm/guest/tests"
  mkdir -p "$vm/guest/tests"
  local source=$vm/harness.c
  cat > "$source" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <unistd.h>
int main(int argc, char **argv) {
  const char *name = strrchr(argv[0], '_') + 1;
  (void)argc;
  if (strcmp(name, "fails") == 0) { puts("harness: failing on purpose"); return 3; }
  if (strcmp(name, "poweroff") == 0) { sync(); reboot(RB_POWER_OFF); }
  if (strcmp(name, "hangs") == 0) { for (;;) pause(); }
  puts("harness: 1 passed, 0 failed");
  return 0;
}
C
  local kind
  for kind in passes fails poweroff hangs; do
    "${CROSS}gcc" -std=c99 -D_DEFAULT_SOURCE -O1 "$source" -o "$vm/guest/tests/test_$kind"
  done
  check_libraries
  local case expected status
  for case in "passes fails:exited with 3" "passes poweroff:test_poweroff: no marker" \
    "passes hangs:time limit"; do
    expected=${case#*:}
    tr ' ' '\n' <<< "test_${case%%:*}" | sed '2,$s/^/test_/' > "$vm/guest/tests/list"
    status=0
    VM_TIMEOUT=$([ "$expected" = "time limit" ] && echo 20 || echo 300) boot harness || status=$?
    if [ "$expected" = "time limit" ]; then
      [ "$status" -eq 124 ] || fail "harness: a guest that never powers off was not stopped"
    elif verdict harness > /dev/null 2> "$vm/harness.err"; then
      fail "harness: a guest whose test_${case%%:*} went wrong passed"
    elif ! grep -q "FAIL: .*$expected" "$vm/harness.err"; then
      fail "harness: expected '$expected', got: $(grep FAIL "$vm/harness.err")"
    fi
    echo "vm-harness ($arch): a guest running ${case%%:*} fails: $expected"
  done
}

fetch
unpack
if [ "$mode" = --harness ]; then harness; else run_tests; fi
