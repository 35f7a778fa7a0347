/* fuzz-rtm: the login profile's C API (tether_rtm_* in Include/tether.h) driven by the
 * fuzzer's input, as fuzz-capi drives the channel engine's: random call sequences on up
 * to two clients (and a channel engine on the same loop), with NULL, empty, oversized and
 * malformed arguments, configs and handlers of every size (allocated at exactly their
 * declared size, so a read past it is caught by AddressSanitizer), calls inside every
 * callback (logout, destroy of this client or the other, login, join, leave, renew,
 * network_changed, logout then destroy, logout then login), and a fake edge server on
 * loopback that answers LOGIN, LOGIN_HEARTBEAT, CHANNEL_OPERATION and RENEW_TOKEN, and
 * pushes login-profile datagrams built from the input (LOGIN_ACCEPT, LOGIN_REFUSE with
 * any code, MEMBER_EVENTS, CHANNEL_ACK, KICK, TOKEN_EXPIRED, SESSION_UNKNOWN,
 * HEARTBEAT_ACK, TOKEN_RENEWED, any type, garbage), under the login's cookie or not. The
 * loop runs EVRUN_NOWAIT iterations with short sleeps; thresholds are milliseconds.
 *
 * Properties, each an abort() with a message:
 *   - every return code is one the header lists for that call (never the wrong-thread
 *     codes here); login returns 0 only from DISCONNECTED, logout 0 only from another
 *     state and NOT_LOGGED_IN only from DISCONNECTED; join, leave and renew return 0 only
 *     while CONNECTING, CONNECTED or RECONNECTING; states are 1..5;
 *   - *out_client is NULL after a failed create;
 *   - every on_connection_state_changed carries a (state, reason) pair the header pairs;
 *   - no callback of a client after its destroy; calls on a handle destroyed inside a
 *     callback answer NOT_INITIALIZED until the callback returns;
 *   - on_login_result at most once per login call that returned 0, with a code 0..10,
 *     just before the change it causes (OK: CONNECTED/LOGIN_SUCCESS; otherwise not
 *     CONNECTED), and none still owed when the state becomes CONNECTED, DISCONNECTED or
 *     ABORTED;
 *   - on_logout_result(OK) inside every logout that returned 0 outside a callback (when
 *     the handler has it), and no callback after it until the next login (on_log excepted);
 *   - get_stats writes no byte past out->size nor past the struct it knows; every datagram
 *     a client sends is at most 1200 bytes; the name functions never return NULL.
 * Strings handed to the library are freed right after the call. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

#include "../capi/loopback.h"

#define CLIENTS 2
#define CONTEXTS 16

static void fail(const char *what, int value) {
  fprintf(stderr, "property violated: %s (%d)\n", what, value);
  abort();
}

static int tracing; /* TETHER_FUZZ_TRACE set: calls and callbacks on stderr (to read an input) */

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

/* ---- login-profile datagrams (docs/PROTOCOL.md section 5b), the one place that knows
   their bytes. A body may get 0..7 bytes of padding from the input, so a field added at
   the end of a message (a session epoch, say) is still reached by the fuzzer. ---- */
enum server_message {
  M_LOGIN_ACCEPT, M_LOGIN_REFUSE, M_MEMBER_EVENTS, M_CHANNEL_ACK, M_KICK, M_TOKEN_EXPIRED,
  M_SESSION_UNKNOWN, M_HEARTBEAT_ACK, M_TOKEN_RENEWED, M_ANY_TYPE, M_COUNT
};
#define T_LOGIN 0x05
#define T_LOGIN_HEARTBEAT 0x06
#define T_LOGOUT 0x07
#define T_CHANNEL_OPERATION 0x08
#define T_RENEW_TOKEN 0x04
#define T_JOIN 0x01
#define T_HEARTBEAT 0x02

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* A name for an entry or argument: one of a few (so members and channels meet again), or
   the input's bytes. */
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

/* A u32 that is often small (sequences, counts). */
static uint32_t small32(void) {
  uint8_t choice = u8() % 4;
  if (choice == 0) return u32();
  return u8() % 8;
}

