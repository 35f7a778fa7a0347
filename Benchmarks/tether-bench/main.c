// SPDX-License-Identifier: Apache-2.0
/* tether-bench: the scenario matrix, the cost figures, and the report. See bench.h and
 * Benchmarks/README.md. A scenario (sessions, load) runs --runs times; each run, at each
 * --priority in turn: the kernel baseline alone, the bare timer loop alone, then each
 * design (the heartbeats window, then the churn window of the first cut pattern; the churn
 * window of each further pattern). The baselines never run beside a design. */
#include "bench.h"
#include "rows.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>


/* ---- Allocations, counted by the linker's --wrap (see the Makefile) -------------------- */

long allocations;
void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *pointer, size_t size);
void *__wrap_malloc(size_t size) { allocations++; return __real_malloc(size); }
void *__wrap_calloc(size_t count, size_t size) { allocations++; return __real_calloc(count, size); }
void *__wrap_realloc(void *pointer, size_t size) { allocations++; return __real_realloc(pointer, size); }

/* ---- A scenario's plan: thresholds scaled so deadlines fire often --------------------- */

struct plan {
  struct thresholds t;
  ns_t cut_length, cut_period, spread; /* steady cuts */
  int cuts;                            /* steady: per session */
  int rounds;                          /* burst */
  ns_t quiet;                          /* the heartbeats window (no cuts) */
  ns_t alone;                          /* each baseline's phase */
};

static struct plan plan_for(int sessions, int quick) {
  struct plan p;
  if (sessions <= 10) {
    p.t = (struct thresholds){MS(10), MS(50), MS(10)};
    p.cuts = p.rounds = quick ? 4 : 60;
  } else if (sessions <= 2000) {
    p.t = quick ? (struct thresholds){MS(20), MS(100), MS(20)}
                : (struct thresholds){MS(100), MS(400), MS(100)};
    p.cuts = p.rounds = quick ? 1 : 4;
  } else {
    /* Retry 1 s, not the 250 ms of version 1's days: a version 2 retry is a new handshake
       (an X25519 key, then a DH on its answer), and 10,000 sessions retrying every 250 ms
       asked the loop for more crypto per second than it has: the retries fed on themselves
       and half the sessions never joined (make bench, issue 25). */
    p.t = (struct thresholds){MS(1000), MS(4000), MS(1000)};
    p.cuts = p.rounds = 1;
  }
  ns_t margin = p.t.interrupted / 2 < MS(500) ? p.t.interrupted / 2 : MS(500);
  p.cut_length = p.t.interrupted + margin;
  p.cut_period = p.cut_length + (p.t.interrupted > 4 * p.t.retry ? p.t.interrupted : 4 * p.t.retry);
  p.spread = sessions > 2000 ? MS(4000) : p.cut_period;
  p.quiet = quick ? MS(250) : sessions <= 10 ? MS(2000) : sessions <= 2000 ? MS(3000) : MS(6000);
  p.alone = quick ? MS(250) : MS(5000);
  return p;
}

/* Each session's channel and version 2 token: every design speaks version 2 (the tether
   design through the library, the libev designs through client_v2.c). */
struct tokens {
  char **channels, **v2;
};

/* --tokens: "channel v2token" per session, nothing else on the line. */
static struct tokens read_tokens(const char *path, int count) {
  struct tokens t;
  char line[1200];
  FILE *f = fopen(path, "r");
  t.channels = calloc((size_t)count, sizeof *t.channels);
  t.v2 = calloc((size_t)count, sizeof *t.v2);
  if (f == NULL || t.channels == NULL || t.v2 == NULL) {
    fprintf(stderr, "tether-bench: cannot read %s\n", path);
    exit(1);
  }
  for (int i = 0; i < count; i++) {
    char channel[80], v2[600];
    int end = 0;
    if (fgets(line, sizeof line, f) == NULL ||
        sscanf(line, "%79s %599s %n", channel, v2, &end) != 2 || line[end] != 0) {
      fprintf(stderr, "tether-bench: %s: line %d is not \"channel v2token\" (%d lines needed)\n",
              path, i + 1, count);
      exit(1);
    }
    t.channels[i] = strdup(channel);
    t.v2[i] = strdup(v2);
  }
  fclose(f);
  return t;
}

