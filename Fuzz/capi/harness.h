// SPDX-License-Identifier: Apache-2.0
/* The one harness of fuzz-capi and fuzz-rtm (harness.c): Include/tether.h driven by the
 * fuzzer's input as a careless or hostile host would, on a libev loop, against a fake edge
 * server on loopback. What differs between the two profiles is a table, struct profile:
 * the channel engine's is in fuzz_capi.c, the login client's in ../rtm/fuzz_rtm.c; each
 * target is this harness with one of them (and the other's companion on the same loop).
 * The properties both share are listed at the top of harness.c, each profile's own at the
 * top of its file. */
#ifndef TETHER_FUZZ_HARNESS_H
#define TETHER_FUZZ_HARNESS_H
#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "tether.h"

/* ---- The input: a little program, read front to back, zero once it runs out --------- */

uint8_t u8(void);
uint16_t u16(void);
uint32_t u32(void);
uint32_t small32(void); /* often small: sequences, counts */
/* Strings handed to the library are the caller's to free right after the call, so that a
   library that kept one would be caught reading freed memory. */
char *copy_of(const char *text);
/* NULL, "", at and past each bound (63, 64, 65, 512, 513 bytes), huge, forbidden bytes, the
   input's bytes, or `valid`: string_of(choice) with choice 0 ... 11 (VALID and 10: valid),
   string_arg with the input's. */
char *string_of(uint8_t choice, const char *valid);
char *string_arg(const char *valid);
char *channel_arg(void); /* most often one of 20 valid names (the 16-channel bound) */
/* The fake server's address, numeric ones, "localhost", or string_arg's with every letter
   made a digit (no look-up ever waits on DNS). */
char *server_arg(void);

/* A token for a start or renew call (docs/PROTOCOL.md §12.4), in two steps so that the
   token can be minted for names read after it: token_choice() reads the choice, then
   token_text(choice, kind, name) makes the text (malloc'd, or NULL) for grant `kind` (1
   channel, 2 login) and `name` (the channel or user id the call names; an invalid one
   gives a valid token of another name). Choices: string_of's 0 ... 9 (NULL, empty, at and
   past the bounds, garbage), a version 1 token or a "2." text that is not base64
   (TOKEN_V1: the library must refuse it itself, sending nothing), a valid version 2 token
   minted under the fake's certificate (TOKEN_VALID, which is VALID), one of another grant,
   of another certificate, expired, or with a character changed. valid_token: a valid one
   that stays valid until 8 more are made. */
enum {
  TOKEN_V1 = 10, TOKEN_VALID, TOKEN_OTHER_GRANT, TOKEN_OTHER_CERTIFICATE, TOKEN_EXPIRED,
  TOKEN_CHANGED
};
int token_choice(void);
char *token_text(int choice, int kind, const char *name);
const char *valid_token(int kind, const char *name);
/* Around a start call with a TOKEN_V1 text that returned 0 (§12.4): `sent` is the handle's
   datagrams_out before the call (sent_count_of); unless a callback acted in the call, the
   call must have ended the attempt itself (DISCONNECTED) with nothing sent. */
struct context;
uint64_t sent_count_of(const void *handle);
void refused_locally(const struct context *c, const void *handle, uint64_t sent);

/* ---- Checks --------------------------------------------------------------------------- */

/* "property violated: <what> (<value>)" on stderr, then abort(). */
void fail(const char *what, int value);
/* With TETHER_FUZZ_TRACE set: every call and callback on stderr, to read an input. */
void trace(const char *format, ...);

/* A documented return code of a call, and the states it may be returned from (bit n:
   state n; a NULL or destroyed handle reads DISCONNECTED). */
#define IN(state) (1u << (state))
#define ANY_STATE (IN(1) | IN(2) | IN(3) | IN(4) | IN(5))
struct rule {
  int code;
  unsigned states;
};

/* ---- Connections ------------------------------------------------------------------------ */

