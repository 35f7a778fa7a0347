// SPDX-License-Identifier: Apache-2.0
/* The smallest Tether host: join "lobby" and print every state change. */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <tether.h>

static void on_state(void *ctx, tether_connection_state state, tether_connection_changed_reason why) {
  (void)ctx;
  printf("%s / %s\n", tether_connection_state_name(state), tether_connection_changed_reason_name(why));
}

int main(void) {
  tether_engine_config config;
  tether_engine_handler handler;
  tether_engine *engine;
  tether_engine_config_init(&config);
  config.app_id = "demo-app";
  config.server = "127.0.0.1:7000";
  tether_engine_handler_init(&handler);
  handler.on_connection_state_changed = on_state;
  if (tether_engine_create(NULL, &config, &handler, NULL, &engine) != TETHER_OK) return 1;
  tether_join_channel(engine, getenv("TETHER_TOKEN"), "lobby", 0);
  ev_run(EV_DEFAULT, 0); /* every callback comes from inside ev_run */
  tether_engine_destroy(engine);
  return 0;
}