/* Without --tokens: channels "PREFIX-i", version 2 tokens minted here under
   bench_certificate for the bench's own peer. */
static struct tokens mint_tokens(const char *app_id, const char *prefix, int count) {
  struct tokens t;
  t.channels = calloc((size_t)count, sizeof *t.channels);
  t.v2 = calloc((size_t)count, sizeof *t.v2);
  for (int i = 0; t.channels != NULL && t.v2 != NULL && i < count; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s-%d", prefix, i);
    t.channels[i] = strdup(name);
    t.v2[i] = malloc(V2_TOKEN_TEXT);
    if (t.channels[i] == NULL || t.v2[i] == NULL || v2_mint(t.v2[i], app_id, name) != 0) {
      fprintf(stderr, "tether-bench: cannot mint a token for %s\n", name);
      exit(1);
    }
  }
  if (t.channels == NULL || t.v2 == NULL) exit(1);
  return t;
}

static void tokens_free(struct tokens *t, int count) {
  for (int i = 0; i < count; i++) {
    free(t->channels[i]);
    free(t->v2[i]);
  }
  free(t->channels);
  free(t->v2);
}

/* The samples behind a figure, one per line in microseconds: RESULTS/samples-SESSIONS-LOAD-
   PATTERN-KIND-WHAT-PRIORITY-rRUN.txt (the priority as asked, ':' written '_'). */
static void write_samples(const struct options *o, const struct row *key, int run, const char *what,
                          const struct samples *s) {
  char path[512], priority[16];
  FILE *f;
  if (o->out_dir == NULL) return;
  priority_text(&o->priorities[key->priority], priority);
  for (char *c = priority; *c; c++) {
    if (*c == ':') *c = '_';
  }
  snprintf(path, sizeof path, "%s/samples-%d-%s-%s-%s-%s-%s-r%d.txt", o->out_dir, key->sessions,
           load_names[key->load], key->pattern < 0 ? "none" : pattern_names[key->pattern],
           kind_names[key->kind], what, priority, run + 1);
  f = fopen(path, "w");
  if (f == NULL) return;
  for (size_t i = 0; i < s->count; i++) fprintf(f, "%.3f\n", (double)s->values[i] / 1e3);
  fclose(f);
}

/* Steady: each session cut `cuts` times, its first cut spread over `spread`. */
static ns_t schedule_steady(const struct plan *p, int sessions, ns_t start) {
  for (int i = 0; i < sessions; i++) {
    store_ns(&cut_phase[i], start + (sessions > 1 ? p->spread * i / (sessions - 1) : 0));
  }
  store_ns(&shm->cut_length, p->cut_length);
  __atomic_store_n(&shm->cut_count, (int64_t)p->cuts, __ATOMIC_RELAXED);
  store_ns(&shm->cut_period, p->cut_period);
  return p->spread + (ns_t)(p->cuts - 1) * p->cut_period + p->cut_length + 4 * p->t.retry;
}

static void run_burst(struct fleet *f, const struct plan *p) {
  for (int round = 0; round < p->rounds; round++) {
    ns_t hold = now_ns() + MS(1);
    store_ns(&shm->heal_at, hold + p->t.heartbeat + p->cut_length);
    store_ns(&shm->release_at, hold + p->t.heartbeat);
    store_ns(&shm->hold_from, hold);
    fleet_run(f, p->t.heartbeat + p->cut_length + MS(2));
    fleet_wait_connected(f, 8 * p->t.interrupted);
    fleet_run(f, 2 * p->t.heartbeat);
    store_ns(&shm->hold_from, 0);
    store_ns(&shm->release_at, 0);
  }
}

/* ---- A window: what the device process did between two marks --------------------------- */

struct mark {
  ns_t at;
  double cpu, peer, edge;
  uint64_t datagrams, deadlines;
  long allocations;
};

/* A window opens: Tether's lateness figures (the engine's and the loop's) start afresh, so
   that its row, like the libev designs', holds the window's deadlines alone. */
static void open_window(struct fleet *f) {
  if (f->design == DESIGN_TETHER && f->count > 0) tether_engine_reset_lateness(fleet_engine(f, 0));
}

