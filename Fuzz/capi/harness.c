// SPDX-License-Identifier: Apache-2.0
/* The harness of fuzz-capi and fuzz-rtm (harness.h): random call sequences on up to three
 * connections of one profile, and a companion of the other profile on the same loop, with
 * NULL, empty, at-bound, oversized and malformed arguments, configs and handlers of every
 * declared size (allocated at exactly that size, so a read past it is caught by
 * AddressSanitizer), every call, destroy (of this connection or another) and the profile's
 * end-then-destroy and end-then-start inside every callback, and a fake edge server on
 * loopback that answers every request of both profiles (or refuses JOIN and LOGIN with the
 * input's code) and sends the profile's datagrams built from the input, under its cookie or
 * not, or garbage. The loop runs EVRUN_NOWAIT iterations with short sleeps; thresholds are
 * milliseconds, so deadlines fire.
 *
 * Properties of both profiles, each an abort() with a message:
 *   - every return code is one the header lists for that call (never WRONG_THREAD here), and
 *     comes only from the states the header says (the profile's rules); 0 only on a live
 *     handle; states are 1..5;
 *   - *out is NULL after a failed create, and a new connection is DISCONNECTED;
 *   - every state change carries a (state, reason) pair the header pairs;
 *   - no callback of a connection after its destroy, none with a ctx never given; inside a
 *     callback, every call on a handle destroyed there returns TETHER_ERR_NOT_INITIALIZED
 *     (its state DISCONNECTED, destroy again 0) until the callback returns; no callback of
 *     the companion after its destroy;
 *   - get_stats writes no byte past out->size nor past the struct it knows;
 *   - every datagram a connection sends is at most 1200 bytes; the name functions never
 *     return NULL.
 * The random server strings reach loopback only, and only "localhost" is looked up (the
 * connect and getaddrinfo below). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "harness.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef TETHER_FUZZ_PROFILE
#error "build with -DTETHER_FUZZ_PROFILE=channel_profile or login_profile"
#endif
static const struct profile *const profile = &TETHER_FUZZ_PROFILE;
static const struct profile *companion_profile; /* the other one */

/* ---- Nothing leaves the machine -----------------------------------------------------------
   Random server strings can be numeric addresses anywhere ("9.9:80" is 9.0.0.9) or names.
   These two definitions take the place of libc's for the library: a socket may be connected
   to loopback only (anything else fails as unreachable, which the library must survive
   anyway), and only "localhost" (from /etc/hosts) and numeric hosts are looked up, so no
   query goes to a DNS server. */
static int is_loopback(const struct sockaddr *to, socklen_t length) {
  if (to == NULL) return 0;
  if (to->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
    return (ntohl(((const struct sockaddr_in *)(const void *)to)->sin_addr.s_addr) >> 24) == 127;
  }
  if (to->sa_family == AF_INET6 && length >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)to)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
  }
  return 0;
}

int connect(int fd, const struct sockaddr *to, socklen_t length) {
  if (!is_loopback(to, length)) {
    errno = ENETUNREACH;
    return -1;
  }
  return (int)syscall(SYS_connect, fd, to, length);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
  typedef int (*real_t)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
  real_t real = (real_t)(uintptr_t)dlsym(RTLD_NEXT, "getaddrinfo");
  int numeric = hints != NULL && (hints->ai_flags & AI_NUMERICHOST);
  if (!numeric && (node == NULL || strcmp(node, "localhost") != 0)) return EAI_NONAME;
  return real(node, service, hints, res);
}

/* ---- The input ---------------------------------------------------------------------------- */

static const uint8_t *in_data;
static size_t in_left;
static int tracing;

uint8_t u8(void) {
  if (in_left == 0) return 0;
  in_left--;
  return *in_data++;
}
uint16_t u16(void) { return (uint16_t)((u8() << 8) | u8()); }
uint32_t u32(void) { return ((uint32_t)u16() << 16) | u16(); }
uint32_t small32(void) { return u8() % 4 == 0 ? u32() : u8() % 8; }

void fail(const char *what, int value) {
  fprintf(stderr, "property violated: %s (%d)\n", what, value);
  abort();
}

void trace(const char *format, ...) {
  va_list args;
  if (!tracing) return;
  va_start(args, format);
  vfprintf(stderr, format, args);
  va_end(args);
  fputc('\n', stderr);
}

