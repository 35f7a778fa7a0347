// SPDX-License-Identifier: Apache-2.0
/* The one reader of the monotonic clock, for the driver (through tether_system.h), the edge
   server and the lab (defined in clock.c). A module of its own (CTetherClock, in this
   directory's module map), without tether_system.h's _GNU_SOURCE: a module that imports
   Glibc or Foundation can import it beside them (CTetherSystem's socket types differ from
   theirs under _GNU_SOURCE). */
#ifndef TETHER_CLOCK_H
#define TETHER_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds (it does not advance while the device is suspended). */
uint64_t tether_sys_monotonic_ns(void);

#endif
