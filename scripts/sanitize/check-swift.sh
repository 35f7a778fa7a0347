#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Swift tests under a sanitizer, for `make check`, each in its own scratch path:
#   scripts/sanitize/check-swift.sh asan   AddressSanitizer (with LeakSanitizer) on the Swift and C
#                                 code, UndefinedBehaviorSanitizer on the C code (.build-asan)
#   scripts/sanitize/check-swift.sh tsan   ThreadSanitizer (.build-tsan)
#   scripts/sanitize/check-swift.sh KIND FILTER   only the tests whose ids (`swift test list`)
#                                 match FILTER, an extended regular expression (make check-ci:
#                                 the edge's under ASan; the build is whole)
#   scripts/sanitize/check-swift.sh KIND --build-only   the build alone (.ci/run makes it at
#                                 idle priority while make test runs; the run after finds it)
# The tests run in several processes at once (scripts/test/swift-shards.sh says why).
# swiftc has no UndefinedBehaviorSanitizer for Swift code on Linux ("unsupported option
# '-sanitize=undefined'"); Swift itself traps on overflow, out-of-bounds and nil unwraps in
# these debug builds, so UBSan is applied where C is compiled: the C target CTetherSystem
# and the C the Swift modules import inline (CLibev's shims),
# and its runtime is linked in. Any sanitizer report fails the run.
# The end-to-end suites run too when TETHER_E2E_REQUIRED and TETHER_DEVICE_BIN are set (as
# make check does), against the tether-edge of the same sanitized build (TETHER_EDGE_BIN is
# replaced by it): the sanitizer watches the test process (the lab: processes, pipes,
# relay threads) and every edge the tests start and stop; the C devices are not
# instrumented (valgrind runs them: scripts/test/check-example.sh). Reports go to files
# (log_path: a child's stderr is not kept), all read after the run. Suppressions:
# scripts/sanitize/suppressions/*.supp, each entry with the reason it is not the project's defect.
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=${1:?usage: check-swift.sh asan|tsan [FILTER | --build-only]}
filter=${2:-}
build_only=
[ "$filter" != --build-only ] || build_only=yes filter=
out=${BUILD_DIR:-build}/check
mkdir -p "$out"
supp=$PWD/scripts/sanitize/suppressions
case "$kind" in
  asan)
    scratch=.build-asan
    flags=(--sanitize=address -Xcc -fsanitize=undefined -Xcc -fno-sanitize-recover=undefined
      -Xswiftc -Xclang-linker -Xswiftc -fsanitize=undefined)
    export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0
    export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ;;
  tsan)
    scratch=.build-tsan
    flags=(--sanitize=thread)
    export TSAN_OPTIONS=suppressions=$supp/tsan.supp:halt_on_error=0:exitcode=66:print_suppressions=1
    ;;
  *)
    echo "check-swift: unknown sanitizer '$kind' (asan, tsan)" >&2
    exit 2
    ;;
esac
log=$out/swift-$kind.log
reports_dir=$out/swift-$kind-reports
rm -rf "$reports_dir"
mkdir -p "$reports_dir"
for var in ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
  if [ -n "${!var:-}" ]; then export "$var=${!var}:log_path=$PWD/$reports_dir/${var%%_*}"; fi
done
start=$SECONDS
swift build -q --build-tests "${flags[@]}" --scratch-path "$scratch"
built=$((SECONDS - start))
if [ -n "$build_only" ]; then
  echo "check-swift ($kind): built in ${built} s ($scratch)"
  exit 0
fi
# The suites run this build's own tether-edge, and know it is sanitized (EdgeFloodTests
# bounds its resident set only where ASan's quarantine does not hold what it frees).
export TETHER_EDGE_BIN=$PWD/$scratch/debug/tether-edge TETHER_EDGE_SANITIZER=$kind
status=0
# Three processes, not make swift-test's six: the sanitizers' own CPU on top of six
# processes' made the machine slow enough to move a device's timeline by milliseconds.
SWIFT_TEST_SHARDS=${SWIFT_TEST_SHARDS:-3} scripts/test/swift-shards.sh "$out/swift-$kind-shards" "$filter" -- "${flags[@]}" \
  --scratch-path "$scratch" > "$log" 2>&1 || status=$?
pattern='^(==[0-9]+==ERROR|WARNING: ThreadSanitizer|SUMMARY: (Address|Leak|Thread|UndefinedBehavior)Sanitizer)|runtime error:'
reports=$(cat "$log" "$reports_dir"/* 2>/dev/null | grep -cE "$pattern" || true)
processes=$({ grep -lE "$pattern" "$reports_dir"/* 2>/dev/null || true; } | wc -l)
# The summary of the test processes together (scripts/test/swift-shards.sh).
summary=$(grep -E '^swift-shards: ' "$log" | tail -1 | sed -E 's/^swift-shards: //' || true)
skipped=$(grep -E ' skipped' "$log" | grep -vE 'Test run with' | sed -E 's/^[^T]*//' || true)
echo "check-swift ($kind): built in ${built} s, tests ran in $((SECONDS - start - built)) s"
echo "check-swift ($kind): ${summary:-no Swift Testing summary}${filter:+ (the suites matching '$filter')}"
if [ -n "$skipped" ]; then
  echo "check-swift ($kind): SKIPPED, not counted as passing:"
  echo "$skipped" | sed 's/^/  /'
fi
# A filter that selects nothing would pass having checked nothing.
if [ "$status" -eq 0 ] && [ -n "$filter" ] && ! grep -qE 'Test run with [1-9][0-9]* tests?' <<< "$summary"; then
  echo "check-swift ($kind): FAIL: no test matches '$filter'" >&2
  exit 1
fi
if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
  echo "check-swift ($kind): FAIL: swift test exited with $status, $reports sanitizer reports" \
    "(the whole output: $log)" >&2
  echo "check-swift ($kind): reports from $processes processes in $reports_dir" >&2
  cat "$log" "$reports_dir"/* 2>/dev/null | grep -E -A25 '^(==[0-9]+==ERROR|WARNING: ThreadSanitizer)|runtime error:' | head -120 >&2 || true
  grep -E '✘|error:' "$log" | head -40 >&2 || true
  exit 1
fi
echo "check-swift ($kind): 0 sanitizer reports (the test processes and every tether-edge they ran)"
