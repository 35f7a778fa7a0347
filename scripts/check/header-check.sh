#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Include/tether.h compiles on its own as strict C99 (the flags every C file of the project
# and its examples use) and as C++11: what a C or C++ host includes must need nothing else.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BUILD_DIR:-build}/header-check
mkdir -p "$out"
printf '#include "tether.h"\nint main(void) { return 0; }\n' > "$out/main.c"
gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -IInclude -c "$out/main.c" -o "$out/c.o"
g++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -IInclude -x c++ -c "$out/main.c" -o "$out/cxx.o"
echo "header: Include/tether.h compiles as C99 (-std=c99 -Wall -Wextra -Wpedantic -Werror) and as C++11"
