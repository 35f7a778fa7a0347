// SPDX-License-Identifier: Apache-2.0
/* fuzz-rtm: the login client (tether_rtm_* of Include/tether.h) as a profile of the C API
 * harness (../capi/harness.c), which checks what both profiles share. The client's own
 * properties, each an abort() with a message:
 *   - the return codes below and the states they come from: login 0 only from DISCONNECTED
 *     and ALREADY_LOGGED_IN only from another state; logout 0 only from another state than
 *     DISCONNECTED and NOT_LOGGED_IN only from it; join, leave and renew 0 only while
 *     CONNECTING, CONNECTED or RECONNECTING, renew's NOT_READY only DISCONNECTED or ABORTED;
 *   - on_login_result at most once per login call that returned 0, with a code 0..10, just
 *     before the change it causes (OK: CONNECTED/LOGIN_SUCCESS; otherwise not CONNECTED),
 *     and none still owed when the state becomes CONNECTED, DISCONNECTED or ABORTED;
 *   - on_logout_result(OK) inside every logout that returned 0 outside a callback (when the
 *     handler has it), the state DISCONNECTED after it, and no callback after it until the
 *     next login (on_log excepted: a datagram that arrives after the logout is still logged
 *     as dropped);
 *   - member events name a channel of 1..63 bytes and a user id of 1..64.
 * Its server messages (sealed for its session, or altered: ../capi/harness.c): LOGIN_ACCEPT,
 * LOGIN_REFUSE (any code), MEMBER_EVENTS (the server session of a few values, so that it
 * matches the client's now and then), CHANNEL_ACK, KICK, TOKEN_EXPIRED, RESET,
 * HEARTBEAT_ACK, TOKEN_RENEWED, PATH_CHALLENGE, any type, garbage. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../capi/harness.h"

enum kind {
  K_STATE, K_LOGIN_RESULT, K_LOGOUT_RESULT, K_TOKEN_EXPIRED, K_MEMBER_JOINED, K_MEMBER_LEFT,
  K_LOG, K_ATTEMPT, K_COUNT
};

/* ---- The model: the login results owed, the logouts' results ---------------------------- */

static struct model {
  int has_login_result;  /* its handler has on_login_result */
  int has_logout_result; /* its handler has on_logout_result */
  int owed;              /* login results owed: login calls that returned 0, less results */
  int expect;            /* after a login result: 1 CONNECTED/LOGIN_SUCCESS next, 2 not CONNECTED */
  int logged_out;        /* on_logout_result came, and no login since */
  /* A logout inside a callback delivers its callbacks after that callback returns; a login
     may come first. These keep the checks right across that. */
  int pending_logouts;    /* logouts that returned 0 whose on_logout_result has not come */
  int login_since_logout; /* a login returned 0 since the last logout that did */
  int loose; /* a logout inside a callback without on_logout_result: order unknown since */
  /* A login that returned 0 inside a callback: the state changes queued before it (the
     previous attempt's) come first, until its own CONNECTING. */
  int awaiting_connecting;
} models[CONTEXTS];

static void prepare(struct context *c, uint32_t handler_size) {
  struct model *m = &models[c->index];
  memset(m, 0, sizeof *m);
  m->has_login_result =
      handler_size >= offsetof(tether_rtm_handler, on_login_result) + sizeof(void *);
  m->has_logout_result =
      handler_size >= offsetof(tether_rtm_handler, on_logout_result) + sizeof(void *);
}

static void state_changed(struct model *m, int state, int reason) {
  if (m->pending_logouts || m->loose) return; /* a login's and a logout's may interleave */
  if (m->awaiting_connecting) {
    m->awaiting_connecting = state != TETHER_RTM_CONNECTION_STATE_CONNECTING;
    m->expect = 0;
    return;
  }
  if (m->expect == 1 && !(state == TETHER_RTM_CONNECTION_STATE_CONNECTED &&
                          reason == TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_SUCCESS)) {
    fail("login result OK, then not CONNECTED", state * 100 + reason);
  }
  if (m->expect == 2 && state == TETHER_RTM_CONNECTION_STATE_CONNECTED) {
    fail("a failed login result, then CONNECTED", reason);
  }
  m->expect = 0;
  if (m->owed && (state == TETHER_RTM_CONNECTION_STATE_DISCONNECTED ||
                  state == TETHER_RTM_CONNECTION_STATE_CONNECTED ||
                  state == TETHER_RTM_CONNECTION_STATE_ABORTED)) {
    fail("a state change before the login result", state);
  }
}

