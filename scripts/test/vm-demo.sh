#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# examples/device on a real ARM kernel against this machine's tether-edge (issue 28): the
# channel timeline of `make demo` (tether-demo, docs/BEHAVIOUR.md §1.4), device A in a
# virtual machine (scripts/test/vm-lib.sh), device B, the edge and the relay that cuts A's
# link here. The guest reaches this machine's loopback as 10.0.2.2 through qemu's user-mode
# network and routes nothing else (10.0.2.15/32, one route to 10.0.2.2/32, no default, no
# IPv6); the edge's and relay's ports are known only once bound, so tether-demo boots the
# guest itself, one boot per run, its settings on the kernel command line (the token, 337
# characters, fits: 1024 on arm, 2048 on arm64). scripts/test/vm-demo-guest.c runs the
# device in the guest and answers for it (GuestDevice in Sources/TetherLab).
#
#   scripts/test/vm-demo.sh ARCH              builds the guest, runs tether-demo --vm
#   scripts/test/vm-demo.sh ARCH --boot ARG...
#       (tether-demo runs it) boots the guest, ARGs on its kernel command line, its console
#       on stdout as it comes; then the verdict: the network and the device's markers 0
#
# SCALE (0.2) scales every threshold, as `tether-demo --scale`; VM_TIMEOUT (300) bounds
# the boot. Needs `make examples-ARCH examples-x86_64` and tether-demo built (make
# test-vm-demo-ARCH does both).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/build/arch.sh
. scripts/test/vm-lib.sh
vm_init "${1:?usage: scripts/test/vm-demo.sh ARCH [--boot KERNEL-ARG...]}"
shift
export VM_TIMEOUT=${VM_TIMEOUT:-300}

if [ "${1:-}" = --boot ]; then
  shift
  # tether-demo stops this script with SIGTERM when it gives up: every process of the boot
  # goes too, so no guest outlives the run. They run in a session of their own (timeout
  # puts qemu in a process group of its own, but not in another session).
  setsid "$0" "$arch" --boot-session "$@" &
  booting=$!
  trap 'pkill -TERM -s "$booting" || true' TERM INT
  status=0
  wait "$booting" || status=$?
  exit "$status"
elif [ "${1:-}" = --boot-session ]; then
  shift
  status=0
  VM_LIVE=1 boot demo "$@" || status=$?
  [ "$status" -ne 124 ] || fail "no power off within $VM_TIMEOUT s (console: $vm/demo.console)"
  [ "$status" -eq 0 ] || exit "$status"
  verdict demo > /dev/null
  exit 0
fi

stage=$build/install-$arch
[ -x "$build/examples/$arch/device" ] && [ -f "$stage/lib/libtether.so.0" ] &&
  [ -x "$build/install/bin/tether-edge" ] && [ -x "$build/examples/x86_64/device" ] ||
  fail "build the examples first: make examples-$arch examples-x86_64"
demo=$(swift build --show-bin-path)/tether-demo
[ -x "$demo" ] || fail "build tether-demo first: swift build --product tether-demo"
fetch
unpack
rm -rf "$vm/guest/tests"
mkdir -p "$vm/guest/tests"
# The example as `make examples-ARCH` built it; its library where the libtether0 package
# puts it (the example's run path names this machine's staging directory).
cp "$build/examples/$arch/device" "$vm/guest/tests/device"
cp "$stage/lib/libtether.so.0" "$vm/guest/usr/lib/$MULTIARCH/"
"${CROSS}gcc" -std=c99 -Wall -Wextra -Wpedantic -Werror -O2 scripts/test/vm-demo-guest.c \
  -o "$vm/guest/tests/demo"
cat > "$vm/guest/tests/network" <<'NETWORK'
#!/bin/sh
# The guest's one way out: 10.0.2.2, this machine's loopback through qemu's user network.
set -e
echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6
ip addr add 10.0.2.15/32 dev eth0
ip link set eth0 up
ip route add 10.0.2.2/32 dev eth0
# Every route but loopback's, on one line.
routes=$(echo $(ip route show; ip -6 route show | grep -v ' dev lo ' || true))
if [ "$routes" != "10.0.2.2 dev eth0 scope link" ]; then
  echo "network: routes other than 10.0.2.2/32 dev eth0: $routes"
  exit 1
fi
echo "network: eth0 10.0.2.15/32, one route: $routes"
NETWORK
chmod +x "$vm/guest/tests/network"
printf 'network\ndemo\n' > "$vm/guest/tests/list"
check_libraries

started=$SECONDS
"$demo" --edge "$build/install/bin/tether-edge" --device "$build/examples/x86_64/device" \
  --vm "$PWD/scripts/test/vm-demo.sh $arch --boot" --scale "${SCALE:-0.2}" ||
  fail "the device's timeline in the guest failed (console: $vm/demo.console)"
echo "vm-demo ($arch): examples/device on a real $arch kernel kept the channel timeline" \
  "against this machine's tether-edge, in $((SECONDS - started)) s (boot included)"
