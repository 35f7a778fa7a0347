// SPDX-License-Identifier: Apache-2.0
/* The login session's C ABI (tether_rtm_*), from C: every documented code of every call,
 * and the behaviour of docs/BEHAVIOUR.md section 2 against the harness's fake edge server on
 * loopback with scaled thresholds (login timeout 200 ms, interrupted 60 ms, heartbeat
 * 10 ms). One behaviour per test, named test_tether_rtm_<function>_<case>.
 * Built with -std=c99 -Wall -Wextra -Wpedantic -Werror against the Embedded library; run
 * natively, under valgrind, and under qemu for aarch64 and armv7 (threads excepted). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#ifndef TETHER_TEST_UNDER_QEMU
#include <pthread.h>
#endif

#include "harness.h"
#include "tether.h"

/* ---- What the callbacks saw ---------------------------------------------------------- */

struct seen {
  struct ev_loop *loop;
  tether_rtm_client *client;
  struct state_log changes;
  int results[16], result_count, result_at_change; /* result_at_change: changes when it came */
  int logout_results[8], logout_result_count;
  int token_expired, attempts;
  char joined[8][160], left[8][160];
  int joined_count, left_count;
  int destroy_in;      /* destroy the client inside the state callback for this state */
  int logout_in;       /* log out inside the state callback for this state */
  int after_logout;    /* callbacks after on_logout_result */
};

static void on_state(void *ctx, tether_rtm_connection_state state,
                     tether_rtm_connection_change_reason reason) {
  struct seen *s = (struct seen *)ctx;
  if (s->logout_result_count) s->after_logout++;
  log_state(&s->changes, (int)state, (int)reason);
  if (s->destroy_in == (int)state) {
    CHECK(tether_rtm_client_destroy(s->client) == 0);
    CHECK(tether_rtm_login(s->client, "t", "u") == TETHER_ERR_NOT_INITIALIZED);
    CHECK(tether_rtm_client_destroy(s->client) == 0); /* again: nothing */
    s->client = NULL;
  }
  if (s->logout_in == (int)state) {
    s->logout_in = 0;
    CHECK(tether_rtm_logout(s->client) == 0);
  }
}

static void on_login_result(void *ctx, int error) {
  struct seen *s = (struct seen *)ctx;
  if (s->result_count < 16) s->results[s->result_count] = error;
  s->result_count++;
  s->result_at_change = s->changes.count;
}

static void on_logout_result(void *ctx, int error) {
  struct seen *s = (struct seen *)ctx;
  if (s->logout_result_count < 8) s->logout_results[s->logout_result_count] = error;
  s->logout_result_count++;
}

static void on_token_expired(void *ctx) { ((struct seen *)ctx)->token_expired++; }

static void on_member_joined(void *ctx, const char *channel, const char *user) {
  struct seen *s = (struct seen *)ctx;
  if (s->joined_count < 8) snprintf(s->joined[s->joined_count], 160, "%s/%s", channel, user);
  s->joined_count++;
}

static void on_member_left(void *ctx, const char *channel, const char *user) {
  struct seen *s = (struct seen *)ctx;
  if (s->left_count < 8) snprintf(s->left[s->left_count], 160, "%s/%s", channel, user);
  s->left_count++;
}

static void on_attempt(void *ctx, uint32_t attempt, uint32_t next) {
  (void)attempt; (void)next;
  ((struct seen *)ctx)->attempts++;
}

static tether_rtm_handler handler(void) {
  tether_rtm_handler h;
  tether_rtm_handler_init(&h);
  h.on_connection_state_changed = on_state, h.on_login_attempt = on_attempt;
  h.on_login_result = on_login_result, h.on_logout_result = on_logout_result;
  h.on_token_expired = on_token_expired;
  h.on_member_joined = on_member_joined, h.on_member_left = on_member_left;
  return h;
}