static char *filled(size_t n, char c) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memset(s, c, n);
  s[n] = 0;
  return s;
}

char *copy_of(const char *text) {
  size_t n = strlen(text);
  char *copy = filled(n, 0);
  memcpy(copy, text, n);
  return copy;
}

char *string_arg(const char *valid) {
  size_t n, i;
  char *s;
  switch (u8() % 12) {
  case 0: return NULL;
  case 1: return copy_of("");
  case 2: return filled(100000, 'a');
  case 3: return filled(512, 't');
  case 4: return filled(513, 't');
  case 5: return filled(63, 'c');
  case 6: return filled(64, 'u');
  case 7: return filled(65, 'u');
  case 8: return copy_of(u8() % 2 ? "bad name" : "bad\x01\x7f");
  case 9:
    n = u8();
    s = filled(n, 'z');
    for (i = 0; i < n; i++) {
      s[i] = (char)u8();
      if (s[i] == 0) s[i] = 'z';
    }
    return s;
  default: return copy_of(valid);
  }
}

char *channel_arg(void) {
  char name[8];
  if (u8() % 4 == 0) return string_arg("lobby");
  snprintf(name, sizeof name, "c%u", (unsigned)(u8() % 20));
  return copy_of(name);
}

/* ---- The fake server ---------------------------------------------------------------------- */

static int server_fd = -1;
static char server_address[64];
static struct sockaddr_storage peer; /* where the profile's last datagram came from */
static socklen_t peer_len;
static unsigned char cookie[8];     /* its cookie */
static unsigned char any_cookie[8]; /* of the last datagram of either profile */

char *server_arg(void) {
  uint8_t choice = u8() % 4;
  char *server, *p;
  if (choice == 0) return copy_of(server_address);
  if (choice == 1) return copy_of("[::1]:9");
  if (choice == 2) return copy_of("localhost:9");
  server = string_arg("127.0.0.1:9");
  for (p = server; p && *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) *p = '9';
  }
  return server;
}

