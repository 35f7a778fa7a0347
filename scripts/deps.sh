#!/usr/bin/env bash
# Checks that the tools `make test` needs are here; installs the missing ones with apt when
# run as root, otherwise prints the one command to run. Idempotent and quiet when all is well.
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

missing_pkgs=()
need() { # need COMMAND DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2")
}

if ! command -v swift >/dev/null 2>&1; then
  echo "deps: Swift 6.3 is not on PATH. Install the Swift toolchain (swift.org) first." >&2
  exit 1
fi
need gcc gcc
need g++ g++
need make make
need valgrind valgrind
need pkg-config pkg-config
need ip iproute2
[ -f /usr/include/ev.h ] || missing_pkgs+=(libev-dev)
# Cross builds for ARM boards and their runs under qemu-user.
need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
need arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf
need qemu-aarch64 qemu-user
foreign_pkgs=()
[ -e /usr/lib/aarch64-linux-gnu/libev.so ] || foreign_pkgs+=(libev-dev:arm64)
[ -e /usr/lib/arm-linux-gnueabihf/libev.so ] || foreign_pkgs+=(libev-dev:armhf)

all_pkgs=("${missing_pkgs[@]}" "${foreign_pkgs[@]}")
if [ ${#all_pkgs[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${all_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ ${#foreign_pkgs[@]} -gt 0 ]; then
    dpkg --add-architecture arm64
    dpkg --add-architecture armhf
  fi
  # A mirror being re-synced makes `apt-get update` fail for one index while every package
  # still installs: retry it, then go on; only a failed install is a failure.
  for try in 1 2 3; do
    apt-get update -qq && break
    echo "deps: apt-get update failed (try $try of 3); going on with the indexes there are" >&2
    sleep $((try * 2))
  done
  if ! apt-get install -y -qq "${all_pkgs[@]}" >/dev/null; then
    echo "deps: could not install ${all_pkgs[*]}; run: apt-get update && apt-get install -y ${all_pkgs[*]}" >&2
    exit 1
  fi
else
  echo "deps: missing ${all_pkgs[*]}; run:" >&2
  [ ${#foreign_pkgs[@]} -gt 0 ] && echo "  sudo dpkg --add-architecture arm64 && sudo dpkg --add-architecture armhf" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${all_pkgs[*]}" >&2
  exit 1
fi
