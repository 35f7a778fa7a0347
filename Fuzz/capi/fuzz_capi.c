// SPDX-License-Identifier: Apache-2.0
/* fuzz-capi: the channel engine (tether_engine_* of Include/tether.h) as a profile of the
 * C API harness (harness.c), which checks what both profiles share. The engine's own
 * properties, each an abort() with a message:
 *   - the return codes below and the states they come from: join 0 only from DISCONNECTED
 *     and JOIN_CHANNEL_REJECTED only from another state; renew 0 only in a session (or
 *     FAILED) and NOT_READY only from DISCONNECTED or FAILED;
 *   - after leave, only the leave's own two callbacks (DISCONNECTED/LEAVE_CHANNEL, then
 *     on_leave_channel) until the next join, on_log excepted;
 *   - callbacks' arguments: a channel name of at most 63 bytes, user-offline reasons QUIT
 *     or DROPPED, a token to renew, a log message at a known level, attempts from 1.
 * Its server messages (sealed for its session, or altered: harness.c): ACCEPT, REFUSE,
 * HEARTBEAT_ACK, PRESENCE, KICK, TOKEN_EXPIRED, RESET, TOKEN_RENEWED, PATH_CHALLENGE, any
 * type, garbage. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum kind {
  K_STATE, K_JOIN, K_REJOIN, K_LOST, K_LEAVE, K_USER_JOINED, K_USER_OFFLINE, K_WILL_EXPIRE,
  K_REQUEST_TOKEN, K_LOG, K_ATTEMPT, K_REMOTE_INTERRUPTED, K_REMOTE_RESUMED, K_COUNT
};

/* ---- The model: left, and not joined since ----------------------------------------------- */

static struct model {
  int left;
  int leave_state_seen; /* DISCONNECTED/LEAVE_CHANNEL came: on_leave_channel may follow */
} models[CONTEXTS];

static void prepare(struct context *c, uint32_t handler_size) {
  (void)handler_size;
  memset(&models[c->index], 0, sizeof models[0]);
}

static void callback(struct context *c, int kind, int state, int reason) {
  struct model *m = &models[c->index];
  int own;
  if (!m->left || kind == K_LOG) return;
  own = (kind == K_STATE && state == TETHER_CONNECTION_STATE_DISCONNECTED &&
         reason == TETHER_CONNECTION_CHANGED_LEAVE_CHANNEL && !m->leave_state_seen) ||
        (kind == K_LEAVE && m->leave_state_seen);
  if (!own) {
    fprintf(stderr, "engine %d: callback %d (state %d, reason %d) after leave\n", c->index, kind,
            state, reason);
    fail("a callback after leave", kind);
  }
  if (kind == K_STATE) m->leave_state_seen = 1;
}

/* ---- The callbacks ------------------------------------------------------------------------- */

static void on_state(void *c, tether_connection_state s, tether_connection_changed_reason r) {
  hit(c, K_STATE, (int)s, (int)r);
}
static void check_channel(const char *channel) {
  if (!channel || strlen(channel) > 63) fail("a join's channel name", 0);
}
static void on_join(void *c, const char *channel, uint32_t uid, uint32_t elapsed_ms) {
  (void)uid, (void)elapsed_ms;
  check_channel(channel);
  hit(c, K_JOIN, 0, 0);
}
static void on_rejoin(void *c, const char *channel, uint32_t uid, uint32_t elapsed_ms) {
  (void)uid, (void)elapsed_ms;
  check_channel(channel);
  hit(c, K_REJOIN, 0, 0);
}
static void on_lost(void *c) { hit(c, K_LOST, 0, 0); }
static void on_leave(void *c) { hit(c, K_LEAVE, 0, 0); }
static void on_user_joined(void *c, uint32_t uid, uint32_t elapsed_ms) {
  (void)uid, (void)elapsed_ms;
  hit(c, K_USER_JOINED, 0, 0);
}
static void on_user_offline(void *c, uint32_t uid, tether_user_offline_reason r) {
  (void)uid;
  if (r != TETHER_USER_OFFLINE_QUIT && r != TETHER_USER_OFFLINE_DROPPED) fail("offline reason", r);
  hit(c, K_USER_OFFLINE, 0, 0);
}
static void on_will_expire(void *c, const char *token) {
  if (!token) fail("will-expire token NULL", 0);
  hit(c, K_WILL_EXPIRE, 0, 0);
}
static void on_request_token(void *c) { hit(c, K_REQUEST_TOKEN, 0, 0); }
static void on_attempt(void *c, uint32_t attempt, uint32_t next_ms, uint32_t give_up_ms) {
  (void)next_ms, (void)give_up_ms;
  checked_attempt(c, K_ATTEMPT, attempt);
}
static void on_remote_interrupted(void *c, uint32_t uid) {
  (void)uid;
  hit(c, K_REMOTE_INTERRUPTED, 0, 0);
}
static void on_remote_resumed(void *c, uint32_t uid) {
  (void)uid;
  hit(c, K_REMOTE_RESUMED, 0, 0);
}

