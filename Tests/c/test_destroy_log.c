// SPDX-License-Identifier: Apache-2.0
/* Regression (found by fuzz-capi): tether_engine_destroy promises "without callbacks", yet
 * the datagrams it still sends (a LEAVE queued just before it, in the same callback) called
 * on_log when the kernel refused them, after the engine was destroyed. Sends fail here for
 * sure: the test makes its own network namespace (root), where the server's route turns
 * "prohibit" once the engine is made. Without root it says so and is not counted. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tether.h"

static tether_engine *engine;
static int destroyed, logs, logs_after_destroy, rc_leave;

static void on_log(void *ctx, tether_log_level level, const char *message) {
  (void)ctx; (void)level; (void)message;
  logs++;
  if (destroyed) logs_after_destroy++;
}

static void on_attempt(void *ctx, uint32_t attempt, uint32_t next_ms, uint32_t give_up_ms) {
  (void)ctx; (void)attempt; (void)next_ms; (void)give_up_ms;
  if (destroyed) return;
  rc_leave = tether_leave_channel(engine); /* its LEAVE goes out at destroy */
  destroyed = 1;
  tether_engine_destroy(engine);
}

static void test_tether_engine_destroy_callsNoOnLog_forTheLeaveItSends(void) {
  struct ev_loop *loop;
  tether_engine_config c = engine_config("10.9.9.1:9");
  tether_engine_handler h;
  CHECK(system("ip link set lo up && ip route add 10.9.9.0/24 dev lo") == 0);
  loop = ev_loop_new(0);
  tether_engine_handler_init(&h);
  h.on_log = on_log;
  h.on_join_attempt = on_attempt;
  CHECK(tether_engine_create(loop, &c, &h, NULL, &engine) == TETHER_OK);
  CHECK(system("ip route replace prohibit 10.9.9.0/24") == 0);
  /* The JOIN is refused by the kernel (on_log, before destroy), then on_join_attempt
     leaves and destroys. */
  CHECK(tether_join_channel(engine, channel_token("lobby", 0), "lobby", 0) == TETHER_OK);
  CHECK(destroyed && rc_leave == TETHER_OK);
  CHECK(logs > 0); /* the JOIN was refused: otherwise the test proves nothing */
  CHECK(logs_after_destroy == 0);
  ev_loop_destroy(loop);
}

int main(void) {
  static char why[80];
  if (unshare(CLONE_NEWNET) != 0) {
    snprintf(why, sizeof why, "needs a network namespace (%s)", strerror(errno));
    return harness_skip("destroy-log", why);
  }
  RUN(test_tether_engine_destroy_callsNoOnLog_forTheLeaveItSends);
  return harness_report("destroy-log", NULL);
}