static void callback(struct context *c, int kind, int a, int b) {
  struct model *m = &models[c->index];
  if (m->logged_out && kind != K_LOG) {
    fprintf(stderr, "client %d: callback %d (%d, %d) after on_logout_result\n", c->index, kind,
            a, b);
    fail("a callback after on_logout_result, before the next login", kind);
  }
  switch (kind) {
  case K_STATE: state_changed(m, a, b); break;
  case K_LOGIN_RESULT:
    if (m->owed == 0) fail("a login result not owed", a);
    if (a < 0 || a > 10) fail("login result code", a);
    m->owed--;
    if (!m->pending_logouts && !m->loose) m->expect = a == 0 ? 1 : 2;
    break;
  case K_LOGOUT_RESULT:
    if (a != TETHER_RTM_LOGOUT_ERR_OK) fail("logout result code", a);
    if (m->pending_logouts == 0) fail("a logout result without a logout", 0);
    m->pending_logouts--;
    if (m->pending_logouts == 0 && !m->login_since_logout && !m->loose) {
      if (m->owed) fail("on_logout_result with a login result owed", m->owed);
      m->logged_out = 1;
    }
    break;
  default: break;
  }
  /* An action inside the result's callback may change what comes next. */
  if (kind == K_LOGIN_RESULT && kind == c->act_in && c->acts_left) m->expect = 0;
}

/* ---- The callbacks ------------------------------------------------------------------------- */

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
static void on_attempt(void *c, uint32_t attempt, uint32_t next_ms) {
  (void)next_ms;
  checked_attempt(c, K_ATTEMPT, attempt);
}

static const tether_rtm_handler handler = {
    sizeof(tether_rtm_handler), .on_connection_state_changed = on_state,
    .on_login_result = on_login_result, .on_logout_result = on_logout_result,
    .on_token_expired = on_token_expired, .on_member_joined = on_member_joined,
    .on_member_left = on_member_left, .on_log = checked_log, .on_login_attempt = on_attempt};

/* ---- The calls ------------------------------------------------------------------------------- */

static int make_login(struct context *c, void *client) {
  int choice = token_choice();
  char *user = string_arg(u8() % 2 ? "alice" : "bob");
  char *token = token_text(choice, 2, user);
  struct model *m = c ? &models[c->index] : NULL;
  int rc, logged_out = m ? m->logged_out : 0;
  /* The login's own callbacks come inside the call: the logout's silence ends with it. */
  if (m) {
    m->logged_out = 0;
    m->owed += m->has_login_result;
  }
  uint64_t sent = sent_count_of(client);
  rc = tether_rtm_login(client, token, user);
  if (choice == TOKEN_V1 && rc == 0) refused_locally(c, client, sent);
  free(token);
  if (rc == 0 && c) snprintf(c->grant, sizeof c->grant, "%s", user ? user : "");
  free(user);
  if (!m) return rc;
  if (rc != 0) {
    m->owed -= m->has_login_result;
    m->logged_out = logged_out;
    return rc;
  }
  m->login_since_logout = 1;
  if (in_callback) m->awaiting_connecting = 1;
  if (m->owed > 1 && m->pending_logouts == 0 && !m->loose) fail("two login results owed", m->owed);
  return rc;
}
static int plain_login(void *client) {
  return tether_rtm_login(client, valid_token(2, "alice"), "alice");
}

