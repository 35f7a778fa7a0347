// SPDX-License-Identifier: Apache-2.0
/* The harness of fuzz-capi and fuzz-rtm (harness.h): random call sequences on up to three
 * connections of one profile, and a companion of the other profile on the same loop, with
 * NULL, empty, at-bound, oversized and malformed arguments (tokens: those, version 1 texts,
 * and version 2 tokens valid, of another grant or certificate, expired or altered),
 * configs and handlers of every declared size (allocated at exactly that size, so a read
 * past it is caught by AddressSanitizer), every call, destroy (of this connection or
 * another) and the profile's end-then-destroy and end-then-start inside every callback,
 * and a fake edge server on loopback that speaks protocol version 2 (docs/PROTOCOL.md §12)
 * through Tests/c/edge_v2.c: it answers every handshake of both profiles (or refuses it
 * with the input's code, sealed, at the INIT or the CONFIRM, or asks for a cookie, or
 * leaves the ACCEPT to the input) and every request, and sends the profile's messages
 * built from the input sealed as DATA of the right session (so the payload decoders
 * behind the seal are fuzzed through the shipped crypto), or altered (a bit flipped, cut
 * or lengthened, another session id), earlier datagrams again, handshake answers for no
 * attempt (REFUSE_CLEAR, REFUSE_SEALED, COOKIE_REPLY with random or echoed nonces, RESET
 * with a wrong value), or garbage. The loop runs EVRUN_NOWAIT iterations with short
 * sleeps; thresholds are milliseconds, so deadlines fire.
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
 *   - every datagram a connection sends is at most 1200 bytes and one of version 2's of
 *     the device: an INIT (469 bytes, version 2) whose request, once its token opened,
 *     keeps §12.5's layout; a CONFIRM (201); a DATA of at least 42 bytes whose payload,
 *     when it opens, is a device type of its exact size (§12.7); the name functions never
 *     return NULL;
 *   - a datagram the fake altered or replayed, or a handshake answer for an attempt that
 *     ended, or garbage, is counted dropped by the connection that reads it (its stats:
 *     datagrams_unopened, _replayed, _malformed or _foreign), and changes no state and
 *     calls no callback but on_log (time stands still while it is delivered, so nothing
 *     else can).
 * The random server strings reach loopback only, and only "localhost" is looked up (the
 * connect and getaddrinfo below). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "harness.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "edge_v2.h"

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

char *string_of(uint8_t choice, const char *valid) {
  size_t n, i;
  char *s;
  switch (choice) {
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

char *string_arg(const char *valid) { return string_of(u8() % 12, valid); }

char *channel_arg(void) {
  char name[8];
  if (u8() % 4 == 0) return string_arg("lobby");
  snprintf(name, sizeof name, "c%u", (unsigned)(u8() % 20));
  return copy_of(name);
}

/* ---- The fake server: protocol version 2 through Tests/c/edge_v2.c ------------------------
   It speaks docs/PROTOCOL.md §12 with the edge's half written a second time in C
   (edge_v2.c, shared with the C tests, not copied): it opens every INIT (checking the
   token's grant as rule 5 of §12.6 does), answers with a RESPONSE, a sealed or clear
   refusal or a cookie reply, takes CONFIRMs and answers them with the ACCEPT, opens every
   DATA of the sessions it made and answers what the device asks. It keeps SESSIONS
   sessions at once (three connections and a companion, with their rejoins), and the INITs'
   nonces and the datagrams it sent, so that the input can echo and replay them. Its random
   bytes are a function of the input (a seeded stream), so a crash replays; the library's
   own (its nonces, its ephemeral keys) are not, but the input never holds a byte of
   cryptography: it says what to send and how to alter it, and the fake seals. */

#define FUZZ_CERTIFICATE "fuzz-certificate" /* of every token the fake takes */
#define SESSIONS 8
#define NONCES 16 /* INITs remembered */
#define SENT 32   /* datagrams the fake sent, remembered for replays */

static struct edge_v2_certificate keys, other_keys; /* the fake's; another certificate's */
static int server_fd = -1;
static char server_address[64];
static uint64_t draws; /* of the fake's seeded stream, in this input */
static uint8_t cookie[16]; /* of mode 4's cookie replies, in this input */

static struct session {
  struct edge_v2_session keys; /* keys.id 0: the slot is free */
  struct edge_v2_init init;    /* the INIT it answered: what a late refusal is sealed for */
  uint8_t kind;                /* 1 channel, 2 login */
  int confirmed;               /* its CONFIRM came: the device holds its keys */
  int dead;                    /* its attempt ended (confirmed or refused): echoes of its
                                  nonce answer nothing */
  struct sockaddr_storage peer; /* where its datagrams came from: where its answers go */
  socklen_t peer_len;
} sessions[SESSIONS];
static int last = -1; /* the profile's session heard last: what the input's messages go to */
static uint32_t serial;

