#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source and build file git tracks says its licence in an SPDX line near its top
# (Apache-2.0, the LICENSE file), so a file copied out of the tree still carries it. Prints
# the files that do not, and fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
missing=()
while IFS= read -r file; do
  head -n 3 "$file" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("$file")
done < <(git ls-files -- '*.swift' '*.c' '*.h' '*.sh' '*.py' '*.modulemap' '*.cmake' '*.in' \
  '*.supp' Makefile .ci/run 'contrib/*.service' 'contrib/*.env' | grep -vE '^Fuzz/(corpus|regressions)/')
if [ ${#missing[@]} -gt 0 ]; then
  printf 'licence: no SPDX-License-Identifier line in %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "licence: every source and build file says Apache-2.0 (SPDX)"
