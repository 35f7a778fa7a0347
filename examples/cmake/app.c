// SPDX-License-Identifier: Apache-2.0
/* app.c - a C host of Tether built with CMake (examples/cmake/CMakeLists.txt).
 *
 * Checks that the library it linked is the one its header describes, then joins a channel
 * on a server that does not answer, and after 100 ms leaves: it must have seen
 * CONNECTING/CONNECTING and then DISCONNECTED/LEAVE_CHANNEL. Exits 0 and prints "ok" when
 * all of that held. Usage: tether-app [HOST:PORT [TOKEN]] (default 127.0.0.1:9, nothing
 * there, and the token below). */
#include <ev.h>
#include <stdio.h>

#include <tether.h>

/* A protocol version 2 token for "lobby", uid 7, that never expires, printed by
   `tether-edge token --app-id cmake-app --app-certificate cmake-example-certificate
   --channel lobby --uid 7 --expire-seconds 0`. The library reads its public part (a text
   that is not a token is refused at once, INVALID_TOKEN); only an edge with that
   certificate could open the rest. A real app gets its tokens from its app server, over
   TLS, and never logs them. */
static const char example_token[] =
    "2.AgyhAAAAAAAAAABE18M0nPxUHDKEBmR9d3sItmSd7_tZcnWpdKg-4pMqpyadRi92QKDgXPsL5IzHD1"
    "YaXHuxy5xEedAT6lahDPb1UjRKQHzUaoh9juxyscxTzezDg3kaLQPsPLkbWimR2ytdjIWKcGTU4fd2u1"
    "cLp2tjkxXea_lGxeH-Ok9B61syvy_7kuD23PB33wb3m20dNeFDzDfA7GcpOITL_BOsIXsTbCssuZyYsr"
    "cF-54-0e7uSCLJ9i9uGahKCSSNdIzfZvgJt7Ua7F4fgxrj0D95tnZEcTcuw02xSvbAHdXGn7SBRac7i4"
    "GtFcOy9WW4bm0CcEg";

struct app {
  tether_engine *engine;
  int connecting;
  int left;
};

static void on_state(void *ctx, tether_connection_state state, tether_connection_changed_reason why) {
  struct app *app = (struct app *)ctx;
  printf("state %s / %s\n", tether_connection_state_name(state),
         tether_connection_changed_reason_name(why));
  if (state == TETHER_CONNECTION_STATE_CONNECTING) app->connecting = 1;
  if (state == TETHER_CONNECTION_STATE_DISCONNECTED && why == TETHER_CONNECTION_CHANGED_LEAVE_CHANNEL)
    app->left = 1;
}

static void on_timer(struct ev_loop *loop, ev_timer *timer, int revents) {
  struct app *app = (struct app *)timer->data;
  (void)revents;
  tether_leave_channel(app->engine);
  ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv) {
  const uint32_t header = (TETHER_VERSION_MAJOR << 16) | (TETHER_VERSION_MINOR << 8) | TETHER_VERSION_PATCH;
  struct app app = {NULL, 0, 0};
  tether_engine_config config;
  tether_engine_handler handler;
  ev_timer timer;
  int rc;

  printf("tether %u.%u.%u (header %u.%u.%u)\n", (unsigned)(tether_version() >> 16),
         (unsigned)((tether_version() >> 8) & 0xff), (unsigned)(tether_version() & 0xff),
         TETHER_VERSION_MAJOR, TETHER_VERSION_MINOR, TETHER_VERSION_PATCH);
  if (tether_version() != header) return 1;

  tether_engine_config_init(&config);
  config.app_id = "cmake-app";
  config.server = argc > 1 ? argv[1] : "127.0.0.1:9";
  tether_engine_handler_init(&handler);
  handler.on_connection_state_changed = on_state;
  rc = tether_engine_create(NULL, &config, &handler, &app, &app.engine);
  if (rc != TETHER_OK) {
    printf("tether_engine_create: %s\n", tether_error_name(rc));
    return 1;
  }
  rc = tether_join_channel(app.engine, argc > 2 ? argv[2] : example_token, "lobby", 7);
  if (rc != TETHER_OK) {
    printf("tether_join_channel: %s\n", tether_error_name(rc));
    return 1;
  }
  ev_timer_init(&timer, on_timer, 0.1, 0.0);
  timer.data = &app;
  ev_timer_start(EV_DEFAULT, &timer);
  ev_run(EV_DEFAULT, 0);
  tether_engine_destroy(app.engine);
  if (!app.connecting || !app.left) {
    printf("missing a state change (connecting %d, left %d)\n", app.connecting, app.left);
    return 1;
  }
  printf("ok\n");
  return 0;
}