/* Login timeout 200 ms, interrupted 60 ms, a heartbeat every 10 ms, retries from 10 to
   50 ms. */
static tether_rtm_config scaled_config(const char *server) {
  tether_rtm_config c = rtm_config(server);
  c.login_timeout_ms = 200, c.interrupted_after_ms = 60, c.heartbeat_interval_ms = 10;
  c.retry_base_ms = 10, c.retry_cap_ms = 50;
  return c;
}

static int connected(void *s) {
  return last_reason_is(&((struct seen *)s)->changes, TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_SUCCESS);
}
static int interrupted(void *s) {
  return last_reason_is(&((struct seen *)s)->changes, TETHER_RTM_CONNECTION_CHANGE_REASON_INTERRUPTED);
}
static int aborted(void *s) {
  return last_state_is(&((struct seen *)s)->changes, TETHER_RTM_CONNECTION_STATE_ABORTED);
}
static int disconnected(void *s) {
  const struct state_log *changes = &((struct seen *)s)->changes;
  return changes->count > 1 && last_state_is(changes, TETHER_RTM_CONNECTION_STATE_DISCONNECTED);
}
static int destroyed(void *s) { return ((struct seen *)s)->client == NULL; }
static int server_heard_the_leave(void *server) {
  return ((struct fake_server *)server)->last_operation == 2; /* the second operation */
}

/* A loop, a fake server and a client with the scaled config. */
struct rig {
  struct ev_loop *loop;
  struct fake_server server;
  struct seen seen;
};

static void rig_init(struct rig *r) {
  memset(r, 0, sizeof *r);
  r->loop = test_loop_new(&r->server);
  r->seen.loop = r->loop;
}

static int rig_create(struct rig *r) {
  tether_rtm_config c = scaled_config(r->server.address);
  tether_rtm_handler h = handler();
  return tether_rtm_client_create(r->loop, &c, &h, &r->seen, &r->seen.client);
}

static void rig_stop(struct rig *r) {
  tether_rtm_client_destroy(r->seen.client);
  test_loop_destroy(r->loop, &r->server);
}

/* A rig logged in as "alice", and the premise of every test that starts from one: the
   login succeeded, and the client went CONNECTING then CONNECTED and nothing else (an
   INTERRUPTED on the way means the machine held the loop past interrupted_after while the
   login ran: the scenario that follows is not the one the test means). A failed premise
   is said in its own words; the test fails there. */
static void rig_connect(struct rig *r) {
  const struct state_log *log = &r->seen.changes;
  rig_init(r);
  CHECK(rig_create(r) == 0);
  CHECK(tether_rtm_login(r->seen.client, login_token("alice"), "alice") == 0);
  run_until(r->loop, connected, &r->seen, 2000);
  if (connected(&r->seen) && log->count == 2 && r->seen.result_count == 1 &&
      r->seen.results[0] == TETHER_RTM_LOGIN_ERR_OK)
    return;
  printf("c-rtm: premise failed: the login was to succeed within 2000 ms with CONNECTING "
         "then CONNECTED; it took %d state changes (the last %s, %s) and %d login results\n",
         log->count, log->count ? tether_rtm_connection_state_name(log->states[log->count - 1]) : "none",
         log->count ? tether_rtm_connection_change_reason_name(log->reasons[log->count - 1]) : "none",
         r->seen.result_count);
  CHECK(connected(&r->seen) && log->count == 2);
}

/* ---- Names, config, create ------------------------------------------------------------ */