static struct mark mark_now(struct fleet *f, pid_t peer, const struct options *o) {
  struct mark m;
  if (f != NULL) fleet_stats(f);
  m.at = now_ns();
  m.cpu = cpu_seconds(0);
  m.peer = peer ? cpu_seconds(peer) : -1;
  m.edge = o->edge_pid ? cpu_seconds(o->edge_pid) : -1;
  m.datagrams = __atomic_load_n(&shm->datagrams, __ATOMIC_RELAXED);
  m.deadlines = f != NULL ? f->tether.loop_deadlines_fired : 0;
  m.allocations = allocations;
  return m;
}

static double share(double from, double to, double seconds) {
  return from < 0 || to < 0 ? -1 : (to - from) / seconds;
}

/* From `from` to now: time, CPU, datagrams, allocations. */
static void close_window(struct fleet *f, pid_t peer, const struct options *o,
                         const struct mark *from, struct measure *m) {
  struct mark to = mark_now(f, peer, o);
  m->window = (double)(to.at - from->at) / 1e9;
  m->cpu_device = share(from->cpu, to.cpu, m->window);
  m->cpu_peer = share(from->peer, to.peer, m->window);
  m->cpu_edge = share(from->edge, to.edge, m->window);
  m->datagrams = to.datagrams - from->datagrams;
  m->allocations = to.allocations - from->allocations;
  if (f == NULL) return;
  m->false_interrupts = f->false_interrupts;
  f->false_interrupts = 0;
  m->outside = summarize(&f->outside);
  if (f->design == DESIGN_TETHER) {
    /* The library's own loop histogram, reset as the window opened (open_window): this
       window's deadlines, every engine's; the count too. */
    m->fired.count = (size_t)(to.deadlines - from->deadlines);
    m->fired.p50 = f->tether.loop_lateness_p50_us;
    m->fired.p99 = f->tether.loop_lateness_p99_us;
    m->fired.p999 = f->tether.loop_lateness_p999_us;
    m->fired.max = f->tether.loop_lateness_max_us;
    m->fired.min = 0;
  } else {
    m->fired = summarize(&f->fired);
  }
  m->deadlines_per_s = (double)m->fired.count / m->window;
  f->fired.count = 0;
  f->outside.count = 0;
}

/* ---- One run of one design: the heartbeats window, then the churn window ---------------- */

struct run_context {
  const struct options *o;
  const struct tokens *tokens;
  int run, priority;
};

static pid_t peer_begin(const struct run_context *c, struct ev_loop *loop, struct sockaddr_in *front) {
  if (c->o->inline_peer) {
    peer_attach(loop, c->tokens->v2, front);
    return 0;
  }
  pid_t peer = peer_start(c->o->has_edge ? &c->o->edge : NULL, c->tokens->v2, front);
  if (!runs_at_default(peer)) {
    fprintf(stderr, "tether-bench: the peer runs at a real-time policy: nothing measured\n");
    exit(1);
  }
  return peer;
}

static void peer_end(const struct run_context *c, struct ev_loop *loop, pid_t peer) {
  if (c->o->inline_peer) {
    peer_detach(loop);
    return;
  }
  usleep(100000); /* the peer passes the LEAVEs on before it stops */
  __atomic_store_n(&shm->stop_peer, 1, __ATOMIC_RELAXED);
  waitpid(peer, NULL, 0);
  __atomic_store_n(&shm->stop_peer, 0, __ATOMIC_RELAXED);
}

/* For a profile of one window: with TETHER_BENCH_PERF_CTL naming perf's control fifo
   (`perf record --control fifo:CTL -D -1 -- tether-bench ...`), perf samples only while a
   window is measured: "enable" as it opens, "disable" as it closes. TETHER_BENCH_PERF_WINDOW
   says which: heartbeats (the default) or churn. */
static void perf_window(const char *window, const char *command) {
  const char *path = getenv("TETHER_BENCH_PERF_CTL");
  const char *wanted = getenv("TETHER_BENCH_PERF_WINDOW");
  if (path == NULL || strcmp(wanted ? wanted : "heartbeats", window) != 0) return;
  FILE *control = fopen(path, "w");
  if (control == NULL) return;
  fprintf(control, "%s\n", command);
  fclose(control);
}

