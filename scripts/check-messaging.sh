#!/usr/bin/env bash
# examples/messaging.c under valgrind memcheck against the staged tether-edge on loopback,
# for `make check` (after scripts/check-device.sh, in check-valgrind.sh): every path a
# messaging host drives. User A runs under valgrind; user B (native) joins beside it. A
# logs in and joins "lobby"; sees B join; a network change (SIGUSR1) moves the session
# without a state change; the edge is stopped (SIGSTOP) past interrupted_after, so A goes
# RECONNECTING/INTERRUPTED and logs back in when it resumes; B logs out (A sees member-left);
# A logs out on SIGINT and exits. Every step has a time bound. Zero errors and zero
# definite or indirect leaks, or it fails; "still reachable" (libev's default loop, kept
# until exit, and the library's loop table) is reported, not failed.
# Usage: scripts/check-messaging.sh EDGE_BIN MESSAGING_BIN [OUT_DIR]
set -euo pipefail
edge_bin=${1:?usage: check-messaging.sh EDGE_BIN MESSAGING_BIN [OUT_DIR]}
messaging_bin=${2:?usage: check-messaging.sh EDGE_BIN MESSAGING_BIN [OUT_DIR]}
out=${3:-build/check}
mkdir -p "$out"
scale=0.1 # the edge's grace and ticks; the client's thresholds scaled by --scale below
app=check-app
cert=check-certificate
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

fail() {
  echo "check-messaging: FAIL: $*" >&2
  echo "--- user A (under valgrind):" >&2
  cat "$out/messaging-a.out" >&2 || true
  echo "--- valgrind:" >&2
  tail -30 "$out/messaging-a.valgrind" >&2 || true
  exit 1
}

mark() { wc -l < "$1" 2>/dev/null || echo 0; }
wait_for() { # FILE TEXT SECONDS [FROM]
  local end=$((SECONDS + $3))
  until tail -n +"$((${4:-0} + 1))" "$1" 2>/dev/null | grep -qF -- "$2"; do
    [ $SECONDS -lt $end ] || fail "no '$2' in $1 after line ${4:-0} within $3 s"
    sleep 0.05
  done
}

"$edge_bin" serve --listen 127.0.0.1:0 --app-id $app --app-certificate $cert \
  --time-scale $scale > "$out/messaging-edge.out" 2>&1 &
edge=$!
pids+=("$edge")
wait_for "$out/messaging-edge.out" "listening on" 10
port=$(sed -nE 's/.*listening on .*:([0-9]+).*/\1/p' "$out/messaging-edge.out" | head -1)
server=127.0.0.1:$port
token() {
  "$edge_bin" token --app-id $app --app-certificate $cert --user-id "$1" --expire-seconds 3600
}
token_a=$(token alice)
token_b=$(token bob)

valgrind --leak-check=full --show-leak-kinds=all \
  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
  --log-file="$out/messaging-a.valgrind" \
  "$messaging_bin" --server "$server" --app-id $app --user-id alice --token "$token_a" \
  --channel lobby --channel second --scale 0.25 > "$out/messaging-a.out" 2>&1 &
a=$!
pids+=("$a")
a_out=$out/messaging-a.out
wait_for "$a_out" "state CONNECTED LOGIN_SUCCESS" 60
wait_for "$a_out" "join-channel second rc=0" 10

"$messaging_bin" --server "$server" --app-id $app --user-id bob --token "$token_b" \
  --channel lobby --scale 0.25 > "$out/messaging-b.out" 2>&1 &
b=$!
pids+=("$b")
wait_for "$a_out" "member-joined channel=lobby user=bob" 20

at=$(mark "$a_out")
kill -USR1 "$a"
wait_for "$a_out" "network-changed rc=0" 20 "$at"

at=$(mark "$a_out")
kill -STOP "$edge"
wait_for "$a_out" "state RECONNECTING INTERRUPTED" 30 "$at"
b_at=$(mark "$out/messaging-b.out")
kill -CONT "$edge"
wait_for "$a_out" "state CONNECTED LOGIN_SUCCESS" 30 "$at"
wait_for "$out/messaging-b.out" "state CONNECTED LOGIN_SUCCESS" 30 "$b_at"
sleep 1 # B's channel, joined again if the edge's grace ran out while it was stopped

at=$(mark "$a_out")
kill -INT "$b"
wait "$b" || fail "user B exited with $?"
wait_for "$a_out" "member-left channel=lobby user=bob" 20 "$at"

kill -INT "$a"
status=0
wait "$a" || status=$?
grep -qF "state DISCONNECTED LOGOUT" "$a_out" || fail "user A did not report DISCONNECTED LOGOUT"
grep -qF "logout-result LOGOUT_ERR_OK" "$a_out" || fail "user A did not report its logout result"
kill -TERM "$edge"
wait "$edge" || true
pids=()

summary() { sed -nE "s/^==[0-9]+== +$1[^0-9]*([0-9,]+) bytes.*/\1/p" "$out/messaging-a.valgrind" | tr -d , | tail -1; }
errors=$(sed -nE 's/^==[0-9]+== ERROR SUMMARY: ([0-9,]+) errors.*/\1/p' "$out/messaging-a.valgrind" | tail -1)
definite=$(summary "definitely lost:")
indirect=$(summary "indirectly lost:")
reachable=$(summary "still reachable:")
[ "$status" -eq 0 ] || fail "user A under valgrind exited with $status"
[ "${errors:-x}" = 0 ] || fail "valgrind reported ${errors:-no summary} errors"
lines=$(wc -l < "$a_out")
logins=$(grep -c "state CONNECTED LOGIN_SUCCESS" "$a_out" || true)
echo "check-messaging: examples/messaging.c under valgrind, $lines events ($logins logins:" \
  "1 + 1 after INTERRUPTED, more if valgrind was slow), $SECONDS s: ${errors} errors," \
  "definitely lost ${definite:-0} B, indirectly lost ${indirect:-0} B, still reachable" \
  "${reachable:-0} B (libev's default loop, the library's loop table: kept until exit)"
