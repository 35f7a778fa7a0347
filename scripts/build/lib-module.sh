# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the scripts that compile the device library's one Embedded Swift module
# themselves (scripts/build/build-lib.sh, scripts/check/check-abi-signatures.sh,
# scripts/sanitize/check-c-sanitizers.sh), from the repository's root: what that module is.
#   LIB_MODULE_SOURCES   its Swift files: the core (TetherCore), the crypto seam on libsodium
#                        (TetherSodium) and the driver with the C exports (Tether)
#   LIB_MODULE_INCLUDES  the module maps of the C it imports: libev, tether.h, the system
#                        calls, libsodium (sodium.h, Debian's libsodium-dev: /usr/include for
#                        every architecture, the libraries in /usr/lib/MULTIARCH)
LIB_MODULE_SOURCES=$(find Sources/TetherCore Sources/TetherSodium Sources/Tether -name '*.swift' |
  sort)
LIB_MODULE_INCLUDES=(-I Sources/CLibev -I Sources/CTetherABI -I Sources/CTetherSystem/include
  -I Sources/CSodium)
export LIB_MODULE_SOURCES
