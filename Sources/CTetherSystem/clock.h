/* The one reader of the monotonic clock, for the driver (through shim.h), the edge server
   and the lab. A module of its own (CTetherClock, in this directory's module map), built
   without shim.h's _GNU_SOURCE: a module that imports Glibc or Foundation can import it
   beside them (CTetherSystem's socket types differ from theirs under _GNU_SOURCE). */
#ifndef TETHER_SYSTEM_CLOCK_H
#define TETHER_SYSTEM_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (it does not advance while the device is suspended). */
static inline uint64_t tether_sys_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