static int make_logout(struct context *c, void *client) {
  struct model *m = c ? &models[c->index] : NULL;
  int rc, since = m ? m->login_since_logout : 0;
  /* Counted before the call: outside a callback the result comes inside it. */
  if (m && m->has_logout_result) m->pending_logouts++;
  if (m) m->login_since_logout = 0;
  rc = tether_rtm_logout(client);
  if (!m) return rc;
  if (rc != 0) {
    if (m->has_logout_result) m->pending_logouts--;
    m->login_since_logout = since;
    return rc;
  }
  if (c->destroyed) return rc;
  if (!m->has_logout_result && in_callback) m->loose = 1;
  /* Unless a callback inside the call logged in again (on_logout_result may). */
  if (!m->login_since_logout &&
      tether_rtm_get_connection_state(client) != TETHER_RTM_CONNECTION_STATE_DISCONNECTED) {
    fail("logout left a state", 0);
  }
  /* Outside a callback, the logout's callbacks all come inside the call. */
  if (!in_callback && !m->loose && !m->login_since_logout) {
    if (m->owed != 0) fail("a login result still owed after logout", m->owed);
    if (m->has_logout_result && !m->logged_out) fail("no on_logout_result inside logout", 0);
  }
  return rc;
}
static int plain_logout(void *client) { return tether_rtm_logout(client); }

STRING_CALL(join, tether_rtm_join_channel, channel_arg(), "lobby")
STRING_CALL(leave, tether_rtm_leave_channel, channel_arg(), "lobby")
RENEW_CALL(tether_rtm_renew_token, 2, "alice")
HANDLE_CALL(network_changed, tether_rtm_network_changed)

#define SESSION (IN(2) | IN(3) | IN(4)) /* CONNECTING, CONNECTED, RECONNECTING */
enum { C_LOGIN, C_LOGOUT, C_JOIN, C_LEAVE, C_RENEW, C_NETWORK_CHANGED, C_COUNT };
static const struct call calls[C_COUNT] = {
    [C_LOGIN] = {CALL(login),
                 {{0, IN(1)}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                  {TETHER_ERR_TOO_OFTEN, ANY_STATE}, {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE},
                  {TETHER_ERR_ALREADY_LOGGED_IN, SESSION | IN(5)}}},
    [C_LOGOUT] = {CALL(logout),
                  {{0, SESSION | IN(5)}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                   {TETHER_ERR_NOT_LOGGED_IN, IN(1)}}},
    [C_JOIN] = {CALL(join),
                {{0, SESSION}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                 {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE},
                 {TETHER_ERR_INVALID_CHANNEL_NAME, ANY_STATE}, {TETHER_ERR_NOT_READY, ANY_STATE},
                 {TETHER_ERR_JOIN_CHANNEL_REJECTED, ANY_STATE}}},
    [C_LEAVE] = {CALL(leave),
                 {{0, SESSION}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                  {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE},
                  {TETHER_ERR_INVALID_CHANNEL_NAME, ANY_STATE},
                  {TETHER_ERR_NOT_READY, ANY_STATE}}},
    [C_RENEW] = {CALL(renew),
                 {{0, SESSION}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                  {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE},
                  {TETHER_ERR_INVALID_TOKEN, ANY_STATE}, {TETHER_ERR_NOT_READY, IN(1) | IN(5)}}},
    [C_NETWORK_CHANGED] = {CALL(network_changed),
                           {{0, ANY_STATE}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE}}},
};

/* ---- The functions, as the harness calls them ---------------------------------------------- */

PROFILE_API(tether_rtm_client, tether_rtm_config, tether_rtm_handler,
            tether_rtm_connection_state, tether_rtm_connection_change_reason,
            tether_rtm_config_init, tether_rtm_handler_init, tether_rtm_client_create,
            tether_rtm_client_destroy, tether_rtm_get_connection_state,
            tether_rtm_client_get_stats, tether_rtm_connection_state_name,
            tether_rtm_connection_change_reason_name, tether_rtm_login_error_name,
            tether_rtm_logout_error_name);

/* ---- Seeds: TETHER_FUZZ_WRITE_SEEDS=DIR fuzz-rtm writes them (scripts/test/fuzz.sh seeds) -------- */

