// SPDX-License-Identifier: Apache-2.0
/* The C tests' harness: see harness.h. */
#define _GNU_SOURCE
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sodium.h>
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

/* ---- This machine's pace ----------------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *values, int count) {
  qsort(values, (size_t)count, sizeof *values, compare_doubles);
  return values[count / 2];
}

/* One datagram through both sides, `count` times: sealed, sent from one loopback socket
   to another, received and opened. Returns the microseconds each took, or -1. */
static double datagram_round_us(int from, int to, int count) {
  unsigned char key[32] = {1}, nonce[12] = {0}, plain[64] = {2}, sealed[64 + 16], out[64];
  unsigned long long length = 0;
  double start = now_ms();
  for (int i = 0; i < count; i++) {
    nonce[0] = (unsigned char)i;
    crypto_aead_chacha20poly1305_ietf_encrypt(sealed, &length, plain, sizeof plain, NULL, 0,
                                              NULL, nonce, key);
    if (send(from, sealed, (size_t)length, 0) != (ssize_t)length) return -1;
    if (recv(to, sealed, sizeof sealed, 0) != (ssize_t)sizeof sealed) return -1;
    if (crypto_aead_chacha20poly1305_ietf_decrypt(out, NULL, NULL, sealed, sizeof sealed,
                                                  NULL, 0, nonce, key) != 0)
      return -1;
  }
  return (now_ms() - start) * 1000.0 / count;
}

/* A handshake's crypto on both sides, without its datagrams. */
static double handshake_crypto_us(void) {
  unsigned char secret[2][32], public_key[2][32], shared[32], key[32] = {3};
  unsigned char nonce[24] = {0}, token[256] = {4}, sealed[256 + 16], out[256];
  unsigned long long length = 0;
  double start = now_ms();
  crypto_aead_xchacha20poly1305_ietf_encrypt(sealed, &length, token, sizeof token, NULL, 0,
                                             NULL, nonce, key);
  for (int side = 0; side < 2; side++) {
    randombytes_buf(secret[side], sizeof secret[side]);
    if (crypto_scalarmult_base(public_key[side], secret[side]) != 0) return -1;
  }
  for (int side = 0; side < 2; side++) {
    if (crypto_scalarmult(shared, secret[side], public_key[1 - side]) != 0) return -1;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(out, NULL, NULL, sealed, length, NULL, 0,
                                                   nonce, key) != 0)
      return -1;
  }
  return (now_ms() - start) * 1000.0;
}

static struct harness_pace measure_pace(void) {
  struct harness_pace pace = {-1, -1};
  struct sockaddr_in address;
  socklen_t length = sizeof address;
  double rounds[9], crypto[9];
  int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (sodium_init() < 0 || a < 0 || b < 0 ||
      bind(b, (struct sockaddr *)&address, sizeof address) != 0 ||
      getsockname(b, (struct sockaddr *)&address, &length) != 0 ||
      connect(a, (struct sockaddr *)&address, sizeof address) != 0)
    goto done;
  datagram_round_us(a, b, 20); /* the first calls: pages, caches, valgrind's translation */
  handshake_crypto_us();
  for (int i = 0; i < 9; i++) {
    rounds[i] = datagram_round_us(a, b, 50);
    crypto[i] = handshake_crypto_us();
    if (rounds[i] < 0 || crypto[i] < 0) goto done;
  }
  pace.datagram_us = median(rounds, 9);
  pace.handshake_us = median(crypto, 9) + 4 * pace.datagram_us;
done:
  if (a >= 0) close(a);
  if (b >= 0) close(b);
  return pace;
}

static struct harness_pace pace;

/* Measured once, whichever thread asks first (the others wait for it). */
static void measure_once(void) {
  pace = measure_pace();
  if (pace.datagram_us < 0) {
    /* No loopback datagram went through: the case that asked fails, saying so, and the
       figures below (a slow machine's) only keep the others from waiting forever. */
    harness_check(0, "the machine's pace was measured (a loopback datagram went through)",
                  __FILE__, __LINE__);
    pace.datagram_us = 100, pace.handshake_us = 10000;
  } else {
    printf("pace: a datagram through both sides costs %.1f us here, a handshake's crypto "
           "and datagrams %.0f us\n",
           pace.datagram_us, pace.handshake_us);
  }
}

static pthread_mutex_t pace_lock = PTHREAD_MUTEX_INITIALIZER;

struct harness_pace harness_pace(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  struct harness_pace now;
  pthread_once(&once, measure_once);
  pthread_mutex_lock(&pace_lock);
  now = pace;
  pthread_mutex_unlock(&pace_lock);
  return now;
}

