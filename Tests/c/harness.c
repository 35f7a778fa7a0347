// SPDX-License-Identifier: Apache-2.0
/* The C tests' harness: see harness.h. */
#define _GNU_SOURCE
#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- Cases and checks ------------------------------------------------------------------ */

static const char *current = "main";
static int failed_here, passed, failed;

void harness_check(int holds, const char *what, const char *file, int line) {
  if (holds) return;
  fprintf(stderr, "FAIL %s: %s:%d: %s\n", current, file, line, what);
  __atomic_store_n(&failed_here, 1, __ATOMIC_SEQ_CST);
}

void harness_begin(const char *name) {
  static int buffered;
  if (!buffered) setvbuf(stdout, NULL, _IOLBF, 0);
  buffered = 1;
  current = name;
  __atomic_store_n(&failed_here, 0, __ATOMIC_SEQ_CST);
}

void harness_end(void) {
  if (__atomic_load_n(&failed_here, __ATOMIC_SEQ_CST)) {
    failed++;
  } else {
    passed++;
    printf("ok %s\n", current);
  }
  current = "main";
}

void harness_run(const char *name, void (*test)(void)) {
  harness_begin(name);
  test();
  harness_end();
}

int harness_report(const char *binary, const char *note) {
  printf("%s: %d passed, %d failed%s%s\n", binary, passed, failed, note ? ", " : "",
         note ? note : "");
  return failed == 0 && !__atomic_load_n(&failed_here, __ATOMIC_SEQ_CST) ? 0 : 1;
}

int harness_skip(const char *binary, const char *why) {
  printf("%s: SKIPPED, not counted: %s\n", binary, why);
  return 77;
}

/* ---- Time and the loop ------------------------------------------------------------------ */

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int open_descriptors(void) {
  int n = 0;
  for (int fd = 0; fd < 4096; fd++) n += fcntl(fd, F_GETFD) != -1; /* tests open hundreds */
  return n;
}

struct ev_loop *test_loop_new(struct fake_server *s) {
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  if (s && fake_start(loop, s) != 0) CHECK(!"a fake server's socket");
  return loop;
}

void test_loop_destroy(struct ev_loop *loop, struct fake_server *s) {
  if (s) fake_stop(loop, s);
  ev_loop_destroy(loop);
}

static void wake(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)w;
  (void)revents;
  ev_break(loop, EVBREAK_ONE);
}

void run_until(struct ev_loop *loop, int (*done)(void *ctx), void *ctx, double ms) {
  ev_timer t;
  ev_tstamp end;
  ev_now_update(loop);
  end = ev_now(loop) + ms / 1000.0;
  ev_timer_init(&t, wake, ms / 1000.0, 0); /* so that the loop wakes up at the end */
  ev_timer_start(loop, &t);
  while (!(done && done(ctx)) && ev_now(loop) < end) ev_run(loop, EVRUN_ONCE);
  ev_timer_stop(loop, &t);
}

struct count { const int *counter; int target; };
static int reached(void *ctx) {
  const struct count *c = (const struct count *)ctx;
  return *c->counter >= c->target;
}

void run_until_count(struct ev_loop *loop, const int *counter, int target, double ms) {
  struct count c;
  c.counter = counter;
  c.target = target;
  run_until(loop, reached, &c, ms);
}

void run_for(struct ev_loop *loop, double ms) { run_until(loop, NULL, NULL, ms); }

/* ---- The fake edge server --------------------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

size_t fake_datagram(const struct fake_server *s, unsigned char type, const void *body,
                     size_t length, unsigned char *out) {
  out[0] = 'T';
  out[1] = 'H';
  out[2] = 1;
  out[3] = type;
  memcpy(out + 4, s->cookie, 8);
  if (length) memcpy(out + 12, body, length);
  return 12 + length;
}

void fake_send_bytes(struct fake_server *s, const void *bytes, size_t length) {
  sendto(s->fd, bytes, length, 0, (const struct sockaddr *)&s->peer, s->peerlen);
}

void fake_send(struct fake_server *s, unsigned char type, const void *body, size_t length) {
  unsigned char out[1200];
  fake_send_bytes(s, out, fake_datagram(s, type, body, length, out));
}

/* A goodbye goes twice under one cookie: the sessions are counted by cookie. */
static void count_goodbye(struct fake_server *s, const unsigned char *cookie, int *sessions,
                          int *datagrams) {
  (*datagrams)++;
  if (*sessions == 0 || memcmp(s->goodbye_cookie, cookie, 8) != 0) (*sessions)++;
  memcpy(s->goodbye_cookie, cookie, 8);
}

