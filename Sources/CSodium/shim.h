// SPDX-License-Identifier: Apache-2.0
#ifndef TETHER_CSODIUM_SHIM_H
#define TETHER_CSODIUM_SHIM_H
/* Strict POSIX for sodium.h's system headers, so that this module defines no fd_set:
 * <sys/types.h> brings <sys/select.h> in only with the default (misc) features, and
 * fd_set names its member after the feature macros. Glibc's Swift module (default
 * features) and CTetherSystem's (_GNU_SOURCE) each define it their own way, and a Swift
 * module that loads this one beside either refused two definitions of one struct (a
 * fresh build of the driver failed; an incremental one hid it). sodium.h needs nothing
 * past POSIX. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <sodium.h>
#endif
