// SPDX-License-Identifier: Apache-2.0
/* tether-bench: the scenario matrix, the cost figures, and the report. See bench.h and
 * Benchmarks/README.md. */
#include "bench.h"

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

/* ---- Options ---------------------------------------------------------------------------- */

struct options {
  int sessions[8], session_count;
  int loads[2], load_count;       /* 0 idle, 1 busy */
  int patterns[2], pattern_count; /* 0 steady, 1 burst */
  int designs[DESIGN_COUNT], design_count;
  int quick, cost, busy_processes, inline_peer, vectors;
  ns_t slice;
  struct sockaddr_in edge;
  int has_edge;
  pid_t edge_pid;
  const char *tokens_path, *out_dir, *app_id;
};

static const char *load_names[2] = {"idle", "busy"};
static const char *pattern_names[2] = {"steady", "burst"};

static int parse_list(const char *text, const char *const *names, int name_count, int *out) {
  int n = 0;
  char copy[256], *save = NULL;
  snprintf(copy, sizeof copy, "%s", text);
  for (char *item = strtok_r(copy, ",", &save); item && n < 8; item = strtok_r(NULL, ",", &save)) {
    if (names == NULL) {
      out[n++] = atoi(item);
      continue;
    }
    for (int i = 0; i < name_count; i++) {
      if (strcmp(item, names[i]) == 0) out[n++] = i;
    }
  }
  return n;
}

static void usage(void) {
  fprintf(stderr,
          "usage: tether-bench [--sessions 1,1000,10000] [--loads idle,busy]\n"
          "                    [--patterns steady,burst] [--designs tether,previous,naive]\n"
          "                    [--busy N] [--slice-us US] [--cost] [--quick] [--out DIR]\n"
          "                    [--inline-peer (no child processes: for qemu-user)]\n"
          "                    [--vectors (only: the libev designs' v2 client, PyNaCl's vectors)]\n"
          "                    [--edge HOST:PORT --tokens FILE --app-id ID [--edge-pid PID]]\n");
  exit(2);
}

static struct options parse(int argc, char **argv) {
  struct options o;
  memset(&o, 0, sizeof o);
  o.app_id = "bench-app";
  o.busy_processes = (int)sysconf(_SC_NPROCESSORS_ONLN);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--quick") == 0) { o.quick = 1; continue; }
    if (strcmp(a, "--cost") == 0) { o.cost = 1; continue; }
    if (strcmp(a, "--inline-peer") == 0) { o.inline_peer = 1; continue; }
    if (strcmp(a, "--vectors") == 0) { o.vectors = 1; continue; }
    if (v == NULL) usage();
    i++;
    if (strcmp(a, "--sessions") == 0) o.session_count = parse_list(v, NULL, 0, o.sessions);
    else if (strcmp(a, "--loads") == 0) o.load_count = parse_list(v, load_names, 2, o.loads);
    else if (strcmp(a, "--patterns") == 0) o.pattern_count = parse_list(v, pattern_names, 2, o.patterns);
    else if (strcmp(a, "--designs") == 0) o.design_count = parse_list(v, design_names, DESIGN_COUNT, o.designs);
    else if (strcmp(a, "--busy") == 0) o.busy_processes = atoi(v);
    else if (strcmp(a, "--slice-us") == 0) o.slice = (ns_t)atoi(v) * 1000;
    else if (strcmp(a, "--out") == 0) o.out_dir = v;
    else if (strcmp(a, "--tokens") == 0) o.tokens_path = v;
    else if (strcmp(a, "--app-id") == 0) o.app_id = v;
    else if (strcmp(a, "--edge-pid") == 0) o.edge_pid = atoi(v);
    else if (strcmp(a, "--edge") == 0) {
      char host[64] = "";
      unsigned port = 0;
      if (sscanf(v, "%63[^:]:%u", host, &port) != 2) usage();
      o.edge.sin_family = AF_INET;
      o.edge.sin_port = htons((uint16_t)port);
      if (inet_pton(AF_INET, host, &o.edge.sin_addr) != 1) usage();
      o.has_edge = 1;
    } else usage();
  }
  if (o.session_count == 0) {
    int quick[] = {1, 50}, full[] = {1, 1000, 10000};
    o.session_count = o.quick ? 2 : 3;
    memcpy(o.sessions, o.quick ? quick : full, (size_t)o.session_count * sizeof(int));
  }
  if (o.load_count == 0) { o.loads[0] = 0; o.loads[1] = 1; o.load_count = 2; }
  if (o.pattern_count == 0) { o.patterns[0] = 0; o.patterns[1] = 1; o.pattern_count = 2; }
  if (o.design_count == 0) {
    for (int d = 0; d < DESIGN_COUNT; d++) o.designs[d] = d;
    o.design_count = DESIGN_COUNT;
  }
  if (o.has_edge && o.tokens_path == NULL) usage();
  if (o.inline_peer && (o.has_edge || o.cost)) usage();
  if (o.inline_peer) { o.loads[0] = 0; o.load_count = 1; } /* and no kernel baseline */
  return o;
}

