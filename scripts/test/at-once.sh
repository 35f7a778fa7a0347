# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the scripts that run a few things at once because they mostly wait
# (scripts/test/parts.sh's groups, scripts/sanitize/check-c-sanitizers.sh's two kinds).

# at_once COMMAND ENDED NAME...: runs `COMMAND NAME` for every NAME at once, each one's
# output (stdout and stderr) into a file of its own; then, in order, waits for each, prints
# its output whole (nothing interleaves) and runs `ENDED NAME STATUS` (`:` for nothing).
# Returns 1 when any failed.
at_once() {
  local command=$1 ended=$2 logs=() pids=() name i status failed=0
  shift 2
  for name in "$@"; do
    logs+=("$(mktemp)")
    "$command" "$name" > "${logs[-1]}" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    status=0
    wait "${pids[$i]}" || status=$?
    cat "${logs[$i]}"
    rm -f "${logs[$i]}"
    "$ended" "${@:i+1:1}" "$status"
    [ "$status" -eq 0 ] || failed=1
  done
  return "$failed"
}
