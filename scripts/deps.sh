#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that the tools `make test` needs are here; installs the missing ones with apt when
# run as root, otherwise prints the one command to run and fails. Idempotent and quiet when
# all is well. Every failure ends in one line: "deps: missing PACKAGES ...; run: COMMAND".
# scripts/test/test-deps.sh checks these paths with a fake apt-get.
set -euo pipefail

# `deps.sh bench`: what make bench needs beyond make test (matplotlib, for the plot).
if [ "${1:-}" = bench ]; then
  python3 -c 'import matplotlib' 2>/dev/null && exit 0
  echo "deps: installing matplotlib (PyPI) for the benchmark plot"
  python3 -m pip install -q matplotlib || {
    echo "deps: could not install matplotlib; run: python3 -m pip install matplotlib" >&2
    exit 1
  }
  exit 0
fi

# check: what is missing, as Debian packages (missing_pkgs for this machine, foreign_pkgs
# for the ARM builds).
check() {
  missing_pkgs=()
  foreign_pkgs=()
  lean_pkgs=()
  need gcc gcc
  need g++ g++
  need make make
  need valgrind valgrind
  need pkg-config pkg-config
  need ip iproute2
  need readelf binutils
  [ -f /usr/include/ev.h ] || missing_pkgs+=(libev-dev)
  # The fleet's bus (tether-edge --fleet): the NATS C client (TetherFleet links it through
  # CNats), and the server its tests start on loopback.
  [ -f /usr/include/nats/nats.h ] || missing_pkgs+=(libnats-dev)
  need nats-server nats-server
  # The fleet's TLS test makes its server's certificate with openssl.
  need openssl openssl
  # Protocol v2's cryptography: the library links libsodium shared (as libev), the edge
  # links its static archive; libsodium-dev holds both.
  [ -f /usr/lib/x86_64-linux-gnu/libsodium.a ] && [ -e /usr/lib/x86_64-linux-gnu/libsodium.so ] ||
    missing_pkgs+=(libsodium-dev)
  # The CMake route and the Debian packages (make cmake-test, make deb, make deb-test).
  need cmake cmake
  need dpkg-deb dpkg
  need dpkg-shlibdeps dpkg-dev
  # Cross builds for ARM boards and their runs under qemu-user.
  need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
  need arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf
  need qemu-aarch64 qemu-user
  [ -e /usr/lib/aarch64-linux-gnu/libev.so ] || foreign_pkgs+=(libev-dev:arm64)
  [ -e /usr/lib/arm-linux-gnueabihf/libev.so ] || foreign_pkgs+=(libev-dev:armhf)
  [ -e /usr/lib/aarch64-linux-gnu/libsodium.so ] || foreign_pkgs+=(libsodium-dev:arm64)
  [ -e /usr/lib/arm-linux-gnueabihf/libsodium.so ] || foreign_pkgs+=(libsodium-dev:armhf)
  # The C tests on real ARM kernels (make test-vm): the emulators and cpio for the guest's
  # initramfs, without their recommends (a desktop's worth of packages; the guests need no
  # firmware, their network card is virtio-net-device). The guests' own packages are
  # downloaded by scripts/test/vm.sh, never installed here.
  command -v qemu-system-aarch64 >/dev/null 2>&1 || lean_pkgs+=(qemu-system-arm)
  command -v cpio >/dev/null 2>&1 || lean_pkgs+=(cpio)
  all_pkgs=("${missing_pkgs[@]}" "${foreign_pkgs[@]}" "${lean_pkgs[@]}")
}
missing_pkgs=()
need() { # need COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2")
}

if ! command -v swift >/dev/null 2>&1; then
  echo "deps: missing Swift 6.3; install the toolchain from https://swift.org/install and put its usr/bin on PATH" >&2
  exit 1
fi
# PyNaCl (PyPI, as the vectors were checked with; Debian's python3-nacl serves only
# Debian's own python3): the independent side of protocol v2's test vectors
# (scripts/test/v2-vectors.py, in make lint).
if ! python3 -c 'from nacl.utils import randombytes_deterministic' 2>/dev/null; then
  echo "deps: installing PyNaCl (PyPI) for protocol v2's test vectors"
  python3 -m pip install -q pynacl || {
    echo "deps: could not install PyNaCl; run: python3 -m pip install pynacl" >&2
    exit 1
  }
fi
check
if [ ${#all_pkgs[@]} -eq 0 ]; then
  exit 0
fi

# The command that installs what is missing, on one line. `;` after the update: an index
# that fails (a mirror being re-synced) must not stop the install.
install_command() { # install_command SUDO
  local s=$1 line="" regular=("${missing_pkgs[@]}" "${foreign_pkgs[@]}")
  [ ${#foreign_pkgs[@]} -gt 0 ] &&
    line="${s}dpkg --add-architecture arm64; ${s}dpkg --add-architecture armhf; "
  line+="${s}apt-get update"
  [ ${#regular[@]} -gt 0 ] && line+="; ${s}apt-get install -y ${regular[*]}"
  [ ${#lean_pkgs[@]} -gt 0 ] && line+="; ${s}apt-get install -y --no-install-recommends ${lean_pkgs[*]}"
  echo "$line"
}
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${all_pkgs[*]}; run: $(install_command 'sudo ')" >&2
  exit 1
fi

wanted=("${all_pkgs[@]}")
run=$(install_command '')
echo "deps: installing ${wanted[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt (unattended upgrades, a second checkout's deps) may hold the lock a while.
apt=(apt-get -o DPkg::Lock::Timeout=300)
if [ ${#foreign_pkgs[@]} -gt 0 ]; then
  if ! { dpkg --add-architecture arm64 && dpkg --add-architecture armhf; }; then
    echo "deps: missing ${wanted[*]} (dpkg --add-architecture failed); run: $run" >&2
    exit 1
  fi
fi
# A mirror being re-synced makes `apt-get update` fail for one index while every package
# still installs: retry it, then go on with the indexes there are; only a failed install
# is a failure.
for try in 1 2 3; do
  "${apt[@]}" update -qq && break
  echo "deps: apt-get update failed (try $try of 3); going on with the indexes there are" >&2
  [ "$try" -lt 3 ] && sleep $((try * 2))
done
regular=("${missing_pkgs[@]}" "${foreign_pkgs[@]}")
if [ ${#regular[@]} -gt 0 ] && ! "${apt[@]}" install -y -qq "${regular[@]}" >/dev/null; then
  echo "deps: missing ${wanted[*]} (apt-get install failed); run: $run" >&2
  exit 1
fi
if [ ${#lean_pkgs[@]} -gt 0 ] &&
  ! "${apt[@]}" install -y -qq --no-install-recommends "${lean_pkgs[@]}" >/dev/null; then
  echo "deps: missing ${wanted[*]} (apt-get install failed); run: $run" >&2
  exit 1
fi
check
if [ ${#all_pkgs[@]} -gt 0 ]; then
  echo "deps: missing ${all_pkgs[*]} after apt-get install; run: $(install_command '')" >&2
  exit 1
fi
