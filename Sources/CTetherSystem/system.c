// SPDX-License-Identifier: Apache-2.0
/* What Swift cannot reach by itself in libc: errno, the calling thread, the one mutex of
   the driver's table of loops, random bytes. */
#include "tether_system.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

inline int tether_sys_errno(void) { return errno; }

inline uintptr_t tether_sys_thread(void) { return (uintptr_t)pthread_self(); }

inline int tether_sys_is_thread(uintptr_t owner) {
  return pthread_equal(pthread_self(), (pthread_t)owner) != 0;
}

/* One mutex for the library: a static of this file, not of an inline function that each
   object file calling it would have copied. */
static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;

void tether_sys_registry_lock(void) { pthread_mutex_lock(&registry_mutex); }

void tether_sys_registry_unlock(void) { pthread_mutex_unlock(&registry_mutex); }

void tether_sys_random(void *bytes, size_t count) { arc4random_buf(bytes, count); }
