/* fuzz-capi: the C API of Include/tether.h driven by the fuzzer's input, as a careless or
 * hostile host would: random call sequences on up to three engines, with NULL, empty,
 * oversized and malformed arguments, configs and handlers of every size (allocated at
 * exactly their declared size, so a read past it is caught by AddressSanitizer), calls
 * inside callbacks (leave, destroy of this engine or another, join, renew, set_server,
 * network_changed), and a fake edge server on loopback that answers with bytes the input
 * chooses (with the engine's cookie patched in, or not). The loop runs EVRUN_NOWAIT
 * iterations with short sleeps; thresholds are milliseconds so deadlines fire.
 *
 * Properties, each an abort() with a message:
 *   - every return code is one the header lists for that call (never WRONG_THREAD here);
 *   - *out_engine is NULL after a failed create; states are 1..5;
 *   - every on_connection_state_changed carries a (state, reason) pair the header pairs;
 *   - no callback of an engine after its destroy; after leave, only the leave's own two
 *     callbacks until the next join (on_log excepted); calls on a handle destroyed inside a
 *     callback return TETHER_ERR_NOT_INITIALIZED until the callback returns;
 *   - get_stats writes no byte past out->size nor past the struct it knows;
 *   - the name functions never return NULL.
 * Strings handed to the library are freed right after the call: a library that kept one
 * would be caught reading freed memory. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ev.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tether.h"

#define ENGINES 3
#define CONTEXTS 24

static void fail(const char *what, int value) {
  fprintf(stderr, "property violated: %s (%d)\n", what, value);
  abort();
}

#include "loopback.h"

/* ---- the input ---- */
static const uint8_t *in_data;
static size_t in_left;

static uint8_t u8(void) {
  if (in_left == 0) return 0;
  in_left--;
  return *in_data++;
}
static uint16_t u16(void) { return (uint16_t)((u8() << 8) | u8()); }
static uint32_t u32(void) { return ((uint32_t)u16() << 16) | u16(); }

/* ---- the fake server ---- */
static int server_fd = -1;
static char server_address[64];
static struct sockaddr_storage peer; /* where the last datagram came from */
static socklen_t peer_len;
static unsigned char cookie[8]; /* of the last datagram */

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

/* Reads what the engines sent; with `answer`, ACCEPTs JOINs and acks HEARTBEATs. */
static void server_drain(int answer) {
  unsigned char in[1500], out[29];
  struct sockaddr_storage from;
  socklen_t from_len = sizeof from;
  ssize_t n;
  while ((n = recvfrom(server_fd, in, sizeof in, 0, (struct sockaddr *)&from, &from_len)) > 0) {
    if (n > 1200) fail("an engine sent more than 1200 bytes", (int)n);
    if (n >= 12 && in[0] == 'T' && in[1] == 'H') {
      memcpy(cookie, in + 4, 8);
      memcpy(&peer, &from, from_len);
      peer_len = from_len;
      memcpy(out, in, 12);
      if (answer && in[3] == 0x01) {
        out[3] = 0x81;
        memset(out + 12, 0, 17);
        put32(out + 12, 4242);
        sendto(server_fd, out, 29, 0, (struct sockaddr *)&from, from_len);
      } else if (answer && in[3] == 0x02 && n == 16) {
        out[3] = 0x83;
        memcpy(out + 12, in + 12, 4);
        memset(out + 16, 0, 8);
        sendto(server_fd, out, 24, 0, (struct sockaddr *)&from, from_len);
      }
    }
    from_len = sizeof from;
  }
}

/* Sends the input's bytes to the last engine heard from, the cookie patched in or not. */
static void server_send(void) {
  unsigned char out[1300];
  size_t n = u16() % sizeof out, i;
  int patch = u8() & 1;
  for (i = 0; i < n; i++) out[i] = u8();
  if (n >= 4 && u8() & 1) {
    out[0] = 'T';
    out[1] = 'H';
    out[2] = 1;
  }
  if (patch && n >= 12) memcpy(out + 4, cookie, 8);
  if (peer_len > 0) sendto(server_fd, out, n, 0, (struct sockaddr *)&peer, peer_len);
}

