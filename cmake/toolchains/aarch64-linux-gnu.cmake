# SPDX-License-Identifier: Apache-2.0
# Cross-compiling for aarch64-linux-gnu (64-bit Raspberry Pi OS, Debian arm64 boards) with
# Debian's cross compiler: apt-get install gcc-aarch64-linux-gnu, and libev-dev:arm64 after
# dpkg --add-architecture arm64.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=<tether>/cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DCMAKE_PREFIX_PATH=<where make install ARCH=aarch64 put Tether>
#
# Libraries are found the Debian multiarch way (/usr/lib/aarch64-linux-gnu), so no sysroot is
# needed; with a board's sysroot instead, set CMAKE_SYSROOT. Programs built here run under
# qemu-user (CMAKE_CROSSCOMPILING_EMULATOR: ctest and add_test use it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Programs (code generators) are the host's. Headers, libraries and CMake packages are
# looked for under the cross root first, then where the host's are: Debian's multiarch
# directories keep the architectures apart, and TetherConfigVersion.cmake refuses a Tether
# installed for another architecture.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