enum {
  S_LOGIN_ACCEPT, S_LOGIN_REFUSE, S_MEMBER_EVENTS, S_CHANNEL_ACK, S_KICK, S_TOKEN_EXPIRED,
  S_RESET, S_HEARTBEAT_ACK, S_TOKEN_RENEWED, S_PATH_CHALLENGE, S_ANY_TYPE, S_COUNT
};
static const enum message messages[S_COUNT] = {
    [S_LOGIN_ACCEPT] = M_LOGIN_ACCEPT, [S_LOGIN_REFUSE] = M_LOGIN_REFUSE,
    [S_MEMBER_EVENTS] = M_MEMBER_EVENTS, [S_CHANNEL_ACK] = M_CHANNEL_ACK, [S_KICK] = M_KICK,
    [S_TOKEN_EXPIRED] = M_TOKEN_EXPIRED, [S_RESET] = M_RESET,
    [S_HEARTBEAT_ACK] = M_HEARTBEAT_ACK, [S_TOKEN_RENEWED] = M_TOKEN_RENEWED,
    [S_PATH_CHALLENGE] = M_PATH_CHALLENGE, [S_ANY_TYPE] = M_ANY_TYPE};

/* Every threshold fast. */
#define CREATE(slot, kind, action) CREATE_HEAD(slot, kind, action), 3, 3, 3, 3, 3
/* login: a valid token, user "alice" */
#define LOGIN(slot) OP_CALL + C_LOGIN, slot, VALID, 1, VALID
#define LOGOUT(slot) OP_CALL + C_LOGOUT, slot
/* join or leave channel "c<n>" */
#define JOIN(slot, n) OP_CALL + C_JOIN, slot, 1, n
#define LEAVE(slot, n) OP_CALL + C_LEAVE, slot, 1, n

static const uint8_t seed_logged_in[] = {
    CREATE(0, K_COUNT, A_NONE), LOGIN(0), HANDSHAKE, JOIN(0, 1), RUN, ANSWER, RUN, RUN,
    ANSWER, RUN, OP_STATS, 0, 1, 1, OP_STATE, 0, LEAVE(0, 1), RUN, ANSWER, LOGOUT(0), RUN};
/* LOGIN_REFUSE INVALID_TOKEN (sealed, at the INIT): on_login_result logs in again (a call
   inside a callback reads its arguments where the input is when the callback comes: after
   the RUN). */
static const uint8_t seed_refused[] = {CREATE(0, K_LOGIN_RESULT, A_CALL + C_LOGIN), LOGIN(0),
                                       RUN, REFUSE(5), RUN, VALID, 1, VALID, HANDSHAKE};
/* MEMBER_EVENTS of the server session the fake server's LOGIN_ACCEPT gave (0), from 1, 2
   entries: bob joined c2, bob left c2; the client logs out and in inside the first. */
#define EVENTS2 0, 1, 1, 1, 1, 1, 0, 3, 1, 1, 1, 3, 1
static const uint8_t seed_member_events[] = {
    CREATE(0, K_MEMBER_JOINED, A_END_START), LOGIN(0), HANDSHAKE, JOIN(0, 2), RUN, ANSWER, RUN,
    SEND(S_MEMBER_EVENTS, EVENTS2), RUN, VALID, 1, VALID, HANDSHAKE};
/* KICK REMOTE_LOGIN: ABORTED; login refused until logout */
static const uint8_t seed_kick[] = {CREATE(0, K_COUNT, A_NONE), LOGIN(0), HANDSHAKE,
                                    SEND(S_KICK, 1, 3), RUN, LOGIN(0), LOGOUT(0), LOGIN(0),
                                    HANDSHAKE};
static const uint8_t seed_token_expired[] = {
    CREATE(0, K_TOKEN_EXPIRED, A_CALL + C_RENEW), LOGIN(0), HANDSHAKE, SEND0(S_TOKEN_EXPIRED),
    RUN, VALID, OP_CALL + C_RENEW, 0, VALID, RUN, ANSWER, RUN};
/* The session's RESET (version 1's SESSION_UNKNOWN): a relogin, a network change in its
   attempt. */
static const uint8_t seed_reset[] = {
    CREATE(0, K_ATTEMPT, A_CALL + C_NETWORK_CHANGED), LOGIN(0), HANDSHAKE, JOIN(0, 3),
    SEND0(S_RESET), RUN, ANSWER, RUN, ANSWER, RUN, SEND(S_CHANNEL_ACK, 0, 1, 1), RUN};
/* Client 0 destroys client 1 in its login result; client 2 destroys itself in its logout
   result. */
