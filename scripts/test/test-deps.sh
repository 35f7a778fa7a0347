#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deps-test: scripts/deps.sh's paths, without network and without touching the
# machine. deps.sh runs with a PATH of stubs only: every tool it checks for is there but
# cmake, and `id`, `dpkg`, `apt-get` and `sleep` are fakes that log their calls; apt-get's
# `update` fails as many times as asked (a mirror being re-synced) and its `install`
# succeeds (and puts cmake on the PATH), fails, or succeeds without installing it.
# Usage: scripts/test/test-deps.sh [DEPS_SCRIPT] (default scripts/deps.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=$(readlink -f "${1:-scripts/deps.sh}")
work=$(pwd)/${BUILD_DIR:-build}/deps-test
fail() { echo "deps-test: $*" >&2; exit 1; }
cases=0

setup() { # a fresh PATH of stubs
  rm -rf "$work"
  mkdir -p "$work/bin"
  ln -s "$(command -v bash)" "$work/bin/bash"
  for tool in swift python3 gcc g++ make valgrind pkg-config ip readelf dpkg-deb dpkg-shlibdeps \
    aarch64-linux-gnu-gcc arm-linux-gnueabihf-gcc qemu-aarch64 qemu-system-aarch64 cpio nats-server \
    openssl; do
    printf '#!%s\nexit 0\n' "$(command -v bash)" > "$work/bin/$tool"
  done
  cat > "$work/bin/id" <<STUB
#!$(command -v bash)
[ "\$1" = -u ] && echo "\$FAKE_UID"
STUB
  cat > "$work/bin/sleep" <<STUB
#!$(command -v bash)
echo "sleep \$*" >> "$work/calls"
STUB
  cat > "$work/bin/dpkg" <<STUB
#!$(command -v bash)
echo "dpkg \$*" >> "$work/calls"
STUB
  cat > "$work/bin/apt-get" <<STUB
#!$(command -v bash)
echo "apt-get \$*" >> "$work/calls"
case " \$* " in
  *" update "*)
    n=\$($(command -v grep) -c ' update' "$work/calls")
    if [ "\$n" -le "\$FAKE_UPDATE_FAILURES" ]; then
      echo "E: Failed to fetch .../binary-arm64/Packages.xz  File has unexpected size (39584 != 39592). Mirror sync in progress?" >&2
      exit 100
    fi ;;
  *" install "*)
    case "\$FAKE_INSTALL" in
      ok) printf '#!%s\nexit 0\n' "$(command -v bash)" > "$work/bin/cmake"; $(command -v chmod) +x "$work/bin/cmake" ;;
      noop) ;;
      fail) echo "E: Unable to locate package cmake" >&2; exit 100 ;;
    esac ;;
esac
exit 0
STUB
  chmod +x "$work/bin"/*
  : > "$work/calls"
}

run() { # UID UPDATE_FAILURES INSTALL: runs deps.sh; sets rc, out, err
  rc=0
  FAKE_UID=$1 FAKE_UPDATE_FAILURES=$2 FAKE_INSTALL=$3 PATH=$work/bin \
    "$work/bin/bash" "$deps" > "$work/out" 2> "$work/err" || rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
  cases=$((cases + 1))
}
count() { grep -c -- "$1" "$2" || true; }
# expect_one_missing_line CASE: deps.sh's stderr holds exactly one "deps: missing" line, its
# last, naming cmake and the command to run.
expect_one_missing_line() {
  local last
  [ "$(count '^deps: missing' "$work/err")" = 1 ] || { echo "$err"; fail "$1: not one 'deps: missing' line"; }
  last=$(grep '^deps: ' "$work/err" | tail -1)
  [[ "$last" =~ ^deps:\ missing\ .*cmake.*\;\ run:\ .*apt-get\ install\ -y\ .*cmake ]] ||
    { echo "$err"; fail "$1: the last line does not name cmake and the command: $last"; }
  echo "$last"
}

# 1. Nothing missing: quiet, exit 0, apt-get never asked.
setup
printf '#!%s\nexit 0\n' "$(command -v bash)" > "$work/bin/cmake"
chmod +x "$work/bin/cmake"
run 1000 0 ok
if grep -q '^deps: missing' <(printf '%s\n' "$err"); then
  # The machine itself lacks a library deps.sh checks by file (libev-dev): not this test's
  # to fake; say so rather than count it.
  fail "this machine lacks $(echo "$err" | sed -nE 's/^deps: missing (.*);.*/\1/p') (run make deps first)"
