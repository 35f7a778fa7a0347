#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An example host under valgrind memcheck against the staged tether-edge on loopback, for
# `make check` (scripts/sanitize/check-valgrind.sh): a short scripted run through every path that
# host drives. Host A runs under valgrind; host B (native) joins beside it; every step has a
# time bound.
#   device     examples/device.c: A joins; sees B join; a network change (SIGUSR1) and a
#              server switch (SIGUSR2) each rejoin; the edge is stopped (SIGSTOP) past
#              lost_after, so A goes INTERRUPTED, LOST, RECONNECTING, and rejoins when it
#              resumes; B leaves (A sees QUIT); A leaves on SIGINT and exits.
#   messaging  examples/messaging.c: A logs in and joins "lobby" and "second"; sees B join;
#              a network change (SIGUSR1) moves the session without a state change; the edge
#              is stopped past interrupted_after, so A goes RECONNECTING/INTERRUPTED and logs
#              back in when it resumes; B logs out (A sees member-left); A logs out on SIGINT
#              and exits.
# Zero errors and zero definite or indirect leaks, or it fails. "Still reachable" is
# reported, not failed (the log, build/check/<example>-a.valgrind, shows each block): a host
# never destroys libev's default loop, which it keeps until exit, as hosts do, so the loop
# and libev's watcher arrays stay, and the library's table of loops keeps its array buffer
# in a static.
# Usage: scripts/test/check-example.sh device|messaging EDGE_BIN EXAMPLE_BIN [OUT_DIR]
set -euo pipefail
usage="usage: check-example.sh device|messaging EDGE_BIN EXAMPLE_BIN [OUT_DIR]"
example=${1:?$usage}
edge_bin=${2:?$usage}
bin=${3:?$usage}
out=${4:-build/check}
case $example in device | messaging) ;; *) echo "$usage" >&2; exit 2 ;; esac
mkdir -p "$out"
scale=0.1 # the edge's timing; a device's thresholds too (interrupted 400 ms, lost 1 s)
app=check-app
cert=check-certificate
a_out=$out/$example-a.out
b_out=$out/$example-b.out
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

fail() {
  echo "check-$example: FAIL: $*" >&2
  echo "--- host A (under valgrind):" >&2
  cat "$a_out" >&2 || true
  echo "--- valgrind:" >&2
  tail -30 "$out/$example-a.valgrind" >&2 || true
  exit 1
}

# mark FILE: its line count now. wait_for FILE TEXT SECONDS [FROM]: until a line after line
# FROM (default 0) of FILE contains TEXT.
mark() { wc -l < "$1" 2>/dev/null || echo 0; }
wait_for() {
  local end=$((SECONDS + $3))
  until tail -n +"$((${4:-0} + 1))" "$1" 2>/dev/null | grep -F -- "$2" > /dev/null; do
    [ $SECONDS -lt $end ] || fail "no '$2' in $1 after line ${4:-0} within $3 s"
    sleep 0.05
  done
}

"$edge_bin" serve --listen 127.0.0.1:0 --app-id $app --app-certificate $cert \
  --time-scale $scale > "$out/$example-edge.out" 2>&1 &
edge=$!
pids+=("$edge")
wait_for "$out/$example-edge.out" "listening on" 10
port=$(sed -nE 's/.*listening on .*:([0-9]+).*/\1/p' "$out/$example-edge.out" | head -1)
server=127.0.0.1:$port

# host A|B ARGS...: starts host A under valgrind, or B natively, with ARGS.
host() {
  local name=$1
  shift
  if [ "$name" = a ]; then
    valgrind --leak-check=full --show-leak-kinds=all \
      --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
      --log-file="$out/$example-a.valgrind" "$bin" --server "$server" --app-id $app "$@" \
      > "$a_out" 2>&1 &
    a=$!
  else
    "$bin" --server "$server" --app-id $app "$@" > "$b_out" 2>&1 &
    b=$!
  fi
  pids+=("$!")
}

