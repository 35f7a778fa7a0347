# SPDX-License-Identifier: Apache-2.0
# Cross-compiling for arm-linux-gnueabihf (32-bit Raspberry Pi OS, other armhf images) with
# Debian's cross compiler: apt-get install gcc-arm-linux-gnueabihf, and libev-dev:armhf
# after dpkg --add-architecture armhf.
#
#   cmake -S . -B build-armv7 -DCMAKE_TOOLCHAIN_FILE=<tether>/cmake/toolchains/arm-linux-gnueabihf.cmake \
#         -DCMAKE_PREFIX_PATH=<where make install ARCH=armv7 put Tether>
#
# Libraries are found the Debian multiarch way (/usr/lib/arm-linux-gnueabihf), so no sysroot is
# needed; with a board's sysroot instead, set CMAKE_SYSROOT. Programs built here run under
# qemu-user (CMAKE_CROSSCOMPILING_EMULATOR: ctest and add_test use it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm -L /usr/arm-linux-gnueabihf)
# Programs (code generators) are the host's. Headers, libraries and CMake packages are
# looked for under the cross root first, then where the host's are: Debian's multiarch
# directories keep the architectures apart, and TetherConfigVersion.cmake refuses a Tether
# installed for another architecture.
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
