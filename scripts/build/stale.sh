# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the scripts that build outside make and reuse what is up to date
# (scripts/test/fuzz.sh, scripts/sanitize/check-c-sanitizers.sh).

# stale OUTPUT INPUT...: true when OUTPUT is missing or older than any INPUT (a file, or
# any file under a directory).
stale() {
  local output=$1
  shift
  [ -e "$output" ] || return 0
  [ -n "$(find "$@" -newer "$output" -print -quit)" ]
}
