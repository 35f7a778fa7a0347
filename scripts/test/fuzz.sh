#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libFuzzer targets of Tether (sources in Fuzz/, see Fuzz/README.md).
#
#   scripts/test/fuzz.sh build    builds build/fuzz/fuzz-{decode,link,session,login,edge,capi,rtm} (what changed)
#   scripts/test/fuzz.sh run      each for FUZZ_SECONDS (default 60), from the committed corpus;
#                            prints executions, exec/s, coverage and crashes per target
#   scripts/test/fuzz.sh replay   each over its committed corpus and regression inputs, once
#   scripts/test/fuzz.sh seeds    rewrites Fuzz/corpus/*/ from the seed programs (and, for capi
#                            and rtm, Fuzz/regressions/*/ from the programs of what they found)
#
# Every Swift module the fuzzers reach is compiled with -sanitize=fuzzer,address (coverage
# and AddressSanitizer): TetherCore, TetherEdge, and for fuzz-capi the Embedded build of
# TetherCore + Tether that C hosts link (scripts/build/build-lib.sh's, plus the instrumentation).
# fuzz-capi and fuzz-rtm are one harness (Fuzz/capi/harness.c) with one profile each: the
# channel engine's (Fuzz/capi/fuzz_capi.c) or the login client's (Fuzz/rtm/fuzz_rtm.c), the
# other profile linked in as the companion on the same loop, and the C tests' fake edge
# of protocol version 2 (Tests/c/edge_v2.c, compiled from there, not copied) as their server.
# The edge's cryptography is libsodium's (linked, not instrumented).
# FUZZ_TARGETS="decode session" limits the set.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BUILD_DIR:-build}/fuzz
targets=${FUZZ_TARGETS:-decode link session login edge capi rtm}
seconds=${FUZZ_SECONDS:-60}
swift_flags=(-sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld -package-name tether)
mkdir -p "$out/mod" "$out/obj"

# shellcheck source=scripts/build/stale.sh
. scripts/build/stale.sh

sources() { find "$@" -name '*.swift' | sort; }

build_core() {
  local obj=$out/obj/TetherCore.o
  stale "$obj" Sources/TetherCore || return 0
  echo "fuzz: compiling TetherCore (instrumented)"
  # shellcheck disable=SC2046
  swiftc "${swift_flags[@]}" -wmo -module-name TetherCore -emit-module \
    -emit-module-path "$out/mod/TetherCore.swiftmodule" $(sources Sources/TetherCore) -c -o "$obj"
  touch "$obj" # swiftc leaves an unchanged object's time as it was
}

# The crypto seam on libsodium (TetherSodium), which the edge's protocol version 2 uses.
build_sodium_module() {
  local obj=$out/obj/TetherSodium.o
  stale "$obj" Sources/TetherSodium Sources/CSodium "$out/obj/TetherCore.o" || return 0
  echo "fuzz: compiling TetherSodium (instrumented)"
  # shellcheck disable=SC2046
  swiftc "${swift_flags[@]}" -wmo -module-name TetherSodium -emit-module \
    -emit-module-path "$out/mod/TetherSodium.swiftmodule" -I "$out/mod" -I Sources/CSodium \
    $(sources Sources/TetherSodium) -c -o "$obj"
  touch "$obj"
}

# The edge's logic without its sockets and log (IO, Log): what a datagram reaches.
edge_sources=(Sources/TetherEdge/Auth Sources/TetherEdge/Server Sources/TetherEdge/V2 Sources/TetherEdge/Fleet
  Sources/TetherEdge/Front)

build_edge_module() {
  local obj=$out/obj/TetherEdge.o
  stale "$obj" "${edge_sources[@]}" Sources/CSodium "$out/obj/TetherCore.o" \
    "$out/obj/TetherSodium.o" || return 0
  echo "fuzz: compiling TetherEdge (instrumented)"
  # shellcheck disable=SC2046
  swiftc "${swift_flags[@]}" -wmo -module-name TetherEdge -emit-module \
    -emit-module-path "$out/mod/TetherEdge.swiftmodule" -I "$out/mod" -I Sources/CSodium \
    $(sources "${edge_sources[@]}") -c -o "$obj"
  touch "$obj"
}

