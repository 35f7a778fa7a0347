// SPDX-License-Identifier: Apache-2.0
/* The three designs, each as a fleet of sessions on one libev loop talking to the peer:
 *
 *  - tether:   Tether's engines (the library as users link it).
 *  - previous: Tether's driver before the shared deadline source: one ev_timer per session
 *              at its earliest deadline, moved only when that deadline gets earlier (libev's
 *              "be smart about timeouts", method 3); a packet only writes a time.
 *  - naive:    one ev_timer per deadline, the interrupted one stopped and started again on
 *              every packet (method 1, "almost always a bad idea").
 *
 * The two libev designs are small sessions of their own (a join until ACCEPT, heartbeats,
 * INTERRUPTED, a rejoin) speaking protocol version 2 as a hand-written C client on libsodium
 * does (client_v2.c: a handshake per join, sealed DATA), so the peer and the edge treat them
 * like engines and their CPU figures carry the same cryptography. Only the wire is
 * client_v2.c's; the timers are the designs' own. They record every deadline they run,
 * fired minus due, exactly. */
#include "bench.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_v2.h"

enum { JOINING = 1, CONNECTED = 2 };

struct session {
  struct fleet *fleet;
  int index;
  int connected;
  tether_engine *engine; /* tether */
  /* The libev designs. */
  int fd, state;
  struct v2_client v2; /* the wire: keys, attempts, the CONFIRM out */
  uint32_t sequence;
  ns_t last_data, next_heartbeat, next_join;
  uint32_t attempts; /* the join effort's attempts so far (its retry backoff) */
  uint64_t draws;    /* the session's own random sequence (xorshift64) for the backoff */
  ev_io io;
  ev_timer timer;    /* previous: the one timer; naive: heartbeat, or JOIN retry */
  ev_timer watchdog; /* naive: interrupted, restarted on every packet */
  ns_t armed_for;    /* previous: the deadline the timer was armed for (0: none) */
};

static double seconds(ns_t ns) { return ns > 0 ? (double)ns / 1e9 : 0; }

static void set_connected(struct session *s, int connected) {
  if (connected != s->connected) s->fleet->connected += connected ? 1 : -1;
  s->connected = connected;
}

/* INTERRUPTED reached the app at `now`: one outside sample, measured from the last datagram
   the peer passed to this session. */
static void interrupted(struct session *s, ns_t now) {
  struct fleet *f = s->fleet;
  ns_t last = load_ns(&last_to_device[s->index]);
  if (!f->measuring) return;
  samples_add(&f->times, now);
  if (f->stall && f->times.count == 1) {
    for (ns_t end = now + f->stall; now_ns() < end;) {
    }
  }
  if (cut_explaining(s->index, last, now) == 0) {
    f->false_interrupts++;
    return;
  }
  samples_add(&f->outside, now - (last + f->t.interrupted));
}

/* ---- tether ----------------------------------------------------------------------------- */

static void tether_state(void *ctx, tether_connection_state state,
                         tether_connection_changed_reason why) {
  struct session *s = (struct session *)ctx;
  ns_t now = now_ns();
  set_connected(s, state == TETHER_CONNECTION_STATE_CONNECTED);
  if (why == TETHER_CONNECTION_CHANGED_INTERRUPTED) interrupted(s, now);
}

static int tether_create(struct session *s) {
  struct fleet *f = s->fleet;
  tether_engine_config c;
  tether_engine_handler h;
  tether_engine_config_init(&c);
  c.app_id = f->app_id;
  c.server = f->server;
  c.heartbeat_interval_ms = (uint32_t)(f->t.heartbeat / MS(1));
  c.interrupted_after_ms = (uint32_t)(f->t.interrupted / MS(1));
  c.lost_after_ms = 3 * c.interrupted_after_ms;
  c.remote_offline_after_ms = 5 * c.interrupted_after_ms;
  c.give_up_after_ms = 600000;
  c.retry_base_ms = (uint32_t)(f->t.retry / MS(1));
  c.retry_cap_ms = 2 * c.retry_base_ms;
  c.own_lateness_off = (uint32_t)f->own_lateness_off;
  tether_engine_handler_init(&h);
  h.on_connection_state_changed = tether_state;
  return tether_engine_create(f->loop, &c, &h, s, &s->engine);
}

