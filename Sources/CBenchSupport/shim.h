// SPDX-License-Identifier: Apache-2.0
/* What the Swift benchmarks need from libc beyond Glibc's module. */
#ifndef TETHER_BENCH_SUPPORT_H
#define TETHER_BENCH_SUPPORT_H
#include <malloc.h>
#include <stddef.h>

/* Bytes the allocator has handed out and not had back (glibc's mallinfo2): from its arenas,
   and the large blocks it maps on their own (an array of 100,000 sessions is one). */
static inline size_t tether_bench_heap_in_use(void) {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

#endif