static void test_tether_rtm_names_coverEveryValue_andUnknown(void) {
  CHECK(strcmp(tether_rtm_connection_state_name(5), "ABORTED") == 0);
  CHECK(strcmp(tether_rtm_connection_state_name(0), "UNKNOWN") == 0);
  CHECK(strcmp(tether_rtm_connection_state_name(6), "UNKNOWN") == 0);
  CHECK(strcmp(tether_rtm_connection_change_reason_name(1), "LOGIN") == 0);
  CHECK(strcmp(tether_rtm_connection_change_reason_name(8), "REMOTE_LOGIN") == 0);
  CHECK(strcmp(tether_rtm_connection_change_reason_name(9), "TOKEN_EXPIRED") == 0);
  CHECK(strcmp(tether_rtm_connection_change_reason_name(10), "UNKNOWN") == 0);
  CHECK(strcmp(tether_rtm_login_error_name(TETHER_RTM_LOGIN_ERR_TOO_OFTEN), "LOGIN_ERR_TOO_OFTEN") == 0);
  CHECK(strcmp(tether_rtm_login_error_name(101), "LOGIN_ERR_NOT_INITIALIZED") == 0);
  CHECK(strcmp(tether_rtm_login_error_name(11), "UNKNOWN") == 0);
  CHECK(strcmp(tether_rtm_logout_error_name(102), "LOGOUT_ERR_NOT_LOGGED_IN") == 0);
  CHECK(strcmp(tether_rtm_logout_error_name(2), "UNKNOWN") == 0);
  /* What the login calls return is in the one error space: tether_error_name knows it. */
  CHECK(strcmp(tether_error_name(TETHER_ERR_ALREADY_LOGGED_IN), "ERR_ALREADY_LOGGED_IN") == 0);
  CHECK(strcmp(tether_error_name(TETHER_ERR_TOO_OFTEN), "ERR_TOO_OFTEN") == 0);
  CHECK(strcmp(tether_error_name(TETHER_ERR_NOT_LOGGED_IN), "ERR_NOT_LOGGED_IN") == 0);
  for (int state = 1; state <= 5; state++)
    CHECK(strcmp(tether_rtm_connection_state_name(state), "UNKNOWN") != 0);
  for (int reason = 1; reason <= 9; reason++)
    CHECK(strcmp(tether_rtm_connection_change_reason_name(reason), "UNKNOWN") != 0);
}

static void test_tether_rtm_config_init_setsDefaults_andNullIsANoOp(void) {
  tether_rtm_config c;
  memset(&c, 0xAB, sizeof c);
  tether_rtm_config_init(&c);
  CHECK(c.size == sizeof c);
  CHECK(c.app_id == NULL && c.server == NULL);
  CHECK(c.login_timeout_ms == 6000 && c.interrupted_after_ms == 4000);
  CHECK(c.heartbeat_interval_ms == 1000 && c.retry_base_ms == 500 && c.retry_cap_ms == 8000);
  CHECK(c.own_lateness_off == 0);
  tether_rtm_config_init(NULL);
  tether_rtm_handler h;
  memset(&h, 0xAB, sizeof h);
  tether_rtm_handler_init(&h);
  CHECK(h.size == sizeof h && h.on_login_result == NULL && h.on_login_attempt == NULL);
  tether_rtm_handler_init(NULL);
}

static void test_tether_rtm_client_create_refusesBadArguments(void) {
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  tether_rtm_client *client = (tether_rtm_client *)1;
  tether_rtm_config c = scaled_config("127.0.0.1:9");
  tether_rtm_handler h = handler();
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, NULL) == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(tether_rtm_client_create(loop, NULL, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(client == NULL);
  c.size = 4;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config("127.0.0.1:9");
  c.app_id = "has space";
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_APP_ID);
  c.app_id = NULL;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_APP_ID);
  c = scaled_config("127.0.0.1:9");
  c.login_timeout_ms = 0;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config("127.0.0.1:9");
  c.heartbeat_interval_ms = c.interrupted_after_ms;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config("127.0.0.1:9");
  c.retry_cap_ms = 5;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config("127.0.0.1:9");
  c.own_lateness_off = 2;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config("127.0.0.1");
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config(NULL);
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  c = scaled_config("127.0.0.1:9");
  h.size = 0;
  CHECK(tether_rtm_client_create(loop, &c, &h, NULL, &client) == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK(tether_rtm_client_create(loop, &c, NULL, NULL, &client) == 0);
  CHECK(client != NULL);
  CHECK(tether_rtm_client_destroy(client) == 0);
  CHECK(tether_rtm_client_destroy(NULL) == 0);
  ev_loop_destroy(loop);
}

