#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compiles the C of CTetherSystem (Sources/CTetherSystem/*.c: the driver's system calls) with
# the strict flags of every C file of the project and the clang flags given, one output per
# file, and prints the outputs' paths, one a line. The builds of the Embedded library that do
# not go through SwiftPM call it: scripts/build/build-lib.sh (LLVM bitcode, linked into the Swift
# module's IR), scripts/test/fuzz.sh and scripts/sanitize/check-c-sanitizers.sh (instrumented objects).
# Usage: scripts/build/csystem.sh OUT_DIR EXT [CLANG_FLAG...]   (EXT: o, or bc with -emit-llvm)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: csystem.sh OUT_DIR EXT [CLANG_FLAG...]}
ext=${2:?usage: csystem.sh OUT_DIR EXT [CLANG_FLAG...]}
shift 2
clang=$(dirname "$(readlink -f "$(command -v swiftc)")")/clang
mkdir -p "$out"
for source in Sources/CTetherSystem/*.c; do
  output=$out/csystem-$(basename "$source" .c).$ext
  "$clang" -c -std=c99 -Wall -Wextra -Wpedantic -Werror "$@" -I Sources/CTetherSystem/include \
    "$source" -o "$output"
  echo "$output"
done