/* `quiet` (when set): the heartbeats window, no cuts; `churn`: the cut pattern's window. */
static void run_design(const struct run_context *c, const struct row *key, struct measure *quiet,
                       struct measure *churn) {
  const struct options *o = c->o;
  struct plan p = plan_for(key->sessions, o->quick);
  struct fleet f;
  struct sockaddr_in front;
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  struct mark from;
  memset(&f, 0, sizeof f);
  shared_init(key->sessions);
  pid_t peer = peer_begin(c, loop, &front);
  snprintf(f.server, sizeof f.server, "127.0.0.1:%u", (unsigned)ntohs(front.sin_port));
  f.app_id = o->app_id;
  f.channels = c->tokens->channels;
  f.tokens = c->tokens->v2;
  f.uid_base = 1000;
  samples_init(&f.fired, 4000000);
  samples_init(&f.outside, (size_t)key->sessions * (size_t)(p.cuts + p.rounds) + 16);
  if (fleet_reserve(&f, key->sessions) != 0) exit(1);
  double rss0 = resident_bytes();
  if (fleet_start(&f, loop, (enum design)key->kind, key->sessions, p.t, p.t.heartbeat) != 0) exit(1);
  fleet_wait_connected(&f, MS(20000));
  fleet_run(&f, 2 * p.t.heartbeat + MS(20));
  double rss = rss0 < 0 ? -1 : (resident_bytes() - rss0) / key->sessions;
  if (quiet != NULL) {
    /* Connected when the window opens; a session the machine's stalls interrupted during
       it is an INTERRUPTED without a cut (false_interrupts), said beside the row. */
    quiet->connected = f.connected;
    open_window(&f);
    from = mark_now(&f, peer, o);
    f.measuring = 1;
    perf_window("heartbeats", "enable");
    fleet_run(&f, p.quiet);
    perf_window("heartbeats", "disable");
    f.measuring = 0;
    close_window(&f, peer, o, &from, quiet);
    quiet->rss_per_session = rss;
  }
  churn->connected = f.connected;
  churn->rss_per_session = rss;
  open_window(&f);
  from = mark_now(&f, peer, o);
  f.measuring = 1;
  perf_window("churn", "enable");
  if (key->pattern == 0) {
    fleet_run(&f, schedule_steady(&p, key->sessions, from.at + MS(5)));
  } else {
    run_burst(&f, &p);
  }
  perf_window("churn", "disable");
  f.measuring = 0;
  write_samples(o, key, c->run, "outside", &f.outside);
  close_window(&f, peer, o, &from, churn);
  fleet_stop(&f);
  samples_free(&f.fired);
  samples_free(&f.outside);
  peer_end(c, loop, peer);
  ev_loop_destroy(loop);
  malloc_trim(0); /* so the next design's resident memory starts from what it uses */
}

/* ---- The baselines, alone on the loop thread ---------------------------------------------- */

static void run_alone(const struct run_context *c, const struct row *key, struct measure *m) {
  struct plan p = plan_for(key->sessions, c->o->quick);
  struct samples late;
  struct mark from;
  size_t expected = key->kind == ROW_KERNEL
                        ? (size_t)(p.alone / MS(1))
                        : (size_t)((double)key->sessions * (double)p.alone / (double)p.t.heartbeat);
  memset(m, 0, sizeof *m);
  samples_init(&late, expected + expected / 4 + 64);
  from = mark_now(NULL, 0, c->o);
  if (key->kind == ROW_KERNEL) {
    kernel_phase(MS(1), p.alone, &late);
  } else if (bare_phase(key->sessions, p.t.heartbeat, p.alone, &late) != 0) {
    fprintf(stderr, "tether-bench: the bare loop could not start (timerfd or memory)\n");
  }
  close_window(NULL, 0, c->o, &from, m);
  m->cpu_peer = m->cpu_edge = -1;
  m->rss_per_session = -1;
  m->connected = key->sessions;
  write_samples(c->o, key, c->run, "late", &late);
  m->fired = summarize(&late);
  m->deadlines_per_s = (double)m->fired.count / m->window;
  samples_free(&late);
}

/* ---- Output ----------------------------------------------------------------------------- */