static void test_tether_rtm_calls_onNullHandle_returnNotInitialized(void) {
  tether_connection_stats stats;
  stats.size = sizeof stats;
  CHECK(tether_rtm_login(NULL, "t", "u") == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_logout(NULL) == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_join_channel(NULL, "c") == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_leave_channel(NULL, "c") == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_renew_token(NULL, "t") == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_network_changed(NULL) == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_client_get_stats(NULL, &stats) == TETHER_ERR_NOT_INITIALIZED);
  CHECK(tether_rtm_get_connection_state(NULL) == TETHER_RTM_CONNECTION_STATE_DISCONNECTED);
}

/* ---- Call rules ------------------------------------------------------------------------ */

static void test_tether_rtm_login_refusesOnTheSpot_everyCode(void) {
  struct rig r;
  rig_init(&r);
  CHECK(rig_create(&r) == 0);
  tether_rtm_client *c = r.seen.client;
  CHECK(tether_rtm_login(c, NULL, "alice") == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(tether_rtm_login(c, "t", NULL) == TETHER_ERR_INVALID_ARGUMENT);
  /* A third call within a second, whatever the arguments. */
  CHECK(tether_rtm_login(c, "t", "has space") == TETHER_ERR_TOO_OFTEN);
  CHECK(r.seen.changes.count == 0 && r.server.logins == 0);
  ev_sleep(1.05);
  ev_now_update(r.loop);
  CHECK(tether_rtm_login(c, "t", "has space") == TETHER_ERR_INVALID_ARGUMENT);
  char long_id[70];
  memset(long_id, 'x', 65);
  long_id[65] = 0;
  CHECK(tether_rtm_login(c, "t", long_id) == TETHER_ERR_INVALID_ARGUMENT);
  ev_sleep(1.05);
  ev_now_update(r.loop);
  CHECK(tether_rtm_login(c, "tok en", "alice") == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(tether_rtm_login(c, login_token("alice"), "alice") == 0);
  ev_sleep(1.05);
  ev_now_update(r.loop);
  CHECK(tether_rtm_login(c, login_token("alice"), "alice") == TETHER_ERR_ALREADY_LOGGED_IN);
  CHECK(r.seen.changes.count == 1);
  rig_stop(&r);
}

static void test_tether_rtm_logout_whenDisconnected_isNotLoggedIn(void) {
  struct rig r;
  rig_init(&r);
  CHECK(rig_create(&r) == 0);
  CHECK(tether_rtm_logout(r.seen.client) == TETHER_ERR_NOT_LOGGED_IN);
  CHECK(r.seen.changes.count == 0 && r.seen.logout_result_count == 0);
  rig_stop(&r);
}

static void test_tether_rtm_channels_refuseBadInput_andOutOfState(void) {
  struct rig r;
  rig_init(&r);
  CHECK(rig_create(&r) == 0);
  tether_rtm_client *c = r.seen.client;
  CHECK(tether_rtm_join_channel(c, "lobby") == TETHER_ERR_NOT_READY);
  CHECK(tether_rtm_join_channel(c, NULL) == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(tether_rtm_join_channel(c, "bad*name") == TETHER_ERR_INVALID_CHANNEL_NAME);
  CHECK(tether_rtm_join_channel(c, "") == TETHER_ERR_INVALID_CHANNEL_NAME);
  CHECK(tether_rtm_renew_token(c, "t") == TETHER_ERR_NOT_READY);
  CHECK(tether_rtm_renew_token(c, NULL) == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(tether_rtm_login(c, login_token("alice"), "alice") == 0);
  CHECK(tether_rtm_join_channel(c, "lobby") == 0);
  CHECK(tether_rtm_join_channel(c, "lobby") == TETHER_ERR_JOIN_CHANNEL_REJECTED);
  CHECK(tether_rtm_leave_channel(c, "other") == TETHER_ERR_NOT_READY);
  CHECK(tether_rtm_renew_token(c, "bad token") == TETHER_ERR_INVALID_TOKEN);
  rig_stop(&r);
}

/* ---- Behaviour -------------------------------------------------------------------------- */

static void test_tether_rtm_login_connects_resultBeforeTheStateChange(void) {
  struct rig r;
  rig_connect(&r);
  CHECK(r.seen.changes.count == 2);
  CHECK(r.seen.changes.states[0] == TETHER_RTM_CONNECTION_STATE_CONNECTING);
  CHECK(r.seen.changes.reasons[0] == TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN);
  CHECK(r.seen.changes.states[1] == TETHER_RTM_CONNECTION_STATE_CONNECTED);
  CHECK(r.seen.result_count == 1 && r.seen.results[0] == TETHER_RTM_LOGIN_ERR_OK);
  CHECK(r.seen.result_at_change == 1); /* before CONNECTED */
  /* A slow run (valgrind) may retry once before the answer arrives. */
  CHECK(r.server.logins >= 1 && r.seen.attempts >= 1);
  CHECK(tether_rtm_get_connection_state(r.seen.client) == TETHER_RTM_CONNECTION_STATE_CONNECTED);
  run_until_count(r.loop, &r.server.heartbeats, 4, 2000);
  CHECK(r.server.heartbeats >= 4);
  CHECK(connected(&r.seen));
  rig_stop(&r);
}

static void test_tether_rtm_login_refused_reportsTheCode_thenLoginFailure(void) {
  struct rig r;
  rig_init(&r);
  r.server.refuse_code = TETHER_RTM_LOGIN_ERR_INVALID_TOKEN;
  CHECK(rig_create(&r) == 0);
  CHECK(tether_rtm_login(r.seen.client, login_token("alice"), "alice") == 0);
  run_until(r.loop, disconnected, &r.seen, 2000);
  CHECK(r.seen.result_count == 1 && r.seen.results[0] == TETHER_RTM_LOGIN_ERR_INVALID_TOKEN);
  CHECK(last_reason_is(&r.seen.changes, TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_FAILURE));
  rig_stop(&r);
}

static void test_tether_rtm_login_timesOut_whenNothingAnswers(void) {
  struct rig r;
  rig_init(&r);
  r.server.silent = 1;
  CHECK(rig_create(&r) == 0);
  CHECK(tether_rtm_login(r.seen.client, login_token("alice"), "alice") == 0);
  run_until(r.loop, disconnected, &r.seen, 3000);
  CHECK(r.seen.result_count == 1 && r.seen.results[0] == TETHER_RTM_LOGIN_ERR_TIMEOUT);
  CHECK(last_reason_is(&r.seen.changes, TETHER_RTM_CONNECTION_CHANGE_REASON_LOGIN_TIMEOUT));
  CHECK(r.server.logins >= 2); /* retried before giving up */
  rig_stop(&r);
}

static void test_tether_rtm_interrupted_thenBack_withoutASecondLoginResult(void) {
  struct rig r;
  rig_connect(&r);
  r.server.silent = 1;
  run_until(r.loop, interrupted, &r.seen, 2000);
  CHECK(interrupted(&r.seen));
  CHECK(last_state_is(&r.seen.changes, TETHER_RTM_CONNECTION_STATE_RECONNECTING));
  run_until_count(r.loop, &r.server.relogins, 2, 2000);
  CHECK(r.server.relogins >= 2);
  CHECK(interrupted(&r.seen)); /* no FAILED: reconnecting goes on */
  r.server.silent = 0;
  run_until(r.loop, connected, &r.seen, 2000);
  CHECK(connected(&r.seen));
  CHECK(r.seen.result_count == 1);
  rig_stop(&r);
}

static void test_tether_rtm_remoteLogin_aborts_thenOnlyLogoutThenLogin(void) {
  struct rig r;
  rig_connect(&r);
  fake_push_kick(&r.server, 3);
  run_until(r.loop, aborted, &r.seen, 2000);
  CHECK(last_reason_is(&r.seen.changes, TETHER_RTM_CONNECTION_CHANGE_REASON_REMOTE_LOGIN));
  CHECK(tether_rtm_login(r.seen.client, login_token("alice"), "alice") == TETHER_ERR_ALREADY_LOGGED_IN);
  CHECK(tether_rtm_join_channel(r.seen.client, "lobby") == TETHER_ERR_NOT_READY);
  CHECK(tether_rtm_logout(r.seen.client) == 0);
  CHECK(last_reason_is(&r.seen.changes, TETHER_RTM_CONNECTION_CHANGE_REASON_LOGOUT));
  CHECK(r.seen.logout_result_count == 1 && r.seen.logout_results[0] == TETHER_RTM_LOGOUT_ERR_OK);
  run_until(r.loop, NULL, &r.seen, 30);
  CHECK(r.server.logout_datagrams == 0); /* the server had ended it already */
  CHECK(tether_rtm_logout(r.seen.client) == TETHER_ERR_NOT_LOGGED_IN);
  ev_sleep(1.05); /* TOO_OFTEN counts the first login's call too */
  ev_now_update(r.loop);
  CHECK(tether_rtm_login(r.seen.client, login_token("alice"), "alice") == 0);
  run_until(r.loop, connected, &r.seen, 2000);
  CHECK(connected(&r.seen));
  rig_stop(&r);
}

static void test_tether_rtm_banned_aborts(void) {
  struct rig r;
  rig_connect(&r);
  fake_push_kick(&r.server, 1);
  run_until(r.loop, aborted, &r.seen, 2000);
  CHECK(last_reason_is(&r.seen.changes, TETHER_RTM_CONNECTION_CHANGE_REASON_BANNED_BY_SERVER));
  rig_stop(&r);
}

static void test_tether_rtm_logout_sendsLogout_andNothingComesAfter(void) {
  struct rig r;
  rig_connect(&r);
  CHECK(tether_rtm_join_channel(r.seen.client, "lobby") == 0);
  CHECK(tether_rtm_logout(r.seen.client) == 0);
  CHECK(r.seen.logout_result_count == 1);
  run_until_count(r.loop, &r.server.logout_datagrams, 2, 2000);
  CHECK(r.server.logout_datagrams == 2);
  CHECK(r.seen.after_logout == 0);
  CHECK(tether_rtm_get_connection_state(r.seen.client) == TETHER_RTM_CONNECTION_STATE_DISCONNECTED);
  rig_stop(&r);
}

static void test_tether_rtm_channelOperations_reachTheServer_andMemberEventsComeBack(void) {
  struct rig r;
  rig_connect(&r);
  CHECK(tether_rtm_join_channel(r.seen.client, "lobby") == 0);
  run_until_count(r.loop, &r.server.operations, 1, 2000);
  CHECK(r.server.operations >= 1 && r.server.last_operation == 1);
  CHECK(r.server.last_operation_kind == 1 && strcmp(r.server.last_channel, "lobby") == 0);
  fake_push_member_event(&r.server, 1, 1, "lobby", "bob");
  fake_push_member_event(&r.server, 1, 1, "lobby", "bob"); /* a repeat */
  fake_push_member_event(&r.server, 2, 2, "lobby", "bob");
  run_until_count(r.loop, &r.seen.joined_count, 1, 2000);
  run_until_count(r.loop, &r.seen.left_count, 1, 2000);
  /* Its next heartbeats say it took both. */
  run_until_count(r.loop, &r.server.events_received, 2, 2000);
  CHECK(r.seen.joined_count == 1 && strcmp(r.seen.joined[0], "lobby/bob") == 0);
  CHECK(r.seen.left_count == 1 && strcmp(r.seen.left[0], "lobby/bob") == 0);
  CHECK(r.server.events_received == 2);
  CHECK(tether_rtm_leave_channel(r.seen.client, "lobby") == 0);
  run_until(r.loop, server_heard_the_leave, &r.server, 2000);
  CHECK(r.server.last_operation == 2 && r.server.last_operation_kind == 2);
  rig_stop(&r);
}

static void test_tether_rtm_destroy_insideACallback_isSafe(void) {
  struct rig r;
  rig_init(&r);
  r.seen.destroy_in = TETHER_RTM_CONNECTION_STATE_CONNECTED;
  CHECK(rig_create(&r) == 0);
  CHECK(tether_rtm_login(r.seen.client, login_token("alice"), "alice") == 0);
  run_until(r.loop, destroyed, &r.seen, 2000);
  CHECK(r.seen.client == NULL);
  CHECK(r.seen.changes.count == 2);
  rig_stop(&r);
}

static void test_tether_rtm_logout_insideACallback_dropsWhatWasQueued(void) {
  struct rig r;
  rig_init(&r);
  r.seen.logout_in = TETHER_RTM_CONNECTION_STATE_CONNECTING;
  CHECK(rig_create(&r) == 0);
  CHECK(tether_rtm_login(r.seen.client, login_token("alice"), "alice") == 0);
  run_until(r.loop, NULL, &r.seen, 60);
  /* CONNECTING, then the logout's own: login result UNKNOWN, DISCONNECTED/LOGOUT, result. */
  CHECK(r.seen.changes.count == 2);
  CHECK(last_reason_is(&r.seen.changes, TETHER_RTM_CONNECTION_CHANGE_REASON_LOGOUT));
  CHECK(r.seen.result_count == 1 && r.seen.results[0] == TETHER_RTM_LOGIN_ERR_UNKNOWN);
  CHECK(r.seen.logout_result_count == 1 && r.seen.after_logout == 0);
  rig_stop(&r);
}

static void test_tether_rtm_stats_countTraffic(void) {
  struct rig r;
  rig_connect(&r);
  run_until(r.loop, NULL, &r.seen, 50);
  tether_connection_stats stats;
  stats.size = sizeof stats;
  CHECK(tether_rtm_client_get_stats(r.seen.client, &stats) == 0);
  CHECK(stats.datagrams_in >= 2 && stats.datagrams_out >= 2 && stats.join_attempts >= 1);
  CHECK(stats.deadlines_fired >= 1 && stats.loop_engines == 1);
  CHECK(stats.lateness_max_us >= 1); /* rounded up: a deadline that ran is at least 1 us late */
  uint64_t fired = stats.deadlines_fired;
  CHECK(tether_rtm_client_reset_lateness(r.seen.client) == 0);
  CHECK(tether_rtm_client_get_stats(r.seen.client, &stats) == 0);
  CHECK(stats.lateness_max_us == 0 && stats.loop_lateness_max_us == 0);
  CHECK(stats.deadlines_fired == fired);
  CHECK(tether_rtm_client_reset_lateness(NULL) == TETHER_ERR_NOT_INITIALIZED);
  stats.size = 4;
  CHECK(tether_rtm_client_get_stats(r.seen.client, &stats) == TETHER_ERR_INVALID_ARGUMENT);
  CHECK(tether_rtm_client_get_stats(r.seen.client, NULL) == TETHER_ERR_INVALID_ARGUMENT);
  rig_stop(&r);
}

static void test_tether_rtm_clientAndEngine_shareOneLoop(void) {
  struct rig r;
  rig_connect(&r);
  tether_engine_config ec = engine_config(r.server.address);
  tether_engine *engine = NULL;
  CHECK(tether_engine_create(r.loop, &ec, NULL, NULL, &engine) == 0);
  tether_engine_stats stats;
  stats.size = sizeof stats;
  CHECK(tether_engine_get_stats(engine, &stats) == 0);
  CHECK(stats.loop_engines == 2);
  tether_engine_destroy(engine);
  run_until(r.loop, NULL, &r.seen, 50);
  CHECK(connected(&r.seen));
  rig_stop(&r);
}

#ifndef TETHER_TEST_UNDER_QEMU
struct thread_calls {
  tether_rtm_client *client;
  int login, logout, join, destroy, state;
};

static void *call_from_another_thread(void *arg) {
  struct thread_calls *t = (struct thread_calls *)arg;
  t->login = tether_rtm_login(t->client, "t", "u");
  t->logout = tether_rtm_logout(t->client);
  t->join = tether_rtm_join_channel(t->client, "lobby");
  t->state = (int)tether_rtm_get_connection_state(t->client);
  t->destroy = tether_rtm_client_destroy(t->client); /* refused: nothing happens */
  return NULL;
}

static void test_tether_rtm_calls_fromAnotherThread_areRefused(void) {
  struct rig r;
  rig_connect(&r);
  struct thread_calls t;
  memset(&t, 0, sizeof t);
  t.client = r.seen.client;
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, call_from_another_thread, &t) == 0);
  pthread_join(thread, NULL);
  CHECK(t.login == TETHER_ERR_WRONG_THREAD);
  CHECK(t.logout == TETHER_ERR_WRONG_THREAD);
  CHECK(t.join == TETHER_ERR_WRONG_THREAD && t.destroy == TETHER_ERR_WRONG_THREAD);
  CHECK(t.state == TETHER_RTM_CONNECTION_STATE_DISCONNECTED);
  CHECK(connected(&r.seen));
  rig_stop(&r);
}
#endif

int main(void) {
  RUN(test_tether_rtm_names_coverEveryValue_andUnknown);
  RUN(test_tether_rtm_config_init_setsDefaults_andNullIsANoOp);
  RUN(test_tether_rtm_client_create_refusesBadArguments);
  RUN(test_tether_rtm_calls_onNullHandle_returnNotInitialized);
  RUN(test_tether_rtm_login_refusesOnTheSpot_everyCode);
  RUN(test_tether_rtm_logout_whenDisconnected_isNotLoggedIn);
  RUN(test_tether_rtm_channels_refuseBadInput_andOutOfState);
  RUN(test_tether_rtm_login_connects_resultBeforeTheStateChange);
  RUN(test_tether_rtm_login_refused_reportsTheCode_thenLoginFailure);
  RUN(test_tether_rtm_login_timesOut_whenNothingAnswers);
  RUN(test_tether_rtm_interrupted_thenBack_withoutASecondLoginResult);
  RUN(test_tether_rtm_remoteLogin_aborts_thenOnlyLogoutThenLogin);
  RUN(test_tether_rtm_banned_aborts);
  RUN(test_tether_rtm_logout_sendsLogout_andNothingComesAfter);
  RUN(test_tether_rtm_channelOperations_reachTheServer_andMemberEventsComeBack);
  RUN(test_tether_rtm_destroy_insideACallback_isSafe);
  RUN(test_tether_rtm_logout_insideACallback_dropsWhatWasQueued);
  RUN(test_tether_rtm_stats_countTraffic);
  RUN(test_tether_rtm_clientAndEngine_shareOneLoop);
#ifndef TETHER_TEST_UNDER_QEMU
  RUN(test_tether_rtm_calls_fromAnotherThread_areRefused);
  return harness_report("c-rtm", NULL);
#else
  return harness_report("c-rtm", "1 skipped: a second thread, which qemu-user lacks");
#endif
}