static const uint8_t seed_destroy_in_result[] = {
    CREATE(0, K_LOGIN_RESULT, A_DESTROY_OTHER), CREATE(1, K_COUNT, A_NONE),
    CREATE(2, K_LOGOUT_RESULT, A_DESTROY), LOGIN(1), LOGIN(0), LOGIN(2), HANDSHAKE, LOGOUT(2),
    RUN};
/* Tokens the library refuses itself (version 1; expired), ones the edge refuses (another
   certificate: REFUSE_CLEAR; another user: sealed), a login refused at the CONFIRM
   (LOGIN_REFUSE 2, sealed DATA), one asked for a cookie, then a valid one renewed with one
   of another certificate. */
/* A login of "alice" with a token of `choice`; then token_text's bytes. */
#define TOKEN_LOGIN(slot, choice) OP_CALL + C_LOGIN, slot, choice, 1, VALID
static const uint8_t seed_tokens[] = {
    CREATE(0, K_COUNT, A_NONE), TOKEN_LOGIN(0, TOKEN_V1), 1, RUN, LOGOUT(0),
    TOKEN_LOGIN(0, TOKEN_EXPIRED), 1, RUN, LOGOUT(0), TOKEN_LOGIN(0, TOKEN_OTHER_CERTIFICATE),
    HANDSHAKE, LOGOUT(0), TOKEN_LOGIN(0, TOKEN_OTHER_GRANT), 0, HANDSHAKE, LOGOUT(0), LOGIN(0),
    RUN, ANSWER, RUN, REFUSE(0x82), RUN, LOGOUT(0), LOGIN(0), RUN, COOKIE, RUN, COOKIE, RUN,
    ANSWER, RUN, OP_CALL + C_RENEW, 0, TOKEN_OTHER_CERTIFICATE, RUN, ANSWER, RUN};
/* The LOGIN_ACCEPT left to the input, then data altered: MEMBER_EVENTS with a bit flipped,
   a CHANNEL_ACK twice, the LOGIN_ACCEPT replayed, answers for the ended attempt (clear,
   sealed, a cookie), a RESET with a wrong value; each must change nothing. */
#define LOGIN_ACCEPT_FIELDS 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0, 1
static const uint8_t seed_altered[] = {
    CREATE(0, K_COUNT, A_NONE), LOGIN(0), RUN, ANSWER, RUN, NO_ACCEPT, RUN,
    SEND(S_LOGIN_ACCEPT, LOGIN_ACCEPT_FIELDS), RUN, JOIN(0, 2), RUN, ANSWER, RUN,
    FLIP(S_MEMBER_EVENTS, 30, 0, EVENTS2), RUN, TWICE(S_CHANNEL_ACK, 0, 1, 1), RUN, REPLAY(2),
    RUN, FORGED(1, 0), FORGED(2, 0, 0, 5), FORGED(3, 0, 0), FORGED(5, 0, 4, 1), RUN,
    FORGED(4, 0, 1, 1, 2, 3), RUN, SEND(S_PATH_CHALLENGE, 1, 2, 3, 4, 5, 6, 7, 8), RUN, ANSWER};
static const uint8_t seed_timeout_with_engine[] = {
    OP_COMPANION, CREATE(0, K_STATE, A_CALL + C_JOIN), LOGIN(0), 1, 0 /* "c0" */, RUN,
    OP_RUN, 3, 5, OP_RUN, 3,
    5, OP_RUN, 3, 5, OP_RUN, 3, 5, OP_RUN, 3, 5, OP_RUN, 3, 5, OP_RUN, 3, 5, ANSWER, RUN,
    OP_COMPANION, RUN};