static void record_cost(const struct options *o, const char *key, double value, const char *unit) {
  char path[512];
  FILE *f;
  printf("  %-44s %12.1f %s\n", key, value, unit);
  if (o->out_dir == NULL) return;
  snprintf(path, sizeof path, "%s/results.txt", o->out_dir);
  if ((f = fopen(path, "a")) != NULL) {
    fprintf(f, "cost %s=%.3f\n", key, value);
    fclose(f);
  }
}

/* ---- Cost: per packet through the driver, create and destroy, descriptors, bytes ------- */

static int open_descriptors(void) {
  int n = 0;
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) return -1;
  while (readdir(dir) != NULL) n++;
  closedir(dir);
  return n;
}

static double thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void joined_state(void *ctx, tether_connection_state state,
                         tether_connection_changed_reason why) {
  (void)why;
  *(int *)ctx = state == TETHER_CONNECTION_STATE_CONNECTED;
}

/* One engine joined to a server played here (the bench's own edge, version 2); acks
   pushed at it in batches of 32, and the loop's CPU time per ack (the recv, the opening,
   the core, the deadline check). The acks are sealed before the loop runs: what is timed
   is the device's side alone. */
static void cost_per_ack(const struct options *o) {
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  struct sockaddr_in a, engine_address;
  socklen_t length = sizeof a;
  int server = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), joined = 0, heard = 0;
  unsigned char in[1500], out[400], acks[32][64];
  int ack_length[32];
  char address[64], token[V2_TOKEN_TEXT];
  struct v2_link *link = v2_links(1);
  tether_engine_config c;
  tether_engine_handler h;
  tether_engine *engine = NULL;
  tether_engine_stats st;
  ssize_t n = 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(server, (struct sockaddr *)&a, sizeof a);
  getsockname(server, (struct sockaddr *)&a, &length);
  snprintf(address, sizeof address, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
  tether_engine_config_init(&c);
  c.app_id = o->app_id;
  c.server = address;
  c.interrupted_after_ms = 60000;
  c.lost_after_ms = 60000;
  c.remote_offline_after_ms = 60000;
  tether_engine_handler_init(&h);
  h.on_connection_state_changed = joined_state;
  tether_engine_create(loop, &c, &h, &joined, &engine);
  if (link == NULL || v2_mint(token, o->app_id, "cost") != 0) {
    printf("  (no token: no cost per ack)\n");
    return;
  }
  tether_join_channel(engine, token, "cost", 7);
  /* INIT -> RESPONSE, CONFIRM -> ACCEPT, with the engine's loop turning between. */
  for (int i = 0; i < 5000 && !joined; i++) {
    ev_run(loop, EVRUN_NOWAIT);
    length = sizeof engine_address;
    n = recvfrom(server, in, sizeof in, 0, (struct sockaddr *)&engine_address, &length);
    if (n > 0) {
      int written = v2_answer(link, in, (size_t)n, out);
      heard = 1;
      if (written > 0) sendto(server, out, (size_t)written, 0, (struct sockaddr *)&engine_address, length);
    } else {
      usleep(1000);
    }
  }
  if (!joined) {
    printf("  (the engine %s: no cost per ack)\n", heard ? "did not join" : "sent no INIT");
    return;
  }
  int rounds = o->quick ? 300 : 6000;
  double cpu = 0;
  st.size = sizeof st;
  tether_engine_get_stats(engine, &st);
  uint64_t before = st.datagrams_in;
  long allocations0 = allocations;
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < 32; k++) ack_length[k] = v2_seal_ack(link, 0, acks[k]);
    for (int k = 0; k < 32; k++) {
      if (ack_length[k] > 0)
        sendto(server, acks[k], (size_t)ack_length[k], 0, (struct sockaddr *)&engine_address, length);
    }
    double t0 = thread_cpu_ns();
    ev_run(loop, EVRUN_NOWAIT);
    cpu += thread_cpu_ns() - t0;
  }
  tether_engine_get_stats(engine, &st);
  uint64_t got = st.datagrams_in - before;
  record_cost(o, "ns_per_ack_through_the_driver", got ? cpu / (double)got : -1, "ns");
  record_cost(o, "allocations_per_ack", got ? (double)(allocations - allocations0) / (double)got : -1, "");
  tether_engine_destroy(engine);
  v2_links_free(link, 1);
  close(server);
  ev_loop_destroy(loop);
}

