#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The C tests of Tests/c, one way: each test_NAME.c with the one harness (harness.c), built
# with the strict flags against the Embedded library C hosts link, and run as its row of the
# table below says. One line per run: the binary's own last line ("c-abi: 35 passed, 0
# failed"), marked when it ran under valgrind memcheck; its whole output when it failed.
#
#   scripts/test/c-tests.sh ARCH [NAME...]   build and run (NAME: a row, with or without "test_";
#                                       default: every row)
#     x86_64: natively, under memcheck, or both, as the row says; "root" rows only as root
#     aarch64, armv7: cross-built, linked statically, and run under qemu-user: the rows
#       whose last column says yes (TETHER_TEST_UNDER_QEMU set: what qemu-user cannot do is
#       left out and said); the others print "SKIPPED, not counted" and why
#     The library column: the shipped library, shared or static, or one of the test-only
#     builds (scripts/build/build-lib.sh ARCH VARIANT: build/lib-VARIANT/ARCH), linked
#     statically, the test compiled with the build's macro for tether_test_crypto.h
#   scripts/test/c-tests.sh vm-build ARCH DIR
#     builds every row for a board's kernel (scripts/test/vm.sh runs them in a virtual
#     machine): cross-built as above but in full, nothing left out for qemu-user; every row
#     but the x86_64-only one. Prints the binaries' names.
#   scripts/test/c-tests.sh build NAME OUTPUT
#     builds one test only, for the scripts that run them their own way
#     (check-valgrind.sh, check-c-sanitizers.sh): CC (gcc), EXTRA_CFLAGS and TETHER_LIB (the
#     library's link arguments; the shared library of build/lib/x86_64 unless set) may be
#     set.
#
# Memcheck fails on any error and any definitely or indirectly lost byte; the tests' wake-up
# ratios are left to the runs outside valgrind (TETHER_TEST_NO_TIMING), and a
# test that fails under memcheck alone runs once more (under_memcheck). Exit status 77 from a test is "skipped,
# not counted" (harness_skip); anything else but 0 fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/build/arch.sh
build_dir=${BUILD_DIR:-build}
strict=(-std=c99 -Wall -Wextra -Wpedantic -Werror)
# The alloc test counts every allocation: the linker wraps the allocator.
wrap_alloc=-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign,--wrap=aligned_alloc

# name            report          library      extra link flags  how it runs       under qemu-user
table="
engine            c-abi           shared       -lpthread         native+memcheck   yes
reentry           c-reentry       shared       -                 memcheck          yes
rtm               c-rtm           shared       -lpthread         native+memcheck   yes
threads           threads         shared       -lpthread         native            threads
cycles            c-cycles        shared       -lpthread         memcheck          threads
netns             netns           shared       -                 root              namespace
alloc             alloc           static       $wrap_alloc       native            yes
source            source          shared       -                 native            yes
destroy_other     destroy-other   shared       -                 memcheck          yes
destroy_log       destroy-log     shared       -                 root              namespace
logout_refused    logout-refused  shared       -                 memcheck          yes
crypto            crypto          test-crypto  -                 native+memcheck   yes
null_crypto       null-crypto     null-crypto  -                 native            x86_64
edge_v2           edge-v2         shared       -                 native+memcheck   yes
"
# Not under qemu-user: what needs threads (qemu-user hangs or crashes in pthread_create
# here; engine and rtm leave those cases out under it) or a network namespace of its own;
# and the null-crypto build (its own test and the symbol check link it), x86_64 only.
declare -A qemu_lacks=([threads]="threads, which qemu-user lacks here"
  [namespace]="a network namespace of its own, which qemu-user cannot make"
  [x86_64]="the null-crypto build, made for x86_64 only")
# The macro each test-only build is compiled with (tether_test_crypto.h).
declare -A variant_macro=([test-crypto]=TETHER_TEST_CRYPTO [null-crypto]=TETHER_NULL_CRYPTO)

# row NAME: sets report, library, extra, runs, qemu from the table, or fails.
row() {
  local line
  line=$(awk -v n="${1#test_}" '$1 == n' <<< "$table")
  if [ -z "$line" ]; then
    echo "c-tests: no test '$1' (rows: $(awk 'NF {printf "%s ", $1}' <<< "$table"))" >&2
    exit 2
  fi
  read -r name report library extra runs qemu <<< "$line"
  [ "$extra" != - ] || extra=
}

