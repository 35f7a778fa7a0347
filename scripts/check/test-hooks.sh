#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shipped library carries no test hook: neither libtether.so.0 nor any member of
# libtether.a has a tether_test_* symbol (the exports of Tests/c/tether_test_crypto.h), a
# symbol of the seeded stream or of the null primitives (Sources/TetherSodium/SeededStream.swift,
# NullCrypto.swift: their Swift names hold the type's name), or a reference to libsodium's
# randombytes_buf_deterministic (the seeded stream's source). A device whose random bytes
# came from a seed, or whose AEAD were null, would have no security at all, and nothing in
# its behaviour would show it.
#
# So that the check is known to see what it looks for, the test-only builds given after the
# shipped one must be caught by it: the test-crypto build exports tether_test_random_seed
# and references randombytes_buf_deterministic; the null-crypto build exports
# tether_test_null_crypto, its marker.
#
# Usage: scripts/check/test-hooks.sh SHIPPED_DIR [TEST_CRYPTO_DIR [NULL_CRYPTO_DIR]]
#   (each a build/lib*/ARCH directory holding libtether.so.0 and libtether.a; NM names the
#   architecture's nm)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] && [ $# -le 3 ] ||
  { echo "usage: test-hooks.sh SHIPPED_DIR [TEST_CRYPTO_DIR [NULL_CRYPTO_DIR]]" >&2; exit 2; }
nm=${NM:-nm}
hooks='tether_test_|SeededStream|NullCrypto|randombytes_buf_deterministic'

# symbols DIR: every symbol name of its libtether.so.0 (dynamic and static tables, defined
# or referenced) and of every member of its libtether.a, one a line.
symbols() {
  local dir=$1
  {
    "$nm" -D "$dir/libtether.so.0"
    "$nm" "$dir/libtether.so.0" 2> /dev/null || true  # no .symtab once stripped
    "$nm" "$dir/libtether.a"
  } | awk 'NF >= 2 { print $NF }' | sort -u
}

for dir in "$@"; do
  for file in "$dir/libtether.so.0" "$dir/libtether.a"; do
    [ -f "$file" ] || { echo "test-hooks: no $file" >&2; exit 1; }
  done
done
shipped=$(symbols "$1" | grep -E "$hooks" || true)
if [ -n "$shipped" ]; then
  echo "test-hooks: $1 is a test-only build, not the shipped library: it has" >&2
  echo "$shipped" | sed 's/^/  /' >&2
  exit 1
fi
checked="$1: no test hook"

# expect DIR SYMBOL...: the test-only build in DIR has each SYMBOL (the check sees it).
expect() {
  local dir=$1 found
  shift
  found=$(symbols "$dir")
  for symbol in "$@"; do
    grep -qxF "$symbol" <<< "$found" ||
      { echo "test-hooks: $dir lacks $symbol: this check could not tell it from the shipped library" >&2
        exit 1; }
  done
  checked+="; $dir: caught ($*)"
}
[ $# -ge 2 ] && expect "$2" tether_test_random_seed randombytes_buf_deterministic
[ $# -ge 3 ] && expect "$3" tether_test_null_crypto
echo "test-hooks: $checked"