/* ---- A scenario's plan: thresholds scaled so deadlines fire often --------------------- */

struct plan {
  struct thresholds t;
  ns_t cut_length, cut_period, spread; /* steady cuts */
  int cuts;                            /* steady: per session */
  int rounds;                          /* burst */
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
  return p;
}

/* ---- One design in one scenario ------------------------------------------------------- */

struct result {
  int sessions, load, pattern, design;
  struct summary fired, outside, kernel;
  int false_interrupts, connected, expected;
  double window, cpu_device, cpu_peer, cpu_edge;
  long allocations;
  uint64_t datagrams;
  tether_engine_stats tether;
};

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

static struct summary kernel_between(ns_t from, ns_t to) {
  struct samples s;
  uint64_t n = __atomic_load_n(&shm->baseline_count, __ATOMIC_ACQUIRE);
  samples_init(&s, n);
  for (uint64_t i = 0; i < n; i++) {
    if (baseline[i].at >= from && baseline[i].at < to) samples_add(&s, baseline[i].late);
  }
  struct summary out = summarize(&s);
  samples_free(&s);
  return out;
}

static void write_samples(const struct options *o, const struct result *r, const char *what,
                          const struct samples *s) {
  char path[512];
  FILE *f;
  if (o->out_dir == NULL) return;
  snprintf(path, sizeof path, "%s/samples-%d-%s-%s-%s-%s.txt", o->out_dir, r->sessions,
           load_names[r->load], pattern_names[r->pattern], design_names[r->design], what);
  f = fopen(path, "w");
  if (f == NULL) return;
  for (size_t i = 0; i < s->count; i++) fprintf(f, "%.3f\n", (double)s->values[i] / 1e3);
  fclose(f);
}