/* ---- The libev designs: the session ----------------------------------------------------- */

static void send_join(struct session *s, ns_t now) {
  unsigned char p[V2_CLIENT_OUT];
  /* INIT (or the CONFIRM out, again); the rejoin flag once the session has been joined. */
  int n = v2_client_join(&s->v2, s->state == JOINING && s->next_heartbeat != 0, now, p);
  if (n > 0) send(s->fd, p, (size_t)n, 0);
}

static void send_heartbeat(struct session *s) {
  unsigned char p[64];
  int n = v2_client_heartbeat(&s->v2, ++s->sequence, p);
  if (n > 0) send(s->fd, p, (size_t)n, 0);
}

static void record(struct session *s, ns_t now, ns_t due) {
  if (s->fleet->measuring) samples_add(&s->fleet->fired, now - due);
}

/* The delay before the next join attempt, drawn as the library's RetryPolicy draws it:
   after attempt n, max(base / 4, uniform(0 ... min(cap, base * 2^(n-1)))), the cap twice
   the base (tether_create's). With a fixed delay the libev designs sent about 9 % fewer
   INITs per rejoin than Tether in the churn window (counted by a helper with an LD_PRELOAD
   wrapper: 16,735 ephemeral keys against 18,205), most inside the cuts, where the peer
   counts no datagram: the two did different protocol work under the 5 % rule. */
static ns_t retry_after(struct session *s) {
  ns_t base = s->fleet->t.retry, cap = 2 * base, ceiling = base;
  uint64_t x = s->draws ? s->draws : 0x9E3779B97F4A7C15ull * (uint64_t)(s->index + 1);
  for (uint32_t n = 1; n < s->attempts && ceiling < cap; n++) ceiling *= 2;
  if (ceiling > cap) ceiling = cap;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  s->draws = x;
  s->attempts++;
  ns_t drawn = (ns_t)(x % (uint64_t)(ceiling + 1));
  return drawn > base / 4 ? drawn : base / 4;
}

static ns_t next_beat(struct session *s, ns_t now) {
  ns_t next = s->next_heartbeat + s->fleet->t.heartbeat;
  return next > now ? next : now + s->fleet->t.heartbeat;
}

/* Back to joining, with a join at once: the link went quiet (INTERRUPTED), or the edge
   lost the session (a RESET, as the library takes it: no INTERRUPTED). */
static void go_joining(struct session *s, ns_t now, int went_quiet) {
  set_connected(s, 0);
  s->state = JOINING;
  if (went_quiet) interrupted(s, now);
  send_join(s, now);
  s->attempts = 1;
  s->next_join = now + retry_after(s);
}

static void go_interrupted(struct session *s, ns_t now) { go_joining(s, now, 1); }

/* What a datagram from the peer did: TAKE_DROPPED (nothing: not the session's, or it did
   not open), TAKE_TAKEN, TAKE_JOINED (the session has just connected) or TAKE_REJOINING
   (a RESET: joining again). A handshake step's reply goes out at once. */
enum { TAKE_DROPPED = -1, TAKE_TAKEN = 0, TAKE_JOINED = 1, TAKE_REJOINING = 2 };