/* Writes header and body of `message` into out (1300 bytes); returns the length. */
static size_t login_datagram(unsigned char *out, enum server_message message,
                             const unsigned char *cookie) {
  size_t at = 12, i, n;
  out[0] = 'T';
  out[1] = 'H';
  out[2] = 1;
  memcpy(out + 4, cookie, 8);
  switch (message) {
  case M_LOGIN_ACCEPT:
    out[3] = 0x89;
    put32(out + 12, u32()); /* server time, ms */
    put32(out + 16, u32());
    put32(out + 20, u8() % 2 ? small32() * 1000 : u32()); /* token time left */
    out[24] = u8() % 4 == 0 ? u8() : u8() % 2;             /* flags: RESUMED */
    put32(out + 25, u8() % 3);                              /* server session, of a few */
    at = 29;
    break;
  case M_LOGIN_REFUSE:
    out[3] = 0x8A;
    out[12] = u8() % 2 ? (unsigned char)(u8() % 12) : u8();
    at = 13;
    break;
  case M_MEMBER_EVENTS:
    out[3] = 0x8B;
    put32(out + 12, u8() % 3);  /* server session, of a few */
    put32(out + 16, small32()); /* first sequence */
    n = u8() % 4 == 0 ? u8() : u8() % 4 + 1;
    out[20] = (unsigned char)n;
    at = 21;
    for (i = 0; i < n && at < 1190; i++) {
      out[at++] = u8() % 4 == 0 ? u8() : u8() % 2 + 1; /* JOINED, LEFT */
      at += put_name(out + at, 1200 - at);
      at += put_name(out + at, 1200 - at);
    }
    break;
  case M_CHANNEL_ACK:
    out[3] = 0x8C;
    put32(out + 12, u8() % 3); /* server session, of a few */
    put32(out + 16, small32());
    at = 20;
    break;
  case M_KICK:
    out[3] = 0x85;
    out[12] = u8() % 2 ? (unsigned char)(u8() % 2 ? 1 : 3) : u8();
    at = 13;
    break;
  case M_TOKEN_EXPIRED: out[3] = 0x86; break;
  case M_SESSION_UNKNOWN: out[3] = 0x87; break;
  case M_HEARTBEAT_ACK:
    out[3] = 0x83;
    put32(out + 12, small32());
    memset(out + 16, 0, 8);
    at = 24;
    break;
  case M_TOKEN_RENEWED:
    out[3] = 0x88;
    out[12] = (unsigned char)(u8() % 6);
    put32(out + 13, u32());
    at = 17;
    break;
  default: /* any type, a body of the input's bytes */
    out[3] = u8();
    n = u8();
    for (i = 0; i < n; i++) out[at++] = u8();
    break;
  }
  if (u8() % 4 == 0) {
    n = u8() % 8;
    for (i = 0; i < n; i++) out[at++] = u8();
  }
  return at;
}

/* ---- the fake server ---- */
static int server_fd = -1;
static char server_address[64];
static struct sockaddr_storage login_peer; /* where the last login-profile datagram came from */
static socklen_t login_peer_len;
static unsigned char login_cookie[8];
static unsigned char any_cookie[8]; /* of the last datagram of either profile */

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

static void reply(const unsigned char *out, size_t n, const struct sockaddr_storage *to,
                  socklen_t to_len) {
  sendto(server_fd, out, n, 0, (const struct sockaddr *)to, to_len);
}

/* Reads what was sent. mode 0: nothing answered; 1: everything accepted or acknowledged
   (LOGIN_ACCEPT resumed for a RELOGIN); 2: LOGIN refused with the input's code. */
static void server_drain(int mode) {
  unsigned char in[1500], out[64];
  struct sockaddr_storage from;
  socklen_t from_len = sizeof from;
  ssize_t n;
  uint8_t refuse = mode == 2 ? u8() : 0;
  while ((n = recvfrom(server_fd, in, sizeof in, 0, (struct sockaddr *)&from, &from_len)) > 0) {
    if (n > 1200) fail("a client sent more than 1200 bytes", (int)n);
    if (n >= 12 && in[0] == 'T' && in[1] == 'H' && in[2] == 1) {
      memcpy(any_cookie, in + 4, 8);
      memcpy(out, in, 12);
      if (in[3] >= T_LOGIN && in[3] <= T_CHANNEL_OPERATION) {
        memcpy(login_cookie, in + 4, 8);
        memcpy(&login_peer, &from, from_len);
        login_peer_len = from_len;
      }
      if (mode == 2 && in[3] == T_LOGIN) {
        out[3] = 0x8A;
        out[12] = refuse;
        reply(out, 13, &from, from_len);
      } else if (mode != 0) {
        switch (in[3]) {
        case T_LOGIN:
          out[3] = 0x89;
          memset(out + 12, 0, 17); /* server session 0 */
          out[24] = n > 12 ? (in[12] & 1) : 0;
          reply(out, 29, &from, from_len);
          break;
        case T_LOGIN_HEARTBEAT:
        case T_HEARTBEAT:
          out[3] = 0x83;
          memcpy(out + 12, in + 12, 4);
          memset(out + 16, 0, 8);
          if (n >= 16) reply(out, 24, &from, from_len);
          break;
        case T_CHANNEL_OPERATION:
          out[3] = 0x8C;
          memset(out + 12, 0, 4); /* server session 0 */
          memcpy(out + 16, in + 12, 4);
          if (n >= 16) reply(out, 20, &from, from_len);
          break;
        case T_RENEW_TOKEN:
          out[3] = 0x88;
          out[12] = 0;
          put32(out + 13, 3600000);
          reply(out, 17, &from, from_len);
          break;
        case T_JOIN:
          out[3] = 0x81;
          memset(out + 12, 0, 17);
          put32(out + 12, 4242);
          reply(out, 29, &from, from_len);
          break;
        default: break;
        }
      }
    }
    from_len = sizeof from;
  }
}

