// SPDX-License-Identifier: Apache-2.0
/* device.c - a firmware-like host of Tether: joins a channel through an edge server and
 * prints every callback with a CLOCK_MONOTONIC timestamp, until SIGINT or SIGTERM, which
 * leave the channel cleanly. Build against an installed Tether:
 *
 *   cc -std=c99 -o device examples/device.c $(pkg-config --cflags --libs tether)
 *
 * Usage: device --server HOST:PORT --app-id ID --channel NAME [--uid N] [--token TOKEN]
 *               [--scale F] [--renew-token TOKEN] [--switch-server HOST:PORT]
 *   --scale F          multiply every threshold by F (0.01: interrupted after 40 ms ...)
 *   --renew-token T    answer on_request_token with tether_renew_token(T)
 *   --switch-server A  on SIGUSR2, move to endpoint A (tether_set_server)
 *   SIGUSR1            report a network change (tether_network_changed)
 * Output: one line per event, "<CLOCK_MONOTONIC seconds, to the microsecond> <event> <details>". */
#define _POSIX_C_SOURCE 200809L
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

struct device {
  struct ev_loop *loop;
  tether_engine *engine;
  const char *renew_token;
  const char *switch_server;
};

/* The time every line starts with: CLOCK_MONOTONIC seconds (printed to the microsecond). */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_state(void *ctx, tether_connection_state state,
                     tether_connection_changed_reason reason) {
  (void)ctx;
  printf("%.6f state %s %s\n", now(), tether_connection_state_name((int)state),
         tether_connection_changed_reason_name((int)reason));
}
static void on_join(void *ctx, const char *channel, uint32_t uid, uint32_t elapsed_ms) {
  (void)ctx;
  printf("%.6f join-success channel=%s uid=%u elapsed=%u\n", now(), channel, uid, elapsed_ms);
}
static void on_rejoin(void *ctx, const char *channel, uint32_t uid, uint32_t elapsed_ms) {
  (void)ctx;
  printf("%.6f rejoin-success channel=%s uid=%u elapsed=%u\n", now(), channel, uid, elapsed_ms);
}
static void on_lost(void *ctx) {
  (void)ctx;
  printf("%.6f connection-lost\n", now());
}
static void on_leave(void *ctx) {
  (void)ctx;
  printf("%.6f leave-channel\n", now());
}
static void on_user_joined(void *ctx, uint32_t uid, uint32_t elapsed_ms) {
  (void)ctx;
  printf("%.6f user-joined uid=%u elapsed=%u\n", now(), uid, elapsed_ms);
}
static void on_user_offline(void *ctx, uint32_t uid, tether_user_offline_reason reason) {
  (void)ctx;
  printf("%.6f user-offline uid=%u reason=%s\n", now(), uid,
         tether_user_offline_reason_name((int)reason));
}
static void on_will_expire(void *ctx, const char *token) {
  (void)ctx;
  /* A token is a bearer secret (docs/SECURITY.md): its length only, never its text. */
  printf("%.6f token-will-expire length=%zu\n", now(), strlen(token));
}
static void on_request_token(void *ctx) {
  struct device *d = (struct device *)ctx;
  printf("%.6f request-token\n", now());
  if (d->renew_token) {
    printf("%.6f renew-token rc=%d\n", now(), tether_renew_token(d->engine, d->renew_token));
  }
}
static void on_log(void *ctx, tether_log_level level, const char *message) {
  (void)ctx;
  if (level <= TETHER_LOG_WARNING) printf("%.6f log level=%d %s\n", now(), (int)level, message);
}
static void on_attempt(void *ctx, uint32_t attempt, uint32_t next_ms, uint32_t give_up_ms) {
  (void)ctx;
  printf("%.6f join-attempt n=%u next_in=%u give_up_in=%u\n", now(), attempt, next_ms,
         give_up_ms);
}
static void on_remote_interrupted(void *ctx, uint32_t uid) {
  (void)ctx;
  printf("%.6f remote-interrupted uid=%u\n", now(), uid);
}
static void on_remote_resumed(void *ctx, uint32_t uid) {
  (void)ctx;
  printf("%.6f remote-resumed uid=%u\n", now(), uid);
}

/* SIGUSR1: the network changed; SIGUSR2: move to --switch-server; SIGINT, SIGTERM: leave
   and stop. */
