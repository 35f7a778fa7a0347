#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a static C host links from libtether.a, per profile (scripts/build/build-lib.sh splits the
# archive into the members common, channel, rtm and messages). For ARCH it links three
# generated hosts against build/lib/ARCH/libtether.a: one that calls every function of the
# channel profile, one every function of the login profile (tether_rtm_*), each with the
# shared functions, and one that calls every function of the library (both profiles, the
# shared functions and tether_error_message), and prints, per host, the text it links from
# the library (the host's text minus that of the same program calling nothing) and the
# members it holds.
#
# With --check it fails, printing the numbers, when a one-profile host holds a symbol of
# the other profile's member or of the messages member, or when the text of both profiles
# together reaches TETHER_TEXT_LIMIT bytes: by default 81,920, the bound since the loop's
# shared socket (80 KiB, issue 26: the socket, its route table and sendmmsg cost 6,040
# bytes, docs/DESIGN.md "Size is a hard bound"; 72 KiB before, issue 25, whose cuts are in
# docs/PROTOCOL.md §12.16; the aim stays 64 KiB).
# The limit is the bound itself, not the figure of the day: the text may grow up to it. That
# text is the "text" column of `size` for the library's relocatable object (obj/libtether.o,
# which every member is cut from): the code and read-only data of every function of
# tether.h, both profiles, the shared functions and the messages member included; data and
# bss are not counted, nor is libsodium, which is linked shared (scripts/check/size-report.sh
# lists its text apart). Every run prints the margin (docs/BENCHMARKS.md, "Size").
#
# Usage: scripts/check/profile-hosts.sh ARCH [--check]   (needs `make lib ARCH=...` first)
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:?usage: profile-hosts.sh ARCH [--check]}
check=${2:-}
case "$arch" in
  x86_64) prefix="" ;;
  aarch64) prefix=aarch64-linux-gnu- ;;
  armv7) prefix=arm-linux-gnueabihf- ;;
  *) echo "profile-hosts: unknown ARCH '$arch'" >&2; exit 2 ;;
esac
build=${BUILD_DIR:-build}
lib=$build/lib/$arch
obj=$lib/obj
dir=$build/sizes/$arch
limit=${TETHER_TEXT_LIMIT:-81920}
mkdir -p "$dir"
[ -e "$lib/libtether.a" ] || { echo "profile-hosts: no $lib/libtether.a (make lib ARCH=$arch)" >&2; exit 1; }

# host NAME FUNCTION...: a program that takes the address of each function, linked
# statically against the archive (libc, libev and libsodium stay shared).
host() {
  local name=$1
  shift
  {
    echo '#include "tether.h"'
    echo 'typedef void (*any_function)(void);'
    echo 'static any_function const used[] = {'
    for function in "$@"; do echo "  (any_function)$function,"; done
    echo '  0};'
    echo 'int main(int argc, char **argv) {'
    echo '  (void)argv;'
    echo '  return used[argc % (int)(sizeof used / sizeof used[0])] != 0;'
    echo '}'
  } > "$dir/$name.c"
  "${prefix}gcc" -std=c99 -Wall -Wextra -Werror -Os -IInclude "$dir/$name.c" -o "$dir/$name" \
    "$lib/libtether.a" -lsodium -lev -lm
}
text() { "${prefix}size" "$1" | awk 'NR == 2 { print $1 }'; }
symbols() { "${prefix}nm" "$1" | awk 'NF == 3 { print $3 }' | sort -u; }
# The members whose symbols the program holds.
members_in() {
  local program=$1 found=() member
  for member in common channel rtm messages; do
    [ -e "$obj/$member.o" ] || continue
    if [ -n "$(comm -12 <(symbols "$obj/$member.o") <(symbols "$program"))" ]; then
      found+=("$member")
    fi
  done
  echo "${found[*]:-none}"
}

mapfile -t common < "$obj/roots-common.txt"
mapfile -t channel < "$obj/roots-channel.txt"
mapfile -t rtm < "$obj/roots-rtm.txt"
messages=()
[ -e "$obj/roots-messages.txt" ] && mapfile -t messages < "$obj/roots-messages.txt"
host baseline
base=$(text "$dir/baseline")
row() {  # row LABEL PROGRAM
  local bytes
  bytes=$(($(text "$2") - base))
  awk -v a="$arch" -v l="$1" -v t="$bytes" -v m="$(members_in "$2")" 'BEGIN {
    printf "| %s | %s | %d (%.1f KiB) | %s |\n", a, l, t, t / 1024, m }'
}

failed=0
host channel-only "${common[@]}" "${channel[@]}"
row "channel profile only (${#channel[@]} + ${#common[@]} shared functions)" "$dir/channel-only"
if [ "${#rtm[@]}" -gt 0 ]; then
  host login-only "${common[@]}" "${rtm[@]}"
  row "login profile only (${#rtm[@]} + ${#common[@]} shared functions)" "$dir/login-only"
  host both "${common[@]}" "${channel[@]}" "${rtm[@]}" "${messages[@]}"
  row "both profiles and tether_error_message" "$dir/both"
  for pair in "channel-only rtm" "login-only channel" "channel-only messages" \
    "login-only messages"; do
    read -r program member <<< "$pair"
    leaked=$(comm -12 <(symbols "$obj/$member.o") <(symbols "$dir/$program") | wc -l)
    if [ "$leaked" -ne 0 ]; then
      echo "profile-hosts: $arch: the $program host holds $leaked symbols of the $member member" >&2
      failed=1
    fi
  done
else
  echo "| $arch | login profile only | no tether_rtm_* functions yet: nothing to link | - |"
fi

total=$("${prefix}size" "$obj/libtether.o" | awk 'NR == 2 { print $1 }')
if [ "$check" = --check ]; then
  if [ "$arch" = aarch64 ] && [ "$total" -ge "$limit" ]; then
    echo "profile-hosts: aarch64 text of both profiles is $total bytes, not under $limit" >&2
    failed=1
  fi
  [ "$failed" = 0 ] || exit 1
  bound=""
  if [ "$arch" = aarch64 ]; then
    bound=" (under $limit: $((limit - total)) bytes to spare"
    [ "$limit" = 81920 ] && bound+=", the bound since the shared socket, 80 KiB"
    bound+=")"
  fi
  profiles="each one-profile host holds only its profile's member"
  [ "${#rtm[@]}" -gt 0 ] || profiles="no tether_rtm_* functions yet: the channel profile only"
  echo "profile-hosts: $arch: text of both profiles $total bytes$bound; $profiles" >&2
fi
exit "$failed"