/* Sends a datagram the input builds to the last client heard from. */
static void server_send(void) {
  unsigned char out[1300];
  enum server_message message = (enum server_message)(u8() % (M_COUNT + 1));
  uint8_t cookie_choice = u8() % 8;
  size_t n, i;
  const unsigned char *cookie = cookie_choice == 0 ? any_cookie : login_cookie;
  if (message == M_COUNT) { /* garbage */
    n = u16() % sizeof out;
    for (i = 0; i < n; i++) out[i] = u8();
  } else {
    n = login_datagram(out, message, cookie);
    if (cookie_choice == 1) memset(out + 4, 0, 8);
  }
  if (tracing) fprintf(stderr, "server sends %zu bytes, type 0x%02x\n", n, n > 3 ? out[3] : 0);
  if (login_peer_len > 0) reply(out, n, &login_peer, login_peer_len);
}

/* ---- clients and their callbacks ---- */
enum kind {
  K_STATE, K_LOGIN_RESULT, K_LOGOUT_RESULT, K_TOKEN_EXPIRED, K_MEMBER_JOINED, K_MEMBER_LEFT,
  K_LOG, K_ATTEMPT, K_COUNT
};
enum action {
  A_NONE, A_LOGOUT, A_DESTROY, A_DESTROY_OTHER, A_LOGIN, A_JOIN, A_LEAVE, A_RENEW,
  A_NETWORK_CHANGED, A_LOGOUT_DESTROY, A_LOGOUT_LOGIN, A_COUNT
};

/* One per client made in this input (never reused within it). */
struct context {
  tether_rtm_client *client; /* NULL once destroyed */
  int slot;
  int destroyed;
  int has_login_result;  /* its handler has on_login_result */
  int has_logout_result; /* its handler has on_logout_result */
  int owed;              /* login results owed: login calls that returned 0, less results */
  int expect;            /* after a login result: 1 CONNECTED/LOGIN_SUCCESS next, 2 not CONNECTED */
  int logged_out;        /* on_logout_result came, and no login since */
  /* A logout inside a callback delivers its callbacks after that callback returns; a
     login may come first. These keep the checks right across that. */
  int pending_logouts;  /* logouts that returned 0 whose on_logout_result has not come */
  int login_since_logout; /* a login returned 0 since the last logout that did */
  int loose; /* a logout inside a callback without on_logout_result: order unknown since */
  /* A login that returned 0 inside a callback: the state changes queued before it (the
     previous attempt's) come first, until its own CONNECTING. */
  int awaiting_connecting;
  enum kind act_in;
  enum action action;
  int acts_left;
};

static struct ev_loop *loop;
static struct context contexts[CONTEXTS];
static int context_count;
static struct context *slots[CLIENTS];
static int in_callback;

static char *copy_of(const char *text) {
  size_t n = strlen(text);
  char *copy = malloc(n + 1);
  if (!copy) abort();
  memcpy(copy, text, n + 1);
  return copy;
}

static char *filled(size_t n, char c) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memset(s, c, n);
  s[n] = 0;
  return s;
}

/* A string argument chosen by the input: valid, NULL, empty, at and past each bound (63,
   64, 65, 512, 513 bytes), huge, forbidden bytes, or the input's bytes. */
static char *string_arg(const char *valid) {
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
}