static int take(struct session *s, const unsigned char *p, ssize_t n, ns_t now) {
  unsigned char reply[V2_CLIENT_OUT];
  size_t reply_length = 0;
  enum v2_client_event event = v2_client_take(&s->v2, p, (size_t)n, now, reply, &reply_length);
  if (reply_length > 0) send(s->fd, reply, reply_length, 0);
  switch (event) {
  case V2_CLIENT_DROPPED: return TAKE_DROPPED;
  case V2_CLIENT_ACCEPTED:
    if (s->state != JOINING) return TAKE_TAKEN;
    s->state = CONNECTED;
    s->last_data = now;
    s->next_heartbeat = now + s->fleet->t.heartbeat;
    set_connected(s, 1);
    return TAKE_JOINED;
  case V2_CLIENT_ACK:
    if (s->state == CONNECTED) s->last_data = now;
    return TAKE_TAKEN;
  case V2_CLIENT_RESET:
    if (s->state != CONNECTED) return TAKE_TAKEN;
    go_joining(s, now, 0);
    return TAKE_REJOINING;
  case V2_CLIENT_REFUSED:
    /* A bench token the edge refuses will not join: said once, and the session keeps
       retrying at its retry deadline (the row reports it not connected). */
    if (!s->fleet->refused++)
      fprintf(stderr, "tether-bench: %s session %d refused by the edge (reason %d)\n",
              design_names[s->fleet->design], s->index, s->v2.refusal);
    return TAKE_TAKEN;
  default: return TAKE_TAKEN;
  }
}

/* ---- previous: one timer per session at its earliest deadline (method 3) ---------------- */

static ns_t previous_deadline(struct session *s) {
  ns_t interrupted = s->last_data + s->fleet->t.interrupted;
  if (s->state == JOINING) return s->next_join;
  return s->next_heartbeat < interrupted ? s->next_heartbeat : interrupted;
}

static void previous_rearm(struct session *s) {
  ns_t deadline = previous_deadline(s);
  if (s->armed_for && s->armed_for <= deadline && ev_is_active(&s->timer)) return;
  ev_timer_stop(s->fleet->loop, &s->timer);
  ev_timer_set(&s->timer, seconds(deadline - now_ns()), 0);
  ev_timer_start(s->fleet->loop, &s->timer);
  s->armed_for = deadline;
}

static void previous_fired(struct ev_loop *loop, ev_timer *w, int revents) {
  struct session *s = (struct session *)w->data;
  ns_t now = now_ns(), interrupted_at = s->last_data + s->fleet->t.interrupted;
  (void)loop;
  (void)revents;
  s->armed_for = 0;
  if (s->state == JOINING && s->next_join <= now) {
    record(s, now, s->next_join);
    send_join(s, now);
    s->next_join = now + retry_after(s);
  } else if (s->state == CONNECTED && interrupted_at <= now) {
    record(s, now, interrupted_at);
    go_interrupted(s, now);
  } else if (s->state == CONNECTED && s->next_heartbeat <= now) {
    record(s, now, s->next_heartbeat);
    send_heartbeat(s);
    s->next_heartbeat = next_beat(s, now);
  }
  previous_rearm(s);
}

/* ---- naive: a timer per deadline, stopped and started on every packet (method 1) -------- */

static void naive_restart(struct ev_loop *loop, ev_timer *w, ns_t after) {
  ev_timer_stop(loop, w);
  ev_timer_set(w, seconds(after), 0);
  ev_timer_start(loop, w);
}

static void naive_timer(struct ev_loop *loop, ev_timer *w, int revents) {
  struct session *s = (struct session *)w->data;
  ns_t now = now_ns();
  (void)revents;
  if (s->state == JOINING) {
    record(s, now, s->next_join);
    send_join(s, now);
    s->next_join = now + retry_after(s);
    naive_restart(loop, w, s->next_join - now);
  } else {
    record(s, now, s->next_heartbeat);
    send_heartbeat(s);
    s->next_heartbeat = next_beat(s, now);
    naive_restart(loop, w, s->next_heartbeat - now);
  }
}

static void naive_watchdog(struct ev_loop *loop, ev_timer *w, int revents) {
  struct session *s = (struct session *)w->data;
  ns_t now = now_ns();
  (void)revents;
  if (s->state != CONNECTED) return;
  record(s, now, s->last_data + s->fleet->t.interrupted);
  go_interrupted(s, now);
  naive_restart(loop, &s->timer, s->next_join - now);
}

/* ---- The libev designs: socket and start ------------------------------------------------ */