/* ---- engines and their callbacks ---- */
enum kind {
  K_STATE, K_JOIN, K_REJOIN, K_LOST, K_LEAVE, K_USER_JOINED, K_USER_OFFLINE, K_WILL_EXPIRE,
  K_REQUEST_TOKEN, K_LOG, K_ATTEMPT, K_REMOTE_INTERRUPTED, K_REMOTE_RESUMED, K_COUNT
};
enum action {
  A_NONE, A_LEAVE, A_DESTROY, A_DESTROY_OTHER, A_JOIN, A_RENEW, A_SET_SERVER,
  A_NETWORK_CHANGED, A_LEAVE_DESTROY, A_COUNT
};

/* One per engine made in this input (never reused within it). */
struct context {
  tether_engine *engine; /* NULL once destroyed */
  int slot;
  int destroyed;
  int left; /* left and not joined since: only the leave's own callbacks may come */
  int leave_state_seen;
  enum kind act_in;
  enum action action;
  int acts_left;
};

static struct ev_loop *loop;
static struct context contexts[CONTEXTS];
static int context_count;
static struct context *slots[ENGINES];
static int in_callback;

static char *copy_of(const char *text) {
  size_t n = strlen(text);
  char *copy = malloc(n + 1);
  if (!copy) abort();
  memcpy(copy, text, n + 1);
  return copy;
}

/* A string argument chosen by the input: valid, empty, oversized, forbidden bytes, or
   bytes of the input itself. NULL when the choice is NULL (the caller frees the rest). */
static char *string_arg(const char *valid) {
  uint8_t choice = u8() % 8;
  char *s;
  size_t n, i;
  switch (choice) {
  case 0: return NULL;
  case 1: return copy_of("");
  case 2: n = 100000; break;
  case 3: n = 513; break;
  case 4: n = 64; break;
  case 5: return copy_of("bad name\x01\x7f");
  case 6:
    n = u8();
    s = malloc(n + 1);
    if (!s) abort();
    for (i = 0; i < n; i++) {
      s[i] = (char)u8();
      if (s[i] == 0) s[i] = 'z';
    }
    s[n] = 0;
    return s;
  default: return copy_of(valid);
  }
  s = malloc(n + 1);
  if (!s) abort();
  memset(s, 'a', n);
  s[n] = 0;
  return s;
}

static int valid_pair(int state, int reason) {
  switch (reason) {
  case 0: return state == 2;
  case 1: case 15: return state == 3;
  case 5: case 8: return state == 1;
  case 2: case 11: case 12: case 13: case 14: case 16: case 18: return state == 4;
  case 3: case 4: case 6: case 7: case 9: case 10: case 19: return state == 5;
  default: return 0;
  }
}

static void check_code(int rc, const int *allowed, int count, const char *call) {
  int i;
  for (i = 0; i < count; i++) {
    if (rc == allowed[i]) return;
  }
  fprintf(stderr, "%s returned %d\n", call, rc);
  fail("a return code the header does not list", rc);
}
#define CHECK_CODE(rc, call, ...)                                                      \
  do {                                                                                 \
    static const int allowed_[] = {__VA_ARGS__};                                        \
    check_code((rc), allowed_, (int)(sizeof allowed_ / sizeof allowed_[0]), (call));    \
  } while (0)

static void call_join(struct context *c, tether_engine *engine) {
  char *token = string_arg("token-A");
  char *channel = string_arg("lobby");
  uint32_t uid = u8() & 1 ? 0 : u32();
  tether_connection_state before = tether_get_connection_state(engine);
  int left = c ? c->left : 0, rc;
  /* A join's own callbacks come inside the call: the leave's silence ends with it. */
  if (c) c->left = 0;
  rc = tether_join_channel(engine, token, channel, uid);
  if (c && rc != 0) c->left = left;
  free(token);
  free(channel);
  CHECK_CODE(rc, "join", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT,
             TETHER_ERR_INVALID_CHANNEL_NAME, TETHER_ERR_INVALID_TOKEN,
             TETHER_ERR_JOIN_CHANNEL_REJECTED);
  if (rc == 0 && before != TETHER_CONNECTION_STATE_DISCONNECTED) fail("join while joined", before);
}

static void call_leave(struct context *c, tether_engine *engine) {
  int rc = tether_leave_channel(engine);
  CHECK_CODE(rc, "leave", 0, TETHER_ERR_NOT_INITIALIZED);
  if (rc == 0 && c) {
    c->left = 1;
    c->leave_state_seen = 0;
  }
}

static void call_renew(tether_engine *engine) {
  char *token = string_arg("token-B");
  int rc = tether_renew_token(engine, token);
  free(token);
  CHECK_CODE(rc, "renew", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT,
             TETHER_ERR_INVALID_TOKEN, TETHER_ERR_NOT_READY);
}