static void cost_create_destroy(const struct options *o) {
  int count = o->quick ? 500 : 10000;
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  tether_engine **engines = calloc((size_t)count, sizeof *engines);
  tether_engine_config c;
  int base = open_descriptors(), made = 0;
  struct mallinfo2 m0 = mallinfo2();
  tether_engine_config_init(&c);
  c.app_id = o->app_id;
  c.server = "127.0.0.1:9";
  ns_t t0 = now_ns();
  for (int i = 0; i < count; i++) made += tether_engine_create(loop, &c, NULL, NULL, &engines[i]) == 0;
  ns_t t1 = now_ns();
  struct mallinfo2 m1 = mallinfo2();
  int with = open_descriptors();
  for (int i = 0; i < count; i++) tether_engine_destroy(engines[i]);
  ns_t t2 = now_ns();
  printf("  %d engines on one loop (%d made):\n", count, made);
  record_cost(o, "create_us_per_engine", (double)(t1 - t0) / 1e3 / count, "us");
  record_cost(o, "destroy_us_per_engine", (double)(t2 - t1) / 1e3 / count, "us");
  /* Everything the engines opened, the loop's own (timerfd, netlink) and the socket their
     sessions share included: per engine, and in all. */
  record_cost(o, "descriptors_per_engine", (double)(with - base) / count, "");
  record_cost(o, "descriptors_per_loop", (double)(with - base), "");
  /* Arena bytes and blocks mapped on their own (large arrays), both. */
  record_cost(o, "heap_bytes_per_engine",
              (double)(m1.uordblks + m1.hblkhd - m0.uordblks - m0.hblkhd) / count, "B");
  record_cost(o, "descriptors_left_after_destroy", (double)(open_descriptors() - base), "");
  free(engines);
  ev_loop_destroy(loop);
}

/* Deadlines due together: `count` engines silenced at once (the peer holds, releases and
   cuts), the first INTERRUPTED callback keeping the loop until every other is due; then
   the time between callbacks is what firing one engine costs in a batch. */