build_embedded() {
  local obj=$out/obj/tether-embedded.o
  stale "$obj" Sources/TetherCore Sources/TetherSodium Sources/Tether Sources/CTetherSystem \
    Sources/CLibev Include/tether.h || return 0
  echo "fuzz: compiling the Embedded library (TetherCore + Tether, instrumented)"
  # shellcheck disable=SC2046
  swiftc -enable-experimental-feature Embedded -wmo -parse-as-library -O -g \
    -sanitize=fuzzer,address -module-name Tether -package-name tether -I Sources/CLibev \
    -I Sources/CTetherABI -I Sources/CTetherSystem/include -I Sources/CSodium \
    $(sources Sources/TetherCore Sources/TetherSodium Sources/Tether) -c -o "$out/obj/tether-swift.o"
  # shellcheck disable=SC2046
  ld -r "$out/obj/tether-swift.o" $(scripts/build/csystem.sh "$out/obj" o -O1 -g \
    -fsanitize=fuzzer-no-link,address) -o "$obj"
}

link_swift() { # TARGET EXTRA...
  local target=$1 exe=$out/fuzz-$1 objects=() flags=() argument
  shift
  for argument in "$@"; do
    if [[ $argument == "$out"/obj/*.o ]]; then objects+=("$argument"); else flags+=("$argument"); fi
  done
  # The project's seeded generator (SplitMix64) is compiled in, not written again: cookies
  # and retry jitter are then a function of the input, so every crash replays.
  local shared=(Sources/TetherSim/SeededRandom.swift)
  # fuzz-login checks the same invariants as the login property tests, from one source.
  # The invariants read what the session wrote (RecordedSession, the same as the simulation).
  if [ "$target" = login ]; then
    shared+=(Sources/TetherSim/LoginInvariants.swift Sources/TetherSim/RecordedSession.swift)
  fi
  # fuzz-decode and fuzz-link run protocol version 2 on the null primitives of the
  # TETHER_NULL_CRYPTO build (NullCrypto.swift, compiled into the fuzz binary alone: the
  # TetherSodium they link is the shipped build), so that mutated bytes still open;
  # fuzz-decode reads what the layer hands a session as the simulation's record does.
  if [ "$target" = decode ] || [ "$target" = link ]; then
    shared+=(Sources/TetherSodium/NullCrypto.swift)
    flags+=(-D TETHER_NULL_CRYPTO)
  fi
  if [ "$target" = decode ]; then shared+=(Sources/TetherSim/RecordedSession.swift); fi
  stale "$exe" Fuzz/Support "Fuzz/$target" "${shared[@]}" "${objects[@]}" || return 0
  echo "fuzz: linking fuzz-$target"
  # Compiled whole-module, then linked: the shared driver (Fuzz/Support) is generic over
  # the profile, and is specialized for the target's only so (fuzz-login ran 1.5 times
  # slower without).
  # shellcheck disable=SC2046
  swiftc "${swift_flags[@]}" -wmo -module-name "fuzz_$target" -I "$out/mod" "${flags[@]}" \
    $(sources Fuzz/Support "Fuzz/$target") "${shared[@]}" -c -o "$out/obj/fuzz-$target.o"
  swiftc "${swift_flags[@]}" "$out/obj/fuzz-$target.o" "$@" -o "$exe"
  touch "$exe"
}

# link_c TARGET: fuzz-capi or fuzz-rtm, C over the instrumented Embedded library.
link_c() {
  local target=$1
  if stale "$out/fuzz-$target" Fuzz/capi Fuzz/rtm Tests/c/edge_v2.c Tests/c/edge_v2.h Tests/c/wire_v2.c Tests/c/wire_v2.h \
    "$out/obj/tether-embedded.o"; then
    echo "fuzz: linking fuzz-$target"
    local profile=channel_profile
    [ "$target" = rtm ] && profile=login_profile
    clang -fuse-ld=lld -fsanitize=fuzzer,address -g -O1 -std=c99 -Wall -Wextra -Wpedantic \
      -Werror -IInclude -ITests/c -DTETHER_FUZZ_PROFILE=$profile Fuzz/capi/harness.c \
      Fuzz/capi/fuzz_capi.c Fuzz/rtm/fuzz_rtm.c Tests/c/edge_v2.c Tests/c/wire_v2.c \
      "$out/obj/tether-embedded.o" -lsodium -lev -lm \
      -lpthread -o "$out/fuzz-$target"
  fi
}

# wants TARGET: whether TARGET is one of the targets asked for.
wants() { [[ " $targets " == *" $1 "* ]]; }

# link_edge_side TARGET: a fuzzer over the edge's module (decode, link, edge).
link_edge_side() {
  link_swift "$1" "$out/obj/TetherEdge.o" "$out/obj/TetherSodium.o" "$out/obj/TetherCore.o" \
    -I Sources/CSodium -lsodium
}

# Every compile here is one -wmo job on one core, so the build runs in two lanes, in three
# steps, each waiting for what it needs: TetherCore beside the Embedded library; then
# TetherSodium and TetherEdge beside the fuzzers over TetherCore alone and the C ones; then
# the fuzzers over the edge, two at a time. decode and link are both sides of version 2:
# the device's (TetherCore) and the edge's decoders (TetherEdge), on libsodium's BLAKE2b
# and the null seam (Fuzz/Support/NullSeam.swift).
build() {
  local target lane=
  for target in $targets; do
    case $target in
      decode | link | session | login | edge | capi | rtm) ;;
      *) echo "fuzz: unknown target '$target'" >&2; exit 2 ;;
    esac
  done
  if wants capi || wants rtm; then
    build_embedded &
    lane=$!
  fi
  build_core
  [ -z "$lane" ] || wait "$lane"
  (
    for target in session login; do
      if wants $target; then link_swift $target "$out/obj/TetherCore.o"; fi
    done
    for target in capi rtm; do
      if wants $target; then link_c $target; fi
    done
  ) &
  lane=$!
  if wants decode || wants link || wants edge; then
    build_sodium_module
    build_edge_module
  fi
  wait "$lane"
  lane=
  for target in decode link edge; do
    wants $target || continue
    if [ -z "$lane" ]; then
      link_edge_side $target &
      lane=$!
    else
      link_edge_side $target
    fi
  done
  [ -z "$lane" ] || wait "$lane"
}

# The figures of one libFuzzer log: executions, exec/s, cov, ft, corpus size.
summarize() { # TARGET LOG CRASHES
  awk -v target="$1" -v crashes="$3" '
    /^#[0-9]+/ { for (i = 1; i <= NF; i++) {
        if ($i == "cov:") cov = $(i + 1); if ($i == "ft:") ft = $(i + 1)
        if ($i == "corp:") corp = $(i + 1) } }
    /stat::number_of_executed_units:/ { execs = $2 }
    /stat::average_exec_per_sec:/ { rate = $2 }
    END { printf "fuzz-%-8s %10s execs %7s exec/s  cov %5s  ft %6s  corpus %-12s crashes %d\n",
      target, execs, rate, cov, ft, corp, crashes }' "$2"
}

run() {
  local failed=0
  for target in $targets; do
    local corpus=$out/corpus/$target crashes=$out/crashes/$target log=$out/fuzz-$target.log
    mkdir -p "$corpus" "$crashes"
    set +e
    "$out/fuzz-$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
      -artifact_prefix="$crashes/" "$corpus" "Fuzz/corpus/$target" > "$log" 2>&1
    set -e
    local found
    found=$(find "$crashes" -type f | wc -l)
    summarize "$target" "$log" "$found"
    if [ "$found" -gt 0 ]; then
      failed=1
      find "$crashes" -type f | sed 's/^/  crash input: /'
      grep -m3 -E 'ERROR|property violated|Fatal error' "$log" | sed 's/^/  /' || true
    fi
  done
  echo "fuzz: logs in $out/fuzz-*.log, grown corpora in $out/corpus/"
  return $failed
}

replay() {
  for target in $targets; do
    local dirs=("Fuzz/corpus/$target") log=$out/replay-$target.log
    [ -d "Fuzz/regressions/$target" ] && dirs+=("Fuzz/regressions/$target")
    "$out/fuzz-$target" -runs=0 "${dirs[@]}" > "$log" 2>&1 || {
      cat "$log"
      echo "fuzz-replay: fuzz-$target failed on a committed input" >&2
      exit 1
    }
    echo "fuzz-replay: fuzz-$target ran $(find "${dirs[@]}" -type f | wc -l) committed inputs"
  done
}

seeds() {
  for target in $targets; do
    rm -rf "Fuzz/corpus/$target"
    mkdir -p "Fuzz/corpus/$target"
    TETHER_FUZZ_WRITE_SEEDS="Fuzz/corpus/$target" "$out/fuzz-$target"
    echo "fuzz: Fuzz/corpus/$target: $(find "Fuzz/corpus/$target" -type f | wc -l) seeds"
    if [ "$target" = capi ] || [ "$target" = rtm ]; then
      mkdir -p "Fuzz/regressions/$target"
      TETHER_FUZZ_WRITE_REGRESSIONS="Fuzz/regressions/$target" "$out/fuzz-$target"
      echo "fuzz: Fuzz/regressions/$target: $(find "Fuzz/regressions/$target" -type f | wc -l) inputs"
    fi
  done
}

case ${1:-run} in
  build) build ;;
  run) build && run ;;
  replay) build && replay ;;
  seeds) build && seeds ;;
  *) echo "usage: scripts/test/fuzz.sh build|run|replay|seeds" >&2; exit 2 ;;
esac