struct harness_pace harness_pace_again(void) {
  static double measured_at; /* within 2 s of the last measure, that one stands */
  struct harness_pace before = harness_pace(), fresh;
  if (measured_at > 0 && now_ms() - measured_at < 2000) return before;
  fresh = measure_pace();
  if (fresh.datagram_us < 0) return before;
  pthread_mutex_lock(&pace_lock);
  pace = fresh;
  measured_at = now_ms();
  pthread_mutex_unlock(&pace_lock);
  if (fresh.datagram_us > 2 * before.datagram_us || 2 * fresh.datagram_us < before.datagram_us)
    printf("pace: now a datagram %.1f us, a handshake %.0f us (was %.1f and %.0f)\n",
           fresh.datagram_us, fresh.handshake_us, before.datagram_us, before.handshake_us);
  return fresh;
}

double harness_stretch(double datagrams_per_second, int handshakes, double window_ms) {
  struct harness_pace pace = harness_pace();
  double load = datagrams_per_second * pace.datagram_us / 1e6 / 0.25;
  double start = window_ms > 0 ? handshakes * pace.handshake_us / 1000.0 / (window_ms / 2) : 0;
  double stretch = load > start ? load : start;
  return stretch > 1 ? stretch : 1;
}

/* The entries of /proc/self/fd, less the directory's own: a few system calls. Asking
   each of 4096 numbers with fcntl took 4096 calls, some 300 ms in an emulated ARM
   kernel: a stall of the loop long enough to interrupt the fleet a test was measuring. */