device() {
  token() {
    "$edge_bin" token --app-id $app --app-certificate $cert --channel lobby --uid "$1" \
      --expire-seconds 3600
  }
  host a --channel lobby --uid 1 --token "$(token 1)" --scale $scale --switch-server "$server"
  wait_for "$a_out" "state CONNECTED JOIN_SUCCESS" 60
  host b --channel lobby --uid 2 --token "$(token 2)" --scale $scale
  wait_for "$a_out" "user-joined uid=2" 20

  # A network change (SIGUSR1), then a server switch (SIGUSR2): each a rejoin.
  for step in "USR1 CLIENT_IP_ADDRESS_CHANGED_BY_USER" "USR2 SETTING_PROXY_SERVER"; do
    at=$(mark "$a_out")
    kill -"${step% *}" "$a"
    wait_for "$a_out" "state RECONNECTING ${step#* }" 20 "$at"
    wait_for "$a_out" "rejoin-success" 20 "$at"
  done

  at=$(mark "$a_out")
  kill -STOP "$edge"
  wait_for "$a_out" "state RECONNECTING INTERRUPTED" 20 "$at"
  wait_for "$a_out" "connection-lost" 20 "$at"
  at=$(mark "$a_out")
  kill -CONT "$edge"
  wait_for "$a_out" "rejoin-success" 30 "$at"

  kill -INT "$b"
  wait "$b" || fail "device B exited with $?"
  wait_for "$a_out" "user-offline uid=2 reason=QUIT" 20
}

messaging() {
  token() {
    "$edge_bin" token --app-id $app --app-certificate $cert --user-id "$1" --expire-seconds 3600
  }
  host a --user-id alice --token "$(token alice)" --channel lobby --channel second --scale 0.25
  wait_for "$a_out" "state CONNECTED LOGIN_SUCCESS" 60
  wait_for "$a_out" "join-channel second rc=0" 10
  host b --user-id bob --token "$(token bob)" --channel lobby --scale 0.25
  wait_for "$a_out" "member-joined channel=lobby user=bob" 20

  at=$(mark "$a_out")
  kill -USR1 "$a"
  wait_for "$a_out" "network-changed rc=0" 20 "$at"

  at=$(mark "$a_out")
  kill -STOP "$edge"
  wait_for "$a_out" "state RECONNECTING INTERRUPTED" 30 "$at"
  b_at=$(mark "$b_out")
  kill -CONT "$edge"
  wait_for "$a_out" "state CONNECTED LOGIN_SUCCESS" 30 "$at"
  wait_for "$b_out" "state CONNECTED LOGIN_SUCCESS" 30 "$b_at"
  sleep 1 # B's channel, joined again if the edge's grace ran out while it was stopped

  at=$(mark "$a_out")
  kill -INT "$b"
  wait "$b" || fail "user B exited with $?"
  wait_for "$a_out" "member-left channel=lobby user=bob" 20 "$at"
}

$example

kill -INT "$a"
status=0
wait "$a" || status=$?
if [ "$example" = device ]; then
  grep -qF "leave-channel" "$a_out" || fail "device A did not report leave-channel"
else
  grep -qF "state DISCONNECTED LOGOUT" "$a_out" || fail "user A did not report DISCONNECTED LOGOUT"
  grep -qF "logout-result LOGOUT_ERR_OK" "$a_out" || fail "user A did not report its logout result"
fi
kill -TERM "$edge"
wait "$edge" || true
pids=()

summary() { # the bytes valgrind's leak summary gives for KIND ("definitely lost:"), or 0
  local v
  v=$(sed -nE "s/^==[0-9]+== +$1[^0-9]*([0-9,]+) bytes.*/\1/p" "$out/$example-a.valgrind" | tr -d , | tail -1)
  echo "${v:-0}"
}
errors=$(sed -nE 's/^==[0-9]+== ERROR SUMMARY: ([0-9,]+) errors.*/\1/p' "$out/$example-a.valgrind" | tail -1)
[ "$status" -eq 0 ] || fail "host A under valgrind exited with $status"
[ "${errors:-x}" = 0 ] || fail "valgrind reported ${errors:-no summary} errors"
if [ "$example" = device ]; then
  events="$(grep -c "rejoin-success" "$a_out" || true) rejoins, $(grep -c \
    "state RECONNECTING INTERRUPTED" "$a_out" || true) of them after INTERRUPTED: 1 scripted"
else
  events="$(grep -c "state CONNECTED LOGIN_SUCCESS" "$a_out" || true) logins: 1 + 1 after INTERRUPTED"
fi
echo "check-$example: examples/$example.c under valgrind, $(wc -l < "$a_out") events ($events," \
  "more if valgrind was slow), $SECONDS s: ${errors} errors, definitely lost" \
  "$(summary "definitely lost:") B, indirectly lost $(summary "indirectly lost:") B, still" \
  "reachable $(summary "still reachable:") B (libev's default loop and watcher arrays, the" \
  "library's loop table: kept until exit)"