static void server_open(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  server_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (server_fd < 0 || bind(server_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(server_fd, (struct sockaddr *)&a, &len) != 0) {
    fail("fake server socket", 0);
  }
  snprintf(server_address, sizeof server_address, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* Gives out (a datagram) its type; returns its length. */
static size_t typed(unsigned char *out, unsigned char type, size_t length) {
  out[3] = type;
  return length;
}

/* The answer to request `in` (n bytes, header valid) written into out (header copied);
   returns its length, 0 for none. refuse >= 0: JOIN and LOGIN refused with this code. */
static size_t answer(const unsigned char *in, size_t n, unsigned char *out, int refuse) {
  memset(out + 12, 0, 17);
  if (refuse >= 0 && (in[3] == 0x01 || in[3] == 0x05)) {
    out[12] = (unsigned char)refuse;
    return typed(out, in[3] == 0x01 ? 0x82 : 0x8A, 13); /* REFUSE, LOGIN_REFUSE */
  }
  switch (in[3]) {
  case 0x01: /* JOIN: ACCEPT, uid 4242, no expiry */
    put32(out + 12, 4242);
    return typed(out, 0x81, 29);
  case 0x05: /* LOGIN: LOGIN_ACCEPT, server session 0, a RELOGIN resumed */
    out[24] = n > 12 ? (in[12] & 1) : 0;
    return typed(out, 0x89, 29);
  case 0x02: /* HEARTBEAT, LOGIN_HEARTBEAT: HEARTBEAT_ACK */
  case 0x06:
    if (n < 16) return 0;
    memcpy(out + 12, in + 12, 4);
    return typed(out, 0x83, 24);
  case 0x08: /* CHANNEL_OPERATION: CHANNEL_ACK, server session 0, the operation's sequence */
    if (n < 20) return 0;
    memcpy(out + 16, in + 16, 4);
    return typed(out, 0x8C, 20);
  case 0x04: /* RENEW_TOKEN: TOKEN_RENEWED, accepted, an hour left */
    put32(out + 13, 3600000);
    return typed(out, 0x88, 17);
  default: return 0;
  }
}

/* Reads what was sent. mode 0: nothing answered; 1: everything answered; 2: JOIN and LOGIN
   refused with the input's code. */
static void server_drain(int mode) {
  unsigned char in[1500], out[64];
  struct sockaddr_storage from;
  socklen_t from_len = sizeof from;
  ssize_t n;
  int refuse = mode == 2 ? u8() : -1;
  size_t length;
  while ((n = recvfrom(server_fd, in, sizeof in, 0, (struct sockaddr *)&from, &from_len)) > 0) {
    if (n > 1200) fail("a connection sent more than 1200 bytes", (int)n);
    if (n >= 12 && in[0] == 'T' && in[1] == 'H' && in[2] == 1) {
      memcpy(any_cookie, in + 4, 8);
      if (in[3] >= profile->first_request && in[3] <= profile->last_request) {
        memcpy(cookie, in + 4, 8);
        memcpy(&peer, &from, from_len);
        peer_len = from_len;
      }
      memcpy(out, in, 12);
      length = mode ? answer(in, (size_t)n, out, refuse) : 0;
      if (length) sendto(server_fd, out, length, 0, (struct sockaddr *)&from, from_len);
    }
    from_len = sizeof from;
  }
}

/* A name for an entry: one of a few (so members and channels meet again), or the input's
   bytes. */
static size_t put_name(unsigned char *p, size_t room) {
  static const char *const names[] = {"alice", "bob", "c1", "c2", "lobby", ""};
  uint8_t choice = u8() % 8;
  size_t n, i;
  if (choice < 6) {
    n = strlen(names[choice]);
    if (n + 1 > room) return 0;
    p[0] = (unsigned char)n;
    memcpy(p + 1, names[choice], n);
    return n + 1;
  }
  n = u8();
  if (n + 1 > room) n = room - 1;
  p[0] = (unsigned char)n;
  for (i = 0; i < n; i++) p[1 + i] = u8();
  return n + 1;
}

/* The body of `message` from the input, after the 12-byte header in out (1300 bytes);
   sets the type; returns the datagram's length. */
static size_t body(unsigned char *out, enum message message) {
  size_t at = 12, i, n;
  switch (message) {
  case M_ACCEPT:
    put32(out + 12, small32()); /* uid */
    put32(out + 16, u32());     /* server time, ms */
    put32(out + 20, u32());
    put32(out + 24, u8() % 2 ? small32() * 1000 : u32()); /* token time left */
    out[28] = u8() % 4 == 0 ? u8() : u8() % 2;             /* flags: resumed */
    return typed(out, 0x81, 29);
  case M_REFUSE:
    out[12] = u8() % 2 ? u8() % 7 : u8();
    return typed(out, 0x82, 13);
  case M_HEARTBEAT_ACK:
    put32(out + 12, small32());
    memset(out + 16, 0, 8);
    return typed(out, 0x83, 24);
  case M_PRESENCE:
    n = u8() % 4 == 0 ? u8() : u8() % 4;
    out[12] = (unsigned char)(n >> 8);
    out[13] = (unsigned char)n;
    for (at = 14, i = 0; i < n && at + 9 <= 1200; i++, at += 9) {
      put32(out + at, u8() % 4 == 0 ? u32() : u8() % 8);  /* uid, of a few */
      out[at + 4] = u8() % 4 == 0 ? u8() : u8() % 3 + 1;  /* JOINED, ALIVE, LEFT */
      put32(out + at + 5, u8() % 2 ? small32() * 1000 : u32()); /* silent for, ms */
    }
    return typed(out, 0x84, at);
  case M_KICK:
    out[12] = u8() % 2 ? u8() % 4 : u8(); /* channel: 1 BANNED, 2 SAME_UID; login: 3 REMOTE */
    return typed(out, 0x85, 13);
  case M_TOKEN_EXPIRED: return typed(out, 0x86, 12);
  case M_SESSION_UNKNOWN: return typed(out, 0x87, 12);
  case M_TOKEN_RENEWED:
    out[12] = (unsigned char)(u8() % 6);
    put32(out + 13, u32());
    return typed(out, 0x88, 17);
  case M_LOGIN_ACCEPT:
    put32(out + 12, u32()); /* server time, ms */
    put32(out + 16, u32());
    put32(out + 20, u8() % 2 ? small32() * 1000 : u32()); /* token time left */
    out[24] = u8() % 4 == 0 ? u8() : u8() % 2;             /* flags: RESUMED */
    put32(out + 25, u8() % 3);                              /* server session, of a few */
    return typed(out, 0x89, 29);
  case M_LOGIN_REFUSE:
    out[12] = u8() % 2 ? u8() % 12 : u8();
    return typed(out, 0x8A, 13);
  case M_MEMBER_EVENTS:
    put32(out + 12, u8() % 3);  /* server session, of a few */
    put32(out + 16, small32()); /* first sequence */
    n = u8() % 4 == 0 ? u8() : u8() % 4 + 1;
    out[20] = (unsigned char)n;
    for (at = 21, i = 0; i < n && at < 1190; i++) {
      out[at++] = u8() % 4 == 0 ? u8() : u8() % 2 + 1; /* JOINED, LEFT */
      at += put_name(out + at, 1200 - at);
      at += put_name(out + at, 1200 - at);
    }
    return typed(out, 0x8B, at);
  case M_CHANNEL_ACK:
    put32(out + 12, u8() % 3); /* server session, of a few */
    put32(out + 16, small32());
    return typed(out, 0x8C, 20);
  default:
    out[3] = u8();
    n = u8();
    for (i = 0; i < n; i++) out[at++] = u8();
    return at;
  }
}

/* Sends the profile's last connection a datagram the input builds: one of the profile's
   messages (under its cookie, another one, or none; a body that may get 0-7 bytes of
   padding, so that a field added at the end of a message is reached too), or garbage. */
static void server_send(void) {
  unsigned char out[1300];
  int choice = u8() % (profile->message_count + 1);
  uint8_t cookie_choice = u8() % 8;
  size_t n, i;
  if (choice == profile->message_count) {
    n = u16() % sizeof out;
    for (i = 0; i < n; i++) out[i] = u8();
  } else {
    out[0] = 'T';
    out[1] = 'H';
    out[2] = 1;
    memcpy(out + 4, cookie_choice == 0 ? any_cookie : cookie, 8);
    if (cookie_choice == 1) memset(out + 4, 0, 8);
    n = body(out, profile->messages[choice]);
    if (u8() % 4 == 0) {
      for (i = u8() % 8; i > 0; i--) out[n++] = u8();
    }
  }
  trace("server sends %zu bytes, type 0x%02x", n, n > 3 ? out[3] : 0);
  if (peer_len > 0) sendto(server_fd, out, n, 0, (struct sockaddr *)&peer, peer_len);
}

/* ---- Connections --------------------------------------------------------------------------- */

static struct ev_loop *loop;
static struct context contexts[CONTEXTS];
static int context_count;
static struct context *slots[SLOTS];
int in_callback;

static int state_of(const void *handle) {
  int state = profile->api->state(handle);
  if (state < 1 || state > 5) fail("state out of range", state);
  return state;
}

static void check_rules(int rc, int before, const struct rule *rules, const char *call) {
  for (; rules->states; rules++) {
    if (rc != rules->code) continue;
    if (!(rules->states & IN(before))) {
      fprintf(stderr, "%s returned %d in state %d\n", call, rc, before);
      fail("a return code the header does not give in that state", rc);
    }
    return;
  }
  fprintf(stderr, "%s returned %d\n", call, rc);
  fail("a return code the header does not list", rc);
}

static void call(struct context *c, void *handle, int i) {
  const struct call *k = &profile->calls[i];
  int before = state_of(handle), rc = k->make(c, handle);
  trace("%s %s %d (state %d, in callback %d): %d", k->name, profile->name,
        c ? c->index : -1, before, in_callback, rc);
  check_rules(rc, before, k->rules, k->name);
  if (rc == 0 && !handle) fail("0 from a call on no handle", i);
}

static void destroy(struct context *c) {
  void *handle = c->handle;
  int i, rc;
  tether_connection_stats stats;
  c->handle = NULL;
  c->destroyed = 1;
  if (slots[c->slot] == c) slots[c->slot] = NULL;
  trace("destroy %s %d (in callback %d)", profile->name, c->index, in_callback);
  if ((rc = profile->api->destroy(handle)) != 0) fail("destroy", rc);
  if (!in_callback) return;
  /* Until the callback returns, the handle answers NOT_INITIALIZED. */
  for (i = 0; i < profile->call_count; i++) {
    if (profile->calls[i].plain(handle) != TETHER_ERR_NOT_INITIALIZED) {
      fprintf(stderr, "%s after destroy\n", profile->calls[i].name);
      fail("a call on a handle destroyed in this callback", i);
    }
  }
  stats.size = sizeof stats;
  if (profile->api->get_stats(handle, &stats) != TETHER_ERR_NOT_INITIALIZED) {
    fail("get_stats after destroy", 0);
  }
  if (state_of(handle) != 1) fail("state after destroy", 0);
  if ((rc = profile->api->destroy(handle)) != 0) fail("destroy again", rc); /* a no-op */
}

static void act(struct context *c) {
  struct context *other;
  /* Not inside create (on_log may come from it): no handle yet to act on. */
  if (c->acts_left == 0 || c->destroyed || !c->handle) return;
  c->acts_left--;
  switch (c->action) {
  case A_NONE: break;
  case A_DESTROY: destroy(c); break;
  case A_DESTROY_OTHER:
    other = slots[(c->slot + 1) % SLOTS];
    if (other && other != c) destroy(other);
    break;
  case A_END_DESTROY:
    call(c, c->handle, profile->end_call);
    destroy(c);
    break;
  case A_END_START:
    call(c, c->handle, profile->end_call);
    if (!c->destroyed) call(c, c->handle, profile->start_call);
    break;
  default: call(c, c->handle, c->action - A_CALL); break;
  }
}

void hit(void *ctx, int kind, int a, int b) {
  struct context *c = ctx;
  if (c < contexts || c >= contexts + CONTEXTS) fail("a callback with a ctx never given", kind);
  trace("%s %d: callback %d (%d, %d)", profile->name, c->index, kind, a, b);
  if (c->destroyed) fail("a callback after destroy", kind);
  if (kind == 0 && (b < 0 || b >= profile->reason_count || profile->reason_states[b] != a)) {
    fail("state/reason pair", a * 100 + b);
  }
  profile->callback(c, kind, a, b);
  if (kind == c->act_in) {
    in_callback++;
    act(c);
    in_callback--;
  }
}

void checked_log(void *ctx, tether_log_level level, const char *message) {
  if (!message || level < TETHER_LOG_ERROR || level > TETHER_LOG_DEBUG) fail("log", (int)level);
  trace("log: %s", message);
  hit(ctx, profile->log_kind, (int)level, 0);
}

void checked_attempt(void *ctx, int kind, uint32_t attempt) {
  if (attempt == 0) fail("attempt 0", 0);
  hit(ctx, kind, (int)attempt, 0);
}

static uint32_t threshold(uint32_t fast) {
  switch (u8() % 8) {
  case 0: return 0;
  case 1: return u32();
  case 2: return u16();
  default: return fast;
  }
}

/* A copy of the struct `full` (`size` bytes) that says it is `declared` bytes long (its
   first field) and is exactly that long (the size field at least), so that a read past it
   is caught; past `size`, 0xA5. */
static void *sized(const void *full, size_t size, uint32_t declared) {
  size_t length = declared < sizeof declared ? sizeof declared : declared;
  unsigned char *copy = malloc(length);
  if (!copy) abort();
  memset(copy, 0xA5, length);
  memcpy(copy, full, size < length ? size : length);
  memcpy(copy, &declared, sizeof declared);
  return copy;
}

static void create(void) {
  int slot = u8() % SLOTS, rc, i;
  uint8_t flags = u8();
  uint32_t config_size = (uint32_t)profile->api->config_size, handler_size = 0;
  uint64_t full[32], handlers[32]; /* aligned for any of the structs */
  void *config, *handler = NULL, *handle = &full; /* must come back NULL on failure */
  char *app_id, *server;
  struct context *c;
  if (slots[slot] || context_count == CONTEXTS) return;
  c = &contexts[context_count];
  memset(c, 0, sizeof *c);
  c->index = context_count;
  c->slot = slot;
  c->act_in = u8() % (profile->callback_count + 1);
  c->action = u8() % (A_CALL + profile->call_count);
  c->acts_left = u8() % 3;

  profile->api->config_init(full);
  app_id = u8() % 4 == 0 ? string_arg("app-1") : copy_of("app-1");
  server = u8() % 4 == 0 ? server_arg() : copy_of(server_address);
  memcpy((char *)full + profile->api->app_id_at, &app_id, sizeof app_id);
  memcpy((char *)full + profile->api->server_at, &server, sizeof server);
  for (i = 0; i < profile->threshold_count; i++) {
    uint32_t ms = threshold(profile->thresholds[i].fast);
    memcpy((char *)full + profile->thresholds[i].at, &ms, sizeof ms);
  }
  /* The declared size: the struct's, smaller (an older caller), 0, or larger. */
  if (flags & 1) config_size = u8() % (profile->api->config_size + 16);
  config = sized(full, profile->api->config_size, config_size);
  if (!(flags & 2)) {
    memcpy(handlers, profile->handler, profile->api->handler_size);
    handler_size = (uint32_t)profile->api->handler_size;
    if (flags & 4) handler_size = (uint32_t)(u8() % (profile->api->handler_size + 1)) & ~7u;
    if (handler_size < 8) handler_size = (flags & 8) ? 0 : 8;
    handler = sized(handlers, handler_size, handler_size);
  }
  profile->prepare(c, handler_size);
  rc = profile->api->create(loop, config, handler, c, (flags & 16) ? NULL : &handle);
  trace("create %s %d (handler %u bytes): %d", profile->name, c->index, handler_size, rc);
  free(config);
  free(handler);
  free(app_id);
  free(server);
  if (rc != 0 && rc != TETHER_ERR_INVALID_ARGUMENT && rc != TETHER_ERR_INVALID_APP_ID &&
      rc != TETHER_ERR_FAILED) {
    fail("create: a return code the header does not list", rc);
  }
  if (flags & 16) {
    if (rc == 0) fail("create succeeded with out NULL", 0);
    return;
  }
  if (rc != 0) {
    if (handle != NULL) fail("out not NULL after a failed create", rc);
    return;
  }
  if (!handle) fail("create returned 0 and no handle", 0);
  if (state_of(handle) != 1) fail("a new connection's state", 0);
  c->handle = handle;
  slots[slot] = c;
  context_count++;
}

static void stats(const void *handle) {
  union {
    tether_connection_stats stats;
    unsigned char bytes[sizeof(tether_connection_stats) + 64];
  } out;
  uint32_t size = u8() & 1 ? (uint32_t)sizeof out.stats : u8();
  size_t limit, i;
  int rc;
  if (size > sizeof out.bytes) size = sizeof out.bytes;
  memset(out.bytes, 0xA5, sizeof out.bytes);
  out.stats.size = size;
  rc = profile->api->get_stats(handle, u8() % 16 == 0 ? NULL : &out.stats);
  if (rc != 0 && rc != TETHER_ERR_NOT_INITIALIZED && rc != TETHER_ERR_INVALID_ARGUMENT) {
    fail("get_stats: a return code the header does not list", rc);
  }
  limit = size < sizeof out.stats ? size : sizeof out.stats;
  if (limit < 4) limit = 4;
  for (i = limit; i < sizeof out.bytes; i++) {
    if (out.bytes[i] != 0xA5) fail("get_stats wrote past out->size", (int)i);
  }
}

static void names(void) {
  int value = (int)u32(), i;
  for (i = 0; i < 4; i++) {
    if (!profile->api->names[i](value)) fail("a name function returned NULL", value);
  }
  if (!tether_error_name(value) || !tether_error_message(value)) {
    fail("an error's name or message is NULL", value);
  }
  profile->api->config_init(NULL);
  profile->api->handler_init(NULL);
}

/* ---- The companion: the other profile on the same loop ---------------------------------- */

static void *companion;
static int companion_alive;

void companion_heard(void *ctx) {
  if (ctx != &companion || !companion_alive) fail("a companion's callback after its destroy", 0);
}

static void companion_toggle(void) {
  const struct profile *p = companion_profile;
  uint64_t config[32], handler[32]; /* aligned for any of the structs */
  const char *app_id = "app-1", *server = server_address;
  int rc, i;
  if (companion) {
    companion_alive = 0;
    p->api->destroy(companion);
    companion = NULL;
    return;
  }
  p->api->config_init(config);
  memcpy((char *)config + p->api->app_id_at, &app_id, sizeof app_id);
  memcpy((char *)config + p->api->server_at, &server, sizeof server);
  for (i = 0; i < p->threshold_count; i++) {
    memcpy((char *)config + p->thresholds[i].at, &p->thresholds[i].fast, sizeof(uint32_t));
  }
  p->api->companion_fill(handler);
  companion_alive = 1;
  rc = p->api->create(loop, config, handler, &companion, &companion);
  if (rc == 0) rc = p->calls[p->start_call].plain(companion);
  if (rc != 0) fail("the companion's create or start", rc);
}

/* ---- The program ---------------------------------------------------------------------------- */

static unsigned slept_ms; /* in this input */

static void run_loop(void) {
  struct timespec pause = {0, 0};
  int i, rounds = u8() % 4 + 1;
  uint8_t ms = u8() % 6;
  if (slept_ms + ms > 60) ms = 0; /* keeps each input short */
  slept_ms += ms;
  pause.tv_nsec = (long)ms * 1000000L;
  if (ms) nanosleep(&pause, NULL);
  for (i = 0; i < rounds; i++) ev_run(loop, EVRUN_NOWAIT);
}

static struct context *pick(void) {
  uint8_t choice = u8() % (SLOTS + 1);
  return choice < SLOTS ? slots[choice] : NULL;
}

static void write_seeds(const char *variable, const struct seed *seeds, int count) {
  const char *dir = getenv(variable);
  char path[4096];
  FILE *f;
  int i;
  for (i = 0; dir && i < count; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
    f = fopen(path, "wb");
    if (!f || fwrite(seeds[i].bytes, 1, seeds[i].size, f) != seeds[i].size) {
      fail("cannot write a seed", i);
    }
    fclose(f);
  }
}

/* The profile's handler is a const struct; what it stands for, the header's handler_init,
   gives the size and no callback (a pointer per word after the size's). */
static void check_handler_init(const struct profile *p) {
  void *words[32]; /* aligned for any of the structs */
  uint32_t size;
  size_t i;
  memset(words, 0xA5, sizeof words);
  p->api->handler_init(words);
  memcpy(&size, words, sizeof size);
  if (size != p->api->handler_size) fail("handler_init's size", (int)size);
  for (i = 1; i < p->api->handler_size / sizeof words[0]; i++) {
    if (words[i] != NULL) fail("handler_init left a callback", (int)i);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  companion_profile = profile == &channel_profile ? &login_profile : &channel_profile;
  if (profile->api->config_size > 256 || profile->api->handler_size > 256) fail("struct size", 0);
  check_handler_init(profile);
  check_handler_init(companion_profile);
  tracing = getenv("TETHER_FUZZ_TRACE") != NULL;
  write_seeds("TETHER_FUZZ_WRITE_SEEDS", profile->seeds, profile->seed_count);
  write_seeds("TETHER_FUZZ_WRITE_REGRESSIONS", profile->regressions, profile->regression_count);
  if (getenv("TETHER_FUZZ_WRITE_SEEDS") || getenv("TETHER_FUZZ_WRITE_REGRESSIONS")) exit(0);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int ops = 0, i, rc;
  struct context *c;
  in_data = data;
  in_left = size;
  if (!loop) {
    loop = ev_loop_new(EVFLAG_AUTO);
    server_open();
  }
  server_drain(0);
  peer_len = 0;
  slept_ms = 0;
  context_count = 0;
  while (in_left > 0 && ops++ < 80) {
    int op = u8() % (OP_CALL + profile->call_count);
    trace("op %d", op);
    switch (op) {
    case OP_CREATE: create(); break;
    case OP_DESTROY:
      if ((c = pick())) destroy(c);
      else if ((rc = profile->api->destroy(NULL)) != 0) fail("destroy NULL", rc);
      break;
    case OP_STATE: state_of((c = pick()) ? c->handle : NULL); break;
    case OP_STATS: stats((c = pick()) ? c->handle : NULL); break;
    case OP_NAMES: names(); break;
    case OP_DRAIN: server_drain(u8() % 3); break;
    case OP_SEND: server_send(); break;
    case OP_COMPANION: companion_toggle(); break;
    case OP_RUN: run_loop(); break;
    default:
      c = pick();
      call(c, c ? c->handle : NULL, op - OP_CALL);
      break;
    }
  }
  for (i = 0; i < SLOTS; i++) {
    if (slots[i]) destroy(slots[i]);
  }
  if (companion) companion_toggle();
  ev_run(loop, EVRUN_NOWAIT);
  return 0;
}
