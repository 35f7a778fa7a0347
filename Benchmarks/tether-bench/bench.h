// SPDX-License-Identifier: Apache-2.0
/* tether-bench: how late Tether's deadlines fire, beside the kernel's own wake-up lateness
 * and two libev timer designs, on one loop with 1 to 10,000 sessions, idle and with every
 * core kept busy. Needs only libc, libev and libsodium (Tether is linked in statically), so
 * the same program runs on a build host and on an ARM board. See Benchmarks/README.md. */
#ifndef TETHER_BENCH_H
#define TETHER_BENCH_H

#define _GNU_SOURCE
#include <ev.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../../Tests/c/wire_v2.h"
#include "options.h"
#include "tether.h"

typedef int64_t ns_t;

static inline ns_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (ns_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define MS(x) ((ns_t)(x) * 1000000)

/* Shared between processes, and 64 bits wide even on armv7: read and written atomically. */
static inline ns_t load_ns(const ns_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void store_ns(ns_t *p, ns_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

/* ---- Lateness samples and their percentiles ------------------------------------------ */

struct samples {
  int64_t *values; /* nanoseconds; may be negative (a timer that fired early) */
  size_t count, capacity;
};

struct summary {
  size_t count;
  double p50, p99, p999, max, min; /* microseconds */
};

void samples_init(struct samples *s, size_t capacity);
void samples_add(struct samples *s, int64_t value);
void samples_free(struct samples *s);
struct summary summarize(struct samples *s); /* sorts s */

/* ---- What the bench shares with its child processes (anonymous shared memory) -------- */

struct shared {
  int stop_peer; /* the peer exits */
  int sessions;
  /* A burst: the peer holds what it would pass to the devices from hold_from, passes all
     of it at release_at, then passes nothing until heal_at. */
  ns_t hold_from, release_at, heal_at;
  /* Steady cuts: session i passes nothing during [cut_phase[i] + k * cut_period,
     ... + cut_length) for k = 0 .. cut_count - 1. */
  ns_t cut_period, cut_length;
  int64_t cut_count;
  /* Datagrams the peer passed, both ways (what it dropped for a cut not counted): the same
     count for every design, so a window's traffic can be compared between them. */
  uint64_t datagrams;
};

extern struct shared *shm;
extern ns_t *last_to_device;       /* per session: when the peer last passed it a datagram */
extern ns_t *cut_phase;            /* per session: its first steady cut (0: none) */

void shared_init(int sessions);
/* True while session `index` is cut (steady cut or burst). */
int is_cut(int index, ns_t now);
/* The start of the cut that silenced session `index` at `now`, when its last datagram
   (`last`) came before that cut ended; 0 when no cut explains the silence. */
ns_t cut_explaining(int index, ns_t last, ns_t now);
void *shared_alloc(size_t bytes);

/* ---- Child processes ------------------------------------------------------------------ */

/* The peer: a minimal edge of its own (protocol version 2: INIT, CONFIRM and HEARTBEAT,
   under bench_certificate), or, with `edge` set, a relay to a real server. Either way it
   can cut each session (cut_from/cut_to) or hold, release and cut them all at once (the
   burst fields of `shm`), and it records in last_to_device when it last passed each
   session a datagram. Sessions are told apart by their INIT's token (`tokens`, each
   session's own). */
pid_t peer_start(const struct sockaddr_in *edge, char **tokens, struct sockaddr_in *front);

/* The same peer (without an edge) on the bench's own loop, in this process: for qemu-user,
   which cannot run the bench's child processes here. Timing then means nothing. */
void peer_attach(struct ev_loop *loop, char **tokens, struct sockaddr_in *front);
void peer_detach(struct ev_loop *loop);

/* `count` processes that keep a core busy each until killed, at the default policy. */
void load_start(int count, pid_t *pids);
void children_stop(pid_t *pids, int count);

/* Gives the calling thread a scheduling slice of `slice` (sched_setattr's sched_runtime for
   SCHED_OTHER, honoured by EEVDF since Linux 6.12) at nice value `nice`, keeping
   SCHED_RESET_ON_FORK: a thread with a short slice preempts a busy one when it wakes.
   Returns 0, or -1 (errno set). */
int set_slice(ns_t slice, int nice);

/* CPU seconds a process (0: this one) has used, from /proc; -1 if unknown. */
double cpu_seconds(pid_t pid);
/* This process's resident memory (VmRSS), in bytes; -1 if unknown. */
double resident_bytes(void);
/* Process `pid`'s (0: this one's). */
double resident_bytes_of(pid_t pid);

/* ---- Scheduling of the loop thread (priority.c) --------------------------------------- */

/* Applies `p` to the calling thread with SCHED_RESET_ON_FORK (and `slice`, for default
   and nice). Writes what the kernel reports now into `applied` ("fifo:10"; "default" if a
   real-time policy was refused) and, when a call was refused, why into `why`. 0, or -1. */
int priority_apply(const struct priority *p, ns_t slice, char applied[16], char why[160]);
/* The calling thread's policy as priority_text writes it. */
void priority_current(char out[16]);
/* In a child just forked: the default policy, whatever the parent's. */
void priority_child_default(void);
/* 1 unless process `pid` runs at a real-time policy (the peer and the busy processes
   never may: checked after each is started). */
int runs_at_default(pid_t pid);
/* mlockall(MCL_CURRENT | MCL_FUTURE). 0, or -1 with why in `why`. */
int memory_lock(char why[160]);

/* ---- The baselines, each in a phase of its own (phases.c) ----------------------------- */

/* clock_nanosleep (absolute) every `interval` for `duration`: one lateness sample a wake. */
void kernel_phase(ns_t interval, ns_t duration, struct samples *late);
/* `count` deadlines a `period` apart each, spread over the period, in a heap behind one
   timerfd, for `duration`: one lateness sample a deadline. 0, or -1. */
int bare_phase(int count, ns_t period, ns_t duration, struct samples *late);

/* ---- The designs under test ----------------------------------------------------------- */

struct thresholds {
  ns_t heartbeat, interrupted, retry;
};

struct session; /* designs.c */

/* One design's sessions on one loop, and what they saw. */
struct fleet {
  struct ev_loop *loop;
  enum design design;
  int count;
  struct thresholds t;
  const char *app_id;
  char server[64];
  char **channels, **tokens; /* per session: its channel and its version 2 token */
  uint32_t uid_base;
  struct session *sessions;
  int connected;         /* sessions in CONNECTED now */
  int measuring;         /* samples are taken only while set */
  struct samples fired;  /* libev designs: every deadline, fired minus due */
  struct samples outside; /* INTERRUPTED: callback time minus (last pass + threshold) */
  int false_interrupts;  /* INTERRUPTED while the peer was passing the session's data */
  int refused;           /* libev designs: joins the edge refused */
  struct samples times;  /* when each INTERRUPTED callback ran (if allocated) */
  ns_t stall;            /* the first INTERRUPTED callback keeps the loop this long */
  tether_engine_stats tether; /* Tether: its own figures, read before teardown */
  int own_lateness_off;  /* Tether: the engines' config field of that name */
};

/* Allocates (and touches) the fleet's `count` sessions, so that the resident memory read
   after it is the designs' alone, not the bench's own table. 0, or -1. fleet_start calls it
   when it was not called. */
int fleet_reserve(struct fleet *f, int count);

int fleet_start(struct fleet *f, struct ev_loop *loop, enum design design, int count,
                struct thresholds t, ns_t spread);
void fleet_wait_connected(struct fleet *f, ns_t timeout);
void fleet_run(struct fleet *f, ns_t duration);
/* Tether: the loop's figures now, into f->tether (the libev designs: zeroes). */
void fleet_stats(struct fleet *f);
void fleet_stop(struct fleet *f);
/* Tether: session `index`'s engine. */
tether_engine *fleet_engine(struct fleet *f, int index);

/* --direct: the scale rows (scale.c), Tether's engines straight to --edge. 0. */
int run_scale(const struct options *o, char **channels, char **tokens);

/* ---- Protocol version 2: the bench's own edge (v2.c, on Tests/c/edge_v2.c) ------------- */

enum { V2_TOKEN_TEXT = 338 }; /* a version 2 token's 337 characters and a NUL */
struct v2_link;               /* one session's keys, as the bench's own edge keeps them */
extern const char *const bench_certificate;


/* libsodium and the keys of bench_certificate; 0, or -1. */
int v2_setup(void);
/* A channel token (any uid, never expiring) under bench_certificate. 0, or -1. */
int v2_mint(char out[V2_TOKEN_TEXT], const char *app_id, const char *channel);
/* What tells a version 2 token's INIT apart: the first 8 bytes of the token's nonce, which
   an INIT carries at bytes 61 ... 68 (W = T[0 ..< 11] || T[43 ..< 251]); 0 for a text
   that is no version 2 token. */
uint64_t v2_token_key(const char *text);
struct v2_link *v2_links(int count);
void v2_links_free(struct v2_link *links, int count);
struct v2_link *v2_link_at(struct v2_link *links, int index);
/* The bench edge's answer to a version 2 datagram of session `l` into `out` (room for 300
   bytes): RESPONSE to an INIT (REFUSE_CLEAR if its token does not open), ACCEPT to a
   CONFIRM, HEARTBEAT_ACK to a HEARTBEAT. Returns its size; 0: no answer. */
int v2_answer(struct v2_link *l, const unsigned char *in, size_t n, unsigned char *out);
/* A HEARTBEAT_ACK of `sequence`, sealed as the newest session's next DATA (cost_per_ack). */
int v2_seal_ack(struct v2_link *l, uint32_t sequence, unsigned char *out);

/* --vectors: the libev designs' client against PyNaCl's vectors (vectors.c). 0, or 1. */
int vectors_check(void);

/* Counted by the linker's --wrap of the allocator (main.c). */
extern long allocations;

#endif