static const uint8_t seed_bad_arguments[] = {
    OP_CREATE, 0, 1, K_COUNT, 0, 0, 1, 1, 3, 3, 3, 3, 3, 0, /* config size 0 */
    OP_CREATE, 1, 2, K_COUNT, 0, 0, 1, 1, 0, 3, 3, 3, 3,    /* no handler, login timeout 0 */
    CREATE(1, K_COUNT, A_NONE), LOGIN(1),
    OP_CALL + C_LOGIN, 1, 0, 1, VALID,                      /* token NULL */
    OP_CALL + C_LOGIN, 1, VALID, 1, 7,                      /* user id of 65 bytes */
    OP_CALL + C_LOGIN, 1, 4, 1, VALID,                      /* token of 513 bytes */
    LOGIN(1), OP_CALL + C_JOIN, 1, 0, 5,                    /* channel of 63 bytes */
    OP_CALL + C_JOIN, 1, 0, 0,                              /* channel NULL */
    OP_CALL + C_LEAVE, 1, 0, 8, 1,                          /* "bad name" */
    OP_CALL + C_RENEW, 1, 0, OP_CALL + C_RENEW, 1, 8, 0,    /* NULL, bad bytes */
    OP_STATS, 1, 0, 4, 0, OP_NAMES, 0xFF, 0xFF, 0xFF, 0xFF, OP_DESTROY, 3,
    OP_CALL + C_NETWORK_CHANGED, 3, LOGOUT(3), LOGOUT(1), LOGOUT(1)};
/* A cookie asked for (the COOKIE_REPLY, then the INIT with mac2 answered), then that
   COOKIE_REPLY again at once: its attempt may still be open, and the library takes it
   again (one more INIT, nothing else; docs/PROTOCOL.md §12.6 says a replayed one changes
   nothing: found by fuzz-rtm, reported), then the login goes on. */
static const uint8_t seed_cookie_replayed[] = {CREATE(0, K_COUNT, A_NONE), LOGIN(0), COOKIE,
                                               REPLAY(0), RUN, ANSWER, RUN, ANSWER, RUN};
/* RESPONSEs whose ticket lasts 0 ms, then a huge lifetime. */
static const uint8_t seed_short_ticket[] = {CREATE(0, K_COUNT, A_NONE), LOGIN(0), RUN, LIFETIME(0),
                                            RUN, RUN, ANSWER, RUN, RUN, LIFETIME(2), 0xFF, 0xFF,
                                            0xFF, 0xFF, RUN, ANSWER, RUN};
#define SEED(name) {#name, seed_##name, sizeof seed_##name}
static const struct seed seeds[] = {
    SEED(logged_in), SEED(refused), SEED(member_events), SEED(kick), SEED(token_expired),
    SEED(reset), SEED(destroy_in_result), SEED(timeout_with_engine), SEED(bad_arguments),
    SEED(tokens), SEED(altered), SEED(short_ticket), SEED(cookie_replayed)};

/* What fuzzing found (Fuzz/regressions/rtm, each with a C test of its own), written by
   TETHER_FUZZ_WRITE_REGRESSIONS=DIR:
   - logout-refused-in-login-result (Tests/c/test_logout_refused.c): a logout while
     CONNECTING, outside a callback; the login result owed (UNKNOWN) comes inside it, and
     logs out again (refused: NOT_LOGGED_IN); the outer logout's DISCONNECTED/LOGOUT and
     on_logout_result must still come inside the call. */
static const uint8_t logout_refused_in_login_result[] = {
    CREATE(0, K_LOGIN_RESULT, A_CALL + C_LOGOUT), LOGIN(0), RUN, LOGOUT(0), RUN};
static const struct seed regressions[] = {{"logout-refused-in-login-result",
                                           logout_refused_in_login_result,
                                           sizeof logout_refused_in_login_result}};

/* ---- The profile ------------------------------------------------------------------------------ */

static const struct threshold thresholds[] = {
    {offsetof(tether_rtm_config, login_timeout_ms), 30},
    {offsetof(tether_rtm_config, interrupted_after_ms), 15},
    {offsetof(tether_rtm_config, heartbeat_interval_ms), 4},
    {offsetof(tether_rtm_config, retry_base_ms), 2},
    {offsetof(tether_rtm_config, retry_cap_ms), 8}};

/* The state each reason goes with (tether.h). */
static const signed char reason_states[] = {0, 2, 3, 1, 1, 4, 1, 5, 5, 1};

const struct profile login_profile = {
    "client", &api, TABLE(thresholds), &handler, K_COUNT, K_LOG, TABLE(reason_states),
    TABLE(calls), C_LOGIN, C_LOGOUT, prepare, callback, 2, TABLE(messages),
    TABLE(seeds), TABLE(regressions)};