static const tether_engine_handler handler = {
    sizeof(tether_engine_handler), .on_connection_state_changed = on_state,
    .on_join_channel_success = on_join, .on_rejoin_channel_success = on_rejoin,
    .on_connection_lost = on_lost, .on_leave_channel = on_leave,
    .on_user_joined = on_user_joined, .on_user_offline = on_user_offline,
    .on_token_privilege_will_expire = on_will_expire, .on_request_token = on_request_token,
    .on_log = checked_log, .on_join_attempt = on_attempt,
    .on_remote_member_interrupted = on_remote_interrupted,
    .on_remote_member_resumed = on_remote_resumed};

/* ---- The calls ------------------------------------------------------------------------------- */

static int make_join(struct context *c, void *engine) {
  int choice = token_choice();
  char *channel = channel_arg(), *token;
  uint32_t uid = u8() & 1 ? 0 : u32();
  int left = c ? models[c->index].left : 0, rc;
  token = token_text(choice, 1, channel);
  /* A join's own callbacks come inside the call: the leave's silence ends with it. */
  uint64_t sent = sent_count_of(engine);
  if (c) models[c->index].left = 0;
  rc = tether_join_channel(engine, token, channel, uid);
  if (choice == TOKEN_V1 && rc == 0) refused_locally(c, engine, sent);
  if (c && rc != 0) models[c->index].left = left;
  if (c && rc == 0) snprintf(c->grant, sizeof c->grant, "%s", channel ? channel : "");
  free(token);
  free(channel);
  return rc;
}
static int plain_join(void *engine) {
  return tether_join_channel(engine, valid_token(1, "lobby"), "lobby", 0);
}

static int make_leave(struct context *c, void *engine) {
  int rc = tether_leave_channel(engine);
  if (rc == 0 && c) {
    models[c->index].left = 1;
    models[c->index].leave_state_seen = 0;
  }
  return rc;
}
static int plain_leave(void *engine) { return tether_leave_channel(engine); }

RENEW_CALL(tether_renew_token, 1, "c0")
STRING_CALL(set_server, tether_set_server, server_arg(), "127.0.0.1:9")
HANDLE_CALL(network_changed, tether_network_changed)

#define SESSION (IN(2) | IN(3) | IN(4)) /* CONNECTING, CONNECTED, RECONNECTING */
enum { C_JOIN, C_LEAVE, C_RENEW, C_SET_SERVER, C_NETWORK_CHANGED, C_COUNT };
static const struct call calls[C_COUNT] = {
    [C_JOIN] = {CALL(join),
                {{0, IN(1)}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                 {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE},
                 {TETHER_ERR_INVALID_CHANNEL_NAME, ANY_STATE},
                 {TETHER_ERR_INVALID_TOKEN, ANY_STATE},
                 {TETHER_ERR_JOIN_CHANNEL_REJECTED, SESSION | IN(5)}}},
    [C_LEAVE] = {CALL(leave), {{0, ANY_STATE}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE}}},
    [C_RENEW] = {CALL(renew),
                 {{0, SESSION | IN(5)}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                  {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE},
                  {TETHER_ERR_INVALID_TOKEN, ANY_STATE}, {TETHER_ERR_NOT_READY, IN(1) | IN(5)}}},
    [C_SET_SERVER] = {CALL(set_server),
                      {{0, ANY_STATE}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE},
                       {TETHER_ERR_INVALID_ARGUMENT, ANY_STATE}, {TETHER_ERR_FAILED, ANY_STATE}}},
    [C_NETWORK_CHANGED] = {CALL(network_changed),
                           {{0, ANY_STATE}, {TETHER_ERR_NOT_INITIALIZED, ANY_STATE}}},
};