#define SLOTS 3     /* handles alive at once */
#define CONTEXTS 24 /* made in one input (never reused within it) */

struct context {
  void *handle; /* NULL once destroyed */
  int index;    /* in contexts[]: a profile keeps its model of the connection at [index] */
  int slot;
  int destroyed;
  int act_in;    /* the callback kind it acts in (the profile's count: never), */
  int action;    /* what it does there (enum action), */
  int acts_left; /* how many times more */
  int heard;     /* callbacks it had, on_log aside */
  char grant[65]; /* the channel or user id of its last start that returned 0: renewals */
};

/* What a context does inside its act_in callback. */
enum action {
  A_NONE, A_DESTROY, A_DESTROY_OTHER,
  A_END_DESTROY, /* the profile's end call (leave, logout), then destroy */
  A_END_START,   /* the end call, then the start call (join, login) */
  A_CALL         /* A_CALL + i: the profile's call i */
};

extern int in_callback; /* depth of callbacks being delivered */

/* Every callback of a context comes here: its ctx is checked (one this input made, not
   destroyed; kind 0, the state change, with a state/reason pair the header pairs), then the
   profile's model checks it, then the context acts. */
void hit(void *ctx, int kind, int a, int b);
/* The companion's callbacks (any): it must be alive. */
void companion_heard(void *ctx);

/* ---- The fake server's messages (docs/PROTOCOL.md §12.7), built from the input ----------- */

/* Each a DATA payload the fake seals for a session, except M_RESET (§12.9: the session's
   own RESET, with its value). */
enum message {
  M_ACCEPT, M_REFUSE, M_HEARTBEAT_ACK, M_PRESENCE, M_KICK, M_TOKEN_EXPIRED, M_RESET,
  M_TOKEN_RENEWED, M_LOGIN_ACCEPT, M_LOGIN_REFUSE, M_MEMBER_EVENTS, M_CHANNEL_ACK,
  M_PATH_CHALLENGE,
  M_ANY_TYPE /* any type byte, a body of the input's bytes */
};

/* ---- A profile ---------------------------------------------------------------------------- */

struct call {
  const char *name;
  /* The call with arguments from the input, on `handle` (c: its context, NULL for a handle
     the input did not make). Keeps the profile's model of c and checks what is its own.
     Returns the call's code. */
  int (*make)(struct context *c, void *handle);
  /* The same call with valid arguments: on a handle destroyed inside a callback. */
  int (*plain)(void *handle);
  struct rule rules[8]; /* every code it may return; a rule of no states ends the list */
};

struct threshold {
  size_t at;     /* offsetof the config's uint32_t field */
  uint32_t fast; /* ms: short, so that deadlines fire within an input */
};

struct seed {
  const char *name;
  const uint8_t *bytes;
  size_t size;
};

/* Its functions on void pointers (PROFILE_API writes them from the typed ones). */
struct api {
  size_t config_size, app_id_at, server_at; /* its config: size, the two strings */
  size_t handler_size;
  void (*config_init)(void *config);
  void (*handler_init)(void *handler);
  int (*create)(struct ev_loop *loop, const void *config, const void *handler, void *ctx,
                void **out);
  int (*destroy)(void *handle);
  int (*state)(const void *handle);
  int (*get_stats)(const void *handle, tether_connection_stats *out);
  const char *(*names[4])(int value); /* of its enums, and of its calls' codes */
  /* As the companion on the other profile's loop: a handler whose state callback calls
     companion_heard (the companion is made with valid strings and the fast thresholds,
     and started with the start call's plain form). */
  void (*companion_fill)(void *handler);
};

