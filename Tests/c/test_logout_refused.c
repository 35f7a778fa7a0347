// SPDX-License-Identifier: Apache-2.0
/* Regression (found by fuzz-rtm): a tether_rtm_logout refused with NOT_LOGGED_IN inside a
 * callback dropped the callbacks already queued. tether.h: a refused logout changes
 * nothing, and a logout that returned 0 is followed by DISCONNECTED/LOGOUT and
 * on_logout_result. Here the host logs out while CONNECTING; the login result still owed
 * (UNKNOWN) comes first, inside that logout; the host calls logout again inside
 * on_login_result, already DISCONNECTED (TETHER_ERR_NOT_LOGGED_IN). The outer logout's DISCONNECTED/LOGOUT and
 * on_logout_result never came: the refused inner call had silenced them. Run under
 * valgrind by make fuzz-replay (make test). */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

static tether_rtm_client *client;
static int results, result_code = -1, inner_logout = 1, logout_results;
static struct state_log changes;

static void on_state(void *ctx, tether_rtm_connection_state s, tether_rtm_connection_change_reason r) {
  (void)ctx;
  log_state(&changes, (int)s, (int)r);
}
static void on_login_result(void *ctx, int error) {
  (void)ctx;
  results++;
  result_code = error;
  inner_logout = tether_rtm_logout(client); /* already DISCONNECTED: refused */
}
static void on_logout_result(void *ctx, int error) {
  (void)ctx;
  if (error == TETHER_RTM_LOGOUT_ERR_OK) logout_results++;
}

static void test_tether_rtm_logout_refusedInsideACallback_keepsTheOuterLogoutsCallbacks(void) {
  struct fake_server server;
  struct ev_loop *loop = test_loop_new(&server);
  tether_rtm_config config = rtm_config(server.address);
  tether_rtm_handler handler;
  server.silent = 1; /* the login stays CONNECTING */
  tether_rtm_handler_init(&handler);
  handler.on_connection_state_changed = on_state;
  handler.on_login_result = on_login_result;
  handler.on_logout_result = on_logout_result;
  CHECK(tether_rtm_client_create(loop, &config, &handler, NULL, &client) == 0);
  CHECK(tether_rtm_login(client, login_token("alice"), "alice") == 0);
  ev_run(loop, EVRUN_NOWAIT);
  CHECK(tether_rtm_get_connection_state(client) == TETHER_RTM_CONNECTION_STATE_CONNECTING);

  CHECK(tether_rtm_logout(client) == 0);
  CHECK(results == 1 && result_code == TETHER_RTM_LOGIN_ERR_UNKNOWN);
  CHECK(inner_logout == TETHER_ERR_NOT_LOGGED_IN);
  /* CONNECTING/LOGIN, then the outer logout's DISCONNECTED/LOGOUT and its result. */
  CHECK(changes.count == 2);
  CHECK(changes.states[1] == TETHER_RTM_CONNECTION_STATE_DISCONNECTED &&
        changes.reasons[1] == TETHER_RTM_CONNECTION_CHANGE_REASON_LOGOUT);
  CHECK(logout_results == 1);
  CHECK(tether_rtm_get_connection_state(client) == TETHER_RTM_CONNECTION_STATE_DISCONNECTED);

  tether_rtm_client_destroy(client);
  test_loop_destroy(loop, &server);
}

ONE_CASE_MAIN("logout-refused",
              test_tether_rtm_logout_refusedInsideACallback_keepsTheOuterLogoutsCallbacks, NULL)
