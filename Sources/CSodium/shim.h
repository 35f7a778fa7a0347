// SPDX-License-Identifier: Apache-2.0
#ifndef TETHER_CSODIUM_SHIM_H
#define TETHER_CSODIUM_SHIM_H
/* The same feature macros as CTetherSystem's header (tether_system.h): sodium.h reaches
 * <sys/select.h>, whose fd_set names its member after them, and a Swift module importing
 * both C modules refuses two different definitions of one struct. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sodium.h>
#endif
