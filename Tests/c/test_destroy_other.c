// SPDX-License-Identifier: Apache-2.0
/* Regression (found by fuzz-capi): tether_engine_destroy on one engine inside a callback of
 * ANOTHER engine of the same loop. tether.h promises that the destroyed engine's memory is
 * released when the callback returns, and that until then every call on its handle returns
 * TETHER_ERR_NOT_INITIALIZED. The engine used to be freed at once, so those calls read
 * freed memory (valgrind: invalid read; AddressSanitizer: heap-use-after-free). Run under
 * valgrind by make test. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

static tether_engine *first, *second;
static int acted, rc_leave, rc_join, rc_renew, state_after, rc_destroy, rc_again;

static void on_attempt(void *ctx, uint32_t attempt, uint32_t next_ms, uint32_t give_up_ms) {
  (void)ctx; (void)attempt; (void)next_ms; (void)give_up_ms;
  if (acted || !second) return;
  acted = 1;
  rc_destroy = tether_engine_destroy(second); /* another engine than the one calling back */
  rc_leave = tether_leave_channel(second);
  rc_join = tether_join_channel(second, channel_token("lobby", 0), "lobby", 0);
  rc_renew = tether_renew_token(second, "t");
  state_after = (int)tether_get_connection_state(second);
  rc_again = tether_engine_destroy(second); /* a no-op */
  second = NULL;
}

static void test_tether_engine_destroy_insideAnotherEnginesCallback_liveUntilItReturns(void) {
  struct fake_server srv;
  struct ev_loop *loop = test_loop_new(&srv);
  tether_engine_config c = engine_config(srv.address);
  tether_engine_handler with_callback, without;
  srv.silent = 1;
  tether_engine_handler_init(&with_callback);
  with_callback.on_join_attempt = on_attempt;
  tether_engine_handler_init(&without);
  CHECK(tether_engine_create(loop, &c, &with_callback, NULL, &first) == TETHER_OK);
  CHECK(tether_engine_create(loop, &c, &without, NULL, &second) == TETHER_OK);
  CHECK(tether_join_channel(second, channel_token("lobby", 0), "lobby", 0) == TETHER_OK);
  CHECK(tether_join_channel(first, channel_token("lobby", 0), "lobby", 0) == TETHER_OK); /* on_join_attempt */
  ev_run(loop, EVRUN_NOWAIT);
  CHECK(acted);
  CHECK(rc_leave == TETHER_ERR_NOT_INITIALIZED);
  CHECK(rc_join == TETHER_ERR_NOT_INITIALIZED);
  CHECK(rc_renew == TETHER_ERR_NOT_INITIALIZED);
  CHECK(state_after == TETHER_CONNECTION_STATE_DISCONNECTED);
  CHECK(rc_destroy == TETHER_OK && rc_again == TETHER_OK);
  CHECK(tether_get_connection_state(first) == TETHER_CONNECTION_STATE_CONNECTING);
  tether_engine_destroy(first);
  test_loop_destroy(loop, &srv);
}

ONE_CASE_MAIN("destroy-other",
              test_tether_engine_destroy_insideAnotherEnginesCallback_liveUntilItReturns, NULL)
