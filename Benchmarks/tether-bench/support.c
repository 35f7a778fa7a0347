// SPDX-License-Identifier: Apache-2.0
/* Samples and percentiles, shared memory, the busy processes, and what /proc says of a
 * process (CPU time, resident memory). */
#include "bench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>


struct shared *shm;
ns_t *last_to_device, *cut_phase;

void samples_init(struct samples *s, size_t capacity) {
  s->values = calloc(capacity ? capacity : 1, sizeof *s->values);
  s->count = 0;
  s->capacity = s->values ? capacity : 0;
}

void samples_add(struct samples *s, int64_t value) {
  if (s->count < s->capacity) s->values[s->count++] = value;
}

void samples_free(struct samples *s) {
  free(s->values);
  memset(s, 0, sizeof *s);
}

static int compare(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The value at rank ceil(q * n): at least a fraction q of the samples are at most it. */
static double at_rank(const struct samples *s, double q) {
  size_t rank = (size_t)(q * (double)s->count + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > s->count) rank = s->count;
  return (double)s->values[rank - 1] / 1e3;
}

struct summary summarize(struct samples *s) {
  struct summary out;
  memset(&out, 0, sizeof out);
  if (s->count == 0) return out;
  qsort(s->values, s->count, sizeof *s->values, compare);
  out.count = s->count;
  out.p50 = at_rank(s, 0.5);
  out.p99 = at_rank(s, 0.99);
  out.p999 = at_rank(s, 0.999);
  out.max = (double)s->values[s->count - 1] / 1e3;
  out.min = (double)s->values[0] / 1e3;
  return out;
}

void *shared_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("tether-bench: mmap");
    exit(1);
  }
  return p;
}

void shared_init(int sessions) {
  if (shm == NULL) shm = shared_alloc(sizeof *shm);
  if (last_to_device != NULL) {
    munmap(last_to_device, (size_t)shm->sessions * sizeof(ns_t));
    munmap(cut_phase, (size_t)shm->sessions * sizeof(ns_t));
  }
  /* The stop flag and the datagram count belong to the bench, not to one design. */
  shm->sessions = sessions;
  shm->hold_from = shm->release_at = shm->heal_at = 0;
  shm->cut_period = shm->cut_length = 0;
  shm->cut_count = 0;
  last_to_device = shared_alloc((size_t)sessions * sizeof(ns_t));
  cut_phase = shared_alloc((size_t)sessions * sizeof(ns_t));
}

/* The start of the steady cut of session `index` that began at or before `now` (0: none). */
static ns_t steady_cut_start(int index, ns_t now) {
  ns_t phase = load_ns(&cut_phase[index]), period = load_ns(&shm->cut_period);
  if (phase == 0 || period <= 0 || now < phase) return 0;
  int64_t k = (now - phase) / period;
  int64_t count = __atomic_load_n(&shm->cut_count, __ATOMIC_RELAXED);
  if (k >= count) k = count - 1;
  return phase + k * period;
}

int is_cut(int index, ns_t now) {
  ns_t release = load_ns(&shm->release_at);
  if (release && now >= release && now < load_ns(&shm->heal_at)) return 1;
  ns_t start = steady_cut_start(index, now);
  return start && now < start + load_ns(&shm->cut_length);
}

ns_t cut_explaining(int index, ns_t last, ns_t now) {
  ns_t release = load_ns(&shm->release_at);
  if (release && now >= release && last <= load_ns(&shm->heal_at)) return release;
  ns_t start = steady_cut_start(index, now);
  if (start && last <= start + load_ns(&shm->cut_length)) return start;
  return 0;
}

int set_slice(ns_t slice, int nice) {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.flags = 1; /* SCHED_FLAG_RESET_ON_FORK: children start at the default policy */
  attr.nice = nice;
  attr.runtime = (uint64_t)slice;
  return (int)syscall(SYS_sched_setattr, 0, &attr, 0);
}

void load_start(int count, pid_t *pids) {
  for (int i = 0; i < count; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      volatile uint64_t spin = 0;
      prctl(PR_SET_NAME, "bench-load");
      priority_child_default(); /* never a real-time spinner */
      for (;;) spin++;
    }
  }
}

void children_stop(pid_t *pids, int count) {
  for (int i = 0; i < count; i++) {
    if (pids[i] > 0) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], NULL, 0);
      pids[i] = 0;
    }
  }
}

double cpu_seconds(pid_t pid) {
  char path[64], line[1024];
  struct timespec ts;
  /* This process: to the nanosecond (/proc counts in ticks of 10 ms, more than a short
     window's whole CPU). */
  if (pid == 0 && clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  unsigned long utime, stime;
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/stat", pid ? (int)pid : (int)getpid());
  f = fopen(path, "r");
  if (f == NULL) return -1;
  if (fgets(line, sizeof line, f) == NULL) {
    fclose(f);
    return -1;
  }
  fclose(f);
  /* Fields 14 and 15, after the command name in parentheses (which may hold spaces). */
  char *p = strrchr(line, ')');
  if (p == NULL ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) {
    return -1;
  }
  return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double resident_bytes(void) { return resident_bytes_of(0); }

double resident_bytes_of(pid_t pid) {
  char line[256], path[64];
  double kib = -1;
  FILE *f;
  if (pid) snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  else snprintf(path, sizeof path, "/proc/self/status");
  f = fopen(path, "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmRSS: %lf kB", &kib) == 1) break;
  }
  fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}