struct profile {
  const char *name; /* "engine", "client" */
  const struct api *api;
  const struct threshold *thresholds; /* of its config */
  int threshold_count;
  /* Its handler with every callback (each calls hit; on_log is checked_log), api->handler_size
     bytes. */
  const void *handler;
  int callback_count, log_kind; /* kinds; 0 is on_connection_state_changed */
  const signed char *reason_states; /* the state each reason goes with (0: none) */
  int reason_count;
  const struct call *calls;
  int call_count;
  int start_call, end_call; /* indices in calls: join/login, leave/logout */
  /* Its model: reset before create (handler_size 0: no handler), and each callback. */
  void (*prepare)(struct context *c, uint32_t handler_size);
  void (*callback)(struct context *c, int kind, int a, int b);
  /* The grant kind of its sessions (1 channel, 2 login: the session of this kind heard
     last is what the server's messages go to), and the messages it hears. */
  unsigned char kind;
  const enum message *messages;
  int message_count;
  /* TETHER_FUZZ_WRITE_SEEDS=DIR: these are written to DIR (and the regressions to
     TETHER_FUZZ_WRITE_REGRESSIONS=DIR), and the fuzzer exits. */
  const struct seed *seeds;
  int seed_count;
  const struct seed *regressions;
  int regression_count;
};

extern const struct profile channel_profile, login_profile;

/* ---- Writing a profile: the parts every profile would otherwise write again -------------- */

/* on_log, the same in both handlers: a message at a known level, then
   hit(ctx, profile's log_kind, level, 0). */
void checked_log(void *ctx, tether_log_level level, const char *message);
/* The attempt callbacks' common part: attempts count from 1; then hit(ctx, kind, attempt, 0). */
void checked_attempt(void *ctx, int kind, uint32_t attempt);

/* A struct call's make_NAME and plain_NAME for `function` of the handle and one string:
   make_NAME passes `arg` (string_arg(...), channel_arg(), server_arg()) and frees it right
   after the call; plain_NAME passes `valid`. */
#define STRING_CALL(name, function, arg, valid)                                            \
  static int make_##name(struct context *c, void *handle) {                                \
    char *string = arg;                                                                    \
    int rc = function(handle, string);                                                     \
    (void)c;                                                                               \
    free(string);                                                                          \
    return rc;                                                                             \
  }                                                                                        \
  static int plain_##name(void *handle) { return function(handle, valid); }
/* make_renew and plain_renew for the profile's renew `function`: a token of the input's
   choice for the grant (`kind`) of the connection's last start (its channel or user id;
   `fallback` for a handle the input did not make), since a renewal must keep the grant
   (§12.10); plain_renew: a valid one for `fallback`. */
#define RENEW_CALL(function, kind, fallback)                                               \
  static int make_renew(struct context *c, void *handle) {                                 \
    int choice = token_choice();                                                           \
    char *token = token_text(choice, kind, c ? c->grant : fallback);                       \
    int rc = function(handle, token);                                                      \
    free(token);                                                                           \
    return rc;                                                                             \
  }                                                                                        \
  static int plain_renew(void *handle) { return function(handle, valid_token(kind, fallback)); }
/* The same for `function` of the handle alone. */
#define HANDLE_CALL(name, function)                                                        \
  static int make_##name(struct context *c, void *handle) {                                \
    (void)c;                                                                               \
    return function(handle);                                                               \
  }                                                                                        \
  static int plain_##name(void *handle) { return function(handle); }
/* A struct call's name, make and plain. */
#define CALL(name) #name, make_##name, plain_##name
/* An array and its length, as two initializers. */
#define TABLE(array) array, (int)(sizeof array / sizeof array[0])

/* `static const struct api api`, from the profile's types (handle, config, handler, and the
   state callback's two enums) and functions (config_init, handler_init, create, destroy,
   state, get_stats, then the four name functions). */