static void on_signal(struct ev_loop *loop, ev_signal *w, int revents) {
  struct device *d = (struct device *)w->data;
  (void)loop; (void)revents;
  if (w->signum == SIGUSR1) {
    printf("%.6f network-changed rc=%d\n", now(), tether_network_changed(d->engine));
  } else if (w->signum == SIGUSR2 && d->switch_server) {
    printf("%.6f set-server rc=%d\n", now(), tether_set_server(d->engine, d->switch_server));
  } else if (w->signum == SIGINT || w->signum == SIGTERM) {
    /* on_leave_channel (if the device was in a channel) runs inside this call. */
    printf("%.6f leave rc=%d\n", now(), tether_leave_channel(d->engine));
    ev_break(d->loop, EVBREAK_ALL);
  }
}

static uint32_t scaled(uint32_t ms, double scale) {
  double v = ms * scale;
  return v < 1 ? 1 : (uint32_t)v;
}

static const char *arg(int argc, char **argv, const char *name, const char *fallback) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

int main(int argc, char **argv) {
  struct device d;
  tether_engine_config config;
  tether_engine_handler handler;
  ev_signal signals[4];
  int numbers[4] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
  double scale = atof(arg(argc, argv, "--scale", "1"));
  const char *channel = arg(argc, argv, "--channel", NULL);
  int rc;

  memset(&d, 0, sizeof d);
  setvbuf(stdout, NULL, _IOLBF, 0); /* a line per event, as it comes, into a pipe or file */
  {
    /* A parent may have started us with signals blocked (the mask is inherited). */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
  }
  d.loop = ev_default_loop(0);
  d.renew_token = arg(argc, argv, "--renew-token", NULL);
  d.switch_server = arg(argc, argv, "--switch-server", NULL);
  if (!channel || scale <= 0) {
    fprintf(stderr, "usage: %s --server HOST:PORT --app-id ID --channel NAME [--uid N] "
                    "[--token T] [--scale F] [--renew-token T] [--switch-server A]\n", argv[0]);
    return 2;
  }

  tether_engine_config_init(&config);
  config.app_id = arg(argc, argv, "--app-id", NULL);
  config.server = arg(argc, argv, "--server", NULL);
  config.interrupted_after_ms = scaled(config.interrupted_after_ms, scale);
  config.lost_after_ms = scaled(config.lost_after_ms, scale);
  config.remote_offline_after_ms = scaled(config.remote_offline_after_ms, scale);
  config.give_up_after_ms = scaled(config.give_up_after_ms, scale);
  config.token_will_expire_before_ms = scaled(config.token_will_expire_before_ms, scale);
  config.heartbeat_interval_ms = scaled(config.heartbeat_interval_ms, scale);
  config.retry_base_ms = scaled(config.retry_base_ms, scale);
  config.retry_cap_ms = scaled(config.retry_cap_ms, scale);

  tether_engine_handler_init(&handler); /* size set, every callback NULL */
  handler.on_connection_state_changed = on_state;
  handler.on_join_channel_success = on_join;
  handler.on_rejoin_channel_success = on_rejoin;
  handler.on_connection_lost = on_lost;
  handler.on_leave_channel = on_leave;
  handler.on_user_joined = on_user_joined;
  handler.on_user_offline = on_user_offline;
  handler.on_token_privilege_will_expire = on_will_expire;
  handler.on_request_token = on_request_token;
  handler.on_log = on_log;
  handler.on_join_attempt = on_attempt;
  handler.on_remote_member_interrupted = on_remote_interrupted;
  handler.on_remote_member_resumed = on_remote_resumed;

  rc = tether_engine_create(d.loop, &config, &handler, &d, &d.engine);
  if (rc != TETHER_OK) {
    fprintf(stderr, "tether_engine_create: %s\n", tether_error_name(rc));
    return 1;
  }
  for (int i = 0; i < 4; i++) {
    ev_signal_init(&signals[i], on_signal, numbers[i]);
    signals[i].data = &d;
    ev_signal_start(d.loop, &signals[i]);
  }
  rc = tether_join_channel(d.engine, arg(argc, argv, "--token", NULL), channel,
                           (uint32_t)strtoul(arg(argc, argv, "--uid", "0"), NULL, 10));
  printf("%.6f join rc=%d %s\n", now(), rc, tether_error_name(rc));
  if (rc == TETHER_OK) ev_run(d.loop, 0);
  tether_engine_destroy(d.engine);
  return rc == TETHER_OK ? 0 : 1;
}
