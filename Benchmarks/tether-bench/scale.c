// SPDX-License-Identifier: Apache-2.0
/* --direct: the scale rows. Tether's engines on one loop straight to a real tether-edge
 * (no peer, no relay, no cuts: the heartbeats alone), up to 100,000 sessions. Only Tether:
 * the libev designs need a socket per session, and this machine gives a process 20,000
 * descriptors and loopback 28,232 ephemeral ports; Tether's sessions share one socket per
 * (loop, server address). Each row: the sessions joined, then a window of heartbeats with
 * the device's and the edge's CPU, the datagrams both ways, the device's resident memory per
 * session, and the kernel's memory beside it (which RSS does not show). */
#include "bench.h"
#include "rows.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One run of one scale row. */
struct scale_run {
  double join_s, window_s, cpu_device, cpu_edge, datagrams_per_s;
  double rss_per_session, edge_rss_per_session, slab_per_session, udp_buffers, descriptors;
  double fired_p50, fired_p99, fired_p999;
  int connected, interrupts;
};

enum { SCALE_FIGURES = 14 };
static const char *const scale_names[SCALE_FIGURES] = {
  "join_s", "window_s", "cpu_device", "cpu_edge", "datagrams_per_s", "rss_per_session_b",
  "edge_rss_per_session_b", "kernel_slab_per_session_b", "udp_buffers_b", "descriptors", "fired_p50", "fired_p99",
  "fired_p999", "interrupts"};

static double scale_figure(const struct scale_run *r, int k) {
  const double v[SCALE_FIGURES] = {
    r->join_s, r->window_s, r->cpu_device, r->cpu_edge, r->datagrams_per_s, r->rss_per_session,
    r->edge_rss_per_session, r->slab_per_session, r->udp_buffers, r->descriptors, r->fired_p50, r->fired_p99,
    r->fired_p999, (double)r->interrupts};
  return v[k];
}

/* A value of /proc/meminfo ("Slab:"), in bytes; -1 if unknown. System-wide: what the kernel
   holds for everyone, read before and after, so another process's work is in it too. */
static double meminfo_bytes(const char *key) {
  char line[256];
  double kib = -1;
  size_t n = strlen(key);
  FILE *f = fopen("/proc/meminfo", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, n) == 0 && sscanf(line + n, " %lf kB", &kib) == 1) break;
  }
  fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

/* The memory of every UDP socket's queued datagrams (/proc/net/sockstat "UDP: ... mem N",
   in pages), in bytes; -1 if unknown. */
static double udp_buffer_bytes(void) {
  char line[256];
  long pages = -1, inuse;
  FILE *f = fopen("/proc/net/sockstat", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "UDP: inuse %ld mem %ld", &inuse, &pages) == 2) break;
  }
  fclose(f);
  return pages < 0 ? -1 : (double)pages * (double)sysconf(_SC_PAGESIZE);
}

static int descriptors_open(void) {
  int n = -2; /* "." and ".." */
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) return -1;
  while (readdir(dir) != NULL) n++;
  closedir(dir);
  return n - 1; /* the directory's own descriptor */
}

/* Datagrams both ways, every engine's. */
static uint64_t datagrams_of(struct fleet *f) {
  uint64_t total = 0;
  for (int i = 0; i < f->count; i++) {
    tether_engine_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    if (tether_engine_get_stats(fleet_engine(f, i), &st) == TETHER_OK) total += st.datagrams_in + st.datagrams_out;
  }
  return total;
}

