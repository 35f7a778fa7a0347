// SPDX-License-Identifier: Apache-2.0
/* The two baselines, each run in a phase of its own on the bench's loop thread, at the
 * loop's policy and with the same busy processes, and nothing else running beside them:
 *
 *  - kernel: an absolute clock_nanosleep loop every interval (cyclictest's way): the
 *    kernel's own wake-up lateness.
 *  - bare:   a heap of deadlines behind one timerfd, as many deadlines per second as the
 *    sessions of the scenario fire, and nothing else (no sockets, no cryptography, no
 *    library): the limit a timer loop on this machine can reach.
 *
 * Run beside the designs (as the kernel baseline used to be, in a process of its own) they
 * queued behind the measured loop when it ran at a real-time policy, and measured that. */
#include "bench.h"

#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

static struct timespec timespec_of(ns_t t) {
  struct timespec ts;
  ts.tv_sec = (time_t)(t / 1000000000);
  ts.tv_nsec = (long)(t % 1000000000);
  return ts;
}

void kernel_phase(ns_t interval, ns_t duration, struct samples *late) {
  ns_t next = now_ns(), end = next + duration;
  while (next < end) {
    next += interval;
    struct timespec ts = timespec_of(next);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
    samples_add(late, now_ns() - next);
  }
}

/* A binary min-heap of due times. Every deadline comes back one period later, as a
   session's heartbeat does. */
struct heap {
  ns_t *due;
  int count;
};

static void heap_down(struct heap *h, int i) {
  for (;;) {
    int least = i, left = 2 * i + 1, right = left + 1;
    if (left < h->count && h->due[left] < h->due[least]) least = left;
    if (right < h->count && h->due[right] < h->due[least]) least = right;
    if (least == i) return;
    ns_t t = h->due[i];
    h->due[i] = h->due[least];
    h->due[least] = t;
    i = least;
  }
}

int bare_phase(int count, ns_t period, ns_t duration, struct samples *late) {
  struct heap h;
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  ns_t start = now_ns(), end = start + duration;
  h.due = malloc((size_t)count * sizeof *h.due);
  h.count = count;
  if (fd < 0 || h.due == NULL) {
    if (fd >= 0) close(fd);
    free(h.due);
    return -1;
  }
  /* Spread over one period, as the sessions' heartbeats are: the heap is built sorted. */
  for (int i = 0; i < count; i++) h.due[i] = start + period + period * i / count;
  while (h.due[0] < end) {
    struct itimerspec when = {{0, 0}, timespec_of(h.due[0])};
    uint64_t expirations;
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &when, NULL);
    if (read(fd, &expirations, sizeof expirations) < 0) continue;
    for (ns_t now = now_ns(); h.due[0] <= now; now = now_ns()) {
      samples_add(late, now - h.due[0]);
      h.due[0] += period;
      heap_down(&h, 0);
    }
  }
  close(fd);
  free(h.due);
  return 0;
}
