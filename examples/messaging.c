// SPDX-License-Identifier: Apache-2.0
/* messaging.c - a firmware-like host of Tether's login session (tether_rtm_*): logs in to
 * an edge server as a user, joins channels, and prints every callback with a
 * CLOCK_MONOTONIC timestamp, until SIGINT or SIGTERM, which log out cleanly. Build against
 * an installed Tether:
 *
 *   cc -std=c99 -o messaging examples/messaging.c $(pkg-config --cflags --libs tether)
 *
 * Usage: messaging --server HOST:PORT --app-id ID --user-id NAME --token TOKEN
 *                  [--channel NAME]... [--scale F] [--renew-token TOKEN]
 *   --channel NAME     join this channel once logged in (may be given up to 8 times)
 *   --scale F          multiply every threshold by F (0.01: interrupted after 40 ms ...)
 *   --renew-token T    answer on_token_expired with tether_rtm_renew_token(T)
 *   SIGUSR1            report a network change (tether_rtm_network_changed)
 * Output: one line per event, "<CLOCK_MONOTONIC seconds, to the microsecond> <event> <details>". */
#define _GNU_SOURCE /* getopt_long */
#include <ev.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

struct messaging {
  struct ev_loop *loop;
  tether_rtm_client *client;
  const char *channels[8];
  int channel_count;
  const char *renew_token;
  ev_signal interrupt, terminate, network_changed;
};

/* The time every line starts with: CLOCK_MONOTONIC seconds (printed to the microsecond). */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_state(void *ctx, tether_rtm_connection_state state,
                     tether_rtm_connection_change_reason reason) {
  (void)ctx;
  printf("%.6f state %s %s\n", now(), tether_rtm_connection_state_name((int)state),
         tether_rtm_connection_change_reason_name((int)reason));
}
static void on_login_result(void *ctx, int error) {
  struct messaging *m = (struct messaging *)ctx;
  printf("%.6f login-result %s\n", now(), tether_rtm_login_error_name(error));
  if (error != TETHER_RTM_LOGIN_ERR_OK) return;
  /* Channels may be joined as soon as login was called; here, once it succeeded. */
  for (int i = 0; i < m->channel_count; i++) {
    int rc = tether_rtm_join_channel(m->client, m->channels[i]);
    printf("%.6f join-channel %s rc=%d %s\n", now(), m->channels[i], rc, tether_error_name(rc));
  }
}
static void on_logout_result(void *ctx, int error) {
  (void)ctx;
  printf("%.6f logout-result %s\n", now(), tether_rtm_logout_error_name(error));
}
static void on_token_expired(void *ctx) {
  struct messaging *m = (struct messaging *)ctx;
  printf("%.6f token-expired\n", now());
  if (m->renew_token) {
    printf("%.6f renew-token rc=%d\n", now(), tether_rtm_renew_token(m->client, m->renew_token));
  }
}
static void on_member_joined(void *ctx, const char *channel, const char *user_id) {
  (void)ctx;
  printf("%.6f member-joined channel=%s user=%s\n", now(), channel, user_id);
}
static void on_member_left(void *ctx, const char *channel, const char *user_id) {
  (void)ctx;
  printf("%.6f member-left channel=%s user=%s\n", now(), channel, user_id);
}
static void on_log(void *ctx, tether_log_level level, const char *message) {
  (void)ctx;
  if (level <= TETHER_LOG_WARNING) printf("%.6f log level=%d %s\n", now(), (int)level, message);
}
static void on_attempt(void *ctx, uint32_t attempt, uint32_t next_ms) {
  (void)ctx;
  printf("%.6f login-attempt n=%u next_in=%u\n", now(), attempt, next_ms);
}

/* SIGINT, SIGTERM: log out and stop. */
static void on_stop(struct ev_loop *loop, ev_signal *w, int revents) {
  struct messaging *m = (struct messaging *)w->data;
  (void)revents;
  /* on_logout_result (if logged in) runs inside this call. */
  printf("%.6f logout rc=%d\n", now(), tether_rtm_logout(m->client));
  ev_break(loop, EVBREAK_ALL);
}