#define PROFILE_API(handle_t, config_t, handler_t, state_t, reason_t, config_init_f,        \
                    handler_init_f, create_f, destroy_f, state_f, get_stats_f, ...)        \
  static void config_init(void *config) { config_init_f(config); }                         \
  static void handler_init(void *handler) { handler_init_f(handler); }                     \
  static int create(struct ev_loop *loop, const void *config, const void *handler,         \
                    void *ctx, void **out) {                                               \
    handle_t *handle = out ? *out : NULL; /* what the call leaves in it is checked */      \
    int rc = create_f(loop, config, handler, ctx, out ? &handle : NULL);                   \
    if (out) *out = handle;                                                                \
    return rc;                                                                             \
  }                                                                                        \
  static int destroy(void *handle) { return destroy_f(handle); }                           \
  static int state(const void *handle) { return (int)state_f(handle); }                    \
  static int get_stats(const void *handle, tether_connection_stats *out) {                 \
    return get_stats_f(handle, out);                                                       \
  }                                                                                        \
  static void companion_state(void *ctx, state_t state, reason_t reason) {                 \
    (void)state, (void)reason;                                                             \
    companion_heard(ctx);                                                                  \
  }                                                                                        \
  static void companion_fill(void *handler) {                                              \
    handler_init_f(handler);                                                               \
    ((handler_t *)handler)->on_connection_state_changed = companion_state;                 \
  }                                                                                        \
  static const struct api api = {                                                          \
      sizeof(config_t), offsetof(config_t, app_id), offsetof(config_t, server),            \
      sizeof(handler_t), config_init, handler_init, create, destroy, state, get_stats,     \
      {__VA_ARGS__}, companion_fill}

/* ---- The program's operations, for seeds -------------------------------------------------- */

enum op {
  OP_CREATE, OP_DESTROY, OP_STATE, OP_STATS, OP_NAMES, OP_DRAIN, OP_SEND, OP_COMPANION,
  OP_RUN, OP_CALL /* OP_CALL + i: the profile's call i */
};
/* create in `slot`, handler and config whole, acting `action` once in callback `kind`,
   valid app id, our server; then the profile's thresholds (3: fast). */
#define CREATE_HEAD(slot, kind, action) OP_CREATE, slot, 0, kind, action, 1, 1, 1
#define VALID 11 /* string_arg's choice of the valid string */
#define RUN OP_RUN, 3, 3
#define ANSWER OP_DRAIN, 1 /* the server answers what it was sent */
/* ... refusing each INIT with `code` (sealed; code | 0x80: the CONFIRM, sealed in DATA) */
#define REFUSE(code) OP_DRAIN, 2, code
#define NO_ACCEPT OP_DRAIN, 3 /* ... all but the ACCEPT (a SEND gives it) */
#define COOKIE OP_DRAIN, 4    /* ... an INIT without the cookie with a COOKIE_REPLY */
#define LIFETIME(choice) OP_DRAIN, 5, choice /* ... tickets of 0, 1 ms, any (u32), else 3 s */
/* A join or login: sent, answered (RESPONSE), confirmed, answered (ACCEPT): two round trips
   (§12.2). */
#define HANDSHAKE RUN, ANSWER, RUN, ANSWER, RUN
/* The server sends the profile's message number `m`, sealed for the session heard last;
   `...` its fields' bytes; then no padding. */
#define SEND(m, ...) OP_SEND, m, 2, __VA_ARGS__, 1
#define SEND0(m) OP_SEND, m, 2, 1
/* The same, then altered: `how` 1 a bit flipped (at u16 `at`, bit `bit`), 7 a copy at once
   (a RESET's copy included: it must change nothing, harness.c). */
#define FLIP(m, at, bit, ...) OP_SEND, m, 1, __VA_ARGS__, 1, 0, at, bit
#define TWICE(m, ...) OP_SEND, m, 7, __VA_ARGS__, 1
#define TWICE0(m) OP_SEND, m, 7, 1
/* An earlier datagram of the fake's again (the i-th of the last 32 it sent). */
#define REPLAY(i) OP_SEND, 0, 5, i
/* A handshake answer for no attempt (kind 0 ... 5, handshake_answer in harness.c). */
#define FORGED(kind, ...) OP_SEND, 0, 6, kind, __VA_ARGS__

#endif
