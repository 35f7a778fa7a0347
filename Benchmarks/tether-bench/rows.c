// SPDX-License-Identifier: Apache-2.0
/* The rows of the report: runs gathered, medians and ranges, validity, printing and
 * results.txt (rows.h). */
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const window_names[3] = {"heartbeats", "churn", "alone"};
const char *const kind_names[ROW_KINDS] = {"tether", "previous", "naive", "kernel", "bare"};

void table_init(struct table *t, int capacity) {
  t->rows = calloc((size_t)capacity, sizeof *t->rows);
  t->count = 0;
  t->capacity = t->rows ? capacity : 0;
}

void table_free(struct table *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

static int same_group(const struct row *a, const struct row *b) {
  return a->sessions == b->sessions && a->load == b->load && a->pattern == b->pattern &&
         a->window == b->window && a->priority == b->priority;
}

void table_add(struct table *t, const struct row *key, const char *policy, const struct measure *m) {
  struct row *r = NULL;
  for (int i = 0; i < t->count && r == NULL; i++) {
    if (same_group(&t->rows[i], key) && t->rows[i].kind == key->kind) r = &t->rows[i];
  }
  if (r == NULL) {
    if (t->count == t->capacity) {
      fprintf(stderr, "tether-bench: more rows than the table holds (%d)\n", t->capacity);
      exit(1);
    }
    r = &t->rows[t->count++];
    *r = *key;
    r->count = 0;
    snprintf(r->policy, sizeof r->policy, "%s", policy);
  } else if (strcmp(r->policy, policy) != 0) {
    snprintf(r->policy, sizeof r->policy, "mixed"); /* runs that got different policies */
  }
  if (r->count < MAX_RUNS) r->runs[r->count++] = *m;
}

/* ---- Medians and ranges ------------------------------------------------------------------ */

enum figure {
  F_FIRED_P50, F_FIRED_P99, F_FIRED_P999, F_FIRED_N, F_OUTSIDE_P50, F_OUTSIDE_P99,
  F_OUTSIDE_P999, F_OUTSIDE_N, F_CPU_DEVICE, F_CPU_PEER, F_CPU_EDGE, F_DATAGRAMS, F_RSS,
  F_DEADLINES, F_WINDOW, F_FALSE, F_ALLOCATIONS, F_COUNT
};
static const char *const figure_names[F_COUNT] = {
  "fired_p50", "fired_p99", "fired_p999", "fired_n", "outside_p50", "outside_p99",
  "outside_p999", "outside_n", "cpu_device", "cpu_peer", "cpu_edge", "datagrams",
  "rss_per_session_b", "deadlines_per_s", "window_s", "false_interrupts", "allocations"};

static double figure(const struct measure *m, enum figure f) {
  switch (f) {
  case F_FIRED_P50: return m->fired.p50;
  case F_FIRED_P99: return m->fired.p99;
  case F_FIRED_P999: return m->fired.p999;
  case F_FIRED_N: return (double)m->fired.count;
  case F_OUTSIDE_P50: return m->outside.p50;
  case F_OUTSIDE_P99: return m->outside.p99;
  case F_OUTSIDE_P999: return m->outside.p999;
  case F_OUTSIDE_N: return (double)m->outside.count;
  case F_CPU_DEVICE: return m->cpu_device;
  case F_CPU_PEER: return m->cpu_peer;
  case F_CPU_EDGE: return m->cpu_edge;
  case F_DATAGRAMS: return (double)m->datagrams;
  case F_RSS: return m->rss_per_session;
  case F_DEADLINES: return m->deadlines_per_s;
  case F_WINDOW: return m->window;
  case F_FALSE: return m->false_interrupts;
  case F_ALLOCATIONS: return (double)m->allocations;
  default: return 0;
  }
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct spread {
  double median, low, high;
};

static struct spread spread_of(const struct row *r, enum figure f) {
  double v[MAX_RUNS];
  struct spread s = {0, 0, 0};
  if (r->count == 0) return s;
  for (int i = 0; i < r->count; i++) v[i] = figure(&r->runs[i], f);
  qsort(v, (size_t)r->count, sizeof v[0], compare_doubles);
  s.low = v[0];
  s.high = v[r->count - 1];
  s.median = r->count % 2 ? v[r->count / 2] : (v[r->count / 2 - 1] + v[r->count / 2]) / 2;
  return s;
}

static double worst(const struct row *r, int outside) {
  double w = 0;
  for (int i = 0; i < r->count; i++) {
    double m = outside ? r->runs[i].outside.max : r->runs[i].fired.max;
    if (m > w) w = m;
  }
  return w;
}

static int fewest_connected(const struct row *r) {
  int least = r->count ? r->runs[0].connected : 0;
  for (int i = 1; i < r->count; i++) {
    if (r->runs[i].connected < least) least = r->runs[i].connected;
  }
  return least;
}

/* ---- Validity ---------------------------------------------------------------------------- */

static struct row *kind_in_group(struct table *t, const struct row *r, int kind) {
  for (int i = 0; i < t->count; i++) {
    if (same_group(&t->rows[i], r) && t->rows[i].kind == kind) return &t->rows[i];
  }
  return NULL;
}

static int real_time_policy(const char *policy) {
  return strncmp(policy, "fifo:", 5) == 0 || strncmp(policy, "rr:", 3) == 0;
}

/* Why the designs of `r`'s group are not a result (NULL: they are). */
static const char *group_fault(struct table *t, const struct row *r) {
  const struct row *tether = kind_in_group(t, r, DESIGN_TETHER), *naive = kind_in_group(t, r, DESIGN_NAIVE);
  for (int i = 0; i < t->count; i++) {
    const struct row *d = &t->rows[i];
    if (same_group(d, r) && d->kind < DESIGN_COUNT && fewest_connected(d) < d->sessions) return "connected";
  }
  if (tether != NULL && naive != NULL) {
    double a = spread_of(tether, F_DATAGRAMS).median, b = spread_of(naive, F_DATAGRAMS).median;
    double larger = a > b ? a : b;
    if (larger <= 0 || (a > b ? a - b : b - a) > 0.05 * larger) return "datagrams";
  }
  return NULL;
}

void table_validate(struct table *t) {
  for (int i = 0; i < t->count; i++) {
    struct row *r = &t->rows[i];
    r->why = NULL;
    if (r->kind < DESIGN_COUNT) r->why = group_fault(t, r);
    else if (spread_of(r, F_FIRED_N).low == 0) r->why = "no_samples";
    /* RT throttling stops a real-time thread at 95 % of a core: a loop near it measures
       the throttle. */
    if (r->why == NULL && real_time_policy(r->policy) && spread_of(r, F_CPU_DEVICE).high >= 0.8)
      r->why = "rt_cpu";
  }
}

/* ---- Output ------------------------------------------------------------------------------ */

static const char *pattern_of(const struct row *r) { return r->pattern < 0 ? "none" : pattern_names[r->pattern]; }

void print_header(void) {
  printf("%-6s %-4s %-10s %-6s %-8s %-8s | %-37s | %-23s | %-17s | %-9s | %s\n", "", "", "", "",
         "", "", "fired - due, us: median of runs", "INTERRUPTED outside, us", "CPU of a core",
         "datagrams", "");
  printf("%-6s %-4s %-10s %-6s %-8s %-8s | %6s %20s %9s | %6s %7s %8s | %5s %5s %5s | %9s | %s\n",
         "n", "load", "window", "cuts", "design", "policy", "p50", "p99 [range]", "p99.9",
         "p50", "p99", "p99.9", "dev", "peer", "edge", "", "B/session, valid");
}

static void print_cpu(double share) {
  if (share < 0) printf("%5s ", "-");
  else printf("%4.1f%% ", 100 * share);
}

void table_print(const struct table *t) {
  for (int i = 0; i < t->count; i++) {
    const struct row *r = &t->rows[i];
    struct spread p99 = spread_of(r, F_FIRED_P99);
    char range[40];
    snprintf(range, sizeof range, "%.1f [%.0f..%.0f]", p99.median, p99.low, p99.high);
    printf("%-6d %-4s %-10s %-6s %-8s %-8s | %6.1f %20s %9.1f | ", r->sessions, load_names[r->load],
           window_names[r->window], pattern_of(r), kind_names[r->kind], r->policy,
           spread_of(r, F_FIRED_P50).median, range, spread_of(r, F_FIRED_P999).median);
    if (r->window == WINDOW_CHURN) {
      printf("%6.0f %7.0f %8.0f | ", spread_of(r, F_OUTSIDE_P50).median,
             spread_of(r, F_OUTSIDE_P99).median, spread_of(r, F_OUTSIDE_P999).median);
    } else {
      printf("%6s %7s %8s | ", "-", "-", "-");
    }
    print_cpu(spread_of(r, F_CPU_DEVICE).median);
    print_cpu(spread_of(r, F_CPU_PEER).median);
    print_cpu(spread_of(r, F_CPU_EDGE).median);
    printf("| %9.0f | ", spread_of(r, F_DATAGRAMS).median);
    struct spread rss = spread_of(r, F_RSS);
    if (rss.median > 0) printf("%.0f ", rss.median);
    printf("%s", r->why ? "INVALID: " : "valid");
    if (r->why) printf("%s", r->why);
    if (r->kind < DESIGN_COUNT && fewest_connected(r) < r->sessions)
      printf(" (%d of %d connected)", fewest_connected(r), r->sessions);
    if (spread_of(r, F_FALSE).median > 0) printf(" (%.0f INTERRUPTED without a cut)", spread_of(r, F_FALSE).median);
    printf("\n");
  }
  fflush(stdout);
}

void table_record(const struct table *t, const struct options *o) {
  char path[512], asked[16];
  FILE *f;
  if (o->out_dir == NULL) return;
  snprintf(path, sizeof path, "%s/results.txt", o->out_dir);
  if ((f = fopen(path, "a")) == NULL) return;
  for (int i = 0; i < t->count; i++) {
    const struct row *r = &t->rows[i];
    priority_text(&o->priorities[r->priority], asked);
    fprintf(f, "row sessions=%d load=%s pattern=%s window=%s design=%s priority=%s policy=%s mlock=%s "
               "runs=%d valid=%s why=%s connected=%d",
            r->sessions, load_names[r->load], pattern_of(r), window_names[r->window],
            kind_names[r->kind], asked, r->policy, o->mlock ? "yes" : "no", r->count,
            r->why ? "no" : "yes", r->why ? r->why : "-",
            r->kind < DESIGN_COUNT ? fewest_connected(r) : r->sessions);
    for (int k = 0; k < F_COUNT; k++) {
      struct spread s = spread_of(r, (enum figure)k);
      fprintf(f, " %s=%.3f %s_lo=%.3f %s_hi=%.3f", figure_names[k], s.median, figure_names[k], s.low,
              figure_names[k], s.high);
    }
    /* fired_scope: every design's figures are the window's (Tether's histogram is reset as
       the window opens). */
    fprintf(f, " fired_worst=%.3f outside_worst=%.3f fired_scope=window\n", worst(r, 0), worst(r, 1));
  }
  fclose(f);
}
