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
arch=${1:?usage: scripts/test/vm.sh ARCH [--harness | NAME...]}
shift
mode=
[ "${1:-}" != --harness ] || mode=--harness
names=("$@")
tether_arch "$arch"
build=${BUILD_DIR:-build}
vm=$build/vm/$arch
case $arch in
  aarch64)
    meta=linux-image-arm64 loader=ld-linux-aarch64.so.1
    qemu=(qemu-system-aarch64 -M virt -cpu cortex-a53) ;;
  armv7)
    meta=linux-image-armmp loader=ld-linux-armhf.so.3
    qemu=(qemu-system-arm -M virt -cpu cortex-a15) ;;
  *)
    echo "vm: no virtual machine for $arch (aarch64, armv7)" >&2
    exit 2 ;;
esac
# The modules the guest's network needs, in the order they load (the .debs carry no
# modules.dep): virtio-mmio's network card, and veth for test_netns's namespaces.
modules=(net/core/failover drivers/net/net_failover drivers/virtio/virtio_mmio
  drivers/net/virtio_net drivers/net/veth)

fail() {
  echo "vm ($arch): $*" >&2
  exit 1
}

# fetch: the kernel's .deb and the guest's packages in $vm/debs, downloaded once per
# version. Sets kernel (the kernel package's name).
fetch() {
  kernel=$(apt-cache depends "$meta:$DEBARCH" 2>/dev/null |
    awk '/Depends: linux-image-/ {print $2; exit}')
  kernel=${kernel%:"$DEBARCH"}
  [ -n "$kernel" ] || fail "no kernel behind $meta:$DEBARCH (run apt-get update)"
  # What ip, dash and the tests link, from their dependencies: every package of the
  # architecture but the tools their maintainer scripts use (missing_libraries checks that
  # nothing linked is left out).
  local libs
  libs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances iproute2:"$DEBARCH" dash:"$DEBARCH" \
    libev4:"$DEBARCH" libsodium23:"$DEBARCH" 2>/dev/null |
    grep -E "^[a-z0-9.+-]+:$DEBARCH\$" |
    grep -vE "^(iproute2|dash|dpkg|tar|debianutils|install-info|cdebconf|libcap2-bin):" |
    sort -u)
  local packages=("$kernel:$DEBARCH" "busybox-static:$DEBARCH" "iproute2:$DEBARCH"
    "dash:$DEBARCH")
  mapfile -t -O ${#packages[@]} packages <<< "$libs"
  mkdir -p "$vm/debs"
  local wanted=() package name version
  : > "$vm/debs/wanted"
  for package in "${packages[@]}"; do
    name=${package%:*}
    version=$(apt-cache policy "$package" | awk '/Candidate:/ {print $2}')
    [ -n "$version" ] && [ "$version" != "(none)" ] || fail "no candidate for $package"
    local file="${name}_${version//:/%3a}_$DEBARCH.deb"
    echo "$file" >> "$vm/debs/wanted"
    [ -f "$vm/debs/$file" ] || wanted+=("$package=$version")
  done
  if [ ${#wanted[@]} -gt 0 ]; then
    echo "vm ($arch): downloading ${#wanted[@]} packages (${kernel} and the guest's tools)"
    (cd "$vm/debs" && apt-get -q -o APT::Sandbox::User=root download "${wanted[@]}" > /dev/null) ||
      fail "apt-get download failed for: ${wanted[*]}"
  fi
}

# unpack: the kernel's image and modules, and the guest's tree ($vm/guest) from the
# packages, busybox's applets and the init scripts.
unpack() {
  local kernel_deb
  kernel_deb=$(grep "^${kernel}_" "$vm/debs/wanted")
  # Unpacked again only when the packages changed (a new kernel, a security update).
  if ! cmp -s "$vm/debs/wanted" "$vm/unpacked" || [ ! -d "$vm/guest" ]; then
    rm -rf "$vm/kernel" "$vm/guest" "$vm/unpacked"
    mkdir -p "$vm/kernel" "$vm/guest"
    dpkg-deb -x "$vm/debs/$kernel_deb" "$vm/kernel"
    local file
    while read -r file; do
      [ "$file" = "$kernel_deb" ] || dpkg-deb -x "$vm/debs/$file" "$vm/guest"
    done < "$vm/debs/wanted"
    cp "$vm/debs/wanted" "$vm/unpacked"
  fi
  local release
  release=$(ls "$vm/kernel/lib/modules")
  mkdir -p "$vm/guest/modules"
  : > "$vm/guest/modules/order"
  local module
  for module in "${modules[@]}"; do
    cp "$vm/kernel/lib/modules/$release/kernel/$module.ko" "$vm/guest/modules/"
    basename "$module" >> "$vm/guest/modules/order"
  done
  cp "$vm/kernel/boot/vmlinuz-$release" "$vm/vmlinuz"
  # The guest's own shell is dash; busybox gives every other tool (its `ip` and `sh` are
  # never used: iproute2's and dash are there first, and --install leaves them).
  ln -sf dash "$vm/guest/bin/sh"
  [ -x "$vm/guest/bin/busybox" ] || fail "busybox-static had no /bin/busybox"
  [ -e "$vm/guest/lib/$loader" ] || [ -e "$vm/guest/lib/$MULTIARCH/$loader" ] ||
    fail "no $loader in the guest (libc6:$DEBARCH)"
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > "$vm/guest/etc/hosts"
  echo 'root:x:0:0:root:/root:/bin/sh' > "$vm/guest/etc/passwd"
  cat > "$vm/guest/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /root /usr/bin /usr/sbin /sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
exec /bin/dash /guest.sh
INIT
  cat > "$vm/guest/guest.sh" <<'GUEST'
# Runs in the guest, as PID 1 (dash): the kernel first, then each test of /tests/list with
# its marker, then the final marker, then power off.
echo "tether-vm: kernel $(uname -r) $(uname -m), $(nproc) CPUs"
while read -r module; do
  insmod "/modules/$module.ko" || echo "tether-vm: insmod $module failed"
done < /modules/order
failed=0
ip link set lo up || { echo "tether-vm: ip link set lo up failed"; failed=1; }
while read -r test; do
  echo "tether-vm: start $test"
  status=0
  (cd /tmp && "/tests/$test" > "/tmp/$test.out" 2>&1) || status=$?
  if [ "$status" -eq 0 ]; then tail -n 1 "/tmp/$test.out"; else cat "/tmp/$test.out"; fi
  echo "tether-vm: rc=$status $test"
  [ "$status" -eq 0 ] || failed=$((failed + 1))
done < /tests/list
echo "tether-vm: rc=$failed all"
poweroff -f
GUEST
  chmod +x "$vm/guest/init" "$vm/guest/guest.sh"
}

# missing_libraries: what the guest's programs and libraries link (ELF NEEDED) and the
# guest lacks.
missing_libraries() {
  local program needed
  for program in "$vm/guest/bin/ip" "$vm/guest/bin/dash" "$vm/guest/tests/"test_* \
    "$vm/guest/lib/$MULTIARCH/"*.so* "$vm/guest/usr/lib/$MULTIARCH/"*.so*; do
    [ -f "$program" ] && [ ! -L "$program" ] || continue
    for needed in $(readelf -d "$program" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}'); do
      [ -e "$vm/guest/lib/$MULTIARCH/$needed" ] || [ -e "$vm/guest/usr/lib/$MULTIARCH/$needed" ] ||
        echo "$(basename "$program"): $needed"
    done
  done
}

check_libraries() {
  local missing
  missing=$(missing_libraries | sort -u)
  [ -z "$missing" ] || fail "the guest lacks libraries:"$'\n'"$missing"
}

# boot NAME: packs the guest with its tests (their names in tests/list) and boots it;
# the console (\r stripped) in $vm/NAME.console. Fails on the time limit.
boot() {
  local name=$1 limit=${VM_TIMEOUT:-900} status=0
  (cd "$vm/guest" && find . | cpio -o -H newc --quiet | gzip -1) > "$vm/$name.cpio.gz"
  timeout "$limit" "${qemu[@]}" -smp 2 -m 1024 -nographic -no-reboot \
    -kernel "$vm/vmlinuz" -initrd "$vm/$name.cpio.gz" \
    -append "console=ttyAMA0 quiet loglevel=3 rdinit=/init" \
    -netdev user,id=n0 -device virtio-net-device,netdev=n0 < /dev/null 2>&1 |
    tr -d '\r' > "$vm/$name.console" || status=$?
  [ "$status" -ne 124 ] || return 124
  [ "$status" -eq 0 ] || fail "qemu exited with $status (console: $vm/$name.console)"
}

# verdict NAME: reads $vm/NAME.console against tests/list: prints each test's marker and
# last line; fails on a non-zero code, a missing marker or a missing kernel line.
verdict() {
  local console=$vm/$1.console test line problems=()
  line=$(grep -m1 '^tether-vm: kernel ' "$console" || true)
  [ -n "$line" ] || problems+=("no kernel line: the guest never ran its script")
  echo "${line#tether-vm: }"
  while read -r test; do
    line=$(grep -E "^tether-vm: rc=[0-9]+ $test\$" "$console" || true)
    if [ -z "$line" ]; then
      problems+=("$test: no marker")
    elif [ "$(wc -l <<< "$line")" -ne 1 ]; then
      problems+=("$test: more than one marker")
    else
      local code=${line#tether-vm: rc=}
      code=${code%% *}
      local last
      last=$(grep -B1 -E "^tether-vm: rc=[0-9]+ $test\$" "$console" | head -1)
      if [ "$code" = 0 ]; then
        echo "$last ($arch kernel)"
      else
        problems+=("$test: exited with $code")
      fi
    fi
  done < "$vm/guest/tests/list"
  grep -qx 'tether-vm: rc=0 all' "$console" || problems+=("no final marker rc=0")
  if [ ${#problems[@]} -gt 0 ]; then
    cat "$console" >&2
    local problem
    for problem in "${problems[@]}"; do echo "vm ($arch): FAIL: $problem" >&2; done
    return 1
  fi
}

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
  local started=$SECONDS status=0
  boot tests || status=$?
  [ "$status" -ne 124 ] || fail "no power off within ${VM_TIMEOUT:-900} s (console: $vm/tests.console)"
  verdict tests
  echo "vm ($arch): $(wc -l < "$vm/guest/tests/list") C tests passed on a real $arch kernel" \
    "in $((SECONDS - started)) s (boot included)"
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