/* ---- The functions, as the harness calls them ---------------------------------------------- */

PROFILE_API(tether_engine, tether_engine_config, tether_engine_handler, tether_connection_state,
            tether_connection_changed_reason, tether_engine_config_init,
            tether_engine_handler_init, tether_engine_create, tether_engine_destroy,
            tether_get_connection_state, tether_engine_get_stats, tether_connection_state_name,
            tether_connection_changed_reason_name, tether_user_offline_reason_name,
            tether_error_name);

/* ---- Seeds: TETHER_FUZZ_WRITE_SEEDS=DIR fuzz-capi writes them (scripts/test/fuzz.sh seeds) ------- */

enum {
  S_ACCEPT, S_REFUSE, S_HEARTBEAT_ACK, S_PRESENCE, S_KICK, S_TOKEN_EXPIRED, S_RESET,
  S_TOKEN_RENEWED, S_PATH_CHALLENGE, S_ANY_TYPE, S_COUNT
};
static const enum message messages[S_COUNT] = {
    [S_ACCEPT] = M_ACCEPT, [S_REFUSE] = M_REFUSE, [S_HEARTBEAT_ACK] = M_HEARTBEAT_ACK,
    [S_PRESENCE] = M_PRESENCE, [S_KICK] = M_KICK, [S_TOKEN_EXPIRED] = M_TOKEN_EXPIRED,
    [S_RESET] = M_RESET, [S_TOKEN_RENEWED] = M_TOKEN_RENEWED,
    [S_PATH_CHALLENGE] = M_PATH_CHALLENGE, [S_ANY_TYPE] = M_ANY_TYPE};

/* Every threshold fast. */
#define CREATE(slot, kind, action) CREATE_HEAD(slot, kind, action), 3, 3, 3, 3, 3, 3, 3, 3
/* join: a valid token, channel "c0", uid 0 */
#define JOIN(slot) OP_CALL + C_JOIN, slot, VALID, 1, 0, 1

static const uint8_t seed_joined[] = {
    CREATE(0, K_COUNT, A_NONE), JOIN(0), HANDSHAKE, OP_STATS, 0, 1, 1, OP_CALL + C_LEAVE, 0,
    RUN};
static const uint8_t seed_destroy_in_join[] = {CREATE(0, K_JOIN, A_DESTROY), JOIN(0), HANDSHAKE,
                                               RUN};
static const uint8_t seed_leave_in_state[] = {
    CREATE(0, K_STATE, A_CALL + C_LEAVE), JOIN(0), RUN, ANSWER, RUN, JOIN(0), RUN};
static const uint8_t seed_destroy_other[] = {CREATE(0, K_ATTEMPT, A_DESTROY_OTHER),
                                             CREATE(1, K_COUNT, A_NONE), JOIN(1), JOIN(0), RUN,
                                             RUN};
/* PRESENCE of 3 entries (member 7 JOINED, silent 0 ms; 3 ALIVE; 5 LEFT); the engine leaves
   and is destroyed in the first on_user_joined. */
#define PRESENCE3 1, 3, 1, 7, 1, 0, 1, 1, 0, 1, 3, 1, 1, 1, 1, 0, 1, 5, 1, 2, 1, 1, 0
static const uint8_t seed_presence[] = {
    CREATE(0, K_USER_JOINED, A_END_DESTROY), JOIN(0), HANDSHAKE, SEND(S_PRESENCE, PRESENCE3),
    RUN, RUN};
/* TOKEN_EXPIRED: on_request_token renews (a call inside a callback reads its arguments
   where the input is when the callback comes: after the RUN), then the top level renews,
   and the rejoin is a new handshake. */