/* The answers; `in` is a whole datagram of `n` bytes with a valid header. */
static void answer(struct fake_server *s, const unsigned char *in, size_t n) {
  unsigned char body[32];
  size_t length;
  memset(body, 0, sizeof body);
  switch (in[3]) {
  case WIRE_JOIN: /* ACCEPT: uid 4242, server time 0, the token's time left, not resumed */
    s->joins++;
    if (s->silent) return;
    put32(body, 4242);
    put32(body + 12, s->token_ms);
    fake_send(s, WIRE_ACCEPT, body, 17);
    return;
  case WIRE_LOGIN: /* LOGIN_ACCEPT (server time 0, no expiry, a relogin resumed) */
    if (n < 13) return;
    if (in[12] & 1) s->relogins++; else s->logins++;
    if (s->silent) return;
    if (s->refuse_code) {
      body[0] = (unsigned char)s->refuse_code;
      fake_send(s, WIRE_LOGIN_REFUSE, body, 1);
      return;
    }
    body[12] = in[12] & 1;
    put32(body + 13, s->session);
    fake_send(s, WIRE_LOGIN_ACCEPT, body, 17);
    return;
  case WIRE_HEARTBEAT:
  case WIRE_LOGIN_HEARTBEAT: /* HEARTBEAT_ACK: the sequence, server time 0 */
    if (n != (in[3] == WIRE_HEARTBEAT ? 16u : 24u)) return;
    s->heartbeats++;
    if (in[3] == WIRE_LOGIN_HEARTBEAT) s->events_received = (int)get32(in + 20);
    if (s->silent) return;
    memcpy(body, in + 12, 4);
    fake_send(s, WIRE_HEARTBEAT_ACK, body, 12);
    return;
  case WIRE_CHANNEL_OPERATION: /* CHANNEL_ACK: the session, the operation's sequence */
    if (n < 22) return;
    s->operations++;
    s->last_operation = get32(in + 16);
    s->last_operation_kind = in[20];
    length = in[21] < sizeof s->last_channel ? in[21] : sizeof s->last_channel - 1;
    if (length > n - 22) length = n - 22;
    memcpy(s->last_channel, in + 22, length);
    s->last_channel[length] = 0;
    if (s->silent) return;
    put32(body, s->session);
    memcpy(body + 4, in + 16, 4);
    fake_send(s, WIRE_CHANNEL_ACK, body, 8);
    return;
  case WIRE_LEAVE: count_goodbye(s, in + 4, &s->leaves, &s->leave_datagrams); return;
  case WIRE_LOGOUT: count_goodbye(s, in + 4, &s->logouts, &s->logout_datagrams); return;
  default: return;
  }
}

static void readable(struct ev_loop *loop, ev_io *w, int revents) {
  struct fake_server *s = (struct fake_server *)w->data;
  unsigned char in[1500];
  struct sockaddr_storage from;
  socklen_t fromlen = sizeof from;
  ssize_t n;
  (void)loop;
  (void)revents;
  while ((n = recvfrom(s->fd, in, sizeof in, 0, (struct sockaddr *)&from, &fromlen)) > 0) {
    if (n >= 12 && in[0] == 'T' && in[1] == 'H' && in[2] == 1) {
      memcpy(s->cookie, in + 4, 8);
      memcpy(&s->peer, &from, fromlen);
      s->peerlen = fromlen;
      answer(s, in, (size_t)n);
    }
    fromlen = sizeof from;
  }
}

int fake_start_at(struct ev_loop *loop, struct fake_server *s, const char *host, unsigned port) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(s, 0, sizeof *s);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (s->fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(s->fd, (struct sockaddr *)&a, &len) != 0) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    return -1;
  }
  s->port = ntohs(a.sin_port);
  snprintf(s->address, sizeof s->address, "%s:%u", host, s->port);
  ev_io_init(&s->io, readable, s->fd, EV_READ);
  s->io.data = s;
  ev_io_start(loop, &s->io);
  return 0;
}

int fake_start(struct ev_loop *loop, struct fake_server *s) {
  return fake_start_at(loop, s, "127.0.0.1", 0);
}

void fake_stop(struct ev_loop *loop, struct fake_server *s) {
  if (s->fd < 0) return;
  ev_io_stop(loop, &s->io);
  close(s->fd);
  s->fd = -1;
}

void fake_push_acks(struct fake_server *s, int count) {
  unsigned char body[12];
  memset(body, 0, sizeof body);
  for (int i = 0; i < count; i++) fake_send(s, WIRE_HEARTBEAT_ACK, body, sizeof body);
}

void fake_push_presence(struct fake_server *s) {
  unsigned char body[2 + 3 * 9];
  body[0] = 0;
  body[1] = 3;
  for (int i = 0; i < 3; i++) {
    unsigned char *entry = body + 2 + 9 * i;
    put32(entry, (uint32_t)(7 + i));
    entry[4] = 2; /* ALIVE */
    put32(entry + 5, 5);
  }
  fake_send(s, WIRE_PRESENCE, body, sizeof body);
}

void fake_push_kick(struct fake_server *s, unsigned char reason) {
  fake_send(s, WIRE_KICK, &reason, 1);
}

void fake_push_member_event(struct fake_server *s, uint32_t sequence, int kind,
                            const char *channel, const char *user) {
  unsigned char body[200];
  size_t c = strlen(channel), u = strlen(user), at = 9;
  put32(body, s->session);
  put32(body + 4, sequence);
  body[8] = 1; /* one entry */
  body[at++] = (unsigned char)kind;
  body[at++] = (unsigned char)c;
  memcpy(body + at, channel, c);
  at += c;
  body[at++] = (unsigned char)u;
  memcpy(body + at, user, u);
  at += u;
  fake_send(s, WIRE_MEMBER_EVENTS, body, at);
}

/* ---- What a connection reported ------------------------------------------------------- */

void log_state(struct state_log *log, int state, int reason) {
  if (log->count < 64) {
    log->states[log->count] = state;
    log->reasons[log->count] = reason;
  }
  log->count++;
}

int last_reason_is(const struct state_log *log, int reason) {
  return log->count > 0 && log->count <= 64 && log->reasons[log->count - 1] == reason;
}

int last_state_is(const struct state_log *log, int state) {
  return log->count > 0 && log->count <= 64 && log->states[log->count - 1] == state;
}

/* ---- Configs ---------------------------------------------------------------------------- */

tether_engine_config engine_config(const char *server) {
  tether_engine_config c;
  tether_engine_config_init(&c);
  c.app_id = "app-1", c.server = server;
  return c;
}

tether_rtm_config rtm_config(const char *server) {
  tether_rtm_config c;
  tether_rtm_config_init(&c);
  c.app_id = "app-1", c.server = server;
  return c;
}
