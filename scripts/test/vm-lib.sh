#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What every virtual machine of Tether's tests shares (sourced by scripts/test/vm.sh and the
# scripts that boot a guest of their own): Debian's own kernel for a board's architecture,
# booted by qemu-system from an initramfs that holds busybox, iproute2's `ip`, dash (as
# /bin/sh, so no shell runs busybox's own `ip`), the kernel's network modules and the
# libraries they all need (libc, libev, libsodium). Nothing is installed on the host for the
# guest: its packages are downloaded (`apt-get download`, the kernel resolved from Debian's
# meta-package, since its ABI number changes with each security update) and unpacked under
# build/vm/ARCH (build/vm/ARCH-FLAVOUR for another kernel flavour).
#
#   . scripts/test/vm-lib.sh; vm_init ARCH [FLAVOUR]   FLAVOUR: rt (aarch64's PREEMPT_RT
#                                                      kernel, linux-image-rt-arm64)
#   fetch; unpack                  the guest's tree in $vm/guest (put programs in
#                                  $vm/guest/tests, their names in $vm/guest/tests/list;
#                                  those named in $vm/guest/tests/whole print all of their
#                                  output on the console, not only its last line)
#   check_libraries                fails if a program there links a library the guest lacks
#   boot NAME [ARG...]             packs and boots; ARGs go on the kernel command line (the
#                                  guest reads them in /proc/cmdline); the console, \r
#                                  stripped, in $vm/NAME.console (and on stdout as it
#                                  comes with VM_LIVE=1); 124 on the time limit
#   verdict NAME                   each test's marker; fails on a code, a missing marker
#
# The guest (/guest.sh) prints "tether-vm: kernel RELEASE ARCH, N CPUs" first, runs each
# program of /tests/list from /tmp, prints its last line (all of its output when it failed,
# or when /tests/whole names it)
# and "tether-vm: rc=N NAME", then "tether-vm: rc=N all", and powers off. qemu exits 0 after
# the guest's `poweroff -f` whatever its tests did: the markers are the verdict. Its
# network: user-mode, the host's loopback reachable as 10.0.2.2.

# vm_init ARCH [FLAVOUR]: sets arch, vm (the directory), meta, loader, qemu.
vm_init() {
  arch=$1
  local flavour=${2:-}
  tether_arch "$arch"
  build=${BUILD_DIR:-build}
  vm=$build/vm/$arch${flavour:+-$flavour}
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
  if [ -n "$flavour" ]; then
    [ "$arch/$flavour" = aarch64/rt ] || { echo "vm: no $flavour kernel for $arch (aarch64 rt)" >&2; exit 2; }
    meta=linux-image-rt-arm64
  fi
}
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
  # Every candidate version from one apt-cache call: one call a package took a second or
  # more each, most of a boot's minute.
  local -A candidate=()
  while read -r package version; do
    candidate[$package]=$version
  done < <(apt-cache policy "${packages[@]}" 2> /dev/null |
    awk '/^[^ ].*:$/ {name = substr($0, 1, length($0) - 1)} /^  Candidate:/ {print name, $2}')
  : > "$vm/debs/wanted"
  for package in "${packages[@]}"; do
    name=${package%:*}
    version=${candidate[$package]:-}
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
  if [ "$status" -eq 0 ] && ! grep -qx "$test" /tests/whole 2> /dev/null; then
    grep '^pace: ' "/tmp/$test.out" || true
    tail -n 1 "/tmp/$test.out"
  else
    cat "/tmp/$test.out"
  fi
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
  for program in "$vm/guest/bin/ip" "$vm/guest/bin/dash" "$vm/guest/tests/"* \
    "$vm/guest/lib/$MULTIARCH/"*.so* "$vm/guest/usr/lib/$MULTIARCH/"*.so*; do
    [ -f "$program" ] && [ ! -L "$program" ] || continue
    # ELF programs only (tests/ may hold scripts and the lists).
    [ "$(head -c 4 "$program" | tail -c 3)" = ELF ] || continue
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

# boot NAME [ARG...]: packs the guest with its tests (their names in tests/list) and boots
# it, ARGs on the kernel command line; the console (\r stripped) in $vm/NAME.console, and
# with VM_LIVE=1 on stdout too, line by line as it comes (for a host program that acts on
# what the guest prints). Returns 124 on the time limit.
boot() {
  local name=$1 limit=${VM_TIMEOUT:-900} status=0
  shift
  (cd "$vm/guest" && find . | cpio -o -H newc --quiet | gzip -1) > "$vm/$name.cpio.gz"
  local strip=(tr -d '\r') out=/dev/null
  [ "${VM_LIVE:-}" != 1 ] || strip=(stdbuf -oL tr -d '\r') out=/dev/stdout
  timeout "$limit" "${qemu[@]}" -smp 2 -m 1024 -nographic -no-reboot \
    -kernel "$vm/vmlinuz" -initrd "$vm/$name.cpio.gz" \
    -append "console=ttyAMA0 quiet loglevel=3 rdinit=/init${*:+ $*}" \
    -netdev user,id=n0 -device virtio-net-device,netdev=n0 < /dev/null 2>&1 |
    "${strip[@]}" | tee "$vm/$name.console" > "$out" || status=$?
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
  grep -m1 '^pace: ' "$console" || true
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

