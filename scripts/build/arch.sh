# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the packaging scripts: what each ARCH of the Makefile is called elsewhere.
#   tether_arch ARCH   sets MULTIARCH (Debian's library directory), DEBARCH (a package's
#                      Architecture), POINTER_BYTES, CROSS (the tool prefix), ELF_MACHINE (as
#                      readelf -h prints it) and QEMU (how to run its programs here; empty
#                      for the host), or fails with the list of known ones.
tether_arch() {
  case "$1" in
    x86_64)
      MULTIARCH=x86_64-linux-gnu DEBARCH=amd64 POINTER_BYTES=8 CROSS=
      ELF_MACHINE='Advanced Micro Devices X86-64' QEMU=() ;;
    aarch64)
      MULTIARCH=aarch64-linux-gnu DEBARCH=arm64 POINTER_BYTES=8 CROSS=aarch64-linux-gnu-
      ELF_MACHINE=AArch64 QEMU=(qemu-aarch64 -L /usr/aarch64-linux-gnu) ;;
    armv7)
      MULTIARCH=arm-linux-gnueabihf DEBARCH=armhf POINTER_BYTES=4 CROSS=arm-linux-gnueabihf-
      ELF_MACHINE=ARM QEMU=(qemu-arm -L /usr/arm-linux-gnueabihf) ;;
    *)
      echo "unknown ARCH '$1' (known: x86_64, aarch64, armv7)" >&2
      return 2 ;;
  esac
}
