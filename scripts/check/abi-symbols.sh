#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The functions Include/tether.h declares and the ones the library exports must be the same
# set: a declared function missing from the library would fail to link in a user's program;
# an exported one missing from the header would be API nobody documented.
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${1:?usage: abi-symbols.sh LIBRARY}
declared=$(grep -oE '\btether_[a-z0-9_]+\(' Include/tether.h | tr -d '(' | sort -u)
exported=$(${NM:-nm} -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^tether_/ { print $3 }' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "abi-symbols: header and $lib differ:" >&2
  diff <(echo "$declared") <(echo "$exported") >&2 || true
  exit 1
fi
echo "abi-symbols: the $(echo "$declared" | wc -l) functions of tether.h are exactly those $lib exports"

# What the library needs from elsewhere: libc's, libev's and libsodium's symbols only (no
# Swift runtime). That no test hook of libsodium's is among them: scripts/check/test-hooks.sh.
foreign=$(${NM:-nm} -D --undefined-only "$lib" | awk '{ print $NF }' |
  grep -vE '@GLIBC_|^ev_|^(sodium|crypto|randombytes)_|^(ceil|_ITM_.*|__gmon_start__|__cxa_finalize)$' ||
  true)
if [ -n "$foreign" ]; then
  echo "abi-symbols: $lib needs symbols from outside libc, libev and libsodium:" >&2
  echo "$foreign" >&2
  exit 1
fi
needed=$(${READELF:-readelf} -d "$lib" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' | sort | paste -sd' ')
echo "abi-symbols: $lib needs nothing but libc, libev and libsodium ($needed)"