static struct nonce {
  uint8_t bytes[16];
  int dead; /* its attempt ended: the device must drop every answer to it */
  struct sockaddr_storage peer;
  socklen_t peer_len;
} nonces[NONCES];
static unsigned nonce_count;

static struct sent {
  uint8_t bytes[1300];
  size_t length;
  int replayable; /* the device could open it when it came: a copy must change nothing */
  struct sockaddr_storage peer;
  socklen_t peer_len;
} sent[SENT];
static unsigned sent_count;

/* The fake's random bytes: draw n of the input's stream. */
static void fake_random(uint8_t *out, size_t n) {
  uint8_t seed[randombytes_SEEDBYTES];
  memset(seed, 0, sizeof seed);
  memcpy(seed, &draws, sizeof draws);
  draws++;
  randombytes_buf_deterministic(out, n, seed);
}

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
  if (sodium_init() < 0 ||
      edge_v2_certificate_keys(&keys, FUZZ_CERTIFICATE, strlen(FUZZ_CERTIFICATE)) != 0 ||
      edge_v2_certificate_keys(&other_keys, "another certificate", 19) != 0) {
    fail("the fake server's keys", 0);
  }
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

/* Forgets every session, nonce and datagram of the last input. */
static void server_reset(void) {
  int i;
  for (i = 0; i < SESSIONS; i++) edge_v2_wipe(&sessions[i].keys, &sessions[i].init);
  memset(sessions, 0, sizeof sessions);
  memset(nonces, 0, sizeof nonces);
  last = -1;
  serial = 0;
  nonce_count = sent_count = 0;
  draws = 0;
  fake_random(cookie, sizeof cookie);
}

/* ---- Tokens --------------------------------------------------------------------------------- */

/* A token text minted under `k` for `kind` and `name` (a valid name: else the profile's
   default), uid 0 (any), expiring at `expiry`; malloc'd. */
static char *minted(const struct edge_v2_certificate *k, int kind, const char *name,
                    uint64_t expiry) {
  uint8_t random[56];
  char *text = filled(337, 0);
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > (kind == 1 ? 63u : 64u)) name = kind == 1 ? "c0" : "alice";
  fake_random(random, sizeof random);
  if (edge_v2_mint(text, k, (uint8_t)kind, "app-1", name, 0, expiry, random) != 0) {
    fail("a token the fake could not mint", kind);
  }
  return text;
}

int token_choice(void) { return u8() % 16; }