fi
[ "$rc" = 0 ] && [ -z "$out$err" ] && [ ! -s "$work/calls" ] ||
  fail "all present: rc $rc, '$out$err', calls: $(cat "$work/calls")"

# 2. Not root: one line with the sudo command, exit non-zero, apt-get never asked.
setup
run 1000 0 ok
[ "$rc" != 0 ] || fail "not root: exit 0"
[ "$(echo "$err" | wc -l)" = 1 ] || { echo "$err"; fail "not root: more than one line"; }
line=$(expect_one_missing_line "not root")
[[ "$line" == *"run: "*"sudo apt-get update; sudo apt-get install -y "* ]] || fail "not root: no sudo command: $line"
[ ! -s "$work/calls" ] || fail "not root: called $(cat "$work/calls")"
echo "deps-test: not root: exit $rc, one line: $line"

# 3. Root, every apt-get update fails (mirror sync), the install works: exit 0.
setup
run 0 3 ok
[ "$rc" = 0 ] || { echo "$err"; fail "root, update failing: exit $rc although the install worked"; }
[ "$(count ' update' "$work/calls")" = 3 ] ||
  fail "root, update failing: $(count ' update' "$work/calls") updates, not 3"
grep -q '^apt-get .*install -y .*cmake' "$work/calls" || fail "root, update failing: no install of cmake"
[ "$(count '^deps: missing' "$work/err")" = 0 ] || fail "root, update failing: reported missing"
[ "$(count '^sleep' "$work/calls")" = 2 ] ||
  fail "root, update failing: $(count '^sleep' "$work/calls") pauses, not 2 (none after the last try)"
echo "deps-test: root, apt-get update failing 3 times: retried, installed cmake anyway, exit 0"

# 4. Root, update fails once then works, install fails: one line, exit non-zero.
setup
run 0 1 fail
[ "$rc" != 0 ] || fail "root, install failing: exit 0"
[ "$(count ' update' "$work/calls")" = 2 ] ||
  fail "root, install failing: $(count ' update' "$work/calls") updates, not 2"
line=$(expect_one_missing_line "root, install failing")
[[ "$line" == *"(apt-get install failed); run: apt-get update; apt-get install -y "* ]] ||
  fail "root, install failing: $line"
echo "deps-test: root, apt-get install failing: exit $rc, one line: $line"

# 5. Root, the install says it worked but cmake is still not there: one line, non-zero.
setup
run 0 0 noop
[ "$rc" != 0 ] || fail "root, nothing installed: exit 0"
line=$(expect_one_missing_line "root, nothing installed")
[[ "$line" == "deps: missing cmake after apt-get install; run: "* ]] || fail "root, nothing installed: $line"
echo "deps-test: root, install without effect: exit $rc, one line: $line"

# 6. No Swift: one line, non-zero.
setup
rm "$work/bin/swift"
run 0 0 ok
[ "$rc" != 0 ] && [ "$(echo "$err" | wc -l)" = 1 ] && [[ "$err" == "deps: missing Swift"* ]] ||
  fail "no swift: rc $rc, '$err'"
[ ! -s "$work/calls" ] || fail "no swift: called $(cat "$work/calls")"

# 7. Root, the VM tools missing too: they are installed without their recommends (a
# desktop's worth of packages), in an install of their own after the others.
setup
rm "$work/bin/qemu-system-aarch64" "$work/bin/cpio"
run 0 0 ok
grep -q '^apt-get .*install -y -qq cmake' "$work/calls" || fail "vm tools: cmake not installed on its own"
grep -q '^apt-get .*install -y -qq --no-install-recommends qemu-system-arm cpio' "$work/calls" ||
  fail "vm tools: not installed without recommends: $(cat "$work/calls")"
echo "deps-test: root, the VM tools missing: installed without their recommends"

echo "deps-test: $cases cases of scripts/deps.sh passed"
rm -rf "$work"