# compile NAME OUTPUT CC LIBRARY...: the test and the harness, the library and its flags.
compile() {
  local name=$1 output=$2 cc=$3
  shift 3
  row "$name"
  # shellcheck disable=SC2086
  "$cc" "${strict[@]}" ${EXTRA_CFLAGS:-} -IInclude -ITests/c "Tests/c/test_$name.c" \
    Tests/c/harness.c Tests/c/edge_v2.c Tests/c/wire_v2.c -o "$output" "$@" -lsodium -lev -lm $extra
}

# row_library ARCH: sets static (the row's static library: the shipped one's, or a
# test-only build's) and flags (EXTRA_CFLAGS, and the build's macro).
row_library() {
  static=$build_dir/lib/$1/libtether.a flags=${EXTRA_CFLAGS:-}
  if [ -n "${variant_macro[$library]:-}" ]; then
    static=$build_dir/lib-$library/$1/libtether.a
    flags+=" -D${variant_macro[$library]}"
  fi
}

# check NAME LOG STATUS [HOW [CLEAN]]: one line for a run (HOW: under what) that ended
# with STATUS; fails the script on a failure, with the run's output.
check() {
  local status=$3 how=${4:+ ($4${5:+: $5})}
  if [ "$status" -eq 77 ]; then
    tail -1 "$2"
  elif [ "$status" -ne 0 ]; then
    cat "$2" >&2
    echo "c-tests: FAIL: test_$1${4:+ under $4} exited with $status" >&2
    exit 1
  else
    echo "$(tail -1 "$2")$how"
  fi
}

memcheck=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible
  --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99
  --suppressions=scripts/sanitize/suppressions/memcheck.supp)

# under_memcheck NAME BINARY LOG: exit 99 is memcheck's (an error or a leak): a failure at
# once. A failure of the test itself may be valgrind's slowness on a loaded machine breaking
# a timing bound scaled for a native run (check-valgrind.sh does the same): it runs once
# more, saying so, and must pass then.
under_memcheck() {
  local status=0
  TETHER_TEST_NO_TIMING=1 "${memcheck[@]}" "$2" > "$3" 2>&1 || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 99 ] && [ "$status" -ne 77 ]; then
    echo "c-tests: test_$1 failed under memcheck (exit $status), memcheck itself clean;" \
      "running it again. Its failures:" >&2
    grep FAIL "$3" | sed 's/^/  /' >&2 || true
    status=0
    TETHER_TEST_NO_TIMING=1 "${memcheck[@]}" "$2" > "$3" 2>&1 || status=$?
  fi
  return "$status"
}

run_native() { # NAME BINARY: the native (or root) run of a row; memcheck_lane runs the others
  local name=$1 binary=$2 dir status
  dir=$(dirname "$binary")
  row "$name"
  if [[ $runs == *native* || $runs == root ]]; then
    if [ "$runs" = root ] && [ "$(id -u)" != 0 ]; then
      echo "$report: SKIPPED, not counted: it makes a network namespace of its own (root)"
    else
      status=0
      "$binary" > "$dir/$name.out" 2>&1 || status=$?
      check "$name" "$dir/$name.out" "$status"
    fi
  fi
}

# memcheck_lane DIR NAME...: the memcheck runs of NAME..., one after the other, each one's
# exit status left in DIR/NAME.memcheck.status (read by main once the lane is done).
memcheck_lane() {
  local dir=$1 name status
  shift
  for name in "$@"; do
    status=0
    under_memcheck "$name" "$dir/test_$name" "$dir/$name.memcheck" || status=$?
    echo "$status" > "$dir/$name.memcheck.status"
  done
}

run_qemu() { # ARCH NAME BINARY
  local status dir
  dir=$(dirname "$3")
  status=0
  # In full, as natively: the tests stretch their time figures by what their load costs
  # here (the pace each binary measures at start and prints), not by a fixed factor.
  "${QEMU[@]}" "$3" > "$dir/$2.out" 2>&1 || status=$?
  check "$2" "$dir/$2.out" "$status" "qemu-user, $1"
}