static void scale_once(const struct options *o, char **channels, char **tokens, int sessions,
                       struct scale_run *r) {
  ns_t heartbeat = MS(o->heartbeat_ms);
  struct thresholds t = {heartbeat, 4 * heartbeat, MS(5000)};
  /* Joins spread at 2,000 a second: each is a handshake (X25519 operations on either side,
     about 0.1 ms of a core each), and the device and the edge share two cores with the
     heartbeats of the sessions already joined. At 5,000 a second, 100,000 sessions at 1 Hz
     saturated the loop, retries fed on themselves and 12 % joined. */
  ns_t spread = (ns_t)sessions * MS(1) / 2;
  ns_t window = o->quick ? MS(2000) : MS(10000);
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  struct fleet f;
  memset(&f, 0, sizeof f);
  memset(r, 0, sizeof *r);
  shared_init(sessions);
  snprintf(f.server, sizeof f.server, "%s", o->edge_text);
  f.app_id = o->app_id;
  f.channels = channels;
  f.tokens = tokens;
  f.uid_base = 1000;
  f.own_lateness_off = o->own_lateness_off;
  samples_init(&f.outside, 16);
  if (fleet_reserve(&f, sessions) != 0) exit(1);
  double rss0 = resident_bytes(), slab0 = meminfo_bytes("Slab:");
  ns_t began = now_ns();
  if (fleet_start(&f, loop, DESIGN_TETHER, sessions, t, spread) != 0) exit(1);
  fleet_wait_connected(&f, spread + MS(60000));
  r->join_s = (double)(now_ns() - began) / 1e9;
  fleet_run(&f, 2 * heartbeat);
  r->rss_per_session = (resident_bytes() - rss0) / sessions;
  /* The whole edge process divided by the sessions (its start-up's 15 MB included): it
     keeps the room it once used (its tables do not shrink), so a difference would say
     nothing for a second row against the same edge. */
  r->edge_rss_per_session = o->edge_pid ? resident_bytes_of(o->edge_pid) / sessions : -1;
  r->slab_per_session = (meminfo_bytes("Slab:") - slab0) / sessions;
  r->udp_buffers = udp_buffer_bytes();
  r->descriptors = descriptors_open();
  r->connected = f.connected;
  /* Counting the datagrams reads every engine's stats (a walk of its histograms each):
     at 100,000 engines that holds the loop for a large part of a second. So the count is
     taken outside the window whose lateness is measured: the loop catches up for a
     heartbeat after it, then the lateness is reset and the window opens; at its end the
     lateness is read before the second count. The rate is over the time between the two
     counts (the loop handles no datagram while a count holds it). Every INTERRUPTED in
     the window is a heartbeat the loop or the edge did not keep up with: there are no
     cuts here. */
  uint64_t d0 = datagrams_of(&f);
  ns_t counted = now_ns();
  fleet_run(&f, heartbeat);
  tether_engine_reset_lateness(fleet_engine(&f, 0)); /* the window's lateness alone */
  double cpu0 = cpu_seconds(0), edge_cpu0 = o->edge_pid ? cpu_seconds(o->edge_pid) : -1;
  ns_t from = now_ns();
  f.measuring = 1;
  fleet_run(&f, window);
  f.measuring = 0;
  ns_t to = now_ns();
  r->window_s = (double)(to - from) / 1e9;
  r->cpu_device = (cpu_seconds(0) - cpu0) / r->window_s;
  r->cpu_edge = edge_cpu0 < 0 ? -1 : (cpu_seconds(o->edge_pid) - edge_cpu0) / r->window_s;
  fleet_stats(&f);
  r->fired_p50 = f.tether.loop_lateness_p50_us;
  r->fired_p99 = f.tether.loop_lateness_p99_us;
  r->fired_p999 = f.tether.loop_lateness_p999_us;
  r->datagrams_per_s = (double)(datagrams_of(&f) - d0) / ((double)(to - counted) / 1e9);
  r->interrupts = f.false_interrupts + (int)f.outside.count;
  if (f.connected < r->connected) r->connected = f.connected;
  fleet_stop(&f);
  samples_free(&f.outside);
  ev_loop_destroy(loop);
  /* So that the next run's resident memory starts from what it uses: without it, a run
     after the first reused the freed heap and its RSS per session read a quarter of the
     first's (make bench, issue 26). */
  malloc_trim(0);
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Why a row is no result at this heartbeat (NULL: it is): a session not connected in some
   run, an INTERRUPTED in a window without cuts, or the device or the edge at 95 % of a
   core or more (it does not fit: the figures are the saturation's). */
static const char *scale_fault(const struct scale_run *runs, int count, int sessions) {
  for (int i = 0; i < count; i++) {
    if (runs[i].connected < sessions) return "connected";
    if (runs[i].interrupts > 0) return "interrupted";
    if (runs[i].cpu_device >= 0.95 || runs[i].cpu_edge >= 0.95) return "saturated";
  }
  return NULL;
}

int run_scale(const struct options *o, char **channels, char **tokens) {
  char path[512];
  for (int si = 0; si < o->session_count; si++) {
    int sessions = o->sessions[si], least = sessions;
    struct scale_run runs[MAX_RUNS];
    for (int run = 0; run < o->runs; run++) {
      scale_once(o, channels, tokens, sessions, &runs[run]);
      if (runs[run].connected < least) least = runs[run].connected;
    }
    const char *why = scale_fault(runs, o->runs, sessions);
    char line[2048];
    int n = snprintf(line, sizeof line,
                     "scale sessions=%d heartbeat_ms=%d own_lateness=%s runs=%d connected=%d valid=%s why=%s",
                     sessions, o->heartbeat_ms, o->own_lateness_off ? "off" : "on", o->runs, least,
                     why ? "no" : "yes", why ? why : "-");
    for (int k = 0; k < SCALE_FIGURES && n > 0 && (size_t)n < sizeof line; k++) {
      double v[MAX_RUNS];
      for (int i = 0; i < o->runs; i++) v[i] = scale_figure(&runs[i], k);
      qsort(v, (size_t)o->runs, sizeof v[0], compare_doubles);
      double median = o->runs % 2 ? v[o->runs / 2] : (v[o->runs / 2 - 1] + v[o->runs / 2]) / 2;
      n += snprintf(line + n, sizeof line - (size_t)n, " %s=%.3f %s_lo=%.3f %s_hi=%.3f", scale_names[k],
                    median, scale_names[k], v[0], scale_names[k], v[o->runs - 1]);
    }
    printf("%s\n", line);
    if (o->out_dir != NULL) {
      snprintf(path, sizeof path, "%s/results.txt", o->out_dir);
      FILE *f = fopen(path, "a");
      if (f != NULL) {
        fprintf(f, "%s fired_scope=window\n", line);
        fclose(f);
      }
    }
  }
  return 0;
}
