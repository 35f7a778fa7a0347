#!/usr/bin/env bash
# Checks that the tools `make test` needs are here; installs the missing ones with apt when
# run as root, otherwise prints the one command to run. Idempotent and quiet when all is well.
set -euo pipefail

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

if [ ${#missing_pkgs[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${missing_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null
else
  echo "deps: missing ${missing_pkgs[*]}; run:" >&2
  echo "  sudo apt-get install -y ${missing_pkgs[*]}" >&2
  exit 1
fi
