#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C ABI tests against the library C hosts link, under the compilers' sanitizers, for
# `make check`: the Embedded Swift build of TetherCore + Tether (the sources and module
# scripts/build/build-lib.sh compiles, at -Onone -g for ASan and -O -g for TSan instead of
# -Osize, unlinked by --gc-sections) instrumented with AddressSanitizer, then with
# ThreadSanitizer, and test_engine, test_reentry, test_cycles, test_rtm (the login
# profile), test_logout_refused and test_threads (every Thread: rule of tether.h from a
# second thread) built with clang and the same sanitizer (UBSan too, with ASan, on the C
# side). Valgrind sees heap misuse and
# leaks; ASan also sees stack and global overflows, and TSan understands atomics (which
# helgrind does not).
# Any report fails. The toolchain's TSan runtime needs libdispatch, from the toolchain.
# TSan's build is optimized: at -Onone every use of a connection retains and releases it,
# and a release is an acquire-release on its reference count, so the loop's thread and
# another one synchronize through it all the time and TSan sees no race at all (it missed
# the destroy from another thread that called on_log there, which -O shows).
# Usage: scripts/sanitize/check-c-sanitizers.sh [address|thread [TEST...]]
#   (make test runs `thread test_threads`; make check, everything)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BUILD_DIR:-build}/check/csan
mkdir -p "$out"
toolchain_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift/linux
# shellcheck source=scripts/build/lib-module.sh
. scripts/build/lib-module.sh
# shellcheck source=scripts/build/stale.sh
. scripts/build/stale.sh
# shellcheck source=scripts/test/at-once.sh
. scripts/test/at-once.sh
kinds=(address thread)
tests=(test_engine test_reentry test_cycles test_rtm test_logout_refused test_threads)
if [ $# -gt 0 ]; then
  kinds=("$1")
  shift
fi
if [ $# -gt 0 ]; then tests=("$@"); fi
# compile KIND: the instrumented Swift object, unless one newer than every source of the
# module is there already (make thread-test made the ThreadSanitizer one).
compile() {
  local kind=$1 optimize=-Onone object=$out/tether-swift-$1.o
  [ "$kind" = thread ] && optimize=-O
  # shellcheck disable=SC2086
  stale "$object" $LIB_MODULE_SOURCES Sources/CTetherSystem Sources/CLibev Sources/CTetherABI \
    Sources/CSodium Include || return 0
  # shellcheck disable=SC2086
  swiftc -enable-experimental-feature Embedded -wmo -parse-as-library "$optimize" -g \
    -sanitize=$kind -module-name Tether -package-name tether "${LIB_MODULE_INCLUDES[@]}" \
    $LIB_MODULE_SOURCES -c -o "$object.tmp"
  mv "$object.tmp" "$object"
}
for kind in "${kinds[@]}"; do
  case $kind in
    address | thread) ;;
    *)
      echo "usage: check-c-sanitizers.sh [address|thread [TEST...]]" >&2
      exit 2
      ;;
  esac
done
# Each compile is one -wmo job on one core: all at once, then the tests of each kind in turn.
start=$SECONDS
pids=()
for kind in "${kinds[@]}"; do
  compile "$kind" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
compiled=$((SECONDS - start))
# run_kind KIND: links and runs the tests against the library instrumented with KIND; prints
# its lines, or fails with the report.
run_kind() {
  local kind=$1 start=$SECONDS cflags libs results t status reports name
  case $kind in
    address)
      cflags=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
      libs=()
      export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
      ;;
    thread)
      cflags=(-fsanitize=thread)
      libs=(-L"$toolchain_lib" -ldispatch -lBlocksRuntime -Wl,-rpath,"$toolchain_lib")
      export TSAN_OPTIONS=halt_on_error=0:exitcode=66
      ;;
  esac
  # The library's C (CTetherSystem) with the same sanitizers as the tests' C.
  # shellcheck disable=SC2046
  ld -r "$out/tether-swift-$kind.o" $(scripts/build/csystem.sh "$out/csystem-$kind" o -O0 -g \
    "${cflags[@]}") -o "$out/tether-$kind.o"
  results=()
  for t in "${tests[@]}"; do
    CC=clang EXTRA_CFLAGS="-g ${cflags[*]}" TETHER_LIB="$out/tether-$kind.o -lpthread ${libs[*]}" \
      scripts/test/c-tests.sh build "$t" "$out/$t-$kind" \
      2> >(grep -v "ld.gold: warning: Cannot export local symbol '__asan" >&2)
    status=0
    "$out/$t-$kind" > "$out/$t-$kind.out" 2>&1 || status=$?
    reports=$(grep -cE 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:' \
      "$out/$t-$kind.out" || true)
    if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
      echo "check-c-sanitizers: FAIL: $t with -fsanitize=$kind exited with $status," \
        "$reports reports ($out/$t-$kind.out)" >&2
      grep -E -A30 'ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|FAIL' \
        "$out/$t-$kind.out" | head -80 >&2
      return 1
    fi
    results+=("$t: $(tail -1 "$out/$t-$kind.out")")
  done
  name=$([ $kind = address ] && echo "AddressSanitizer+UBSan" || echo "ThreadSanitizer")
  echo "check-c-sanitizers: $name, the Embedded library and the C tests instrumented," \
    "0 reports in $((SECONDS - start)) s (the compiles before: $compiled s):"
  printf '  %s\n' "${results[@]}"
}
# The kinds' runs at once: the tests mostly wait for their timelines (24 s and 25 s for 9 s
# of CPU); each one's lines are printed when it is done, in order.
at_once run_kind : "${kinds[@]}"