static void probe_readable(struct ev_loop *loop, ev_io *w, int revents) {
  struct session *s = (struct session *)w->data;
  unsigned char p[1500];
  ssize_t n;
  (void)revents;
  for (int reads = 0; reads < 64 && (n = recv(s->fd, p, sizeof p, MSG_DONTWAIT)) > 0; reads++) {
    ns_t now = now_ns();
    int taken = take(s, p, n, now);
    if (taken == TAKE_DROPPED || s->fleet->design != DESIGN_NAIVE) continue;
    if (taken == TAKE_REJOINING) {
      ev_timer_stop(loop, &s->watchdog);
      naive_restart(loop, &s->timer, s->next_join - now);
    } else if (s->state == CONNECTED) {
      if (taken == TAKE_JOINED) naive_restart(loop, &s->timer, s->fleet->t.heartbeat);
      naive_restart(loop, &s->watchdog, s->fleet->t.interrupted);
    }
  }
  if (s->fleet->design == DESIGN_PREVIOUS) previous_rearm(s);
}

static int probe_create(struct session *s, const struct sockaddr_in *server) {
  struct fleet *f = s->fleet;
  if (f->tokens == NULL || v2_client_init(&s->v2, f->tokens[s->index], f->app_id,
                                           f->channels[s->index],
                                           f->uid_base + (uint32_t)s->index) != 0)
    return -1;
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (s->fd < 0 || connect(s->fd, (const struct sockaddr *)server, sizeof *server) != 0) return -1;
  ev_io_init(&s->io, probe_readable, s->fd, EV_READ);
  s->io.data = s;
  ev_io_start(f->loop, &s->io);
  if (f->design == DESIGN_PREVIOUS) {
    ev_timer_init(&s->timer, previous_fired, 0, 0);
  } else {
    ev_timer_init(&s->timer, naive_timer, 0, 0);
    ev_timer_init(&s->watchdog, naive_watchdog, 0, 0);
  }
  s->timer.data = s;
  s->watchdog.data = s;
  return 0;
}

static void probe_join(struct session *s) {
  ns_t now = now_ns();
  s->state = JOINING;
  send_join(s, now);
  s->attempts = 1;
  s->next_join = now + retry_after(s);
  if (s->fleet->design == DESIGN_PREVIOUS) {
    previous_rearm(s);
  } else {
    naive_restart(s->fleet->loop, &s->timer, s->next_join - now);
  }
}

static void probe_stop(struct session *s) {
  unsigned char p[64];
  int n;
  if (s->fd >= 0) {
    n = v2_client_leave(&s->v2, p); /* LEAVE, so the edge forgets the session at once */
    if (n > 0) send(s->fd, p, (size_t)n, 0);
    ev_io_stop(s->fleet->loop, &s->io);
    ev_timer_stop(s->fleet->loop, &s->timer);
    ev_timer_stop(s->fleet->loop, &s->watchdog);
    close(s->fd);
    s->fd = -1;
  }
  v2_client_wipe(&s->v2);
}

/* ---- Fleets ----------------------------------------------------------------------------- */

static void parse_server(const char *text, struct sockaddr_in *out) {
  unsigned port = 0;
  char host[32] = "127.0.0.1";
  memset(out, 0, sizeof *out);
  sscanf(text, "%31[^:]:%u", host, &port);
  out->sin_family = AF_INET;
  out->sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, host, &out->sin_addr);
}

struct starter {
  struct fleet *fleet;
  int next;
  ns_t start, spread;
};

/* Joins the sessions whose turn has come: spread evenly over `spread`, so their
   heartbeats (and deadlines) are spread over the heartbeat period. */
