#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tether-edge as an operator gets it (make test): the installed binary is under 16 MB and
# self-contained but for the fleet's bus (it needs the C library family and libnats with
# what libnats needs: libssl, libcrypto, libprotobuf-c; no libswift*, libFoundation*,
# libicu*: Debian ships libnats shared only, and the .deb's Depends name it), and
# contrib/tether-edge.service is a unit systemd takes whose ExecStart= flags tether-edge
# accepts.
# Usage: scripts/check/edge-check.sh PATH/TO/INSTALLED/tether-edge
set -euo pipefail
EDGE=${1:?usage: $0 PATH/TO/tether-edge}
LIMIT=$((16 * 1024 * 1024))

size=$(stat -c %s "$EDGE")
if ((size >= LIMIT)); then
  echo "edge-check: $EDGE is $size bytes, over the bound of $LIMIT" >&2
  exit 1
fi
libraries=$(ldd "$EDGE" | awk '{print $1}')
unexpected=$(grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libutil\.so|libgcc_s\.so|libstdc\+\+\.so|libnats\.so|libssl\.so|libcrypto\.so|libprotobuf-c\.so)' <<<"$libraries" || true)
if [[ -n $unexpected ]]; then
  echo "edge-check: $EDGE needs more than the C library family and libnats's:" $unexpected >&2
  exit 1
fi

# The unit's ExecStart=, with the example environment file's values and the installed
# binary, checked by tether-edge's own parser (--check-config: no socket is opened); then
# the fleet drop-in's (its last ExecStart=, with fleet.env's values too).
UNIT=contrib/tether-edge.service
DROPIN=contrib/tether-edge-fleet.conf
check_exec() { # FILE: its last ExecStart= line is one tether-edge accepts
  local line words word name arguments=() answer
  line=$(sed -n 's/^ExecStart=\(.\)/\1/p' "$1" | tail -1)
  [[ -n $line ]] || { echo "edge-check: no ExecStart= in $1" >&2; exit 1; }
  line=${line//%d//run/credentials/tether-edge.service}
  read -r -a words <<<"$line"
  for word in "${words[@]:1}"; do
    if [[ $word =~ ^\$\{([A-Z_]+)\}(.*)$ ]]; then
      name=${BASH_REMATCH[1]}
      [[ -n ${!name:-} ]] || { echo "edge-check: $1 uses \${$name}, set nowhere" >&2; exit 1; }
      arguments+=("${!name}${BASH_REMATCH[2]}")
    else
      arguments+=("$word")
    fi
  done
  answer=$("$EDGE" "${arguments[@]}" --check-config) ||
    { echo "edge-check: tether-edge refuses the ExecStart= of $1" >&2; exit 1; }
  [[ $answer == "configuration ok" ]] || { echo "edge-check: $answer" >&2; exit 1; }
}
set -a
# shellcheck source=/dev/null
source contrib/tether-edge.env
# shellcheck source=/dev/null
source contrib/fleet.env
TETHER_LOG_LEVEL=$(sed -n 's/^Environment=TETHER_LOG_LEVEL=//p' "$UNIT")
set +a
check_exec "$UNIT"
check_exec "$DROPIN"

# systemd's own check of the unit, with ExecStart= pointed at the installed binary.
verified="systemd-analyze not installed: unit not verified by systemd"
if command -v systemd-analyze >/dev/null; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  sed "s|^ExecStart=/usr/local/bin/tether-edge|ExecStart=$(realpath "$EDGE")|" "$UNIT" \
    >"$dir/tether-edge.service"
  if ! output=$(systemd-analyze verify "$dir/tether-edge.service" 2>&1) || [[ -n $output ]]; then
    echo "edge-check: systemd-analyze verify $UNIT:" >&2
    echo "$output" >&2
    exit 1
  fi
  verified="systemd-analyze verify clean"
fi
echo "edge-check: tether-edge $size bytes (< $LIMIT), needs only" $(sed 's/\.so.*//' <<<"$libraries" | sed 's|.*/||' | sort -u) "; $UNIT and $DROPIN ExecStart accepted; $verified"