static const uint8_t seed_token_expired[] = {
    CREATE(0, K_REQUEST_TOKEN, A_CALL + C_RENEW), JOIN(0), HANDSHAKE, SEND0(S_TOKEN_EXPIRED),
    RUN, VALID, OP_CALL + C_RENEW, 0, VALID, HANDSHAKE};
/* The server switched (to itself) inside the first join attempt, the session's RESET, a
   network change while rejoining, and a login client on the same loop for a while. */
static const uint8_t seed_rejoin[] = {
    CREATE(0, K_ATTEMPT, A_CALL + C_SET_SERVER), JOIN(0), 0 /* ours */, HANDSHAKE,
    SEND0(S_RESET), RUN, OP_CALL + C_NETWORK_CHANGED, 0, HANDSHAKE, OP_COMPANION, HANDSHAKE,
    OP_COMPANION};
static const uint8_t seed_bad_arguments[] = {
    OP_CREATE, 0, 1, K_COUNT, 0, 0, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 0, /* config size 0 */
    OP_CREATE, 1, 2, K_COUNT, 0, 0, 1, 1, 0, 3, 3, 3, 3, 3, 3, 3,  /* no handler, heartbeat 0 */
    CREATE(2, K_COUNT, A_NONE),
    OP_CALL + C_JOIN, 2, 0, 0, 1, 1,             /* token NULL, channel "", uid 0 */
    OP_CALL + C_RENEW, 2, 0,                     /* token NULL */
    OP_STATS, 2, 0, 4, 0,                        /* size 4, out NULL */
    OP_CALL + C_SET_SERVER, 2, 3, 2,             /* 100,000 bytes */
    OP_NAMES, 0xFF, 0xFF, 0xFF, 0xFF, OP_DESTROY, 3, OP_CALL + C_NETWORK_CHANGED, 3};
/* Tokens the library must refuse itself, sending nothing (a version 1 one, a "2." text that
   is not base64), then ones the edge refuses (another certificate: REFUSE_CLEAR; another
   channel: sealed), an expired one (refused before it is sent), one with a character
   changed, then a valid one, renewed with one of another channel. */
/* A join of channel "c0", uid 0, with a token of `choice`; then token_text's bytes. */
#define TOKEN_JOIN(slot, choice) OP_CALL + C_JOIN, slot, choice, 1, 0, 1
static const uint8_t seed_tokens[] = {
    CREATE(0, K_COUNT, A_NONE), TOKEN_JOIN(0, TOKEN_V1), 1, RUN, ANSWER, RUN,
    TOKEN_JOIN(0, TOKEN_V1), 0, RUN, ANSWER, RUN, TOKEN_JOIN(0, TOKEN_OTHER_CERTIFICATE),
    HANDSHAKE, TOKEN_JOIN(0, TOKEN_OTHER_GRANT), 0, HANDSHAKE, TOKEN_JOIN(0, TOKEN_EXPIRED), 1,
    RUN, ANSWER, RUN, TOKEN_JOIN(0, TOKEN_CHANGED), 0, 100, 1, HANDSHAKE, JOIN(0), HANDSHAKE,
    OP_CALL + C_RENEW, 0, TOKEN_OTHER_GRANT, 0, RUN, ANSWER, RUN, RUN};
/* Refused at the INIT (sealed, INVALID_TOKEN), at the CONFIRM (sealed DATA, REJECTED), and
   a join asked for a cookie first. */
static const uint8_t seed_refusals[] = {
    CREATE(0, K_COUNT, A_NONE), CREATE(1, K_COUNT, A_NONE), JOIN(0), RUN, REFUSE(3), RUN, JOIN(1),
    RUN, ANSWER, RUN, REFUSE(0x85), RUN, OP_CALL + C_LEAVE, 0, JOIN(0), RUN, COOKIE, RUN, COOKIE,
    RUN, ANSWER, RUN};
/* The ACCEPT left to the input (sealed under the CONFIRM's keys), then data altered:
   a HEARTBEAT_ACK with a bit flipped, a PRESENCE twice, the ACCEPT replayed, a REFUSE_CLEAR
   for the ended attempt, a REFUSE_SEALED and a COOKIE_REPLY for it, a RESET with a wrong
   value; each must change nothing. Then a PATH_CHALLENGE and the real RESET. */