static void cost_burst(const struct options *o) {
  int count = o->quick ? 100 : 1000;
  /* Joins retry every 1 s: each retry is a version 2 handshake, and a thousand of them
     every 50 ms is more than the loop can make, so they never all joined. */
  struct thresholds t = {MS(20), MS(100), MS(1000)};
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  struct sockaddr_in front;
  struct fleet f;
  memset(&f, 0, sizeof f);
  struct tokens tokens = mint_tokens(o->app_id, "burst", count);
  shared_init(count);
  pid_t peer = peer_start(NULL, tokens.v2, &front);
  snprintf(f.server, sizeof f.server, "127.0.0.1:%u", (unsigned)ntohs(front.sin_port));
  f.app_id = o->app_id;
  f.uid_base = 1000;
  f.channels = tokens.channels;
  f.tokens = tokens.v2;
  samples_init(&f.times, (size_t)count + 1);
  samples_init(&f.outside, (size_t)count + 1);
  if (fleet_start(&f, loop, DESIGN_TETHER, count, t, t.heartbeat) == 0) {
    fleet_wait_connected(&f, MS(10000));
    fleet_run(&f, 3 * t.heartbeat);
    if (f.connected < count) {
      /* Engines that never joined are not cut and fire nothing: no figure from them. */
      printf("  (%d of %d connected: no burst firing cost)\n", f.connected, count);
      fleet_stop(&f);
      goto done;
    }
    f.measuring = 1;
    f.stall = 3 * t.heartbeat;
    ns_t hold = now_ns() + MS(1);
    store_ns(&shm->heal_at, hold + MS(1000));
    store_ns(&shm->release_at, hold + t.heartbeat);
    store_ns(&shm->hold_from, hold);
    fleet_run(&f, t.heartbeat + t.interrupted + 2 * f.stall);
    f.measuring = 0;
    if (f.times.count > 2) {
      double spread = (double)(f.times.values[f.times.count - 1] - f.times.values[1]);
      printf("  %zu INTERRUPTED callbacks due together:\n", f.times.count);
      record_cost(o, "burst_firing_ns_per_engine", spread / (double)(f.times.count - 2), "ns");
    }
    fleet_stop(&f);
  }
done:
  samples_free(&f.times);
  samples_free(&f.outside);
  tokens_free(&tokens, count);
  __atomic_store_n(&shm->stop_peer, 1, __ATOMIC_RELAXED);
  waitpid(peer, NULL, 0);
  __atomic_store_n(&shm->stop_peer, 0, __ATOMIC_RELAXED);
  ev_loop_destroy(loop);
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(const char *error) {
  fprintf(stderr,
          "tether-bench: %s\n"
          "usage: tether-bench [--sessions 1,1000,10000] [--loads idle,busy]\n"
          "                    [--patterns steady,burst] [--designs tether,previous,naive]\n"
          "                    [--priority default,fifo:N,rr:N,nice:N] [--mlock] [--runs N]\n"
          "                    [--busy N] [--slice-us US] [--cost] [--quick] [--out DIR]\n"
          "                    [--inline-peer (no child processes: for qemu-user)]\n"
          "                    [--vectors (only: the libev designs' v2 client, PyNaCl's vectors)]\n"
          "                    [--edge HOST:PORT --tokens FILE --app-id ID [--edge-pid PID]]\n"
          "                    [--direct --edge HOST:PORT [--heartbeat-ms MS] [--own-lateness on|off]]\n",
          error);
  exit(2);
}

static struct row row_key(int sessions, int load, int pattern, int window, int kind, int priority) {
  struct row r;
  memset(&r, 0, sizeof r);
  r.sessions = sessions;
  r.load = load;
  r.pattern = pattern;
  r.window = window;
  r.kind = kind;
  r.priority = priority;
  return r;
}

/* One run of one cut pattern at priority `c->priority` (already applied as `applied`): the
   baselines alone (with the first pattern), then each design, into `t`. */
static void run_at(const struct run_context *c, struct table *t, int sessions, int load, int pi,
                   const char *applied) {
  const struct options *o = c->o;
  if (pi == 0 && !o->inline_peer) {
    for (int kind = ROW_KERNEL; kind <= ROW_BARE; kind++) {
      struct row key = row_key(sessions, load, -1, WINDOW_ALONE, kind, c->priority);
      struct measure m;
      run_alone(c, &key, &m);
      table_add(t, &key, applied, &m);
    }
  }
  for (int di = 0; di < o->design_count; di++) {
    struct row quiet = row_key(sessions, load, -1, WINDOW_HEARTBEATS, o->designs[di], c->priority);
    struct row churn = row_key(sessions, load, o->patterns[pi], WINDOW_CHURN, o->designs[di], c->priority);
    struct measure mq, mc;
    memset(&mq, 0, sizeof mq);
    memset(&mc, 0, sizeof mc);
    /* The heartbeats window is the scenario's, not the pattern's: measured with the first. */
    run_design(c, &churn, pi == 0 ? &mq : NULL, &mc);
    if (pi == 0) table_add(t, &quiet, applied, &mq);
    table_add(t, &churn, applied, &mc);
  }
}

/* Every row of one scenario: --runs times, each cut pattern, each priority in turn (so the
   priorities of a pattern are measured minutes apart at most). Returns 0, or -1 if any
   priority was refused (its rows say what ran). */
static int run_scenario(const struct options *o, const struct tokens *tokens, int sessions, int load,
                        int refused_said[MAX_PRIORITIES]) {
  struct table t;
  int refused = 0;
  table_init(&t, o->priority_count * (o->design_count * (o->pattern_count + 1) + 2));
  for (int run = 0; run < o->runs; run++) {
    for (int pi = 0; pi < o->pattern_count; pi++) {
      for (int k = 0; k < o->priority_count; k++) {
        struct run_context c = {o, tokens, run, k};
        char applied[16], why[160];
        if (priority_apply(&o->priorities[k], o->slice, applied, why) != 0) {
          refused = 1;
          if (!refused_said[k]++) printf("%s: its rows ran at %s and say so (policy=%s)\n", why, applied, applied);
        }
        run_at(&c, &t, sessions, load, pi, applied);
      }
    }
  }
  table_validate(&t);
  table_print(&t);
  table_record(&t, o);
  table_free(&t);
  return refused ? -1 : 0;
}

int main(int argc, char **argv) {
  struct options o;
  char error[OPTION_ERROR], why[160], applied[16];
  struct rlimit files;
  pid_t load[64] = {0};
  int max_sessions = 0, refused_said[MAX_PRIORITIES] = {0};
  struct tokens tokens;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (options_parse(argc, argv, (int)sysconf(_SC_NPROCESSORS_ONLN), &o, error) != 0) usage(error);
  if (o.busy_processes > 64) usage("--busy: at most 64");
  if (o.vectors) return vectors_check();
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  for (int i = 0; i < o.session_count; i++) {
    if (o.sessions[i] > max_sessions) max_sessions = o.sessions[i];
  }
  if (!o.direct && (rlim_t)max_sessions + 64 > files.rlim_cur) {
    fprintf(stderr, "tether-bench: %d sessions need %d descriptors; the limit is %lu\n",
            max_sessions, max_sessions + 64, (unsigned long)files.rlim_cur);
    return 1;
  }
  if (v2_setup() != 0) {
    fprintf(stderr, "tether-bench: libsodium did not start\n");
    return 1;
  }
  tokens = o.tokens_path ? read_tokens(o.tokens_path, max_sessions)
                         : mint_tokens(o.app_id, "bench", max_sessions);
  printf("tether-bench %u.%u.%u: %ld cores online, peer: %s\n", tether_version() >> 16,
         (tether_version() >> 8) & 0xFF, tether_version() & 0xFF, sysconf(_SC_NPROCESSORS_ONLN),
         o.has_edge       ? "relay to tether-edge"
         : o.inline_peer ? "on the bench's own loop, no baselines (timing means nothing)"
                         : "built in");
  priority_current(applied);
  /* Before anything is forked: under `chrt -f 10 tether-bench` a child would otherwise be
     born at SCHED_FIFO and run so until it resets itself. */
  {
    struct priority standard = {POLICY_DEFAULT, 0};
    char now[16];
    if (priority_apply(&standard, 0, now, why) != 0) printf("%s\n", why);
  }
  printf("started at %s; each priority is set on the loop thread alone (SCHED_RESET_ON_FORK: the "
         "peer, relay and busy processes run at the default policy); %d run%s of each row, every "
         "figure the median of the runs [their range]\n",
         applied, o.runs, o.runs == 1 ? "" : "s");
  if (o.mlock) {
    if (memory_lock(why) != 0) {
      printf("--mlock: %s: the rows say mlock=no\n", why);
      o.mlock = 0;
    } else {
      printf("--mlock: the device process's memory is locked (mlockall)\n");
    }
  }
  if (o.slice) printf("the loop and the baselines run with a %lld us slice\n", (long long)(o.slice / 1000));
  printf("lateness = when it ran minus when it was due; \"outside\" = the callback's time minus "
         "(the peer's last datagram to the session + interrupted_after)\n\n");
  if (o.direct) {
    printf("--direct: Tether's engines straight to tether-edge at %s, heartbeat %d ms, own "
           "lateness %s; no peer, no relay, no cuts\n",
           o.edge_text, o.heartbeat_ms, o.own_lateness_off ? "off" : "on");
    run_scale(&o, tokens.channels, tokens.v2);
    tokens_free(&tokens, max_sessions);
    return 0;
  }
  print_header();
  shared_init(1);
  int refused = 0;
  for (int si = 0; si < o.session_count; si++) {
    for (int li = 0; li < o.load_count; li++) {
      int busy = o.loads[li] ? o.busy_processes : 0;
      load_start(busy, load);
      for (int i = 0; i < busy; i++) {
        if (!runs_at_default(load[i])) {
          fprintf(stderr, "tether-bench: a busy process runs at a real-time policy: nothing measured\n");
          return 1;
        }
      }
      refused |= run_scenario(&o, &tokens, o.sessions[si], o.loads[li], refused_said) != 0;
      children_stop(load, busy);
    }
  }
  if (o.cost) {
    struct priority standard = {POLICY_DEFAULT, 0};
    priority_apply(&standard, 0, applied, why); /* the costs are CPU time, not timing */
    printf("\ncost (at %s):\n", applied);
    cost_per_ack(&o);
    cost_create_destroy(&o);
    cost_burst(&o);
  }
  tokens_free(&tokens, max_sessions);
  if (refused) printf("\nnote: a priority was refused (see above): its rows ran at the policy they record\n");
  return 0;
}
