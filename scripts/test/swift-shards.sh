#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Swift tests of a build already made in SWIFT_TEST_SHARDS test processes at once
# (default 6), for make swift-test and scripts/sanitize/check-swift.sh:
#   scripts/test/swift-shards.sh LOG_DIR [FILTER] [-- SWIFT_BUILD_OPTIONS...]
# FILTER (an extended regular expression on the test ids `swift test list` prints) keeps
# only the tests it matches; the options name the build (--scratch-path, --sanitize=...).
#
# Why several processes: most end-to-end tests wait for real time (a timeline, a process's
# exit) by blocking their thread, and Swift Testing runs every test on the cooperative
# pool, which has one thread per core. On a 2-core machine two tests ran at a time and the
# CPU stood 70% idle. Each process has a pool of its own. The tests are dealt out one by
# one in the order of their ids, so each process gets a share of every slow suite.
#
# Every log is printed, each process's after the last one ends, then one line: how many
# tests ran, in how many processes, how long. It fails if a process failed, or if the
# processes together ran another number of tests than were dealt (a filter that lost one).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:?usage: swift-shards.sh LOG_DIR [FILTER] [-- SWIFT_BUILD_OPTIONS...]}
shift
filter=
if [ $# -gt 0 ] && [ "$1" != -- ]; then
  filter=$1
  shift
fi
[ "${1:-}" = -- ] && shift
options=("$@")
shards=${SWIFT_TEST_SHARDS:-6}
case "$shards" in '' | *[!0-9]* | 0)
  echo "swift-shards: SWIFT_TEST_SHARDS must be a positive number, not '$shards'" >&2
  exit 2
  ;;
esac
binary=$(swift build --show-bin-path "${options[@]}")/TetherPackageTests.xctest
[ -x "$binary" ] || {
  echo "swift-shards: no test build at $binary (swift build --build-tests first)" >&2
  exit 2
}
rm -rf "$dir"
mkdir -p "$dir"
swift test list --skip-build "${options[@]}" 2> "$dir/list.err" | sort -u > "$dir/all-ids" || {
  cat "$dir/list.err" >&2
  exit 1
}
if [ -n "$filter" ]; then
  grep -E "$filter" "$dir/all-ids" > "$dir/ids" || true
else
  cp "$dir/all-ids" "$dir/ids"
fi
total=$(wc -l < "$dir/ids")
if [ "$total" -eq 0 ]; then
  echo "swift-shards: no test${filter:+ matches '$filter'}" >&2
  exit 1
fi
[ "$shards" -gt "$total" ] && shards=$total
start=$SECONDS
pids=()
for ((k = 0; k < shards; k++)); do
  # The ids dealt to process k, each as a regular expression that matches it alone: its
  # punctuation escaped, followed by the end or by the "/" before its source location.
  alternatives=$(awk -v n="$shards" -v k="$k" '(NR - 1) % n == k' "$dir/ids" |
    sed -E 's/[][(){}.*+?^$|\\]/\\&/g' | paste -sd'|')
  "$binary" --testing-library swift-testing --filter "^($alternatives)(/|$)" \
    > "$dir/shard-$k.log" 2>&1 &
  pids+=($!)
done
failed=()
for ((k = 0; k < shards; k++)); do
  wait "${pids[$k]}" || failed+=("$((k + 1))")
done
ran=0
for ((k = 0; k < shards; k++)); do
  echo "--- swift-shards: process $((k + 1)) of $shards ---"
  cat "$dir/shard-$k.log"
  count=$(grep -aoE 'Test run with [0-9]+ tests?' "$dir/shard-$k.log" | tail -1 | grep -oE '[0-9]+' || true)
  ran=$((ran + ${count:-0}))
done
elapsed=$((SECONDS - start))
if [ "${#failed[@]}" -ne 0 ]; then
  echo "swift-shards: FAIL: process(es) ${failed[*]/#/#} failed (logs above, and in $dir)" >&2
  exit 1
fi
if [ "$ran" -ne "$total" ]; then
  echo "swift-shards: FAIL: $total tests dealt, $ran ran" >&2
  exit 1
fi
echo "swift-shards: Test run with $total tests in $shards processes at once passed, in $elapsed s"