static void start_due(struct ev_loop *loop, ev_timer *w, int revents) {
  struct starter *st = (struct starter *)w->data;
  struct fleet *f = st->fleet;
  ns_t elapsed = now_ns() - st->start;
  (void)revents;
  while (st->next < f->count &&
         (f->count == 1 || elapsed >= st->spread * st->next / (f->count - 1))) {
    struct session *s = &f->sessions[st->next++];
    if (f->design == DESIGN_TETHER) {
      tether_join_channel(s->engine, f->tokens ? f->tokens[s->index] : NULL,
                          f->channels[s->index], f->uid_base + (uint32_t)s->index);
    } else {
      probe_join(s);
    }
  }
  if (st->next >= f->count) ev_break(loop, EVBREAK_ONE);
}

int fleet_reserve(struct fleet *f, int count) {
  f->sessions = calloc((size_t)count, sizeof *f->sessions);
  if (f->sessions == NULL) return -1;
  memset(f->sessions, 0, (size_t)count * sizeof *f->sessions); /* resident now, not later */
  return 0;
}

tether_engine *fleet_engine(struct fleet *f, int index) { return f->sessions[index].engine; }

int fleet_start(struct fleet *f, struct ev_loop *loop, enum design design, int count,
                struct thresholds t, ns_t spread) {
  struct sockaddr_in server;
  struct starter st;
  ev_timer tick;
  f->loop = loop;
  f->design = design;
  f->count = count;
  f->t = t;
  f->connected = 0;
  f->measuring = 0;
  f->false_interrupts = 0;
  f->refused = 0;
  if (f->sessions == NULL && fleet_reserve(f, count) != 0) return -1;
  parse_server(f->server, &server);
  for (int i = 0; i < count; i++) {
    struct session *s = &f->sessions[i];
    s->fleet = f;
    s->index = i;
    s->fd = -1;
    if ((design == DESIGN_TETHER ? tether_create(s) : probe_create(s, &server)) != 0) {
      fprintf(stderr, "tether-bench: session %d of %s could not be made\n", i,
              design_names[design]);
      return -1;
    }
  }
  st.fleet = f;
  st.next = 0;
  st.start = now_ns();
  st.spread = spread;
  ev_timer_init(&tick, start_due, 0, 0.001);
  tick.data = &st;
  ev_timer_start(loop, &tick);
  ev_run(loop, 0);
  ev_timer_stop(loop, &tick);
  return 0;
}

static void stop_running(struct ev_loop *loop, ev_timer *w, int revents) {
  struct fleet *f = (struct fleet *)w->data;
  (void)revents;
  if (f->connected == f->count || w->repeat == 0) ev_break(loop, EVBREAK_ONE);
}

void fleet_wait_connected(struct fleet *f, ns_t timeout) {
  ev_timer poll, limit;
  ev_timer_init(&poll, stop_running, 0.005, 0.005);
  ev_timer_init(&limit, stop_running, seconds(timeout), 0);
  poll.data = limit.data = f;
  ev_timer_start(f->loop, &poll);
  ev_timer_start(f->loop, &limit);
  if (f->connected < f->count) ev_run(f->loop, 0);
  ev_timer_stop(f->loop, &poll);
  ev_timer_stop(f->loop, &limit);
}

void fleet_run(struct fleet *f, ns_t duration) {
  ev_timer limit;
  ev_timer_init(&limit, stop_running, seconds(duration), 0);
  limit.data = f;
  ev_timer_start(f->loop, &limit);
  ev_run(f->loop, 0);
  ev_timer_stop(f->loop, &limit);
}

void fleet_stats(struct fleet *f) {
  memset(&f->tether, 0, sizeof f->tether);
  f->tether.size = sizeof f->tether;
  if (f->design == DESIGN_TETHER && f->count > 0) {
    tether_engine_get_stats(f->sessions[0].engine, &f->tether);
  }
}

void fleet_stop(struct fleet *f) {
  fleet_stats(f);
  for (int i = 0; i < f->count; i++) {
    struct session *s = &f->sessions[i];
    if (f->design == DESIGN_TETHER) {
      tether_leave_channel(s->engine);
      tether_engine_destroy(s->engine);
    } else {
      probe_stop(s);
    }
  }
  ev_run(f->loop, EVRUN_NOWAIT);
  free(f->sessions);
  f->sessions = NULL;
}
