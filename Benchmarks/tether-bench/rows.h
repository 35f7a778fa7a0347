// SPDX-License-Identifier: Apache-2.0
/* A row of tether-bench's report: one design (or baseline) in one scenario, window and
 * priority, measured --runs times; every figure is the median of the runs, with their
 * range. A maximum is only ever "worst seen": on a kernel without preemption one run's
 * maximum is the scheduler's, and says nothing of the design. */
#ifndef TETHER_BENCH_ROWS_H
#define TETHER_BENCH_ROWS_H

#include "bench.h"

/* What a row measures over: the heartbeats alone (no cuts), the churn of cuts and
   rejoins, or a baseline's phase alone on the loop thread. */
enum window { WINDOW_HEARTBEATS, WINDOW_CHURN, WINDOW_ALONE };
/* The designs, then the baselines. */
enum { ROW_KERNEL = DESIGN_COUNT, ROW_BARE, ROW_KINDS };

/* One row of one run. */
struct measure {
  struct summary fired, outside; /* microseconds */
  double window, cpu_device, cpu_peer, cpu_edge; /* seconds; shares of one core (-1: none) */
  double rss_per_session, deadlines_per_s;       /* bytes; -1: not measured */
  uint64_t datagrams; /* the peer passed, both ways */
  int connected, false_interrupts;
  long allocations;
};

struct row {
  int sessions, load, pattern, window, kind, priority; /* pattern -1: none */
  char policy[16];     /* applied, as the kernel reported it */
  const char *why;     /* invalid: why (NULL: valid) */
  struct measure runs[MAX_RUNS];
  int count;
};

/* The rows of one scenario (sessions, load), every pattern, window and priority. */
struct table {
  struct row *rows;
  int count, capacity;
};

void table_init(struct table *t, int capacity);
void table_free(struct table *t);
/* Adds one run's measure to its row (made on first use). */
void table_add(struct table *t, const struct row *key, const char *policy, const struct measure *m);
/* Marks rows invalid: a design short of connected sessions in any run, tether's and naive's
   datagrams more than 5 % apart (medians), a real-time loop at 80 % of a core or more, a
   baseline with no samples. Every design of the group shares its verdict. */
void table_validate(struct table *t);
void table_print(const struct table *t);
void table_record(const struct table *t, const struct options *o);
void print_header(void);

extern const char *const window_names[3];
extern const char *const kind_names[ROW_KINDS];

#endif
