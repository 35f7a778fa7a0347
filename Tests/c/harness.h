// SPDX-License-Identifier: Apache-2.0
/* The C tests' one harness (harness.c), compiled into every test binary with the strict
 * flags: checks and a line per test case, the loop run until something happened or a time
 * passed, and one fake edge server on loopback that speaks both profiles' wire format
 * (docs/PROTOCOL.md). Each test file keeps what is its own: its callbacks, what they
 * record, its configs. */
#ifndef TETHER_TEST_HARNESS_H
#define TETHER_TEST_HARNESS_H
#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "edge_v2.h"
#include "tether.h"

struct fake_server; /* below */

/* ---- Cases and checks ------------------------------------------------------------------ */

/* CHECK(cond): when cond is false, prints "FAIL <case>: file:line: cond" on stderr and
   marks the current case failed. Callable from any thread. */
#define CHECK(cond) harness_check((cond) != 0, #cond, __FILE__, __LINE__)
void harness_check(int holds, const char *what, const char *file, int line);

/* RUN(test): runs the void function `test` as one case, named after it, and prints
   "ok <name>" when no CHECK failed in it. */
#define RUN(test) harness_run(#test, test)
void harness_run(const char *name, void (*test)(void));

/* The main() of a binary of one case: RUN(test), then harness_report(binary, note). */
#define ONE_CASE_MAIN(binary, test, note) \
  int main(void) {                        \
    RUN(test);                            \
    return harness_report(binary, note);  \
  }

/* A case made of more than one function call (a case per row of a table): between
   harness_begin and harness_end. The first case makes stdout line-buffered, so that a
   binary's lines come in order with its FAIL lines on stderr. */
void harness_begin(const char *name);
void harness_end(void);

/* The binary's last line, "<binary>: N passed, M failed" (", <note>" after it when note is
   not NULL). Returns the exit status: 0 when no case failed. */
int harness_report(const char *binary, const char *note);

/* "<binary>: SKIPPED, not counted: <why>". Returns 77, the exit status scripts/test/c-tests.sh
   reads as "skipped". */
int harness_skip(const char *binary, const char *why);

/* ---- Time and the loop ------------------------------------------------------------------ */

double now_ms(void); /* CLOCK_MONOTONIC, in milliseconds */
int open_descriptors(void); /* of this process */

/* A new loop with `s` (NULL: none) started on it; and the end of both. */
struct ev_loop *test_loop_new(struct fake_server *s);
void test_loop_destroy(struct ev_loop *loop, struct fake_server *s);

/* Runs `loop` (one iteration at a time) until done(ctx) returns non-zero or `ms` have
   passed. done NULL: for `ms`. */
void run_until(struct ev_loop *loop, int (*done)(void *ctx), void *ctx, double ms);
/* Until *counter >= target, at most `ms`. */
void run_until_count(struct ev_loop *loop, const int *counter, int target, double ms);
void run_for(struct ev_loop *loop, double ms);

/* ---- This machine's pace (issue 28) ------------------------------------------------------ */

/* What the tests' load costs on the machine running them, measured once (at the first
   call) and printed on one line: a datagram's way through both sides (sealed,
   sent on loopback, received, opened: ChaCha20-Poly1305 of 64 bytes, as a heartbeat
   and its ACK are) and a handshake's crypto on both sides (two X25519 key pairs and
   shared secrets, two token opens, four datagrams). Natively a few microseconds and a few
   hundred; in an emulated ARM kernel some 100 us and several milliseconds; under valgrind
   more. Each the median of several rounds, so a moment's load does not set it. */
struct harness_pace {
  double datagram_us, handshake_us;
};
struct harness_pace harness_pace(void);
/* Measures again (a moment's slowness at the first measurement, as an emulated kernel
   just booted has, must not set a whole run's figures), keeps the new figures for
   harness_pace and harness_stretch, and says so when they moved by more than twice. */
struct harness_pace harness_pace_again(void);

/* The factor (1 or more) by which a test stretches its time figures (thresholds,
   heartbeat, waits) so that what it asks of the machine fits: `datagrams_per_second`
   datagrams (each costing the pace's datagram_us) within a quarter of one CPU, and
   `handshakes` handshakes, done back to back on one loop, within half of `window_ms`
   (the time its premise gives them: an engine connected first must not go unanswered
   for interrupted_after while the others' handshakes hold the loop). */
double harness_stretch(double datagrams_per_second, int handshakes, double window_ms);

/* ---- The fake edge server --------------------------------------------------------------- */

/* The message types of docs/PROTOCOL.md section 3: the first byte of a DATA payload
   (§12.7). */
enum wire_type {
  WIRE_JOIN = 0x01, WIRE_HEARTBEAT = 0x02, WIRE_LEAVE = 0x03, WIRE_RENEW_TOKEN = 0x04,
  WIRE_LOGIN = 0x05, WIRE_LOGIN_HEARTBEAT = 0x06, WIRE_LOGOUT = 0x07,
  WIRE_CHANNEL_OPERATION = 0x08,
  WIRE_ACCEPT = 0x81, WIRE_REFUSE = 0x82, WIRE_HEARTBEAT_ACK = 0x83, WIRE_PRESENCE = 0x84,
  WIRE_KICK = 0x85, WIRE_TOKEN_EXPIRED = 0x86, WIRE_SESSION_UNKNOWN = 0x87,
  WIRE_TOKEN_RENEWED = 0x88, WIRE_LOGIN_ACCEPT = 0x89, WIRE_LOGIN_REFUSE = 0x8A,
  WIRE_MEMBER_EVENTS = 0x8B, WIRE_CHANNEL_ACK = 0x8C
};