main() {
  local arch=${1:?usage: scripts/test/c-tests.sh ARCH [NAME...] | build NAME OUTPUT}
  shift
  tether_arch "$arch"
  local names=("$@") dir=$build_dir/c-tests/$arch lib=$build_dir/lib/$arch
  [ ${#names[@]} -gt 0 ] || mapfile -t names < <(awk 'NF {print $1}' <<< "$table")
  mkdir -p "$dir"
  names=("${names[@]#test_}")
  if [ -z "$CROSS" ]; then
    native_and_memcheck "$dir" "$lib" "${names[@]}"
    return
  fi
  for name in "${names[@]}"; do
    row "$name"
    local static flags
    row_library "$arch"
    if [ "$qemu" = yes ]; then
      EXTRA_CFLAGS="$flags -DTETHER_TEST_UNDER_QEMU" \
        compile "$name" "$dir/test_$name" "${CROSS}gcc" "$static"
      run_qemu "$arch" "$name" "$dir/test_$name"
    else
      echo "$report: SKIPPED, not counted ($arch, qemu-user): it needs ${qemu_lacks[$qemu]}"
    fi
  done
}

# native_and_memcheck DIR LIB NAME...: x86_64. Every test is built first; then the memcheck
# runs go in two lanes of their own, in the background, beside the native runs: all of them
# mostly wait for their timelines (one after the other, c-test took 112 s for 45 s of CPU).
# The native runs measure their pace at start and stretch their figures by it (harness.c),
# as on any loaded machine; the memcheck runs leave timing out. The memcheck lines come
# after the native ones.
native_and_memcheck() {
  local dir=$1 lib=$2 name static flags lane status
  shift 2
  local memchecked=()
  for name in "$@"; do
    row "$name"
    row_library x86_64
    if [ "$library" = shared ]; then
      EXTRA_CFLAGS=$flags compile "$name" "$dir/test_$name" gcc -L"$lib" -ltether \
        -Wl,-rpath,"$(cd "$lib" && pwd)"
    else
      EXTRA_CFLAGS=$flags compile "$name" "$dir/test_$name" gcc "$static"
    fi
    [[ $runs != *memcheck* ]] || memchecked+=("$name")
  done
  rm -f "$dir"/*.memcheck.status
  # Two lanes, the tests dealt in turn: under memcheck they too mostly wait.
  local even=() odd=() i
  for i in "${!memchecked[@]}"; do
    if ((i % 2 == 0)); then even+=("${memchecked[$i]}"); else odd+=("${memchecked[$i]}"); fi
  done
  memcheck_lane "$dir" "${even[@]}" 2> "$dir/memcheck-lane-0.err" &
  lane="$!"
  memcheck_lane "$dir" "${odd[@]}" 2> "$dir/memcheck-lane-1.err" &
  lane+=" $!"
  trap 'for p in $lane; do pkill -P "$p" 2> /dev/null; kill "$p" 2> /dev/null; done || true' EXIT
  for name in "$@"; do
    run_native "$name" "$dir/test_$name"
  done
  # shellcheck disable=SC2086
  wait $lane || true
  trap - EXIT
  cat "$dir"/memcheck-lane-*.err >&2
  for name in "${memchecked[@]}"; do
    status=$(cat "$dir/$name.memcheck.status" 2> /dev/null || echo 1)
    check "$name" "$dir/$name.memcheck" "$status" "valgrind memcheck" "no error, no leak"
  done
}

# vm_build ARCH DIR: every row but the x86_64-only build, cross-built in full into DIR.
vm_build() {
  tether_arch "$1"
  local dir=$2 name static flags
  mkdir -p "$dir"
  for name in $(awk 'NF {print $1}' <<< "$table"); do
    row "$name"
    [ "$qemu" != x86_64 ] || continue
    row_library "$1"
    EXTRA_CFLAGS=$flags compile "$name" "$dir/test_$name" "${CROSS}gcc" "$static"
    echo "test_$name"
  done
}

if [ "${1:-}" = vm-build ]; then
  [ $# -eq 3 ] || { echo "usage: scripts/test/c-tests.sh vm-build ARCH DIR" >&2; exit 2; }
  vm_build "$2" "$3"
elif [ "${1:-}" = build ]; then
  [ $# -eq 3 ] || { echo "usage: scripts/test/c-tests.sh build NAME OUTPUT" >&2; exit 2; }
  default_lib=$build_dir/lib/x86_64
  # shellcheck disable=SC2086
  compile "${2#test_}" "$3" "${CC:-gcc}" \
    ${TETHER_LIB:--L$default_lib -ltether -Wl,-rpath,$(cd "$default_lib" && pwd)}
else
  main "$@"
fi