/* A channel: most often one of 20 valid names (so the 16-channel bound is reached). */
static char *channel_arg(void) {
  char name[8];
  if (u8() % 4 == 0) return string_arg("lobby");
  snprintf(name, sizeof name, "c%u", (unsigned)(u8() % 20));
  return copy_of(name);
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

static int state_of(tether_rtm_client *client) {
  int state = (int)tether_rtm_get_connection_state(client);
  if (state < 1 || state > 5) fail("state out of range", state);
  return state;
}

static int in_session(int state) {
  return state == TETHER_RTM_CONNECTION_STATE_CONNECTING ||
         state == TETHER_RTM_CONNECTION_STATE_CONNECTED ||
         state == TETHER_RTM_CONNECTION_STATE_RECONNECTING;
}

static int valid_pair(int state, int reason) {
  switch (reason) {
  case TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN: return state == 2;
  case TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_SUCCESS: return state == 3;
  case TETHER_RTM_CONNECTION_CHANGE_REASON_INTERRUPTED: return state == 4;
  case TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_FAILURE:
  case TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_TIMEOUT:
  case TETHER_RTM_CONNECTION_CHANGE_REASON_LOGOUT:
  case TETHER_RTM_CONNECTION_CHANGE_REASON_TOKEN_EXPIRED: return state == 1;
  case TETHER_RTM_CONNECTION_CHANGE_REASON_BANNED_BY_SERVER:
  case TETHER_RTM_CONNECTION_CHANGE_REASON_REMOTE_LOGIN: return state == 5;
  default: return 0;
  }
}

static void call_login(struct context *c, tether_rtm_client *client) {
  char *token = string_arg("token-A");
  char *user = string_arg(u8() % 2 ? "alice" : "bob");
  int before = state_of(client), rc, logged_out = c ? c->logged_out : 0;
  /* The login's own callbacks come inside the call: the logout's silence ends with it. */
  if (c) {
    c->logged_out = 0;
    c->owed += c->has_login_result;
  }
  rc = tether_rtm_login(client, token, user);
  if (tracing) fprintf(stderr, "login on client %d (state %d, in callback %d): %d\n", c ? (int)(c - contexts) : -1, before, in_callback, rc);
  free(token);
  free(user);
  CHECK_CODE(rc, "login", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_TOO_OFTEN,
             TETHER_ERR_INVALID_ARGUMENT, TETHER_ERR_ALREADY_LOGGED_IN);
  if (rc == 0 && before != TETHER_RTM_CONNECTION_STATE_DISCONNECTED) fail("login while in", before);
  if (rc == 0 && !c) fail("login on no client returned 0", 0);
  if (c && rc != 0) {
    c->owed -= c->has_login_result;
    c->logged_out = logged_out;
  }
  if (c && rc == 0) c->login_since_logout = 1;
  if (c && rc == 0 && in_callback) c->awaiting_connecting = 1;
  if (c && c->owed > 1 && c->pending_logouts == 0 && !c->loose) fail("two login results owed", c->owed);
}

static void call_logout(struct context *c, tether_rtm_client *client) {
  int before = state_of(client), rc, since = c ? c->login_since_logout : 0;
  /* Counted before the call: outside a callback the result comes inside it. */
  if (c && c->has_logout_result) c->pending_logouts++;
  if (c) c->login_since_logout = 0;
  rc = tether_rtm_logout(client);
  if (tracing) fprintf(stderr, "logout on client %d (state %d, in callback %d): %d\n", c ? (int)(c - contexts) : -1, before, in_callback, rc);
  CHECK_CODE(rc, "logout", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_NOT_LOGGED_IN);
  if (rc == 0 && before == TETHER_RTM_CONNECTION_STATE_DISCONNECTED) fail("logout when out", 0);
  if (rc == TETHER_ERR_NOT_LOGGED_IN && before != 1) fail("NOT_LOGGED_IN", before);
  if (rc == 0 && !c) fail("logout on no client returned 0", 0);
  if (rc != 0 && c) {
    if (c->has_logout_result) c->pending_logouts--;
    c->login_since_logout = since;
  }
  if (rc == 0 && !c->destroyed) {
    if (!c->has_logout_result && in_callback) c->loose = 1;
    /* Unless a callback inside the call logged in again (on_logout_result may). */
    if (!c->login_since_logout &&
        state_of(client) != TETHER_RTM_CONNECTION_STATE_DISCONNECTED) {
      fail("logout left a state", 0);
    }
    /* Outside a callback, the logout's callbacks all come inside the call. */
    if (!in_callback && !c->loose && !c->login_since_logout) {
      if (c->owed != 0) fail("a login result still owed after logout", c->owed);
      if (c->has_logout_result && !c->logged_out) fail("no on_logout_result inside logout", 0);
    }
  }
}

static void call_join(tether_rtm_client *client) {
  char *channel = channel_arg();
  int before = state_of(client), rc = tether_rtm_join_channel(client, channel);
  free(channel);
  CHECK_CODE(rc, "join", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT,
             TETHER_ERR_INVALID_CHANNEL_NAME, TETHER_ERR_NOT_READY,
             TETHER_ERR_JOIN_CHANNEL_REJECTED);
  if (rc == 0 && !in_session(before)) fail("join returned 0 out of a session", before);
}

static void call_leave(tether_rtm_client *client) {
  char *channel = channel_arg();
  int before = state_of(client), rc = tether_rtm_leave_channel(client, channel);
  free(channel);
  CHECK_CODE(rc, "leave", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT,
             TETHER_ERR_INVALID_CHANNEL_NAME, TETHER_ERR_NOT_READY);
  if (rc == 0 && !in_session(before)) fail("leave returned 0 out of a session", before);
}

static void call_renew(tether_rtm_client *client) {
  char *token = string_arg("token-B");
  int before = state_of(client), rc = tether_rtm_renew_token(client, token);
  free(token);
  CHECK_CODE(rc, "renew", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT,
             TETHER_ERR_INVALID_TOKEN, TETHER_ERR_NOT_READY);
  if (rc == 0 && !in_session(before)) fail("renew returned 0 out of a session", before);
}

static void call_network_changed(tether_rtm_client *client) {
  CHECK_CODE(tether_rtm_network_changed(client), "network_changed", 0, TETHER_ERR_NOT_INITIALIZED);
}

static void destroy(struct context *c) {
  tether_rtm_client *client = c->client;
  c->client = NULL;
  c->destroyed = 1;
  if (slots[c->slot] == c) slots[c->slot] = NULL;
  CHECK_CODE(tether_rtm_client_destroy(client), "destroy", 0);
  if (in_callback) {
    /* Until the callback returns, the handle answers NOT_INITIALIZED. */
    if (tether_rtm_login(client, "t", "alice") != TETHER_ERR_NOT_INITIALIZED) {
      fail("login after destroy", 0);
    }
    if (tether_rtm_logout(client) != TETHER_ERR_NOT_INITIALIZED) {
      fail("logout after destroy", 0);
    }
    if (tether_rtm_join_channel(client, "lobby") != TETHER_ERR_NOT_INITIALIZED) {
      fail("join after destroy", 0);
    }
    if (tether_rtm_renew_token(client, "t") != TETHER_ERR_NOT_INITIALIZED) fail("renew after destroy", 0);
    if (tether_rtm_network_changed(client) != TETHER_ERR_NOT_INITIALIZED) {
      fail("network_changed after destroy", 0);
    }
    if (tether_rtm_get_connection_state(client) != TETHER_RTM_CONNECTION_STATE_DISCONNECTED) {
      fail("state after destroy", 0);
    }
    CHECK_CODE(tether_rtm_client_destroy(client), "destroy again", 0); /* a no-op */
  }
}

static void act(struct context *c) {
  struct context *other;
  if (c->acts_left == 0 || c->destroyed) return;
  c->acts_left--;
  switch (c->action) {
  case A_LOGOUT: call_logout(c, c->client); break;
  case A_DESTROY: destroy(c); break;
  case A_DESTROY_OTHER:
    other = slots[(c->slot + 1) % CLIENTS];
    if (other && other != c) destroy(other);
    break;
  case A_LOGIN: call_login(c, c->client); break;
  case A_JOIN: call_join(c->client); break;
  case A_LEAVE: call_leave(c->client); break;
  case A_RENEW: call_renew(c->client); break;
  case A_NETWORK_CHANGED: call_network_changed(c->client); break;
  case A_LOGOUT_DESTROY:
    call_logout(c, c->client);
    destroy(c);
    break;
  case A_LOGOUT_LOGIN:
    call_logout(c, c->client);
    if (!c->destroyed) call_login(c, c->client);
    break;
  default: break;
  }
}

/* Every callback comes here. */
static void hit(void *ctx, enum kind k, int a, int b) {
  struct context *c = ctx;
  if (tracing) fprintf(stderr, "client %d: callback %d (%d, %d)\n", (int)(c - contexts), k, a, b);
  if (c < contexts || c >= contexts + CONTEXTS) fail("a callback with a ctx never given", k);
  if (c->destroyed) fail("a callback after destroy", k);
  /* on_log excepted, as after a leave in fuzz-capi: a datagram that arrives after the
     logout is still logged as dropped. */
  if (c->logged_out && k != K_LOG) {
    fprintf(stderr, "client %d: callback %d (%d, %d) after on_logout_result\n",
            (int)(c - contexts), (int)k, a, b);
    fail("a callback after on_logout_result, before the next login", k);
  }
  switch (k) {
  case K_STATE:
    if (!valid_pair(a, b)) fail("state/reason pair", a * 100 + b);
    if (c->pending_logouts || c->loose) break; /* a login's and a logout's may interleave */
    if (c->awaiting_connecting) {
      c->awaiting_connecting = a != TETHER_RTM_CONNECTION_STATE_CONNECTING;
      c->expect = 0;
      break;
    }
    if (c->expect == 1 && !(a == 3 && b == 2)) fail("login result OK, then not CONNECTED", a * 100 + b);
    if (c->expect == 2 && a == 3) fail("a failed login result, then CONNECTED", b);
    c->expect = 0;
    if (c->owed && (a == 1 || a == 3 || a == 5)) fail("a state change before the login result", a);
    break;
  case K_LOGIN_RESULT:
    if (c->owed == 0) fail("a login result not owed", a);
    if (a < 0 || a > 10) fail("login result code", a);
    c->owed--;
    if (!c->pending_logouts && !c->loose) c->expect = a == 0 ? 1 : 2;
    break;
  case K_LOGOUT_RESULT:
    if (a != TETHER_RTM_LOGOUT_ERR_OK) fail("logout result code", a);
    if (c->pending_logouts == 0) fail("a logout result without a logout", 0);
    c->pending_logouts--;
    if (c->pending_logouts == 0 && !c->login_since_logout && !c->loose) {
      if (c->owed) fail("on_logout_result with a login result owed", c->owed);
      c->logged_out = 1;
    }
    break;
  default: break;
  }
  if (k == c->act_in) {
    /* An action inside the result's callback may change what comes next. */
    if (k == K_LOGIN_RESULT && c->acts_left) c->expect = 0;
    in_callback++;
    act(c);
    in_callback--;
  }
}

static void on_state(void *c, tether_rtm_connection_state s, tether_rtm_connection_change_reason r) {
  hit(c, K_STATE, (int)s, (int)r);
}
static void on_login_result(void *c, int error) { hit(c, K_LOGIN_RESULT, error, 0); }
static void on_logout_result(void *c, int error) { hit(c, K_LOGOUT_RESULT, error, 0); }
static void on_token_expired(void *c) { hit(c, K_TOKEN_EXPIRED, 0, 0); }
static void check_member(const char *channel, const char *user) {
  if (!channel || strlen(channel) == 0 || strlen(channel) > 63) fail("member event channel", 0);
  if (!user || strlen(user) == 0 || strlen(user) > 64) fail("member event user id", 0);
}
static void on_member_joined(void *c, const char *channel, const char *user) {
  check_member(channel, user);
  hit(c, K_MEMBER_JOINED, 0, 0);
}
static void on_member_left(void *c, const char *channel, const char *user) {
  check_member(channel, user);
  hit(c, K_MEMBER_LEFT, 0, 0);
}
static void on_log(void *c, tether_log_level l, const char *m) {
  if (!m || l < TETHER_LOG_ERROR || l > TETHER_LOG_DEBUG) fail("log", (int)l);
  if (tracing) fprintf(stderr, "log: %s\n", m);
  hit(c, K_LOG, (int)l, 0);
}
static void on_attempt(void *c, uint32_t attempt, uint32_t next) {
  (void)next;
  if (attempt == 0) fail("attempt 0", 0);
  hit(c, K_ATTEMPT, (int)attempt, 0);
}

static uint32_t threshold(uint32_t fast) {
  switch (u8() % 8) {
  case 0: return 0;
  case 1: return u32();
  case 2: return u16();
  default: return fast;
  }
}

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

static void create(void) {
  int slot = u8() % CLIENTS, rc;
  uint8_t flags = u8();
  uint32_t config_size, handler_size, allocated;
  tether_rtm_config full;
  tether_rtm_handler handlers;
  tether_rtm_config *config;
  tether_rtm_handler *handler = NULL;
  tether_rtm_client *client = (tether_rtm_client *)&full; /* must come back NULL on failure */
  char *app_id, *server;
  struct context *c;
  if (slots[slot] || context_count == CONTEXTS) return;
  c = &contexts[context_count];
  memset(c, 0, sizeof *c);
  c->slot = slot;
  c->act_in = (enum kind)(u8() % (K_COUNT + 1));
  c->action = (enum action)(u8() % A_COUNT);
  c->acts_left = u8() % 3;

  tether_rtm_config_init(&full);
  app_id = u8() % 4 == 0 ? string_arg("app-1") : copy_of("app-1");
  server = u8() % 4 == 0 ? server_arg() : copy_of(server_address);
  full.app_id = app_id;
  full.server = server;
  full.login_timeout_ms = threshold(30);
  full.interrupted_after_ms = threshold(15);
  full.heartbeat_interval_ms = threshold(4);
  full.retry_base_ms = threshold(2);
  full.retry_cap_ms = threshold(8);
  /* The declared size: the struct's, smaller (an older caller), 0, or larger. */
  config_size = (uint32_t)sizeof full;
  if (flags & 1) config_size = u8() % (sizeof full + 16);
  allocated = config_size > sizeof full ? config_size : (uint32_t)sizeof full;
  config = malloc(allocated);
  if (!config) abort();
  memset(config, 0xA5, allocated);
  memcpy(config, &full, sizeof full);
  config->size = config_size;
  if (config_size < sizeof full) {
    /* Exactly the declared bytes, so a read past them is caught. */
    tether_rtm_config *exact = malloc(config_size < 4 ? 4 : config_size);
    if (!exact) abort();
    memcpy(exact, config, config_size < 4 ? 4 : config_size);
    free(config);
    config = exact;
  }
  if (!(flags & 2)) {
    tether_rtm_handler_init(&handlers);
    handlers.on_connection_state_changed = on_state;
    handlers.on_login_result = on_login_result;
    handlers.on_logout_result = on_logout_result;
    handlers.on_token_expired = on_token_expired;
    handlers.on_member_joined = on_member_joined;
    handlers.on_member_left = on_member_left;
    handlers.on_log = on_log;
    handlers.on_login_attempt = on_attempt;
    handler_size = (uint32_t)sizeof handlers;
    if (flags & 4) handler_size = (uint32_t)(u8() % (sizeof handlers + 1)) & ~7u;
    if (handler_size < 8) handler_size = (flags & 8) ? 0 : 8;
    handler = malloc(handler_size < 8 ? 8 : handler_size);
    if (!handler) abort();
    memcpy(handler, &handlers, handler_size < 8 ? 8 : handler_size);
    handler->size = handler_size;
    c->has_login_result =
        handler_size >= offsetof(tether_rtm_handler, on_login_result) + sizeof(void *);
    c->has_logout_result =
        handler_size >= offsetof(tether_rtm_handler, on_logout_result) + sizeof(void *);
  }
  rc = tether_rtm_client_create(loop, config, handler, c, (flags & 16) ? NULL : &client);
  if (tracing) fprintf(stderr, "create client %d (handler %u bytes): %d\n", context_count, handler ? handler->size : 0, rc);
  free(config);
  free(handler);
  free(app_id);
  free(server);
  CHECK_CODE(rc, "create", 0, TETHER_ERR_INVALID_ARGUMENT, TETHER_ERR_INVALID_APP_ID,
             TETHER_ERR_FAILED);
  if (flags & 16) {
    if (rc == 0) fail("create succeeded with out_client NULL", 0);
    return;
  }
  if (rc != 0) {
    if (client != NULL) fail("out_client not NULL after a failed create", rc);
    return;
  }
  if (!client) fail("create returned 0 and no client", 0);
  if (state_of(client) != TETHER_RTM_CONNECTION_STATE_DISCONNECTED) fail("a new client's state", 0);
  c->client = client;
  slots[slot] = c;
  context_count++;
}

static void stats(tether_rtm_client *client) {
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
  rc = tether_rtm_client_get_stats(client, u8() % 16 == 0 ? NULL : &out.stats);
  CHECK_CODE(rc, "get_stats", 0, TETHER_ERR_NOT_INITIALIZED, TETHER_ERR_INVALID_ARGUMENT);
  limit = size < sizeof out.stats ? size : sizeof out.stats;
  if (limit < 4) limit = 4;
  for (i = limit; i < sizeof out.bytes; i++) {
    if (out.bytes[i] != 0xA5) fail("get_stats wrote past out->size", (int)i);
  }
}

/* ---- a channel engine on the same loop ---- */
static tether_engine *engine;
static int engine_alive; /* its callbacks may come */

static void on_engine_state(void *ctx, tether_connection_state s, tether_connection_changed_reason r) {
  (void)s;
  (void)r;
  if (ctx != &engine || !engine_alive) fail("an engine callback after its destroy", 0);
}

static void engine_toggle(void) {
  tether_engine_config config;
  tether_engine_handler handler;
  int rc;
  if (engine) {
    engine_alive = 0;
    tether_engine_destroy(engine);
    engine = NULL;
    return;
  }
  tether_engine_config_init(&config);
  config.app_id = "app-1";
  config.server = server_address;
  config.heartbeat_interval_ms = 4;
  config.interrupted_after_ms = 15;
  config.lost_after_ms = 30;
  config.retry_base_ms = 2;
  config.retry_cap_ms = 8;
  tether_engine_handler_init(&handler);
  handler.on_connection_state_changed = on_engine_state;
  rc = tether_engine_create(loop, &config, &handler, &engine, &engine);
  if (rc != 0) fail("engine create", rc);
  engine_alive = 1;
  rc = tether_join_channel(engine, "", "lobby", 0);
  if (rc != 0) fail("engine join", rc);
}

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

static tether_rtm_client *pick(struct context **c) {
  uint8_t choice = u8() % (CLIENTS + 1);
  *c = choice < CLIENTS ? slots[choice] : NULL;
  return *c ? (*c)->client : NULL;
}

/* ---- seeds: TETHER_FUZZ_WRITE_SEEDS=DIR fuzz-rtm writes them and exits ---- */
#define OP_CREATE 0
#define OP_DESTROY 1
#define OP_LOGIN 2
#define OP_LOGOUT 3
#define OP_JOIN 4
#define OP_LEAVE 5
#define OP_RENEW 6
#define OP_NETWORK 7
#define OP_STATE 8
#define OP_STATS 9
#define OP_NAMES 10
#define OP_DRAIN 11
#define OP_SEND 12
#define OP_ENGINE 13
#define OP_RUN 14
#define OPS 15

/* create in `slot`: handler and config whole, acting `action` in callback `kind` once;
   valid app id and our server; every threshold fast. */
#define CREATE(slot, kind, action) OP_CREATE, slot, 0, kind, action, 1, 1, 1, 3, 3, 3, 3, 3
/* login: a valid token, user "alice" */
#define LOGIN(slot) OP_LOGIN, slot, 11, 1, 11
#define JOIN(slot, n) OP_JOIN, slot, 1, n
#define LEAVE(slot, n) OP_LEAVE, slot, 1, n
#define RUN OP_RUN, 3, 3
#define ANSWER OP_DRAIN, 1
/* The server pushes message `m` under the login cookie; `...` are its fields' bytes,
   then the no-padding byte. */
#define SEND(m, ...) OP_SEND, m, 2, __VA_ARGS__, 1
#define SEND0(m) OP_SEND, m, 2, 1

static const uint8_t seed_logged_in[] = {
    CREATE(0, K_COUNT, A_NONE), LOGIN(0), RUN, ANSWER, RUN, JOIN(0, 1), RUN, ANSWER, RUN, RUN,
    ANSWER, RUN, OP_STATS, 0, 1, 1, OP_STATE, 0, LEAVE(0, 1), RUN, ANSWER, OP_LOGOUT, 0, RUN};
static const uint8_t seed_refused[] = {CREATE(0, K_LOGIN_RESULT, A_LOGIN), LOGIN(0), RUN,
                                       OP_DRAIN, 2, 5, RUN, RUN, ANSWER, RUN};
static const uint8_t seed_member_events[] = {
    CREATE(0, K_MEMBER_JOINED, A_LOGOUT_LOGIN), LOGIN(0), RUN, ANSWER, RUN, JOIN(0, 2), RUN,
    ANSWER, RUN,
    /* first sequence 1, 2 entries: bob joined c2, bob left c2 */
    SEND(M_MEMBER_EVENTS, 1, 1, 1, 1, 1, 0, 3, 1, 1, 1, 3, 1), RUN, ANSWER, RUN};
/* KICK REMOTE_LOGIN: ABORTED; login refused until logout */
static const uint8_t seed_kick[] = {CREATE(0, K_COUNT, A_NONE), LOGIN(0), RUN, ANSWER, RUN,
                                    SEND(M_KICK, 1, 0), RUN, LOGIN(0), OP_LOGOUT, 0, LOGIN(0),
                                    RUN, ANSWER, RUN};
static const uint8_t seed_token_expired[] = {
    CREATE(0, K_TOKEN_EXPIRED, A_RENEW), LOGIN(0), RUN, ANSWER, RUN, SEND0(M_TOKEN_EXPIRED),
    RUN, OP_RENEW, 0, 11, RUN, ANSWER, RUN};
static const uint8_t seed_session_unknown[] = {
    CREATE(0, K_ATTEMPT, A_NETWORK_CHANGED), LOGIN(0), RUN, ANSWER, RUN, JOIN(0, 3),
    SEND0(M_SESSION_UNKNOWN), RUN, ANSWER, RUN, SEND(M_CHANNEL_ACK, 1, 1), RUN};
static const uint8_t seed_destroy_in_result[] = {CREATE(0, K_LOGIN_RESULT, A_DESTROY_OTHER),
                                                 CREATE(1, K_LOGOUT_RESULT, A_DESTROY),
                                                 LOGIN(1), LOGIN(0), RUN, ANSWER, RUN,
                                                 OP_LOGOUT, 1, RUN};
static const uint8_t seed_timeout_with_engine[] = {
    OP_ENGINE, CREATE(0, K_STATE, A_JOIN), LOGIN(0), RUN, OP_RUN, 3, 5, OP_RUN, 3, 5,
    OP_RUN, 3, 5, OP_RUN, 3, 5, OP_RUN, 3, 5, OP_RUN, 3, 5, OP_RUN, 3, 5, ANSWER, RUN,
    OP_ENGINE, RUN};
static const uint8_t seed_bad_arguments[] = {
    OP_CREATE, 0, 1, 8, 0, 0, 1, 1, 3, 3, 3, 3, 3, 0, /* config size 0 */
    OP_CREATE, 1, 2, 8, 0, 0, 1, 1, 0, 3, 3, 3, 3,    /* no handler, login timeout 0 */
    CREATE(1, K_COUNT, A_NONE), LOGIN(1), OP_LOGIN, 1, 0, 1, 11, /* token NULL */
    OP_LOGIN, 1, 11, 1, 7,                               /* user id of 65 bytes */
    OP_LOGIN, 1, 4, 1, 11,                               /* token of 513 bytes */
    LOGIN(1), OP_JOIN, 1, 0, 5, OP_JOIN, 1, 0, 0, OP_LEAVE, 1, 0, 8, OP_RENEW, 1, 0,
    OP_RENEW, 1, 8, 0, OP_STATS, 1, 0, 4, 0, OP_NAMES, 0xFF, 0xFF, 0xFF, 0xFF, OP_DESTROY, 2,
    OP_NETWORK, 2, OP_LOGOUT, 2, OP_LOGOUT, 1, OP_LOGOUT, 1};

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
  SEED(logged_in);
  SEED(refused);
  SEED(member_events);
  SEED(kick);
  SEED(token_expired);
  SEED(session_unknown);
  SEED(destroy_in_result);
  SEED(timeout_with_engine);
  SEED(bad_arguments);
  exit(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int ops = 0, i;
  struct context *c;
  tether_rtm_client *client;
  in_data = data;
  in_left = size;
  if (!loop) {
    loop = ev_loop_new(EVFLAG_AUTO);
    server_open();
    tracing = getenv("TETHER_FUZZ_TRACE") != NULL;
  }
  server_drain(0);
  login_peer_len = 0;
  slept_ms = 0;
  context_count = 0;
  while (in_left > 0 && ops++ < 80) {
    uint8_t op = u8() % OPS;
    if (tracing) fprintf(stderr, "op %d\n", op);
    switch (op) {
    case OP_CREATE: create(); break;
    case OP_DESTROY:
      client = pick(&c);
      if (c) destroy(c);
      else CHECK_CODE(tether_rtm_client_destroy(NULL), "destroy NULL", 0);
      break;
    case OP_LOGIN: client = pick(&c); call_login(c, client); break;
    case OP_LOGOUT: client = pick(&c); call_logout(c, client); break;
    case OP_JOIN: client = pick(&c); call_join(client); break;
    case OP_LEAVE: client = pick(&c); call_leave(client); break;
    case OP_RENEW: client = pick(&c); call_renew(client); break;
    case OP_NETWORK: client = pick(&c); call_network_changed(client); break;
    case OP_STATE: client = pick(&c); state_of(client); break;
    case OP_STATS: client = pick(&c); stats(client); break;
    case OP_NAMES: {
      int value = (int)u32();
      if (!tether_rtm_connection_state_name(value) ||
          !tether_rtm_connection_change_reason_name(value) ||
          !tether_rtm_login_error_name(value) || !tether_rtm_logout_error_name(value)) {
        fail("a name function returned NULL", value);
      }
      tether_rtm_config_init(NULL);
      tether_rtm_handler_init(NULL);
      break;
    }
    case OP_DRAIN: server_drain(u8() % 3); break;
    case OP_SEND: server_send(); break;
    case OP_ENGINE: engine_toggle(); break;
    default: run_loop(); break;
    }
  }
  for (i = 0; i < CLIENTS; i++) {
    if (slots[i]) destroy(slots[i]);
  }
  if (engine) engine_toggle();
  ev_run(loop, EVRUN_NOWAIT);
  return 0;
}