/* SIGUSR1: the network changed. */
static void on_network_changed(struct ev_loop *loop, ev_signal *w, int revents) {
  struct messaging *m = (struct messaging *)w->data;
  (void)loop, (void)revents;
  printf("%.6f network-changed rc=%d\n", now(), tether_rtm_network_changed(m->client));
}

/* Runs `cb` on `signum`, with the host's state. */
static void watch(struct messaging *m, ev_signal *w,
                  void (*cb)(struct ev_loop *, ev_signal *, int), int signum) {
  ev_signal_init(w, cb, signum);
  w->data = m;
  ev_signal_start(m->loop, w);
}

static uint32_t scaled(uint32_t ms, double scale) {
  double v = ms * scale;
  return v < 1 ? 1 : (uint32_t)v;
}

int main(int argc, char **argv) {
  static const struct option options[] = {
      {"server", required_argument, NULL, 's'},  {"app-id", required_argument, NULL, 'a'},
      {"user-id", required_argument, NULL, 'u'}, {"token", required_argument, NULL, 't'},
      {"channel", required_argument, NULL, 'c'}, {"scale", required_argument, NULL, 'x'},
      {"renew-token", required_argument, NULL, 'r'}, {NULL, 0, NULL, 0}};
  struct messaging m;
  tether_rtm_config config;
  tether_rtm_handler handler;
  const char *user = NULL, *token = NULL;
  double scale = 1;
  sigset_t none;
  int option, rc;

  memset(&m, 0, sizeof m);
  tether_rtm_config_init(&config); /* size and every default; app_id and server NULL */
  while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
    switch (option) {
    case 's': config.server = optarg; break;
    case 'a': config.app_id = optarg; break;
    case 'u': user = optarg; break;
    case 't': token = optarg; break;
    case 'x': scale = atof(optarg); break;
    case 'r': m.renew_token = optarg; break;
    case 'c':
      if (m.channel_count < 8) m.channels[m.channel_count++] = optarg;
      break;
    default: scale = 0; break; /* an unknown option: the usage below */
    }
  }
  if (!user || !token || scale <= 0) {
    fprintf(stderr, "usage: %s --server HOST:PORT --app-id ID --user-id NAME --token T "
                    "[--channel NAME]... [--scale F] [--renew-token T]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* a line per event, as it comes, into a pipe or file */
  /* A parent may have started us with signals blocked (the mask is inherited). */
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);

  config.login_timeout_ms = scaled(config.login_timeout_ms, scale);
  config.interrupted_after_ms = scaled(config.interrupted_after_ms, scale);
  config.heartbeat_interval_ms = scaled(config.heartbeat_interval_ms, scale);
  config.retry_base_ms = scaled(config.retry_base_ms, scale);
  config.retry_cap_ms = scaled(config.retry_cap_ms, scale);

  tether_rtm_handler_init(&handler); /* size set, every callback NULL */
  handler.on_connection_state_changed = on_state;
  handler.on_login_result = on_login_result;
  handler.on_logout_result = on_logout_result;
  handler.on_token_expired = on_token_expired;
  handler.on_member_joined = on_member_joined;
  handler.on_member_left = on_member_left;
  handler.on_log = on_log;
  handler.on_login_attempt = on_attempt;

  m.loop = ev_default_loop(0);
  rc = tether_rtm_client_create(m.loop, &config, &handler, &m, &m.client);
  if (rc != TETHER_OK) {
    fprintf(stderr, "tether_rtm_client_create: %s\n", tether_error_name(rc));
    return 1;
  }
  watch(&m, &m.interrupt, on_stop, SIGINT);
  watch(&m, &m.terminate, on_stop, SIGTERM);
  watch(&m, &m.network_changed, on_network_changed, SIGUSR1);
  rc = tether_rtm_login(m.client, token, user);
  printf("%.6f login rc=%d%s%s\n", now(), rc, rc ? " " : "", rc ? tether_error_name(rc) : "");
  if (rc == 0) ev_run(m.loop, 0);
  tether_rtm_client_destroy(m.client);
  return rc == 0 ? 0 : 1;
}