/* How many sessions a fake server keeps (the fleet tests run 100 engines on one, each
   INIT taking a slot: a confirmed session is replaced only when every slot holds one). */
#define FAKE_SESSIONS 1024

/* The app certificate of every fake server: the tokens below are minted under it. */
#define HARNESS_CERTIFICATE "harness-certificate"

/* A version 2 token (docs/PROTOCOL.md §12.4) of app "app-1" that never expires, minted
   under HARNESS_CERTIFICATE: to join `channel` as `uid` (0: any), or to log `user` in.
   The text stays valid until 8 more tokens are minted on the same thread. */
const char *channel_token(const char *channel, uint32_t uid);
const char *login_token(const char *user);

/* One non-blocking UDP socket on the loop, speaking protocol version 2 (docs/PROTOCOL.md
   §12) through edge_v2.c: it answers an INIT with a RESPONSE (a token that does not open:
   REFUSE_CLEAR; a login while refuse_code is set: a sealed refusal with that code), the
   CONFIRM with ACCEPT (uid 4242) or LOGIN_ACCEPT (a repeated CONFIRM: the same again,
   sealed afresh), and, sealed in each session's DATA, HEARTBEAT and LOGIN_HEARTBEAT with
   HEARTBEAT_ACK, CHANNEL_OPERATION with CHANNEL_ACK. It counts every request, answered or
   not (an INIT or a repeated CONFIRM is the JOIN or LOGIN it stands for), and the goodbyes
   (LEAVE, LOGOUT), which nothing answers. What it sends unasked goes to the session it
   heard last, at the address it heard it from. */
struct fake_server {
  int fd;
  char address[64]; /* "host:port", for a config's server */
  unsigned port;
  /* What it answers. */
  int silent;              /* nothing at all (it still counts) */
  uint32_t token_ms;       /* ACCEPT's token time left (0: no expiry) */
  int refuse_code;         /* not 0: a LOGIN's INIT gets a sealed refusal with this code */
  uint32_t server_session; /* the server session number of its login answers */
  /* What it heard. */
  int joins, logins, relogins, heartbeats, operations;
  int leaves, leave_datagrams;   /* sessions that left (LEAVE goes twice), and the LEAVEs */
  int logouts, logout_datagrams; /* the same for LOGOUT */
  uint32_t last_operation;       /* the last CHANNEL_OPERATION: its sequence, */
  int last_operation_kind;       /* kind (1 JOIN, 2 LEAVE) */
  char last_channel[64];         /* and channel */
  int events_received;           /* what the last LOGIN_HEARTBEAT says the client took */
  /* Protocol version 2: the sessions its RESPONSEs offered and its CONFIRMs made (the
     oldest replaced when all are taken), and the one heard last: where pushes go. */
  struct fake_session {
    struct edge_v2_session keys;
    uint8_t kind, flags; /* what the INIT asked: 1 channel, 2 login; the request's flags */
    int confirmed;
    struct sockaddr_storage peer; /* where its datagrams came from: where answers go */
    socklen_t peerlen;
  } *sessions; /* FAKE_SESSIONS of them, from fake_start to fake_stop */
  int last; /* index of the session heard last, -1: none */
  uint32_t serial;
  uint64_t goodbye_session;
  struct sockaddr_storage peer;  /* where the last datagram came from */
  socklen_t peerlen;
  ev_io io;
};

/* On 127.0.0.1, a port the kernel picks. Returns 0, or -1 when no socket could be had. */
int fake_start(struct ev_loop *loop, struct fake_server *s);
/* On `host` (numeric IPv4) at `port` (0: the kernel picks). */
int fake_start_at(struct ev_loop *loop, struct fake_server *s, const char *host, unsigned port);
void fake_stop(struct ev_loop *loop, struct fake_server *s);

/* A DATA datagram of the session heard last carrying `type` and `body` (sealed under its
   next counter): written into `out` (length + 34 bytes; returns that length, 0 without a
   session), or sent to it. */
size_t fake_datagram(struct fake_server *s, unsigned char type, const void *body,
                     size_t length, unsigned char *out);
void fake_send(struct fake_server *s, unsigned char type, const void *body, size_t length);
/* Any bytes (garbage included) to the address heard last. */
void fake_send_bytes(struct fake_server *s, const void *bytes, size_t length);

/* Unasked: `count` HEARTBEAT_ACKs (a session takes an ack under its cookie as data). */
void fake_push_acks(struct fake_server *s, int count);
/* Unasked: a PRESENCE naming members 7, 8 and 9 ALIVE, heard 5 ms ago. */
void fake_push_presence(struct fake_server *s);
/* KICK with `reason` (channel: 1 BANNED, 2 SAME_UID; login: 1 BANNED, 3 REMOTE_LOGIN). */
void fake_push_kick(struct fake_server *s, unsigned char reason);
/* MEMBER_EVENTS with one entry numbered `sequence`: `user` joined (kind 1) or left (2)
   `channel`. */
void fake_push_member_event(struct fake_server *s, uint32_t sequence, int kind,
                            const char *channel, const char *user);

/* ---- What a connection reported -------------------------------------------------------- */

/* Its state changes in order: the first 64 kept, `count` all of them. */
struct state_log {
  int states[64], reasons[64], count;
};
void log_state(struct state_log *log, int state, int reason);
/* The last change came with `reason` (with `state`); false before any, or past the 64 kept. */
int last_reason_is(const struct state_log *log, int reason);
int last_state_is(const struct state_log *log, int state);

/* ---- Configs ---------------------------------------------------------------------------- */

/* Every default, app id "app-1" and `server`: what each test then scales its own way. */
tether_engine_config engine_config(const char *server);
tether_rtm_config rtm_config(const char *server);

#endif