char *token_text(int choice, int kind, const char *name) {
  static const char base64url[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  char *text;
  size_t at;
  switch (choice) {
  case TOKEN_V1: /* a version 1 token, or one that says "2." and is not base64 */
    if (u8() % 2) return copy_of("006token-A-of-version-1");
    text = filled(337, '!');
    text[0] = '2', text[1] = '.';
    return text;
  case TOKEN_VALID: return minted(&keys, kind, name, 0);
  case TOKEN_OTHER_GRANT: /* another channel or user, or the other profile's grant */
    if (u8() % 2) return minted(&keys, 3 - kind, name, 0);
    return minted(&keys, kind, kind == 1 ? "other" : "mallory", 0);
  case TOKEN_OTHER_CERTIFICATE: return minted(&other_keys, kind, name, 0);
  case TOKEN_EXPIRED: return minted(&keys, kind, name, u8() % 2 ? 1 : 1000000000);
  case TOKEN_CHANGED: /* one character of a valid one changed, or made a non-ASCII byte */
    text = minted(&keys, kind, name, 0);
    at = 2 + u16() % 335;
    text[at] = u8() % 4 == 0
                   ? (char)0xDF
                   : base64url[(strchr(base64url, text[at]) - base64url + 1) % 64];
    return text;
  default: return string_of((uint8_t)choice, "");
  }
}

const char *valid_token(int kind, const char *name) {
  static char pool[8][338];
  static unsigned next;
  char *text = minted(&keys, kind, name, 0), *out = pool[next++ % 8];
  memcpy(out, text, 338);
  free(text);
  return out;
}

/* ---- What the fake hears, and its answers --------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static void put64(unsigned char *p, uint64_t v) {
  put32(p, (uint32_t)(v >> 32));
  put32(p + 4, (uint32_t)v);
}

/* Sends `n` bytes to `to` and remembers them (replayable: see struct sent). */
static void send_raw(const uint8_t *bytes, size_t n, const struct sockaddr_storage *to,
                     socklen_t to_len, int replayable) {
  struct sent *s;
  if (to_len == 0 || n == 0) return;
  s = &sent[sent_count++ % SENT];
  if (n > sizeof s->bytes) n = sizeof s->bytes;
  memcpy(s->bytes, bytes, n);
  s->length = n;
  s->replayable = replayable;
  memcpy(&s->peer, to, to_len);
  s->peer_len = to_len;
  sendto(server_fd, bytes, n, 0, (const struct sockaddr *)to, to_len);
}

/* `payload` (type byte and body) sealed as session f's next DATA into out; its length, 0
   for none. */
static size_t seal(uint8_t *out, struct session *f, const uint8_t *payload, size_t length) {
  int n;
  if (f == NULL || f->keys.id == 0) return 0;
  n = edge_v2_seal(out, &f->keys, payload, length);
  return n > 0 ? (size_t)n : 0;
}

/* Sealed for session f and sent to its address. */
static void send_sealed(struct session *f, const uint8_t *payload, size_t length) {
  uint8_t out[1300];
  size_t n = seal(out, f, payload, length);
  if (n) send_raw(out, n, &f->peer, f->peer_len, f->confirmed);
}

/* The payload of ACCEPT or LOGIN_ACCEPT of session f (server time 0, an hour's token, not
   resumed unless a RELOGIN, uid 4242, server session 0, its reset value) into p; its length. */
static size_t accept_payload(uint8_t *p, const struct session *f) {
  uint8_t reset[EDGE_V2_RESET_SIZE];
  memset(p, 0, 34);
  edge_v2_reset(reset, &keys, "fuzz", f->keys.id, NULL);
  if (f->kind == 1) {
    p[0] = 0x81;
    put32(p + 1, 4242);
    put32(p + 13, 3600000);
  } else {
    p[0] = 0x89;
    put32(p + 9, 3600000);
    p[13] = f->init.flags & 1;
  }
  memcpy(p + 18, reset + 9, 16);
  return 34;
}

/* The channel reason or login code of a refusal for `init` by rule 5 (§12.6), 0: none. */
static int judged(const struct edge_v2_init *init) {
  int channel = init->kind == 1;
  if (init->versions[0] != 2 && init->versions[1] != 2 && init->versions[2] != 2 &&
      init->versions[3] != 2) {
    return channel ? 5 : 2;
  }
  if (strcmp(init->app, "app-1") != 0) return channel ? 1 : 4;
  if (init->grant_kind != init->kind || strcmp(init->grant_app, "app-1") != 0 ||
      strcmp(init->grant_name, init->name) != 0 ||
      (init->grant_uid != 0 && init->grant_uid != init->uid)) {
    return channel ? 3 : 5;
  }
  if (init->expiry != 0 && init->expiry < (uint64_t)time(NULL)) return channel ? 4 : 6;
  return 0;
}

static void remember_nonce(const uint8_t *nonce, const struct sockaddr_storage *from,
                           socklen_t from_len) {
  struct nonce *n = &nonces[nonce_count++ % NONCES];
  memcpy(n->bytes, nonce, 16);
  n->dead = 0;
  memcpy(&n->peer, from, from_len);
  n->peer_len = from_len;
}

static void nonce_ended(const uint8_t *nonce) {
  unsigned i;
  for (i = 0; i < NONCES; i++)
    if (memcmp(nonces[i].bytes, nonce, 16) == 0) nonces[i].dead = 1;
}

/* An INIT. mode: as server_drain's; refuse: its code (mode 2). */
static void initiated(const uint8_t *in, size_t n, const struct sockaddr_storage *from,
                      socklen_t from_len, int mode, int refuse, uint32_t lifetime) {
  struct edge_v2_init init;
  struct session *f;
  uint8_t out[EDGE_V2_RESPONSE_SIZE], random[48], ticket[EDGE_V2_TICKET_SIZE];
  int status = edge_v2_open_init(&init, &keys, in, n), reason;
  if (status == EDGE_V2_MALFORMED) {
    /* Its size and version are right (the caller saw to it), its token opened: only the
       request's layout is left, which a conforming device never breaks. */
    fail("an INIT whose request breaks §12.5's layout", 0);
  }
  trace("server hears an INIT (%d), mac2 %s", status,
        edge_v2_mac2_valid(in, n, cookie) ? "the cookie's" : "not the cookie's");
  remember_nonce(in + 2, from, from_len);
  if (mode == 0) return;
  if (status == EDGE_V2_NOT_OPENED) {
    send_raw(out, (size_t)edge_v2_refuse_clear(out, in + 2), from, from_len, 1);
    nonce_ended(in + 2);
    return;
  }
  if (status != 0) return; /* the request did not open: a token changed in its secret */
  reason = judged(&init);
  if (mode == 2 && !(refuse & 0x80)) reason = refuse;
  fake_random(random, sizeof random);
  if (mode == 4 && !edge_v2_mac2_valid(in, n, cookie)) {
    send_raw(out, (size_t)edge_v2_cookie_reply(out, &init, cookie, random), from, from_len, 1);
  } else if (reason) {
    send_raw(out, (size_t)edge_v2_refuse_sealed(out, &init, (uint8_t)reason, 0, random), from,
             from_len, 1);
    /* The input's code may be one the device drops (outside 1 ... 7, a channel's 7): its
       attempt then goes on, so only the fake's own refusals end it for sure. */
    if (mode != 2) nonce_ended(in + 2);
  } else {
    f = &sessions[serial % SESSIONS];
    if (last == (int)(serial % SESSIONS)) last = -1;
    serial++;
    edge_v2_wipe(&f->keys, &f->init);
    memset(f, 0, sizeof *f);
    fake_random(ticket, sizeof ticket);
    if (edge_v2_respond(out, &f->keys, &init, random, (uint64_t)0x5E55 << 32 | serial,
                        lifetime, ticket) != EDGE_V2_RESPONSE_SIZE) {
      memset(&f->keys, 0, sizeof f->keys);
      return;
    }
    f->init = init;
    f->kind = init.kind;
    memcpy(&f->peer, from, from_len);
    f->peer_len = from_len;
    send_raw(out, sizeof out, from, from_len, 1);
  }
  edge_v2_wipe(NULL, &init);
}

static struct session *session_of(uint64_t id) {
  int i;
  for (i = 0; i < SESSIONS; i++)
    if (id != 0 && sessions[i].keys.id == id) return &sessions[i];
  return NULL;
}

/* A CONFIRM: its session's ACCEPT (mode 3: none, the input sends it; mode 2 with the high
   bit: a sealed refusal). */
static void confirmed(const uint8_t *in, size_t n, const struct sockaddr_storage *from,
                      socklen_t from_len, int mode, int refuse) {
  struct session *f = session_of(edge_v2_session_id(in, n));
  uint8_t payload[40];
  if (f == NULL || edge_v2_check_confirm(&f->keys, in, n) != 0) return;
  f->confirmed = 1;
  f->dead = 1;
  nonce_ended(f->init.nonce);
  memcpy(&f->peer, from, from_len);
  f->peer_len = from_len;
  if (f->kind == profile->kind) last = (int)(f - sessions);
  if (mode == 0 || mode == 3) return;
  if (mode == 2 && (refuse & 0x80)) {
    payload[0] = f->kind == 1 ? 0x82 : 0x8A;
    payload[1] = (uint8_t)(refuse & 0x7F);
    payload[2] = 0;
    send_sealed(f, payload, 3);
    return;
  }
  send_sealed(f, payload, accept_payload(payload, f));
}

/* The size of a device payload of `type` (§12.7), 0 for a type no device sends. */
static size_t device_payload_size(uint8_t type) {
  switch (type) {
  case 0x02: case 0x03: case 0x07: case 0x09:
    return 9; /* HEARTBEAT, LEAVE, LOGOUT, PATH_RESPONSE */
  case 0x04: return 220;                              /* RENEW_TOKEN: W */
  case 0x06: return 13;                               /* LOGIN_HEARTBEAT */
  case 0x08: return 74;                               /* CHANNEL_OPERATION */
  default: return 0;
  }
}

/* A DATA of one of its sessions, opened: answered as §12.7 says the edge does. */
static void data(const uint8_t *in, size_t n, const struct sockaddr_storage *from,
                 socklen_t from_len, int mode) {
  struct session *f = session_of(edge_v2_session_id(in, n));
  uint8_t payload[1300], out[20];
  int opened;
  if (n < 42) fail("a device DATA under 42 bytes", (int)n);
  if (f == NULL || (opened = edge_v2_open(payload, &f->keys, in, n)) <= 0) return;
  if ((size_t)opened != device_payload_size(payload[0])) {
    fprintf(stderr, "payload type 0x%02x, %d bytes\n", payload[0], opened);
    fail("a device payload of no device type or of the wrong size", payload[0]);
  }
  memcpy(&f->peer, from, from_len); /* a fake: no path validation */
  f->peer_len = from_len;
  if (f->kind == profile->kind) last = (int)(f - sessions);
  if (mode == 0) return;
  memset(out, 0, sizeof out);
  switch (payload[0]) {
  case 0x02: /* HEARTBEAT, LOGIN_HEARTBEAT: HEARTBEAT_ACK, the sequence, server time 0 */
  case 0x06:
    out[0] = 0x83;
    memcpy(out + 1, payload + 1, 4);
    send_sealed(f, out, 13);
    return;
  case 0x08: /* CHANNEL_OPERATION: CHANNEL_ACK, server session 0, the operation's sequence */
    out[0] = 0x8C;
    memcpy(out + 5, payload + 5, 4);
    send_sealed(f, out, 9);
    return;
  case 0x04: /* RENEW_TOKEN: TOKEN_RENEWED, accepted, an hour left */
    out[0] = 0x88;
    put32(out + 2, 3600000);
    send_sealed(f, out, 6);
    return;
  default: return; /* LEAVE, LOGOUT, PATH_RESPONSE */
  }
}

/* Reads what was sent. mode 0: nothing answered; 1: everything answered; 2: INITs refused
   with the input's code (sealed; its high bit: the CONFIRM refused instead, sealed as
   DATA); 3: everything but the ACCEPT (the input's messages send it); 4: an INIT without
   the cookie's mac2 answered with a COOKIE_REPLY; 5: everything, the RESPONSEs with a
   ticket lifetime of the input's (0, 1 ms, any; else 3 s). Every datagram a connection
   sends must be one of version 2's of the device (§12.2, §12.7) and fit 1200 bytes. */
static void server_drain(int mode) {
  uint8_t in[1500];
  struct sockaddr_storage from;
  socklen_t from_len = sizeof from;
  ssize_t got;
  size_t n;
  int refuse = mode == 2 ? u8() : -1;
  uint32_t lifetime = 3000;
  if (mode == 5) {
    uint8_t choice = u8() % 4;
    lifetime = choice == 0 ? 0 : choice == 1 ? 1 : choice == 2 ? u32() : 3000;
    mode = 1;
  }
  while ((got = recvfrom(server_fd, in, sizeof in, 0, (struct sockaddr *)&from, &from_len)) > 0) {
    n = (size_t)got;
    if (n > 1200) fail("a connection sent more than 1200 bytes", (int)n);
    if (in[0] == 0x01 && n == EDGE_V2_INIT_SIZE && in[1] == 0x02) {
      initiated(in, n, &from, from_len, mode, refuse, lifetime);
    } else if (in[0] == 0x03 && n == EDGE_V2_CONFIRM_SIZE) {
      confirmed(in, n, &from, from_len, mode, refuse);
    } else if (in[0] == 0x07 && n > EDGE_V2_DATA_OVERHEAD) {
      data(in, n, &from, from_len, mode);
    } else {
      fprintf(stderr, "kind 0x%02x, %zu bytes\n", in[0], n);
      fail("a device datagram of no version 2 kind or size", in[0]);
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
  if (room == 0) return 0;
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

/* The payload of `message` (type byte and body, §12.7) from the input, for session f (its
   reset value), into p (room for 1167); returns its length. */
static size_t message_payload(uint8_t *p, enum message message, const struct session *f) {
  size_t at = 1, i, n;
  uint8_t reset[EDGE_V2_RESET_SIZE];
  memset(p, 0, 1167);
  memset(reset, 0, sizeof reset);
  if (f) edge_v2_reset(reset, &keys, "fuzz", f->keys.id, NULL);
  switch (message) {
  case M_ACCEPT:
    p[0] = 0x81;
    put32(p + 1, small32());                             /* uid */
    put64(p + 5, ((uint64_t)u32() << 32) | u32());       /* server time, ms */
    put32(p + 13, u8() % 2 ? small32() * 1000 : u32());  /* token time left */
    p[17] = u8() % 4 == 0 ? u8() : u8() % 2;             /* flags: resumed */
    if (u8() % 4 == 0) reset[9] ^= 1;                    /* a reset value not its own */
    memcpy(p + 18, reset + 9, 16);
    return 34;
  case M_REFUSE:
    p[0] = 0x82;
    p[1] = u8() % 2 ? u8() % 8 : u8();
    p[2] = u8() % 2 ? u8() % 3 : u8(); /* detail */
    return 3;
  case M_HEARTBEAT_ACK:
    p[0] = 0x83;
    put32(p + 1, small32());
    return 13;
  case M_PRESENCE:
    p[0] = 0x84;
    n = u8() % 4 == 0 ? u8() : u8() % 4;
    p[1] = (unsigned char)(n >> 8);
    p[2] = (unsigned char)n;
    for (at = 3, i = 0; i < n && at + 9 <= 1167; i++, at += 9) {
      put32(p + at, u8() % 4 == 0 ? u32() : u8() % 8);        /* uid, of a few */
      p[at + 4] = u8() % 4 == 0 ? u8() : u8() % 3 + 1;        /* JOINED, ALIVE, LEFT */
      put32(p + at + 5, u8() % 2 ? small32() * 1000 : u32()); /* silent for, ms */
    }
    return at;
  case M_KICK:
    p[0] = 0x85;
    p[1] = u8() % 2 ? u8() % 4 : u8(); /* channel: 1 BANNED, 2 SAME_UID; login: 3 REMOTE */
    return 2;
  case M_TOKEN_EXPIRED: p[0] = 0x86; return 1;
  case M_TOKEN_RENEWED:
    p[0] = 0x88;
    p[1] = (unsigned char)(u8() % 6);
    put32(p + 2, u32());
    return 6;
  case M_LOGIN_ACCEPT:
    p[0] = 0x89;
    put64(p + 1, ((uint64_t)u32() << 32) | u32());      /* server time, ms */
    put32(p + 9, u8() % 2 ? small32() * 1000 : u32());  /* token time left */
    p[13] = u8() % 4 == 0 ? u8() : u8() % 2;            /* flags: RESUMED */
    put32(p + 14, u8() % 3);                            /* server session, of a few */
    if (u8() % 4 == 0) reset[9] ^= 1;
    memcpy(p + 18, reset + 9, 16);
    return 34;
  case M_LOGIN_REFUSE:
    p[0] = 0x8A;
    p[1] = u8() % 2 ? u8() % 12 : u8();
    p[2] = u8() % 2 ? u8() % 3 : u8();
    return 3;
  case M_MEMBER_EVENTS:
    p[0] = 0x8B;
    put32(p + 1, u8() % 3);  /* server session, of a few */
    put32(p + 5, small32()); /* first sequence */
    n = u8() % 4 == 0 ? u8() : u8() % 4 + 1;
    p[9] = (unsigned char)n;
    for (at = 10, i = 0; i < n && at < 1160; i++) {
      p[at++] = u8() % 4 == 0 ? u8() : u8() % 2 + 1; /* JOINED, LEFT */
      at += put_name(p + at, 1167 - at);
      at += put_name(p + at, 1167 - at);
    }
    return at;
  case M_CHANNEL_ACK:
    p[0] = 0x8C;
    put32(p + 1, u8() % 3); /* server session, of a few */
    put32(p + 5, small32());
    return 9;
  case M_PATH_CHALLENGE:
    p[0] = 0x8D;
    for (i = 1; i < 9; i++) p[i] = u8();
    return 9;
  case M_RESET: return 0; /* not a payload: server_send writes the RESET itself */
  default:
    p[0] = u8();
    n = u8();
    for (i = 0; i < n; i++) p[at++] = u8();
    return at;
  }
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
  if (kind != profile->log_kind) c->heard++;
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

uint64_t sent_count_of(const void *handle) {
  tether_connection_stats stats;
  stats.size = sizeof stats;
  if (!handle || profile->api->get_stats(handle, &stats) != 0) return 0;
  return stats.datagrams_out;
}

void refused_locally(const struct context *c, const void *handle, uint64_t sent) {
  int state;
  if (!c || c->destroyed || in_callback || c->acts_left) return;
  state = state_of(handle);
  if (sent_count_of(handle) != sent) fail("a token that is not version 2's: a datagram sent", 0);
  if (state != 1) fail("a token that is not version 2's: the attempt goes on", state);
}

/* ---- What the fake sends unasked, and the datagrams it alters -------------------------------- */

/* Time stands still while a datagram the fake altered or replayed is delivered (the
   library reads both clocks through clock_gettime, which this file defines for it), so
   that no deadline can fall due then: whatever changes, the datagram changed it. */
static int frozen;
static struct timespec frozen_monotonic, frozen_realtime;

int clock_gettime(clockid_t id, struct timespec *out) {
  typedef int (*real_t)(clockid_t, struct timespec *);
  static real_t real;
  if (frozen && id == CLOCK_MONOTONIC) {
    *out = frozen_monotonic;
    return 0;
  }
  if (frozen && id == CLOCK_REALTIME) {
    *out = frozen_realtime;
    return 0;
  }
  if (!real) real = (real_t)(uintptr_t)dlsym(RTLD_NEXT, "clock_gettime");
  return real(id, out);
}

/* What a probe compares of each connection. */
struct mark {
  int live, state, heard;
  uint64_t in, dropped;
};

static void mark_all(struct mark *marks) {
  int i;
  tether_connection_stats stats;
  for (i = 0; i < context_count; i++) {
    struct mark *m = &marks[i];
    memset(m, 0, sizeof *m);
    if (!contexts[i].handle || contexts[i].destroyed) continue;
    stats.size = sizeof stats;
    if (profile->api->get_stats(contexts[i].handle, &stats) != 0) continue;
    m->live = 1;
    m->state = state_of(contexts[i].handle);
    m->heard = contexts[i].heard;
    m->in = stats.datagrams_in;
    m->dropped = stats.datagrams_malformed + stats.datagrams_foreign +
                 stats.datagrams_unopened + stats.datagrams_replayed;
  }
}

static int marks_equal(const struct mark *a, const struct mark *b) {
  int i;
  for (i = 0; i < context_count; i++) {
    if (a[i].live != b[i].live || a[i].in != b[i].in || a[i].heard != b[i].heard) return 0;
  }
  return 1;
}

/* Sends `n` bytes the fake altered or replayed (`what`) to `to`, with time frozen: first the
   loop runs until the connections have taken everything sent before; then the datagram
   goes, and whichever connection reads it must count it dropped (unopened, replayed,
   malformed or foreign), keep its state, and call no callback but on_log. Two are not
   counted (`counted` 0 for the second): a genuine RESET again, which has no counter, so a
   second one is the edge's answer to a second datagram as much as a replay (§12.9), and
   a session that took the first is rejoining and does nothing with it. It must still
   change no state and call no callback. A COOKIE_REPLY replayed is counted like any
   other replay: an attempt takes one (docs/PROTOCOL.md §12.6). */
static void altered_send(const uint8_t *bytes, size_t n, const struct sockaddr_storage *to,
                         socklen_t to_len, const char *what, int counted) {
  struct mark before[CONTEXTS], after[CONTEXTS];
  uint8_t genuine[EDGE_V2_RESET_SIZE];
  int i, settled = 0;
  uint64_t id = 0;
  if (to_len == 0 || n == 0) return;
  if (n == EDGE_V2_RESET_SIZE && bytes[0] == 0x08) { /* a RESET the edge would send? */
    for (i = 1; i < 9; i++) id = id << 8 | bytes[i];
    edge_v2_reset(genuine, &keys, "fuzz", id, NULL);
    if (memcmp(genuine, bytes, n) == 0) counted = 0;
  }
  trace("server sends %s, %zu bytes, kind 0x%02x", what, n, bytes[0]);
  clock_gettime(CLOCK_MONOTONIC, &frozen_monotonic);
  clock_gettime(CLOCK_REALTIME, &frozen_realtime);
  frozen = 1;
  mark_all(before);
  for (i = 0; i < 8 && !settled; i++) {
    ev_run(loop, EVRUN_NOWAIT);
    mark_all(after);
    settled = marks_equal(before, after);
    memcpy(before, after, sizeof before);
  }
  sendto(server_fd, bytes, n, 0, (const struct sockaddr *)to, to_len);
  for (i = 0; i < 3; i++) ev_run(loop, EVRUN_NOWAIT);
  frozen = 0;
  if (!settled) {
    trace("  (the loop did not settle: not checked)");
    return;
  }
  mark_all(after);
  for (i = 0; i < context_count; i++) {
    if (!before[i].live || !after[i].live || after[i].in == before[i].in) continue;
    trace("  checked: connection %d read it", i);
    if (counted && after[i].dropped - before[i].dropped != after[i].in - before[i].in) {
      fprintf(stderr, "%s: connection %d took it\n", what, i);
      fail("a datagram the fake altered or replayed was taken", (int)(after[i].in - before[i].in));
    }
    if (after[i].heard != before[i].heard || after[i].state != before[i].state) {
      fprintf(stderr, "%s: connection %d, state %d -> %d, callbacks %d -> %d\n", what, i,
              before[i].state, after[i].state, before[i].heard, after[i].heard);
      fail("a datagram the fake altered or replayed changed a state or called back", i);
    }
  }
}

/* A held session chosen by the input (any profile's), or NULL. */
static struct session *some_session(void) {
  struct session *f = &sessions[u8() % SESSIONS];
  return f->keys.id ? f : NULL;
}

/* The fake's answers to attempts the device no longer has, and forgeries of them
   (§12.5, §12.6, §12.9): each must change nothing, except a REFUSE_CLEAR for an attempt
   that may still be open, which is what the edge would send (unauthenticated by design). */
static void handshake_answer(void) {
  struct session *f = last >= 0 ? &sessions[last] : NULL, *g;
  int choice = u8() % 6;
  uint8_t pick = u8(), out[80], random[24];
  struct nonce *echo =
      nonce_count ? &nonces[pick % (nonce_count < NONCES ? nonce_count : NONCES)] : NULL;
  size_t i, n;
  fake_random(random, sizeof random);
  switch (choice) {
  case 0: /* REFUSE_CLEAR for a nonce of the input's */
    if (!f) return;
    out[0] = 0x05;
    for (i = 1; i < 17; i++) out[i] = u8();
    out[17] = 1;
    for (i = 0; i < NONCES; i++)
      if (memcmp(nonces[i].bytes, out + 1, 16) == 0) return; /* cannot happen: they are random */
    altered_send(out, 18, &f->peer, f->peer_len, "a REFUSE_CLEAR for no attempt", 1);
    return;
  case 1: /* REFUSE_CLEAR echoing an INIT's nonce: for an ended attempt, dropped */
    if (!echo) return;
    n = (size_t)edge_v2_refuse_clear(out, echo->bytes);
    if (echo->dead) {
      altered_send(out, n, &echo->peer, echo->peer_len, "a REFUSE_CLEAR for an ended attempt", 1);
    } else {
      trace("server sends a REFUSE_CLEAR for an attempt");
      send_raw(out, n, &echo->peer, echo->peer_len, 1);
    }
    return;
  case 2: /* REFUSE_SEALED and COOKIE_REPLY, sealed right, for a session's INIT */
  case 3:
    if (!(g = some_session())) return;
    n = choice == 2 ? (size_t)edge_v2_refuse_sealed(out, &g->init, (uint8_t)(u8() % 8), 0, random)
                    : (size_t)edge_v2_cookie_reply(out, &g->init, cookie, random);
    if (g->dead) {
      altered_send(out, n, &g->peer, g->peer_len, "a sealed answer for an ended attempt", 1);
    } else {
      trace("server sends a sealed answer 0x%02x for an attempt", out[0]);
      send_raw(out, n, &g->peer, g->peer_len, 1);
    }
    return;
  case 4: /* REFUSE_SEALED or COOKIE_REPLY echoing a nonce, its sealed part the input's */
    if (!echo) return;
    n = u8() % 2 ? EDGE_V2_REFUSE_SEALED_SIZE : EDGE_V2_COOKIE_REPLY_SIZE;
    out[0] = n == EDGE_V2_REFUSE_SEALED_SIZE ? 0x06 : 0x04;
    memcpy(out + 1, echo->bytes, 16);
    for (i = 17; i < n; i++) out[i] = u8();
    altered_send(out, n, &echo->peer, echo->peer_len, "a forged sealed answer", 1);
    return;
  default: /* RESET of the session with a value not its own */
    if (!f) return;
    edge_v2_reset(out, &keys, "fuzz", f->keys.id, NULL);
    out[9 + u8() % 16] ^= (uint8_t)(u8() | 1);
    altered_send(out, EDGE_V2_RESET_SIZE, &f->peer, f->peer_len, "a RESET with a wrong value", 1);
    return;
  }
}

/* Sends what the input builds: one of the profile's messages sealed for the session heard
   last (or another session), then maybe altered, or a RESET of that session, or a
   replay, or a handshake answer for no attempt, or garbage. How (the byte after the
   message's number): 0 sealed for another session; 2 for the session heard last; 7 the
   same and a copy at once; 1 one bit flipped; 3 cut or lengthened; 4 another session id;
   5 an earlier datagram again; 6 a handshake answer. A body may get 0-7 bytes of padding
   (a sealed one is then malformed: the device must drop it). */
static void server_send(void) {
  uint8_t payload[1300], out[1300];
  int choice = u8() % (profile->message_count + 1), how = u8() % 8;
  struct session *f = last >= 0 ? &sessions[last] : NULL;
  size_t n = 0, length, i, at;
  struct sent *s;
  if (choice == profile->message_count) { /* garbage */
    length = u16() % 1300;
    for (i = 0; i < length; i++) out[i] = u8();
    if (f && length > 0 && !(length == EDGE_V2_RESET_SIZE && out[0] == 0x08)) {
      altered_send(out, length, &f->peer, f->peer_len, "garbage", 1);
    }
    return;
  }
  if (how == 6) {
    handshake_answer();
    return;
  }
  if (how == 5) {
    i = u8();
    if (sent_count == 0) return;
    s = &sent[i % (sent_count < SENT ? sent_count : SENT)];
    if (s->replayable) {
      altered_send(s->bytes, s->length, &s->peer, s->peer_len, "a replay", 1);
    }
    return;
  }
  if (how == 0) f = some_session();
  if (!f) return;
  if (profile->messages[choice] == M_RESET) { /* the session's own: taken as it comes */
    n = (size_t)edge_v2_reset(out, &keys, "fuzz", f->keys.id, NULL);
    payload[0] = 0;
    if (u8() % 4 == 0) { /* padded: no RESET's size, dropped */
      for (i = u8() % 8; i > 0; i--) out[n++] = u8();
    }
  } else {
    length = message_payload(payload, profile->messages[choice], f);
    if (u8() % 4 == 0) {
      for (i = u8() % 8; i > 0 && length < 1167; i--) payload[length++] = u8();
    }
    n = seal(out, f, payload, length);
  }
  if (n == 0) return;
  switch (how) {
  case 1:
    at = u16() % n;
    out[at] ^= (uint8_t)(1u << (u8() % 8));
    altered_send(out, n, &f->peer, f->peer_len, "a bit flipped", 1);
    return;
  case 3:
    length = u16() % 1300;
    if (length == n) length = n - 1;
    for (i = n; i < length; i++) out[i] = u8();
    altered_send(out, length, &f->peer, f->peer_len, "a datagram cut or lengthened", 1);
    return;
  case 4:
    if (n < 9) return;
    out[1 + u8() % 8] ^= (uint8_t)(u8() | 1);
    altered_send(out, n, &f->peer, f->peer_len, "another session id", 1);
    return;
  default:
    trace("server sends %zu bytes, kind 0x%02x, payload 0x%02x", n, out[0], payload[0]);
    send_raw(out, n, &f->peer, f->peer_len, f->confirmed);
    if (how == 7 && f->confirmed) altered_send(out, n, &f->peer, f->peer_len, "a copy", 1);
    return;
  }
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
  server_reset();
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
    case OP_DRAIN: server_drain(u8() % 6); break;
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