#define ACCEPT_FIELDS 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1
static const uint8_t seed_altered[] = {
    CREATE(0, K_COUNT, A_NONE), JOIN(0), RUN, ANSWER, RUN, NO_ACCEPT, RUN,
    SEND(S_ACCEPT, ACCEPT_FIELDS), RUN, FLIP(S_HEARTBEAT_ACK, 20, 3, 1, 0), RUN,
    TWICE(S_PRESENCE, PRESENCE3), RUN, REPLAY(2), RUN, FORGED(1, 0), RUN, FORGED(2, 0, 0, 3),
    FORGED(3, 0, 0), FORGED(5, 0, 4, 1), RUN, SEND(S_PATH_CHALLENGE, 1, 2, 3, 4, 5, 6, 7, 8), RUN,
    ANSWER, TWICE0(S_RESET), HANDSHAKE};
/* RESPONSEs whose ticket lasts 0 ms, then 1 ms: the CONFIRM goes once, no repeats. */
static const uint8_t seed_short_ticket[] = {CREATE(0, K_COUNT, A_NONE), JOIN(0), RUN, LIFETIME(0),
                                            RUN, RUN, ANSWER, RUN, RUN, LIFETIME(1), RUN, ANSWER,
                                            RUN};
#define SEED(name) {#name, seed_##name, sizeof seed_##name}
static const struct seed seeds[] = {
    SEED(joined), SEED(destroy_in_join), SEED(leave_in_state), SEED(destroy_other),
    SEED(presence), SEED(token_expired), SEED(rejoin), SEED(bad_arguments), SEED(tokens),
    SEED(refusals), SEED(altered), SEED(short_ticket)};

/* What fuzzing found (Fuzz/regressions/capi, each with a C test of its own), written by
   TETHER_FUZZ_WRITE_REGRESSIONS=DIR:
   - destroy-other-engine-in-callback (Tests/c/test_destroy_other.c): engine 0 destroys
     engine 1 inside its on_join_attempt, then calls on its handle;
   - log-from-inside-destroy (Tests/c/test_destroy_log.c, and test_engine.c's
     ..._destroy_beforeItsNameResolves_logsNothing): an engine whose server is a name
     ("localhost:9") leaves, then is destroyed, inside its first state change (inside the
     join), with the LEAVE nowhere to go. */
static const uint8_t log_from_inside_destroy[] = {
    OP_CREATE, 0, 0, K_STATE, A_END_DESTROY, 1, 1, 0, 2 /* "localhost:9" */, 3, 3, 3, 3, 3,
    3, 3, 3, JOIN(0), RUN, RUN};
static const struct seed regressions[] = {
    {"destroy-other-engine-in-callback", seed_destroy_other, sizeof seed_destroy_other},
    {"log-from-inside-destroy", log_from_inside_destroy, sizeof log_from_inside_destroy}};

/* ---- The profile ------------------------------------------------------------------------------ */

static const struct threshold thresholds[] = {
    {offsetof(tether_engine_config, heartbeat_interval_ms), 5},
    {offsetof(tether_engine_config, interrupted_after_ms), 20},
    {offsetof(tether_engine_config, lost_after_ms), 40},
    {offsetof(tether_engine_config, remote_offline_after_ms), 60},
    {offsetof(tether_engine_config, give_up_after_ms), 300},
    {offsetof(tether_engine_config, token_will_expire_before_ms), 5},
    {offsetof(tether_engine_config, retry_base_ms), 2},
    {offsetof(tether_engine_config, retry_cap_ms), 10}};

/* The state each reason goes with (tether.h; 17 is reserved). */
static const signed char reason_states[] = {2, 3, 4, 5, 5, 1, 5, 5, 1, 5,
                                            5, 4, 4, 4, 4, 3, 4, 0, 4, 5};

const struct profile channel_profile = {
    "engine", &api, TABLE(thresholds), &handler, K_COUNT, K_LOG, TABLE(reason_states),
    TABLE(calls), C_JOIN, C_LEAVE, prepare, callback, 1, TABLE(messages),
    TABLE(seeds), TABLE(regressions)};