int open_descriptors(void) {
  DIR *directory = opendir("/proc/self/fd");
  struct dirent *entry;
  int n = 0;
  if (directory == NULL) {
    for (int fd = 0; fd < 4096; fd++) n += fcntl(fd, F_GETFD) != -1; /* tests open hundreds */
    return n;
  }
  while ((entry = readdir(directory)) != NULL) n += entry->d_name[0] != '.';
  closedir(directory);
  return n - 1;
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

/* The keys of HARNESS_CERTIFICATE, made once. */
static const struct edge_v2_certificate *harness_keys(void) {
  static struct edge_v2_certificate keys;
  static int made;
  if (!__atomic_load_n(&made, __ATOMIC_ACQUIRE)) {
    struct edge_v2_certificate fresh;
    if (edge_v2_certificate_keys(&fresh, HARNESS_CERTIFICATE, strlen(HARNESS_CERTIFICATE)) != 0)
      CHECK(!"the harness certificate's keys");
    keys = fresh; /* the same bytes whichever thread writes them */
    __atomic_store_n(&made, 1, __ATOMIC_RELEASE);
  }
  return &keys;
}

/* Tokens minted for the fake server: eight per thread at a time (a test uses one or two). */
static const char *harness_token(uint8_t kind, const char *name, uint32_t uid) {
  static __thread char pool[8][338];
  static __thread unsigned next;
  uint8_t random[56];
  char *out = pool[next++ % 8];
  randombytes_buf(random, sizeof random);
  if (edge_v2_mint(out, harness_keys(), kind, "app-1", name, uid, 0, random) != 0)
    CHECK(!"a harness token");
  return out;
}

const char *channel_token(const char *channel, uint32_t uid) {
  return harness_token(1, channel, uid);
}

const char *login_token(const char *user) { return harness_token(2, user, 0); }

/* The session heard last, or NULL. */
static struct fake_session *last_session(struct fake_server *s) {
  return s->last >= 0 ? &s->sessions[s->last] : NULL;
}

/* `type` and `body` as the payload of session `f`'s next DATA datagram, into `out`. */
static size_t seal_for(struct fake_session *f, unsigned char type, const void *body,
                       size_t length, unsigned char *out) {
  unsigned char payload[1200];
  int sealed;
  if (f == NULL || !f->confirmed || length > sizeof payload - 1) return 0;
  payload[0] = type;
  if (length) memcpy(payload + 1, body, length);
  sealed = edge_v2_seal(out, &f->keys, payload, 1 + length);
  return sealed > 0 ? (size_t)sealed : 0;
}

size_t fake_datagram(struct fake_server *s, unsigned char type, const void *body, size_t length,
                     unsigned char *out) {
  return seal_for(last_session(s), type, body, length, out);
}

void fake_send_bytes(struct fake_server *s, const void *bytes, size_t length) {
  sendto(s->fd, bytes, length, 0, (const struct sockaddr *)&s->peer, s->peerlen);
}

/* Sealed for session `f` and sent to its address. */
static void send_to(struct fake_server *s, struct fake_session *f, unsigned char type,
                    const void *body, size_t length) {
  unsigned char out[1200 + EDGE_V2_DATA_OVERHEAD];
  size_t n = seal_for(f, type, body, length, out);
  if (n > 0) sendto(s->fd, out, n, 0, (const struct sockaddr *)&f->peer, f->peerlen);
}

void fake_send(struct fake_server *s, unsigned char type, const void *body, size_t length) {
  send_to(s, last_session(s), type, body, length);
}

/* A goodbye goes twice under one session: the sessions are counted by session id. */
static void count_goodbye(struct fake_server *s, struct fake_session *f, int *sessions,
                          int *datagrams) {
  (*datagrams)++;
  if (*sessions == 0 || s->goodbye_session != f->keys.id) (*sessions)++;
  s->goodbye_session = f->keys.id;
}

/* The answers to an opened DATA payload of session `f` (`in`: type byte and body). */
static void answer(struct fake_server *s, struct fake_session *f, const unsigned char *in,
                   size_t n) {
  unsigned char body[32];
  size_t length;
  memset(body, 0, sizeof body);
  switch (in[0]) {
  case WIRE_HEARTBEAT:
  case WIRE_LOGIN_HEARTBEAT: /* HEARTBEAT_ACK: the sequence, server time 0 */
    if (n != (in[0] == WIRE_HEARTBEAT ? 9u : 13u)) return;
    s->heartbeats++;
    if (in[0] == WIRE_LOGIN_HEARTBEAT) s->events_received = (int)get32(in + 9);
    if (s->silent) return;
    memcpy(body, in + 1, 4);
    send_to(s, f, WIRE_HEARTBEAT_ACK, body, 12);
    return;
  case WIRE_CHANNEL_OPERATION: /* CHANNEL_ACK: the session, the operation's sequence */
    if (n < 11) return;
    s->operations++;
    s->last_operation = get32(in + 5);
    s->last_operation_kind = in[9];
    length = in[10] < sizeof s->last_channel ? in[10] : sizeof s->last_channel - 1;
    if (length > n - 11) length = n - 11;
    memcpy(s->last_channel, in + 11, length);
    s->last_channel[length] = 0;
    if (s->silent) return;
    put32(body, s->server_session);
    memcpy(body + 4, in + 5, 4);
    send_to(s, f, WIRE_CHANNEL_ACK, body, 8);
    return;
  case WIRE_LEAVE: count_goodbye(s, f, &s->leaves, &s->leave_datagrams); return;
  case WIRE_LOGOUT: count_goodbye(s, f, &s->logouts, &s->logout_datagrams); return;
  default: return;
  }
}

/* ACCEPT (uid 4242, server time 0, the token's time left, not resumed) or LOGIN_ACCEPT
   (server time 0, no expiry, a relogin resumed, the server session), each with the
   session's reset value, for session `f`, which a CONFIRM made. */
static void send_accept(struct fake_server *s, struct fake_session *f) {
  unsigned char body[33], reset[EDGE_V2_RESET_SIZE];
  memset(body, 0, sizeof body);
  edge_v2_reset(reset, harness_keys(), "harness", f->keys.id, NULL);
  if (f->kind == 1) {
    put32(body, 4242);
    put32(body + 12, s->token_ms);
    memcpy(body + 17, reset + 9, 16);
    send_to(s, f, WIRE_ACCEPT, body, 33);
  } else {
    body[12] = f->flags & 1;
    put32(body + 13, s->server_session);
    memcpy(body + 17, reset + 9, 16);
    send_to(s, f, WIRE_LOGIN_ACCEPT, body, 33);
  }
}

/* The JOIN, LOGIN or RELOGIN an INIT or a repeated CONFIRM stands for. */
static void count_attempt(struct fake_server *s, uint8_t kind, uint8_t flags) {
  if (kind == 1) {
    s->joins++;
  } else if (flags & 1) {
    s->relogins++;
  } else {
    s->logins++;
  }
}

/* The slot for a new RESPONSE's session: the next one not confirmed, from the one after
   the last taken; the oldest if every one is. */
static struct fake_session *free_slot(struct fake_server *s) {
  for (uint32_t i = 0; i < FAKE_SESSIONS; i++) {
    struct fake_session *f = &s->sessions[(s->serial + i) % FAKE_SESSIONS];
    if (!f->confirmed) return f;
  }
  return &s->sessions[s->serial % FAKE_SESSIONS];
}

/* An INIT: counted, then answered with a RESPONSE (a login refused: a sealed refusal; a
   token that does not open: REFUSE_CLEAR). Its session takes the slot after the last
   one made (the oldest). */
static void initiated(struct fake_server *s, const unsigned char *in, size_t n) {
  struct edge_v2_init init;
  struct fake_session *f;
  unsigned char out[EDGE_V2_RESPONSE_SIZE], random[48], ticket[EDGE_V2_TICKET_SIZE];
  int status = edge_v2_open_init(&init, harness_keys(), in, n);
  if (status == EDGE_V2_NOT_OPENED) {
    if (!s->silent) fake_send_bytes(s, out, (size_t)edge_v2_refuse_clear(out, in + 2));
    return;
  }
  if (status != 0) return;
  count_attempt(s, init.kind, init.flags);
  randombytes_buf(random, sizeof random);
  if (s->silent) {
    /* counted, not answered */
  } else if (init.kind == 2 && s->refuse_code) {
    fake_send_bytes(s, out,
                    (size_t)edge_v2_refuse_sealed(out, &init, (uint8_t)s->refuse_code, 0, random));
  } else {
    f = free_slot(s);
    s->serial++;
    randombytes_buf(ticket, sizeof ticket);
    if (edge_v2_respond(out, &f->keys, &init, random, (uint64_t)0x5E55 << 32 | s->serial, 3000,
                        ticket) == EDGE_V2_RESPONSE_SIZE) {
      f->kind = init.kind;
      f->flags = init.flags;
      f->confirmed = 0;
      memcpy(&f->peer, &s->peer, s->peerlen);
      f->peerlen = s->peerlen;
      if (s->last == (int)(f - s->sessions)) s->last = -1;
      fake_send_bytes(s, out, sizeof out);
    }
  }
  edge_v2_wipe(NULL, &init);
}

/* The session of `id`, or NULL. */
static struct fake_session *session_of(struct fake_server *s, uint64_t id) {
  for (int i = 0; i < FAKE_SESSIONS; i++)
    if (id != 0 && s->sessions[i].keys.id == id) return &s->sessions[i];
  return NULL;
}

/* A CONFIRM: the first of a RESPONSE's makes its session; one again is the session's JOIN
   or LOGIN retry: both answered with its ACCEPT. */
static void confirmed(struct fake_server *s, const unsigned char *in, size_t n) {
  struct fake_session *f = session_of(s, edge_v2_session_id(in, n));
  if (f == NULL || edge_v2_check_confirm(&f->keys, in, n) != 0) return;
  if (f->confirmed) count_attempt(s, f->kind, f->flags);
  f->confirmed = 1;
  memcpy(&f->peer, &s->peer, s->peerlen);
  f->peerlen = s->peerlen;
  s->last = (int)(f - s->sessions);
  if (!s->silent) send_accept(s, f);
}

static void readable(struct ev_loop *loop, ev_io *w, int revents) {
  struct fake_server *s = (struct fake_server *)w->data;
  unsigned char in[1500], payload[1500];
  struct sockaddr_storage from;
  socklen_t fromlen = sizeof from;
  struct fake_session *f;
  ssize_t n;
  int opened;
  (void)loop;
  (void)revents;
  while ((n = recvfrom(s->fd, in, sizeof in, 0, (struct sockaddr *)&from, &fromlen)) > 0) {
    memcpy(&s->peer, &from, fromlen);
    s->peerlen = fromlen;
    if (n == EDGE_V2_INIT_SIZE && in[0] == 0x01) {
      initiated(s, in, (size_t)n);
    } else if (n == EDGE_V2_CONFIRM_SIZE && in[0] == 0x03) {
      confirmed(s, in, (size_t)n);
    } else if (n > EDGE_V2_DATA_OVERHEAD && in[0] == 0x07 &&
               (f = session_of(s, edge_v2_session_id(in, (size_t)n))) != NULL && f->confirmed &&
               (opened = edge_v2_open(payload, &f->keys, in, (size_t)n)) > 0) {
      memcpy(&f->peer, &from, fromlen); /* a fake: no path validation */
      f->peerlen = fromlen;
      s->last = (int)(f - s->sessions);
      answer(s, f, payload, (size_t)opened);
    }
    fromlen = sizeof from;
  }
}

int fake_start_at(struct ev_loop *loop, struct fake_server *s, const char *host, unsigned port) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  memset(s, 0, sizeof *s);
  s->last = -1;
  s->fd = -1;
  if (sodium_init() < 0) return -1;
  s->sessions = calloc(FAKE_SESSIONS, sizeof *s->sessions);
  if (s->sessions == NULL) return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (s->fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
      bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(s->fd, (struct sockaddr *)&a, &len) != 0) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    free(s->sessions);
    s->sessions = NULL;
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
  for (int i = 0; i < FAKE_SESSIONS; i++) edge_v2_wipe(&s->sessions[i].keys, NULL);
  free(s->sessions);
  s->sessions = NULL;
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
  put32(body, s->server_session);
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
