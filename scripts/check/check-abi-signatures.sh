#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every function of Include/tether.h is implemented in Swift with its whole C signature, as
# the compiler sees it, and nothing else is exported.
#
# A header that says `int` over an exported Swift function that returns nothing compiles
# and links without a word, and C callers then read whatever the register held: comparing
# names (scripts/check/abi-symbols.sh) cannot see it. So each function of tether.h is defined in
# Sources/Tether as `@c @implementation public func NAME(...)` (SE-0495): the compiler
# finds NAME's declaration in tether.h (through the CTetherABI module) and refuses to
# compile when the Swift signature differs from it in any parameter or the result: int
# or void, a handle's type (Sources/CTetherABI/handles.h makes the two handles distinct
# types to Swift), const or not, a pointer's optionality. This script checks that every
# export goes that way (no @_cdecl, no @c without @implementation, one per function of the
# header, none beside them), then has the compiler type-check the library as
# scripts/build/build-lib.sh compiles it (Embedded Swift, one module), which is the comparison.
# The test-only builds' exports (Tests/c/tether_test_crypto.h, under TETHER_TEST_CRYPTO and
# TETHER_NULL_CRYPTO) are checked the same way: the library is type-checked once more with
# each macro, against that header.
#
# Usage: scripts/check/check-abi-signatures.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
failed=0
# shellcheck source=scripts/build/lib-module.sh
. scripts/build/lib-module.sh
declared=$(grep -oE '\btether_[a-z0-9_]+\(' Include/tether.h | tr -d '(' | sort -u)
test_declared=$(grep -oE '\btether_test_[a-z0-9_]+\(' Tests/c/tether_test_crypto.h | tr -d '(' |
  sort -u)
sources=$(find Sources/Tether -name '*.swift' | sort)
# shellcheck disable=SC2086
if grep -nE '^[[:space:]]*@_cdecl' $sources; then
  echo "check-abi-signatures: @_cdecl above (its signature is not checked): use @c @implementation" >&2
  failed=1
fi
# Every @c attribute is followed, on its line, by @implementation.
# shellcheck disable=SC2086
unchecked=$(grep -nE '^[[:space:]]*@c([[:space:](]|$)' $sources |
  grep -vE ':[[:space:]]*@c @implementation$' || true)
if [ -n "$unchecked" ]; then
  echo "check-abi-signatures: @c without @implementation (not checked against tether.h):" >&2
  echo "$unchecked" >&2
  failed=1
fi
# shellcheck disable=SC2086
implemented=$(grep -hA1 '@c @implementation' $sources |
  sed -nE 's/^[[:space:]]*public func (tether_[a-z0-9_]+)\(.*/\1/p' | sort)
all_declared=$(printf '%s\n' "$declared" "$test_declared" | sort)
if [ "$implemented" != "$all_declared" ]; then
  echo "check-abi-signatures: the functions of tether.h and tether_test_crypto.h and the" \
    "@c @implementation functions differ:" >&2
  diff <(echo "$all_declared") <(echo "$implemented") >&2 || true
  failed=1
fi
[ "$failed" = 0 ] || exit 1
# The comparison itself: a signature that differs from tether.h is a compile error.
for macro in "" TETHER_TEST_CRYPTO TETHER_NULL_CRYPTO; do
  defines=()
  [ -n "$macro" ] && defines=(-D "$macro" -Xcc "-D$macro" -I Tests/c)
  # shellcheck disable=SC2086
  swiftc -enable-experimental-feature Embedded -wmo -parse-as-library -typecheck \
    -module-name Tether -package-name tether "${LIB_MODULE_INCLUDES[@]}" "${defines[@]}" \
    $LIB_MODULE_SOURCES
done
echo "check-abi-signatures: the $(echo "$declared" | wc -l) functions of tether.h (and the" \
  "$(echo "$test_declared" | wc -l) of the test-only builds) are @c @implementation functions" \
  "whose C signatures the compiler matched with the header"