static void write_kernel_samples(const struct options *o, const struct result *r, ns_t from,
                                 ns_t to) {
  struct samples s;
  uint64_t n = __atomic_load_n(&shm->baseline_count, __ATOMIC_ACQUIRE);
  samples_init(&s, n);
  for (uint64_t i = 0; i < n; i++) {
    if (baseline[i].at >= from && baseline[i].at < to) samples_add(&s, baseline[i].late);
  }
  write_samples(o, r, "kernel", &s);
  samples_free(&s);
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

static struct result run_design(const struct options *o, int sessions, int load, int pattern,
                                enum design design, const struct tokens *tokens) {
  struct plan p = plan_for(sessions, o->quick);
  struct fleet f;
  struct result r;
  struct sockaddr_in front;
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  memset(&r, 0, sizeof r);
  memset(&f, 0, sizeof f);
  r.sessions = sessions;
  r.load = load;
  r.pattern = pattern;
  r.design = design;
  shared_init(sessions);
  pid_t peer = 0;
  if (o->inline_peer) {
    peer_attach(loop, tokens->v2, &front);
  } else {
    peer = peer_start(o->has_edge ? &o->edge : NULL, tokens->v2, &front);
  }
  snprintf(f.server, sizeof f.server, "127.0.0.1:%u", (unsigned)ntohs(front.sin_port));
  f.app_id = o->app_id;
  f.channels = tokens->channels;
  f.tokens = tokens->v2;
  f.uid_base = 1000;
  samples_init(&f.fired, 4000000);
  samples_init(&f.outside, (size_t)sessions * (size_t)(p.cuts + p.rounds) + 16);
  if (fleet_start(&f, loop, design, sessions, p.t, p.t.heartbeat) != 0) exit(1);
  fleet_wait_connected(&f, MS(20000));
  r.expected = sessions;
  r.connected = f.connected;
  fleet_run(&f, 2 * p.t.heartbeat + MS(20));

  ns_t start = now_ns();
  double cpu0 = cpu_seconds(0), peer0 = peer ? cpu_seconds(peer) : 0;
  double edge0 = o->edge_pid ? cpu_seconds(o->edge_pid) : -1;
  long allocations0 = allocations;
  f.measuring = 1;
  if (pattern == 0) {
    fleet_run(&f, schedule_steady(&p, sessions, start + MS(5)));
  } else {
    run_burst(&f, &p);
  }
  f.measuring = 0;
  ns_t end = now_ns();
  r.window = (double)(end - start) / 1e9;
  r.cpu_device = (cpu_seconds(0) - cpu0) / r.window;
  r.cpu_peer = peer ? (cpu_seconds(peer) - peer0) / r.window : -1;
  r.cpu_edge = o->edge_pid ? (cpu_seconds(o->edge_pid) - edge0) / r.window : -1;
  r.allocations = allocations - allocations0;

  r.kernel = kernel_between(start, end);
  write_kernel_samples(o, &r, start, end);
  write_samples(o, &r, "outside", &f.outside);
  write_samples(o, &r, "fired", &f.fired);
  r.outside = summarize(&f.outside);
  r.fired = summarize(&f.fired);
  r.false_interrupts = f.false_interrupts;
  fleet_stop(&f);
  r.tether = f.tether;
  r.datagrams = f.tether.datagrams_in + f.tether.datagrams_out;
  if (design == DESIGN_TETHER) {
    r.fired.count = (size_t)f.tether.loop_deadlines_fired;
    r.fired.p50 = f.tether.loop_lateness_p50_us;
    r.fired.p99 = f.tether.loop_lateness_p99_us;
    r.fired.p999 = f.tether.loop_lateness_p999_us;
    r.fired.max = f.tether.loop_lateness_max_us;
    r.fired.min = 0;
  }
  samples_free(&f.fired);
  samples_free(&f.outside);
  if (o->inline_peer) {
    peer_detach(loop);
  } else {
    usleep(100000); /* the peer passes the LEAVEs on before it stops */
    __atomic_store_n(&shm->stop_peer, 1, __ATOMIC_RELAXED);
    waitpid(peer, NULL, 0);
    __atomic_store_n(&shm->stop_peer, 0, __ATOMIC_RELAXED);
  }
  ev_loop_destroy(loop);
  return r;
}

/* ---- Output ----------------------------------------------------------------------------- */

static void print_header(void) {
  printf("%-6s %-4s %-6s %-8s | %-31s | %-31s | %-23s | %s\n", "", "", "", "",
         "fired - due, us (all deadlines)", "INTERRUPTED, from outside, us", "kernel clock_nanosleep",
         "CPU of a core");
  printf("%-6s %-4s %-6s %-8s | %6s %6s %6s %8s | %6s %6s %6s %8s | %5s %5s %5s %5s | %6s %5s %5s\n",
         "n", "load", "cuts", "design", "p50", "p99", "p99.9", "max", "p50", "p99", "p99.9", "max",
         "p50", "p99", "p99.9", "max", "device", "peer", "edge");
}

static void print_result(const struct result *r) {
  printf("%-6d %-4s %-6s %-8s | %6.1f %6.1f %6.1f %8.1f | %6.1f %6.1f %6.1f %8.1f | ",
         r->sessions, load_names[r->load], pattern_names[r->pattern], design_names[r->design],
         r->fired.p50, r->fired.p99, r->fired.p999, r->fired.max, r->outside.p50, r->outside.p99,
         r->outside.p999, r->outside.max);
  if (r->kernel.count > 0) {
    printf("%5.0f %5.0f %5.0f %5.0f | ", r->kernel.p50, r->kernel.p99, r->kernel.p999,
           r->kernel.max);
  } else {
    printf("%5s %5s %5s %5s | ", "-", "-", "-", "-");
  }
  printf("%5.1f%% ", 100 * r->cpu_device);
  if (r->cpu_peer >= 0) printf("%4.1f%% ", 100 * r->cpu_peer); else printf("    - ");
  if (r->cpu_edge >= 0) printf("%4.1f%%", 100 * r->cpu_edge); else printf("    -");
  if (r->connected < r->expected) printf("  (%d of %d connected)", r->connected, r->expected);
  if (r->false_interrupts) printf("  (%d INTERRUPTED without a cut)", r->false_interrupts);
  printf("\n");
  fflush(stdout);
}

static void print_summary_line(FILE *f, const char *name, const struct summary *s) {
  fprintf(f, " %s_n=%zu %s_p50=%.3f %s_p99=%.3f %s_p999=%.3f %s_max=%.3f %s_min=%.3f", name,
          s->count, name, s->p50, name, s->p99, name, s->p999, name, s->max, name, s->min);
}

static void record_result(const struct options *o, const struct result *r) {
  char path[512];
  FILE *f;
  if (o->out_dir == NULL) return;
  snprintf(path, sizeof path, "%s/results.txt", o->out_dir);
  f = fopen(path, "a");
  if (f == NULL) return;
  fprintf(f, "scenario sessions=%d load=%s pattern=%s design=%s window_s=%.3f", r->sessions,
          load_names[r->load], pattern_names[r->pattern], design_names[r->design], r->window);
  print_summary_line(f, "fired", &r->fired);
  print_summary_line(f, "outside", &r->outside);
  print_summary_line(f, "kernel", &r->kernel);
  fprintf(f, " false_interrupts=%d connected=%d cpu_device=%.4f cpu_peer=%.4f cpu_edge=%.4f "
             "allocations=%ld datagrams=%llu source=%u\n",
          r->false_interrupts, r->connected, r->cpu_device, r->cpu_peer, r->cpu_edge,
          r->allocations, (unsigned long long)r->datagrams, r->tether.deadline_source);
  fclose(f);
}

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
  record_cost(o, "descriptors_per_engine", (double)(with - base - 2) / count, "");
  record_cost(o, "descriptors_per_loop", (double)(with - base - count), "");
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

int main(int argc, char **argv) {
  struct options o = parse(argc, argv);
  struct rlimit files;
  pid_t load[64] = {0}, kernel;
  int max_sessions = 0;
  struct tokens tokens;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (o.vectors) return vectors_check();
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  for (int i = 0; i < o.session_count; i++) {
    if (o.sessions[i] > max_sessions) max_sessions = o.sessions[i];
  }
  if ((rlim_t)max_sessions + 64 > files.rlim_cur) {
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
         : o.inline_peer ? "on the bench's own loop, no kernel baseline (timing means nothing)"
                         : "built in");
  printf("lateness = when it ran minus when it was due; \"outside\" = the callback's time minus "
         "(the peer's last datagram to the session + interrupted_after)\n\n");
  print_header();
  if (o.slice && set_slice(o.slice) != 0) {
    fprintf(stderr, "tether-bench: --slice-us: sched_setattr failed (%s); Linux 6.12+ needed\n",
            strerror(errno));
    return 1;
  }
  if (o.slice) printf("the loop and the kernel baseline run with a %lld us slice\n\n", (long long)(o.slice / 1000));
  shared_init(1);
  for (int si = 0; si < o.session_count; si++) {
    for (int li = 0; li < o.load_count; li++) {
      for (int pi = 0; pi < o.pattern_count; pi++) {
        int busy = o.loads[li] ? o.busy_processes : 0;
        __atomic_store_n(&shm->baseline_count, 0, __ATOMIC_RELAXED);
        kernel = o.inline_peer ? 0 : baseline_start(MS(1), o.slice);
        load_start(busy, load);
        for (int di = 0; di < o.design_count; di++) {
          struct result r = run_design(&o, o.sessions[si], o.loads[li], o.patterns[pi],
                                       (enum design)o.designs[di], &tokens);
          print_result(&r);
          record_result(&o, &r);
        }
        children_stop(load, busy);
        __atomic_store_n(&shm->stop_baseline, 1, __ATOMIC_RELAXED);
        if (kernel) waitpid(kernel, NULL, 0);
        __atomic_store_n(&shm->stop_baseline, 0, __ATOMIC_RELAXED);
      }
    }
  }
  if (o.cost) {
    printf("\ncost:\n");
    cost_per_ack(&o);
    cost_create_destroy(&o);
    cost_burst(&o);
  }
  tokens_free(&tokens, max_sessions);
  return 0;
}
