/* Regression (found by fuzz-capi): tether_engine_destroy promises "without callbacks", yet
 * the datagrams it still sends (a LEAVE queued just before it, in the same callback) called
 * on_log when the kernel refused them, after the engine was destroyed. Sends fail here for
 * sure: the test makes its own network namespace (root), where the server's route turns
 * "prohibit" once the engine is made. Without root it says so and is not counted. */
#define _GNU_SOURCE
#include <errno.h>
#include <ev.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void) {
  struct ev_loop *loop;
  tether_engine_config c;
  tether_engine_handler h;
  int failures = 0;
  if (unshare(CLONE_NEWNET) != 0) {
    printf("destroy-log: SKIPPED, not counted: needs a network namespace (%s)\n",
           strerror(errno));
    return 0;
  }
  if (system("ip link set lo up && ip route add 10.9.9.0/24 dev lo") != 0) return 1;
  loop = ev_loop_new(0);
  tether_engine_config_init(&c);
  c.app_id = "app-1";
  c.server = "10.9.9.1:9";
  tether_engine_handler_init(&h);
  h.on_log = on_log;
  h.on_join_attempt = on_attempt;
  if (tether_engine_create(loop, &c, &h, NULL, &engine) != TETHER_OK) return 1;
  if (system("ip route replace prohibit 10.9.9.0/24") != 0) return 1;
  /* The JOIN is refused by the kernel (on_log, before destroy), then on_join_attempt
     leaves and destroys. */
  if (tether_join_channel(engine, "", "lobby", 0) != TETHER_OK) failures++;
  if (!destroyed || rc_leave != TETHER_OK) failures++;
  if (logs == 0) {
    printf("FAIL: the JOIN was not refused: the test proves nothing\n");
    failures++;
  }
  if (logs_after_destroy != 0) {
    printf("FAIL: %d on_log after tether_engine_destroy\n", logs_after_destroy);
    failures++;
  }
  ev_loop_destroy(loop);
  printf("destroy-log: %s\n", failures ? "FAILED" : "no callback from inside destroy");
  return failures ? 1 : 0;
}