/* A server argument: ours, numeric ones, "localhost" (resolved from /etc/hosts), or one
   of string_arg's with every letter made a digit, so no lookup ever waits on DNS. */
static char *server_arg(void) {
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

static void call_set_server(tether_engine *engine) {
  char *server = server_arg();
  int rc = tether_set_server(engine, server);
  free(server);
  CHECK_CODE(rc, "set_server", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT,
             TETHER_ERR_FAILED);
}

static void destroy(struct context *c) {
  tether_engine *engine = c->engine;
  c->engine = NULL;
  c->destroyed = 1;
  if (slots[c->slot] == c) slots[c->slot] = NULL;
  CHECK_CODE(tether_engine_destroy(engine), "destroy", 0);
  if (in_callback) {
    /* Until the callback returns, the handle answers NOT_INITIALIZED. */
    if (tether_leave_channel(engine) != TETHER_ERR_NOT_INITIALIZED) fail("leave after destroy", 0);
    if (tether_join_channel(engine, "", "lobby", 0) != TETHER_ERR_NOT_INITIALIZED) {
      fail("join after destroy", 0);
    }
    if (tether_get_connection_state(engine) != TETHER_CONNECTION_STATE_DISCONNECTED) {
      fail("state after destroy", 0);
    }
    CHECK_CODE(tether_engine_destroy(engine), "destroy again", 0); /* a no-op */
  }
}

static void act(struct context *c) {
  struct context *other;
  /* Not inside tether_engine_create (on_log may come from it): no handle yet to act on. */
  if (c->acts_left == 0 || c->destroyed || !c->engine) return;
  c->acts_left--;
  switch (c->action) {
  case A_LEAVE: call_leave(c, c->engine); break;
  case A_DESTROY: destroy(c); break;
  case A_DESTROY_OTHER:
    other = slots[(c->slot + 1) % ENGINES];
    if (other && other != c) destroy(other);
    break;
  case A_JOIN: call_join(c, c->engine); break;
  case A_RENEW: call_renew(c->engine); break;
  case A_SET_SERVER: call_set_server(c->engine); break;
  case A_NETWORK_CHANGED:
    CHECK_CODE(tether_network_changed(c->engine), "network_changed", 0,
               TETHER_ERR_NOT_INITIALIZED);
    break;
  case A_LEAVE_DESTROY:
    call_leave(c, c->engine);
    destroy(c);
    break;
  default: break;
  }
}

/* Every callback comes here. */
static void hit(void *ctx, enum kind k, int state, int reason) {
  struct context *c = ctx;
  if (c < contexts || c >= contexts + CONTEXTS) fail("a callback with a ctx never given", k);
  if (c->destroyed) fail("a callback after destroy", k);
  if (k == K_STATE && !valid_pair(state, reason)) fail("state/reason pair", state * 100 + reason);
  if (c->left && k != K_LOG) {
    int own = (k == K_STATE && state == 1 && reason == 5 && !c->leave_state_seen) ||
              (k == K_LEAVE && c->leave_state_seen);
    if (!own) {
      fprintf(stderr, "engine %d: callback %d (state %d, reason %d) after leave\n",
              (int)(c - contexts), (int)k, state, reason);
      fail("a callback after leave", k);
    }
    if (k == K_STATE) c->leave_state_seen = 1;
  }
  if (k == c->act_in) {
    in_callback++;
    act(c);
    in_callback--;
  }
}

static void on_state(void *c, tether_connection_state s, tether_connection_changed_reason r) {
  hit(c, K_STATE, (int)s, (int)r);
}
static void on_join(void *c, const char *ch, uint32_t uid, uint32_t e) {
  (void)uid; (void)e;
  if (!ch || strlen(ch) > 63) fail("join channel name", 0);
  hit(c, K_JOIN, 0, 0);
}
static void on_rejoin(void *c, const char *ch, uint32_t uid, uint32_t e) {
  (void)uid; (void)e;
  if (!ch || strlen(ch) > 63) fail("rejoin channel name", 0);
  hit(c, K_REJOIN, 0, 0);
}
static void on_lost(void *c) { hit(c, K_LOST, 0, 0); }
static void on_leave(void *c) { hit(c, K_LEAVE, 0, 0); }
static void on_user_joined(void *c, uint32_t uid, uint32_t e) {
  (void)uid; (void)e;
  hit(c, K_USER_JOINED, 0, 0);
}
static void on_user_offline(void *c, uint32_t uid, tether_user_offline_reason r) {
  (void)uid;
  if (r != TETHER_USER_OFFLINE_QUIT && r != TETHER_USER_OFFLINE_DROPPED) fail("offline reason", r);
  hit(c, K_USER_OFFLINE, 0, 0);
}
static void on_will_expire(void *c, const char *t) {
  if (!t) fail("will-expire token NULL", 0);
  hit(c, K_WILL_EXPIRE, 0, 0);
}
static void on_request_token(void *c) { hit(c, K_REQUEST_TOKEN, 0, 0); }
static void on_log(void *c, tether_log_level l, const char *m) {
  if (!m || l < TETHER_LOG_ERROR || l > TETHER_LOG_DEBUG) fail("log", (int)l);
  hit(c, K_LOG, 0, 0);
}
static void on_attempt(void *c, uint32_t a, uint32_t n, uint32_t g) {
  (void)n; (void)g;
  if (a == 0) fail("attempt 0", 0);
  hit(c, K_ATTEMPT, 0, 0);
}
static void on_remote_interrupted(void *c, uint32_t uid) {
  (void)uid;
  hit(c, K_REMOTE_INTERRUPTED, 0, 0);
}
static void on_remote_resumed(void *c, uint32_t uid) {
  (void)uid;
  hit(c, K_REMOTE_RESUMED, 0, 0);
}

static uint32_t threshold(uint32_t fast) {
  switch (u8() % 8) {
  case 0: return 0;
  case 1: return u32();
  case 2: return u16();
  default: return fast;
  }
}

static void create(void) {
  int slot = u8() % ENGINES, rc;
  uint8_t flags = u8();
  uint32_t config_size, handler_size;
  tether_engine_config full;
  tether_engine_handler handlers;
  tether_engine_config *config;
  tether_engine_handler *handler = NULL;
  tether_engine *engine = (tether_engine *)&full; /* must come back NULL on failure */
  char *app_id, *server;
  struct context *c;
  if (slots[slot] || context_count == CONTEXTS) return;
  c = &contexts[context_count];
  memset(c, 0, sizeof *c);
  c->slot = slot;
  c->act_in = (enum kind)(u8() % (K_COUNT + 1));
  c->action = (enum action)(u8() % A_COUNT);
  c->acts_left = u8() % 3;

  tether_engine_config_init(&full);
  app_id = u8() % 4 == 0 ? string_arg("app-1") : copy_of("app-1");
  server = u8() % 4 == 0 ? server_arg() : copy_of(server_address);
  full.app_id = app_id;
  full.server = server;
  full.heartbeat_interval_ms = threshold(5);
  full.interrupted_after_ms = threshold(20);
  full.lost_after_ms = threshold(40);
  full.remote_offline_after_ms = threshold(60);
  full.give_up_after_ms = threshold(300);
  full.token_will_expire_before_ms = threshold(5);
  full.retry_base_ms = threshold(2);
  full.retry_cap_ms = threshold(10);
  /* The declared size: the struct's, smaller (an older caller), 0, or larger. */
  config_size = (uint32_t)sizeof full;
  if (flags & 1) config_size = u8() % (sizeof full + 16);
  config = malloc(config_size > sizeof full ? config_size : sizeof full);
  if (!config) abort();
  memset(config, 0xA5, config_size > sizeof full ? config_size : sizeof full);
  memcpy(config, &full, sizeof full);
  config->size = config_size;
  if (config_size < sizeof full) {
    /* Exactly the declared bytes, so a read past them is caught. */
    tether_engine_config *exact = malloc(config_size < 4 ? 4 : config_size);
    if (!exact) abort();
    memcpy(exact, config, config_size < 4 ? 4 : config_size);
    free(config);
    config = exact;
  }
  if (!(flags & 2)) {
    tether_engine_handler_init(&handlers);
    handlers.on_connection_state_changed = on_state;
    handlers.on_join_channel_success = on_join;
    handlers.on_rejoin_channel_success = on_rejoin;
    handlers.on_connection_lost = on_lost;
    handlers.on_leave_channel = on_leave;
    handlers.on_user_joined = on_user_joined;
    handlers.on_user_offline = on_user_offline;
    handlers.on_token_privilege_will_expire = on_will_expire;
    handlers.on_request_token = on_request_token;
    handlers.on_log = on_log;
    handlers.on_join_attempt = on_attempt;
    handlers.on_remote_member_interrupted = on_remote_interrupted;
    handlers.on_remote_member_resumed = on_remote_resumed;
    handler_size = (uint32_t)sizeof handlers;
    if (flags & 4) handler_size = (uint32_t)(u8() % (sizeof handlers + 1)) & ~7u;
    if (handler_size < 8) handler_size = (flags & 8) ? 0 : 8;
    handler = malloc(handler_size < 8 ? 8 : handler_size);
    if (!handler) abort();
    memcpy(handler, &handlers, handler_size < 8 ? 8 : handler_size);
    handler->size = handler_size;
  }
  rc = tether_engine_create(loop, config, handler, c, (flags & 16) ? NULL : &engine);
  free(config);
  free(handler);
  free(app_id);
  free(server);
  CHECK_CODE(rc, "create", 0, TETHER_ERR_INVALID_ARGUMENT, TETHER_ERR_INVALID_APP_ID,
             TETHER_ERR_FAILED);
  if (flags & 16) {
    if (rc == 0) fail("create succeeded with out_engine NULL", 0);
    return;
  }
  if (rc != 0) {
    if (engine != NULL) fail("out_engine not NULL after a failed create", rc);
    return;
  }
  if (!engine) fail("create returned 0 and no engine", 0);
  c->engine = engine;
  slots[slot] = c;
  context_count++;
}

static void stats(tether_engine *engine) {
  union {
    tether_engine_stats stats;
    unsigned char bytes[sizeof(tether_engine_stats) + 64];
  } out;
  uint32_t size = u8() & 1 ? (uint32_t)sizeof out.stats : u8();
  size_t limit, i;
  int rc;
  if (size > sizeof out.bytes) size = sizeof out.bytes;
  memset(out.bytes, 0xA5, sizeof out.bytes);
  out.stats.size = size;
  rc = tether_engine_get_stats(engine, u8() % 16 == 0 ? NULL : &out.stats);
  CHECK_CODE(rc, "get_stats", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT);
  limit = size < sizeof out.stats ? size : sizeof out.stats;
  if (limit < 4) limit = 4;
  for (i = limit; i < sizeof out.bytes; i++) {
    if (out.bytes[i] != 0xA5) fail("get_stats wrote past out->size", (int)i);
  }
}

static unsigned slept_ms; /* in this input */

static void run_loop(void) {
  struct timespec pause = {0, 0};
  int i, rounds = u8() % 4 + 1;
  uint8_t ms = u8() % 4;
  if (slept_ms + ms > 40) ms = 0; /* keeps each input short */
  slept_ms += ms;
  pause.tv_nsec = (long)ms * 1000000L;
  if (ms) nanosleep(&pause, NULL);
  for (i = 0; i < rounds; i++) ev_run(loop, EVRUN_NOWAIT);
}

static tether_engine *pick_engine(struct context **c) {
  uint8_t choice = u8() % (ENGINES + 1);
  *c = choice < ENGINES ? slots[choice] : NULL;
  return *c ? (*c)->engine : NULL;
}

/* ---- seeds: TETHER_FUZZ_WRITE_SEEDS=DIR fuzz-capi writes them and exits ---- */
#define OP_CREATE 0
#define OP_DESTROY 1
#define OP_JOIN 2
#define OP_LEAVE 3
#define OP_RENEW 4
#define OP_STATE 5
#define OP_NETWORK 6
#define OP_SET_SERVER 7
#define OP_STATS 8
#define OP_NAMES 9
#define OP_DRAIN 10
#define OP_SEND 11
#define OP_RUN 12

/* create in `slot`: handler and config whole, acting `action` in callback `kind` once;
   valid app id and our server; every threshold fast. */
#define CREATE(slot, kind, action) \
  OP_CREATE, slot, 0, kind, action, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3
#define JOIN(slot) OP_JOIN, slot, 7, 7, 1
#define RUN OP_RUN, 3, 3
#define ANSWER OP_DRAIN, 1
/* The server sends `n` bytes (`...`), its last client's cookie patched in. */
#define SEND(n, ...) OP_SEND, 0, n, 1, __VA_ARGS__, 0

static const uint8_t seed_joined[] = {CREATE(0, 13, 0), JOIN(0), RUN, ANSWER, RUN, RUN, ANSWER,
                                      RUN, OP_STATS, 0, 1, 1, OP_LEAVE, 0, RUN};
static const uint8_t seed_destroy_in_join[] = {CREATE(0, K_JOIN, A_DESTROY), JOIN(0), RUN,
                                               ANSWER, RUN, RUN};
static const uint8_t seed_leave_in_state[] = {CREATE(0, K_STATE, A_LEAVE), JOIN(0), RUN, ANSWER,
                                              RUN, JOIN(0), RUN};
static const uint8_t seed_destroy_other[] = {CREATE(0, K_ATTEMPT, A_DESTROY_OTHER),
                                             CREATE(1, 13, 0), JOIN(1), JOIN(0), RUN, RUN};
static const uint8_t seed_presence[] = {
    CREATE(0, K_USER_JOINED, A_LEAVE_DESTROY), JOIN(0), RUN, ANSWER, RUN,
    SEND(32, 'T', 'H', 1, 0x84, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 3, 0xE9, 1, 0, 0, 0, 0, 0,
         0, 0, 7, 3, 0, 0, 0, 0xFA),
    RUN, RUN};
static const uint8_t seed_kick[] = {CREATE(0, K_REQUEST_TOKEN, A_RENEW), JOIN(0), RUN, ANSWER,
                                    RUN, SEND(13, 'T', 'H', 1, 0x86, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                                    RUN, OP_RENEW, 0, 7, RUN, ANSWER, RUN};
static const uint8_t seed_bad_arguments[] = {
    OP_CREATE, 0, 1, 13, 0, 0, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 0, /* config size 0 */
    OP_CREATE, 1, 2, 13, 0, 0, 1, 1, 0, 3, 3, 3, 3, 3, 3, 3,     /* no handler, threshold 0 */
    CREATE(2, 13, 0), OP_JOIN, 2, 7, 0, 1, OP_RENEW, 2, 0, OP_STATS, 2, 0, 4, 0,
    OP_SET_SERVER, 2, 3, 2, OP_NAMES, 0xFF, 0xFF, 0xFF, 0xFF, OP_DESTROY, 3, OP_NETWORK, 3};

static void write_seed(const char *dir, const char *name, const uint8_t *bytes, size_t n) {
  char path[4096];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (!f || fwrite(bytes, 1, n, f) != n) fail("cannot write a seed", 0);
  fclose(f);
}
#define SEED(name) write_seed(dir, #name, seed_##name, sizeof seed_##name)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *dir = getenv("TETHER_FUZZ_WRITE_SEEDS");
  (void)argc;
  (void)argv;
  if (!dir) return 0;
  SEED(joined);
  SEED(destroy_in_join);
  SEED(leave_in_state);
  SEED(destroy_other);
  SEED(presence);
  SEED(kick);
  SEED(bad_arguments);
  exit(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int ops = 0, i;
  struct context *c;
  tether_engine *engine;
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
  while (in_left > 0 && ops++ < 64) {
    switch (u8() % 13) {
    case 0: create(); break;
    case 1:
      engine = pick_engine(&c);
      if (c) destroy(c);
      else CHECK_CODE(tether_engine_destroy(NULL), "destroy NULL", 0);
      break;
    case 2: engine = pick_engine(&c); call_join(c, engine); break;
    case 3: engine = pick_engine(&c); call_leave(c, engine); break;
    case 4: engine = pick_engine(&c); call_renew(engine); break;
    case 5: {
      int state;
      engine = pick_engine(&c);
      state = (int)tether_get_connection_state(engine);
      if (state < 1 || state > 5) fail("state out of range", state);
      break;
    }
    case 6:
      engine = pick_engine(&c);
      CHECK_CODE(tether_network_changed(engine), "network_changed", 0,
                 TETHER_ERR_NOT_INITIALIZED);
      break;
    case 7: engine = pick_engine(&c); call_set_server(engine); break;
    case 8: engine = pick_engine(&c); stats(engine); break;
    case 9: {
      int value = (int)u32();
      if (!tether_connection_state_name(value) || !tether_connection_changed_reason_name(value) ||
          !tether_user_offline_reason_name(value) || !tether_error_name(value)) {
        fail("a name function returned NULL", value);
      }
      tether_engine_config_init(NULL);
      tether_engine_handler_init(NULL);
      break;
    }
    case 10: server_drain(u8() & 1); break;
    case 11: server_send(); break;
    default: run_loop(); break;
    }
  }
  for (i = 0; i < ENGINES; i++) {
    if (slots[i]) destroy(slots[i]);
  }
  ev_run(loop, EVRUN_NOWAIT);
  return 0;
}
