#!/usr/bin/env bash
# examples/device.c under valgrind memcheck against the staged tether-edge on loopback, for
# `make check`: a short scripted run through every path a device host drives. Device A runs
# under valgrind; device B (native) joins beside it. A joins; sees B join; a network change
# (SIGUSR1) and a server switch (SIGUSR2) each rejoin; the edge is stopped (SIGSTOP) past
# lost_after, so A goes INTERRUPTED, LOST, RECONNECTING, and rejoins when it resumes; B
# leaves (A sees QUIT); A leaves on SIGINT and exits. Every step has a time bound.
# Zero errors and zero definite or indirect leaks, or it fails. "Still reachable" is
# reported, not failed (the log, build/check/device-a.valgrind, shows each block): the
# device never destroys libev's default loop, which it keeps until exit, as hosts do, so
# the loop and libev's watcher arrays stay (about 1,140 B), and the library's table of
# loops keeps its 40-byte array buffer in a static.
# Usage: scripts/check-device.sh EDGE_BIN DEVICE_BIN [OUT_DIR]
set -euo pipefail
edge_bin=${1:?usage: check-device.sh EDGE_BIN DEVICE_BIN [OUT_DIR]}
device_bin=${2:?usage: check-device.sh EDGE_BIN DEVICE_BIN [OUT_DIR]}
out=${3:-build/check}
mkdir -p "$out"
scale=0.1 # interrupted 400 ms, lost 1 s, heartbeat 100 ms
app=check-app
cert=check-certificate
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

fail() {
  echo "check-device: FAIL: $*" >&2
  echo "--- device A (under valgrind):" >&2
  cat "$out/device-a.out" >&2 || true
  echo "--- valgrind:" >&2
  tail -30 "$out/device-a.valgrind" >&2 || true
  exit 1
}

# mark FILE: its line count now. wait_for FILE TEXT SECONDS [FROM]: until a line after line
# FROM (default 0) of FILE contains TEXT.
mark() { wc -l < "$1" 2>/dev/null || echo 0; }
wait_for() {
  local end=$((SECONDS + $3))
  until tail -n +"$((${4:-0} + 1))" "$1" 2>/dev/null | grep -qF -- "$2"; do
    [ $SECONDS -lt $end ] || fail "no '$2' in $1 after line ${4:-0} within $3 s"
    sleep 0.05
  done
}

"$edge_bin" serve --listen 127.0.0.1:0 --app-id $app --app-certificate $cert \
  --time-scale $scale > "$out/edge.out" 2>&1 &
edge=$!
pids+=("$edge")
wait_for "$out/edge.out" "listening on" 10
port=$(sed -nE 's/.*listening on .*:([0-9]+).*/\1/p' "$out/edge.out" | head -1)
server=127.0.0.1:$port
token() {
  "$edge_bin" token --app-id $app --app-certificate $cert --channel lobby --uid "$1" \
    --expire-seconds 3600
}
token_a=$(token 1)
token_b=$(token 2)

valgrind --leak-check=full --show-leak-kinds=all \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
  --log-file="$out/device-a.valgrind" \
  "$device_bin" --server "$server" --app-id $app --channel lobby --uid 1 --token "$token_a" \
  --scale $scale --switch-server "$server" > "$out/device-a.out" 2>&1 &
a=$!
pids+=("$a")
a_out=$out/device-a.out
wait_for "$a_out" "state CONNECTED JOIN_SUCCESS" 60

"$device_bin" --server "$server" --app-id $app --channel lobby --uid 2 --token "$token_b" \
  --scale $scale > "$out/device-b.out" 2>&1 &
b=$!
pids+=("$b")
wait_for "$a_out" "user-joined uid=2" 20

at=$(mark "$a_out")
kill -USR1 "$a"
wait_for "$a_out" "state RECONNECTING CLIENT_IP_ADDRESS_CHANGED_BY_USER" 20 "$at"
wait_for "$a_out" "rejoin-success" 20 "$at"

at=$(mark "$a_out")
kill -USR2 "$a"
wait_for "$a_out" "state RECONNECTING SETTING_PROXY_SERVER" 20 "$at"
wait_for "$a_out" "rejoin-success" 20 "$at"

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

kill -INT "$a"
status=0
wait "$a" || status=$?
grep -qF "leave-channel" "$a_out" || fail "device A did not report leave-channel"
kill -TERM "$edge"
wait "$edge" || true
pids=()

summary() { sed -nE "s/^==[0-9]+== +$1[^0-9]*([0-9,]+) bytes.*/\1/p" "$out/device-a.valgrind" | tr -d , | tail -1; }
errors=$(sed -nE 's/^==[0-9]+== ERROR SUMMARY: ([0-9,]+) errors.*/\1/p' "$out/device-a.valgrind" | tail -1)
definite=$(summary "definitely lost:")
indirect=$(summary "indirectly lost:")
reachable=$(summary "still reachable:")
[ "$status" -eq 0 ] || fail "device A under valgrind exited with $status"
[ "${errors:-x}" = 0 ] || fail "valgrind reported ${errors:-no summary} errors"
lines=$(wc -l < "$a_out")
rejoins=$(grep -c "rejoin-success" "$a_out" || true)
interrupted=$(grep -c "state RECONNECTING INTERRUPTED" "$a_out" || true)
echo "check-device: examples/device.c under valgrind, $lines events ($rejoins rejoins," \
  "$interrupted of them after INTERRUPTED: 1 scripted, more if valgrind was slow), $SECONDS" \
  "s: ${errors} errors, definitely lost ${definite:-0} B, indirectly lost ${indirect:-0} B," \
  "still reachable ${reachable:-0} B (libev's default loop and watcher arrays, the library's" \
  "loop table: kept until exit)"
